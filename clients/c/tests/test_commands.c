/* Every command of protocol/commands.h through its typed function, against
 * the real server: each reply's members land in the struct, and what a
 * command changed shows in the next `get` or `status`. (Error replies are
 * test_errors.c's.) Instances are stepped by id: other tests share the server. */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static clothd_client *client(void)
{
    return ct_connect(0, NULL);
}

static void create_should_report_particles_and_constraints(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created a, b, ball, tet, box;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(2);
    o.height = clothd_i(2);
    o.spacing = clothd_f(0.5f);
    o.origin = clothd_v3(0, 2, 0);
    REQUIRE_OK(clothd_create_cloth(c, &o, &a, &err), err);
    CHECK(a.instance.id != 0 && a.particles == 4 && a.constraints == 6, "%u %u", a.particles, a.constraints);
    REQUIRE_OK(clothd_create_cloth(c, NULL, &b, &err), err);
    CHECK(b.particles == 100 && b.constraints == 502, "the seed's 10 x 10: %u particles, %u constraints",
          b.particles, b.constraints);
    CHECK(b.instance.id != a.instance.id);

    clothd_softbody_options s = clothd_softbody_default();
    s.shape = CLOTHD_SHAPE_BALL;
    s.radius = clothd_f(0.3f);
    s.resolution = clothd_i(6);
    s.center = clothd_v3(0, 1, 0);
    REQUIRE_OK(clothd_create_softbody(c, &s, &ball, &err), err);
    CHECK(ball.particles == 179 && ball.constraints == 1504, "PROTOCOL.md's ball: %u, %u", ball.particles,
          ball.constraints);
    const float v[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    const uint32_t tets[4] = {0, 1, 2, 3};
    s = clothd_softbody_default();
    s.vertices = v;
    s.vertex_count = 4;
    s.tetrahedra = tets;
    s.tetrahedron_count = 1;
    s.material.mass = clothd_f(2);
    REQUIRE_OK(clothd_create_softbody(c, &s, &tet, &err), err);
    CHECK(tet.particles == 4 && tet.constraints == 7, "one tetrahedron: 6 edges + 1 volume, got %u",
          tet.constraints);
    s = clothd_softbody_default();
    s.shape = CLOTHD_SHAPE_BOX;
    s.cells = clothd_i3(2, 2, 2);
    s.size = clothd_v3(1, 1, 1);
    REQUIRE_OK(clothd_create_softbody(c, &s, &box, &err), err);
    CHECK(box.particles == 27, "a 2x2x2 box has 27 vertices, got %u", box.particles);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, tet.instance, NULL, &st, &err), err);
    CHECK(st.kind == CLOTHD_KIND_SOFTBODY && st.particle_count == 4 && st.positions[3] == 1.0f);
    clothd_instance_state_free(&st);
    clothd_instance all[] = {a.instance, b.instance, ball.instance, tet.instance, box.instance};
    for (size_t i = 0; i < 5; i++)
        REQUIRE_OK(clothd_destroy(c, all[i], &err), err);
    CHECK(clothd_get(c, a.instance, NULL, &st, &err) == CLOTHD_E_NOT_FOUND, "destroyed: %s", err.message);
    clothd_close(c);
}

static void pins_should_show_in_get(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created cl;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(2);
    o.height = clothd_i(2);
    o.spacing = clothd_f(0.5f);
    o.origin = clothd_v3(0, 2, 0);
    REQUIRE_OK(clothd_create_cloth(c, &o, &cl, &err), err);
    uint32_t n = 0;
    clothd_pin_options p;
    memset(&p, 0, sizeof p);
    p.particle = clothd_u(0);
    p.position = clothd_v3(0.25f, 2.5f, 0);
    REQUIRE_OK(clothd_pin(c, cl.instance, &p, &n, &err), err);
    CHECK(n == 1);
    const uint32_t two[] = {2, 3};
    const float at[] = {0, 1.5f, 0, 0.5f, 1.5f, 0.125f};
    memset(&p, 0, sizeof p);
    p.particles = two;
    p.particle_count = 2;
    p.positions = at;
    REQUIRE_OK(clothd_pin(c, cl.instance, &p, &n, &err), err);
    CHECK(n == 2);
    clothd_unpin_options u;
    memset(&u, 0, sizeof u);
    u.particle = clothd_u(2);
    REQUIRE_OK(clothd_unpin(c, cl.instance, &u, &n, &err), err);
    CHECK(n == 1);
    float buf[3 * 8];
    clothd_get_options g = {.positions = buf, .capacity = 8};
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, cl.instance, &g, &st, &err), err);
    CHECK(st.positions == buf, "positions went into the caller's buffer");
    CHECK(st.particle_count == 4 && st.width == 2 && st.height == 2 && st.kind == CLOTHD_KIND_CLOTH);
    CHECK(buf[0] == 0.25f && buf[1] == 2.5f && buf[2] == 0, "the pin's position");
    CHECK(buf[9] == 0.5f && buf[10] == 1.5f && buf[11] == 0.125f, "particle 3 pinned where asked");
    CHECK(st.pinned_count == 2 && st.pinned[0] == 0 && st.pinned[1] == 3, "pinned 0 and 3");
    CHECK(st.frame == 0 && st.time == 0 && st.enabled && !st.unstable && st.wind_model == CLOTHD_WIND_AERO);
    clothd_instance_state_free(&st);
    clothd_get_options tiny = {.positions = buf, .capacity = 3};
    CHECK(clothd_get(c, cl.instance, &tiny, &st, &err) == CLOTHD_E_USAGE && strstr(err.message, "do not fit"),
          "%s", err.message);
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    clothd_close(c);
}

static void wind_gravity_and_step_should_change_the_state(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created cl;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(2);
    o.height = clothd_i(2);
    o.spacing = clothd_f(0.5f);
    o.origin = clothd_v3(0, 2, 0);
    o.material.damping = clothd_f(0);
    REQUIRE_OK(clothd_create_cloth(c, &o, &cl, &err), err);
    float stored[3] = {9, 9, 9};
    REQUIRE_OK(clothd_wind(c, cl.instance, (float[]){1, 0, 0.5f}, stored, &err), err);
    CHECK(stored[0] == 1 && stored[1] == 0 && stored[2] == 0.5f);
    REQUIRE_OK(clothd_wind(c, clothd_instance_id(0), (float[]){0.1f, 0, 0}, stored, &err), err);
    CHECK(stored[0] == 0.1f, "the global wind as stored");
    clothd_status s;
    REQUIRE_OK(clothd_get_status(c, &s, &err), err);
    CHECK(s.global_wind[0] == 0.1f && s.workers == 2 && strcmp(s.version, "0.1.0") == 0, "%s", s.version);
    clothd_status_free(&s);
    REQUIRE_OK(clothd_wind(c, clothd_instance_id(0), (float[]){0, 0, 0}, NULL, &err), err);
    REQUIRE_OK(clothd_wind(c, cl.instance, (float[]){0, 0, 0}, NULL, &err), err);
    REQUIRE_OK(clothd_gravity(c, cl.instance, (float[]){0, -1.62f, 0}, &err), err);

    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.dt = clothd_f(0.5f);
    so.instance = cl.instance;
    clothd_step_result r;
    REQUIRE_OK(clothd_step(c, &so, &r, &err), err);
    CHECK(r.stepped == 1 && r.unstable_count == 0 && r.impulse_count == 0, "stepped %u", r.stepped);
    clothd_step_result_free(&r);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, cl.instance, NULL, &st, &err), err);
    CHECK(st.frame == 1 && st.time == 0.5, "frame %llu time %g", (unsigned long long)st.frame, st.time);
    CHECK(st.gravity[1] == -1.62f);
    /* Free fall, damping 0: y = y0 - g t^2 / 2 on the first step (PROTOCOL.md). */
    CHECK_NEAR(st.positions[1], 2.0 - 0.5 * 1.62 * 0.25, 0.02);
    clothd_instance_state_free(&st);

    bool now = true;
    REQUIRE_OK(clothd_enable(c, cl.instance, false, &now, &err), err);
    CHECK(!now);
    REQUIRE_OK(clothd_step(c, &so, &r, &err), err);
    CHECK(r.stepped == 0, "a disabled instance is skipped");
    REQUIRE_OK(clothd_enable(c, cl.instance, true, &now, &err), err);
    CHECK(now);
    clothd_instance list[] = {cl.instance};
    memset(&so, 0, sizeof so);
    so.instances = list;
    so.instance_count = 1;
    REQUIRE_OK(clothd_step(c, &so, NULL, &err), err);
    REQUIRE_OK(clothd_get(c, cl.instance, NULL, &st, &err), err);
    CHECK(st.frame == 2 && fabs(st.time - (0.5 + 1.0 / 60)) < 1e-6, "dt unset: 1/60 s (time %.9g)", st.time);
    clothd_instance_state_free(&st);
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    clothd_close(c);
}

static void colliders_should_come_and_go(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created cl;
    REQUIRE_OK(clothd_create_cloth(c, NULL, &cl, &err), err);
    clothd_collider_options co;
    memset(&co, 0, sizeof co);
    co.type = CLOTHD_COLLIDER_SPHERE;
    co.position = clothd_v3(0, 1, 0);
    co.radius = clothd_f(0.3f);
    clothd_collider sphere, capsule;
    REQUIRE_OK(clothd_add_collider(c, cl.instance, &co, &sphere, &err), err);
    memset(&co, 0, sizeof co);
    co.type = CLOTHD_COLLIDER_CAPSULE;
    co.radius = clothd_f(0.2f);
    co.height = clothd_f(1.5f);
    co.normal = clothd_v3(1, 0, 0);
    co.friction = clothd_f(0.5f);
    REQUIRE_OK(clothd_add_collider(c, cl.instance, &co, &capsule, &err), err);
    CHECK(sphere.id != 0 && capsule.id != sphere.id);
    clothd_move_options mo;
    memset(&mo, 0, sizeof mo);
    mo.position = clothd_v3(0, 0.8f, 0);
    REQUIRE_OK(clothd_move_collider(c, cl.instance, sphere, &mo, &err), err);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, cl.instance, NULL, &st, &err), err);
    REQUIRE(st.collider_count == 2, "%zu colliders", st.collider_count);
    CHECK(st.colliders[0].collider.id == sphere.id && st.colliders[0].type == CLOTHD_COLLIDER_SPHERE);
    CHECK(st.colliders[0].position[1] == 0.8f && st.colliders[0].radius == 0.3f, "moved");
    CHECK(st.colliders[1].type == CLOTHD_COLLIDER_CAPSULE && st.colliders[1].height == 1.5f &&
          st.colliders[1].normal[0] == 1.0f);
    clothd_instance_state_free(&st);
    REQUIRE_OK(clothd_remove_collider(c, cl.instance, sphere, &err), err);
    REQUIRE_OK(clothd_get(c, cl.instance, NULL, &st, &err), err);
    CHECK(st.collider_count == 1 && st.colliders[0].collider.id == capsule.id);
    clothd_instance_state_free(&st);
    CHECK(clothd_move_collider(c, cl.instance, sphere, &mo, &err) == CLOTHD_E_NOT_FOUND, "removed: %s",
          err.message);
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    clothd_close(c);
}

/* The skeleton's shapes: a tapered capsule and a box go out with their
 * fields, come back from get with them, and a box turns by rotation. */
static void tapered_capsules_and_boxes_should_round_trip(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created cl;
    REQUIRE_OK(clothd_create_cloth(c, NULL, &cl, &err), err);
    clothd_collider_options co;
    memset(&co, 0, sizeof co);
    co.type = CLOTHD_COLLIDER_TAPERED_CAPSULE;
    co.radius = clothd_f(0.25f);
    co.radius2 = clothd_f(0.125f);
    co.height = clothd_f(1.5f);
    co.normal = clothd_v3(0, 0, 1);
    clothd_collider limb, torso;
    REQUIRE_OK(clothd_add_collider(c, cl.instance, &co, &limb, &err), err);
    memset(&co, 0, sizeof co);
    co.type = CLOTHD_COLLIDER_BOX;
    co.position = clothd_v3(0, -1, 0);
    co.half_extents = clothd_v3(0.5f, 0.25f, 0.75f);
    co.rotation = clothd_v4(0, 0, 0, 1);
    REQUIRE_OK(clothd_add_collider(c, cl.instance, &co, &torso, &err), err);
    clothd_move_options mo;
    memset(&mo, 0, sizeof mo);
    mo.rotation = clothd_v4(0, 0, 0.6f, 0.8f);
    REQUIRE_OK(clothd_move_collider(c, cl.instance, torso, &mo, &err), err);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, cl.instance, NULL, &st, &err), err);
    REQUIRE(st.collider_count == 2, "%zu colliders", st.collider_count);
    CHECK(st.colliders[0].type == CLOTHD_COLLIDER_TAPERED_CAPSULE && st.colliders[0].radius2 == 0.125f &&
          st.colliders[0].radius == 0.25f && st.colliders[0].normal[2] == 1.0f);
    CHECK(st.colliders[1].type == CLOTHD_COLLIDER_BOX && st.colliders[1].half_extents[2] == 0.75f &&
          st.colliders[1].rotation[2] == 0.6f && st.colliders[1].rotation[3] == 0.8f, "box %g %g",
          st.colliders[1].rotation[2], st.colliders[1].rotation[3]);
    clothd_instance_state_free(&st);
    /* A box has no normal; a rotation must be unit. */
    memset(&mo, 0, sizeof mo);
    mo.normal = clothd_v3(0, 1, 0);
    CHECK(clothd_move_collider(c, cl.instance, torso, &mo, &err) == CLOTHD_E_INVALID_ARGUMENT &&
          strncmp(err.message, "normal: collider", 16) == 0, "%s", err.message);
    co.rotation = clothd_v4(0, 0, 0, 2);
    CHECK(clothd_add_collider(c, cl.instance, &co, &torso, &err) == CLOTHD_E_INVALID_ARGUMENT &&
          strcmp(err.message, "rotation: must be a unit quaternion (length within 0.001 of 1, not 2)") == 0,
          "%s", err.message);
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    clothd_close(c);
}

static void a_coupled_collider_should_report_impulses(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created cl;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(6);
    o.height = clothd_i(6);
    o.spacing = clothd_f(0.1f);
    o.origin = clothd_v3(-0.25f, 0.3f, -0.25f);
    o.down = clothd_v3(0, 0, 1); /* a horizontal sheet */
    REQUIRE_OK(clothd_create_cloth(c, &o, &cl, &err), err);
    clothd_collider_options co;
    memset(&co, 0, sizeof co);
    co.type = CLOTHD_COLLIDER_SPHERE;
    co.radius = clothd_f(0.25f);
    co.coupling = clothd_f(1);
    clothd_collider sphere;
    REQUIRE_OK(clothd_add_collider(c, cl.instance, &co, &sphere, &err), err);
    clothd_step_options so;
    memset(&so, 0, sizeof so);
    so.instance = cl.instance;
    bool pushed = false;
    for (int i = 0; i < 60 && !pushed; i++) {
        clothd_step_result r;
        REQUIRE_OK(clothd_step(c, &so, &r, &err), err);
        CHECK(r.impulse_count == 1, "one entry per coupled collider, got %zu", r.impulse_count);
        if (r.impulse_count == 1) {
            CHECK(r.impulses[0].instance.id == cl.instance.id && r.impulses[0].collider.id == sphere.id);
            pushed = r.impulses[0].linear[1] < 0; /* the sheet lands: pushed down */
        }
        clothd_step_result_free(&r);
    }
    CHECK(pushed, "the sheet never pushed the sphere down");
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    clothd_close(c);
}

static void the_rest_of_the_commands_should_answer(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created cl;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = clothd_i(2);
    o.height = clothd_i(2);
    REQUIRE_OK(clothd_create_cloth(c, &o, &cl, &err), err);

    clothd_topology t;
    REQUIRE_OK(clothd_get_topology(c, cl.instance, &t, &err), err);
    const uint32_t tris[] = {0, 2, 1, 1, 2, 3};
    const float uvs[] = {0, 0, 1, 0, 0, 1, 1, 1};
    CHECK(t.triangle_count == 2 && memcmp(t.triangles, tris, sizeof tris) == 0);
    CHECK(t.uv_count == 4 && memcmp(t.uvs, uvs, sizeof uvs) == 0 && t.kind == CLOTHD_KIND_CLOTH);
    clothd_topology_free(&t);

    clothd_status s;
    REQUIRE_OK(clothd_get_status(c, &s, &err), err);
    bool listed = false;
    for (size_t i = 0; i < s.instance_count; i++)
        listed |= s.instances[i].instance.id == cl.instance.id && s.instances[i].particles == 4 &&
                  s.instances[i].constraints == 6 && s.instances[i].kind == CLOTHD_KIND_CLOTH;
    CHECK(listed, "status lists the new cloth");
    char line[64];
    snprintf(line, sizeof line, "  Cloth %u: 4 particles, 6 constraints", (unsigned)cl.instance.id);
    CHECK(s.text != NULL && strncmp(s.text, "=== Cloth Simulation ===\n", 25) == 0 && strstr(s.text, line),
          "%s", s.text ? s.text : "(null)");
    clothd_status_free(&s);

    bool on = false;
    REQUIRE_OK(clothd_debug(c, clothd_b(true), &on, &err), err);
    CHECK(on);
    clothd_opt_b ask = {false, false};
    REQUIRE_OK(clothd_debug(c, ask, &on, &err), err);
    CHECK(on, "the query says what was set");
    REQUIRE_OK(clothd_debug(c, clothd_b(false), &on, &err), err);
    CHECK(!on);

    clothd_material m;
    memset(&m, 0, sizeof m);
    m.stretch_compliance = clothd_f(1e-4f);
    m.substeps = clothd_i(4);
    m.thickness = clothd_f(0.01f);
    m.wind_model = CLOTHD_WIND_CONSTANT;
    REQUIRE_OK(clothd_set(c, cl.instance, &m, &err), err);
    clothd_instance_state st;
    REQUIRE_OK(clothd_get(c, cl.instance, NULL, &st, &err), err);
    CHECK(st.wind_model == CLOTHD_WIND_CONSTANT, "set took");
    clothd_instance_state_free(&st);

    clothd_transform_options to;
    memset(&to, 0, sizeof to);
    to.position = clothd_v3(0, 1.5f, 0);
    to.rotation = clothd_v4(0, 0.7071068f, 0, 0.7071068f);
    REQUIRE_OK(clothd_transform(c, cl.instance, "shoulders", &to, &err), err);
    const uint32_t ends[] = {0, 1};
    const float offs[] = {-0.2f, 0, 0, 0.2f, 0, 0};
    clothd_attach_options ao;
    memset(&ao, 0, sizeof ao);
    ao.particles = ends;
    ao.particle_count = 2;
    ao.offsets = offs;
    uint32_t attached = 0;
    REQUIRE_OK(clothd_attach(c, cl.instance, "shoulders", &ao, &attached, &err), err);
    CHECK(attached == 2);

    REQUIRE_OK(clothd_ping(c, &err), err);
    clothd_server_stats ss;
    REQUIRE_OK(clothd_get_server_stats(c, &ss, &err), err);
    CHECK(strcmp(ss.version, "0.1.0") == 0 && ss.workers == 2 && ss.simd[0] != '\0', "%s %u %s", ss.version,
          ss.workers, ss.simd);
    CHECK(ss.connections.current >= 1 && ss.connections.limit == 128 && ss.instances.limit == 1024);
    CHECK(ss.particles.current >= 4 && ss.instances.awake + ss.instances.sleeping + ss.instances.disabled >= 1);
    bool pings = false;
    for (size_t i = 0; i < ss.request_kinds; i++)
        pings |= strcmp(ss.requests[i].name, "ping") == 0 && ss.requests[i].count >= 1;
    CHECK(pings && ss.request_kinds >= 20, "requests by command (%zu kinds)", ss.request_kinds);
    uint64_t in_buckets = 0;
    for (size_t i = 0; i <= ss.steps.bucket_count; i++)
        in_buckets += ss.steps.counts[i];
    CHECK(ss.steps.bucket_count > 0 && in_buckets == ss.steps.count && ss.steps.count >= ss.steps.total,
          "the step histogram adds up (%llu in buckets, count %llu)", (unsigned long long)in_buckets,
          (unsigned long long)ss.steps.count);
    CHECK(ss.errors[CLOTHD_E_NOT_FOUND] >= 1, "the not_found replies of earlier tests are counted");
    clothd_access access = CLOTHD_ACCESS_NONE;
    REQUIRE_OK(clothd_auth(c, "any-token-will-do-here", &access, &err), err);
    CHECK(access == CLOTHD_ACCESS_FULL && clothd_access_granted(c) == CLOTHD_ACCESS_FULL,
          "a server without tokens grants full access");
    REQUIRE_OK(clothd_destroy(c, cl.instance, &err), err);
    clothd_close(c);
}

/* save and load against a server with --data-dir: a cloth comes back with
 * its frame, an id in use is refused, a bad name is invalid_argument. */
static void save_and_load_should_bring_an_instance_back(void)
{
    char dir[] = "/tmp/clothd-c-snap-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    const char *args[] = {"--data-dir", dir, NULL};
    ct_server s;
    REQUIRE(ct_server_start(&s, args, 0));
    clothd_client *c = ct_connect(s.port, NULL);
    clothd_error err;
    if (c != NULL) {
        clothd_created cl = {{0}, 0, 0};
        CHECK(clothd_create_cloth(c, NULL, &cl, &err) == CLOTHD_OK, "%s", err.message);
        CHECK(clothd_step(c, NULL, NULL, &err) == CLOTHD_OK, "%s", err.message);
        uint32_t saved = 0, loaded = 0;
        uint64_t bytes = 0;
        CHECK(clothd_save(c, "c-world", NULL, 0, &saved, &bytes, &err) == CLOTHD_OK, "%s", err.message);
        CHECK(saved == 1 && bytes > 1000, "saved %u, %llu bytes", saved, (unsigned long long)bytes);
        CHECK(clothd_step(c, NULL, NULL, &err) == CLOTHD_OK, "%s", err.message);
        CHECK(clothd_load(c, "c-world", false, &loaded, &err) == CLOTHD_E_INVALID_ARGUMENT &&
                  strstr(err.message, "in use") != NULL,
              "%s", err.message);
        CHECK(clothd_load(c, "c-world", true, &loaded, &err) == CLOTHD_OK && loaded == 1, "%s", err.message);
        clothd_instance_state st;
        CHECK(clothd_get(c, cl.instance, NULL, &st, &err) == CLOTHD_OK, "%s", err.message);
        CHECK(st.frame == 1, "frame %llu, the saved one", (unsigned long long)st.frame);
        clothd_instance_state_free(&st);
        CHECK(clothd_save(c, "../out", &cl.instance, 1, NULL, NULL, &err) == CLOTHD_E_INVALID_ARGUMENT,
              "%s", err.message);
        CHECK(clothd_load(c, "missing", false, NULL, &err) == CLOTHD_E_NOT_FOUND, "%s", err.message);
        CHECK(clothd_save(c, NULL, NULL, 0, NULL, NULL, &err) == CLOTHD_E_USAGE);

        /* A journal of three steps, replayed under a new id. */
        CHECK(clothd_record(c, "c-journal", &cl.instance, 1, &err) == CLOTHD_OK, "%s", err.message);
        for (int k = 0; k < 3; k++)
            CHECK(clothd_step(c, NULL, NULL, &err) == CLOTHD_OK, "%s", err.message);
        uint64_t frames = 0;
        CHECK(clothd_record_stop(c, &frames, &err) == CLOTHD_OK && frames == 3, "%s", err.message);
        clothd_instance copy = {0};
        clothd_replayed rp;
        CHECK(clothd_replay(c, "c-journal", -1, &copy, 1, &rp, &err) == CLOTHD_OK, "%s", err.message);
        CHECK(rp.instances == 1 && rp.frames == 3 && rp.journal_frames == 3 && rp.complete && !rp.other_build);
        CHECK(copy.id != 0 && copy.id != cl.instance.id, "a new id: %u", copy.id);
        clothd_instance_state a, b;
        CHECK(clothd_get(c, cl.instance, NULL, &a, &err) == CLOTHD_OK, "%s", err.message);
        CHECK(clothd_get(c, copy, NULL, &b, &err) == CLOTHD_OK, "%s", err.message);
        CHECK(a.frame == b.frame && a.particle_count == b.particle_count &&
                  memcmp(a.positions, b.positions, sizeof(float) * 3 * a.particle_count) == 0,
              "the replayed copy holds the same bits");
        clothd_instance_state_free(&a);
        clothd_instance_state_free(&b);
        CHECK(clothd_replay(c, "c-journal", 1, NULL, 0, &rp, &err) == CLOTHD_OK && rp.frames == 1);
        CHECK(clothd_record_stop(c, NULL, &err) == CLOTHD_E_INVALID_ARGUMENT, "%s", err.message);
        clothd_close(c);
    }
    CHECK(ct_server_stop(&s) == 0);
    char path[600];
    snprintf(path, sizeof path, "%s/c-world.cds", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/c-journal.cdj", dir);
    remove(path);
    rmdir(dir);
}

static void a_step_budget_should_report_the_degraded_instances(void)
{
    clothd_client *c = client();
    REQUIRE(c != NULL);
    clothd_error err;
    clothd_created low, high;
    clothd_cloth_options o = clothd_cloth_default();
    o.width = o.height = clothd_i(12);
    o.material.solver_iterations = clothd_i(8);
    o.material.sleep_threshold = clothd_f(0);
    o.material.priority = clothd_f(0);
    REQUIRE_OK(clothd_create_cloth(c, &o, &low, &err), err);
    o.material.priority = clothd_f(1);
    o.origin = clothd_v3(2, 0, 0);
    REQUIRE_OK(clothd_create_cloth(c, &o, &high, &err), err);

    clothd_instance both[] = {low.instance, high.instance};
    clothd_step_options so = {.instances = both, .instance_count = 2};
    clothd_step_result r;
    REQUIRE_OK(clothd_step(c, &so, &r, &err), err);
    CHECK(!r.has_budget && r.degraded == NULL, "no budget: no budget members");
    clothd_step_result_free(&r);

    so.budget_ms = clothd_f(0.0001f);
    REQUIRE_OK(clothd_step(c, &so, &r, &err), err);
    CHECK(r.has_budget && r.budget_ms == 0.0001f && r.predicted_ms > r.budget_ms && r.actual_ms > 0,
          "budget %g predicted %g actual %g", r.budget_ms, r.predicted_ms, r.actual_ms);
    CHECK(r.degraded_count == 2 && r.degraded[0].instance.id == low.instance.id &&
              r.degraded[0].lod == 2 && r.degraded[1].lod == 2,
          "both at the floor, %zu listed", r.degraded_count);
    clothd_step_result_free(&r);
    clothd_get_options go = {0};
    clothd_instance_state s;
    REQUIRE_OK(clothd_get(c, high.instance, &go, &s, &err), err);
    CHECK(s.lod == 0 && s.current_lod == 2 && s.lod_degraded && s.priority == 1.0f,
          "get: lod %u, current %u, degraded %d, priority %g", s.lod, s.current_lod, s.lod_degraded,
          (double)s.priority);
    clothd_instance_state_free(&s);

    clothd_material m = {.lod = clothd_i(3)};
    REQUIRE_OK(clothd_set(c, high.instance, &m, &err), err);
    REQUIRE_OK(clothd_step(c, &so, &r, &err), err);
    CHECK(r.degraded_count == 1 && r.degraded[0].instance.id == low.instance.id,
          "its own level 3 is not degraded (%zu listed)", r.degraded_count);
    clothd_step_result_free(&r);
    clothd_server_stats st;
    REQUIRE_OK(clothd_get_server_stats(c, &st, &err), err);
    CHECK(st.steps.budget_steps >= 2 && st.steps.degraded_instances >= 3 && st.steps.budget_overruns >= 2,
          "stats: %llu budgeted steps, %llu degraded, %llu overruns",
          (unsigned long long)st.steps.budget_steps, (unsigned long long)st.steps.degraded_instances,
          (unsigned long long)st.steps.budget_overruns);
    REQUIRE_OK(clothd_destroy(c, low.instance, &err), err);
    REQUIRE_OK(clothd_destroy(c, high.instance, &err), err);
    clothd_close(c);
}

const ct_test ct_command_tests[] = {
    {"commands: create cloth and soft bodies, destroy", create_should_report_particles_and_constraints, 0},
    {"commands: pin, unpin, get into the caller's buffer", pins_should_show_in_get, 0},
    {"commands: wind, gravity, step, enable", wind_gravity_and_step_should_change_the_state, 0},
    {"commands: add, move, remove colliders", colliders_should_come_and_go, 0},
    {"commands: tapered capsules and boxes", tapered_capsules_and_boxes_should_round_trip, 0},
    {"commands: a coupled collider reports impulses", a_coupled_collider_should_report_impulses, 0},
    {"commands: step with budgetMs, lod and priority", a_step_budget_should_report_the_degraded_instances, 0},
    {"commands: topology, status, debug, set, transform, attach, ping, stats, auth", the_rest_of_the_commands_should_answer, 0},
    {"commands: save and load, record and replay", save_and_load_should_bring_an_instance_back, 0},
    {NULL, NULL, 0},
};
