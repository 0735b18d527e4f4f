/* protocol/reply.c — the reply envelope, f32 arrays that round-trip, and the
 * seed's status text. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../protocol/protocol.h"

static char *print(cJSON *reply)
{
    size_t len = 0;
    char *line = cd_reply_print(reply, &len);
    cr_assert_not_null(line);
    cr_assert_eq(len, strlen(line));
    return line;
}

Test(protocol_reply, ok_without_id_has_no_id_member)
{
    char *line = print(cd_reply_ok(NULL));
    cr_assert_str_eq(line, "{\"ok\":true}\n");
    free(line);
}

Test(protocol_reply, ok_echoes_a_number_id)
{
    cJSON *id = cJSON_CreateNumber(42);
    cJSON *reply = cd_reply_ok(id);
    cJSON_AddNumberToObject(reply, "instance", 1);
    char *line = print(reply);
    cr_assert_str_eq(line, "{\"id\":42,\"ok\":true,\"instance\":1}\n");
    free(line);
    cJSON_Delete(id); /* the reply holds its own copy */
}

Test(protocol_reply, ok_echoes_a_string_id)
{
    cJSON *id = cJSON_CreateString("a\"b");
    char *line = print(cd_reply_ok(id));
    cr_assert_str_eq(line, "{\"id\":\"a\\\"b\",\"ok\":true}\n");
    free(line);
    cJSON_Delete(id);
}

Test(protocol_reply, print_of_null_is_null)
{
    cr_assert_null(cd_reply_print(NULL, NULL));
}

Test(protocol_reply, error_line_has_code_and_message)
{
    cd_error err;
    cd_fail(&err, CD_E_NOT_FOUND, "instance: no instance %u", 7u);
    size_t len;
    char *line = cd_reply_error_line(NULL, &err, &len);
    cr_assert_str_eq(line, "{\"ok\":false,\"error\":{\"code\":\"not_found\","
                           "\"message\":\"instance: no instance 7\"}}\n");
    cr_assert_eq(len, strlen(line));
    free(line);
}

Test(protocol_reply, error_line_with_id)
{
    cJSON *id = cJSON_CreateNumber(3);
    cd_error err;
    cd_fail(&err, CD_E_LIMIT_EXCEEDED, "instance: at most %d instances", 2);
    char *line = cd_reply_error_line(id, &err, NULL);
    cr_assert_str_eq(line, "{\"id\":3,\"ok\":false,\"error\":{\"code\":\"limit_exceeded\","
                           "\"message\":\"instance: at most 2 instances\"}}\n");
    free(line);
    cJSON_Delete(id);
}

Test(protocol_reply, error_line_without_error_is_internal)
{
    char *line = cd_reply_error_line(NULL, NULL, NULL);
    cr_assert_str_eq(line, "{\"ok\":false,\"error\":{\"code\":\"internal\","
                           "\"message\":\"internal error\"}}\n");
    free(line);
}

Test(protocol_reply, error_line_never_contains_a_raw_newline)
{
    cd_error err = {.code = CD_E_INVALID_ARGUMENT};
    strcpy(err.message, "x: one\ntwo\r");
    char *line = cd_reply_error_line(NULL, &err, NULL);
    cr_assert_str_eq(line, "{\"ok\":false,\"error\":{\"code\":\"invalid_argument\","
                           "\"message\":\"x: one two \"}}\n");
    free(line);
}

Test(protocol_reply, every_status_code_has_its_wire_name)
{
    static const char *const names[] = {"parse_error", "unknown_command", "invalid_argument",
                                        "not_found", "limit_exceeded", "line_too_long",
                                        "internal", "unauthorized"};
    cr_assert_eq(CD_STATUS_COUNT - CD_E_PARSE_ERROR, (int)(sizeof names / sizeof names[0]));
    for (int i = CD_E_PARSE_ERROR; i < CD_STATUS_COUNT; i++) {
        cd_error err;
        cd_fail(&err, (cd_status)i, "m");
        char *line = cd_reply_error_line(NULL, &err, NULL);
        char expected[160];
        snprintf(expected, sizeof expected,
                 "{\"ok\":false,\"error\":{\"code\":\"%s\",\"message\":\"m\"}}\n",
                 names[i - CD_E_PARSE_ERROR]);
        cr_assert_str_eq(line, expected);
        free(line);
    }
}

Test(protocol_reply, floats_print_with_nine_digits)
{
    cJSON *reply = cd_reply_ok(NULL);
    const float v[6] = {0.1f, -2.5f, 0.0f, 1.0f / 3.0f, 1e-7f, 123456.789f};
    cr_assert(cd_reply_add_floats(reply, "positions", v, 2));
    char *line = print(reply);
    cr_assert_str_eq(line, "{\"ok\":true,\"positions\":[0.100000001,-2.5,0,0.333333343,"
                           "1.00000001e-07,123456.789]}\n");
    free(line);
}

Test(protocol_reply, floats_parse_back_to_the_same_floats)
{
    /* 3000 floats spread over the whole finite range by their bit patterns,
     * plus the awkward ones. */
    enum { N = 1000 };
    float *v = malloc(sizeof(float) * 3 * N);
    cr_assert_not_null(v);
    uint32_t x = 12345u;
    for (size_t i = 0; i < 3 * N; i++) {
        float f;
        do {
            x = x * 1664525u + 1013904223u; /* LCG: deterministic */
            memcpy(&f, &x, sizeof f);
        } while (!isfinite(f));
        v[i] = f;
    }
    const float special[] = {0.1f, -0.0f, 1.17549435e-38f, 1.40129846e-45f, 3.40282347e38f,
                             -3.40282347e38f, 16777217.0f, 0.3f};
    memcpy(v, special, sizeof special);

    cJSON *reply = cd_reply_ok(NULL);
    cr_assert(cd_reply_add_floats(reply, "p", v, N));
    char *line = print(reply);
    cJSON *parsed = cJSON_Parse(line);
    cr_assert_not_null(parsed, "not JSON: %.200s", line);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(parsed, "p");
    cr_assert_eq(cJSON_GetArraySize(arr), 3 * N);
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        float back = (float)e->valuedouble;
        cr_assert(memcmp(&back, &v[i], sizeof back) == 0 || (back == 0 && v[i] == 0),
                  "entry %zu: %.9g came back as %.9g", i, (double)v[i], (double)back);
        i++;
    }
    cJSON_Delete(parsed);
    free(line);
    free(v);
}

Test(protocol_reply, empty_float_array_is_empty_json_array)
{
    cJSON *reply = cd_reply_ok(NULL);
    cr_assert(cd_reply_add_floats(reply, "positions", NULL, 0));
    char *line = print(reply);
    cr_assert_str_eq(line, "{\"ok\":true,\"positions\":[]}\n");
    free(line);
}

Test(protocol_reply, non_finite_floats_print_as_null)
{
    cJSON *reply = cd_reply_ok(NULL);
    const float v[3] = {INFINITY, NAN, 1.0f};
    cr_assert(cd_reply_add_floats(reply, "w", v, 1));
    char *line = print(reply);
    cr_assert_str_eq(line, "{\"ok\":true,\"w\":[null,null,1]}\n");
    free(line);
}

Test(protocol_reply, add_floats_rejects_null_arguments)
{
    const float v[3] = {0};
    cr_assert_not(cd_reply_add_floats(NULL, "w", v, 1));
    cJSON *obj = cJSON_CreateObject();
    cr_assert_not(cd_reply_add_floats(obj, NULL, v, 1));
    cr_assert_not(cd_reply_add_floats(obj, "w", NULL, 1));
    cJSON_Delete(obj);
}

Test(protocol_reply, status_text_matches_the_seed_format)
{
    const cd_instance_info infos[3] = {
        {.id = 1, .type = CD_INSTANCE_CLOTH, .width = 10, .height = 10, .particles = 100,
         .constraints = 490, .colliders = 2, .enabled = true},
        {.id = 2, .type = CD_INSTANCE_CLOTH, .width = 20, .height = 20, .particles = 400,
         .constraints = 1960, .colliders = 1, .enabled = true},
        {.id = 3, .type = CD_INSTANCE_CLOTH, .width = 5, .height = 5, .particles = 25,
         .constraints = 110, .colliders = 0, .enabled = false},
    };
    char *text = cd_status_text(infos, 3);
    cr_assert_str_eq(text, "=== Cloth Simulation ===\n"
                           "Instances: 3\n"
                           "  Cloth 1: 100 particles, 490 constraints, 2 colliders\n"
                           "  Cloth 2: 400 particles, 1960 constraints, 1 colliders\n"
                           "  Cloth 3: 25 particles, 110 constraints, 0 colliders [DISABLED]\n");
    free(text);
}

Test(protocol_reply, status_text_marks_unstable_instances)
{
    const cd_instance_info infos[2] = {
        {.id = 65537, .particles = 100, .constraints = 502, .colliders = 0, .enabled = false,
         .unstable = true},
        {.id = 2, .particles = 4, .constraints = 6, .colliders = 64, .enabled = true},
    };
    char *text = cd_status_text(infos, 2);
    cr_assert_str_eq(text, "=== Cloth Simulation ===\n"
                           "Instances: 2\n"
                           "  Cloth 65537: 100 particles, 502 constraints, 0 colliders [UNSTABLE]\n"
                           "  Cloth 2: 4 particles, 6 constraints, 64 colliders\n");
    free(text);
}

Test(protocol_reply, status_text_with_no_instances)
{
    char *text = cd_status_text(NULL, 0);
    cr_assert_str_eq(text, "=== Cloth Simulation ===\nInstances: 0\n");
    free(text);
}
