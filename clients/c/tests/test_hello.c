/* The handshake: every connection sends `hello` and keeps the reply
 * (version, features, limits); required features and strict are checked at
 * connect; a call needing a feature the server lacks fails before anything
 * is sent, naming the feature and the server, against the real clothd and
 * against a clothd from before the handshake (ct_old: unknown_command to
 * hello), which stays usable for plain protocol 1 commands. */
#include "harness.h"

#include <string.h>

/* How many `cmd` requests the server has answered (its stats). */
static uint64_t requests_of(clothd_client *c, const char *cmd)
{
    clothd_server_stats st;
    clothd_error err;
    if (clothd_get_server_stats(c, &st, &err) != CLOTHD_OK)
        return UINT64_MAX;
    for (size_t i = 0; i < st.request_kinds; i++)
        if (strcmp(st.requests[i].name, cmd) == 0)
            return st.requests[i].count;
    return 0;
}

static void hello_should_be_kept_with_features_and_limits(void)
{
    const char *args[] = {"--max-instances", "77", "--max-line", "65536", NULL};
    ct_server s;
    REQUIRE(ct_server_start(&s, args, 0));
    clothd_client *c = ct_connect(s.port, NULL);
    if (c != NULL) {
        clothd_server_info info = clothd_server(c);
        CHECK(info.hello == CLOTHD_HELLO_ANSWERED && strcmp(info.server, "clothd") == 0 && info.protocol == 1);
        clothd_status st;
        clothd_error err;
        CHECK(clothd_get_status(c, &st, &err) == CLOTHD_OK && strcmp(st.version, info.version) == 0,
              "hello's version %s is status's %s", info.version, st.version);
        clothd_status_free(&st);
        const char *want[] = {"warnings", "strict", "scenes", "ephemeral", "softbody", "mesh", "skin", "budget",
                              "shm"};
        CHECK(info.feature_count == sizeof want / sizeof want[0], "%zu features", info.feature_count);
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            CHECK(clothd_has_feature(c, want[i]) && strcmp(info.features[i], want[i]) == 0, "%s", want[i]);
        CHECK(!clothd_has_feature(c, "snapshots") && !clothd_has_feature(c, "recording"), "no --data-dir");
        CHECK(info.limits.instances == 77 && info.limits.line_bytes == 65536, "%llu %llu",
              (unsigned long long)info.limits.instances, (unsigned long long)info.limits.line_bytes);
        CHECK(info.limits.output_bytes > 0 && info.limits.frame_bytes > 0 && info.limits.connections > 0 &&
              info.limits.particles_per_instance > 0 && info.limits.particles > 0 && info.limits.step_work > 0);
        CHECK(!info.strict);
        clothd_close(c);
    }
    CHECK(ct_server_stop(&s) == 0);
}

static void required_features_should_be_checked_at_connect(void)
{
    clothd_options o = clothd_options_default();
    o.port = ct_main_server.port;
    const char *present[] = {"scenes", "softbody", "ephemeral"};
    o.require = present;
    o.require_count = 3;
    clothd_client *c = NULL;
    clothd_error err;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_OK, "%s", err.message);
    clothd_close(c);
    const char *absent[] = {"scenes", "snapshots", "recording"};
    o.require = absent;
    c = (clothd_client *)&o;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_INCOMPATIBLE && c == NULL, "%s: %s",
          clothd_code_name(err.code), err.message);
    char where[128];
    snprintf(where, sizeof where, "clothd at 127.0.0.1:%u lacks the features \"snapshots\", \"recording\"",
             (unsigned)ct_main_server.port);
    CHECK(strstr(err.message, where) != NULL && strstr(err.message, "required by this client") &&
              strstr(err.message, "its hello lists: warnings, strict, scenes"),
          "%s", err.message);
    CHECK(strcmp(clothd_code_name(err.code), "incompatible") == 0);
    CHECK(strstr(err.message, "; clothd lists snapshots and recording only when started with --data-dir)") != NULL,
          "%s", err.message);
    const char *bad[] = {"scenes", NULL};
    o.require = bad;
    o.require_count = 2;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_USAGE && strstr(err.message, "require[1]"), "%s", err.message);
}

static void a_call_needing_a_missing_feature_should_fail_unsent(void)
{
    clothd_client *c = ct_connect(0, NULL); /* the shared server: no --data-dir */
    REQUIRE(c != NULL);
    clothd_error err;
    uint64_t saves = requests_of(c, "save"), records = requests_of(c, "record");
    char where[40];
    snprintf(where, sizeof where, "127.0.0.1:%u", (unsigned)ct_main_server.port);
    CHECK(clothd_save(c, "nope", NULL, 0, NULL, NULL, &err) == CLOTHD_E_INCOMPATIBLE &&
              strstr(err.message, "lacks the feature \"snapshots\" needed by save") && strstr(err.message, where),
          "%s", err.message);
    CHECK(clothd_load(c, "nope", false, NULL, &err) == CLOTHD_E_INCOMPATIBLE, "%s", err.message);
    CHECK(clothd_record(c, "nope", NULL, 0, &err) == CLOTHD_E_INCOMPATIBLE &&
              strstr(err.message, "\"recording\" needed by record"),
          "%s", err.message);
    CHECK(clothd_outstanding(c) == 0 && requests_of(c, "save") == saves && requests_of(c, "record") == records,
          "nothing was sent");
    CHECK(clothd_ping(c, &err) == CLOTHD_OK, "the connection goes on");
    clothd_close(c);
}

static void strict_should_refuse_unknown_members_and_survive_a_reconnect(void)
{
    ct_proxy *proxy = ct_proxy_start(ct_main_server.port);
    REQUIRE(proxy != NULL);
    clothd_options o = clothd_options_default();
    o.port = ct_proxy_port(proxy);
    o.strict = true;
    o.reconnect = true;
    o.reconnect_timeout_ms = 5000;
    clothd_client *c = NULL;
    clothd_error err;
    REQUIRE_OK(clothd_connect(&o, &c, &err), err);
    CHECK(clothd_server(c).strict, "hello says the connection is strict");
    clothd_created cl;
    REQUIRE_OK(clothd_create_cloth(c, NULL, &cl, &err), err);
    char members[64];
    snprintf(members, sizeof members, "\"instance\":%u,\"stifness\":0.8", cl.instance.id);
    char *line = NULL;
    CHECK(clothd_request_json(c, "set", members, &line, NULL, &err) == CLOTHD_E_INVALID_ARGUMENT &&
              strstr(err.message, "stifness: unknown member (did you mean \"stiffness\"?)"),
          "%s: %s", clothd_code_name(err.code), err.message);
    clothd_free(line);
    /* A new connection is strict again: the client asks on every one. */
    ct_proxy_cut(proxy);
    ct_sleep_ms(50);
    clothd_ping(c, &err); /* the request in flight when the cut is seen */
    REQUIRE_OK(clothd_ping(c, &err), err);
    CHECK(clothd_get_client_stats(c).reconnects == 1);
    line = NULL;
    CHECK(clothd_request_json(c, "set", members, &line, NULL, &err) == CLOTHD_E_INVALID_ARGUMENT, "%s: %s",
          clothd_code_name(err.code), err.message);
    clothd_free(line);
    /* clothd_hello turns it off (and the warning comes back). */
    clothd_server_info info;
    REQUIRE_OK(clothd_hello(c, clothd_b(false), &info, &err), err);
    CHECK(!info.strict && !clothd_server(c).strict);
    uint64_t warnings = clothd_get_client_stats(c).warnings;
    line = NULL;
    CHECK(clothd_request_json(c, "set", members, &line, NULL, &err) == CLOTHD_OK, "%s", err.message);
    clothd_free(line);
    CHECK(clothd_get_client_stats(c).warnings == warnings + 1, "a warning instead");
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    clothd_close(c);
    ct_proxy_stop(proxy);
}

static void a_server_without_hello_should_serve_plain_commands_only(void)
{
    ct_old *old = ct_old_start();
    REQUIRE(old != NULL);
    clothd_options o = clothd_options_default();
    o.port = ct_old_port(old);
    o.timeout_ms = 3000;
    clothd_client *c = NULL;
    clothd_error err;
    char where[64];
    snprintf(where, sizeof where, "clothd at 127.0.0.1:%u", (unsigned)o.port);
    REQUIRE_OK(clothd_connect(&o, &c, &err), err);
    clothd_server_info info = clothd_server(c);
    CHECK(info.hello == CLOTHD_HELLO_MISSING && info.feature_count == 0 && info.version[0] == '\0');
    CHECK(clothd_ping(c, &err) == CLOTHD_OK, "plain commands work: %s", err.message);
    clothd_created made;
    CHECK(clothd_create_cloth(c, NULL, &made, &err) == CLOTHD_OK && made.instance.id == 1, "%s", err.message);
    clothd_softbody_options ball = clothd_softbody_default();
    ball.shape = CLOTHD_SHAPE_BALL;
    CHECK(clothd_create_softbody(c, &ball, &made, &err) == CLOTHD_E_INCOMPATIBLE &&
              strstr(err.message, where) && strstr(err.message, "lacks the feature \"softbody\" needed by create") &&
              strstr(err.message, "no features known"),
          "%s", err.message);
    CHECK(clothd_scenes(c, NULL, NULL, NULL, &err) == CLOTHD_E_INCOMPATIBLE &&
              strstr(err.message, "\"scenes\" needed by scenes"),
          "%s", err.message);
    clothd_cloth_options placed = clothd_cloth_default();
    placed.scene = "npc-capes";
    CHECK(clothd_create_cloth(c, &placed, &made, &err) == CLOTHD_E_INCOMPATIBLE, "%s", err.message);
    placed.scene = NULL;
    placed.ephemeral = true;
    CHECK(clothd_create_cloth(c, &placed, &made, &err) == CLOTHD_E_INCOMPATIBLE &&
              strstr(err.message, "\"ephemeral\""),
          "%s", err.message);
    REQUIRE_OK(clothd_use_scene(c, "npc-capes", &err), err);
    CHECK(clothd_step(c, NULL, NULL, &err) == CLOTHD_E_INCOMPATIBLE && strstr(err.message, "\"scenes\" needed by step"),
          "a current scene needs scenes too: %s", err.message);
    REQUIRE_OK(clothd_use_scene(c, NULL, &err), err);
    CHECK(clothd_step(c, NULL, NULL, &err) == CLOTHD_OK, "%s", err.message);
    CHECK(clothd_hello(c, clothd_b(true), NULL, &err) == CLOTHD_E_INCOMPATIBLE && strstr(err.message, "\"strict\""),
          "%s", err.message);
    clothd_close(c);

    /* Required features, or strict, fail the connect, naming the server. */
    const char *need[] = {"scenes"};
    o.require = need;
    o.require_count = 1;
    c = NULL;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_INCOMPATIBLE && c == NULL && strstr(err.message, where) &&
              strstr(err.message, "lacks the feature \"scenes\" required by this client") &&
              strstr(err.message, "it does not answer hello"),
          "%s: %s", clothd_code_name(err.code), err.message);
    o.require = NULL;
    o.require_count = 0;
    o.strict = true;
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_INCOMPATIBLE && strstr(err.message, "\"strict\""), "%s",
          err.message);
    char seen[16384];
    ct_old_seen(old, seen, sizeof seen);
    ct_old_stop(old);
    CHECK(strstr(seen, "softbody") == NULL && strstr(seen, "\"scene") == NULL && strstr(seen, "ephemeral") == NULL,
          "no refused call reached the server: %s", seen);
    CHECK(strstr(seen, "\"cmd\":\"ping\"") != NULL && strstr(seen, "\"cmd\":\"step\"") != NULL, "%s", seen);
}

const ct_test ct_hello_tests[] = {
    {"hello: kept with its version, features and limits", hello_should_be_kept_with_features_and_limits, 0},
    {"hello: required features are checked at connect", required_features_should_be_checked_at_connect, 0},
    {"hello: a call needing a missing feature fails unsent", a_call_needing_a_missing_feature_should_fail_unsent, 0},
    {"hello: strict refuses unknown members, again after a reconnect",
     strict_should_refuse_unknown_members_and_survive_a_reconnect, 0},
    {"hello: a server without hello serves plain commands only", a_server_without_hello_should_serve_plain_commands_only,
     0},
    {NULL, NULL, 0},
};
