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
 * `decoded` what a decoder gets back; otherwise both are the same. */
typedef struct vector {
    bool quantized;
    uint32_t instance;
    uint64_t frame;
    double time;
    uint32_t count;
    float positions[64 * 3];
    float decoded[64 * 3];
    float bbox_min[3], bbox_max[3];
    uint8_t bytes[40 + 64 * 12];
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
    cr_assert(cJSON_IsObject(dec) && cJSON_IsString(hex));
    v->quantized = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(entry, "quantized"));
    v->instance = (uint32_t)cJSON_GetObjectItemCaseSensitive(dec, "instance")->valuedouble;
    v->frame = (uint64_t)cJSON_GetObjectItemCaseSensitive(dec, "frame")->valuedouble;
    v->time = cJSON_GetObjectItemCaseSensitive(dec, "time")->valuedouble;
    v->count = read_positions(cJSON_GetObjectItemCaseSensitive(dec, "positions"), v->decoded);
    if (v->quantized) {
        uint32_t n = read_positions(cJSON_GetObjectItemCaseSensitive(entry, "original"),
                                    v->positions);
        cr_assert_eq(n, v->count, "\"original\" and \"decoded\" differ in length");
        float box[2 * 3];
        const cJSON *mn = cJSON_GetObjectItemCaseSensitive(dec, "bboxMin");
        const cJSON *mx = cJSON_GetObjectItemCaseSensitive(dec, "bboxMax");
        cr_assert(cJSON_GetArraySize(mn) == 3 && cJSON_GetArraySize(mx) == 3);
        for (int k = 0; k < 3; k++) {
            box[k] = (float)cJSON_GetArrayItem(mn, k)->valuedouble;
            box[3 + k] = (float)cJSON_GetArrayItem(mx, k)->valuedouble;
        }
        memcpy(v->bbox_min, box, sizeof v->bbox_min);
        memcpy(v->bbox_max, box + 3, sizeof v->bbox_max);
    } else {
        memcpy(v->positions, v->decoded, sizeof v->positions);
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
        if (v.quantized) {
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
        cr_assert_eq(h.flags, v.quantized ? CD_FRAME_FLAG_QUANTIZED : 0u);
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
    buf[6] = 0x08; /* bits 0-2 are known (quantized, velocities, normals) */
    cd_frame_header h;
    cd_error err;
    cr_assert_eq(cd_frame_decode_header(buf, sizeof buf, &h, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(err.message, "frame: unknown flags 0x0008");
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
