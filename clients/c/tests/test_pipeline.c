/* Pipelining: many requests on the wire before any reply is read, replies
 * collected later, in order or not, with or without tickets; and the game
 * loop's own poll set: clothd_fd + clothd_wants in poll(2), clothd_poll(0)
 * when it fires, clothd_ready before a recv that then never waits. */
#include "harness.h"

#include <poll.h>
#include <string.h>

static clothd_instance small_cloth(clothd_client *c)
{
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(4);
    o.height = clothd_i(4);
    clothd_created cl = {{0}, 0, 0};
    clothd_error err;
    if (clothd_create_cloth(c, &o, &cl, &err) != CLOTHD_OK)
        ct_fail(__FILE__, __LINE__, "create", "%s", err.message);
    return cl.instance;
}

static void many_requests_should_be_answered_in_order(void)
{
    clothd_client *c = ct_connect(0, NULL);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_instance inst = small_cloth(c);
    enum { N = 500 };
    static clothd_ticket steps[N], pins[N];
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    clothd_pin_options po;
    memset(&po, 0, sizeof po);
    po.particle = clothd_u(0);
    int64_t t0 = ct_now_ms();
    for (int i = 0; i < N; i++) {
        po.position = clothd_v3(0.001f * (float)i, 0, 0); /* a pin moved every tick */
        REQUIRE_OK(clothd_send_pin(c, inst, &po, &pins[i], &err), err);
        REQUIRE_OK(clothd_send_step(c, &so, &steps[i], &err), err);
    }
    CHECK(clothd_outstanding(c) == 2 * N);
    clothd_ticket get_t;
    REQUIRE_OK(clothd_send_get(c, inst, &get_t, &err), err);
    /* The last first: everything before it is kept meanwhile. */
    clothd_instance_state st;
    REQUIRE_OK(clothd_recv_get(c, get_t, NULL, &st, &err), err);
    CHECK(st.frame == N, "the get after %d steps sees frame %llu", N, (unsigned long long)st.frame);
    CHECK(st.positions[0] == 0.001f * (N - 1), "the last pin's position");
    clothd_instance_state_free(&st);
    for (int i = 0; i < N; i++) {
        uint32_t pinned = 0;
        REQUIRE_OK(clothd_recv_count(c, pins[i], &pinned, &err), err);
        clothd_step_result r;
        REQUIRE_OK(clothd_recv_step(c, steps[i], &r, &err), err);
        CHECK(pinned == 1 && r.stepped == 1);
        clothd_step_result_free(&r);
    }
    int ms = (int)(ct_now_ms() - t0);
    CHECK(clothd_outstanding(c) == 0);
    clothd_client_stats s = clothd_get_client_stats(c);
    printf("     (%d requests pipelined and collected in %d ms)\n", 2 * N + 1, ms);
    CHECK(s.replies >= 2 * N + 1);
    REQUIRE_OK(clothd_destroy(c, inst, &err), err);
    clothd_close(c);
}

static void ticketless_errors_should_be_kept(void)
{
    clothd_client *c = ct_connect(0, NULL);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_instance inst = small_cloth(c);
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    REQUIRE_OK(clothd_send_step(c, &so, NULL, &err), err);
    so.instance = clothd_instance_id(3999999); /* not_found, nobody waiting for it */
    REQUIRE_OK(clothd_send_step(c, &so, NULL, &err), err);
    clothd_ticket late;
    REQUIRE_OK(clothd_send_ping(c, &late, &err), err);
    CHECK(clothd_outstanding(c) == 1, "ticketless requests are not outstanding");
    REQUIRE_OK(clothd_recv(c, late, &err), err);
    CHECK(clothd_get_client_stats(c).async_errors == 1);
    clothd_error kept;
    CHECK(clothd_take_async_error(c, &kept) && kept.code == CLOTHD_E_NOT_FOUND &&
              strstr(kept.message, "3999999") != NULL,
          "%s", kept.message);
    CHECK(!clothd_take_async_error(c, &kept));
    /* A ticket given up on: its reply is dropped when it comes. */
    clothd_ticket t;
    REQUIRE_OK(clothd_send_get(c, inst, &t, &err), err);
    clothd_discard(c, t);
    CHECK(clothd_outstanding(c) == 0);
    REQUIRE_OK(clothd_ping(c, &err), err);
    REQUIRE_OK(clothd_destroy(c, inst, &err), err);
    clothd_close(c);
}

static void the_game_loops_poll_set_should_drive_the_client(void)
{
    clothd_client *c = ct_connect(0, NULL);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_instance inst = small_cloth(c);
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    int ready_ticks = 0;
    for (int tick = 0; tick < 20; tick++) {
        clothd_ticket t;
        REQUIRE_OK(clothd_send_step(c, &so, &t, &err), err);
        CHECK(clothd_fd(c) != CLOTHD_NO_SOCKET && (clothd_wants(c) & CLOTHD_WANT_READ));
        int64_t until = ct_now_ms() + 3000;
        while (!clothd_ready(c, t) && ct_now_ms() < until) {
            struct pollfd pfd = {clothd_fd(c), POLLIN, 0};
            if (clothd_wants(c) & CLOTHD_WANT_WRITE)
                pfd.events |= POLLOUT;
            if (poll(&pfd, 1, 1000) > 0)
                REQUIRE_OK(clothd_poll(c, 0, NULL, &err), err);
        }
        ready_ticks += clothd_ready(c, t);
        int64_t t0 = ct_now_ms();
        clothd_step_result r;
        REQUIRE_OK(clothd_recv_step(c, t, &r, &err), err);
        CHECK(ct_now_ms() - t0 < 50, "a ready reply is collected without waiting");
        CHECK(r.stepped == 1);
        clothd_step_result_free(&r);
    }
    CHECK(ready_ticks == 20);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, inst, NULL, &st, &err), err);
    CHECK(st.frame == 20);
    clothd_instance_state_free(&st);
    REQUIRE_OK(clothd_flush(c, &err), err);
    CHECK(clothd_wants(c) == CLOTHD_WANT_READ, "nothing left to write");
    REQUIRE_OK(clothd_destroy(c, inst, &err), err);
    clothd_close(c);
}

const ct_test ct_pipeline_tests[] = {
    {"pipeline: 1001 requests answered in order, collected in any order", many_requests_should_be_answered_in_order, 0},
    {"pipeline: ticketless errors are kept, discarded tickets dropped", ticketless_errors_should_be_kept, 0},
    {"pipeline: the game loop's poll set drives the client", the_game_loops_poll_set_should_drive_the_client, 0},
    {NULL, NULL, 0},
};
