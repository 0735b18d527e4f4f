/* Frames and events as a game loop sees them: a target array filled in
 * place (plain frames bit for bit what `get` says; quantized ones within
 * half a quantization step), `every` decimating, the callback, "all"
 * including instances created later, events from another client, a target
 * too small, and a slow reader with a tiny receive buffer that the server
 * skips frames for: it still reads whole frames, in order, up to the last;
 * velocities and normals in a target of their own. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct seen {
    int frames;
    uint64_t last_frame;
    bool in_order;
    bool had_positions;
    uint32_t last_instance;
    int events;
    char last_event[32];
    float wind[3];
    bool enabled;
    int resubscribe_failed;
} seen;

static void on_frame(void *user, const clothd_frame *f)
{
    seen *s = user;
    if (s->frames > 0 && f->instance.id == s->last_instance && f->frame <= s->last_frame)
        s->in_order = false;
    s->frames++;
    s->last_frame = f->frame;
    s->last_instance = f->instance.id;
    s->had_positions = f->positions != NULL;
}

static void on_event(void *user, const clothd_event *e)
{
    seen *s = user;
    s->events++;
    snprintf(s->last_event, sizeof s->last_event, "%s", e->name);
    memcpy(s->wind, e->wind, sizeof s->wind);
    s->enabled = e->enabled;
    if (strcmp(e->name, "resubscribe_failed") == 0)
        s->resubscribe_failed++;
}

static clothd_client *connect_seen(uint16_t port, seen *s, int rcvbuf)
{
    memset(s, 0, sizeof *s);
    s->in_order = true;
    clothd_options o = clothd_options_default();
    o.port = port ? port : ct_main_server.port;
    o.on_frame = on_frame;
    o.on_event = on_event;
    o.user = s;
    o.rcvbuf = rcvbuf;
    return ct_connect_with(&o);
}

/* Pinned by its top row; it never falls asleep (a sleeping instance sends
 * no frames, and a curtain hanging at rest sleeps after a second). */
static clothd_instance hanging_cloth(clothd_client *c, int w, int h)
{
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(w);
    o.height = clothd_i(h);
    o.spacing = clothd_f(0.1f);
    o.origin = clothd_v3(0, 2, 0);
    o.material.sleep_threshold = clothd_f(0);
    clothd_created cl = {{0}, 0, 0};
    clothd_error err;
    if (clothd_create_cloth(c, &o, &cl, &err) != CLOTHD_OK)
        ct_fail(__FILE__, __LINE__, "create", "%s", err.message);
    uint32_t *top = malloc((size_t)w * sizeof *top);
    for (int i = 0; i < w; i++)
        top[i] = (uint32_t)i;
    clothd_pin_options p;
    memset(&p, 0, sizeof p);
    p.particles = top;
    p.particle_count = (size_t)w;
    clothd_pin(c, cl.instance, &p, NULL, &err);
    free(top);
    return cl.instance;
}

static void step_n(clothd_client *c, clothd_instance inst, int n)
{
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    clothd_error err;
    for (int i = 0; i < n; i++)
        if (clothd_send_step(c, &so, NULL, &err) != CLOTHD_OK)
            ct_fail(__FILE__, __LINE__, "step", "%s", err.message);
    clothd_ping(c, &err); /* after all the steps */
}

static void a_target_should_hold_what_get_says(void)
{
    seen s;
    clothd_client *c = connect_seen(0, &s, 0);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_instance inst = hanging_cloth(c, 4, 4);
    float pos[3 * 16];
    clothd_frame_target t;
    memset(&t, 0, sizeof t);
    t.positions = pos;
    t.capacity = 16;
    REQUIRE_OK(clothd_set_frame_target(c, inst, &t, &err), err);
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    clothd_subscribed sub;
    REQUIRE_OK(clothd_subscribe(c, &so, &sub, &err), err);
    CHECK(!sub.all && sub.instance_count == 1);
    POLL_UNTIL(c, t.updates >= 1, 3000);
    CHECK(t.updates == 1 && t.frame == 0 && t.count == 16 && !t.quantized, "the current frame follows the reply");
    step_n(c, inst, 5);
    POLL_UNTIL(c, t.frame == 5, 3000);
    CHECK(t.frame == 5 && t.updates == 6, "frame %llu after %llu updates", (unsigned long long)t.frame,
          (unsigned long long)t.updates);
    CHECK(s.frames == 6 && s.in_order && s.had_positions, "the callback saw %d frames", s.frames);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, inst, NULL, &st, &err), err);
    CHECK(st.frame == t.frame && memcmp(st.positions, pos, sizeof pos) == 0, "plain frames are exact");
    CHECK(pos[1] == 2.0f && pos[3 * 15 + 1] < 1.7001f, "the top row pinned at 2, the bottom row hanging 0.3 below it (%g)",
          (double)pos[3 * 15 + 1]);
    clothd_instance_state_free(&st);

    /* Quantized, every 2nd frame: the same target, now 16 bits per axis. */
    so.quantize = clothd_b(true);
    so.every = clothd_i(2);
    REQUIRE_OK(clothd_subscribe(c, &so, NULL, &err), err);
    POLL_UNTIL(c, t.updates >= 7, 3000);
    int before = s.frames;
    step_n(c, inst, 4);
    POLL_UNTIL(c, t.frame == 9 || s.frames >= before + 2, 3000);
    ct_sleep_ms(50);
    clothd_poll(c, 0, NULL, NULL);
    CHECK(s.frames == before + 2 && t.frame == 8 && t.quantized, "frames 6 and 8 only: %d frames, last %llu",
          s.frames - before, (unsigned long long)t.frame);
    REQUIRE_OK(clothd_unsubscribe(c, NULL, &err), err);
    REQUIRE_OK(clothd_set_frame_target(c, inst, NULL, &err), err);
    REQUIRE_OK(clothd_destroy(c, inst, &err), err);
    clothd_close(c);
}

static void quantized_frames_should_be_within_half_a_step(void)
{
    seen s;
    clothd_client *c = connect_seen(0, &s, 0);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_instance inst = hanging_cloth(c, 8, 8);
    step_n(c, inst, 10);
    float pos[3 * 64];
    clothd_frame_target t;
    memset(&t, 0, sizeof t);
    t.positions = pos;
    t.capacity = 64;
    REQUIRE_OK(clothd_set_frame_target(c, inst, &t, &err), err);
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    so.quantize = clothd_b(true);
    REQUIRE_OK(clothd_subscribe(c, &so, NULL, &err), err);
    POLL_UNTIL(c, t.updates >= 1, 3000);
    REQUIRE(t.updates == 1 && t.quantized && t.frame == 10, "the current frame, quantized");
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, inst, NULL, &st, &err), err);
    REQUIRE(st.frame == 10);
    for (int k = 0; k < 3; k++) {
        float lo = 1e9f, hi = -1e9f;
        for (int i = k; i < 192; i += 3) {
            lo = fminf(lo, st.positions[i]);
            hi = fmaxf(hi, st.positions[i]);
        }
        double tol = ((double)hi - lo) / 65535 / 2 + 1e-6;
        for (int i = k; i < 192; i += 3)
            CHECK(fabs((double)pos[i] - st.positions[i]) <= tol, "axis %d particle %d: %.9g vs %.9g", k, i / 3,
                  (double)pos[i], (double)st.positions[i]);
    }
    clothd_instance_state_free(&st);
    REQUIRE_OK(clothd_destroy(c, inst, &err), err);
    clothd_close(c);
}

static void all_should_include_instances_created_later(void)
{
    seen s;
    clothd_client *c = connect_seen(0, &s, 0);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_subscribed sub;
    REQUIRE_OK(clothd_subscribe(c, NULL, &sub, &err), err);
    CHECK(sub.all);
    clothd_poll(c, 100, NULL, NULL); /* the current frames of what exists */
    int before = s.frames;
    clothd_created cl;
    REQUIRE_OK(clothd_create_cloth(c, NULL, &cl, &err), err);
    POLL_UNTIL(c, s.frames > before && s.last_instance == cl.instance.id, 3000);
    CHECK(s.last_instance == cl.instance.id && s.last_frame == 0, "frame 0 of the new instance");
    CHECK(!s.had_positions, "no target: the callback gets the header and the payload only");
    REQUIRE_OK(clothd_unsubscribe(c, NULL, &err), err);
    clothd_poll(c, 50, NULL, NULL);
    before = s.frames;
    step_n(c, cl.instance, 3);
    clothd_poll(c, 100, NULL, NULL);
    CHECK(s.frames == before, "no frame after unsubscribing (%d)", s.frames - before);
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    clothd_close(c);
}

static void events_should_reach_a_subscriber(void)
{
    seen s;
    clothd_client *viewer = connect_seen(0, &s, 0);
    clothd_client *editor = ct_connect(0, NULL);
    REQUIRE(viewer != NULL && editor != NULL);
    clothd_error err;
    clothd_created cl;
    REQUIRE_OK(clothd_create_cloth(editor, NULL, &cl, &err), err);
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = cl.instance;
    REQUIRE_OK(clothd_subscribe(viewer, &so, NULL, &err), err);
    REQUIRE_OK(clothd_wind(editor, clothd_instance_id(0), (float[]){0.5f, 0, 0.25f}, NULL, &err), err);
    POLL_UNTIL(viewer, s.events >= 1, 3000);
    CHECK(strcmp(s.last_event, "wind") == 0 && s.wind[0] == 0.5f && s.wind[2] == 0.25f, "event %s", s.last_event);
    REQUIRE_OK(clothd_debug(editor, clothd_b(true), NULL, &err), err);
    POLL_UNTIL(viewer, s.events >= 2, 3000);
    CHECK(strcmp(s.last_event, "debug") == 0 && s.enabled, "event %s", s.last_event);
    REQUIRE_OK(clothd_debug(editor, clothd_b(false), NULL, &err), err);
    REQUIRE_OK(clothd_wind(editor, clothd_instance_id(0), (float[]){0, 0, 0}, NULL, &err), err);
    REQUIRE_OK(clothd_destroy(editor, cl.instance, &err), err);
    CHECK(clothd_get_client_stats(viewer).events >= 2);
    clothd_close(viewer);
    clothd_close(editor);
}

static void a_target_too_small_should_be_left_alone(void)
{
    seen s;
    clothd_client *c = connect_seen(0, &s, 0);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_instance inst = hanging_cloth(c, 4, 4);
    float pos[3 * 4] = {0};
    clothd_frame_target t;
    memset(&t, 0, sizeof t);
    t.positions = pos;
    t.capacity = 4;
    REQUIRE_OK(clothd_set_frame_target(c, inst, &t, &err), err);
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    REQUIRE_OK(clothd_subscribe(c, &so, NULL, &err), err);
    POLL_UNTIL(c, s.frames >= 1, 3000);
    CHECK(t.too_small == 1 && t.updates == 0 && !s.had_positions && pos[0] == 0, "16 particles do not fit 4");
    REQUIRE_OK(clothd_destroy(c, inst, &err), err);
    clothd_close(c);
}

/* A reader with a 4 KiB receive buffer that reads only now and then, while
 * another client steps a 64 x 64 cloth (49 KB frames) 300 times. */
static void a_slow_reader_should_get_whole_frames_in_order(void)
{
    seen s;
    clothd_client *slow = connect_seen(0, &s, 4096);
    clothd_client *fast = ct_connect(0, NULL);
    REQUIRE(slow != NULL && fast != NULL);
    clothd_error err;
    clothd_instance inst = hanging_cloth(fast, 64, 64);
    float *pos = calloc(3 * 4096, sizeof *pos);
    clothd_frame_target t;
    memset(&t, 0, sizeof t);
    t.positions = pos;
    t.capacity = 4096;
    REQUIRE_OK(clothd_set_frame_target(slow, inst, &t, &err), err);
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    REQUIRE_OK(clothd_subscribe(slow, &so, NULL, &err), err);
    clothd_step_options st;
    memset(&st, 0, sizeof st);
    st.instance = inst;
    clothd_ticket last = 0;
    for (int i = 0; i < 300; i++) /* pipelined; only the last reply is collected */
        REQUIRE_OK(clothd_send_step(fast, &st, i == 299 ? &last : NULL, &err), err);
    for (int i = 0; i < 40; i++) { /* the slow reader's slow loop, meanwhile */
        clothd_poll(slow, 0, NULL, NULL);
        ct_sleep_ms(5);
    }
    REQUIRE_OK(clothd_recv(fast, last, &err), err); /* the 300th step is done */
    CHECK(clothd_outstanding(fast) == 0 && clothd_get_client_stats(fast).async_errors == 0);
    POLL_UNTIL(slow, t.frame == 300, 10000);
    CHECK(t.frame == 300, "the slow reader reached the last frame (at %llu)", (unsigned long long)t.frame);
    CHECK(s.in_order && s.frames > 1 && s.frames < 301, "%d frames, in order", s.frames);
    CHECK(t.count == 4096 && t.too_small == 0);
    clothd_instance_state gs;
    REQUIRE_OK(clothd_get(slow, inst, NULL, &gs, &err), err);
    CHECK(gs.frame == 300 && memcmp(gs.positions, pos, 3 * 4096 * sizeof(float)) == 0,
          "the last frame equals the state");
    clothd_instance_state_free(&gs);
    printf("     (slow reader: %d of 301 frames; the server skipped the rest)\n", s.frames);
    REQUIRE_OK(clothd_destroy(fast, inst, &err), err);
    free(pos);
    clothd_close(slow);
    clothd_close(fast);
}

/* Channels: a target with velocity and normal arrays holds what `get`
 * says, bit for bit in plain frames, within the quantization in quantized
 * ones; a target without them still gets the positions. */
static void channels_should_hold_what_get_says(void)
{
    seen s;
    clothd_client *c = connect_seen(0, &s, 0);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_instance inst = hanging_cloth(c, 6, 5);
    REQUIRE_OK(clothd_wind(c, inst, (const float[3]){4, 0, 2}, NULL, &err), err); /* it flaps */
    float pos[3 * 30], vel[3 * 30], nrm[3 * 30];
    clothd_frame_target t;
    memset(&t, 0, sizeof t);
    t.positions = pos;
    t.velocities = vel;
    t.normals = nrm;
    t.capacity = 30;
    REQUIRE_OK(clothd_set_frame_target(c, inst, &t, &err), err);
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = inst;
    so.channels = CLOTHD_CHANNEL_VELOCITIES | CLOTHD_CHANNEL_NORMALS;
    REQUIRE_OK(clothd_subscribe(c, &so, NULL, &err), err);
    step_n(c, inst, 6);
    POLL_UNTIL(c, t.frame == 6, 3000);
    REQUIRE(t.frame == 6 && t.has_velocities && t.has_normals, "frame %llu", (unsigned long long)t.frame);
    clothd_get_options go = {.velocities = true, .normals = true};
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, inst, &go, &st, &err), err);
    REQUIRE(st.velocities != NULL && st.normals != NULL && st.particle_count == 30);
    CHECK(memcmp(st.velocities, vel, sizeof vel) == 0, "plain velocities are exact");
    CHECK(memcmp(st.normals, nrm, sizeof nrm) == 0, "plain normals are exact");
    float fastest = 0;
    for (int i = 0; i < 30; i++) {
        const float *n = &nrm[3 * i];
        CHECK(fabs(sqrt((double)n[0] * n[0] + (double)n[1] * n[1] + (double)n[2] * n[2]) - 1.0) < 1e-6,
              "normal %d is unit", i);
        fastest = fmaxf(fastest, fabsf(vel[3 * i + 2]));
    }
    CHECK(fastest > 0.05f, "the wind moves it (%g m/s)", (double)fastest);
    clothd_instance_state_free(&st);

    /* Quantized: the same target. */
    so.quantize = clothd_b(true);
    REQUIRE_OK(clothd_subscribe(c, &so, NULL, &err), err);
    step_n(c, inst, 1);
    POLL_UNTIL(c, t.frame == 7, 3000);
    REQUIRE(t.frame == 7 && t.quantized && t.has_velocities && t.has_normals);
    REQUIRE_OK(clothd_get(c, inst, &go, &st, &err), err);
    for (int k = 0; k < 3; k++) {
        float lo = 1e9f, hi = -1e9f;
        for (int i = k; i < 90; i += 3) {
            lo = fminf(lo, st.velocities[i]);
            hi = fmaxf(hi, st.velocities[i]);
        }
        for (int i = k; i < 90; i += 3) {
            CHECK(fabs((double)vel[i] - st.velocities[i]) <= ((double)hi - lo) / 65535 / 2 + 1e-6, "velocity %d", i);
            CHECK(fabs((double)nrm[i] - st.normals[i]) <= 1e-4, "normal %d", i);
        }
    }
    clothd_instance_state_free(&st);
    /* Positions only again: the channels are not touched any more. */
    so.channels = 0;
    so.quantize = clothd_b(false);
    REQUIRE_OK(clothd_subscribe(c, &so, NULL, &err), err);
    POLL_UNTIL(c, !t.has_velocities, 3000);
    CHECK(!t.has_velocities && !t.has_normals && !t.quantized);
    REQUIRE_OK(clothd_get(c, inst, NULL, &st, &err), err);
    CHECK(st.velocities == NULL && st.normals == NULL, "not asked for: NULL");
    clothd_instance_state_free(&st);
    REQUIRE_OK(clothd_unsubscribe(c, NULL, &err), err);
    REQUIRE_OK(clothd_set_frame_target(c, inst, NULL, &err), err);
    REQUIRE_OK(clothd_destroy(c, inst, &err), err);
    clothd_close(c);
}

const ct_test ct_subscribe_tests[] = {
    {"subscribe: a target holds what get says; quantize and every", a_target_should_hold_what_get_says, 0},
    {"subscribe: quantized frames within half a step of the state", quantized_frames_should_be_within_half_a_step, 0},
    {"subscribe: all includes instances created later; unsubscribe", all_should_include_instances_created_later, 0},
    {"subscribe: wind and debug events reach a subscriber", events_should_reach_a_subscriber, 0},
    {"subscribe: a target too small is left alone", a_target_too_small_should_be_left_alone, 0},
    {"subscribe: a slow reader gets whole frames in order", a_slow_reader_should_get_whole_frames_in_order, 30},
    {"subscribe: channels hold what get says, plain and quantized", channels_should_hold_what_get_says, 0},
    {NULL, NULL, 0},
};
