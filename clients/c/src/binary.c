/* The binary requests of PROTOCOL.md "Binary requests": `skin` and `pin`
 * with positions as the frame layout's twin (magic 0x89 'C' 'L' 'R', a
 * 32-byte little-endian header, then raw u32 indices and f32 vectors). A
 * 2,000-vertex skin is 48 kB of copied floats instead of ~120 kB of JSON
 * the client prints and the server parses. Byte order is written out byte
 * by byte, so the encoding is the same on any host. */
#include "internal.h"

#include <string.h>

enum { BIN_HEADER = 32, BIN_VERSION = 1, BIN_SKIN = 1, BIN_PIN = 2, BIN_FLAG_NORMALS = 1 };

static unsigned char *put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
    return p + 4;
}

static unsigned char *put_f32s(unsigned char *p, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        p = put_u32(p, bits);
    }
    return p;
}

/* Reserves and writes the header; the payload pointer, or NULL (out of memory). */
static unsigned char *header(cdc_buf *out, uint16_t flags, uint32_t length, uint32_t instance, uint32_t kind,
                             uint32_t request_id, uint32_t count)
{
    if (!cdc_buf_reserve(out, length))
        return NULL;
    unsigned char *p = (unsigned char *)out->data + out->len;
    static const unsigned char magic[4] = {0x89, 'C', 'L', 'R'};
    memcpy(p, magic, 4);
    p[4] = BIN_VERSION;
    p[5] = 0;
    p[6] = (unsigned char)flags;
    p[7] = (unsigned char)(flags >> 8);
    p = put_u32(p + 8, length);
    p = put_u32(p, instance);
    p = put_u32(p, kind);
    p = put_u32(p, request_id);
    p = put_u32(p, count);
    return put_u32(p, 0); /* reserved */
}

bool cdc_bin_skin(cdc_buf *out, uint32_t instance, uint32_t request_id, const float *positions,
                  const float *normals, size_t count)
{
    size_t length = BIN_HEADER + (normals ? 24 : 12) * count;
    unsigned char *p = header(out, normals ? BIN_FLAG_NORMALS : 0, (uint32_t)length, instance, BIN_SKIN,
                              request_id, (uint32_t)count);
    if (p == NULL)
        return false;
    p = put_f32s(p, positions, 3 * count);
    if (normals != NULL)
        put_f32s(p, normals, 3 * count);
    out->len += length;
    return true;
}

bool cdc_bin_pin(cdc_buf *out, uint32_t instance, uint32_t request_id, const uint32_t *particles,
                 const float *positions, size_t count)
{
    size_t length = BIN_HEADER + 16 * count;
    unsigned char *p = header(out, 0, (uint32_t)length, instance, BIN_PIN, request_id, (uint32_t)count);
    if (p == NULL)
        return false;
    for (size_t i = 0; i < count; i++)
        p = put_u32(p, particles[i]);
    put_f32s(p, positions, 3 * count);
    out->len += length;
    return true;
}
