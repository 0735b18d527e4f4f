/* Scenes and lifetimes through libclothd against the real server: create
 * in a scene (and ephemeral), step and status by scene, a scene's
 * subscription (its later instances too, renewed after a reconnect),
 * destroy by scene, a held scene and an ephemeral instance gone with
 * their connection. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clothd_created make(clothd_client *c, const char *scene, bool ephemeral)
{
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(3);
    o.height = clothd_i(3);
    o.material.sleep_threshold = clothd_f(0);
    o.scene = scene;
    o.ephemeral = ephemeral;
    clothd_created out;
    clothd_error err;
    memset(&out, 0, sizeof out);
    if (clothd_create_cloth(c, &o, &out, &err) != CLOTHD_OK)
        ct_fail(__FILE__, __LINE__, "create", "%s", err.message);
    return out;
}

/* The summary of `id` in a status of `scene` (NULL: all); found or not. */
static bool summary(clothd_client *c, const char *scene, clothd_instance id, clothd_instance_summary *out)
{
    clothd_status st;
    clothd_error err;
    if (clothd_get_status_scene(c, scene, &st, &err) != CLOTHD_OK)
        return false;
    bool found = false;
    for (size_t i = 0; i < st.instance_count && !found; i++)
        if (st.instances[i].instance.id == id.id) {
            *out = st.instances[i];
            found = true;
        }
    clothd_status_free(&st);
    return found;
}

static void step_status_and_destroy_should_select_by_scene(void)
{
    clothd_client *c = ct_connect(0, NULL);
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created a = make(c, "c-a", false), b = make(c, "c-b", false);
    clothd_step_options step = {.scene = "c-a"};
    clothd_step_result r;
    REQUIRE_OK(clothd_step(c, &step, &r, &err), err);
    CHECK(r.stepped == 1, "stepped %u", r.stepped);
    clothd_step_result_free(&r);
    clothd_instance_summary s;
    REQUIRE(summary(c, "c-a", a.instance, &s));
    CHECK(strcmp(s.scene, "c-a") == 0 && s.frame == 1 && !s.ephemeral, "%s %llu", s.scene,
          (unsigned long long)s.frame);
    CHECK(!summary(c, "c-a", b.instance, &s), "status of c-a lists only c-a");
    REQUIRE(summary(c, NULL, b.instance, &s));
    CHECK(s.frame == 0 && strcmp(s.scene, "c-b") == 0, "c-b did not step: frame %llu", (unsigned long long)s.frame);
    /* a listed instance of another scene is not_found */
    clothd_step_options wrong = {.instance = b.instance, .scene = "c-a"};
    CHECK(clothd_step(c, &wrong, NULL, &err) == CLOTHD_E_NOT_FOUND, "%s", err.message);
    char want[96];
    snprintf(want, sizeof want, "instance: instance %u is not in scene \"c-a\"", b.instance.id);
    CHECK(strcmp(err.message, want) == 0, "%s", err.message);
    clothd_instance *ids = NULL;
    size_t n = 0;
    REQUIRE_OK(clothd_destroy_scene(c, "c-a", &ids, &n, &err), err);
    CHECK(n == 1 && ids != NULL && ids[0].id == a.instance.id, "destroyed %zu", n);
    clothd_free(ids);
    REQUIRE_OK(clothd_destroy_scene(c, "c-a", &ids, &n, &err), err);
    CHECK(n == 0 && ids == NULL, "an empty scene: nothing, no error");
    REQUIRE_OK(clothd_destroy(c, b.instance, &err), err);
    clothd_close(c);
}

typedef struct seen {
    int frames;
    uint32_t last_instance;
} seen;

static void on_frame(void *user, const clothd_frame *f)
{
    seen *s = user;
    s->frames++;
    s->last_instance = f->instance.id;
}

static void a_scene_subscription_should_follow_the_scene_across_a_reconnect(void)
{
    seen s = {0, 0};
    ct_proxy *proxy = ct_proxy_start(ct_main_server.port);
    REQUIRE(proxy != NULL);
    clothd_options o = clothd_options_default();
    o.port = ct_proxy_port(proxy);
    o.on_frame = on_frame;
    o.user = &s;
    o.reconnect = true;
    o.reconnect_timeout_ms = 5000;
    clothd_client *viewer = NULL;
    clothd_error err;
    REQUIRE_OK(clothd_connect(&o, &viewer, &err), err);
    clothd_client *c = ct_connect(0, NULL);
    REQUIRE(c != NULL);
    clothd_subscribe_options sub = {.scene = "c-sub"};
    clothd_subscribed got;
    REQUIRE_OK(clothd_subscribe(viewer, &sub, &got, &err), err);
    CHECK(!got.all && got.instance_count == 0, "a scene with no instance yet");
    clothd_created later = make(c, "c-sub", false), other = make(c, "c-other", false);
    clothd_instance both[2] = {later.instance, other.instance};
    clothd_step_options step = {.instances = both, .instance_count = 2};
    REQUIRE_OK(clothd_step(c, &step, NULL, &err), err);
    int64_t until = ct_now_ms() + 3000;
    while (s.frames < 2 && ct_now_ms() < until)
        clothd_poll(viewer, 20, NULL, NULL);
    CHECK(s.frames == 2 && s.last_instance == later.instance.id, "frames %d of %u", s.frames, s.last_instance);
    /* The viewer's connection is cut: the client renews the scene's
     * subscription by name on its new connection. */
    s.frames = 0;
    ct_proxy_cut(proxy);
    ct_sleep_ms(50);
    clothd_ping(viewer, &err); /* the request in flight when the cut is seen */
    REQUIRE_OK(clothd_ping(viewer, &err), err);
    CHECK(clothd_get_client_stats(viewer).reconnects == 1, "reconnected once");
    REQUIRE_OK(clothd_step(c, &step, NULL, &err), err);
    until = ct_now_ms() + 3000;
    while (s.frames < 2 && ct_now_ms() < until) /* the current frame after the renewal, then the step's */
        clothd_poll(viewer, 20, NULL, NULL);
    CHECK(s.frames == 2 && s.last_instance == later.instance.id, "after the reconnect: %d frames", s.frames);
    clothd_subscribe_options unsub = {.scene = "c-sub"};
    REQUIRE_OK(clothd_unsubscribe(viewer, &unsub, &err), err);
    REQUIRE_OK(clothd_destroy(c, later.instance, &err), err);
    REQUIRE_OK(clothd_destroy(c, other.instance, &err), err);
    clothd_close(viewer);
    clothd_close(c);
    ct_proxy_stop(proxy);
}

static void ephemeral_instances_and_held_scenes_should_go_with_their_connection(void)
{
    clothd_client *owner = ct_connect(0, NULL), *c = ct_connect(0, NULL);
    REQUIRE(owner != NULL && c != NULL);
    clothd_error err;
    clothd_created mine = make(owner, NULL, true);
    bool held = false;
    size_t count = 9;
    REQUIRE_OK(clothd_scene(owner, "c-match", clothd_b(true), &held, &count, &err), err);
    CHECK(held && count == 0, "held %d, %zu instances", held, count);
    clothd_created guest = make(c, "c-match", false), kept = make(c, NULL, false);
    clothd_instance_summary s;
    REQUIRE(summary(c, NULL, mine.instance, &s));
    CHECK(s.ephemeral && strcmp(s.scene, "default") == 0, "ephemeral %d in %s", s.ephemeral, s.scene);
    REQUIRE(summary(c, "c-match", guest.instance, &s));
    CHECK(s.ephemeral, "its scene's tie");
    clothd_close(owner);
    int64_t until = ct_now_ms() + 5000;
    while ((summary(c, NULL, mine.instance, &s) || summary(c, NULL, guest.instance, &s)) && ct_now_ms() < until)
        ct_sleep_ms(20);
    CHECK(!summary(c, NULL, mine.instance, &s) && !summary(c, NULL, guest.instance, &s), "both destroyed");
    CHECK(summary(c, NULL, kept.instance, &s), "a plain instance stays");
    REQUIRE_OK(clothd_scene(c, "c-match", (clothd_opt_b){false, false}, &held, &count, &err), err);
    CHECK(!held && count == 0, "the scene is gone");
    REQUIRE_OK(clothd_destroy(c, kept.instance, &err), err);
    clothd_close(c);
}

const ct_test ct_scene_tests[] = {
    {"scenes: step, status and destroy select by scene", step_status_and_destroy_should_select_by_scene, 0},
    {"scenes: a scene's subscription follows it, renewed after a reconnect",
     a_scene_subscription_should_follow_the_scene_across_a_reconnect, 0},
    {"scenes: ephemeral instances and held scenes go with their connection",
     ephemeral_instances_and_held_scenes_should_go_with_their_connection, 0},
    {NULL, NULL, 0},
};
