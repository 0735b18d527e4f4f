/* Scenes and sharding in libclothd: the rendezvous weights and placements
 * of protocol/placement_vectors.json (which the Python and Node clients
 * check too), a fourth endpoint moving about a quarter of 1,000 scenes and
 * only onto itself, the current scene written on exactly the commands that
 * take one (read off the wire by a fake server), a down endpoint named in
 * the error, a server without scenes refused by name, and scenes over
 * three real servers: each on its own, every scene-taking command sent to
 * its scene's server, and `scenes` asked of every server, merged. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json_read.h"

static uint64_t hex64(const cdc_jdoc *d, int i)
{
    char buf[24];
    if (!cdc_jstr_copy(d, i, buf, sizeof buf, NULL))
        return 0;
    return strtoull(buf, NULL, 16);
}

static const char *const EPS[] = {"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004"};

static void rendezvous_should_reproduce_the_shared_vectors(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/protocol/placement_vectors.json", ct_repo());
    size_t size = 0;
    char *text = ct_read_file(path, &size);
    REQUIRE(text != NULL, "cannot read %s", path);
    cdc_jdoc d = {0};
    char msg[128];
    bool parsed = cdc_jparse(&d, text, size, msg, sizeof msg);
    CHECK(parsed, "%s", msg);
    int weights = cdc_jget(&d, 0, "weights");
    int checked = 0;
    for (int w = parsed ? cdc_jfirst(&d, weights) : -1; w >= 0 && checked < (int)d.tok[weights].count;
         w = cdc_jnext(&d, w), checked++) {
        char endpoint[128], scene[80];
        REQUIRE(cdc_jstr_copy(&d, cdc_jget(&d, w, "endpoint"), endpoint, sizeof endpoint, NULL));
        REQUIRE(cdc_jstr_copy(&d, cdc_jget(&d, w, "scene"), scene, sizeof scene, NULL));
        uint64_t want = hex64(&d, cdc_jget(&d, w, "weight"));
        CHECK(clothd_rendezvous_weight(endpoint, scene) == want, "%s %s: %016llx, want %016llx", endpoint, scene,
              (unsigned long long)clothd_rendezvous_weight(endpoint, scene), (unsigned long long)want);
    }
    CHECK(checked >= 8, "%d weight vectors", checked);
    int placements = cdc_jget(&d, 0, "placements");
    int n = 0;
    for (int p = parsed ? cdc_jfirst(&d, placements) : -1; p >= 0 && n < (int)d.tok[placements].count;
         p = cdc_jnext(&d, p), n++) {
        char scene[80], owner3[64], owner4[64];
        REQUIRE(cdc_jstr_copy(&d, cdc_jget(&d, p, "scene"), scene, sizeof scene, NULL));
        REQUIRE(cdc_jstr_copy(&d, cdc_jget(&d, p, "owner3"), owner3, sizeof owner3, NULL));
        REQUIRE(cdc_jstr_copy(&d, cdc_jget(&d, p, "owner4"), owner4, sizeof owner4, NULL));
        CHECK(strcmp(EPS[clothd_place_scene(EPS, 3, scene)], owner3) == 0, "%s", scene);
        CHECK(strcmp(EPS[clothd_place_scene(EPS, 4, scene)], owner4) == 0, "%s", scene);
    }
    CHECK(n >= 5, "%d placement vectors", n);
    int scenes = cdc_jget(&d, 0, "scenes");
    uint64_t moved_added = 0, moved_removed = 0;
    CHECK(cdc_juint(&d, cdc_jget(&d, scenes, "movedWhenAdded"), 1000, &moved_added));
    CHECK(cdc_juint(&d, cdc_jget(&d, scenes, "movedWhenRemoved"), 1000, &moved_removed));
    const char *const without_7002[] = {EPS[0], EPS[2]};
    uint64_t added = 0, removed = 0;
    for (int i = 0; i < 1000; i++) {
        char name[32];
        snprintf(name, sizeof name, "scene-%d", i);
        size_t o3 = clothd_place_scene(EPS, 3, name);
        added += clothd_place_scene(EPS, 4, name) != o3;
        removed += strcmp(without_7002[clothd_place_scene(without_7002, 2, name)], EPS[o3]) != 0;
    }
    CHECK(added == moved_added && removed == moved_removed, "moved %llu and %llu, the file says %llu and %llu",
          (unsigned long long)added, (unsigned long long)removed, (unsigned long long)moved_added,
          (unsigned long long)moved_removed);
    cdc_jdoc_free(&d);
    free(text);
}

static void a_fourth_endpoint_should_move_a_quarter_and_only_onto_itself(void)
{
    int moved = 0, onto_new = 0, removed_moved = 0, removed_owned = 0;
    const char *const rest[] = {EPS[0], EPS[2]};
    for (int i = 0; i < 1000; i++) {
        char name[32];
        snprintf(name, sizeof name, "scene-%d", i);
        size_t before = clothd_place_scene(EPS, 3, name);
        size_t after = clothd_place_scene(EPS, 4, name);
        if (before != after) {
            moved++;
            onto_new += after == 3;
        }
        const char *now = rest[clothd_place_scene(rest, 2, name)];
        bool was_gone = before == 1;
        removed_owned += was_gone;
        removed_moved += strcmp(now, EPS[before]) != 0;
        CHECK(was_gone || strcmp(now, EPS[before]) == 0, "%s moved though its endpoint stayed", name);
    }
    CHECK(moved >= 200 && moved <= 300, "%d of 1000 moved", moved);
    CHECK(onto_new == moved, "%d of %d moved onto the new endpoint", onto_new, moved);
    CHECK(removed_moved == removed_owned && removed_owned > 250, "%d moved, %d were on the removed one",
          removed_moved, removed_owned);
    const char *const reversed[] = {EPS[2], EPS[1], EPS[0]};
    CHECK(clothd_place_scene(EPS, 3, "npc-capes") == 2 - clothd_place_scene(reversed, 3, "npc-capes"),
          "the order of the list does not matter");
    CHECK(clothd_place_scene(EPS, 0, "x") == (size_t)-1 && clothd_place_scene(NULL, 3, "x") == (size_t)-1);
    CHECK(clothd_place_scene(EPS, 3, NULL) == (size_t)-1);
}

static void names_and_endpoints_should_be_checked(void)
{
    CHECK(clothd_scene_name_valid("npc-capes.v2:a_b"));
    char longest[65];
    memset(longest, 'x', 64);
    longest[64] = '\0';
    CHECK(clothd_scene_name_valid(longest));
    const char *bad_names[] = {"", "a b", "a/b", "\xc3\xa9", NULL};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++)
        CHECK(!clothd_scene_name_valid(bad_names[i]), "%s", bad_names[i] ? bad_names[i] : "NULL");
    char too_long[66];
    memset(too_long, 'x', 65);
    too_long[65] = '\0';
    CHECK(!clothd_scene_name_valid(too_long));

    clothd_shards *s = NULL;
    clothd_error err;
    const char *const bad_lists[][2] = {{"127.0.0.1", "a:1"}, {":7878", "a:1"}, {"host:0", "a:1"},
                                        {"host:65536", "a:1"}, {"host:x", "a:1"}, {"a:1", "a:1"}};
    for (size_t i = 0; i < sizeof bad_lists / sizeof bad_lists[0]; i++) {
        CHECK(clothd_shards_new(bad_lists[i], 2, NULL, &s, &err) == CLOTHD_E_USAGE && s == NULL, "%s",
              bad_lists[i][0]);
        CHECK(strstr(err.message, bad_lists[i][0]) != NULL, "%s", err.message);
    }
    CHECK(clothd_shards_new(EPS, 0, NULL, &s, &err) == CLOTHD_E_USAGE);
    const char *const v6[] = {"[::1]:7001", "clothd-0.clothd:7878"};
    REQUIRE_OK(clothd_shards_new(v6, 2, NULL, &s, &err), err);
    CHECK(clothd_shards_count(s) == 2 && strcmp(clothd_shards_endpoint_at(s, 1), v6[1]) == 0);
    CHECK(clothd_shards_endpoint(s, "npc-capes") == clothd_shards_endpoint_at(s, clothd_place_scene(v6, 2, "npc-capes")));
    CHECK(clothd_shards_endpoint(s, "bad name") == NULL);
    CHECK(clothd_shards_client_at(s, 0) == NULL && clothd_shards_client_at(s, 1) == NULL, "nothing connected");
    clothd_client *c = NULL;
    CHECK(clothd_shards_scene(s, "bad name", &c, &err) == CLOTHD_E_USAGE && c == NULL);
    clothd_shards_free(s);
    clothd_shards_free(NULL);
    CHECK(clothd_current_scene(NULL) == NULL && clothd_use_scene(NULL, "a", &err) == CLOTHD_E_USAGE);
}

static void the_current_scene_should_go_on_exactly_the_commands_that_take_one(void)
{
    ct_fake *f = ct_fake_start(NULL, 0, false); /* reads and keeps every request, answers none */
    REQUIRE(f != NULL);
    clothd_options o = clothd_options_default();
    o.port = ct_fake_port(f);
    o.no_hello = true; /* the fake answers nothing, hello included */
    clothd_client *c = NULL;
    clothd_error err;
    REQUIRE_OK(clothd_connect(&o, &c, &err), err);
    CHECK(clothd_current_scene(c) == NULL);
    clothd_send_create_cloth(c, NULL, NULL, &err); /* line 1: no scene yet */
    REQUIRE_OK(clothd_use_scene(c, "npc-capes", &err), err);
    CHECK(strcmp(clothd_current_scene(c), "npc-capes") == 0);
    CHECK(clothd_use_scene(c, "no spaces", &err) == CLOTHD_E_USAGE && strstr(err.message, "scene"));
    CHECK(strcmp(clothd_current_scene(c), "npc-capes") == 0, "a refused name leaves the scene as it was");
    const float wind[3] = {1, 0, 0};
    clothd_instance seven = clothd_instance_id(7);
    clothd_send_create_cloth(c, NULL, NULL, &err);  /* 2: scene */
    clothd_send_step(c, NULL, NULL, &err);          /* 3: scene */
    clothd_send_get(c, seven, NULL, &err);          /* 4: scene */
    clothd_send_wind(c, seven, wind, NULL, &err);   /* 5: scene */
    clothd_send_wind(c, clothd_instance_id(0), wind, NULL, &err); /* 6: the global wind: none */
    clothd_send_ping(c, NULL, &err);                /* 7: none */
    clothd_send_stats(c, NULL, &err);               /* 8: none */
    clothd_send_status(c, NULL, &err);              /* 9: scene */
    cdc_req r;                                      /* 10: a step naming its own scene keeps it */
    REQUIRE_OK(cdc_req_begin(&r, c, CDC_K_STEP, "step", &err), err);
    cdc_put_str(&r.w, "scene", "explicit");
    REQUIRE_OK(cdc_req_end(&r, NULL, NULL, &err), err);
    REQUIRE_OK(cdc_req_begin(&r, c, CDC_K_SCENE, "scene", &err), err); /* 11: scene given no name */
    REQUIRE_OK(cdc_req_end(&r, NULL, NULL, &err), err);
    REQUIRE_OK(cdc_req_begin(&r, c, CDC_K_SCENES, "scenes", &err), err); /* 12: scenes, the same */
    REQUIRE_OK(cdc_req_end(&r, NULL, NULL, &err), err);
    REQUIRE_OK(clothd_use_scene(c, NULL, &err), err);
    clothd_send_step(c, NULL, NULL, &err);          /* 13: none */
    REQUIRE_OK(clothd_flush(c, &err), err);
    char seen[8192];
    ct_fake_stop_seen(f, seen, sizeof seen);
    clothd_close(c);
    const bool want[] = {false, true, true, true, true, false, false, false, true, false, true, true, false};
    const char *line = seen;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *end = strchr(line, '\n');
        REQUIRE(end != NULL, "line %zu missing; the fake saw: %s", i + 1, seen);
        size_t n = (size_t)(end - line);
        bool has = false;
        for (const char *p = line; p + 20 <= end; p++)
            has = has || memcmp(p, "\"scene\":\"npc-capes\"", 19) == 0;
        CHECK(has == want[i], "line %zu: %.*s", i + 1, (int)n, line);
        if (i == 9) {
            int scenes = 0;
            for (const char *p = line; p + 8 <= end; p++)
                scenes += memcmp(p, "\"scene\":", 8) == 0;
            CHECK(scenes == 1, "line 10 names one scene: %.*s", (int)n, line);
        }
        line = end + 1;
    }
}

static void a_down_endpoint_should_be_named_in_the_error(void)
{
    ct_fake *gone = ct_fake_start(NULL, 0, true); /* a port that was free a moment ago */
    REQUIRE(gone != NULL);
    char endpoint[32];
    snprintf(endpoint, sizeof endpoint, "127.0.0.1:%u", (unsigned)ct_fake_port(gone));
    ct_fake_stop(gone);
    const char *const list[] = {endpoint};
    clothd_shards *s = NULL;
    clothd_error err;
    REQUIRE_OK(clothd_shards_new(list, 1, NULL, &s, &err), err);
    clothd_client *c = (clothd_client *)s; /* must be set to NULL */
    CHECK(clothd_shards_scene(s, "npc-capes", &c, &err) == CLOTHD_E_IO && c == NULL);
    char want[64];
    snprintf(want, sizeof want, "endpoint %s (scene npc-capes): ", endpoint);
    CHECK(strncmp(err.message, want, strlen(want)) == 0 && strstr(err.message, "refused"), "%s", err.message);
    CHECK(clothd_shards_client_at(s, 0) == NULL, "no connection kept");
    clothd_shards_free(s);
}

static void a_server_without_scenes_should_be_refused_by_name(void)
{
    static const char reply[] = "{\"id\":1,\"ok\":true,\"server\":\"clothd\",\"commands\":[\"create\",\"hello\"]}\n";
    ct_fake *f = ct_fake_start(reply, sizeof reply - 1, false); /* a clothd from before scenes */
    REQUIRE(f != NULL);
    char endpoint[32];
    snprintf(endpoint, sizeof endpoint, "127.0.0.1:%u", (unsigned)ct_fake_port(f));
    const char *const list[] = {endpoint};
    clothd_shards *s = NULL;
    clothd_error err;
    REQUIRE_OK(clothd_shards_new(list, 1, NULL, &s, &err), err);
    clothd_client *c = NULL;
    CHECK(clothd_shards_scene(s, "npc-capes", &c, &err) == CLOTHD_E_INCOMPATIBLE && c == NULL, "%s: %s",
          clothd_code_name(err.code), err.message);
    CHECK(strstr(err.message, endpoint) != NULL && strstr(err.message, "lacks the feature \"scenes\""), "%s",
          err.message);
    CHECK(clothd_shards_client_at(s, 0) == NULL, "no connection kept");
    clothd_shards_free(s);
    ct_fake_stop(f);
}

static void scenes_should_each_live_on_their_server_among_three(void)
{
    ct_server servers[3];
    char endpoints[3][32];
    const char *list[3];
    bool started = true;
    for (int i = 0; i < 3; i++) {
        started = started && ct_server_start(&servers[i], NULL, 0);
        snprintf(endpoints[i], sizeof endpoints[i], "127.0.0.1:%u", (unsigned)servers[i].port);
        list[i] = endpoints[i];
    }
    clothd_shards *s = NULL;
    clothd_error err;
    clothd_client *c = NULL;
    if (!started || clothd_shards_new(list, 3, NULL, &s, &err) != CLOTHD_OK) {
        CHECK(false, "three servers and their shards");
        goto done;
    }
    clothd_client *probe = ct_connect(servers[0].port, NULL);
    bool has_scenes = probe != NULL && clothd_has_feature(probe, "scenes");
    clothd_close(probe);
    CHECK(has_scenes, "the server's hello lists the \"scenes\" feature");
    enum { SCENES = 12 };
    clothd_instance made[SCENES];
    for (int k = 0; k < SCENES; k++) {
        char name[32];
        snprintf(name, sizeof name, "c-scene-%d", k);
        clothd_created out;
        clothd_cloth_options o = clothd_cloth_default();
        o.width = clothd_i(4);
        o.height = clothd_i(4);
        if (clothd_shards_scene(s, name, &c, &err) != CLOTHD_OK || clothd_create_cloth(c, &o, &out, &err) != CLOTHD_OK) {
            CHECK(false, "%s: %s", name, err.message);
            goto done;
        }
        made[k] = out.instance;
    }
    for (int k = 0; k < SCENES; k++) {
        char name[32];
        snprintf(name, sizeof name, "c-scene-%d", k);
        clothd_step_result r;
        clothd_instance_state st;
        CHECK(clothd_shards_scene(s, name, &c, &err) == CLOTHD_OK);
        CHECK(clothd_step(c, NULL, &r, &err) == CLOTHD_OK && r.stepped == 1, "%s: %s", name, err.message);
        clothd_step_result_free(&r);
        CHECK(clothd_get(c, made[k], NULL, &st, &err) == CLOTHD_OK && st.frame == 1, "%s: %s", name, err.message);
        clothd_instance_state_free(&st);
    }
    /* Each server holds exactly the scenes placed on it. */
    for (int i = 0; i < 3; i++) {
        clothd_client *ci = clothd_shards_client_at(s, (size_t)i);
        size_t want = 0;
        for (int k = 0; k < SCENES; k++) {
            char name[32];
            snprintf(name, sizeof name, "c-scene-%d", k);
            want += clothd_place_scene(list, 3, name) == (size_t)i;
        }
        clothd_status st = {0};
        if (ci != NULL) {
            clothd_use_scene(ci, NULL, &err);
            CHECK(clothd_get_status(ci, &st, &err) == CLOTHD_OK);
        }
        CHECK(st.instance_count == want, "%s holds %zu instances, %zu scenes were placed there", list[i],
              st.instance_count, want);
        clothd_status_free(&st);
    }
    /* A stopped server: its scene's next use names it. */
    const char *victim = clothd_shards_endpoint(s, "c-scene-0");
    size_t v = clothd_place_scene(list, 3, "c-scene-0");
    CHECK(ct_server_stop(&servers[v]) == 0);
    servers[v].pid = 0;
    ct_sleep_ms(100);
    CHECK(clothd_shards_scene(s, "c-scene-0", &c, &err) != CLOTHD_OK && strstr(err.message, victim) != NULL, "%s",
          err.message);
done:
    clothd_shards_free(s);
    for (int i = 0; i < 3; i++)
        if (servers[i].pid > 0)
            CHECK(ct_server_stop(&servers[i]) == 0);
}

/* Every command that takes a scene goes to the scene's server (scene and
 * scenes given no name, soft bodies, save, record), and `scenes` asked of
 * the set lists every server's scenes once, each with its server. */
static void every_scene_command_should_reach_its_server_and_scenes_merge(void)
{
    enum { N = 9 };
    char dirs[3][40];
    ct_server servers[3] = {{0}};
    char endpoints[3][32];
    const char *list[3];
    bool started = true;
    for (int i = 0; i < 3; i++) {
        snprintf(dirs[i], sizeof dirs[i], "/tmp/clothd-c-route-XXXXXX");
        const char *args[] = {"--data-dir", dirs[i], NULL};
        started = started && mkdtemp(dirs[i]) != NULL && ct_server_start(&servers[i], args, 0);
        snprintf(endpoints[i], sizeof endpoints[i], "127.0.0.1:%u", (unsigned)servers[i].port);
        list[i] = endpoints[i];
    }
    clothd_shards *s = NULL;
    clothd_error err;
    clothd_client *c = NULL;
    clothd_scene_info *merged = NULL;
    if (!started || clothd_shards_new(list, 3, NULL, &s, &err) != CLOTHD_OK) {
        CHECK(false, "three servers with --data-dir and their shards");
        goto done;
    }
    bool used[3] = {false, false, false};
    for (int k = 0; k < N; k++) {
        char name[32];
        snprintf(name, sizeof name, "route-%d", k);
        used[clothd_place_scene(list, 3, name)] = true;
        if (clothd_shards_scene(s, name, &c, &err) != CLOTHD_OK) {
            CHECK(false, "%s: %s", name, err.message);
            goto done;
        }
        clothd_cloth_options o = clothd_cloth_default();
        o.width = clothd_i(4);
        o.height = clothd_i(4);
        clothd_softbody_options b = clothd_softbody_default();
        b.shape = CLOTHD_SHAPE_BOX;
        b.size = clothd_v3(0.2f, 0.2f, 0.2f);
        b.cells = clothd_i3(1, 1, 1);
        clothd_created made;
        CHECK(clothd_create_cloth(c, &o, &made, &err) == CLOTHD_OK, "%s: %s", name, err.message);
        CHECK(clothd_create_softbody(c, &b, &made, &err) == CLOTHD_OK, "%s: %s", name, err.message);
        bool held = true;
        size_t count = 0;
        CHECK(clothd_scene(c, NULL, (clothd_opt_b){false, false}, &held, &count, &err) == CLOTHD_OK &&
                  count == 2 && !held,
              "%s: scene: %zu instances: %s", name, count, err.message);
        clothd_scene_info *mine = NULL;
        CHECK(clothd_scenes(c, NULL, &mine, &count, &err) == CLOTHD_OK && count == 1 &&
                  strcmp(mine[0].scene, name) == 0 && mine[0].instances == 2 && mine[0].endpoint == NULL,
              "%s: scenes: %zu entries: %s", name, count, err.message);
        clothd_free(mine);
        uint32_t saved = 0;
        CHECK(clothd_save(c, name, NULL, 0, &saved, NULL, &err) == CLOTHD_OK && saved == 2, "%s: save %u: %s",
              name, saved, err.message);
        uint64_t frames = 0;
        CHECK(clothd_record(c, name, NULL, 0, &err) == CLOTHD_OK, "%s: record: %s", name, err.message);
        CHECK(clothd_step(c, NULL, NULL, &err) == CLOTHD_OK, "%s: %s", name, err.message);
        CHECK(clothd_record_stop(c, &frames, &err) == CLOTHD_OK && frames == 1, "%s: %s", name, err.message);
    }
    CHECK(used[0] + used[1] + used[2] >= 2, "the scenes spread over at least two servers");
    /* Each server holds its own scenes, their snapshots and journals. */
    for (int i = 0; i < 3; i++) {
        clothd_client *own = ct_connect(servers[i].port, NULL);
        clothd_scene_info *got = NULL;
        size_t count = 0;
        CHECK(own != NULL && clothd_scenes(own, NULL, &got, &count, &err) == CLOTHD_OK, "%s", err.message);
        size_t want = 0;
        for (int k = 0; k < N; k++) {
            char name[32];
            snprintf(name, sizeof name, "route-%d", k);
            if (clothd_place_scene(list, 3, name) != (size_t)i)
                continue;
            want++;
            bool listed = false;
            for (size_t j = 0; j < count; j++)
                listed = listed || (strcmp(got[j].scene, name) == 0 && got[j].instances == 2);
            CHECK(listed, "%s lists %s", list[i], name);
            char path[128];
            snprintf(path, sizeof path, "%s/%s.cds", dirs[i], name);
            FILE *f = fopen(path, "rb");
            CHECK(f != NULL, "%s: the snapshot is on its server", path);
            if (f != NULL)
                fclose(f);
        }
        CHECK(count == want, "%s lists %zu scenes, %zu were placed there", list[i], count, want);
        clothd_free(got);
        clothd_close(own);
    }
    /* The set's view: every scene once, sorted, each with its server. */
    size_t count = 0;
    CHECK(clothd_shards_scenes(s, &merged, &count, &err) == CLOTHD_OK && count == N, "%zu: %s", count,
          err.message);
    for (size_t j = 0; merged != NULL && j < count; j++) {
        CHECK(j == 0 || strcmp(merged[j - 1].scene, merged[j].scene) < 0, "sorted");
        CHECK(merged[j].instances == 2 && merged[j].endpoint != NULL &&
                  strcmp(merged[j].endpoint, clothd_shards_endpoint(s, merged[j].scene)) == 0,
              "%s on %s", merged[j].scene, merged[j].endpoint ? merged[j].endpoint : "(null)");
    }
    CHECK(c != NULL && clothd_current_scene(c) != NULL, "asking every server leaves the current scene");
    for (int k = 0; k < N; k++) {
        char name[32];
        snprintf(name, sizeof name, "route-%d", k);
        size_t gone = 0;
        CHECK(clothd_shards_scene(s, name, &c, &err) == CLOTHD_OK &&
                  clothd_destroy_scene(c, name, NULL, &gone, &err) == CLOTHD_OK && gone == 2,
              "%s: %s", name, err.message);
    }
    clothd_free(merged);
    merged = NULL;
    CHECK(clothd_shards_scenes(s, &merged, &count, &err) == CLOTHD_OK && count == 0 && merged == NULL,
          "%zu left: %s", count, err.message);
done:
    clothd_free(merged);
    clothd_shards_free(s);
    for (int i = 0; i < 3; i++) {
        if (servers[i].pid > 0)
            CHECK(ct_server_stop(&servers[i]) == 0);
        char cmd[160];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dirs[i]);
        char out[16];
        ct_run(cmd, out, sizeof out);
    }
}

const ct_test ct_shard_tests[] = {
    {"shards: rendezvous reproduces the shared vectors", rendezvous_should_reproduce_the_shared_vectors, 0},
    {"shards: a 4th endpoint moves about 1/4, only onto itself", a_fourth_endpoint_should_move_a_quarter_and_only_onto_itself, 0},
    {"shards: names and endpoints are checked", names_and_endpoints_should_be_checked, 0},
    {"shards: the current scene goes on the commands that take one", the_current_scene_should_go_on_exactly_the_commands_that_take_one, 0},
    {"shards: a down endpoint is named in the error", a_down_endpoint_should_be_named_in_the_error, 0},
    {"shards: a server without scenes is refused by name", a_server_without_scenes_should_be_refused_by_name, 0},
    {"shards: scenes live on their server among three", scenes_should_each_live_on_their_server_among_three, 30},
    {"shards: every scene command reaches its server, scenes merge",
     every_scene_command_should_reach_its_server_and_scenes_merge, 30},
    {NULL, NULL, 0},
};
