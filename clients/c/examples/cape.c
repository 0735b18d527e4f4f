/* A game server's loop driving clothd: a cape on a character who walks
 * along +x at 1.2 m/s, at 60 ticks a second.
 *
 * The character's body is a capsule collider; its shoulders are a named
 * transform that the cape's top row is attached to. Each tick the loop
 * queues three requests without waiting (move the shoulders, move the
 * capsule, step), collects the previous tick's step reply when it is there
 * (clothd_ready), and spends the rest of the tick in clothd_poll, which
 * reads the cape's frames straight into `cape` (a frame target). At the end
 * it prints facts a person can check: the cape hangs from the shoulders,
 * trails behind the walking body, and never enters it.
 *
 *   cape [--host H] [--port P] [--token-file F] [--seconds S] [--fast]
 *
 * --fast runs the ticks back to back instead of at 60 Hz. Exit 0 when the
 * run went through, 1 on an error (printed), 2 on bad usage. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clothd/client.h>

#define COLS 12            /* across the shoulders */
#define ROWS 16            /* down the back */
#define SPACING 0.05f
#define SPEED 1.2f         /* m/s along +x */
#define BODY_RADIUS 0.2f
#define BODY_HEIGHT 1.7f   /* the capsule, caps included */
#define SHOULDER_Y 1.45f

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *what, const clothd_error *err)
{
    fprintf(stderr, "cape: %s: %s: %s\n", what, clothd_code_name(err->code), err->message);
    return 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: cape [--host H] [--port P] [--token-file F] [--seconds S] [--fast]\n");
    return 2;
}

static char *read_token(const char *path)
{
    static char token[1100];
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(token, sizeof token, f) == NULL) {
        if (f)
            fclose(f);
        return NULL;
    }
    fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
    return token;
}

int main(int argc, char **argv)
{
    clothd_options opt = clothd_options_default();
    opt.token_from_env = true;
    double seconds = 3.0;
    int fast = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--fast") == 0) {
            fast = 1;
        } else if (v != NULL && strcmp(a, "--host") == 0) {
            opt.host = v;
            i++;
        } else if (v != NULL && strcmp(a, "--port") == 0) {
            opt.port = (uint16_t)atoi(v);
            i++;
        } else if (v != NULL && strcmp(a, "--seconds") == 0) {
            seconds = atof(v);
            i++;
        } else if (v != NULL && strcmp(a, "--token-file") == 0) {
            if ((opt.token = read_token(v)) == NULL) {
                fprintf(stderr, "cape: cannot read a token from %s\n", v);
                return 2;
            }
            i++;
        } else {
            return usage();
        }
    }
    if (seconds <= 0 || seconds > 600)
        return usage();

    clothd_client *c = NULL;
    clothd_error err;
    if (clothd_connect(&opt, &c, &err) != CLOTHD_OK)
        return fail("connect", &err);

    /* The cape: a COLS x ROWS sheet hanging down (-y) behind the body (-x). */
    clothd_cloth_options co = clothd_cloth_default();
    co.width = clothd_i(COLS);
    co.height = clothd_i(ROWS);
    co.spacing = clothd_f(SPACING);
    co.origin = clothd_v3(-BODY_RADIUS - 0.03f, SHOULDER_Y, -0.5f * SPACING * (COLS - 1));
    co.right = clothd_v3(0, 0, 1);
    co.down = clothd_v3(0, -1, 0);
    co.material.mass = clothd_f(0.4f);
    co.material.substeps = clothd_i(4);
    co.material.thickness = clothd_f(0.01f);
    clothd_created cape_id;
    if (clothd_create_cloth(c, &co, &cape_id, &err) != CLOTHD_OK)
        return fail("create", &err);
    clothd_instance cape = cape_id.instance;

    /* The body, and the shoulders the top row hangs from. */
    clothd_collider_options body;
    memset(&body, 0, sizeof body);
    body.type = CLOTHD_COLLIDER_CAPSULE;
    body.position = clothd_v3(0, BODY_HEIGHT / 2, 0);
    body.normal = clothd_v3(0, 1, 0);
    body.radius = clothd_f(BODY_RADIUS);
    body.height = clothd_f(BODY_HEIGHT);
    body.friction = clothd_f(0.3f);
    clothd_collider capsule;
    clothd_transform_options shoulders;
    memset(&shoulders, 0, sizeof shoulders);
    shoulders.position = clothd_v3(0, SHOULDER_Y, 0);
    uint32_t top[COLS];
    for (uint32_t i = 0; i < COLS; i++)
        top[i] = i;
    clothd_attach_options ao;
    memset(&ao, 0, sizeof ao);
    ao.particles = top;
    ao.particle_count = COLS;
    if (clothd_add_collider(c, cape, &body, &capsule, &err) != CLOTHD_OK ||
        clothd_transform(c, cape, "shoulders", &shoulders, &err) != CLOTHD_OK ||
        clothd_attach(c, cape, "shoulders", &ao, NULL, &err) != CLOTHD_OK)
        return fail("set-up", &err);

    /* Frames land in this array, decoded in place by clothd_poll. */
    static float positions[3 * COLS * ROWS];
    clothd_frame_target frames;
    memset(&frames, 0, sizeof frames);
    frames.positions = positions;
    frames.capacity = COLS * ROWS;
    clothd_subscribe_options so;
    memset(&so, 0, sizeof so);
    so.instance = cape;
    if (clothd_set_frame_target(c, cape, &frames, &err) != CLOTHD_OK ||
        clothd_subscribe(c, &so, NULL, &err) != CLOTHD_OK)
        return fail("subscribe", &err);

    const double dt = 1.0 / 60;
    const int ticks = (int)(seconds * 60 + 0.5);
    clothd_step_options step;
    memset(&step, 0, sizeof step);
    step.dt = clothd_f((float)dt);
    step.instance = cape;
    clothd_ticket pending = 0;
    int acknowledged = 0, late = 0, inside = 0;
    float min_axis = 1e9f;
    double next = now_s();
    for (int tick = 1; tick <= ticks; tick++) {
        /* Last tick's step: collect it if it came, else note it is late. */
        if (pending != 0) {
            if (!clothd_ready(c, pending))
                late++;
            clothd_step_result r;
            if (clothd_recv_step(c, pending, &r, &err) != CLOTHD_OK)
                return fail("step", &err);
            acknowledged += (int)r.stepped;
            clothd_step_result_free(&r);
        }
        /* Move the character, then step: three requests, no waiting. */
        float x = SPEED * (float)(tick * dt);
        shoulders.position = clothd_v3(x, SHOULDER_Y, 0);
        clothd_move_options mo;
        memset(&mo, 0, sizeof mo);
        mo.position = clothd_v3(x, BODY_HEIGHT / 2, 0);
        if (clothd_send_transform(c, cape, "shoulders", &shoulders, NULL, &err) != CLOTHD_OK ||
            clothd_send_move_collider(c, cape, capsule, &mo, NULL, &err) != CLOTHD_OK ||
            clothd_send_step(c, &step, &pending, &err) != CLOTHD_OK)
            return fail("send", &err);
        /* The rest of the tick: read frames (and replies) as they come. */
        next += dt;
        do {
            double left = fast ? 0 : next - now_s();
            if (clothd_poll(c, left > 0 ? (int)(left * 1000) : 0, NULL, &err) != CLOTHD_OK)
                return fail("poll", &err);
        } while (!fast && now_s() < next);
        /* What the latest frame shows, against where the body is now. */
        for (uint32_t i = 0; i < frames.count && frames.updates > 0; i++) {
            const float *p = &positions[3 * i];
            float axis = hypotf(p[0] - x, p[2]);
            if (i >= COLS) /* the attached row sits on the shoulders by design */
                min_axis = fminf(min_axis, axis);
            if (i >= COLS && p[1] > 0.02f && p[1] < BODY_HEIGHT - 0.02f && axis < BODY_RADIUS - 0.02f)
                inside++;
        }
    }
    clothd_step_result r;
    if (clothd_recv_step(c, pending, &r, &err) != CLOTHD_OK)
        return fail("step", &err);
    acknowledged += (int)r.stepped;
    clothd_step_result_free(&r);
    double until = now_s() + 5;
    while (frames.frame < (uint64_t)ticks && now_s() < until)
        clothd_poll(c, 20, NULL, NULL);

    float cx = 0, cy = 0, final_low = 1e9f;
    for (uint32_t i = 0; i < frames.count; i++) {
        cx += positions[3 * i];
        cy += positions[3 * i + 1];
        final_low = fminf(final_low, positions[3 * i + 1]);
    }
    cx /= (float)frames.count;
    cy /= (float)frames.count;
    float body_x = SPEED * (float)(ticks * dt);
    clothd_client_stats st = clothd_get_client_stats(c);
    printf("ticks: %d at %s, steps acknowledged: %d, late replies: %d\n", ticks, fast ? "full speed" : "60 Hz",
           acknowledged, late);
    printf("frames received: %llu, last frame: %llu\n", (unsigned long long)frames.updates,
           (unsigned long long)frames.frame);
    printf("capsule at x=%.3f; cape centre x=%.3f y=%.3f\n", body_x, cx, cy);
    printf("cape trails the capsule by %.3f m\n", body_x - cx);
    printf("cape lowest point: y=%.3f (shoulders at %.2f, cape %.2f m long)\n", final_low, SHOULDER_Y,
           SPACING * (ROWS - 1));
    printf("closest to the body's axis: %.3f m (radius %.2f); particle-ticks inside the body: %d\n", min_axis,
           BODY_RADIUS, inside);
    printf("requests: %llu, replies: %llu, bytes in: %llu, errors of ticketless requests: %llu\n",
           (unsigned long long)st.requests, (unsigned long long)st.replies, (unsigned long long)st.bytes_in,
           (unsigned long long)st.async_errors);
    while (clothd_take_async_error(c, &err))
        fprintf(stderr, "cape: a queued request failed: %s: %s\n", clothd_code_name(err.code), err.message);
    clothd_destroy(c, cape, NULL);
    clothd_close(c);
    return 0;
}
