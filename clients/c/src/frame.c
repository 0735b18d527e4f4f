/* Binary frames (PROTOCOL.md, Frames): checking a frame's header, decoding
 * its positions (plain float32, or quantized: a bounding box and 16 bits
 * per axis) into the caller's floats, and handing each received frame to
 * its instance's target and to the on_frame callback. The bytes are read
 * where they lie in the receive buffer: the caller's array is the only
 * copy. */
#include "internal.h"

#include <string.h>

#define FRAME_HEADER 40
#define QUANT_BOX 24

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

/* 0 ok, 1 skip (a version or flag this client does not know), 2 broken. */
static int check(const unsigned char *p, size_t size, clothd_frame *out, clothd_error *err)
{
    if (size < FRAME_HEADER) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: %zu bytes is shorter than the 40-byte header", size);
        return 2;
    }
    if (p[0] != 0x89 || p[1] != 'C' || p[2] != 'L' || p[3] != 'F') {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: bad magic %02x %02x %02x %02x", p[0], p[1], p[2], p[3]);
        return 2;
    }
    uint32_t length = le32(p + 8);
    if (length != size) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: its header says %lu bytes, %zu given", (unsigned long)length,
                 size);
        return 2;
    }
    uint16_t version = le16(p + 4), flags = le16(p + 6);
    if (version != 1 || (flags & ~1u) != 0) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: version %u flags 0x%04x unknown (this client reads version 1, flag bit 0)",
                 version, flags);
        return 1;
    }
    memset(out, 0, sizeof *out);
    out->instance.id = le32(p + 12);
    out->frame = le64(p + 16);
    uint64_t bits = le64(p + 24);
    memcpy(&out->time, &bits, sizeof out->time);
    out->count = le32(p + 32);
    out->quantized = (flags & 1u) != 0;
    uint64_t want = out->quantized ? FRAME_HEADER + QUANT_BOX + 6ull * out->count
                                   : FRAME_HEADER + 12ull * out->count;
    if (want != size) {
        cdc_fail(err, CLOTHD_E_PROTOCOL, "frame: %lu particles need %llu bytes, the frame has %zu",
                 (unsigned long)out->count, (unsigned long long)want, size);
        return 2;
    }
    if (out->quantized) {
        for (int k = 0; k < 3; k++) {
            out->bbox_min[k] = lef32(p + FRAME_HEADER + 4 * k);
            out->bbox_max[k] = lef32(p + FRAME_HEADER + 12 + 4 * k);
        }
    }
    out->payload = p + FRAME_HEADER;
    out->payload_size = size - FRAME_HEADER;
    return 0;
}

clothd_code clothd_frame_parse(const void *bytes, size_t size, clothd_frame *out, clothd_error *err)
{
    if (bytes == NULL || out == NULL)
        return cdc_fail(err, CLOTHD_E_USAGE, "frame: NULL argument");
    if (check(bytes, size, out, err) != 0)
        return CLOTHD_E_PROTOCOL;
    cdc_ok(err);
    return CLOTHD_OK;
}

clothd_code clothd_frame_decode(const clothd_frame *f, float *out, size_t capacity, clothd_error *err)
{
    if (f == NULL || (out == NULL && f->count > 0))
        return cdc_fail(err, CLOTHD_E_USAGE, "frame: NULL argument");
    if (capacity < f->count)
        return cdc_fail(err, CLOTHD_E_USAGE, "frame: %lu particles do not fit a buffer of %zu",
                        (unsigned long)f->count, capacity);
    const unsigned char *p = f->payload;
    size_t n = 3 * (size_t)f->count;
    if (!f->quantized) {
        if (little_endian()) {
            if (n > 0)
                memcpy(out, p, n * sizeof(float));
        } else {
            for (size_t i = 0; i < n; i++)
                out[i] = lef32(p + 4 * i);
        }
    } else {
        /* p = min + (q / 65535) * (max - min), in float64, rounded to float32. */
        double lo[3], span[3];
        for (int k = 0; k < 3; k++) {
            lo[k] = f->bbox_min[k];
            span[k] = (double)f->bbox_max[k] - lo[k];
        }
        const unsigned char *q = p + QUANT_BOX;
        for (size_t i = 0; i < n; i++) {
            int k = (int)(i % 3);
            out[i] = (float)(lo[k] + (le16(q + 2 * i) / 65535.0) * span[k]);
        }
    }
    cdc_ok(err);
    return CLOTHD_OK;
}

void cdc_frame_dispatch(clothd_client *c, const unsigned char *bytes, size_t size)
{
    clothd_frame f;
    clothd_error err;
    int rc = check(bytes, size, &f, &err);
    if (rc == 1)
        return; /* skipped by its length, as PROTOCOL.md asks */
    if (rc == 2) {
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
            t->updates++;
            f.positions = t->positions;
        } else {
            t->too_small++;
        }
    }
    if (c->on_frame != NULL)
        c->on_frame(c->user, &f);
}
