/* When the connection goes wrong: the server killed in the middle of
 * pipelined steps, a server that closes in the middle of a frame, sends
 * garbage, answers with the wrong id or never answers: every call returns a
 * clear error at once (or at its timeout), nothing hangs or crashes, and
 * the client stays closed. Then automatic reconnect: a connection cut under
 * a client with a token and a quantized subscription comes back
 * authenticated and subscribed, and a server that restarted without the
 * instance reports the subscription it could not renew. */
#include "harness.h"

#include <string.h>

static void a_server_killed_mid_request_should_fail_every_request(void)
{
    ct_server s;
    REQUIRE(ct_server_start(&s, NULL, 0));
    clothd_client *c = ct_connect(s.port, NULL);
    if (c == NULL) {
        ct_server_kill(&s);
        return;
    }
    clothd_error err;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(100);
    o.height = clothd_i(100);
    o.material.solver_iterations = clothd_i(64);
    clothd_created cl;
    CHECK(clothd_create_cloth(c, &o, &cl, &err) == CLOTHD_OK, "%s", err.message);
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instance = cl.instance;
    clothd_ticket t[30];
    for (int i = 0; i < 30; i++)
        CHECK(clothd_send_step(c, &so, &t[i], &err) == CLOTHD_OK);
    CHECK(clothd_recv(c, t[0], &err) == CLOTHD_OK, "%s", err.message);
    ct_server_kill(&s);
    int64_t t0 = ct_now_ms();
    int closed = 0;
    for (int i = 1; i < 30; i++) {
        clothd_code rc = clothd_recv(c, t[i], &err);
        closed += rc == CLOTHD_E_CLOSED;
        if (rc == CLOTHD_E_CLOSED && i == 29)
            CHECK(!err.reconnecting && strstr(err.message, "no reply, the connection dropped"), "%s", err.message);
    }
    CHECK(closed > 0, "the steps after the kill fail as closed");
    CHECK(ct_now_ms() - t0 < 3000, "at once, not at a timeout (%lld ms)", (long long)(ct_now_ms() - t0));
    CHECK(clothd_ping(c, &err) == CLOTHD_E_CLOSED && strstr(err.message, "connection closed"), "%s", err.message);
    CHECK(clothd_link_state(c) == CLOTHD_LINK_CLOSED && clothd_fd(c) == CLOTHD_NO_SOCKET);
    CHECK(clothd_poll(c, 10, NULL, &err) == CLOTHD_E_CLOSED);
    clothd_close(c);
}

static clothd_client *to_fake(const ct_fake *f, int timeout_ms)
{
    clothd_options o = clothd_options_default();
    o.port = ct_fake_port(f);
    o.timeout_ms = timeout_ms;
    o.no_hello = true; /* the fake answers the first line it reads: the test's */
    return ct_connect_with(&o);
}

static void a_broken_server_should_give_a_clear_error(void)
{
    static const unsigned char half_frame[] = {0x89, 'C', 'L', 'F', 1, 0, 0, 0, 64, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    static const char garbage[] = "\x01hello\n";
    static const char wrong_id[] = "{\"id\":77,\"ok\":true,\"pong\":true}\n";
    static const char cut_line[] = "{\"id\":1,\"ok\":tr";
    struct {
        const void *bytes;
        size_t len;
        clothd_code code;
        const char *text;
    } cases[] = {
        {half_frame, sizeof half_frame, CLOTHD_E_CLOSED, "in the middle of a frame"},
        {garbage, sizeof garbage - 1, CLOTHD_E_PROTOCOL, "byte 0x01 where a message starts"},
        {wrong_id, sizeof wrong_id - 1, CLOTHD_E_PROTOCOL, "id 77 where 1 was due"},
        {cut_line, sizeof cut_line - 1, CLOTHD_E_CLOSED, "in the middle of a reply"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct_fake *f = ct_fake_start(cases[i].bytes, cases[i].len, true);
        REQUIRE(f != NULL);
        clothd_client *c = to_fake(f, 5000);
        if (c != NULL) {
            clothd_error err;
            int64_t t0 = ct_now_ms();
            clothd_code rc = clothd_ping(c, &err);
            CHECK(rc == cases[i].code && strstr(err.message, cases[i].text), "case %zu: %s: %s", i,
                  clothd_code_name(rc), err.message);
            CHECK(ct_now_ms() - t0 < 2000, "case %zu: at once", i);
            CHECK(clothd_ping(c, &err) == CLOTHD_E_CLOSED, "case %zu: then closed", i);
            clothd_close(c);
        }
        ct_fake_stop(f);
    }
}

static void a_silent_server_should_time_out(void)
{
    ct_fake *f = ct_fake_start(NULL, 0, false);
    REQUIRE(f != NULL);
    clothd_client *c = to_fake(f, 300);
    if (c != NULL) {
        clothd_error err;
        int64_t t0 = ct_now_ms();
        CHECK(clothd_ping(c, &err) == CLOTHD_E_TIMEOUT && strstr(err.message, "no reply to ping"), "%s",
              err.message);
        int64_t ms = ct_now_ms() - t0;
        CHECK(ms >= 290 && ms < 1500, "the timeout is the client's 300 ms (%lld)", (long long)ms);
        CHECK(clothd_outstanding(c) == 0, "the blocking call gave its ticket up");
        clothd_ticket t;
        CHECK(clothd_send_ping(c, &t, &err) == CLOTHD_OK);
        CHECK(clothd_recv(c, t, &err) == CLOTHD_E_TIMEOUT && clothd_outstanding(c) == 1,
              "a timed-out recv keeps its ticket for later");
        clothd_close(c);
    }
    ct_fake_stop(f);
}

static void the_connection_limit_should_say_why_it_closed(void)
{
    char token_file[512];
    REQUIRE(ct_write_temp("limit-test-token-0123456789", token_file, sizeof token_file));
    const char *args[] = {"--max-connections", "1", "--token-file", token_file, NULL};
    ct_server s;
    REQUIRE(ct_server_start(&s, args, 0));
    clothd_client *first = ct_connect(s.port, "limit-test-token-0123456789");
    clothd_options o = clothd_options_default();
    o.port = s.port;
    clothd_client *second = NULL;
    clothd_error err;
    /* Without a token, the server's answer goes to `hello` (an error
     * without id goes to the oldest request): clothd_connect reports it. */
    CHECK(clothd_connect(&o, &second, &err) == CLOTHD_E_LIMIT_EXCEEDED && second == NULL &&
              strstr(err.message, "connections: at most 1 at once"),
          "%s: %s", clothd_code_name(err.code), err.message);
    /* Without hello either, connecting needs no round trip: the first call
     * gets the server's answer, the next one the closed connection. */
    o.no_hello = true;
    CHECK(clothd_connect(&o, &second, &err) == CLOTHD_OK);
    clothd_code rc = clothd_ping(second, &err);
    CHECK(rc == CLOTHD_E_LIMIT_EXCEEDED && strstr(err.message, "connections: at most 1 at once"), "%s: %s",
          clothd_code_name(rc), err.message);
    rc = clothd_ping(second, &err);
    CHECK(rc == CLOTHD_E_CLOSED, "%s: %s", clothd_code_name(rc), err.message); /* a reset or a broken pipe */
    CHECK(clothd_link_state(second) == CLOTHD_LINK_CLOSED);
    clothd_close(second);
    o.no_hello = false;
    /* With a token, auth gets it. */
    o.token = "limit-test-token-0123456789";
    second = NULL;
    CHECK(clothd_connect(&o, &second, &err) == CLOTHD_E_LIMIT_EXCEEDED && second == NULL &&
              strstr(err.message, "at most 1 at once"),
          "%s: %s", clothd_code_name(err.code), err.message);
    CHECK(first != NULL && clothd_ping(first, &err) == CLOTHD_OK, "the first connection is untouched");
    clothd_close(first);
    CHECK(ct_server_stop(&s) == 0);
    remove(token_file);
}

typedef struct watch {
    int frames;
    bool quantized;
    uint64_t last;
    int failed;
    clothd_code failed_code;
} watch;

static void watch_frame(void *user, const clothd_frame *f)
{
    watch *w = user;
    w->frames++;
    w->quantized = f->quantized;
    w->last = f->frame;
}

static void watch_event(void *user, const clothd_event *e)
{
    watch *w = user;
    if (strcmp(e->name, "resubscribe_failed") == 0) {
        w->failed++;
        w->failed_code = e->error.code;
    }
}

static void a_reconnect_should_restore_auth_and_subscriptions(void)
{
    static const char token[] = "cape-and-capsule-token-0123456789";
    char token_file[512];
    REQUIRE(ct_write_temp(token, token_file, sizeof token_file));
    const char *args[] = {"--token-file", token_file, NULL};
    ct_server s;
    REQUIRE(ct_server_start(&s, args, 0));
    ct_proxy *proxy = ct_proxy_start(s.port);
    clothd_client *direct = ct_connect(s.port, token);
    watch w;
    memset(&w, 0, sizeof w);
    clothd_options o = clothd_options_default();
    o.port = proxy ? ct_proxy_port(proxy) : 0;
    o.token = token;
    o.reconnect = true;
    o.reconnect_timeout_ms = 5000;
    o.on_frame = watch_frame;
    o.on_event = watch_event;
    o.user = &w;
    clothd_client *c = NULL;
    clothd_error err;
    if (proxy == NULL || direct == NULL || clothd_connect(&o, &c, &err) != CLOTHD_OK) {
        ct_fail(__FILE__, __LINE__, "set-up", "%s", err.message);
        goto out;
    }
    clothd_created cl;
    CHECK(clothd_create_cloth(direct, NULL, &cl, &err) == CLOTHD_OK);
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = cl.instance;
    so.quantize = clothd_b(true);
    CHECK(clothd_subscribe(c, &so, NULL, &err) == CLOTHD_OK, "%s", err.message);
    int64_t until = ct_now_ms() + 3000;
    while (w.frames < 1 && ct_now_ms() < until)
        clothd_poll(c, 20, NULL, NULL);
    CHECK(w.frames == 1 && w.quantized);

    ct_proxy_cut(proxy);
    ct_sleep_ms(50);
    clothd_code rc = clothd_ping(c, &err);
    CHECK(rc == CLOTHD_E_CLOSED && err.reconnecting, "the request in flight: %s (%s)", clothd_code_name(rc),
          err.message);
    CHECK(clothd_link_state(c) == CLOTHD_LINK_RECONNECTING && clothd_fd(c) == CLOTHD_NO_SOCKET);
    clothd_ticket t;
    rc = clothd_send_ping(c, &t, &err);
    CHECK(rc == CLOTHD_E_CLOSED && err.reconnecting, "send_* does not wait for the reconnect");
    CHECK(clothd_ping(c, &err) == CLOTHD_OK, "a blocking call waits for it: %s", err.message);
    CHECK(clothd_link_state(c) == CLOTHD_LINK_CONNECTED && clothd_get_client_stats(c).reconnects == 1);
    CHECK(clothd_access_granted(c) == CLOTHD_ACCESS_FULL, "authenticated again");
    int before = w.frames;
    clothd_step_options st;
    memset(&st, 0, sizeof st);
    st.instance = cl.instance;
    CHECK(clothd_step(direct, &st, NULL, &err) == CLOTHD_OK);
    until = ct_now_ms() + 3000;
    while (w.last < 1 && ct_now_ms() < until)
        clothd_poll(c, 20, NULL, NULL);
    CHECK(w.frames > before && w.last == 1 && w.quantized, "frames flow again, still quantized");

    /* The server restarts (same port) without the instance: the renewed
     * subscription is refused and reported. */
    clothd_close(direct);
    direct = NULL;
    uint16_t port = s.port;
    CHECK(ct_server_stop(&s) == 0);
    CHECK(ct_server_start(&s, args, port), "restart on port %u", (unsigned)port);
    until = ct_now_ms() + 5000;
    while (w.failed == 0 && ct_now_ms() < until)
        clothd_poll(c, 20, NULL, NULL);
    CHECK(w.failed == 1 && w.failed_code == CLOTHD_E_NOT_FOUND, "resubscribe_failed reported (%d)", w.failed);
    CHECK(clothd_ping(c, &err) == CLOTHD_OK && clothd_get_client_stats(c).reconnects == 2, "%s", err.message);
out:
    clothd_close(c);
    clothd_close(direct);
    ct_proxy_stop(proxy);
    CHECK(ct_server_stop(&s) == 0);
    remove(token_file);
}

const ct_test ct_connection_tests[] = {
    {"connection: a server killed mid-request fails every request at once", a_server_killed_mid_request_should_fail_every_request, 0},
    {"connection: a broken server gives a clear error", a_broken_server_should_give_a_clear_error, 0},
    {"connection: a silent server times out", a_silent_server_should_time_out, 0},
    {"connection: the connection limit says why it closed", the_connection_limit_should_say_why_it_closed, 0},
    {"connection: reconnect restores auth and subscriptions", a_reconnect_should_restore_auth_and_subscriptions, 30},
    {NULL, NULL, 0},
};
