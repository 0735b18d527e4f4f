/* Binary frames (PROTOCOL.md, Frames): checking a frame's header, decoding
 * its positions (plain float32, or quantized: a bounding box and 16 bits
 * per axis) and its channels (velocities the same way in their own box,
 * normals as float32 or two 16-bit octahedral values) into the caller's
 * floats, and handing each received frame to its instance's target and to
 * the on_frame callback. The bytes are read
 * where they lie in the receive buffer: the caller's array is the only
 * copy. A shared-memory reference (flags bit 3, 56 bytes) is resolved
 * first: its frame is copied out of the ring (shm.c), checked to be the
 * one the reference names, and delivered like any other; one the server
 * overwrote first is counted as missed. */
#include "internal.h"

#include <math.h>
#include <string.h>

#define FRAME_HEADER 40
#define QUANT_BOX 24
#define FLAG_QUANTIZED 0x1u
#define FLAGS_KNOWN (FLAG_QUANTIZED | CLOTHD_CHANNEL_VELOCITIES | CLOTHD_CHANNEL_NORMALS)
#define FLAG_SHARED 0x8u  /* a reference to a frame in the shared-memory ring */
#define REFERENCE_SIZE 56

/* What check() found. */
enum { FRAME_OK, FRAME_SKIP, FRAME_BROKEN, FRAME_REFERENCE };

/* Offsets after the header: positions at 0, then the velocities, then the
 * normals (each only with its flag); *end is the payload's size. */
static void sections(uint16_t flags, uint32_t count, uint64_t *velocities, uint64_t *normals, uint64_t *end)
{
    const bool q = (flags & FLAG_QUANTIZED) != 0;
    const uint64_t xyz = q ? QUANT_BOX + 6ull * count : 12ull * count;
    uint64_t at = xyz;
    *velocities = at;
    if (flags & CLOTHD_CHANNEL_VELOCITIES)
        at += xyz;
    *normals = at;
    if (flags & CLOTHD_CHANNEL_NORMALS)
        at += (q ? 4ull : 12ull) * count;
    *end = at;
}

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }
static float lef32(const unsigned char *p)
{
    uint32_t u = le32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static bool little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* FRAME_OK; FRAME_SKIP (a version or flag this client does not know);
 * FRAME_BROKEN; FRAME_REFERENCE: a 56-byte shared-memory reference, whose
 * header (the named frame's, flags with bit 3) is in *out and nothing
 * else. */
static int check(const unsigned char *p, size_t size, clothd_frame *out, clothd_error *err)
{
    if (size < FRAME_HEADER) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: %zu bytes is shorter than the 40-byte header", size);
        return FRAME_BROKEN;
    }
    if (p[0] != 0x89 || p[1] != 'C' || p[2] != 'L' || p[3] != 'F') {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: bad magic %02x %02x %02x %02x", p[0], p[1], p[2], p[3]);
        return FRAME_BROKEN;
    }
    uint32_t length = le32(p + 8);
    if (length != size) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: its header says %lu bytes, %zu given", (unsigned long)length,
                 size);
        return FRAME_BROKEN;
    }
    uint16_t version = le16(p + 4), flags = le16(p + 6);
    if (version != 1 || (flags & ~(FLAGS_KNOWN | FLAG_SHARED)) != 0) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: version %u flags 0x%04x unknown (this client reads version 1, flag bits 0-3)",
                 version, flags);
        return FRAME_SKIP;
    }
    if ((flags & FLAG_SHARED) && size != REFERENCE_SIZE) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: a shared-memory reference (flags bit 3) of %zu bytes, not %d",
                 size, REFERENCE_SIZE);
        return FRAME_BROKEN;
    }
    memset(out, 0, sizeof *out);
    out->instance.id = le32(p + 12);
    out->frame = le64(p + 16);
    uint64_t bits = le64(p + 24);
    memcpy(&out->time, &bits, sizeof out->time);
    out->count = le32(p + 32);
    out->quantized = (flags & FLAG_QUANTIZED) != 0;
    out->flags = flags;
    out->has_velocities = (flags & CLOTHD_CHANNEL_VELOCITIES) != 0;
    out->has_normals = (flags & CLOTHD_CHANNEL_NORMALS) != 0;
    if (flags & FLAG_SHARED)
        return FRAME_REFERENCE;
    uint64_t at_velocities, at_normals, end;
    sections(flags, out->count, &at_velocities, &at_normals, &end);
    uint64_t want = FRAME_HEADER + end;
    if (want != size) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: %lu particles need %llu bytes, the frame has %zu",
                 (unsigned long)out->count, (unsigned long long)want, size);
        return FRAME_BROKEN;
    }
    if (out->quantized) {
        for (int k = 0; k < 3; k++) {
            out->bbox_min[k] = lef32(p + FRAME_HEADER + 4 * k);
            out->bbox_max[k] = lef32(p + FRAME_HEADER + 12 + 4 * k);
            if (out->has_velocities) {
                out->velocity_min[k] = lef32(p + FRAME_HEADER + at_velocities + 4 * k);
                out->velocity_max[k] = lef32(p + FRAME_HEADER + at_velocities + 12 + 4 * k);
            }
        }
    }
    out->payload = p + FRAME_HEADER;
    out->payload_size = size - FRAME_HEADER;
    return FRAME_OK;
}

clothd_code clothd_frame_parse(const void *bytes, size_t size, clothd_frame *out, clothd_error *err)
{
    if (bytes == NULL || out == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "frame: NULL argument");
    int rc = check(bytes, size, out, err);
    if (rc == FRAME_REFERENCE) {
        memset(out, 0, sizeof *out);
        return cdc_fail(err, CLOTHD_E_PROTOCOL,
                        "frame: a shared-memory reference (flags bit 3), not a frame: a client resolves it "
                        "through the ring (subscribe's shm)");
    }
    if (rc != FRAME_OK)
        return CLOTHD_E_PROTOCOL;
    cdc_ok(err);
    return CLOTHD_OK;
}

/* 3*count floats at `p`: float32 as they are, or a box and u16 values:
 * v = min + (q / 65535) * (max - min), in float64, rounded to float32. */
static void decode_triplets(const unsigned char *p, bool quantized, uint32_t count, float *out)
{
    size_t n = 3 * (size_t)count;
    if (!quantized) {
        if (little_endian()) {
            if (n > 0)
                memcpy(out, p, n * sizeof(float));
        } else {
            for (size_t i = 0; i < n; i++)
                out[i] = lef32(p + 4 * i);
        }
        return;
    }
    double lo[3], span[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = lef32(p + 4 * k);
        span[k] = (double)lef32(p + 12 + 4 * k) - lo[k];
    }
    const unsigned char *q = p + QUANT_BOX;
    for (size_t i = 0; i < n; i++) {
        int k = (int)(i % 3);
        out[i] = (float)(lo[k] + (le16(q + 2 * i) / 65535.0) * span[k]);
    }
}

/* A quantized normal (PROTOCOL.md): u, v in [-1, 1], folded back when
 * 1 - |u| - |v| < 0, made unit in float64; (0, 0) is no normal. */
static void octahedral(uint16_t qu, uint16_t qv, float *out)
{
    if (qu == 0 && qv == 0) {
        out[0] = out[1] = out[2] = 0.0f;
        return;
    }
    double u = qu / 65535.0 * 2.0 - 1.0, v = qv / 65535.0 * 2.0 - 1.0;
    const double z = 1.0 - fabs(u) - fabs(v);
    if (z < 0) {
        const double fu = (1.0 - fabs(v)) * (u >= 0 ? 1.0 : -1.0);
        const double fv = (1.0 - fabs(u)) * (v >= 0 ? 1.0 : -1.0);
        u = fu;
        v = fv;
    }
    const double len = sqrt(u * u + v * v + z * z);
    out[0] = (float)(u / len);
    out[1] = (float)(v / len);
    out[2] = (float)(z / len);
}

static clothd_code check_decode(const clothd_frame *f, const float *out, size_t capacity, clothd_error *err)
{
    if (f == NULL || (out == NULL && f->count > 0))
        return cdc_fail(err, CLOTHD_E_USAGE, "frame: NULL argument");
    if (capacity < f->count)
        return cdc_fail(err, CLOTHD_E_USAGE, "frame: %lu particles do not fit a buffer of %zu",
                        (unsigned long)f->count, capacity);
    return CLOTHD_OK;
}

clothd_code clothd_frame_decode(const clothd_frame *f, float *out, size_t capacity, clothd_error *err)
{
    clothd_code rc = check_decode(f, out, capacity, err);
    if (rc != CLOTHD_OK)
        return rc;
    decode_triplets(f->payload, f->quantized, f->count, out);
    cdc_ok(err);
    return CLOTHD_OK;
}

clothd_code clothd_frame_decode_velocities(const clothd_frame *f, float *out, size_t capacity,
                                           clothd_error *err)
{
    clothd_code rc = check_decode(f, out, capacity, err);
    if (rc != CLOTHD_OK)
        return rc;
    if (!f->has_velocities)
        return cdc_fail(err, CLOTHD_E_USAGE, "frame: no velocities (subscribe with the channel)");
    uint64_t at, unused, end;
    sections(f->flags, f->count, &at, &unused, &end);
    decode_triplets((const unsigned char *)f->payload + at, f->quantized, f->count, out);
    cdc_ok(err);
    return CLOTHD_OK;
}

clothd_code clothd_frame_decode_normals(const clothd_frame *f, float *out, size_t capacity, clothd_error *err)
{
    clothd_code rc = check_decode(f, out, capacity, err);
    if (rc != CLOTHD_OK)
        return rc;
    if (!f->has_normals)
        return cdc_fail(err, CLOTHD_E_USAGE, "frame: no normals (subscribe with the channel)");
    uint64_t unused, at, end;
    sections(f->flags, f->count, &unused, &at, &end);
    const unsigned char *p = (const unsigned char *)f->payload + at;
    if (!f->quantized) {
        decode_triplets(p, false, f->count, out);
    } else {
        for (size_t i = 0; i < f->count; i++)
            octahedral(le16(p + 4 * i), le16(p + 4 * i + 2), &out[3 * i]);
    }
    cdc_ok(err);
    return CLOTHD_OK;
}

/* The frame a reference names, copied out of the ring and checked to be
 * it: FRAME_OK (*frame, *size: the copy), FRAME_SKIP (missed: counted),
 * FRAME_BROKEN (err says why). */
static int resolve(clothd_client *c, const unsigned char *ref, const unsigned char **frame, size_t *size,
                   clothd_error *err)
{
    const uint64_t position = le64(ref + 40);
    const uint32_t length = le32(ref + 48);
    const unsigned char *copy = NULL;
    cdc_shm_result got = cdc_shm_copy(c, position, length, &copy, err);
    if (got == CDC_SHM_MISSED) {
        c->stats.frames_missed++;
        return FRAME_SKIP;
    }
    if (got == CDC_SHM_BROKEN)
        return FRAME_BROKEN;
    /* Whole, so the server wrote these bytes for this reference: the same
     * header but for bit 3 and the length. */
    if (length < FRAME_HEADER || memcmp(copy, ref, 6) != 0 || le16(copy + 6) != (le16(ref + 6) & ~FLAG_SHARED) ||
        le32(copy + 8) != length || memcmp(copy + 12, ref + 12, FRAME_HEADER - 12) != 0) {
        cdc_fail(err, CLOTHD_E_PROTOCOL,
                 "shm: the %lu bytes at ring position %llu are not the frame their reference names (instance %lu, "
                 "frame %llu)",
                 (unsigned long)length, (unsigned long long)position, (unsigned long)le32(ref + 12),
                 (unsigned long long)le64(ref + 16));
        return FRAME_BROKEN;
    }
    *frame = copy;
    *size = length;
    return FRAME_OK;
}

void cdc_frame_dispatch(clothd_client *c, const unsigned char *bytes, size_t size)
{
    clothd_frame f;
    clothd_error err;
    int rc = check(bytes, size, &f, &err);
    if (rc == FRAME_REFERENCE) {
        rc = resolve(c, bytes, &bytes, &size, &err);
        if (rc == FRAME_OK)
            rc = check(bytes, size, &f, &err); /* the copy's flags are without bit 3 */
    }
    if (rc == FRAME_SKIP)
        return; /* skipped by its length, as PROTOCOL.md asks; or missed */
    if (rc == FRAME_BROKEN) {
        if (err.code == CLOTHD_E_NOMEM)
            cdc_drop(c, CLOTHD_E_NOMEM, true, "%s", err.message);
        else
            cdc_drop(c, CLOTHD_E_PROTOCOL, true, "protocol: %s", err.message);
        return;
    }
    clothd_frame_target *t = cdc_target_of(c, f.instance.id);
    if (t != NULL) {
        if (f.count <= t->capacity && clothd_frame_decode(&f, t->positions, t->capacity, NULL) == CLOTHD_OK) {
            t->frame = f.frame;
            t->time = f.time;
            t->count = f.count;
            t->quantized = f.quantized;
            t->has_velocities = f.has_velocities && t->velocities != NULL &&
                                clothd_frame_decode_velocities(&f, t->velocities, t->capacity, NULL) == CLOTHD_OK;
            t->has_normals = f.has_normals && t->normals != NULL &&
                             clothd_frame_decode_normals(&f, t->normals, t->capacity, NULL) == CLOTHD_OK;
            t->updates++;
            f.positions = t->positions;
            f.velocities = t->has_velocities ? t->velocities : NULL;
            f.normals = t->has_normals ? t->normals : NULL;
        } else {
            t->too_small++;
        }
    }
    if (c->on_frame != NULL)
        c->on_frame(c->user, &f);
}
