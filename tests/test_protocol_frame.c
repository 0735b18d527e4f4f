/* protocol/frame.c — the binary frame, byte for byte.
 *
 * protocol/test_vectors.json is the single source of truth shared with the
 * clients' tests: cd_frame_encode must reproduce every vector in it exactly,
 * and cd_frame_decode_header must read each one back. (The binary runs from
 * the repository root, as `make unit` does.) */
#include <criterion/criterion.h>

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

/* One vector's decoded fields, with positions rounded to float. */
typedef struct vector {
    uint32_t instance;
    uint64_t frame;
    double time;
    uint32_t count;
    float positions[64 * 3];
    uint8_t bytes[40 + 64 * 12];
    size_t size;
} vector;

static void read_vector(const cJSON *entry, vector *v)
{
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(entry, "decoded");
    const cJSON *hex = cJSON_GetObjectItemCaseSensitive(entry, "hex");
    cr_assert(cJSON_IsObject(dec) && cJSON_IsString(hex));
    v->instance = (uint32_t)cJSON_GetObjectItemCaseSensitive(dec, "instance")->valuedouble;
    v->frame = (uint64_t)cJSON_GetObjectItemCaseSensitive(dec, "frame")->valuedouble;
    v->time = cJSON_GetObjectItemCaseSensitive(dec, "time")->valuedouble;
    const cJSON *positions = cJSON_GetObjectItemCaseSensitive(dec, "positions");
    v->count = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, positions) {
        cr_assert_eq(cJSON_GetArraySize(p), 3);
        cr_assert_lt(v->count, 64u);
        for (int k = 0; k < 3; k++)
            v->positions[3 * v->count + k] = (float)cJSON_GetArrayItem(p, k)->valuedouble;
        v->count++;
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
        cr_assert_eq(v.size, cd_frame_size(v.count), "vector %d: size", index);
        uint8_t out[sizeof v.bytes];
        cd_frame_encode(out, v.instance, v.frame, v.time, v.positions, v.count);
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
        cr_assert_eq(h.flags, 0);
        cr_assert_eq(h.length, v.size);
        cr_assert_eq(h.instance, v.instance);
        cr_assert_eq(h.frame, v.frame);
        cr_assert_eq(h.time, v.time);
        cr_assert_eq(h.count, v.count);
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
