/* Binary requests (protocol/binary_request.c): PROTOCOL.md's vectors B1 and
 * B2 parse into the requests their JSON twins make, and every malformed
 * header is refused with its message. */
#include <string.h>

#include <criterion/criterion.h>

#include "../protocol/protocol.h"

static const unsigned char b1[] = {
    0x89, 0x43, 0x4c, 0x52, 0x01, 0x00, 0x01, 0x00, 0x50, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x00, 0xcd, 0xcc, 0xcc, 0x3d,
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f};

static const unsigned char b2[] = {
    0x89, 0x43, 0x4c, 0x52, 0x01, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00};

Test(protocol_binary, vector_b1_is_the_json_skin)
{
    cr_assert_eq(cd_binary_request_length(b1, 8), 0u, "header incomplete");
    cr_assert_eq(cd_binary_request_length(b1, sizeof b1), sizeof b1);
    cd_request bin, json;
    cd_error err;
    cr_assert_eq(cd_binary_request_parse(b1, sizeof b1, NULL, &bin, &err), CD_OK, "%s",
                 err.message);
    const char *line = "{\"id\":7,\"cmd\":\"skin\",\"instance\":3,\"positions\":[[0,1,0],[0.1,1,0]],"
                       "\"normals\":[[0,0,1],[0,0,1]]}";
    cr_assert_eq(cd_request_parse(line, strlen(line), NULL, &json, &err), CD_OK, "%s",
                 err.message);
    cr_expect_eq(bin.cmd, CD_CMD_SKIN);
    cr_expect_eq(bin.instance, json.instance);
    cr_expect_eq(bin.id->valuedouble, 7.0);
    cr_expect_eq(bin.as.skin.count, json.as.skin.count);
    cr_expect_arr_eq(bin.as.skin.positions, json.as.skin.positions, sizeof(float) * 6);
    cr_expect_arr_eq(bin.as.skin.normals, json.as.skin.normals, sizeof(float) * 6);
    cd_request_free(&bin);
    cd_request_free(&json);
}

Test(protocol_binary, vector_b2_is_the_json_pin)
{
    cd_request bin;
    cd_error err;
    cr_assert_eq(cd_binary_request_parse(b2, sizeof b2, NULL, &bin, &err), CD_OK, "%s",
                 err.message);
    cr_expect_eq(bin.cmd, CD_CMD_PIN);
    cr_expect_eq(bin.instance, 3u);
    cr_expect_eq(bin.as.pin.count, 1u);
    cr_expect_eq(bin.as.pin.particles[0], 5u);
    cr_expect_eq(bin.as.pin.positions[0].y, 2.0f);
    cd_request_free(&bin);
}

static void expect_refused(const unsigned char *msg, size_t len, cd_status code,
                           const char *message)
{
    cd_request req;
    cd_error err;
    cr_expect_eq(cd_binary_request_parse(msg, len, NULL, &req, &err), code, "%s", message);
    cr_expect_str_eq(err.message, message);
    cr_expect(req.id != NULL && req.id->valuedouble == 7.0, "answered with the request id");
    cd_request_free(&req);
}

Test(protocol_binary, malformed_headers_are_refused_naming_the_field)
{
    unsigned char m[sizeof b1];
    memcpy(m, b1, sizeof m);
    m[4] = 2;
    expect_refused(m, sizeof m, CD_E_INVALID_ARGUMENT,
                   "version: binary request version 2 is not supported (1)");
    memcpy(m, b1, sizeof m);
    m[16] = 9;
    expect_refused(m, sizeof m, CD_E_INVALID_ARGUMENT, "kind: 9 is not 1 (skin) or 2 (pin)");
    memcpy(m, b1, sizeof m);
    m[6] = 4;
    expect_refused(m, sizeof m, CD_E_INVALID_ARGUMENT, "flags: unknown bits 0x0004");
    memcpy(m, b1, sizeof m);
    m[6] = 0; /* no normals: 24 bytes too many */
    expect_refused(m, sizeof m, CD_E_INVALID_ARGUMENT,
                   "length: 80 bytes for 2 entries (expected 56)");
    memcpy(m, b1, sizeof m);
    m[24] = 0x41;
    m[25] = 0x42;
    m[26] = 0x0f; /* 1,000,001: over max_list */
    expect_refused(m, sizeof m, CD_E_LIMIT_EXCEEDED,
                   "count: 1000001 entries exceed the limit of 1000000");
    memcpy(m, b1, sizeof m);
    memset(m + 32, 0xff, 4); /* a NaN */
    expect_refused(m, sizeof m, CD_E_INVALID_ARGUMENT, "positions[0]: must be finite");
    cr_expect(!cd_binary_request_magic((const unsigned char *)"\x89" "CLX", 4));
    cr_expect(cd_binary_request_magic(b1, 2), "a prefix of the magic may still be one");
}
