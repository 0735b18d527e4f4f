/* clothd protocol — binary position frames.
 *
 *   offset size  field
 *        0    4  magic 0x89 'C' 'L' 'F'
 *        4    2  u16 version (1)
 *        6    2  u16 flags (0 in v1)
 *        8    4  u32 total length in bytes, header included
 *       12    4  u32 instance id
 *       16    8  u64 frame number (steps the instance has taken)
 *       24    8  f64 simulated time, seconds
 *       32    4  u32 particle count N
 *       36    4  u32 reserved (0)
 *       40  12N  f32 x, y, z per particle, particle-index order
 *
 * A quantized frame (flags bit 0, subscribe's "quantize") has the same
 * header and instead of the f32 positions:
 *       40   12  f32 bounding box min x, y, z
 *       52   12  f32 bounding box max x, y, z
 *       64   6N  u16 x, y, z per particle: q = round((p - min) / (max - min) * 65535)
 *
 * Every field is little-endian and written byte by byte, so the encoding is
 * the same on any host and no unaligned or type-punned access happens.
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

size_t cd_frame_size(uint32_t count)
{
    return CD_FRAME_HEADER_SIZE + (size_t)12 * count;
}

size_t cd_frame_size_quantized(uint32_t count)
{
    return CD_FRAME_HEADER_SIZE + CD_FRAME_QUANTIZED_PREFIX + (size_t)6 * count;
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

void cd_frame_encode(uint8_t *out, cd_id instance, uint64_t frame, double time,
                     const float *positions, uint32_t count)
{
    assert(positions != NULL || count == 0);
    put_header(out, 0, cd_frame_size(count), instance, frame, time, count);
    uint8_t *p = out + CD_FRAME_HEADER_SIZE;
    for (size_t i = 0; i < (size_t)3 * count; i++, p += 4)
        put_f32(p, positions[i]);
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
    return (uint16_t)round(s); /* halves away from zero */
}

void cd_frame_encode_quantized(uint8_t *out, cd_id instance, uint64_t frame, double time,
                               const float *positions, uint32_t count)
{
    assert(positions != NULL || count == 0);
    put_header(out, CD_FRAME_FLAG_QUANTIZED, cd_frame_size_quantized(count), instance, frame,
               time, count);
    float min[3] = {INFINITY, INFINITY, INFINITY}, max[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < (size_t)count; i++) {
        for (int k = 0; k < 3; k++) {
            float v = positions[3 * i + k];
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
        put_f32(out + CD_FRAME_HEADER_SIZE + 4 * k, min[k]);
        put_f32(out + CD_FRAME_HEADER_SIZE + 12 + 4 * k, max[k]);
    }
    uint8_t *p = out + CD_FRAME_HEADER_SIZE + CD_FRAME_QUANTIZED_PREFIX;
    for (size_t i = 0; i < (size_t)count; i++)
        for (int k = 0; k < 3; k++, p += 2)
            put_u16(p, quantize(positions[3 * i + k], (double)min[k], range[k]));
}

void cd_frame_decode_positions(const uint8_t *data, const cd_frame_header *h, float *out)
{
    if (!(h->flags & CD_FRAME_FLAG_QUANTIZED)) {
        const uint8_t *p = data + CD_FRAME_HEADER_SIZE;
        for (size_t i = 0; i < (size_t)3 * h->count; i++, p += 4)
            out[i] = get_f32(p);
        return;
    }
    double min[3], range[3];
    for (int k = 0; k < 3; k++) {
        min[k] = (double)get_f32(data + CD_FRAME_HEADER_SIZE + 4 * k);
        range[k] = (double)get_f32(data + CD_FRAME_HEADER_SIZE + 12 + 4 * k) - min[k];
    }
    const uint8_t *p = data + CD_FRAME_HEADER_SIZE + CD_FRAME_QUANTIZED_PREFIX;
    for (size_t i = 0; i < (size_t)h->count; i++)
        for (int k = 0; k < 3; k++, p += 2)
            out[3 * i + k] = (float)(min[k] + (double)get_u16(p) / 65535.0 * range[k]);
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
    if (h.flags & ~CD_FRAME_FLAG_QUANTIZED)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "frame: unknown flags 0x%04x",
                       (unsigned)(h.flags & ~CD_FRAME_FLAG_QUANTIZED));
    size_t expected = (h.flags & CD_FRAME_FLAG_QUANTIZED) ? cd_frame_size_quantized(h.count)
                                                          : cd_frame_size(h.count);
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
