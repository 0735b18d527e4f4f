/* Every error code the server can send, each provoked by a real request to
 * the real server and read back as the typed code with the server's
 * message: parse_error, unknown_command, invalid_argument, not_found,
 * limit_exceeded, line_too_long (then the server closes), internal (the
 * server out of memory: its address space limited with prlimit while it
 * builds a large reply), unauthorized. And the enum and PROTOCOL.md's
 * error table name the same codes. */
#define _GNU_SOURCE /* prlimit */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static bool one_line(const char *s)
{
    return strchr(s, '\n') == NULL && strchr(s, '\r') == NULL;
}

#define EXPECT(call, code_, text)                                                                  \
    do {                                                                                           \
        clothd_code got_ = (call);                                                                 \
        CHECK(got_ == (code_) && strcmp(err.wire_code, clothd_code_name(code_)) == 0 &&           \
                  strstr(err.message, (text)) != NULL && one_line(err.message),                   \
              "%s: got %s (%s): %s", #code_, clothd_code_name(got_), err.wire_code, err.message); \
    } while (0)

static void each_request_error_should_come_back_typed(void)
{
    clothd_client *c = ct_connect(0, NULL);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_ticket t;
    REQUIRE_OK(clothd_send_line(c, "{\"cmd\":", 7, &t, &err), err);
    EXPECT(clothd_recv(c, t, &err), CLOTHD_E_PARSE_ERROR, "not valid JSON");
    REQUIRE_OK(clothd_send_line(c, "[1,2]", 5, &t, &err), err);
    EXPECT(clothd_recv(c, t, &err), CLOTHD_E_PARSE_ERROR, "must be a JSON object");
    REQUIRE_OK(clothd_send_line(c, "{\"id\":\"\xff\",\"cmd\":\"ping\"}", 23, &t, &err), err);
    EXPECT(clothd_recv(c, t, &err), CLOTHD_E_PARSE_ERROR, "invalid UTF-8 at byte 7");
    EXPECT(clothd_request_json(c, "jump", NULL, NULL, NULL, &err), CLOTHD_E_UNKNOWN_COMMAND,
           "unknown command \"jump\" (hello lists the commands)");

    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(1);
    EXPECT(clothd_create_cloth(c, &o, NULL, &err), CLOTHD_E_INVALID_ARGUMENT, "width: must be an integer >= 2");
    o = clothd_cloth_default();
    o.material.stiffness = clothd_f(0.5f);
    o.material.stretch_compliance = clothd_f(0.001f);
    EXPECT(clothd_create_cloth(c, &o, NULL, &err), CLOTHD_E_INVALID_ARGUMENT,
           "give either stiffness or stretchCompliance");
    o = clothd_cloth_default();
    o.material.substeps = clothd_i(0); /* automatic */
    o.material.solver_frequency = clothd_f(0.5f);
    EXPECT(clothd_create_cloth(c, &o, NULL, &err), CLOTHD_E_INVALID_ARGUMENT,
           "solverFrequency: must be a number in [1, 100000]");
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.dt = clothd_f(0);
    EXPECT(clothd_step(c, &so, NULL, &err), CLOTHD_E_INVALID_ARGUMENT, "dt: must be a number in (0, 1]");
    clothd_instance_state st;
    EXPECT(clothd_get(c, clothd_instance_id(3999999), NULL, &st, &err), CLOTHD_E_NOT_FOUND,
           "instance: no instance 3999999");
    clothd_created cl;
    REQUIRE_OK(clothd_create_cloth(c, NULL, &cl, &err), err);
    clothd_move_options mo;
    memset(&mo, 0, sizeof mo);
    mo.position = clothd_v3(0, 0, 0);
    EXPECT(clothd_move_collider(c, cl.instance, clothd_collider_id(9), &mo, &err), CLOTHD_E_NOT_FOUND,
           "collider: no collider 9");
    clothd_pin_options p;
    memset(&p, 0, sizeof p);
    p.particle = clothd_u(200);
    EXPECT(clothd_pin(c, cl.instance, &p, NULL, &err), CLOTHD_E_INVALID_ARGUMENT,
           "particle: index 200 out of range (100 particles)");
    o = clothd_cloth_default();
    o.width = clothd_i(200);
    o.height = clothd_i(2000);
    EXPECT(clothd_create_cloth(c, &o, NULL, &err), CLOTHD_E_LIMIT_EXCEEDED,
           "width, height: 400000 particles exceed the limit of 262144");
    clothd_collider_options co;
    memset(&co, 0, sizeof co);
    co.type = CLOTHD_COLLIDER_SPHERE;
    for (int i = 0; i < 64; i++)
        REQUIRE_OK(clothd_send_add_collider(c, cl.instance, &co, NULL, &err), err);
    EXPECT(clothd_add_collider(c, cl.instance, &co, NULL, &err), CLOTHD_E_LIMIT_EXCEEDED,
           "collider: at most 64 colliders per instance");
    CHECK(!clothd_take_async_error(c, &err), "the 64 ticketless adds all succeeded");
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    CHECK(clothd_link_state(c) == CLOTHD_LINK_CONNECTED, "request errors leave the connection up");
    clothd_close(c);
}

static void a_line_too_long_should_close_the_connection(void)
{
    const char *args[] = {"--max-line", "64", NULL};
    ct_server s;
    REQUIRE(ct_server_start(&s, args, 0));
    clothd_client *c = ct_connect(s.port, NULL);
    if (c != NULL) {
        clothd_error err;
        clothd_cloth_options o = clothd_cloth_default();
        o.width = clothd_i(20);
        o.height = clothd_i(20);
        o.spacing = clothd_f(0.05f);
        o.origin = clothd_v3(0, 2, 0);
        o.material.solver_iterations = clothd_i(8);
        EXPECT(clothd_create_cloth(c, &o, NULL, &err), CLOTHD_E_LINE_TOO_LONG, "longer than the limit of 64 bytes");
        CHECK(clothd_ping(c, &err) == CLOTHD_E_CLOSED, "then the server closes: %s", err.message);
        CHECK(clothd_link_state(c) == CLOTHD_LINK_CLOSED);
        clothd_close(c);
    }
    CHECK(ct_server_stop(&s) == 0);
}

static long vm_size(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmSize:", 7) == 0)
            kb = strtol(line + 7, NULL, 10);
    if (f != NULL)
        fclose(f);
    return kb * 1024;
}

static void a_server_out_of_memory_should_answer_internal(void)
{
    ct_server s;
    REQUIRE(ct_server_start(&s, NULL, 0));
    clothd_client *c = ct_connect(s.port, NULL);
    if (c != NULL) {
        clothd_error err;
        clothd_cloth_options o = clothd_cloth_default();
        o.width = clothd_i(512);
        o.height = clothd_i(512);
        clothd_created cl;
        CHECK(clothd_create_cloth(c, &o, &cl, &err) == CLOTHD_OK, "%s", err.message);
        long vm = vm_size(s.pid);
        CHECK(vm > 0);
        /* 8 MiB more address space: far less than a `get` of 786432 numbers needs. */
        struct rlimit lim = {(rlim_t)vm + 8 * 1024 * 1024, RLIM_INFINITY}, none = {RLIM_INFINITY, RLIM_INFINITY};
        CHECK(prlimit(s.pid, RLIMIT_AS, &lim, NULL) == 0);
        clothd_instance_state st;
        EXPECT(clothd_get(c, cl.instance, NULL, &st, &err), CLOTHD_E_INTERNAL, "get: out of memory");
        CHECK(prlimit(s.pid, RLIMIT_AS, &none, NULL) == 0);
        CHECK(clothd_get(c, cl.instance, NULL, &st, &err) == CLOTHD_OK, "the request had no effect: %s",
              err.message);
        CHECK(st.particle_count == 262144);
        clothd_instance_state_free(&st);
        clothd_close(c);
    }
    CHECK(ct_server_stop(&s) == 0, "the server survived its out-of-memory reply");
}

static void a_missing_token_should_be_unauthorized(void)
{
    char token_file[512];
    REQUIRE(ct_write_temp("kR7mW2qX9vL4pZ8nB3cT6yH1\n", token_file, sizeof token_file));
    const char *args[] = {"--token-file", token_file, NULL};
    ct_server s;
    REQUIRE(ct_server_start(&s, args, 0));
    clothd_client *c = ct_connect(s.port, NULL);
    if (c != NULL) {
        clothd_error err;
        clothd_status st;
        EXPECT(clothd_get_status(c, &st, &err), CLOTHD_E_UNAUTHORIZED, "cmd: \"status\" needs auth first");
        clothd_access a = CLOTHD_ACCESS_FULL;
        EXPECT(clothd_auth(c, "wrong-token-wrong-token", &a, &err), CLOTHD_E_UNAUTHORIZED, "token: wrong token");
        CHECK(clothd_access_granted(c) == CLOTHD_ACCESS_NONE);
        clothd_close(c);
    }
    CHECK(ct_server_stop(&s) == 0);
    remove(token_file);
}

/* PROTOCOL.md's error table (the rows between "## Errors" and "More
 * messages") names exactly the codes of clothd/codes.h. */
static void the_enum_should_match_protocol_md(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/protocol/PROTOCOL.md", ct_repo());
    FILE *f = fopen(path, "r");
    REQUIRE(f != NULL, "%s", path);
    char line[2048];
    bool in = false;
    int rows = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "## Errors", 9) == 0)
            in = true;
        else if (in && strncmp(line, "More messages", 13) == 0)
            break;
        if (!in || strncmp(line, "| `", 3) != 0)
            continue;
        char *end = strchr(line + 3, '`');
        REQUIRE(end != NULL);
        *end = '\0';
        clothd_code code = clothd_code_from_name(line + 3);
        CHECK(code >= CLOTHD_E_PARSE_ERROR && code <= CLOTHD_E_UNAUTHORIZED, "PROTOCOL.md's %s is no wire code",
              line + 3);
        rows++;
    }
    fclose(f);
    CHECK(rows == CLOTHD_WIRE_CODE_COUNT, "PROTOCOL.md lists %d codes, codes.h %d", rows, CLOTHD_WIRE_CODE_COUNT);
}

/* What on_warning saw: each call's ticket and text. */
typedef struct seen_warnings {
    int count;
    clothd_ticket tickets[4];
    char texts[4][160];
} seen_warnings;

static void keep_warning(void *user, clothd_ticket ticket, const char *warning)
{
    seen_warnings *w = user;
    if (w->count < 4) {
        w->tickets[w->count] = ticket;
        snprintf(w->texts[w->count], sizeof w->texts[0], "%s", warning);
    }
    w->count++;
}

static void a_replys_warnings_should_reach_on_warning(void)
{
    seen_warnings seen;
    memset(&seen, 0, sizeof seen);
    clothd_options o = clothd_options_default();
    o.port = ct_main_server.port;
    o.on_warning = keep_warning;
    o.user = &seen;
    clothd_client *c = NULL;
    clothd_error err;
    REQUIRE_OK(clothd_connect(&o, &c, &err), err);
    clothd_ticket t;
    REQUIRE_OK(clothd_send_json(c, "create", "\"width\":3,\"height\":3,\"stretchComplience\":0.01", &t, &err),
               err);
    char *line = NULL;
    REQUIRE_OK(clothd_recv_json(c, t, &line, NULL, &err), err);
    clothd_free(line);
    CHECK(seen.count == 1 && seen.tickets[0] == t, "%d warnings", seen.count);
    CHECK(strcmp(seen.texts[0], "unknown member \"stretchComplience\" (did you mean \"stretchCompliance\"?)") == 0,
          "%s", seen.texts[0]);
    /* A reply without warnings calls nothing; an error reply's are reported too. */
    CHECK(clothd_ping(c, &err) == CLOTHD_OK && seen.count == 1);
    EXPECT(clothd_request_json(c, "destroy", "\"instance\":999999,\"force\":true", NULL, NULL, &err),
           CLOTHD_E_NOT_FOUND, "instance: no instance 999999");
    CHECK(seen.count == 2 && strcmp(seen.texts[1], "unknown member \"force\"") == 0, "%s", seen.texts[1]);
    CHECK(clothd_get_client_stats(c).warnings == 2);
    clothd_close(c);
}

static void a_refused_connection_should_name_the_address(void)
{
    ct_fake *f = ct_fake_start(NULL, 0, true); /* a port that was free a moment ago */
    REQUIRE(f != NULL);
    uint16_t port = ct_fake_port(f);
    ct_fake_stop(f);
    clothd_options o = clothd_options_default();
    o.port = port;
    clothd_client *c = NULL;
    clothd_error err;
    char want[64];
    snprintf(want, sizeof want, "cannot connect to clothd at 127.0.0.1:%u: ", (unsigned)port);
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_IO && c == NULL);
    CHECK(strncmp(err.message, want, strlen(want)) == 0 && strstr(err.message, "refused"), "%s", err.message);
    o.host = "no-such-host.invalid";
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_IO &&
              strstr(err.message, "cannot connect to clothd at no-such-host.invalid:"),
          "%s", err.message);
}

const ct_test ct_error_tests[] = {
    {"errors: a reply's warnings reach on_warning", a_replys_warnings_should_reach_on_warning, 0},
    {"errors: a refused connection names the address", a_refused_connection_should_name_the_address, 0},
    {"errors: parse, unknown, invalid, not found, limit come back typed", each_request_error_should_come_back_typed, 0},
    {"errors: line_too_long, then the server closes", a_line_too_long_should_close_the_connection, 0},
    {"errors: internal when the server runs out of memory", a_server_out_of_memory_should_answer_internal, 0},
    {"errors: unauthorized without the token", a_missing_token_should_be_unauthorized, 0},
    {"errors: the enum names PROTOCOL.md's codes", the_enum_should_match_protocol_md, 0},
    {NULL, NULL, 0},
};
