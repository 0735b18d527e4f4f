/* protocol/frame.c — the binary frame, byte for byte.
 *
 * protocol/test_vectors.json is the single source of truth shared with the
 * clients' tests: cd_frame_encode must reproduce every vector in it exactly,
 * and cd_frame_decode_header must read each one back. (The binary runs from
 * the repository root, as `make unit` does.) */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../protocol/protocol.h"

#define VECTORS_PATH "protocol/test_vectors.json"

/* ---- helpers ------------------------------------------------------------- */

static char *read_text_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) != NULL) {
            size_t got = fread(text, 1, (size_t)n, f);
            text[got] = '\0';
        }
    }
    fclose(f);
    return text;
}

static cJSON *load_vectors(void)
{
    char *text = read_text_file(VECTORS_PATH);
    cr_assert_not_null(text, "cannot read %s (run the tests from the repository root)",
                       VECTORS_PATH);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(root, "%s is not valid JSON", VECTORS_PATH);
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(root, "frames");
    cr_assert(cJSON_IsArray(frames) && cJSON_GetArraySize(frames) >= 3,
              "%s: \"frames\" must hold at least 3 vectors", VECTORS_PATH);
    return root;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Lowercase hex to bytes; returns the byte count. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex);
    cr_assert_eq(n % 2, 0, "odd hex length");
    cr_assert_leq(n / 2, cap);
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        cr_assert(hi >= 0 && lo >= 0, "bad hex digit at %zu", 2 * i);
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return n / 2;
}

/* One vector's decoded fields, with positions rounded to float. For a
 * quantized vector `positions` is the encoder's input ("original") and
 * `decoded` what a decoder gets back; otherwise both are the same. A
 * vector with channels (its "flags" has bit 1 or 2) has its velocities and
 * normals the same way, its "original" an object of the three arrays. */
typedef struct vector {
    bool quantized;
    uint16_t flags;
    uint32_t instance;
    uint64_t frame;
    double time;
    uint32_t count;
    float positions[64 * 3];
    float decoded[64 * 3];
    float velocities[64 * 3], decoded_velocities[64 * 3];
    float normals[64 * 3], decoded_normals[64 * 3];
    float bbox_min[3], bbox_max[3];
    uint8_t bytes[40 + 64 * 36];
    size_t size;
} vector;

/* An array of [x, y, z] entries into `out`; returns the entry count. */
static uint32_t read_positions(const cJSON *positions, float *out)
{
    uint32_t count = 0;
    const cJSON *p;
    cr_assert(cJSON_IsArray(positions));
    cJSON_ArrayForEach(p, positions) {
        cr_assert_eq(cJSON_GetArraySize(p), 3);
        cr_assert_lt(count, 64u);
        for (int k = 0; k < 3; k++)
            out[3 * count + k] = (float)cJSON_GetArrayItem(p, k)->valuedouble;
        count++;
    }
    return count;
}

static void read_vector(const cJSON *entry, vector *v)
{
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(entry, "decoded");
    const cJSON *hex = cJSON_GetObjectItemCaseSensitive(entry, "hex");
    const cJSON *flags = cJSON_GetObjectItemCaseSensitive(entry, "flags");
    cr_assert(cJSON_IsObject(dec) && cJSON_IsString(hex));
    v->quantized = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(entry, "quantized"));
    v->flags = flags ? (uint16_t)flags->valuedouble : (v->quantized ? CD_FRAME_FLAG_QUANTIZED : 0);
    cr_assert_eq(v->quantized, (v->flags & CD_FRAME_FLAG_QUANTIZED) != 0);
    v->instance = (uint32_t)cJSON_GetObjectItemCaseSensitive(dec, "instance")->valuedouble;
    v->frame = (uint64_t)cJSON_GetObjectItemCaseSensitive(dec, "frame")->valuedouble;
    v->time = cJSON_GetObjectItemCaseSensitive(dec, "time")->valuedouble;
    v->count = read_positions(cJSON_GetObjectItemCaseSensitive(dec, "positions"), v->decoded);
    const cJSON *orig = cJSON_GetObjectItemCaseSensitive(entry, "original");
    if (flags != NULL) {
        cr_assert(cJSON_IsObject(orig), "a vector with flags has an \"original\" object");
        cr_assert_eq(read_positions(cJSON_GetObjectItemCaseSensitive(orig, "positions"),
                                    v->positions), v->count);
        if (v->flags & CD_FRAME_FLAG_VELOCITIES) {
            cr_assert_eq(read_positions(cJSON_GetObjectItemCaseSensitive(orig, "velocities"),
                                        v->velocities), v->count);
            cr_assert_eq(read_positions(cJSON_GetObjectItemCaseSensitive(dec, "velocities"),
                                        v->decoded_velocities), v->count);
        }
        if (v->flags & CD_FRAME_FLAG_NORMALS) {
            cr_assert_eq(read_positions(cJSON_GetObjectItemCaseSensitive(orig, "normals"),
                                        v->normals), v->count);
            cr_assert_eq(read_positions(cJSON_GetObjectItemCaseSensitive(dec, "normals"),
                                        v->decoded_normals), v->count);
        }
    } else if (v->quantized) {
        cr_assert_eq(read_positions(orig, v->positions), v->count,
                     "\"original\" and \"decoded\" differ in length");
    } else {
        memcpy(v->positions, v->decoded, sizeof v->positions);
    }
    if (v->quantized) {
        const cJSON *mn = cJSON_GetObjectItemCaseSensitive(dec, "bboxMin");
        const cJSON *mx = cJSON_GetObjectItemCaseSensitive(dec, "bboxMax");
        cr_assert(cJSON_GetArraySize(mn) == 3 && cJSON_GetArraySize(mx) == 3);
        for (int k = 0; k < 3; k++) {
            v->bbox_min[k] = (float)cJSON_GetArrayItem(mn, k)->valuedouble;
            v->bbox_max[k] = (float)cJSON_GetArrayItem(mx, k)->valuedouble;
        }
    }
    v->size = unhex(hex->valuestring, v->bytes, sizeof v->bytes);
}

static void valid_two_particle_frame(uint8_t *buf)
{
    const float pos[6] = {0, 0, 0, 0.1f, 0, 0};
    cd_frame_encode(buf, 1, 0, 0.0, pos, 2);
}

/* ---- encoding ------------------------------------------------------------ */

Test(protocol_frame, size_is_header_plus_twelve_bytes_per_particle)
{
    cr_assert_eq(cd_frame_size(0), 40u);
    cr_assert_eq(cd_frame_size(2), 64u);
    cr_assert_eq(cd_frame_size(262144), 40u + 12u * 262144u);
    cr_assert_eq(CD_FRAME_HEADER_SIZE, 40u);
}

Test(protocol_frame, two_particle_frame_matches_the_hand_written_bytes)
{
    static const uint8_t expected[64] = {
        0x89, 'C', 'L', 'F',                            /* magic */
        0x01, 0x00,                                     /* version 1 */
        0x00, 0x00,                                     /* flags */
        0x40, 0x00, 0x00, 0x00,                         /* length 64 */
        0x05, 0x00, 0x01, 0x00,                         /* instance 0x00010005 */
        0x2a, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /* frame 0x10000002a */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f, /* time 0.5 */
        0x02, 0x00, 0x00, 0x00,                         /* 2 particles */
        0x00, 0x00, 0x00, 0x00,                         /* reserved */
        0x00, 0x00, 0x80, 0x3f,                         /* x0  1.0 */
        0x00, 0x00, 0x00, 0xc0,                         /* y0 -2.0 */
        0x00, 0x00, 0x00, 0x00,                         /* z0  0.0 */
        0xcd, 0xcc, 0xcc, 0x3d,                         /* x1  0.1f */
        0x00, 0x00, 0x20, 0xc1,                         /* y1 -10.0 */
        0x00, 0x00, 0x00, 0x80,                         /* z1 -0.0 */
    };
    const float pos[6] = {1.0f, -2.0f, 0.0f, 0.1f, -10.0f, -0.0f};
    uint8_t out[64 + 8];
    memset(out, 0xee, sizeof out);
    cd_frame_encode(out, 0x00010005u, 0x10000002aull, 0.5, pos, 2);
    cr_assert_eq(memcmp(out, expected, sizeof expected), 0);
    cr_assert_eq(out[64], 0xee, "wrote past cd_frame_size(2)");
}

Test(protocol_frame, encode_reproduces_every_shared_test_vector)
{
    cJSON *root = load_vectors();
    const cJSON *entry;
    int index = 0;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(root, "frames")) {
        static vector v;
        read_vector(entry, &v);
        uint8_t out[sizeof v.bytes];
        if (v.flags & ~CD_FRAME_FLAG_QUANTIZED) {
            cr_assert_eq(v.size, cd_frame_size_flags(v.count, v.flags), "vector %d: size", index);
            const cd_frame_content c = {.instance = v.instance, .frame = v.frame,
                                        .time = v.time, .count = v.count,
                                        .positions = v.positions, .velocities = v.velocities,
                                        .normals = v.normals};
            cd_frame_encode_content(out, v.flags, &c);
        } else if (v.quantized) {
            cr_assert_eq(v.size, cd_frame_size_quantized(v.count), "vector %d: size", index);
            cd_frame_encode_quantized(out, v.instance, v.frame, v.time, v.positions, v.count);
        } else {
            cr_assert_eq(v.size, cd_frame_size(v.count), "vector %d: size", index);
            cd_frame_encode(out, v.instance, v.frame, v.time, v.positions, v.count);
        }
        for (size_t i = 0; i < v.size; i++)
            cr_assert_eq(out[i], v.bytes[i], "vector %d: byte %zu is %02x, expected %02x", index,
                         i, out[i], v.bytes[i]);
        index++;
    }
    cJSON_Delete(root);
}

Test(protocol_frame, shared_vectors_include_negative_floats_and_a_non_trivial_time)
{
    cJSON *root = load_vectors();
    bool negative = false, fractional_time = false;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(root, "frames")) {
        static vector v;
        read_vector(entry, &v);
        for (uint32_t i = 0; i < 3 * v.count; i++)
            negative = negative || v.positions[i] < 0;
        fractional_time = fractional_time || (v.time > 0 && v.time < 1);
    }
    cr_assert(negative && fractional_time);
    cJSON_Delete(root);
}

/* ---- decoding ------------------------------------------------------------ */

Test(protocol_frame, decode_header_reads_every_shared_test_vector)
{
    cJSON *root = load_vectors();
    const cJSON *entry;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(root, "frames")) {
        static vector v;
        read_vector(entry, &v);
        cd_frame_header h;
        cd_error err;
        cr_assert_eq(cd_frame_decode_header(v.bytes, v.size, &h, &err), CD_OK, "%s",
                     err.message);
        cr_assert_eq(h.version, 1);
        cr_assert_eq(h.flags, v.flags);
        cr_assert_eq(h.length, v.size);
        cr_assert_eq(h.instance, v.instance);
        cr_assert_eq(h.frame, v.frame);
        cr_assert_eq(h.time, v.time);
        cr_assert_eq(h.count, v.count);
        float got[64 * 3];
        cd_frame_decode_positions(v.bytes, &h, got);
        for (uint32_t i = 0; i < 3 * v.count; i++)
            cr_assert_eq(got[i], v.decoded[i], "coordinate %u: %.9g, expected %.9g", i,
                         (double)got[i], (double)v.decoded[i]);
        cr_assert_eq(cd_frame_decode_velocities(v.bytes, &h, got),
                     (v.flags & CD_FRAME_FLAG_VELOCITIES) != 0);
        for (uint32_t i = 0; (v.flags & CD_FRAME_FLAG_VELOCITIES) && i < 3 * v.count; i++)
            cr_assert_eq(got[i], v.decoded_velocities[i], "velocity %u: %.9g, expected %.9g", i,
                         (double)got[i], (double)v.decoded_velocities[i]);
        cr_assert_eq(cd_frame_decode_normals(v.bytes, &h, got),
                     (v.flags & CD_FRAME_FLAG_NORMALS) != 0);
        for (uint32_t i = 0; (v.flags & CD_FRAME_FLAG_NORMALS) && i < 3 * v.count; i++)
            cr_assert_eq(got[i], v.decoded_normals[i], "normal %u: %.9g, expected %.9g", i,
                         (double)got[i], (double)v.decoded_normals[i]);
        if (v.quantized)
            continue;
        /* Positions: little-endian f32 from byte 40 on. */
        for (uint32_t i = 0; i < 3 * v.count; i++) {
            const uint8_t *p = v.bytes + CD_FRAME_HEADER_SIZE + 4 * i;
            uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                            (uint32_t)p[3] << 24;
            float f;
            memcpy(&f, &bits, sizeof f);
            cr_assert_eq(f, v.positions[i]);
        }
    }
    cJSON_Delete(root);
}

Test(protocol_frame, decode_accepts_a_buffer_longer_than_the_frame)
{
    uint8_t buf[100];
    valid_two_particle_frame(buf);
    cd_frame_header h;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, NULL), CD_OK);
    cr_assert_eq(h.length, 64u);
}

Test(protocol_frame, decode_rejects_bad_magic)
{
    uint8_t buf[64];
    valid_two_particle_frame(buf);
    buf[0] = '{';
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: bad magic 7b 43 4c 46 (expected 89 43 4c 46)");
    valid_two_particle_frame(buf);
    buf[3] = 'X';
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
}

Test(protocol_frame, decode_rejects_bad_version)
{
    uint8_t buf[64];
    valid_two_particle_frame(buf);
    buf[4] = 2;
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: unsupported version 2 (expected 1)");
}

Test(protocol_frame, decode_rejects_a_buffer_shorter_than_the_header)
{
    uint8_t buf[64];
    valid_two_particle_frame(buf);
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, 39, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: 39 bytes, shorter than the 40-byte header");
    cr_assert_eq(cd_frame_decode_header(NULL, 64, &h, &err), CD_E_INVALID_ARGUMENT);
}

Test(protocol_frame, decode_rejects_a_buffer_shorter_than_the_length)
{
    uint8_t buf[64];
    valid_two_particle_frame(buf);
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, 63, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: length 64 but only 63 bytes available");
}

Test(protocol_frame, decode_rejects_a_length_that_does_not_match_the_count)
{
    uint8_t buf[64];
    valid_two_particle_frame(buf);
    buf[8] = 60; /* length 60 for 2 particles */
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: length 60 does not match 2 particles (64 bytes)");
    /* A count whose size would not fit the u32 length is caught too. */
    valid_two_particle_frame(buf);
    buf[32] = buf[33] = buf[34] = buf[35] = 0xff;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
}

/* ---- quantized frames ---------------------------------------------------- */

Test(protocol_frame, quantized_size_is_header_box_and_six_bytes_per_particle)
{
    cr_assert_eq(cd_frame_size_quantized(0), 64u);
    cr_assert_eq(cd_frame_size_quantized(2), 76u);
    cr_assert_eq(cd_frame_size_quantized(400), 64u + 6u * 400u);
    /* Smaller than the plain form from 5 particles on. */
    cr_assert_lt(cd_frame_size_quantized(5), cd_frame_size(5));
}

Test(protocol_frame, shared_vectors_include_quantized_frames_with_flat_and_wide_axes)
{
    cJSON *root = load_vectors();
    int quantized = 0;
    bool flat = false, wide = false, empty = false;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(root, "frames")) {
        static vector v;
        read_vector(entry, &v);
        if (!v.quantized)
            continue;
        quantized++;
        empty = empty || v.count == 0;
        for (int k = 0; k < 3 && v.count > 0; k++) {
            flat = flat || (v.bbox_min[k] == v.bbox_max[k] && v.bbox_min[k] != 0);
            wide = wide || v.bbox_max[k] - v.bbox_min[k] > 1000;
        }
    }
    cr_assert_geq(quantized, 3);
    cr_assert(flat && wide && empty);
    cJSON_Delete(root);
}

Test(protocol_frame, quantized_vectors_decode_within_half_a_step_of_the_original)
{
    cJSON *root = load_vectors();
    const cJSON *entry;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(root, "frames")) {
        static vector v;
        read_vector(entry, &v);
        if (!v.quantized)
            continue;
        cd_frame_header h;
        cr_assert_eq(cd_frame_decode_header(v.bytes, v.size, &h, NULL), CD_OK);
        for (int k = 0; k < 3; k++) {
            float box[2];
            const uint8_t *p = v.bytes + CD_FRAME_HEADER_SIZE;
            uint32_t lo = (uint32_t)p[4 * k] | (uint32_t)p[4 * k + 1] << 8 |
                          (uint32_t)p[4 * k + 2] << 16 | (uint32_t)p[4 * k + 3] << 24;
            uint32_t hi = (uint32_t)p[12 + 4 * k] | (uint32_t)p[12 + 4 * k + 1] << 8 |
                          (uint32_t)p[12 + 4 * k + 2] << 16 | (uint32_t)p[12 + 4 * k + 3] << 24;
            memcpy(&box[0], &lo, sizeof lo);
            memcpy(&box[1], &hi, sizeof hi);
            cr_assert_eq(box[0], v.bbox_min[k], "bbox min %d", k);
            cr_assert_eq(box[1], v.bbox_max[k], "bbox max %d", k);
            double bound = ((double)box[1] - (double)box[0]) / 65535.0 / 2.0 + 1e-6;
            for (uint32_t i = 0; i < v.count; i++)
                cr_assert_leq(fabs((double)v.decoded[3 * i + k] - (double)v.positions[3 * i + k]),
                              bound, "particle %u axis %d", i, k);
        }
    }
    cJSON_Delete(root);
}

/* q values of particle i, axis k, read from a quantized frame. */
static uint16_t q_at(const uint8_t *frame, uint32_t i, int k)
{
    const uint8_t *p = frame + 64 + 6 * i + 2 * k;
    return (uint16_t)(p[0] | p[1] << 8);
}

Test(protocol_frame, quantize_maps_the_box_ends_to_0_and_65535_and_rounds_halves_up)
{
    /* x: 0 .. 65535 so that q == x exactly; 2.5 is a half: rounds to 3. */
    const float pos[] = {0, 0, 5, 65535, 1, 5, 2.5f, 0.5f, 5, 1000.49f, 0.25f, 5};
    uint8_t out[64 + 6 * 4 + 4];
    memset(out, 0xee, sizeof out);
    cd_frame_encode_quantized(out, 9, 3, 0.05, pos, 4);
    cr_assert_eq(out[64 + 24], 0xee, "wrote past cd_frame_size_quantized(4)");
    cr_assert_eq(out[6], 1, "flags bit 0");
    cr_assert_eq(out[8], 64 + 24, "length");
    cr_assert_eq(q_at(out, 0, 0), 0);
    cr_assert_eq(q_at(out, 1, 0), 65535);
    cr_assert_eq(q_at(out, 2, 0), 3);
    cr_assert_eq(q_at(out, 3, 0), 1000);
    cr_assert_eq(q_at(out, 0, 1), 0);
    cr_assert_eq(q_at(out, 1, 1), 65535);
    cr_assert_eq(q_at(out, 2, 1), 32768); /* 0.5 * 65535 = 32767.5 -> 32768 */
    cr_assert_eq(q_at(out, 3, 1), 16384); /* 16383.75 */
    for (uint32_t i = 0; i < 4; i++)
        cr_assert_eq(q_at(out, i, 2), 0, "a flat axis is all 0");
}

Test(protocol_frame, quantized_round_trip_stays_within_half_a_step)
{
    enum { N = 400 };
    static float pos[3 * N], back[3 * N];
    for (uint32_t i = 0; i < N; i++) {
        pos[3 * i] = -3.0f + 0.0123f * (float)i;
        pos[3 * i + 1] = 2.0f - 0.001f * (float)(i % 20) * (float)(i / 20);
        pos[3 * i + 2] = 0.5f * sinf((float)i);
    }
    static uint8_t out[64 + 6 * N];
    cd_frame_encode_quantized(out, 1, 42, 0.7, pos, N);
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(out, sizeof out, &h, &err), CD_OK, "%s", err.message);
    cr_assert_eq(h.flags, CD_FRAME_FLAG_QUANTIZED);
    cr_assert_eq(h.length, 64u + 6u * N);
    cr_assert_eq(h.count, (uint32_t)N);
    cr_assert_eq(h.frame, 42u);
    cd_frame_decode_positions(out, &h, back);
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < 3 * N; i++) {
        lo[i % 3] = fminf(lo[i % 3], pos[i]);
        hi[i % 3] = fmaxf(hi[i % 3], pos[i]);
    }
    for (uint32_t i = 0; i < 3 * N; i++) {
        double bound = ((double)hi[i % 3] - (double)lo[i % 3]) / 65535.0 / 2.0 + 1e-6;
        cr_assert_leq(fabs((double)back[i] - (double)pos[i]), bound, "coordinate %u", i);
    }
}

Test(protocol_frame, decode_rejects_unknown_flag_bits)
{
    uint8_t buf[64];
    valid_two_particle_frame(buf);
    buf[6] = 0x10; /* bits 0-3 are known (quantized, velocities, normals, shared) */
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: unknown flags 0x0010");
    valid_two_particle_frame(buf);
    buf[7] = 0x80;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
}

Test(protocol_frame, decode_checks_the_quantized_length)
{
    const float pos[6] = {0, 0, 0, 0.1f, 0, 0};
    uint8_t buf[76];
    cd_frame_encode_quantized(buf, 1, 0, 0.0, pos, 2);
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_OK, "%s", err.message);
    cr_assert_eq(h.length, 76u);
    /* The plain length for 2 particles (64) is wrong for a quantized frame. */
    buf[8] = 64;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: length 64 does not match 2 particles (76 bytes)");
    /* A plain frame with the flag set no longer matches its length. */
    valid_two_particle_frame(buf);
    buf[6] = 1;
    cr_assert_eq(cd_frame_decode_header(buf, 64, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_frame_decode_header(buf, 63, &h, &err), CD_E_INVALID_ARGUMENT);
}

/* ---- channels: velocities and normals (issue 15) ------------------------- */

Test(protocol_frame, channel_sizes_add_twelve_bytes_or_the_quantized_forms_per_particle)
{
    const uint16_t V = CD_FRAME_FLAG_VELOCITIES, N = CD_FRAME_FLAG_NORMALS,
                   Q = CD_FRAME_FLAG_QUANTIZED;
    cr_assert_eq(cd_frame_size_flags(10, 0), cd_frame_size(10));
    cr_assert_eq(cd_frame_size_flags(10, Q), cd_frame_size_quantized(10));
    cr_assert_eq(cd_frame_size_flags(10, V), 40u + 24u * 10u);
    cr_assert_eq(cd_frame_size_flags(10, N), 40u + 24u * 10u);
    cr_assert_eq(cd_frame_size_flags(10, V | N), 40u + 36u * 10u);
    cr_assert_eq(cd_frame_size_flags(10, Q | V), 64u + 6u * 10u + 24u + 6u * 10u);
    cr_assert_eq(cd_frame_size_flags(10, Q | N), 64u + 6u * 10u + 4u * 10u);
    cr_assert_eq(cd_frame_size_flags(10, Q | V | N), 64u + 24u + 16u * 10u);
    cr_assert_eq(cd_frame_size_flags(0, Q | V | N), 88u);
}

Test(protocol_frame, shared_vectors_cover_every_flag_combination_and_a_missing_normal)
{
    cJSON *root = load_vectors();
    bool form[8] = {false};
    bool zero_normal = false;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(root, "frames")) {
        static vector v;
        read_vector(entry, &v);
        cr_assert_lt(v.flags, 8u);
        form[v.flags] = true;
        for (uint32_t i = 0; (v.flags & CD_FRAME_FLAG_NORMALS) && i < v.count; i++)
            zero_normal = zero_normal || (v.decoded_normals[3 * i] == 0 &&
                                          v.decoded_normals[3 * i + 1] == 0 &&
                                          v.decoded_normals[3 * i + 2] == 0);
    }
    for (int f = 0; f < 8; f++)
        cr_assert(form[f], "no vector with flags %d", f);
    cr_assert(zero_normal, "a vector shows the zero normal");
    cJSON_Delete(root);
}

/* A deterministic spread of unit vectors over the whole sphere (a
 * Fibonacci lattice), the axes and the fold's edges included. */
static void sphere_point(uint32_t i, uint32_t n, float out[3])
{
    const double golden = 2.399963229728653, z = 1.0 - 2.0 * ((double)i + 0.5) / (double)n;
    const double r = sqrt(1.0 - z * z);
    out[0] = (float)(r * cos(golden * i));
    out[1] = (float)(r * sin(golden * i));
    out[2] = (float)z;
}

Test(protocol_frame, octahedral_normals_come_back_unit_and_within_0_005_degrees)
{
    double worst = 0;
    for (uint32_t i = 0; i < 20000 + 14; i++) {
        float n[3];
        if (i < 20000) {
            sphere_point(i, 20000, n);
        } else { /* the six axes and the eight octant diagonals' edges */
            static const float extra[14][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0},
                                               {0, 0, 1}, {0, 0, -1}, {0.6f, 0, -0.8f},
                                               {-0.6f, 0, -0.8f}, {0, 0.6f, -0.8f},
                                               {0, -0.6f, -0.8f}, {0.8f, 0.6f, 0},
                                               {-0.8f, -0.6f, 0}, {1e-7f, 1e-7f, -1},
                                               {-1e-7f, -1e-7f, -1}};
            memcpy(n, extra[i - 20000], sizeof n);
        }
        uint16_t q[2];
        float back[3];
        cd_frame_octahedral_encode(n, q);
        cr_assert(q[0] != 0 || q[1] != 0, "(0, 0) is kept for no normal (normal %u)", i);
        cd_frame_octahedral_decode(q, back);
        const double len = sqrt((double)back[0] * back[0] + (double)back[1] * back[1] +
                                (double)back[2] * back[2]);
        cr_assert_leq(fabs(len - 1.0), 1e-6, "normal %u: length %.9g", i, len);
        /* The angle from atan2(|n x b|, n . b): acos would lose it in
         * float32's rounding of the decoded components. */
        const double cx = (double)n[1] * back[2] - (double)n[2] * back[1],
                     cy = (double)n[2] * back[0] - (double)n[0] * back[2],
                     cz = (double)n[0] * back[1] - (double)n[1] * back[0];
        const double dot = (double)n[0] * back[0] + (double)n[1] * back[1] +
                           (double)n[2] * back[2];
        const double angle = atan2(sqrt(cx * cx + cy * cy + cz * cz), dot) * 180.0 / M_PI;
        worst = fmax(worst, angle);
    }
    /* A 16-bit step of the octahedron is 2/65535; the worst angle it makes
     * is 0.0036 degrees (measured over 200,000 directions). */
    cr_assert_leq(worst, 0.005, "worst angle %.6f degrees", worst);
    cr_assert_gt(worst, 0.0, "quantization must show somewhere");
}

Test(protocol_frame, octahedral_zero_is_no_normal_and_straight_down_avoids_it)
{
    const float zero[3] = {0, 0, 0}, down[3] = {0, 0, -1}, nan[3] = {NAN, 0, 1};
    uint16_t q[2];
    float back[3];
    cd_frame_octahedral_encode(zero, q);
    cr_assert(q[0] == 0 && q[1] == 0);
    cd_frame_octahedral_decode(q, back);
    cr_assert(back[0] == 0 && back[1] == 0 && back[2] == 0);
    cd_frame_octahedral_encode(nan, q);
    cr_assert(q[0] == 0 && q[1] == 0, "a non-finite normal is no normal");
    cd_frame_octahedral_encode(down, q);
    cr_assert(q[0] == 65535 && q[1] == 65535);
    cd_frame_octahedral_decode(q, back);
    cr_assert(back[0] == 0 && back[1] == 0 && back[2] == -1);
}

Test(protocol_frame, channels_follow_the_positions_which_stay_byte_identical)
{
    enum { N = 50 };
    static float pos[3 * N], vel[3 * N], nrm[3 * N], back[3 * N];
    for (uint32_t i = 0; i < N; i++) {
        pos[3 * i] = 0.1f * (float)i;
        pos[3 * i + 1] = 2.0f - 0.01f * (float)(i * i % 17);
        pos[3 * i + 2] = 0.3f * sinf((float)i);
        vel[3 * i] = -2.0f + 0.09f * (float)i;
        vel[3 * i + 1] = 4.0f * cosf((float)i);
        vel[3 * i + 2] = 0.5f; /* a flat axis */
        sphere_point(i, N, &nrm[3 * i]);
    }
    const cd_frame_content c = {.instance = 5, .frame = 77, .time = 1.25, .count = N,
                                .positions = pos, .velocities = vel, .normals = nrm};
    for (uint16_t q = 0; q <= CD_FRAME_FLAG_QUANTIZED; q++) {
        static uint8_t bare[64 + 12 * N], full[64 + 36 * N + 24];
        const size_t bare_len = cd_frame_size_flags(N, q);
        const uint16_t flags = q | CD_FRAME_FLAG_VELOCITIES | CD_FRAME_FLAG_NORMALS;
        cd_frame_encode_content(bare, q, &c);
        cd_frame_encode_content(full, flags, &c);
        /* Header apart from flags and length, then the positions: the same. */
        cr_assert_eq(memcmp(bare, full, 6), 0);
        cr_assert_eq(memcmp(bare + 12, full + 12, bare_len - 12), 0, "quantized %u", q);
        cd_frame_header h;
        cd_error err;
        cr_assert_eq(cd_frame_decode_header(full, cd_frame_size_flags(N, flags), &h, &err), CD_OK,
                     "%s", err.message);
        cr_assert_eq(h.flags, flags);
        cr_assert(cd_frame_decode_velocities(full, &h, back));
        for (uint32_t i = 0; i < 3 * N; i++) {
            /* plain: exact; quantized: half a step of the velocities' box */
            double lo = INFINITY, hi = -INFINITY;
            for (uint32_t j = i % 3; j < 3 * N; j += 3) {
                lo = fmin(lo, vel[j]);
                hi = fmax(hi, vel[j]);
            }
            const double bound = q ? (hi - lo) / 65535.0 / 2.0 + 1e-6 : 0.0;
            cr_assert_leq(fabs((double)back[i] - vel[i]), bound, "velocity %u, quantized %u", i, q);
        }
        cr_assert(cd_frame_decode_normals(full, &h, back));
        for (uint32_t i = 0; i < 3 * N; i++)
            cr_assert_leq(fabsf(back[i] - nrm[i]), q ? 1e-4f : 0.0f, "normal %u", i);
        /* A frame without the channel says so and writes nothing. */
        cr_assert_eq(cd_frame_decode_header(bare, bare_len, &h, &err), CD_OK);
        back[0] = 42.0f;
        cr_assert_not(cd_frame_decode_velocities(bare, &h, back));
        cr_assert_not(cd_frame_decode_normals(bare, &h, back));
        cr_assert_eq(back[0], 42.0f);
    }
}

Test(protocol_frame, decode_checks_the_length_each_channel_flag_implies)
{
    const float pos[6] = {0, 0, 0, 0.1f, 0, 0}, vel[6] = {1, 2, 3, 4, 5, 6},
                nrm[6] = {0, 0, 1, 0, 1, 0};
    const cd_frame_content c = {.instance = 1, .count = 2, .positions = pos, .velocities = vel,
                                .normals = nrm};
    uint8_t buf[40 + 36 * 2];
    cd_frame_encode_content(buf, CD_FRAME_FLAG_VELOCITIES, &c);
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_OK, "%s", err.message);
    cr_assert_eq(h.length, 88u);
    buf[6] = CD_FRAME_FLAG_VELOCITIES | CD_FRAME_FLAG_NORMALS; /* says more than it holds */
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: length 88 does not match 2 particles (112 bytes)");
    buf[6] = 0; /* says less */
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
}

/* A shared-memory reference (flags bit 3): the named frame's header with
 * bit 3 and length 56, then its ring position and length. */
Test(protocol_frame, a_shared_reference_should_carry_the_frames_header_position_and_length)
{
    uint8_t frame[64], ref[CD_FRAME_SHARED_SIZE];
    valid_two_particle_frame(frame);
    const uint64_t position = 0x0123456789abcdefull;
    cd_frame_header named;
    cr_assert_eq(cd_frame_decode_header(frame, sizeof frame, &named, NULL), CD_OK);
    named.flags = CD_FRAME_FLAG_QUANTIZED; /* its flags are kept (bit 0 here) */
    frame[6] = CD_FRAME_FLAG_QUANTIZED;
    cd_frame_encode_shared(ref, &named, position);
    cr_assert_eq(memcmp(ref, frame, 6), 0, "magic and version");
    cr_assert_eq(memcmp(ref + 12, frame + 12, 28), 0, "instance, frame, time, count, reserved");
    cr_assert_eq(ref[6], CD_FRAME_FLAG_QUANTIZED | CD_FRAME_FLAG_SHARED);
    static const uint8_t tail[16] = {0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
                                     64, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_eq(memcmp(ref + 40, tail, sizeof tail), 0, "u64 position, u32 length, u32 0");
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(ref, sizeof ref, &h, &err), CD_OK, "%s", err.message);
    cr_assert_eq(h.length, CD_FRAME_SHARED_SIZE);
    cr_assert_eq(h.flags, CD_FRAME_FLAG_QUANTIZED | CD_FRAME_FLAG_SHARED);
    uint64_t got_position;
    uint32_t got_len;
    cd_frame_decode_shared(ref, &got_position, &got_len);
    cr_assert_eq(got_position, position);
    cr_assert_eq(got_len, 64u);
    ref[8] = 57; /* a reference is exactly 56 bytes */
    cr_assert_eq(cd_frame_decode_header(ref, sizeof ref, &h, &err), CD_E_INVALID_ARGUMENT);
    ref[8] = 56;
    ref[6] |= 0x10; /* bit 4 is still unknown */
    cr_assert_eq(cd_frame_decode_header(ref, sizeof ref, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: unknown flags 0x0010");
}

/* PROTOCOL.md "Shared-memory frames", its test vector byte for byte. */
Test(protocol_frame, the_documented_reference_vector_should_be_what_the_encoder_writes)
{
    static const uint8_t documented[CD_FRAME_SHARED_SIZE] = {
        0x89, 0x43, 0x4c, 0x46, 0x01, 0x00, 0x08, 0x00, 0x38, 0x00, 0x00, 0x00, 0x01, 0x00,
        0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0xf0, 0x3f, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x58, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    const cd_frame_header named = {.version = 1, .flags = 0, .length = 88, .instance = 1,
                                   .frame = 2, .time = 1.0, .count = 4};
    uint8_t ref[CD_FRAME_SHARED_SIZE];
    cd_frame_encode_shared(ref, &named, 4096);
    cr_assert_eq(memcmp(ref, documented, sizeof ref), 0);
}
