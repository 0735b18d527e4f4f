/* Binary requests: the frame layout's twin for bulk input. A skinned cape
 * of 2,000 vertices sends 12,000 floats a frame; as JSON that is ~120 kB
 * to print and ~3 ms to parse, as binary 48 kB copied once. Two kinds:
 * `skin` (positions, optionally normals) and `pin` (particles and their
 * positions). The request they become is the JSON one's: the same checks
 * and handlers run (PROTOCOL.md, "Binary requests").
 *
 *   0   u8[4]  magic 0x89 'C' 'L' 'R'
 *   4   u16    version 1
 *   6   u16    flags: bit 0 normals follow (skin); others 0
 *   8   u32    total length, header included
 *   12  u32    instance id
 *   16  u32    kind: 1 skin, 2 pin
 *   20  u32    request id, echoed as the reply's "id" (0: no "id")
 *   24  u32    count N
 *   28  u32    reserved, 0
 *   32         skin: f32[3N] positions, then f32[3N] normals if flagged
 *              pin:  u32[N] particles, then f32[3N] positions
 * Little-endian throughout. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

enum { KIND_SKIN = 1, KIND_PIN = 2 };
#define FLAG_NORMALS 1u

static uint32_t u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t u16_at(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static float f32_at(const unsigned char *p)
{
    const uint32_t bits = u32_at(p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

bool cd_binary_request_magic(const unsigned char *msg, size_t available)
{
    static const unsigned char magic[4] = {0x89, 'C', 'L', 'R'};
    for (size_t i = 0; i < 4 && i < available; i++)
        if (msg[i] != magic[i])
            return false;
    return true;
}

size_t cd_binary_request_length(const unsigned char *msg, size_t available)
{
    return available < CD_BINARY_HEADER ? 0 : u32_at(msg + 8);
}

/* Reads n floats (3 per point) into a new array, checking each is finite. */
static cd_status read_floats(const unsigned char *p, uint32_t n, const char *label, float **out,
                             cd_error *err)
{
    float *v = malloc(sizeof(float) * (n ? n : 1));
    if (v == NULL)
        return cd_fail(err, CD_E_INTERNAL, "%s: out of memory", label);
    for (uint32_t i = 0; i < n; i++) {
        v[i] = f32_at(p + 4u * i);
        if (!isfinite(v[i])) {
            free(v);
            return cd_fail(err, CD_E_INVALID_ARGUMENT, "%s[%" PRIu32 "]: must be finite", label,
                           i / 3);
        }
    }
    *out = v;
    return CD_OK;
}

cd_status cd_binary_request_parse(const unsigned char *msg, size_t len, const cd_limits *limits,
                                  cd_request *out, cd_error *err)
{
    memset(out, 0, sizeof *out);
    out->cmd = CD_CMD_COUNT;
    const cd_limits lim = limits ? *limits : cd_default_limits();
    /* The request id first: every error after it is answered with it. */
    const uint32_t rid = len >= CD_BINARY_HEADER ? u32_at(msg + 20) : 0;
    if (rid != 0 && (out->id = cJSON_CreateNumber((double)rid)) == NULL)
        return cd_fail(err, CD_E_INTERNAL, "binary request: out of memory");
    if (len < CD_BINARY_HEADER || !cd_binary_request_magic(msg, len))
        return cd_fail(err, CD_E_PARSE_ERROR, "binary request: bad header");
    const uint16_t version = u16_at(msg + 4), flags = u16_at(msg + 6);
    const uint32_t kind = u32_at(msg + 16), count = u32_at(msg + 24);
    if (version != 1)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "version: binary request version %u is not supported (1)", version);
    if (kind != KIND_SKIN && kind != KIND_PIN)
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "kind: %" PRIu32 " is not 1 (skin) or 2 (pin)",
                       kind);
    if ((flags & ~FLAG_NORMALS) != 0 || (kind == KIND_PIN && flags != 0))
        return cd_fail(err, CD_E_INVALID_ARGUMENT, "flags: unknown bits 0x%04x", flags);
    if (count > lim.max_list)
        return cd_fail(err, CD_E_LIMIT_EXCEEDED,
                       "count: %" PRIu32 " entries exceed the limit of %" PRIu32, count,
                       lim.max_list);
    const uint64_t body = kind == KIND_SKIN ? 12u * (uint64_t)count * ((flags & FLAG_NORMALS) ? 2 : 1)
                                            : 16u * (uint64_t)count;
    if ((uint64_t)len != CD_BINARY_HEADER + body)
        return cd_fail(err, CD_E_INVALID_ARGUMENT,
                       "length: %zu bytes for %" PRIu32 " entries (expected %" PRIu64 ")", len,
                       count, CD_BINARY_HEADER + body);
    out->has_instance = true;
    out->instance = u32_at(msg + 12);
    const unsigned char *p = msg + CD_BINARY_HEADER;
    cd_status st;
    if (kind == KIND_SKIN) {
        out->cmd = CD_CMD_SKIN;
        out->as.skin.count = out->as.skin.normal_count = count;
        st = read_floats(p, 3u * count, "positions", &out->as.skin.positions, err);
        if (st == CD_OK && (flags & FLAG_NORMALS))
            st = read_floats(p + 12u * count, 3u * count, "normals", &out->as.skin.normals, err);
        return st;
    }
    out->cmd = CD_CMD_PIN;
    out->as.pin.count = count;
    out->as.pin.particles = malloc(sizeof(uint32_t) * (count ? count : 1));
    if (out->as.pin.particles == NULL)
        return cd_fail(err, CD_E_INTERNAL, "particles: out of memory");
    for (uint32_t i = 0; i < count; i++)
        out->as.pin.particles[i] = u32_at(p + 4u * i);
    float *xyz = NULL;
    if ((st = read_floats(p + 4u * count, 3u * count, "positions", &xyz, err)) != CD_OK)
        return st;
    out->as.pin.positions = (cd_vec3 *)malloc(sizeof(cd_vec3) * (count ? count : 1));
    if (out->as.pin.positions == NULL) {
        free(xyz);
        return cd_fail(err, CD_E_INTERNAL, "positions: out of memory");
    }
    for (uint32_t i = 0; i < count; i++)
        out->as.pin.positions[i] = (cd_vec3){xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
    free(xyz);
    return CD_OK;
}
