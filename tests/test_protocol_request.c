/* protocol/request.c — every command's valid forms parse into the right
 * values (defaults included), and every kind of invalid form is answered
 * with the contract's code and a message that starts with the field. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../protocol/json_fields.h"
#include "../protocol/protocol.h"

/* ---- helpers ------------------------------------------------------------- */

static cd_status parse_with(const char *line, const cd_limits *limits, cd_request *req,
                            cd_error *err)
{
    return cd_request_parse(line, strlen(line), limits, req, err);
}

/* Parses a line that must be valid; the caller frees `req`. */
static void parse_ok(const char *line, cd_request *req)
{
    cd_error err;
    cd_status st = parse_with(line, NULL, req, &err);
    cr_assert_eq(st, CD_OK, "%s -> %s: %s", line, cd_status_name(st), err.message);
}

static void expect_failure(const char *line, const cd_limits *limits, cd_status code,
                           const char *message, bool exact)
{
    cd_request req;
    cd_error err;
    cd_status st = parse_with(line, limits, &req, &err);
    cr_assert_eq(st, code, "%s -> %s (%s), expected %s", line, cd_status_name(st), err.message,
                 cd_status_name(code));
    cr_assert_eq(err.code, code);
    if (exact)
        cr_assert_str_eq(err.message, message, "%s", line);
    else
        cr_assert(strncmp(err.message, message, strlen(message)) == 0,
                  "%s -> \"%s\" should start with \"%s\"", line, err.message, message);
    cr_assert_null(strchr(err.message, '\n'));
    cd_request_free(&req);
}

/* The exact message. */
static void expect_error(const char *line, cd_status code, const char *message)
{
    expect_failure(line, NULL, code, message, true);
}

/* A message starting with `prefix` (the field name and ": "). */
static void expect_error_prefix(const char *line, cd_status code, const char *prefix)
{
    expect_failure(line, NULL, code, prefix, false);
}

static void assert_vec3(cd_vec3 v, float x, float y, float z)
{
    cr_assert(v.x == x && v.y == y && v.z == z, "(%.9g, %.9g, %.9g) != (%.9g, %.9g, %.9g)",
              (double)v.x, (double)v.y, (double)v.z, (double)x, (double)y, (double)z);
}

static void assert_vec3_near(cd_vec3 v, float x, float y, float z)
{
    cr_assert(fabsf(v.x - x) < 1e-6f && fabsf(v.y - y) < 1e-6f && fabsf(v.z - z) < 1e-6f,
              "(%.9g, %.9g, %.9g) != (%.9g, %.9g, %.9g)", (double)v.x, (double)v.y,
              (double)v.z, (double)x, (double)y, (double)z);
}

/* ---- envelope ------------------------------------------------------------ */

Test(protocol_request, not_json_is_parse_error)
{
    expect_error_prefix("{\"cmd\":", CD_E_PARSE_ERROR, "not valid JSON");
    expect_error_prefix("hello", CD_E_PARSE_ERROR, "not valid JSON");
    expect_error_prefix("", CD_E_PARSE_ERROR, "not valid JSON");
}

Test(protocol_request, json_array_is_parse_error)
{
    expect_error("[1,2,3]", CD_E_PARSE_ERROR, "the request must be a JSON object");
    expect_error("42", CD_E_PARSE_ERROR, "the request must be a JSON object");
    expect_error("\"status\"", CD_E_PARSE_ERROR, "the request must be a JSON object");
}

Test(protocol_request, data_after_the_object_is_parse_error)
{
    expect_error_prefix("{\"cmd\":\"status\"} {\"cmd\":\"status\"}", CD_E_PARSE_ERROR,
                        "not valid JSON (unexpected data");
}

Test(protocol_request, trailing_whitespace_and_carriage_return_are_fine)
{
    cd_request req;
    parse_ok("  {\"cmd\":\"status\"} \t\r", &req);
    cr_assert_eq(req.cmd, CD_CMD_STATUS);
    cd_request_free(&req);
}

Test(protocol_request, parses_only_len_bytes_of_an_unterminated_buffer)
{
    const char buf[] = "{\"cmd\":\"status\"}GARBAGE";
    cd_request req;
    cd_error err;
    cr_assert_eq(cd_request_parse(buf, 16, NULL, &req, &err), CD_OK, "%s", err.message);
    cr_assert_eq(req.cmd, CD_CMD_STATUS);
    cd_request_free(&req);
}

Test(protocol_request, missing_cmd_is_invalid_argument)
{
    expect_error("{}", CD_E_INVALID_ARGUMENT, "cmd: required");
    expect_error("{\"instance\":1}", CD_E_INVALID_ARGUMENT, "cmd: required");
}

Test(protocol_request, cmd_not_a_string_is_invalid_argument)
{
    expect_error("{\"cmd\":5}", CD_E_INVALID_ARGUMENT, "cmd: must be a string");
    expect_error("{\"cmd\":null}", CD_E_INVALID_ARGUMENT, "cmd: must be a string");
    expect_error("{\"cmd\":[\"status\"]}", CD_E_INVALID_ARGUMENT, "cmd: must be a string");
}

Test(protocol_request, unknown_cmd_is_unknown_command)
{
    expect_error("{\"cmd\":\"foo\"}", CD_E_UNKNOWN_COMMAND,
                 "unknown command \"foo\" (hello lists the commands)");
    /* Names are case-sensitive; a near miss (2 edits at most, case-blind)
     * names the command it is nearest to. */
    expect_error("{\"cmd\":\"Create\"}", CD_E_UNKNOWN_COMMAND,
                 "unknown command \"Create\" (did you mean \"create\"?)");
    expect_error("{\"cmd\":\"creat\"}", CD_E_UNKNOWN_COMMAND,
                 "unknown command \"creat\" (did you mean \"create\"?)");
    expect_error("{\"cmd\":\"addcolider\"}", CD_E_UNKNOWN_COMMAND,
                 "unknown command \"addcolider\" (did you mean \"addCollider\"?)");
    expect_error("{\"cmd\":\"stpe\"}", CD_E_UNKNOWN_COMMAND,
                 "unknown command \"stpe\" (did you mean \"step\"?)");
}

Test(protocol_request, unknown_cmd_message_stays_on_one_line)
{
    /* A newline and a quote inside the command name are not copied raw. */
    expect_error("{\"cmd\":\"a\\nb\\\"c\"}", CD_E_UNKNOWN_COMMAND,
                 "unknown command \"a?b?c\" (hello lists the commands)");
}

Test(protocol_request, long_unknown_cmd_is_cut_in_the_message)
{
    char line[400];
    char name[301];
    memset(name, 'x', 300);
    name[300] = '\0';
    snprintf(line, sizeof line, "{\"cmd\":\"%s\"}", name);
    cd_request req;
    cd_error err;
    cr_assert_eq(parse_with(line, NULL, &req, &err), CD_E_UNKNOWN_COMMAND);
    cr_assert(strlen(err.message) < 120, "%s", err.message);
    cr_assert_not_null(strstr(err.message, "...\""));
    cd_request_free(&req);
}

Test(protocol_request, number_id_is_kept_for_error_replies)
{
    cd_request req;
    cd_error err;
    cr_assert_eq(parse_with("{\"id\":7,\"cmd\":\"nope\"}", NULL, &req, &err),
                 CD_E_UNKNOWN_COMMAND);
    cr_assert(cJSON_IsNumber(req.id));
    cr_assert_eq(req.id->valuedouble, 7.0);
    size_t len;
    char *line = cd_reply_error_line(req.id, &err, &len);
    cr_assert_str_eq(line, "{\"id\":7,\"ok\":false,\"error\":{\"code\":\"unknown_command\","
                           "\"message\":\"unknown command \\\"nope\\\" (hello lists the commands)\"}}\n");
    cr_assert_eq(len, strlen(line));
    free(line);
    cd_request_free(&req);
}

Test(protocol_request, string_id_is_kept_for_error_replies)
{
    cd_request req;
    cd_error err;
    cr_assert_eq(parse_with("{\"cmd\":\"create\",\"width\":1,\"id\":\"req-1\"}", NULL, &req, &err),
                 CD_E_INVALID_ARGUMENT);
    cr_assert(cJSON_IsString(req.id));
    cr_assert_str_eq(req.id->valuestring, "req-1");
    char *line = cd_reply_error_line(req.id, &err, NULL);
    cr_assert_str_eq(line, "{\"id\":\"req-1\",\"ok\":false,\"error\":{\"code\":\"invalid_argument\","
                           "\"message\":\"width: must be an integer >= 2\"}}\n");
    free(line);
    cd_request_free(&req);
}

Test(protocol_request, id_is_read_even_when_cmd_is_missing)
{
    cd_request req;
    cd_error err;
    cr_assert_eq(parse_with("{\"id\":12.5}", NULL, &req, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(req.id->valuedouble, 12.5);
    cd_request_free(&req);
}

Test(protocol_request, id_of_another_type_is_invalid_and_not_echoed)
{
    const char *lines[] = {
        "{\"id\":[1],\"cmd\":\"status\"}",
        "{\"id\":{},\"cmd\":\"status\"}",
        "{\"id\":true,\"cmd\":\"status\"}",
        "{\"id\":null,\"cmd\":\"status\"}",
        "{\"id\":1e999,\"cmd\":\"status\"}",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        cd_request req;
        cd_error err;
        cr_assert_eq(parse_with(lines[i], NULL, &req, &err), CD_E_INVALID_ARGUMENT, "%s",
                     lines[i]);
        cr_assert_str_eq(err.message, "id: must be a number or a string");
        cr_assert_null(req.id);
        cd_request_free(&req);
    }
}

Test(protocol_request, unknown_members_are_ignored)
{
    cd_request req;
    parse_ok("{\"cmd\":\"status\",\"verbose\":true,\"extra\":{\"a\":[1,2]}}", &req);
    cr_assert_eq(req.cmd, CD_CMD_STATUS);
    cd_request_free(&req);
}

Test(protocol_request, parse_accepts_null_err_and_null_limits)
{
    cd_request req;
    const char *line = "{\"cmd\":\"bogus\"}";
    cr_assert_eq(cd_request_parse(line, strlen(line), NULL, &req, NULL), CD_E_UNKNOWN_COMMAND);
    cd_request_free(&req);
    cr_assert_eq(cd_request_parse(NULL, 0, NULL, &req, NULL), CD_E_PARSE_ERROR);
    cd_request_free(&req);
}

Test(protocol_request, free_accepts_null_and_repeated_calls)
{
    cd_request_free(NULL);
    cd_request req;
    parse_ok("{\"id\":\"x\",\"cmd\":\"pin\",\"instance\":1,\"particles\":[1,2]}", &req);
    cd_request_free(&req);
    cr_assert_null(req.id);
    cd_request_free(&req); /* everything was reset: a second call is harmless */
}

Test(protocol_request, default_limits_match_the_contract)
{
    cd_limits lim = cd_default_limits();
    cr_assert_eq(lim.max_particles, 262144u);
    cr_assert_eq(lim.max_list, 1000000u);
}

Test(protocol_request, command_names_are_the_wire_names)
{
    /* The rows in enum order; rows added later (auth) follow them. */
    static const char *const names[] = {
        "create", "destroy", "pin", "unpin", "wind", "gravity", "addCollider", "moveCollider",
        "removeCollider", "enable", "step", "get", "subscribe", "unsubscribe", "status", "debug",
        "set", "transform", "attach", "topology", "ping", "auth", "stats", "skin", "teleport",
        "save", "load", "record", "replay", "journals", "hello", "scene", "scenes"};
    const int known = (int)(sizeof names / sizeof names[0]);
    cr_assert_geq(CD_CMD_COUNT, known);
    for (int i = 0; i < known; i++)
        cr_assert_str_eq(cd_command_name((cd_command)i), names[i]);
    cr_assert_str_eq(cd_command_name(CD_CMD_COUNT), "unknown");
}

Test(protocol_request, ping_should_parse_with_nothing_but_the_envelope)
{
    cd_request req;
    parse_ok("{\"id\":\"p\",\"cmd\":\"ping\",\"instance\":5}", &req);
    cr_assert_eq(req.cmd, CD_CMD_PING);
    cr_assert_not(req.has_instance); /* ignored, as for status */
    cr_assert_str_eq(req.id->valuestring, "p");
    cd_request_free(&req);
}

Test(protocol_request, stats_should_parse_with_nothing_but_the_envelope)
{
    cd_request req;
    parse_ok("{\"id\":3,\"cmd\":\"stats\",\"instance\":5,\"extra\":[1]}", &req);
    cr_assert_eq(req.cmd, CD_CMD_STATS);
    cr_assert_not(req.has_instance);
    /* Read by nobody: both are reported (warnings), neither refused. */
    cr_assert_eq(req.unknown_count, 2u);
    cr_assert_str_eq(req.unknown[0].path, "instance");
    cr_assert_str_eq(req.unknown[1].path, "extra");
    cr_assert_str_eq(cd_command_name(CD_CMD_STATS), "stats");
    cd_request_free(&req);
}

Test(protocol_request, read_only_commands_are_exactly_the_listed_ones)
{
    static const char *const read_only[] = {"ping",      "status",      "get",  "topology",
                                            "subscribe", "unsubscribe", "auth", "stats",
                                            "journals",  "hello",       "scenes"};
    for (int i = 0; i < CD_CMD_COUNT; i++) {
        bool listed = false;
        for (size_t k = 0; k < sizeof read_only / sizeof read_only[0]; k++)
            listed |= strcmp(read_only[k], cd_command_name((cd_command)i)) == 0;
        cr_assert_eq(cd_command_is_read_only((cd_command)i), listed, "%s",
                     cd_command_name((cd_command)i));
        cr_assert_eq(cd_command_access((cd_command)i), listed ? CD_ACCESS_READ : CD_ACCESS_WRITE);
    }
    cr_assert(cd_command_is_read_only(CD_CMD_PING));
    cr_assert_not(cd_command_is_read_only(CD_CMD_CREATE));
    cr_assert_not(cd_command_is_read_only(CD_CMD_COUNT));
}

Test(protocol_request, each_command_row_says_what_it_touches)
{
    cr_assert_eq(cd_command_touches(CD_CMD_CREATE), CD_TOUCHES_NONE);
    cr_assert_eq(cd_command_touches(CD_CMD_UNSUBSCRIBE), CD_TOUCHES_NONE);
    cr_assert_eq(cd_command_touches(CD_CMD_DEBUG), CD_TOUCHES_NONE);
    cr_assert_eq(cd_command_touches(CD_CMD_PING), CD_TOUCHES_NONE);
    cr_assert_eq(cd_command_touches(CD_CMD_STATS), CD_TOUCHES_NONE); /* answered mid-step */
    cr_assert_eq(cd_command_touches(CD_CMD_WIND), CD_TOUCHES_OPTIONAL);
    cr_assert_eq(cd_command_touches(CD_CMD_STATUS), CD_TOUCHES_ALL);
    cr_assert_eq(cd_command_touches(CD_CMD_STEP), CD_TOUCHES_LISTED);
    cr_assert_eq(cd_command_touches(CD_CMD_SUBSCRIBE), CD_TOUCHES_LISTED);
    /* one, a list, or a scene's */
    cr_assert_eq(cd_command_touches(CD_CMD_DESTROY), CD_TOUCHES_LISTED);
    /* the server's table of scenes, no instance's state */
    cr_assert_eq(cd_command_touches(CD_CMD_SCENE), CD_TOUCHES_NONE);
    cr_assert_eq(cd_command_touches(CD_CMD_SCENES), CD_TOUCHES_NONE);
    static const cd_command one[] = {CD_CMD_PIN, CD_CMD_UNPIN, CD_CMD_GRAVITY,
                                     CD_CMD_ADD_COLLIDER, CD_CMD_MOVE_COLLIDER,
                                     CD_CMD_REMOVE_COLLIDER, CD_CMD_ENABLE, CD_CMD_GET,
                                     CD_CMD_SET, CD_CMD_TRANSFORM, CD_CMD_ATTACH,
                                     CD_CMD_TOPOLOGY};
    for (size_t k = 0; k < sizeof one / sizeof one[0]; k++)
        cr_assert_eq(cd_command_touches(one[k]), CD_TOUCHES_ONE, "%s", cd_command_name(one[k]));
}

Test(protocol_request, the_id_list_of_step_subscribe_and_unsubscribe_is_one_member)
{
    static const char *const lines[] = {
        "{\"cmd\":\"step\",\"instances\":[3,4]}",
        "{\"cmd\":\"subscribe\",\"instances\":[3,4]}",
        "{\"cmd\":\"unsubscribe\",\"instances\":[3,4]}",
    };
    for (size_t k = 0; k < 3; k++) {
        cd_request req;
        parse_ok(lines[k], &req);
        const cd_id_list *list = cd_request_instances(&req);
        cr_assert_not_null(list, "%s", lines[k]);
        cr_assert_eq(list->count, 2u);
        cr_assert_eq(list->ids[1], 4u);
        cd_request_free(&req);
    }
    cd_request req;
    parse_ok("{\"cmd\":\"get\",\"instance\":1}", &req);
    cr_assert_null(cd_request_instances(&req));
    cd_request_free(&req);
    cr_assert_null(cd_request_instances(NULL));
}

Test(protocol_request, fail_formats_and_returns_the_code)
{
    cd_error err;
    cr_assert_eq(cd_fail(&err, CD_E_NOT_FOUND, "instance: no instance %d", 7), CD_E_NOT_FOUND);
    cr_assert_eq(err.code, CD_E_NOT_FOUND);
    cr_assert_str_eq(err.message, "instance: no instance 7");
    cr_assert_eq(cd_fail(NULL, CD_E_INTERNAL, "x"), CD_E_INTERNAL);
    cd_fail(&err, CD_E_INTERNAL, "two\nlines\r");
    cr_assert_str_eq(err.message, "two lines ");
}

/* ---- create ------------------------------------------------------------- */

Test(protocol_request, create_without_fields_uses_the_seed_defaults)
{
    cd_request req;
    parse_ok("{\"cmd\":\"create\"}", &req);
    cr_assert_eq(req.cmd, CD_CMD_CREATE);
    const cd_cloth_def *d = &req.as.create.def;
    cr_assert_eq(d->width, 10);
    cr_assert_eq(d->height, 10);
    cr_assert_eq(d->spacing, 0.1f);
    cr_assert_eq(d->mass, 1.0f);
    cr_assert_eq(d->stiffness, 0.9f);
    cr_assert_eq(d->bend_stiffness, 0.5f);
    cr_assert_eq(d->damping, 0.01f);
    cr_assert_eq(d->substeps, 0); /* automatic (issue 10's small steps) */
    cr_assert_eq(d->solver_iterations, 1);
    assert_vec3(d->origin, 0, 0, 0);
    assert_vec3(d->right, 1, 0, 0);
    assert_vec3(d->down, 0, -1, 0);
    assert_vec3(d->gravity, 0, -9.81f, 0);
    /* The XPBD seed's options: unset compliance (the seed's stiffness
     * applies), aerodynamic wind, tethers on. */
    cr_assert_eq(d->stretch_compliance, CD_UNSET);
    cr_assert_eq(d->bend_compliance, CD_UNSET);
    cr_assert_float_eq(d->velocity_retention, 0.5471566f, 1e-7); /* per second */
    cr_assert_eq(d->wind_model, CD_WIND_AERO);
    cr_assert(d->tethers);
    cr_assert_eq(d->particle_mass, CD_UNSET); /* each particle's own mass */
    cd_request_free(&req);
}

Test(protocol_request, create_with_every_field_reads_each_value)
{
    cd_request req;
    parse_ok("{\"cmd\":\"create\",\"type\":\"cloth\",\"width\":20,\"height\":3,\"spacing\":0.05,"
             "\"mass\":2.5,\"stiffness\":1,\"bendStiffness\":0,\"damping\":0.25,"
             "\"origin\":[1,2,-3],\"solverIterations\":256,\"right\":[0,0,2],"
             "\"down\":[0,-3,4],\"gravity\":[0,0,-1.62]}",
             &req);
    const cd_cloth_def *d = &req.as.create.def;
    cr_assert_eq(d->width, 20);
    cr_assert_eq(d->height, 3);
    cr_assert_eq(d->spacing, 0.05f);
    cr_assert_eq(d->mass, 2.5f);
    cr_assert_eq(d->stiffness, 1.0f);
    cr_assert_eq(d->bend_stiffness, 0.0f);
    cr_assert_eq(d->damping, 0.25f);
    cr_assert_eq(d->solver_iterations, 256);
    assert_vec3(d->origin, 1, 2, -3);
    assert_vec3(d->right, 0, 0, 1);           /* normalised */
    assert_vec3_near(d->down, 0, -0.6f, 0.8f); /* normalised */
    assert_vec3(d->gravity, 0, 0, -1.62f);
    cd_request_free(&req);
}

Test(protocol_request, create_ignores_an_instance_member)
{
    cd_request req;
    parse_ok("{\"cmd\":\"create\",\"instance\":\"whatever\"}", &req);
    cr_assert_eq(req.cmd, CD_CMD_CREATE);
    cd_request_free(&req);
}

Test(protocol_request, create_rejects_unknown_type)
{
    expect_error("{\"cmd\":\"create\",\"type\":\"rope\"}", CD_E_INVALID_ARGUMENT,
                 "type: unknown instance type \"rope\" (one of \"cloth\" or \"softbody\")");
    expect_error("{\"cmd\":\"create\",\"type\":1}", CD_E_INVALID_ARGUMENT,
                 "type: must be a string, one of \"cloth\" or \"softbody\"");
}

Test(protocol_request, create_width_1_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"width\":1}", CD_E_INVALID_ARGUMENT,
                 "width: must be an integer >= 2");
}

Test(protocol_request, create_width_2_is_the_smallest_valid)
{
    cd_request req;
    parse_ok("{\"cmd\":\"create\",\"width\":2,\"height\":2}", &req);
    cr_assert_eq(req.as.create.def.width, 2);
    cr_assert_eq(req.as.create.def.height, 2);
    cd_request_free(&req);
}

Test(protocol_request, create_width_2_5_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"width\":2.5}", CD_E_INVALID_ARGUMENT,
                 "width: must be an integer >= 2");
}

Test(protocol_request, create_width_as_string_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"width\":\"10\"}", CD_E_INVALID_ARGUMENT,
                 "width: must be an integer >= 2");
}

Test(protocol_request, create_height_is_checked_like_width)
{
    expect_error("{\"cmd\":\"create\",\"height\":-4}", CD_E_INVALID_ARGUMENT,
                 "height: must be an integer >= 2");
    expect_error("{\"cmd\":\"create\",\"height\":3e9}", CD_E_INVALID_ARGUMENT,
                 "height: must be an integer >= 2");
}

Test(protocol_request, create_spacing_0_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"spacing\":0}", CD_E_INVALID_ARGUMENT,
                 "spacing: must be a number in (0, 10000]");
}

Test(protocol_request, create_spacing_negative_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"spacing\":-1}", CD_E_INVALID_ARGUMENT,
                 "spacing: must be a number in (0, 10000]");
}

Test(protocol_request, create_spacing_that_rounds_to_float_zero_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"spacing\":1e-50}", CD_E_INVALID_ARGUMENT,
                 "spacing: must be a number in (0, 10000]");
}

Test(protocol_request, create_mass_must_be_positive)
{
    expect_error("{\"cmd\":\"create\",\"mass\":0}", CD_E_INVALID_ARGUMENT,
                 "mass: must be a number in (0, 1000000000]");
}

Test(protocol_request, create_stiffness_1_5_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"stiffness\":1.5}", CD_E_INVALID_ARGUMENT,
                 "stiffness: must be a number in [0, 1]");
    expect_error("{\"cmd\":\"create\",\"bendStiffness\":-0.1}", CD_E_INVALID_ARGUMENT,
                 "bendStiffness: must be a number in [0, 1]");
    expect_error("{\"cmd\":\"create\",\"damping\":2}", CD_E_INVALID_ARGUMENT,
                 "damping: must be a number in [0, 1]");
}

Test(protocol_request, create_infinite_number_is_invalid)
{
    /* 1e999 is valid JSON that parses to infinity. */
    expect_error("{\"cmd\":\"create\",\"stiffness\":1e999}", CD_E_INVALID_ARGUMENT,
                 "stiffness: must be finite");
    expect_error("{\"cmd\":\"create\",\"spacing\":-1e999}", CD_E_INVALID_ARGUMENT,
                 "spacing: must be finite");
    expect_error("{\"cmd\":\"create\",\"origin\":[0,1e999,0]}", CD_E_INVALID_ARGUMENT,
                 "origin: must be an array of 3 finite numbers");
}

Test(protocol_request, create_number_beyond_float_range_is_invalid)
{
    expect_error_prefix("{\"cmd\":\"create\",\"mass\":1e39}", CD_E_INVALID_ARGUMENT,
                        "mass: must be finite as a 32-bit float");
    expect_error("{\"cmd\":\"create\",\"gravity\":[0,-1e39,0]}", CD_E_INVALID_ARGUMENT,
                 "gravity: must be an array of 3 finite numbers");
}

Test(protocol_request, create_origin_with_2_entries_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"origin\":[0,1]}", CD_E_INVALID_ARGUMENT,
                 "origin: must be an array of 3 finite numbers");
    expect_error("{\"cmd\":\"create\",\"origin\":[0,1,2,3]}", CD_E_INVALID_ARGUMENT,
                 "origin: must be an array of 3 finite numbers");
}

Test(protocol_request, create_origin_with_a_string_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"origin\":[0,\"1\",2]}", CD_E_INVALID_ARGUMENT,
                 "origin: must be an array of 3 finite numbers");
    expect_error("{\"cmd\":\"create\",\"origin\":\"0,0,0\"}", CD_E_INVALID_ARGUMENT,
                 "origin: must be an array of 3 finite numbers");
}

Test(protocol_request, create_solver_iterations_range_is_1_to_256)
{
    expect_error("{\"cmd\":\"create\",\"solverIterations\":0}", CD_E_INVALID_ARGUMENT,
                 "solverIterations: must be an integer in [1, 256]");
    expect_error("{\"cmd\":\"create\",\"solverIterations\":257}", CD_E_INVALID_ARGUMENT,
                 "solverIterations: must be an integer in [1, 256]");
}

Test(protocol_request, create_zero_axis_is_invalid)
{
    expect_error("{\"cmd\":\"create\",\"right\":[0,0,0]}", CD_E_INVALID_ARGUMENT,
                 "right: must not be zero-length");
    expect_error("{\"cmd\":\"create\",\"down\":[0,-0,0]}", CD_E_INVALID_ARGUMENT,
                 "down: must not be zero-length");
}

Test(protocol_request, create_parallel_axes_are_invalid)
{
    /* Parallel (or opposite) axes would put particles on top of each other. */
    expect_error("{\"cmd\":\"create\",\"right\":[1,0,0],\"down\":[3,0,0]}",
                 CD_E_INVALID_ARGUMENT, "down: must not be parallel to right");
    expect_error("{\"cmd\":\"create\",\"right\":[0,1,0],\"down\":[0,-1,0]}",
                 CD_E_INVALID_ARGUMENT, "down: must not be parallel to right");
}

Test(protocol_request, create_tiny_axis_is_normalised_not_rejected)
{
    cd_request req;
    parse_ok("{\"cmd\":\"create\",\"right\":[1e-40,0,0],\"down\":[0,-3e38,0]}", &req);
    assert_vec3(req.as.create.def.right, 1, 0, 0);
    assert_vec3(req.as.create.def.down, 0, -1, 0);
    cd_request_free(&req);
}

Test(protocol_request, create_reports_the_first_bad_field_in_contract_order)
{
    expect_error("{\"cmd\":\"create\",\"gravity\":1,\"width\":0}", CD_E_INVALID_ARGUMENT,
                 "width: must be an integer >= 2");
}

Test(protocol_request, create_too_many_particles_is_limit_exceeded)
{
    cd_limits lim = {.max_particles = 10000, .max_list = 100};
    expect_failure("{\"cmd\":\"create\",\"width\":200,\"height\":200}", &lim,
                   CD_E_LIMIT_EXCEEDED, "width, height: 40000 particles exceed the limit of 10000",
                   true);
    /* Exactly at the limit is fine. */
    cd_request req;
    cd_error err;
    cr_assert_eq(parse_with("{\"cmd\":\"create\",\"width\":100,\"height\":100}", &lim, &req, &err),
                 CD_OK);
    cd_request_free(&req);
}

Test(protocol_request, create_huge_grid_does_not_overflow_the_count)
{
    cd_limits lim = {.max_particles = UINT32_MAX, .max_list = 100};
    expect_failure("{\"cmd\":\"create\",\"width\":2147483647,\"height\":2147483647}", &lim,
                   CD_E_LIMIT_EXCEEDED, "width, height: 4611686014132420609 particles exceed",
                   false);
}

/* ---- destroy, get, status ---------------------------------------------- */

Test(protocol_request, destroy_reads_the_instance)
{
    cd_request req;
    parse_ok("{\"cmd\":\"destroy\",\"instance\":65537}", &req);
    cr_assert_eq(req.cmd, CD_CMD_DESTROY);
    cr_assert(req.has_instance);
    cr_assert_eq(req.instance, 65537u);
    cd_request_free(&req);
}

Test(protocol_request, instance_is_required_where_the_contract_says_so)
{
    const char *cmds[] = {"pin", "unpin", "gravity", "addCollider", "moveCollider",
                          "removeCollider", "enable", "get"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char line[96];
        snprintf(line, sizeof line, "{\"cmd\":\"%s\"}", cmds[i]);
        expect_error(line, CD_E_INVALID_ARGUMENT, "instance: required");
        /* a scene alone names no instance of these */
        snprintf(line, sizeof line, "{\"cmd\":\"%s\",\"scene\":\"a\"}", cmds[i]);
        expect_error(line, CD_E_INVALID_ARGUMENT, "instance: required");
    }
}

/* ---- scenes (PROTOCOL.md "Scenes") ---------------------------------------- */

Test(protocol_request, scene_names_are_1_to_64_of_the_allowed_bytes)
{
    cr_assert(cd_scene_name_ok("default"));
    cr_assert(cd_scene_name_ok("npc-capes"));
    cr_assert(cd_scene_name_ok("match:42.blue_team"));
    cr_assert(cd_scene_name_ok(".starts-with-a-dot")); /* not a file name: allowed */
    char longest[CD_SCENE_NAME_MAX + 2];
    memset(longest, 'x', CD_SCENE_NAME_MAX);
    longest[CD_SCENE_NAME_MAX] = '\0';
    cr_assert(cd_scene_name_ok(longest));
    longest[CD_SCENE_NAME_MAX] = 'x';
    longest[CD_SCENE_NAME_MAX + 1] = '\0';
    cr_assert_not(cd_scene_name_ok(longest));
    static const char *const bad[] = {"", "a b", "a/b", "caf\xc3\xa9", "a\"b", "a,b", "*"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        cr_assert_not(cd_scene_name_ok(bad[k]), "%s", bad[k]);
}

Test(protocol_request, scene_is_read_by_the_envelope_of_every_command)
{
    static const char *const lines[] = {
        "{\"cmd\":\"create\",\"scene\":\"a:1\"}",
        "{\"cmd\":\"get\",\"instance\":3,\"scene\":\"a:1\"}",
        "{\"cmd\":\"step\",\"scene\":\"a:1\"}",
        "{\"cmd\":\"status\",\"scene\":\"a:1\"}",
        "{\"cmd\":\"ping\",\"scene\":\"a:1\"}", /* ignored there: a router's key */
        "{\"cmd\":\"destroy\",\"scene\":\"a:1\"}",
        "{\"cmd\":\"scene\",\"scene\":\"a:1\"}",
        "{\"cmd\":\"scenes\",\"scene\":\"a:1\"}",
    };
    for (size_t k = 0; k < sizeof lines / sizeof lines[0]; k++) {
        cd_request req;
        parse_ok(lines[k], &req);
        cr_assert(req.has_scene, "%s", lines[k]);
        cr_assert_str_eq(req.scene, "a:1");
        cd_request_free(&req);
    }
    cd_request req;
    parse_ok("{\"cmd\":\"step\"}", &req);
    cr_assert_not(req.has_scene);
    cr_assert(req.as.step.instances.all); /* v1: every instance */
    cd_request_free(&req);
}

Test(protocol_request, a_bad_scene_is_invalid_argument_naming_scene)
{
    const char *msg = "scene: must be 1 to 64 of A-Z a-z 0-9 . _ : -";
    expect_error("{\"cmd\":\"create\",\"scene\":\"\"}", CD_E_INVALID_ARGUMENT, msg);
    expect_error("{\"cmd\":\"step\",\"scene\":\"two words\"}", CD_E_INVALID_ARGUMENT, msg);
    expect_error("{\"cmd\":\"get\",\"instance\":1,\"scene\":7}", CD_E_INVALID_ARGUMENT, msg);
    expect_error("{\"cmd\":\"status\",\"scene\":null}", CD_E_INVALID_ARGUMENT, msg);
    expect_error("{\"cmd\":\"ping\",\"scene\":\"a/b\"}", CD_E_INVALID_ARGUMENT, msg);
    expect_error("{\"cmd\":\"step\",\"scene\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
                 CD_E_INVALID_ARGUMENT, msg); /* 65 bytes */
}

Test(protocol_request, create_reads_ephemeral_as_a_boolean)
{
    cd_request req;
    parse_ok("{\"cmd\":\"create\",\"ephemeral\":true,\"scene\":\"s\"}", &req);
    cr_assert(req.as.create.ephemeral);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"create\",\"type\":\"softbody\",\"shape\":\"box\",\"ephemeral\":true}", &req);
    cr_assert(req.as.create.ephemeral);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"create\"}", &req);
    cr_assert_not(req.as.create.ephemeral);
    cr_assert_not(req.has_scene);
    cd_request_free(&req);
    expect_error("{\"cmd\":\"create\",\"ephemeral\":1}", CD_E_INVALID_ARGUMENT,
                 "ephemeral: must be true or false");
}

Test(protocol_request, destroy_takes_an_instance_a_list_or_a_scene_never_nothing)
{
    expect_error("{\"cmd\":\"destroy\"}", CD_E_INVALID_ARGUMENT,
                 "instance: required (or \"instances\", or \"scene\" for all of a scene)");
    cd_request req;
    parse_ok("{\"cmd\":\"destroy\",\"instance\":5}", &req);
    cr_assert(req.has_instance);
    cr_assert_eq(req.as.destroy.instances.count, 1u);
    cr_assert_eq(req.as.destroy.instances.ids[0], 5u);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"destroy\",\"instances\":[5,6]}", &req);
    cr_assert_eq(cd_request_instances(&req)->count, 2u);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"destroy\",\"scene\":\"npc\"}", &req);
    cr_assert(cd_request_instances(&req)->all);
    cr_assert_str_eq(req.scene, "npc");
    cd_request_free(&req);
}

Test(protocol_request, scene_requires_its_name_and_reads_ephemeral)
{
    expect_error("{\"cmd\":\"scene\"}", CD_E_INVALID_ARGUMENT, "scene: required");
    expect_error("{\"cmd\":\"scene\",\"scene\":\"a\",\"ephemeral\":\"yes\"}",
                 CD_E_INVALID_ARGUMENT, "ephemeral: must be true or false");
    cd_request req;
    parse_ok("{\"cmd\":\"scene\",\"scene\":\"a\"}", &req);
    cr_assert_not(req.as.scene.has_ephemeral); /* a query */
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"scene\",\"scene\":\"a\",\"ephemeral\":false}", &req);
    cr_assert(req.as.scene.has_ephemeral);
    cr_assert_not(req.as.scene.ephemeral);
    cd_request_free(&req);
}

Test(protocol_request, the_global_wind_belongs_to_no_scene)
{
    expect_error("{\"cmd\":\"wind\",\"wind\":[1,0,0],\"scene\":\"a\"}", CD_E_INVALID_ARGUMENT,
                 "scene: goes with \"instance\" (the global wind belongs to no scene)");
    cd_request req;
    parse_ok("{\"cmd\":\"wind\",\"wind\":[1,0,0],\"scene\":\"a\",\"instance\":2}", &req);
    cr_assert(req.has_scene);
    cd_request_free(&req);
}

Test(protocol_request, instance_must_be_a_u32_integer)
{
    const char *msg = "instance: must be an integer in [0, 4294967295]";
    expect_error("{\"cmd\":\"get\",\"instance\":-1}", CD_E_INVALID_ARGUMENT, msg);
    expect_error("{\"cmd\":\"get\",\"instance\":4294967296}", CD_E_INVALID_ARGUMENT, msg);
    expect_error("{\"cmd\":\"get\",\"instance\":1.5}", CD_E_INVALID_ARGUMENT, msg);
    expect_error("{\"cmd\":\"get\",\"instance\":\"1\"}", CD_E_INVALID_ARGUMENT, msg);
    cd_request req;
    parse_ok("{\"cmd\":\"get\",\"instance\":4294967295}", &req);
    cr_assert_eq(req.instance, 4294967295u);
    cd_request_free(&req);
}

Test(protocol_request, get_and_status_parse)
{
    cd_request req;
    parse_ok("{\"cmd\":\"get\",\"instance\":3}", &req);
    cr_assert_eq(req.cmd, CD_CMD_GET);
    cr_assert_eq(req.instance, 3u);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"status\",\"id\":1}", &req);
    cr_assert_eq(req.cmd, CD_CMD_STATUS);
    cr_assert_eq(req.id->valuedouble, 1.0);
    cd_request_free(&req);
}

/* ---- pin, unpin ---------------------------------------------------------- */

Test(protocol_request, pin_one_particle_at_a_position)
{
    cd_request req;
    parse_ok("{\"cmd\":\"pin\",\"instance\":1,\"particle\":9,\"position\":[0.9,2,0]}", &req);
    cr_assert_eq(req.cmd, CD_CMD_PIN);
    cr_assert_eq(req.as.pin.count, 1u);
    cr_assert_eq(req.as.pin.particles[0], 9u);
    cr_assert_not_null(req.as.pin.positions);
    assert_vec3(req.as.pin.positions[0], 0.9f, 2, 0);
    cd_request_free(&req);
}

Test(protocol_request, pin_without_position_pins_in_place)
{
    cd_request req;
    parse_ok("{\"cmd\":\"pin\",\"instance\":1,\"particle\":0}", &req);
    cr_assert_eq(req.as.pin.count, 1u);
    cr_assert_eq(req.as.pin.particles[0], 0u);
    cr_assert_null(req.as.pin.positions);
    cd_request_free(&req);
}

Test(protocol_request, pin_a_list_with_positions)
{
    cd_request req;
    parse_ok("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[0,9],"
             "\"positions\":[[0,2,0],[-0.9,2,0.5]]}",
             &req);
    cr_assert_eq(req.as.pin.count, 2u);
    cr_assert_eq(req.as.pin.particles[0], 0u);
    cr_assert_eq(req.as.pin.particles[1], 9u);
    assert_vec3(req.as.pin.positions[0], 0, 2, 0);
    assert_vec3(req.as.pin.positions[1], -0.9f, 2, 0.5f);
    cd_request_free(&req);
}

Test(protocol_request, pin_a_list_in_place)
{
    cd_request req;
    parse_ok("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[4,5,6]}", &req);
    cr_assert_eq(req.as.pin.count, 3u);
    cr_assert_eq(req.as.pin.particles[2], 6u);
    cr_assert_null(req.as.pin.positions);
    cd_request_free(&req);
}

Test(protocol_request, pin_an_empty_list_pins_nothing)
{
    cd_request req;
    parse_ok("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[],\"positions\":[]}", &req);
    cr_assert_eq(req.as.pin.count, 0u);
    cr_assert_null(req.as.pin.positions);
    cd_request_free(&req);
}

Test(protocol_request, pin_with_particle_and_particles_is_invalid)
{
    expect_error("{\"cmd\":\"pin\",\"instance\":1,\"particle\":1,\"particles\":[1]}",
                 CD_E_INVALID_ARGUMENT,
                 "particle: give either \"particle\" or \"particles\", not both");
}

Test(protocol_request, pin_without_particles_is_invalid)
{
    expect_error("{\"cmd\":\"pin\",\"instance\":1}", CD_E_INVALID_ARGUMENT,
                 "particle: required (or \"particles\")");
}

Test(protocol_request, pin_positions_length_mismatch_is_invalid)
{
    expect_error("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[1,2,3],\"positions\":[[0,0,0],"
                 "[1,1,1]]}",
                 CD_E_INVALID_ARGUMENT,
                 "positions: has 2 entries for 3 particles (must be one per particle)");
}

Test(protocol_request, pin_negative_particle_in_list_is_invalid)
{
    expect_error("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[0,1,2,-1]}",
                 CD_E_INVALID_ARGUMENT, "particles[3]: must be a non-negative integer");
    expect_error("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[0.5]}", CD_E_INVALID_ARGUMENT,
                 "particles[0]: must be a non-negative integer");
    expect_error("{\"cmd\":\"pin\",\"instance\":1,\"particle\":-3}", CD_E_INVALID_ARGUMENT,
                 "particle: must be a non-negative integer");
    expect_error("{\"cmd\":\"pin\",\"instance\":1,\"particles\":7}", CD_E_INVALID_ARGUMENT,
                 "particles: must be an array");
}

Test(protocol_request, pin_bad_position_in_list_names_the_entry)
{
    expect_error("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[0,1],\"positions\":[[0,0,0],"
                 "[1,1]]}",
                 CD_E_INVALID_ARGUMENT, "positions[1]: must be an array of 3 finite numbers");
}

Test(protocol_request, pin_position_kinds_must_match_particle_kinds)
{
    expect_error_prefix("{\"cmd\":\"pin\",\"instance\":1,\"particle\":1,\"positions\":[[0,0,0]]}",
                        CD_E_INVALID_ARGUMENT, "positions: ");
    expect_error_prefix("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[1],\"position\":[0,0,0]}",
                        CD_E_INVALID_ARGUMENT, "position: ");
}

Test(protocol_request, pin_list_over_max_list_is_limit_exceeded)
{
    cd_limits lim = {.max_particles = 1000, .max_list = 3};
    expect_failure("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[0,1,2,3]}", &lim,
                   CD_E_LIMIT_EXCEEDED, "particles: 4 entries exceed the limit of 3", true);
}

Test(protocol_request, unpin_one_and_many)
{
    cd_request req;
    parse_ok("{\"cmd\":\"unpin\",\"instance\":2,\"particle\":5}", &req);
    cr_assert_eq(req.cmd, CD_CMD_UNPIN);
    cr_assert_eq(req.instance, 2u);
    cr_assert_eq(req.as.pin.count, 1u);
    cr_assert_eq(req.as.pin.particles[0], 5u);
    cr_assert_null(req.as.pin.positions);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"unpin\",\"instance\":2,\"particles\":[5,6]}", &req);
    cr_assert_eq(req.as.pin.count, 2u);
    cr_assert_eq(req.as.pin.particles[1], 6u);
    cd_request_free(&req);
    expect_error("{\"cmd\":\"unpin\",\"instance\":2}", CD_E_INVALID_ARGUMENT,
                 "particle: required (or \"particles\")");
}

/* ---- wind, gravity ------------------------------------------------------- */

Test(protocol_request, wind_on_an_instance)
{
    cd_request req;
    parse_ok("{\"cmd\":\"wind\",\"instance\":1,\"wind\":[1,0,0.5]}", &req);
    cr_assert_eq(req.cmd, CD_CMD_WIND);
    cr_assert(req.has_instance);
    cr_assert_eq(req.instance, 1u);
    assert_vec3(req.as.wind.wind, 1, 0, 0.5f);
    cd_request_free(&req);
}

Test(protocol_request, wind_without_instance_is_global)
{
    cd_request req;
    parse_ok("{\"cmd\":\"wind\",\"wind\":[-2,0,0]}", &req);
    cr_assert_not(req.has_instance);
    assert_vec3(req.as.wind.wind, -2, 0, 0);
    cd_request_free(&req);
}

Test(protocol_request, wind_requires_the_wind_vector)
{
    expect_error("{\"cmd\":\"wind\",\"instance\":1}", CD_E_INVALID_ARGUMENT, "wind: required");
    expect_error("{\"cmd\":\"wind\",\"wind\":[1,2]}", CD_E_INVALID_ARGUMENT,
                 "wind: must be an array of 3 finite numbers");
}

Test(protocol_request, gravity_reads_the_vector)
{
    cd_request req;
    parse_ok("{\"cmd\":\"gravity\",\"instance\":4,\"gravity\":[0,-1.62,0]}", &req);
    cr_assert_eq(req.cmd, CD_CMD_GRAVITY);
    cr_assert_eq(req.instance, 4u);
    assert_vec3(req.as.gravity.gravity, 0, -1.62f, 0);
    cd_request_free(&req);
    expect_error("{\"cmd\":\"gravity\",\"instance\":4}", CD_E_INVALID_ARGUMENT,
                 "gravity: required");
}

/* ---- colliders ----------------------------------------------------------- */

Test(protocol_request, add_sphere_collider_uses_the_seed_defaults)
{
    cd_request req;
    parse_ok("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"sphere\"}", &req);
    cr_assert_eq(req.cmd, CD_CMD_ADD_COLLIDER);
    const cd_collider_def *c = &req.as.add_collider.def;
    cr_assert_eq(c->type, CD_COLLIDER_SPHERE);
    assert_vec3(c->position, 0, 0, 0);
    assert_vec3(c->normal, 0, 1, 0);
    cr_assert_eq(c->radius, 0.5f);
    cr_assert_eq(c->height, 1.0f);
    cd_request_free(&req);
}

Test(protocol_request, add_capsule_collider_reads_every_field)
{
    cd_request req;
    parse_ok("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"capsule\",\"position\":[0.5,1,0],"
             "\"normal\":[0,5,0],\"radius\":0.1,\"height\":0.6}",
             &req);
    const cd_collider_def *c = &req.as.add_collider.def;
    cr_assert_eq(c->type, CD_COLLIDER_CAPSULE);
    assert_vec3(c->position, 0.5f, 1, 0);
    assert_vec3(c->normal, 0, 1, 0); /* normalised */
    cr_assert_eq(c->radius, 0.1f);
    cr_assert_eq(c->height, 0.6f);
    cd_request_free(&req);
}

Test(protocol_request, add_plane_collider_normalises_the_normal)
{
    cd_request req;
    parse_ok("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"plane\",\"normal\":[3,4,0]}",
             &req);
    cr_assert_eq(req.as.add_collider.def.type, CD_COLLIDER_PLANE);
    assert_vec3_near(req.as.add_collider.def.normal, 0.6f, 0.8f, 0);
    cd_request_free(&req);
}

Test(protocol_request, add_collider_zero_normal_is_invalid)
{
    expect_error("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"plane\",\"normal\":[0,0,0]}",
                 CD_E_INVALID_ARGUMENT, "normal: must not be zero-length");
}

Test(protocol_request, add_collider_negative_radius_is_invalid)
{
    expect_error("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"sphere\",\"radius\":-0.5}",
                 CD_E_INVALID_ARGUMENT, "radius: must be a number in [0, 100000]");
    expect_error("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"capsule\",\"height\":-1}",
                 CD_E_INVALID_ARGUMENT, "height: must be a number in [0, 100000]");
}

Test(protocol_request, add_collider_type_is_required_and_known)
{
    expect_error("{\"cmd\":\"addCollider\",\"instance\":1}", CD_E_INVALID_ARGUMENT,
                 "type: required");
    expect_error("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"cube\"}",
                 CD_E_INVALID_ARGUMENT,
                 "type: unknown collider type \"cube\" (one of \"sphere\", \"capsule\", \"plane\", "
                 "\"taperedCapsule\" or \"box\")");
    expect_error_prefix("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":2}",
                        CD_E_INVALID_ARGUMENT, "type: must be a string, one of \"sphere\", ");
}

Test(protocol_request, move_collider_with_position_or_normal)
{
    cd_request req;
    parse_ok("{\"cmd\":\"moveCollider\",\"instance\":1,\"collider\":65537,\"position\":[1,2,3]}",
             &req);
    cr_assert_eq(req.cmd, CD_CMD_MOVE_COLLIDER);
    cr_assert_eq(req.as.move_collider.collider, 65537u);
    cr_assert(req.as.move_collider.has_position);
    cr_assert_not(req.as.move_collider.has_normal);
    assert_vec3(req.as.move_collider.position, 1, 2, 3);
    cd_request_free(&req);

    parse_ok("{\"cmd\":\"moveCollider\",\"instance\":1,\"collider\":2,\"normal\":[0,0,-2]}", &req);
    cr_assert_not(req.as.move_collider.has_position);
    cr_assert(req.as.move_collider.has_normal);
    assert_vec3(req.as.move_collider.normal, 0, 0, -1);
    cd_request_free(&req);
}

Test(protocol_request, move_collider_needs_a_collider_and_something_to_move)
{
    expect_error("{\"cmd\":\"moveCollider\",\"instance\":1,\"position\":[1,2,3]}",
                 CD_E_INVALID_ARGUMENT, "collider: required");
    expect_error("{\"cmd\":\"moveCollider\",\"instance\":1,\"collider\":1}", CD_E_INVALID_ARGUMENT,
                 "position: required unless \"normal\" or \"rotation\" is given");
    expect_error("{\"cmd\":\"moveCollider\",\"instance\":1,\"collider\":1,\"normal\":[0,0,0]}",
                 CD_E_INVALID_ARGUMENT, "normal: must not be zero-length");
}

Test(protocol_request, remove_collider_reads_the_collider)
{
    cd_request req;
    parse_ok("{\"cmd\":\"removeCollider\",\"instance\":1,\"collider\":3}", &req);
    cr_assert_eq(req.cmd, CD_CMD_REMOVE_COLLIDER);
    cr_assert_eq(req.as.remove_collider.collider, 3u);
    cd_request_free(&req);
    expect_error("{\"cmd\":\"removeCollider\",\"instance\":1,\"collider\":-3}",
                 CD_E_INVALID_ARGUMENT, "collider: must be an integer in [0, 4294967295]");
}

/* ---- enable -------------------------------------------------------------- */

Test(protocol_request, enable_reads_true_and_false)
{
    cd_request req;
    parse_ok("{\"cmd\":\"enable\",\"instance\":1,\"enabled\":false}", &req);
    cr_assert_eq(req.cmd, CD_CMD_ENABLE);
    cr_assert_not(req.as.enable.enabled);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"enable\",\"instance\":1,\"enabled\":true}", &req);
    cr_assert(req.as.enable.enabled);
    cd_request_free(&req);
}

Test(protocol_request, enable_without_enabled_is_invalid)
{
    expect_error("{\"cmd\":\"enable\",\"instance\":1}", CD_E_INVALID_ARGUMENT, "enabled: required");
    expect_error("{\"cmd\":\"enable\",\"instance\":1,\"enabled\":1}", CD_E_INVALID_ARGUMENT,
                 "enabled: must be true or false");
}

/* ---- step ---------------------------------------------------------------- */

Test(protocol_request, step_defaults_to_one_sixtieth_for_every_instance)
{
    cd_request req;
    parse_ok("{\"cmd\":\"step\"}", &req);
    cr_assert_eq(req.cmd, CD_CMD_STEP);
    cr_assert_eq(req.as.step.dt, 1.0f / 60.0f);
    cr_assert(req.as.step.instances.all);
    cr_assert_eq(req.as.step.instances.count, 0u);
    cr_assert_null(req.as.step.instances.ids);
    cd_request_free(&req);
}

Test(protocol_request, step_reads_dt_and_instances)
{
    cd_request req;
    parse_ok("{\"cmd\":\"step\",\"dt\":0.005,\"instances\":[1,65538]}", &req);
    cr_assert_eq(req.as.step.dt, 0.005f);
    cr_assert_not(req.as.step.instances.all);
    cr_assert_eq(req.as.step.instances.count, 2u);
    cr_assert_eq(req.as.step.instances.ids[0], 1u);
    cr_assert_eq(req.as.step.instances.ids[1], 65538u);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"step\",\"dt\":1}", &req);
    cr_assert_eq(req.as.step.dt, 1.0f);
    cd_request_free(&req);
}

Test(protocol_request, step_with_one_instance_is_a_list_of_one)
{
    cd_request req;
    parse_ok("{\"cmd\":\"step\",\"instance\":7}", &req);
    cr_assert_not(req.as.step.instances.all);
    cr_assert_eq(req.as.step.instances.count, 1u);
    cr_assert_eq(req.as.step.instances.ids[0], 7u);
    cr_assert(req.has_instance);
    cd_request_free(&req);
}

Test(protocol_request, step_dt_0_is_invalid)
{
    expect_error("{\"cmd\":\"step\",\"dt\":0}", CD_E_INVALID_ARGUMENT,
                 "dt: must be a number in (0, 1]");
    expect_error("{\"cmd\":\"step\",\"dt\":-0.01}", CD_E_INVALID_ARGUMENT,
                 "dt: must be a number in (0, 1]");
}

Test(protocol_request, step_dt_2_is_invalid)
{
    expect_error("{\"cmd\":\"step\",\"dt\":2}", CD_E_INVALID_ARGUMENT,
                 "dt: must be a number in (0, 1]");
    expect_error("{\"cmd\":\"step\",\"dt\":\"0.1\"}", CD_E_INVALID_ARGUMENT,
                 "dt: must be a number in (0, 1]");
}

Test(protocol_request, step_instances_list_over_max_list_is_limit_exceeded)
{
    cd_limits lim = {.max_particles = 1000, .max_list = 3};
    expect_failure("{\"cmd\":\"step\",\"instances\":[1,2,3,4]}", &lim, CD_E_LIMIT_EXCEEDED,
                   "instances: 4 entries exceed the limit of 3", true);
}

Test(protocol_request, step_bad_instance_entry_names_the_entry)
{
    expect_error("{\"cmd\":\"step\",\"instances\":[1,\"2\"]}", CD_E_INVALID_ARGUMENT,
                 "instances[1]: must be an integer in [0, 4294967295]");
}

Test(protocol_request, instance_and_instances_together_are_invalid)
{
    expect_error("{\"cmd\":\"subscribe\",\"instance\":1,\"instances\":[1]}",
                 CD_E_INVALID_ARGUMENT,
                 "instance: give either \"instance\" or \"instances\", not both");
}

/* ---- subscribe, unsubscribe ---------------------------------------------- */

Test(protocol_request, subscribe_one_many_or_all)
{
    cd_request req;
    parse_ok("{\"cmd\":\"subscribe\",\"instance\":5}", &req);
    cr_assert_eq(req.cmd, CD_CMD_SUBSCRIBE);
    cr_assert_not(req.as.subscribe.instances.all);
    cr_assert_eq(req.as.subscribe.instances.count, 1u);
    cr_assert_eq(req.as.subscribe.instances.ids[0], 5u);
    cd_request_free(&req);

    parse_ok("{\"cmd\":\"subscribe\",\"instances\":[5,6,7]}", &req);
    cr_assert_eq(req.as.subscribe.instances.count, 3u);
    cr_assert_eq(req.as.subscribe.instances.ids[2], 7u);
    cd_request_free(&req);

    parse_ok("{\"cmd\":\"subscribe\"}", &req);
    cr_assert(req.as.subscribe.instances.all);
    cd_request_free(&req);
}

Test(protocol_request, subscribe_options_default_to_plain_every_frame)
{
    cd_request req;
    parse_ok("{\"cmd\":\"subscribe\",\"instance\":5}", &req);
    cr_assert_not(req.as.subscribe.options.quantize);
    cr_assert_eq(req.as.subscribe.options.every, 1u);
    cd_request_free(&req);
}

Test(protocol_request, subscribe_reads_quantize_and_every)
{
    cd_request req;
    parse_ok("{\"cmd\":\"subscribe\",\"instances\":[5],\"quantize\":true,\"every\":3}", &req);
    cr_assert(req.as.subscribe.options.quantize);
    cr_assert_eq(req.as.subscribe.options.every, 3u);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"subscribe\",\"quantize\":false,\"every\":1000}", &req);
    cr_assert(req.as.subscribe.instances.all);
    cr_assert_not(req.as.subscribe.options.quantize);
    cr_assert_eq(req.as.subscribe.options.every, 1000u);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"subscribe\",\"every\":2.0}", &req);
    cr_assert_eq(req.as.subscribe.options.every, 2u);
    cd_request_free(&req);
}

Test(protocol_request, subscribe_bad_options_are_invalid_and_name_the_field)
{
    expect_error("{\"cmd\":\"subscribe\",\"quantize\":1}", CD_E_INVALID_ARGUMENT,
                 "quantize: must be true or false");
    expect_error("{\"cmd\":\"subscribe\",\"quantize\":\"yes\"}", CD_E_INVALID_ARGUMENT,
                 "quantize: must be true or false");
    expect_error("{\"cmd\":\"subscribe\",\"every\":0}", CD_E_INVALID_ARGUMENT,
                 "every: must be an integer in [1, 1000]");
    expect_error("{\"cmd\":\"subscribe\",\"every\":1001}", CD_E_INVALID_ARGUMENT,
                 "every: must be an integer in [1, 1000]");
    expect_error("{\"cmd\":\"subscribe\",\"every\":2.5}", CD_E_INVALID_ARGUMENT,
                 "every: must be an integer in [1, 1000]");
    expect_error("{\"cmd\":\"subscribe\",\"instance\":1,\"every\":null}",
                 CD_E_INVALID_ARGUMENT, "every: must be an integer in [1, 1000]");
    /* The instances are checked first, as listed in PROTOCOL.md. */
    expect_error("{\"cmd\":\"subscribe\",\"instance\":-1,\"every\":0}", CD_E_INVALID_ARGUMENT,
                 "instance: must be an integer in [0, 4294967295]");
}

Test(protocol_request, subscribe_channels_default_to_positions_and_add_velocities_and_normals)
{
    cd_request req;
    parse_ok("{\"cmd\":\"subscribe\",\"instance\":5}", &req);
    cr_assert_eq(req.as.subscribe.options.channels, 0u, "positions alone by default");
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"subscribe\",\"instance\":5,\"channels\":[\"positions\"]}", &req);
    cr_assert_eq(req.as.subscribe.options.channels, 0u);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"subscribe\",\"channels\":[\"normals\"],\"quantize\":true}", &req);
    cr_assert_eq(req.as.subscribe.options.channels, CD_FRAME_FLAG_NORMALS);
    cr_assert_eq(cd_frame_options_flags(&req.as.subscribe.options),
                 CD_FRAME_FLAG_QUANTIZED | CD_FRAME_FLAG_NORMALS);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"subscribe\",\"channels\":[\"positions\",\"velocities\",\"normals\","
             "\"velocities\"]}",
             &req);
    cr_assert_eq(req.as.subscribe.options.channels,
                 CD_FRAME_FLAG_VELOCITIES | CD_FRAME_FLAG_NORMALS, "a repeat is harmless");
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"subscribe\",\"channels\":[]}", &req);
    cr_assert_eq(req.as.subscribe.options.channels, 0u, "positions are always sent");
    cd_request_free(&req);
}

Test(protocol_request, subscribe_unknown_channel_is_invalid_and_lists_the_valid_ones)
{
    expect_error("{\"cmd\":\"subscribe\",\"channels\":[\"normals\",\"colours\"]}",
                 CD_E_INVALID_ARGUMENT,
                 "channels[1]: unknown channel \"colours\" (one of \"positions\", \"velocities\" or "
                 "\"normals\")");
    expect_error("{\"cmd\":\"subscribe\",\"channels\":\"normals\"}", CD_E_INVALID_ARGUMENT,
                 "channels: must be a list of \"positions\", \"velocities\" or \"normals\"");
    expect_error("{\"cmd\":\"subscribe\",\"channels\":[3]}", CD_E_INVALID_ARGUMENT,
                 "channels[0]: must be a string, one of \"positions\", \"velocities\" or \"normals\"");
}

Test(protocol_request, get_reads_velocities_and_normals_and_defaults_to_neither)
{
    cd_request req;
    parse_ok("{\"cmd\":\"get\",\"instance\":2}", &req);
    cr_assert_not(req.as.get.velocities);
    cr_assert_not(req.as.get.normals);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"get\",\"instance\":2,\"velocities\":true,\"normals\":true}", &req);
    cr_assert(req.as.get.velocities && req.as.get.normals);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"get\",\"instance\":2,\"normals\":true}", &req);
    cr_assert(!req.as.get.velocities && req.as.get.normals);
    cd_request_free(&req);
    expect_error("{\"cmd\":\"get\",\"instance\":2,\"velocities\":1}", CD_E_INVALID_ARGUMENT,
                 "velocities: must be true or false");
    expect_error("{\"cmd\":\"get\",\"instance\":2,\"normals\":\"yes\"}", CD_E_INVALID_ARGUMENT,
                 "normals: must be true or false");
}

Test(protocol_request, unsubscribe_ignores_frame_options)
{
    cd_request req;
    parse_ok("{\"cmd\":\"unsubscribe\",\"instance\":5,\"every\":0,\"quantize\":1}", &req);
    cr_assert_eq(req.cmd, CD_CMD_UNSUBSCRIBE);
    cr_assert_eq(req.as.subscribe.instances.ids[0], 5u);
    cd_request_free(&req);
}

Test(protocol_request, unsubscribe_shares_the_subscribe_shapes)
{
    cd_request req;
    parse_ok("{\"cmd\":\"unsubscribe\",\"instances\":[9]}", &req);
    cr_assert_eq(req.cmd, CD_CMD_UNSUBSCRIBE);
    cr_assert_eq(req.as.subscribe.instances.count, 1u);
    cr_assert_eq(req.as.subscribe.instances.ids[0], 9u);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"unsubscribe\"}", &req);
    cr_assert(req.as.subscribe.instances.all);
    cd_request_free(&req);
}

/* ---- robustness ---------------------------------------------------------- */

Test(protocol_request, deeply_nested_input_is_a_parse_error_not_a_crash)
{
    size_t depth = 5000;
    char *line = malloc(depth * 2 + 1);
    cr_assert_not_null(line);
    memset(line, '[', depth);
    memset(line + depth, ']', depth);
    line[2 * depth] = '\0';
    expect_error_prefix(line, CD_E_PARSE_ERROR, "not valid JSON");
    free(line);
}

Test(protocol_request, every_prefix_of_a_valid_line_fails_cleanly)
{
    const char *line = "{\"id\":\"k\",\"cmd\":\"pin\",\"instance\":1,\"particles\":[0,9],"
                       "\"positions\":[[0,2,0],[0.9,2,0]]}";
    size_t n = strlen(line);
    for (size_t len = 0; len < n; len++) {
        cd_request req;
        cd_error err;
        cr_assert_eq(cd_request_parse(line, len, NULL, &req, &err), CD_E_PARSE_ERROR,
                     "prefix of %zu bytes", len);
        cd_request_free(&req);
    }
}

Test(protocol_request, debug_with_and_without_enabled)
{
    cd_request req;
    parse_ok("{\"cmd\":\"debug\",\"enabled\":true}", &req);
    cr_assert_eq(req.cmd, CD_CMD_DEBUG);
    cr_assert(req.as.debug.has_enabled && req.as.debug.enabled);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"debug\"}", &req);
    cr_assert(!req.as.debug.has_enabled); /* a query */
    cd_request_free(&req);
    expect_error("{\"cmd\":\"debug\",\"enabled\":1}", CD_E_INVALID_ARGUMENT,
                 "enabled: must be true or false");
}

Test(protocol_request, set_with_the_seeds_stiffness_switches_xpbd_off)
{
    /* An instance running XPBD (compliance given) gets {"stiffness":0.7}:
     * the merge sets the stiffness and unsets the compliance, so the
     * stretch group returns to the seed's projection. Fields not given
     * keep the instance's values. */
    cd_cloth_def live = cd_default_cloth_def();
    live.stretch_compliance = 0.001f;
    live.bend_compliance = 0.01f;
    live.substeps = 4;
    cd_request req;
    parse_ok("{\"cmd\":\"set\",\"instance\":1,\"stiffness\":0.7,\"velocityRetention\":0.5}", &req);
    cd_cloth_def_merge(&live, &req.as.set.def, req.as.set.present);
    cr_assert_eq(live.stiffness, 0.7f);
    cr_assert_eq(live.stretch_compliance, CD_UNSET);
    cr_assert_eq(live.bend_compliance, 0.01f);
    cr_assert_eq(live.velocity_retention, 0.5f);
    cr_assert_eq(live.substeps, 4);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"set\",\"instance\":1,\"stretchCompliance\":0.002}", &req);
    cd_cloth_def_merge(&live, &req.as.set.def, req.as.set.present);
    cr_assert_eq(live.stretch_compliance, 0.002f);
    cr_assert_eq(live.stiffness, 0.7f); /* kept for a later switch back */
    cd_request_free(&req);
}

/* ---- strict input (issue 9, item 9) ---------------------------------------- */

/* A line of `len` bytes (it may hold NULs) that must fail with parse_error
 * and `message`, and whose id must not be kept (nothing of it is echoed). */
static void expect_strict(const char *line, size_t len, const char *message)
{
    cd_request req;
    cd_error err;
    cd_status st = cd_request_parse(line, len, NULL, &req, &err);
    cr_assert_eq(st, CD_E_PARSE_ERROR, "%.*s -> %s (%s)", (int)len, line, cd_status_name(st),
                 err.message);
    cr_assert_str_eq(err.message, message);
    cr_assert_null(req.id, "nothing of an invalid line is kept for the reply");
    cd_request_free(&req);
}

#define STRICT(lit, message) expect_strict(lit, sizeof(lit) - 1, message)

Test(protocol_request, invalid_utf8_anywhere_is_a_parse_error_naming_the_byte)
{
    STRICT("{\"id\":\"\xff\xfe\",\"cmd\":\"ping\"}", "invalid UTF-8 at byte 7");
    STRICT("{\"id\":\"ok\",\"cmd\":\"ping\",\"x\":\"\xc0\xaf\"}", "invalid UTF-8 at byte 29");
    STRICT("{\"id\":\"\xed\xa0\x80\",\"cmd\":\"ping\"}", "invalid UTF-8 at byte 7"); /* surrogate */
    STRICT("{\"id\":\"\xf4\x90\x80\x80\",\"cmd\":\"ping\"}", "invalid UTF-8 at byte 7"); /* > U+10FFFF */
    STRICT("{\"cmd\":\"ping\"}\xe2\x82", "invalid UTF-8 at byte 14"); /* cut at the end */
    STRICT("{\"cmd\":\"ping\",\xa9:1}", "invalid UTF-8 at byte 14"); /* between tokens */
}

Test(protocol_request, raw_control_bytes_are_a_parse_error)
{
    STRICT("{\"id\":\"a\x01\",\"cmd\":\"ping\"}",
           "raw control byte 0x01 inside a string at byte 8 (escape it)");
    STRICT("{\"id\":\"a\tb\",\"cmd\":\"ping\"}",
           "raw control byte 0x09 inside a string at byte 8 (escape it)");
    STRICT("{\"id\":\"a\\\x02\",\"cmd\":\"ping\"}",
           "raw control byte 0x02 inside a string at byte 9 (escape it)");
    STRICT("{\"id\":1,\x1b\"cmd\":\"ping\"}", "raw control byte 0x1b at byte 8");
    STRICT("{\"id\":1,\"cmd\":\"ping\"}\x00", "raw control byte 0x00 at byte 21");
    STRICT("{\"id\":\"a\x00z\",\"cmd\":\"ping\"}",
           "raw control byte 0x00 inside a string at byte 8 (escape it)");
}

Test(protocol_request, an_escaped_nul_is_a_parse_error_but_an_escaped_backslash_is_not)
{
    STRICT("{\"id\":\"a\\u0000b\",\"cmd\":\"ping\"}",
           "\\u0000 (NUL) inside a string at byte 8");
    STRICT("{\"id\":1,\"cmd\":\"ping\",\"name\":\"\\\\\\u0000\"}",
           "\\u0000 (NUL) inside a string at byte 31");

    cd_request req;
    parse_ok("{\"id\":\"a\\\\u0000b\",\"cmd\":\"ping\"}", &req); /* \\ then u0000 */
    cr_assert_str_eq(req.id->valuestring, "a\\u0000b");
    cd_request_free(&req);
    parse_ok("{\"id\":\"\\u0001\\\"\\\\\",\"cmd\":\"ping\"}", &req); /* escaped: fine */
    cr_assert_str_eq(req.id->valuestring, "\x01\"\\");
    cd_request_free(&req);
}

Test(protocol_request, tabs_and_carriage_returns_between_tokens_and_utf8_in_strings_are_fine)
{
    cd_request req;
    parse_ok("\t{ \"id\" :\t\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\",\r\"cmd\":\"ping\"}\r", &req);
    cr_assert_eq(req.cmd, CD_CMD_PING);
    cr_assert_str_eq(req.id->valuestring, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    cd_request_free(&req);
}

/* The warnings a line's request carries, printed ("" for none); and the
 * strict error. */
static void expect_unknown(const char *line, const char *warnings, const char *strict)
{
    cd_request req;
    parse_ok(line, &req);
    cJSON *list = cd_request_warnings(&req);
    char *text = list ? cJSON_PrintUnformatted(list) : NULL;
    cr_assert_str_eq(text ? text : "", warnings, "%s", line);
    cd_error err = {0};
    cr_assert_eq(cd_fail_unknown_member(&err, &req), strict[0] ? CD_E_INVALID_ARGUMENT : CD_OK);
    if (strict[0])
        cr_assert_str_eq(err.message, strict, "%s", line);
    free(text);
    cJSON_Delete(list);
    cd_request_free(&req);
}

Test(protocol_request, an_unknown_member_is_a_warning_naming_the_nearest_known_one)
{
    /* Issue 12: a misspelt option was accepted and did nothing. It still
     * runs (forward compatibility), and the reply says what was not read;
     * a strict connection refuses it with the same words. */
    expect_unknown("{\"cmd\":\"create\",\"stretchComplience\":0.001}",
                   "[\"unknown member \\\"stretchComplience\\\" (did you mean "
                   "\\\"stretchCompliance\\\"?)\"]",
                   "stretchComplience: unknown member (did you mean \"stretchCompliance\"?)");
    expect_unknown("{\"cmd\":\"create\",\"widht\":4,\"colour\":\"red\"}",
                   "[\"unknown member \\\"widht\\\" (did you mean \\\"width\\\"?)\","
                   "\"unknown member \\\"colour\\\"\"]",
                   "widht: unknown member (did you mean \"width\"?)");
    expect_unknown("{\"cmd\":\"create\",\"type\":\"softbody\",\"shape\":\"ball\",\"raduis\":1}",
                   "[\"unknown member \\\"raduis\\\" (did you mean \\\"radius\\\"?)\"]",
                   "raduis: unknown member (did you mean \"radius\"?)");
    expect_unknown("{\"cmd\":\"set\",\"instance\":1,\"Mass\":2}",
                   "[\"unknown member \\\"Mass\\\" (did you mean \\\"mass\\\"?)\"]",
                   "Mass: unknown member (did you mean \"mass\"?)");
    /* Every command, not only create and set; a short name is nobody's typo. */
    expect_unknown("{\"cmd\":\"status\",\"verbose\":true}", "[\"unknown member \\\"verbose\\\"\"]",
                   "verbose: unknown member");
    expect_unknown("{\"cmd\":\"step\",\"budgetMS\":1}",
                   "[\"unknown member \\\"budgetMS\\\" (did you mean \\\"budgetMs\\\"?)\"]",
                   "budgetMS: unknown member (did you mean \"budgetMs\"?)");
    expect_unknown("{\"cmd\":\"ping\",\"x\":1}", "[\"unknown member \\\"x\\\"\"]",
                   "x: unknown member");
    expect_unknown("{\"cmd\":\"ping\"}", "", "");
}

Test(protocol_request, what_a_variant_does_not_read_is_unknown)
{
    /* A box reads no radius; a grid reads no tetrahedra: ignored, so said. */
    expect_unknown("{\"cmd\":\"create\",\"type\":\"softbody\",\"shape\":\"box\",\"radius\":1}",
                   "[\"unknown member \\\"radius\\\"\"]", "radius: unknown member");
    expect_unknown("{\"cmd\":\"create\",\"tetrahedra\":[0,1,2,3]}",
                   "[\"unknown member \\\"tetrahedra\\\"\"]", "tetrahedra: unknown member");
    /* create ignores the envelope's "instance" (commands.h): it is not read. */
    expect_unknown("{\"cmd\":\"create\",\"instance\":3}", "[\"unknown member \\\"instance\\\"\"]",
                   "instance: unknown member");
}

Test(protocol_request, every_member_a_parser_reads_is_known)
{
    /* Every option row, every painted property, every collider row: what
     * the tables hold is what the parsers read, so none is reported. */
    char line[512];
    for (int i = 0; i < CD_OPT_COUNT; i++) {
        const cd_option_spec *spec = &cd_cloth_option_specs[i];
        char value[64];
        if (spec->kind == CD_OPTION_BOOL)
            snprintf(value, sizeof value, "true");
        else if (spec->kind == CD_OPTION_WIND_MODEL)
            snprintf(value, sizeof value, "\"aero\"");
        else if (spec->kind == CD_OPTION_INT)
            snprintf(value, sizeof value, "%d", (int)((spec->min + spec->max) / 2));
        else if (spec->kind == CD_OPTION_FLOAT)
            snprintf(value, sizeof value, "%.9g", (spec->min + spec->max) / 2);
        else
            snprintf(value, sizeof value, "[0,0,1]");
        if (spec->flags & CD_OPTION_LAYOUT) /* at creation only: set refuses it */
            snprintf(line, sizeof line, "{\"cmd\":\"create\",\"%s\":%s}", spec->name,
                     spec->kind == CD_OPTION_FLOAT ? "0.1" : spec->kind == CD_OPTION_INT ? "3"
                                                                                         : value);
        else
            snprintf(line, sizeof line, "{\"cmd\":\"set\",\"instance\":1,\"%s\":%s}",
                     spec->name, value);
        expect_unknown(line, "", "");
    }
    for (int i = 0; i < CD_PAINT_COUNT; i++) {
        snprintf(line, sizeof line, "{\"cmd\":\"set\",\"instance\":1,\"%s\":null}",
                 cd_paint_specs[i].name);
        expect_unknown(line, "", "");
    }
    expect_unknown("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"box\",\"position\":[0,0,0],"
                   "\"halfExtents\":[1,1,1],\"rotation\":[0,0,0,1],\"friction\":0.1,"
                   "\"staticFriction\":0.2,\"coupling\":0.5,\"attachment\":\"hip\"}",
                   "", "");
    expect_unknown("{\"cmd\":\"addCollider\",\"instance\":1,\"type\":\"taperedCapsule\","
                   "\"normal\":[0,1,0],\"radius\":0.1,\"radius2\":0.05,\"height\":1}",
                   "", "");
    expect_unknown("{\"id\":1,\"cmd\":\"create\",\"type\":\"softbody\",\"shape\":\"ball\","
                   "\"radius\":0.3,\"resolution\":4,\"center\":[0,1,0]}",
                   "", "");
    expect_unknown("{\"cmd\":\"pin\",\"instance\":1,\"particles\":[0],\"positions\":[[0,0,0]]}",
                   "", "");
    expect_unknown("{\"cmd\":\"subscribe\",\"instances\":[1],\"quantize\":true,\"every\":2,"
                   "\"channels\":[\"normals\"]}",
                   "", "");
    expect_unknown("{\"cmd\":\"hello\",\"strict\":true}", "", "");
}

Test(protocol_request, many_unknown_members_keep_the_first_and_count_the_rest)
{
    char line[1024];
    size_t o = (size_t)snprintf(line, sizeof line, "{\"cmd\":\"ping\"");
    for (int i = 0; i < 20; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, ",\"extra%d\":%d", i, i);
    snprintf(line + o, sizeof line - o, "}");
    cd_request req;
    parse_ok(line, &req);
    cr_assert_eq(req.unknown_count, 20u);
    cJSON *list = cd_request_warnings(&req);
    cr_assert_eq(cJSON_GetArraySize(list), (int)CD_UNKNOWN_KEPT + 1);
    cr_assert_str_eq(cJSON_GetArrayItem(list, 0)->valuestring, "unknown member \"extra0\"");
    cr_assert_str_eq(cJSON_GetArrayItem(list, (int)CD_UNKNOWN_KEPT)->valuestring,
                     "... and 12 more unknown members");
    cJSON_Delete(list);
    cd_request_free(&req);
}

Test(protocol_request, a_refused_request_reports_no_unknown_member)
{
    /* The parser stopped at the first fault: it may not have read the rest. */
    cd_request req;
    cd_error err;
    const char *line = "{\"cmd\":\"create\",\"width\":1,\"height\":3}";
    cr_assert_eq(cd_request_parse(line, strlen(line), NULL, &req, &err), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(req.unknown_count, 0u);
    cr_assert_null(cd_request_warnings(&req));
    cd_request_free(&req);
}

Test(protocol_request, an_unknown_member_name_is_quoted_safely_and_cut)
{
    char line[512];
    char name[201];
    memset(name, 'q', 200);
    name[200] = '\0';
    snprintf(line, sizeof line, "{\"cmd\":\"ping\",\"%s\":1,\"a\\\"b\\\\c\":2}", name);
    cd_request req;
    parse_ok(line, &req);
    cr_assert_eq(req.unknown_count, 2u);
    cr_assert(strlen(req.unknown[0].path) < sizeof req.unknown[0].path);
    cr_assert_not_null(strstr(req.unknown[0].path, "..."));
    cr_assert_str_eq(req.unknown[1].path, "a?b?c");
    cd_request_free(&req);
}

/* The names of an enum row in words, built here from the row's names:
 * "\"a\", \"b\" or \"c\"". */
static void enum_names(const cd_wire_enum *e, char *buf, size_t cap)
{
    int n = 0;
    while (e->name(n) != NULL)
        n++;
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s\"%s\"",
                              i == 0 ? "" : i == n - 1 ? " or " : ", ", e->name(i));
}

Test(protocol_request, every_enum_field_accepts_its_names_and_lists_them_when_wrong)
{
    /* How to reach each row's field: a request with %s for the value. A
     * new row without a way here fails, so no enum escapes the check. */
    static const struct {
        const char *command, *field, *request, *label;
    } reach[] = {
        {"create", "type", "{\"cmd\":\"create\",\"type\":%s,\"shape\":\"box\"}", "type"},
        {"create", "shape", "{\"cmd\":\"create\",\"type\":\"softbody\",\"shape\":%s}", "shape"},
        {"create", "windModel", "{\"cmd\":\"set\",\"instance\":1,\"windModel\":%s}", "windModel"},
        {"addCollider", "type", "{\"cmd\":\"addCollider\",\"instance\":1,\"type\":%s}", "type"},
        {"subscribe", "channels", "{\"cmd\":\"subscribe\",\"channels\":[%s]}", "channels[0]"},
    };
    for (int id = 0; id < CD_ENUM_COUNT; id++) {
        const cd_wire_enum *e = &cd_wire_enums[id];
        size_t k = 0;
        while (k < sizeof reach / sizeof reach[0] &&
               (strcmp(reach[k].command, e->command) != 0 || strcmp(reach[k].field, e->field) != 0))
            k++;
        cr_assert_lt(k, sizeof reach / sizeof reach[0], "no request reaches %s's %s", e->command,
                     e->field);
        char line[256], value[64], names[200], message[320];
        cr_assert_not_null(e->name(0), "%s has names", e->field);
        for (int i = 0; e->name(i) != NULL; i++) {
            snprintf(value, sizeof value, "\"%s\"", e->name(i));
            snprintf(line, sizeof line, reach[k].request, value);
            cd_request req;
            parse_ok(line, &req);
            cd_request_free(&req);
        }
        enum_names(e, names, sizeof names);
        snprintf(line, sizeof line, reach[k].request, "\"zzz\"");
        snprintf(message, sizeof message, "%s: unknown %s \"zzz\" (one of %s)", reach[k].label,
                 e->what, names);
        expect_error(line, CD_E_INVALID_ARGUMENT, message);
        snprintf(line, sizeof line, reach[k].request, "7");
        snprintf(message, sizeof message, "%s: must be a string, one of %s", reach[k].label,
                 names);
        expect_error(line, CD_E_INVALID_ARGUMENT, message);
    }
}

Test(protocol_request, every_enum_kind_of_the_option_tables_has_its_row)
{
    /* An option whose value is a name (windModel) is read through a row of
     * cd_wire_enums, so the walk above covers it. */
    const struct {
        const cd_option_spec *specs;
        int count;
    } tables[] = {{cd_cloth_option_specs, CD_OPT_COUNT},
                  {cd_collider_option_specs, CD_COLLIDER_OPT_COUNT}};
    int enums = 0;
    for (size_t t = 0; t < 2; t++) {
        for (int i = 0; i < tables[t].count; i++) {
            const cd_option_spec *spec = &tables[t].specs[i];
            switch (spec->kind) {
            case CD_OPTION_INT:
            case CD_OPTION_FLOAT:
            case CD_OPTION_VEC3:
            case CD_OPTION_POINT:
            case CD_OPTION_DIRECTION:
            case CD_OPTION_BOOL:
            case CD_OPTION_EXTENTS:
            case CD_OPTION_ROTATION:
                continue;
            case CD_OPTION_WIND_MODEL:
                break;
            }
            bool found = false;
            for (int id = 0; id < CD_ENUM_COUNT; id++)
                found |= strcmp(cd_wire_enums[id].field, spec->name) == 0;
            cr_assert(found, "option %s names a value but has no cd_wire_enums row", spec->name);
            enums++;
        }
    }
    cr_assert_eq(enums, 1, "windModel is the one enum option today");
}

Test(protocol_request, nested_objects_report_their_unknown_members_by_path)
{
    /* No command reads a nested object yet; the rule holds for any the
     * parse looks into: here one object and a list of them. */
    cJSON *root = cJSON_Parse("{\"cmd\":\"x\",\"material\":{\"friction\":1,\"frction\":2},"
                              "\"bones\":[{\"name\":\"a\",\"lenght\":1}],\"free\":{\"any\":1}}");
    const cJSON *material = cJSON_GetObjectItem(root, "material");
    const cJSON *bone = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "bones"), 0);
    cd_member_log log = {0};
    cd_json_log_begin(&log);
    cd_json_member(root, "cmd");
    cd_json_member(root, "material");
    cd_json_member(root, "bones");
    cd_json_member(root, "free"); /* read whole: its inside is not looked into */
    cd_json_member(material, "friction");
    cd_json_member(bone, "name");
    cd_json_member(bone, "length");
    cd_json_log_end();
    cd_request req;
    memset(&req, 0, sizeof req);
    cd_find_unknown_members(root, &log, &req);
    cr_assert_eq(req.unknown_count, 2u);
    cr_assert_str_eq(req.unknown[0].path, "material.frction");
    cr_assert_str_eq(req.unknown[0].near, "friction");
    cr_assert_str_eq(req.unknown[1].path, "bones[0].lenght");
    cr_assert_str_eq(req.unknown[1].near, "length");
    cd_member_log_free(&log);
    cJSON_Delete(root);
}

Test(protocol_request, hello_reads_strict_and_leaves_it_unchanged_without)
{
    cd_request req;
    parse_ok("{\"cmd\":\"hello\"}", &req);
    cr_assert_eq(req.cmd, CD_CMD_HELLO);
    cr_assert_not(req.as.hello.has_strict);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"hello\",\"strict\":false}", &req);
    cr_assert(req.as.hello.has_strict && !req.as.hello.strict);
    cd_request_free(&req);
    expect_error("{\"cmd\":\"hello\",\"strict\":\"yes\"}", CD_E_INVALID_ARGUMENT,
                 "strict: must be true or false");
}

Test(protocol_request, replay_reads_to_and_enabled)
{
    cd_request req;
    parse_ok("{\"cmd\":\"replay\",\"name\":\"s\"}", &req);
    cr_assert_str_eq(req.as.replay.name, "s");
    cr_assert_not(req.as.replay.has_to);
    cr_assert(req.as.replay.enabled, "replayed instances are enabled unless asked");
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"replay\",\"name\":\"s\",\"to\":61,\"enabled\":false}", &req);
    cr_assert(req.as.replay.has_to);
    cr_assert_eq(req.as.replay.to, 61);
    cr_assert_not(req.as.replay.enabled);
    cd_request_free(&req);
    expect_failure("{\"cmd\":\"replay\",\"name\":\"s\",\"enabled\":0}", NULL, CD_E_INVALID_ARGUMENT, "enabled",
                   false);
    parse_ok("{\"cmd\":\"journals\"}", &req);
    cr_assert_eq(req.cmd, CD_CMD_JOURNALS);
    cd_request_free(&req);
}

/* Each seed's name means what its seed says: the first seed's
 * solverIterations counts passes per step, so alone it brings back the
 * seed's single substep; the XPBD seed's iterations are per substep. */
Test(protocol_request, solver_iterations_alone_means_the_seeds_single_substep)
{
    cd_request req;
    parse_ok("{\"cmd\":\"create\",\"solverIterations\":8}", &req);
    cr_assert_eq(req.as.create.def.substeps, 1);
    cr_assert_eq(req.as.create.def.solver_iterations, 8);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"create\",\"iterations\":8}", &req);
    cr_assert_eq(req.as.create.def.substeps, 0, "the XPBD seed's name keeps small steps");
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"create\",\"solverIterations\":8,\"substeps\":0}", &req);
    cr_assert_eq(req.as.create.def.substeps, 0, "substeps named: as named");
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"create\",\"type\":\"softbody\",\"shape\":\"ball\",\"solverIterations\":3}",
             &req);
    cr_assert_eq(req.as.create.def.substeps, 2, "a soft body's own substeps stay");
    cd_request_free(&req);
    /* set: the same rule on the instance's options. */
    cd_cloth_def current = cd_default_cloth_def();
    parse_ok("{\"cmd\":\"set\",\"instance\":1,\"solverIterations\":6}", &req);
    cd_cloth_def_merge(&current, &req.as.set.def, req.as.set.present);
    cr_assert_eq(current.substeps, 1);
    cr_assert_eq(current.solver_iterations, 6);
    cd_request_free(&req);
}

/* ---- save, load: memory snapshots and restore (issue 12) ------------------ */

Test(protocol_request, save_and_load_read_memory_and_restore_flags)
{
    cd_request req;
    parse_ok("{\"cmd\":\"save\",\"name\":\"reset-3\",\"instances\":[3],\"memory\":true}", &req);
    cr_assert_eq(req.cmd, CD_CMD_SAVE);
    cr_assert(req.as.save.memory);
    cr_assert_str_eq(req.as.save.name, "reset-3");
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"save\",\"name\":\"disk\"}", &req);
    cr_assert_not(req.as.save.memory, "a file by default");
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"load\",\"name\":\"reset-3\",\"memory\":true,\"restore\":true}", &req);
    cr_assert(req.as.load.memory && req.as.load.restore && !req.as.load.replace);
    cd_request_free(&req);
    parse_ok("{\"cmd\":\"load\",\"name\":\"w\",\"replace\":true}", &req);
    cr_assert(req.as.load.replace && !req.as.load.restore && !req.as.load.memory);
    cd_request_free(&req);
}

Test(protocol_request, load_refuses_restore_with_replace_and_non_boolean_flags)
{
    expect_error_prefix("{\"cmd\":\"load\",\"name\":\"w\",\"replace\":true,\"restore\":true}",
                        CD_E_INVALID_ARGUMENT, "restore: not with \"replace\"");
    expect_error_prefix("{\"cmd\":\"load\",\"name\":\"w\",\"memory\":1}", CD_E_INVALID_ARGUMENT,
                        "memory:");
    expect_error_prefix("{\"cmd\":\"save\",\"name\":\"w\",\"memory\":\"yes\"}",
                        CD_E_INVALID_ARGUMENT, "memory:");
    expect_error_prefix("{\"cmd\":\"load\",\"name\":\"w\",\"restore\":null}", CD_E_INVALID_ARGUMENT,
                        "restore:");
}
