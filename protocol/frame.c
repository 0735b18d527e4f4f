/* clothd protocol — binary frames: positions, and on request velocities
 * and normals.
 *
 *   offset size  field
 *        0    4  magic 0x89 'C' 'L' 'F'
 *        4    2  u16 version (1)
 *        6    2  u16 flags: bit 0 quantized, bit 1 velocities, bit 2 normals
 *        8    4  u32 total length in bytes, header included
 *       12    4  u32 instance id
 *       16    8  u64 frame number (steps the instance has taken)
 *       24    8  f64 simulated time, seconds
 *       32    4  u32 particle count N
 *       36    4  u32 reserved (0)
 *       40  12N  f32 x, y, z per particle, particle-index order
 *          [12N  f32 velocity x, y, z per particle]     flags bit 1
 *          [12N  f32 normal x, y, z per particle]       flags bit 2
 *
 * A quantized frame (flags bit 0, subscribe's "quantize") has the same
 * header and instead:
 *       40   12  f32 bounding box min x, y, z
 *       52   12  f32 bounding box max x, y, z
 *       64   6N  u16 x, y, z per particle: q = round((p - min) / (max - min) * 65535)
 *          [24   f32 velocity box min x, y, z, max x, y, z;
 *            6N  u16 velocity x, y, z per particle, the same rule]   bit 1
 *          [4N   u16 u, v per particle: the normal, octahedral]      bit 2
 *
 * A reference (flags bit 3, subscribe's "shm") is the 40-byte header of
 * the frame it names, with bit 3 added and length 56, then:
 *       40    8  u64 the frame's position in the shared-memory ring
 *       48    4  u32 the frame's length
 *       52    4  u32 reserved (0)
 *
 * Frames without bits 1 and 2 are byte for byte what they were before the
 * channels existed. Every field is little-endian and written byte by byte,
 * so the encoding is the same on any host and no unaligned or type-punned
 * access happens.
 */
#include "protocol.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

static const uint8_t frame_magic[4] = {CD_FRAME_MAGIC0, 'C', 'L', 'F'};

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void put_f32(uint8_t *p, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits); /* the IEEE-754 bits */
    put_u32(p, bits);
}

static float get_f32(const uint8_t *p)
{
    uint32_t bits = get_u32(p);
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* Bytes of one section (a box counts as part of its section). */
static size_t positions_bytes(uint32_t count, uint16_t flags)
{
    return (flags & CD_FRAME_FLAG_QUANTIZED) ? CD_FRAME_QUANTIZED_PREFIX + (size_t)6 * count
                                             : (size_t)12 * count;
}

static size_t normals_bytes(uint32_t count, uint16_t flags)
{
    return (flags & CD_FRAME_FLAG_QUANTIZED) ? (size_t)4 * count : (size_t)12 * count;
}

/* Where each section starts: positions right after the header, then the
 * velocities, then the normals, each only when its flag is set. */
static size_t velocities_offset(uint32_t count, uint16_t flags)
{
    return CD_FRAME_HEADER_SIZE + positions_bytes(count, flags);
}

static size_t normals_offset(uint32_t count, uint16_t flags)
{
    return velocities_offset(count, flags) +
           ((flags & CD_FRAME_FLAG_VELOCITIES) ? positions_bytes(count, flags) : 0);
}

size_t cd_frame_size_flags(uint32_t count, uint16_t flags)
{
    return normals_offset(count, flags) +
           ((flags & CD_FRAME_FLAG_NORMALS) ? normals_bytes(count, flags) : 0);
}

size_t cd_frame_size(uint32_t count)
{
    return cd_frame_size_flags(count, 0);
}

size_t cd_frame_size_quantized(uint32_t count)
{
    return cd_frame_size_flags(count, CD_FRAME_FLAG_QUANTIZED);
}

static void put_header(uint8_t *out, uint16_t flags, size_t size, cd_id instance,
                       uint64_t frame, double time, uint32_t count)
{
    /* The server caps particles so that the length fits its u32 field. */
    assert(size <= UINT32_MAX);
    memcpy(out, frame_magic, sizeof frame_magic);
    put_u16(out + 4, CD_FRAME_VERSION);
    put_u16(out + 6, flags);
    put_u32(out + 8, (uint32_t)size);
    put_u32(out + 12, instance);
    put_u64(out + 16, frame);
    uint64_t time_bits;
    memcpy(&time_bits, &time, sizeof time_bits); /* the IEEE-754 bits */
    put_u64(out + 24, time_bits);
    put_u32(out + 32, count);
    put_u32(out + 36, 0);
}

/* v moved by o, the solver's local frame to the world: 0 leaves v alone
 * (even -0.0, which adding +0.0 would turn into +0.0). */
static float shifted(float v, float o)
{
    return o != 0.0f ? v + o : v;
}

/* `origin` is added to every entry (x, y, z): the solver keeps positions
 * in a local frame; velocities and normals pass a zero origin. */
static void put_floats(uint8_t *p, const float *values, uint32_t count, const float origin[3])
{
    for (uint32_t i = 0; i < count; i++, values += 3, p += 12) { /* one particle at a time */
        put_f32(p, shifted(values[0], origin[0]));
        put_f32(p + 4, shifted(values[1], origin[1]));
        put_f32(p + 8, shifted(values[2], origin[2]));
    }
}

static void get_floats(const uint8_t *p, float *out, uint32_t count)
{
    for (size_t i = 0; i < (size_t)3 * count; i++, p += 4)
        out[i] = get_f32(p);
}

/* C's round() of s in (0, 65535): halves away from zero. The truncation
 * is s's floor and s - floor(s) is exact, so this is round() bit for bit,
 * without a libm call per coordinate (a quantized frame has 3 to 6 per
 * particle). */
static uint16_t round_positive(double s)
{
    const uint32_t whole = (uint32_t)s;
    return (uint16_t)(whole + (uint32_t)(s - (double)whole >= 0.5)); /* no branch to mispredict */
}

/* One coordinate to 16 bits within [min, max]; `range` is max - min. */
static uint16_t quantize(float v, double min, double range)
{
    if (!(range > 0) || !isfinite(range))
        return 0; /* a flat axis (or a degenerate box): everything at min */
    double s = ((double)v - min) / range * 65535.0;
    if (!(s > 0)) /* below the box, or NaN */
        return 0;
    if (s >= 65535.0)
        return 65535;
    return round_positive(s); /* halves away from zero */
}

/* A box (f32 min[3], max[3]) and then u16 x, y, z per entry: positions and
 * velocities alike. */
static void put_boxed(uint8_t *out, const float *values, uint32_t count, const float origin[3])
{
    float min[3] = {INFINITY, INFINITY, INFINITY}, max[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < (size_t)count; i++) {
        for (int k = 0; k < 3; k++) {
            float v = shifted(values[3 * i + k], origin[k]);
            if (v < min[k])
                min[k] = v;
            if (v > max[k])
                max[k] = v;
        }
    }
    double range[3];
    for (int k = 0; k < 3; k++) {
        if (!(min[k] <= max[k])) /* no particles (or no comparable value) */
            min[k] = max[k] = 0.0f;
        range[k] = (double)max[k] - (double)min[k];
        put_f32(out + 4 * k, min[k]);
        put_f32(out + 12 + 4 * k, max[k]);
    }
    uint8_t *p = out + CD_FRAME_QUANTIZED_PREFIX;
    for (size_t i = 0; i < (size_t)count; i++)
        for (int k = 0; k < 3; k++, p += 2)
            put_u16(p, quantize(shifted(values[3 * i + k], origin[k]), (double)min[k], range[k]));
}

static void get_boxed(const uint8_t *in, float *out, uint32_t count)
{
    double min[3], range[3];
    for (int k = 0; k < 3; k++) {
        min[k] = (double)get_f32(in + 4 * k);
        range[k] = (double)get_f32(in + 12 + 4 * k) - min[k];
    }
    const uint8_t *p = in + CD_FRAME_QUANTIZED_PREFIX;
    for (size_t i = 0; i < (size_t)count; i++)
        for (int k = 0; k < 3; k++, p += 2)
            out[3 * i + k] = (float)(min[k] + (double)get_u16(p) / 65535.0 * range[k]);
}

static double sign_not_zero(double v)
{
    return v >= 0.0 ? 1.0 : -1.0;
}

static uint16_t octahedral_axis(double v)
{
    double s = (v + 1.0) * 0.5 * 65535.0;
    if (!(s > 0))
        return 0;
    if (s >= 65535.0)
        return 65535;
    return round_positive(s);
}

void cd_frame_octahedral_encode(const float n[3], uint16_t out[2])
{
    const double x = n[0], y = n[1], z = n[2];
    const double sum = fabs(x) + fabs(y) + fabs(z);
    if (!(sum > 0) || !isfinite(sum)) {
        out[0] = out[1] = 0; /* no normal */
        return;
    }
    double u = x / sum, v = y / sum;
    if (z < 0) { /* the lower half folds over the diagonals */
        const double fu = (1.0 - fabs(v)) * sign_not_zero(u);
        const double fv = (1.0 - fabs(u)) * sign_not_zero(v);
        u = fu;
        v = fv;
    }
    out[0] = octahedral_axis(u);
    out[1] = octahedral_axis(v);
    if (out[0] == 0 && out[1] == 0) /* (0, 0) means "no normal": the same corner */
        out[0] = out[1] = 65535;
}

void cd_frame_octahedral_decode(const uint16_t q[2], float out[3])
{
    if (q[0] == 0 && q[1] == 0) {
        out[0] = out[1] = out[2] = 0.0f;
        return;
    }
    double u = (double)q[0] / 65535.0 * 2.0 - 1.0, v = (double)q[1] / 65535.0 * 2.0 - 1.0;
    const double z = 1.0 - fabs(u) - fabs(v);
    if (z < 0) {
        const double fu = (1.0 - fabs(v)) * sign_not_zero(u);
        const double fv = (1.0 - fabs(u)) * sign_not_zero(v);
        u = fu;
        v = fv;
    }
    const double len = sqrt(u * u + v * v + z * z);
    out[0] = (float)(u / len);
    out[1] = (float)(v / len);
    out[2] = (float)(z / len);
}

void cd_frame_encode_content(uint8_t *out, uint16_t flags, const cd_frame_content *c)
{
    assert((flags & ~CD_FRAME_FLAGS_KNOWN) == 0);
    assert(c->positions != NULL || c->count == 0);
    assert(!(flags & CD_FRAME_FLAG_VELOCITIES) || c->velocities != NULL || c->count == 0);
    assert(!(flags & CD_FRAME_FLAG_NORMALS) || c->normals != NULL || c->count == 0);
    const uint32_t n = c->count;
    put_header(out, flags, cd_frame_size_flags(n, flags), c->instance, c->frame, c->time, n);
    const bool quantized = (flags & CD_FRAME_FLAG_QUANTIZED) != 0;
    uint8_t *p = out + CD_FRAME_HEADER_SIZE;
    static const float none[3] = {0.0f, 0.0f, 0.0f};
    if (quantized)
        put_boxed(p, c->positions, n, c->origin);
    else
        put_floats(p, c->positions, n, c->origin);
    if (flags & CD_FRAME_FLAG_VELOCITIES) {
        p = out + velocities_offset(n, flags);
        if (quantized)
            put_boxed(p, c->velocities, n, none);
        else
            put_floats(p, c->velocities, n, none);
    }
    if (flags & CD_FRAME_FLAG_NORMALS) {
        p = out + normals_offset(n, flags);
        if (!quantized) {
            put_floats(p, c->normals, n, none);
            return;
        }
        for (size_t i = 0; i < (size_t)n; i++, p += 4) {
            uint16_t q[2];
            cd_frame_octahedral_encode(&c->normals[3 * i], q);
            put_u16(p, q[0]);
            put_u16(p + 2, q[1]);
        }
    }
}

void cd_frame_encode(uint8_t *out, cd_id instance, uint64_t frame, double time,
                     const float *positions, uint32_t count)
{
    const cd_frame_content c = {.instance = instance, .frame = frame, .time = time,
                                .count = count, .positions = positions};
    cd_frame_encode_content(out, 0, &c);
}

void cd_frame_encode_quantized(uint8_t *out, cd_id instance, uint64_t frame, double time,
                               const float *positions, uint32_t count)
{
    const cd_frame_content c = {.instance = instance, .frame = frame, .time = time,
                                .count = count, .positions = positions};
    cd_frame_encode_content(out, CD_FRAME_FLAG_QUANTIZED, &c);
}

void cd_frame_encode_shared(uint8_t *out, const cd_frame_header *named, uint64_t position)
{
    put_header(out, (uint16_t)(named->flags | CD_FRAME_FLAG_SHARED), CD_FRAME_SHARED_SIZE,
               named->instance, named->frame, named->time, named->count);
    put_u64(out + 40, position);
    put_u32(out + 48, named->length);
    put_u32(out + 52, 0);
}

void cd_frame_decode_shared(const uint8_t *data, uint64_t *position, uint32_t *len)
{
    *position = get_u64(data + 40);
    *len = get_u32(data + 48);
}

void cd_frame_decode_positions(const uint8_t *data, const cd_frame_header *h, float *out)
{
    if (h->flags & CD_FRAME_FLAG_QUANTIZED)
        get_boxed(data + CD_FRAME_HEADER_SIZE, out, h->count);
    else
        get_floats(data + CD_FRAME_HEADER_SIZE, out, h->count);
}

bool cd_frame_decode_velocities(const uint8_t *data, const cd_frame_header *h, float *out)
{
    if (!(h->flags & CD_FRAME_FLAG_VELOCITIES))
        return false;
    const uint8_t *p = data + velocities_offset(h->count, h->flags);
    if (h->flags & CD_FRAME_FLAG_QUANTIZED)
        get_boxed(p, out, h->count);
    else
        get_floats(p, out, h->count);
    return true;
}

bool cd_frame_decode_normals(const uint8_t *data, const cd_frame_header *h, float *out)
{
    if (!(h->flags & CD_FRAME_FLAG_NORMALS))
        return false;
    const uint8_t *p = data + normals_offset(h->count, h->flags);
    if (!(h->flags & CD_FRAME_FLAG_QUANTIZED)) {
        get_floats(p, out, h->count);
        return true;
    }
    for (size_t i = 0; i < (size_t)h->count; i++, p += 4) {
        const uint16_t q[2] = {get_u16(p), get_u16(p + 2)};
        cd_frame_octahedral_decode(q, &out[3 * i]);
    }
    return true;
}

cd_status cd_frame_decode_header(const uint8_t *data, size_t len, cd_frame_header *out,
                                 cd_error *err)
{
    if (!data || len < CD_FRAME_HEADER_SIZE)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "frame: %zu bytes, shorter than the %u-byte header", data ? len : 0,
                       CD_FRAME_HEADER_SIZE);
    if (memcmp(data, frame_magic, sizeof frame_magic) != 0)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "frame: bad magic %02x %02x %02x %02x (expected 89 43 4c 46)", data[0],
                       data[1], data[2], data[3]);
    cd_frame_header h;
    h.version = get_u16(data + 4);
    h.flags = get_u16(data + 6);
    h.length = get_u32(data + 8);
    h.instance = get_u32(data + 12);
    h.frame = get_u64(data + 16);
    uint64_t time_bits = get_u64(data + 24);
    memcpy(&h.time, &time_bits, sizeof h.time);
    h.count = get_u32(data + 32);

    if (h.version != CD_FRAME_VERSION)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "frame: unsupported version %u (expected %u)",
                       (unsigned)h.version, CD_FRAME_VERSION);
    const uint16_t known = CD_FRAME_FLAGS_KNOWN | CD_FRAME_FLAG_SHARED;
    if (h.flags & ~known)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "frame: unknown flags 0x%04x",
                       (unsigned)(h.flags & ~known));
    size_t expected = (h.flags & CD_FRAME_FLAG_SHARED)
                          ? CD_FRAME_SHARED_SIZE
                          : cd_frame_size_flags(h.count, h.flags);
    if ((uint64_t)h.length != (uint64_t)expected)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "frame: length %" PRIu32 " does not match %" PRIu32 " particles (%zu bytes)",
                       h.length, h.count, expected);
    if (h.length > len)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "frame: length %" PRIu32 " but only %zu bytes available", h.length, len);
    *out = h;
    return CD_OK;
}
