/* The API's edges: NULL everywhere is safe, zeroed reply structs can be
 * freed, the code names round-trip, a bad argument (a NaN, bad UTF-8, a
 * wrong ticket) is refused before anything is sent and leaves the client
 * usable, and connecting to nothing fails with a clear message. */
#include "harness.h"

#include <math.h>
#include <string.h>

static void null_and_zeroed_values_should_be_safe(void)
{
    clothd_close(NULL);
    clothd_step_result sr;
    memset(&sr, 0, sizeof sr);
    clothd_step_result_free(&sr);
    clothd_step_result_free(NULL);
    clothd_instance_state st;
    memset(&st, 0, sizeof st);
    clothd_instance_state_free(&st);
    clothd_instance_state_free(NULL);
    clothd_status s;
    memset(&s, 0, sizeof s);
    clothd_status_free(&s);
    clothd_status_free(NULL);
    clothd_topology t;
    memset(&t, 0, sizeof t);
    clothd_topology_free(&t);
    clothd_topology_free(NULL);
    clothd_free(NULL);
    clothd_error err;
    CHECK(clothd_ping(NULL, &err) == CLOTHD_E_USAGE && strstr(err.message, "NULL"));
    CHECK(clothd_step(NULL, NULL, &sr, NULL) == CLOTHD_E_USAGE, "err may be NULL too");
    CHECK(sr.stepped == 0 && sr.unstable == NULL, "the out struct is zeroed even then");
    CHECK(clothd_poll(NULL, 0, NULL, &err) == CLOTHD_E_USAGE);
    CHECK(clothd_fd(NULL) == CLOTHD_NO_SOCKET && clothd_wants(NULL) == 0);
    CHECK(clothd_link_state(NULL) == CLOTHD_LINK_CLOSED);
    CHECK(clothd_outstanding(NULL) == 0 && !clothd_ready(NULL, 1));
    CHECK(!clothd_take_async_error(NULL, &err));
    CHECK(clothd_connect(NULL, NULL, &err) == CLOTHD_E_USAGE);
}

static void code_names_should_round_trip(void)
{
    const clothd_code all[] = {CLOTHD_OK,         CLOTHD_E_PARSE_ERROR,   CLOTHD_E_UNKNOWN_COMMAND,
                               CLOTHD_E_INVALID_ARGUMENT, CLOTHD_E_NOT_FOUND, CLOTHD_E_LIMIT_EXCEEDED,
                               CLOTHD_E_LINE_TOO_LONG, CLOTHD_E_INTERNAL, CLOTHD_E_UNAUTHORIZED,
                               CLOTHD_E_IO,        CLOTHD_E_CLOSED,       CLOTHD_E_TIMEOUT,
                               CLOTHD_E_PROTOCOL,  CLOTHD_E_NOMEM,        CLOTHD_E_USAGE,
                               CLOTHD_E_INCOMPATIBLE};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const char *name = clothd_code_name(all[i]);
        CHECK(clothd_code_from_name(name) == all[i], "%s", name);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(name, clothd_code_name(all[j])) != 0, "%s twice", name);
    }
    CHECK(strcmp(clothd_code_name(CLOTHD_E_NOT_FOUND), "not_found") == 0);
    CHECK(clothd_code_from_name("no_such_code") == CLOTHD_E_UNKNOWN);
    CHECK(clothd_code_from_name(NULL) == CLOTHD_E_UNKNOWN);
    CHECK(CLOTHD_WIRE_CODE_COUNT == 8 && CLOTHD_E_UNAUTHORIZED == CLOTHD_WIRE_CODE_COUNT);
}

static void connecting_to_nothing_should_fail_clearly(void)
{
    ct_fake *f = ct_fake_start(NULL, 0, true); /* a port that was free a moment ago */
    REQUIRE(f != NULL);
    uint16_t port = ct_fake_port(f);
    ct_fake_stop(f);
    clothd_options o = clothd_options_default();
    o.port = port;
    clothd_client *c = (clothd_client *)&o; /* must be set to NULL */
    clothd_error err;
    int64_t t0 = ct_now_ms();
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_IO && c == NULL);
    CHECK(strstr(err.message, "connect 127.0.0.1:") != NULL && strstr(err.message, "refused") != NULL, "%s",
          err.message);
    CHECK(ct_now_ms() - t0 < 2000, "a refused connect fails at once");
    o.host = "no-such-host.invalid";
    CHECK(clothd_connect(&o, &c, &err) == CLOTHD_E_IO && strstr(err.message, "resolve"), "%s", err.message);
}

static void bad_arguments_should_be_refused_before_sending(void)
{
    clothd_client *c = ct_connect(0, NULL);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_client_stats before = clothd_get_client_stats(c);
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.dt = clothd_f(NAN);
    clothd_step_result sr;
    CHECK(clothd_step(c, &so, &sr, &err) == CLOTHD_E_USAGE && strstr(err.message, "dt: not a finite number"),
          "%s", err.message);
    clothd_cloth_options co = clothd_cloth_default();
    co.origin = clothd_v3(0, INFINITY, 0);
    CHECK(clothd_create_cloth(c, &co, NULL, &err) == CLOTHD_E_USAGE && strstr(err.message, "origin"), "%s",
          err.message);
    clothd_transform_options to;
    memset(&to, 0, sizeof to);
    to.position = clothd_v3(0, 1, 0);
    CHECK(clothd_transform(c, clothd_instance_id(1), "bad\xff", &to, &err) == CLOTHD_E_USAGE &&
              strstr(err.message, "name: not valid UTF-8"),
          "%s", err.message);
    co = clothd_cloth_default();
    co.material.wind_model = (clothd_wind_model)7;
    CHECK(clothd_create_cloth(c, &co, NULL, &err) == CLOTHD_E_USAGE);
    clothd_ticket t;
    CHECK(clothd_send_json(c, "x", "\"a\":1}", &t, &err) == CLOTHD_E_USAGE && strstr(err.message, "valid JSON"),
          "%s", err.message);
    CHECK(clothd_send_json(c, "x", "\"a\":\n1", &t, &err) == CLOTHD_E_USAGE);
    CHECK(clothd_send_line(c, "  \r", 3, &t, &err) == CLOTHD_E_USAGE, "a blank line gets no reply");
    CHECK(clothd_send_line(c, "{}\n{}", 5, &t, &err) == CLOTHD_E_USAGE);
    clothd_client_stats after = clothd_get_client_stats(c);
    CHECK(after.requests == before.requests && after.bytes_out == before.bytes_out, "nothing was sent");
    REQUIRE_OK(clothd_ping(c, &err), err);
    clothd_close(c);
}

static void tickets_should_be_checked(void)
{
    clothd_client *c = ct_connect(0, NULL);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_ticket t = 0;
    REQUIRE_OK(clothd_send_ping(c, &t, &err), err);
    CHECK(t != 0);
    clothd_step_result sr;
    CHECK(clothd_recv_step(c, t, &sr, &err) == CLOTHD_E_USAGE && strstr(err.message, "ping"), "%s", err.message);
    CHECK(clothd_recv(c, t + 100, &err) == CLOTHD_E_USAGE, "an unknown ticket");
    CHECK(clothd_outstanding(c) == 1);
    REQUIRE_OK(clothd_recv(c, t, &err), err);
    CHECK(clothd_recv(c, t, &err) == CLOTHD_E_USAGE, "collected twice");
    CHECK(clothd_outstanding(c) == 0);
    /* Raw JSON for what the header does not know; the reply line as it came. */
    char *line = NULL;
    size_t len = 0;
    REQUIRE_OK(clothd_request_json(c, "ping", NULL, &line, &len, &err), err);
    CHECK(line != NULL && strstr(line, "\"pong\":true") != NULL && len == strlen(line), "%s", line);
    clothd_free(line);
    CHECK(clothd_request_json(c, "get", "\"instance\":4000000000", &line, &len, &err) == CLOTHD_E_NOT_FOUND);
    CHECK(line != NULL && strstr(line, "\"ok\":false") != NULL, "the error reply's line is returned too");
    clothd_free(line);
    clothd_close(c);
}

const ct_test ct_api_tests[] = {
    {"api: NULL and zeroed values are safe", null_and_zeroed_values_should_be_safe, 0},
    {"api: code names round-trip", code_names_should_round_trip, 0},
    {"api: connecting to nothing fails clearly", connecting_to_nothing_should_fail_clearly, 0},
    {"api: bad arguments are refused before sending", bad_arguments_should_be_refused_before_sending, 0},
    {"api: tickets are checked; raw JSON works", tickets_should_be_checked, 0},
    {NULL, NULL, 0},
};
