/* Determinism across worker counts: thirteen different cloths (sizes,
 * parameters, pins, moving pins, colliders, wind, global wind; and the
 * solver's depth: substeps, XPBD compliance, per-second damping, aero wind,
 * tethers rebuilt after an unpin, thickness, friction, two-way coupling,
 * transforms with attached pins and colliders, sleeping and waking; a sheet
 * folding onto itself with self-collision, searched every few substeps) stepped
 * 200 times serially, through a 1-worker pool and through a 4-worker pool.
 * Each step of each instance is one pool job; instances are islands, so the
 * position bytes, and the impulses handed to coupled colliders, must hash
 * the same whichever thread ran which step. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../server/pool.h"
#include "solver_fixtures.h"

#define SCENE_CLOTHS 13
#define SCENE_STEPS 200

typedef struct scene {
    cd_world *world;
    cd_instance *cloth[SCENE_CLOTHS];
    cd_id shoulder_collider; /* on cloth 5, moved every step */
    uint32_t rig;            /* cloth 10's transform, moved every step */
} scene;

static uint64_t position_hash(const cd_instance *inst)
{
    const size_t bytes = sizeof(float) * 3u * cd_instance_particle_count(inst);
    return fx_fnv1a(cd_instance_local_positions(inst), bytes);
}

/* FNV-1a of the impulses every coupled collider of `inst` received in its
 * last step (the offset basis when there are none). */
static uint64_t impulse_hash(const cd_instance *inst)
{
    cd_collider_impulse imp[CD_MAX_COLLIDERS];
    uint32_t n = cd_instance_collider_impulses(inst, imp, CD_MAX_COLLIDERS);
    return fx_fnv1a(imp, n * sizeof imp[0]);
}

static cd_id add_full(cd_instance *inst, const cd_collider_def *c)
{
    cd_id id = 0;
    cr_assert_eq(cd_instance_add_collider(inst, c, &id), CD_OK);
    return id;
}

static cd_id add(cd_instance *inst, cd_collider_type type, cd_vec3 pos, cd_vec3 normal, float r,
                 float height)
{
    cd_collider_def c = cd_default_collider_def(type);
    c.position = pos;
    c.normal = normal;
    c.radius = r;
    c.height = height;
    return add_full(inst, &c);
}

/* Cloths 8 to 11: the options of the solver's second version. */
static void build_depth(scene *s)
{
    cd_cloth_def d;

    /* 8: an XPBD flag, 4 substeps, per-second damping, in aero wind. */
    d = cd_default_cloth_def();
    d.width = 20;
    d.height = 12;
    d.spacing = 0.05f;
    d.mass = 0.2f;
    d.stretch_compliance = 1e-4f;
    d.bend_compliance = 0.01f;
    d.substeps = 4;
    d.solver_iterations = 2;
    d.velocity_retention = 0.3f;
    d.lift = 0.8f;
    d.origin = fx_v3(20, 2, 0);
    s->cloth[8] = fx_cloth(s->world, &d);
    for (uint32_t y = 0; y < 12; y++)
        cd_instance_pin(s->cloth[8], y * 20, NULL);
    cd_instance_set_wind(s->cloth[8], fx_v3(7, 0, 2));

    /* 9: a tablecloth with thickness on a rough, coupled ball over a rough,
     * half-coupled floor; 2 substeps. */
    d = cd_default_cloth_def();
    d.width = d.height = 14;
    d.spacing = 0.05f;
    d.down = fx_v3(0, 0, 1);
    d.origin = fx_v3(-0.325f, 0.5f, -0.325f);
    d.thickness = 0.01f;
    d.substeps = 2;
    d.particle_mass = 0.02f;
    s->cloth[9] = fx_cloth(s->world, &d);
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_SPHERE);
    c.position = fx_v3(0.04f, 0, 0.02f);
    c.radius = 0.25f;
    c.friction = 0.4f;
    c.static_friction = 0.5f;
    c.coupling = 1.0f;
    add_full(s->cloth[9], &c);
    c = cd_default_collider_def(CD_COLLIDER_PLANE);
    c.position = fx_v3(0, -0.3f, 0);
    c.friction = c.static_friction = 0.8f;
    c.coupling = 0.5f;
    add_full(s->cloth[9], &c);

    /* 10: a cape attached to a moving, turning rig, an attached capsule
     * (an arm) under it, XPBD bending, 3 substeps. */
    d = cd_default_cloth_def();
    d.width = d.height = 12;
    d.spacing = 0.05f;
    d.bend_compliance = 0.05f;
    d.substeps = 3;
    d.origin = fx_v3(-20, 1.6f, 0);
    s->cloth[10] = fx_cloth(s->world, &d);
    cr_assert_eq(cd_instance_set_transform(s->cloth[10], "rig", fx_v3(-20, 1.6f, 0),
                                           (cd_quat){0, 0, 0, 1}, &s->rig),
                 CD_OK);
    for (uint32_t x = 0; x < 12; x += 11)
        cr_assert_eq(cd_instance_attach(s->cloth[10], x, s->rig, NULL), CD_OK);
    c = cd_default_collider_def(CD_COLLIDER_CAPSULE);
    c.position = fx_v3(0.3f, -0.35f, -0.03f); /* reaches 4 cm into the cape */
    c.normal = fx_v3(1, 0, 0.2f);
    c.radius = 0.07f;
    c.height = 0.5f;
    c.friction = 0.3f;
    c.attachment = s->rig;
    add_full(s->cloth[10], &c);

    /* 11: a curtain that falls asleep, loses most of its top row (tethers
     * rebuilt) and wakes; 8 x 1 substeps, constant wind mode. */
    d = cd_default_cloth_def();
    d.width = d.height = 16;
    d.spacing = 0.06f;
    d.substeps = 8;
    d.solver_iterations = 1;
    d.wind_model = CD_WIND_CONSTANT;
    d.velocity_retention = 0.01f;
    d.sleep_threshold = 0.08f; /* asleep by step 62, before the unpin at 100 */
    d.origin = fx_v3(0, 5, 20);
    s->cloth[11] = fx_cloth(s->world, &d);
    for (uint32_t x = 0; x < 16; x++)
        cd_instance_pin(s->cloth[11], x, NULL);

    /* 12: a slanted sheet collapsing in folds on a floor, self-collision
     * on, 6 substeps: while it falls fast its pairs are searched every few
     * substeps. */
    d = cd_default_cloth_def();
    d.width = d.height = 24;
    d.spacing = 0.02f;
    d.down = fx_v3(0, -1, 0.15f);
    d.origin = fx_v3(30, 0.05f + 23 * 0.02f, 0);
    d.self_distance = 0.016f;
    d.substeps = 6;
    d.sleep_threshold = 0.0f;
    s->cloth[12] = fx_cloth(s->world, &d);
    add(s->cloth[12], CD_COLLIDER_PLANE, fx_v3(30, 0, 0), fx_v3(0, 1, 0), 0, 0);
}

static void build_scene(scene *s)
{
    s->world = fx_world();
    cd_world_set_global_wind(s->world, fx_v3(0.5f, 0, -0.3f));
    cd_cloth_def d;

    /* 0: the seed's curtain, top row pinned. */
    d = cd_default_cloth_def();
    d.origin = fx_v3(0, 3, 0);
    s->cloth[0] = fx_cloth(s->world, &d);
    for (uint32_t x = 0; x < 10; x++)
        cd_instance_pin(s->cloth[0], x, NULL);

    /* 1: a flag on its left edge in a strong wind. */
    d = cd_default_cloth_def();
    d.width = 20;
    d.height = 15;
    d.spacing = 0.05f;
    d.stiffness = 0.95f;
    d.origin = fx_v3(5, 2, 0);
    s->cloth[1] = fx_cloth(s->world, &d);
    for (uint32_t y = 0; y < 15; y++)
        cd_instance_pin(s->cloth[1], y * 20, NULL);
    cd_instance_set_wind(s->cloth[1], fx_v3(3, 0, 1));

    /* 2: a small tablecloth dropped on a sphere. */
    d = cd_default_cloth_def();
    d.width = d.height = 7;
    d.down = fx_v3(0, 0, 1);
    d.origin = fx_v3(-0.3f, 0.6f, -0.3f);
    s->cloth[2] = fx_cloth(s->world, &d);
    add(s->cloth[2], CD_COLLIDER_SPHERE, fx_v3(0, 0, 0), fx_v3(0, 1, 0), 0.35f, 0);

    /* 3: a capsule over a ground plane, heavy and damped. */
    d = cd_default_cloth_def();
    d.width = d.height = 16;
    d.spacing = 0.06f;
    d.mass = 4.0f;
    d.damping = 0.05f;
    d.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    d.down = fx_v3(0, 0, 1);
    d.origin = fx_v3(-0.45f, 0.5f, -0.45f);
    s->cloth[3] = fx_cloth(s->world, &d);
    add(s->cloth[3], CD_COLLIDER_CAPSULE, fx_v3(0, 0.2f, 0), fx_v3(1, 0.2f, 0.3f), 0.12f, 0.9f);
    add(s->cloth[3], CD_COLLIDER_PLANE, fx_v3(0, 0, 0), fx_v3(0, 1, 0), 0, 0);

    /* 4: a stiff ribbon, 16 iterations, hung by one corner. */
    d = cd_default_cloth_def();
    d.width = 5;
    d.height = 30;
    d.spacing = 0.04f;
    d.stiffness = 1.0f;
    d.bend_stiffness = 1.0f;
    d.solver_iterations = 16;
    d.origin = fx_v3(-3, 2, 0);
    s->cloth[4] = fx_cloth(s->world, &d);
    cd_instance_pin(s->cloth[4], 0, NULL);

    /* 5: a cape whose shoulders move every step, brushing a moving capsule. */
    d = cd_default_cloth_def();
    d.width = d.height = 12;
    d.spacing = 0.05f;
    d.damping = 0.05f;
    d.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    d.bend_stiffness = 0.1f;
    d.origin = fx_v3(0, 1.6f, 3);
    s->cloth[5] = fx_cloth(s->world, &d);
    s->shoulder_collider =
        add(s->cloth[5], CD_COLLIDER_CAPSULE, fx_v3(0.25f, 1.3f, 2.9f), fx_v3(0, 1, 0), 0.1f, 0.6f);

    /* 6: a big cloth sliding down a tilted plane, 8 iterations. */
    d = cd_default_cloth_def();
    d.width = d.height = 25;
    d.spacing = 0.04f;
    d.solver_iterations = 8;
    d.down = fx_v3(0, 0.2f, 1);
    d.origin = fx_v3(10, 1, 0);
    s->cloth[6] = fx_cloth(s->world, &d);
    add(s->cloth[6], CD_COLLIDER_PLANE, fx_v3(10, 0.5f, 0), fx_v3(0.2f, 1, 0.1f), 0, 0);

    /* 7: a rope-like strip under sideways gravity, undamped, 2 iterations. */
    d = cd_default_cloth_def();
    d.width = 3;
    d.height = 40;
    d.spacing = 0.03f;
    d.damping = 0.0f;
    d.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    d.solver_iterations = 2;
    d.gravity = fx_v3(2, -9.81f, 1);
    d.origin = fx_v3(-6, 2, 0);
    s->cloth[7] = fx_cloth(s->world, &d);
    cd_instance_pin(s->cloth[7], 1, NULL);
    cd_instance_set_wind(s->cloth[7], fx_v3(0, 0, -2));

    build_depth(s);
}

/* The host's part of a step, done serially before the instances step: the
 * cape's shoulders and the capsule beside them follow a path. */
static void animate(scene *s, int step)
{
    const float t = (float)step * FX_DT;
    const float sway = 0.2f * sinf(2.0f * t);
    cd_vec3 left = fx_v3(sway, 1.6f, 3), right = fx_v3(sway + 0.55f, 1.6f, 3);
    cd_vec3 arm = fx_v3(sway + 0.25f, 1.3f, 2.9f + 0.1f * cosf(3.0f * t));
    cd_instance_pin(s->cloth[5], 0, &left);
    cd_instance_pin(s->cloth[5], 11, &right);
    cd_instance_move_collider(s->cloth[5], s->shoulder_collider, &arm, NULL);

    /* Cloth 10's rig walks and turns about y. */
    const float yaw = 0.3f * sinf(1.5f * t);
    const cd_quat turn = {0, sinf(0.5f * yaw), 0, cosf(0.5f * yaw)};
    cd_instance_set_transform(s->cloth[10], "rig", fx_v3(-20 + 0.5f * t, 1.6f, 0), turn, NULL);
    /* Cloth 11 loses its top row's middle, then gets two pins back. */
    if (step == 100)
        for (uint32_t x = 1; x < 15; x++)
            cd_instance_unpin(s->cloth[11], x);
    if (step == 160) {
        cd_instance_pin(s->cloth[11], 5, NULL);
        cd_instance_pin(s->cloth[11], 10, NULL);
    }
}

typedef struct step_job {
    cd_job job; /* first: a cd_job * is a step_job * */
    cd_instance *inst;
    cd_vec3 global_wind;
    bool unstable;
    bool slept; /* some step found it asleep */
    bool woke;  /* and a later one awake */
} step_job;

static void step_run(cd_job *job)
{
    step_job *sj = (step_job *)job;
    cd_step_result r = cd_instance_step(sj->inst, FX_DT, sj->global_wind);
    sj->unstable |= r.unstable;
    sj->woke |= sj->slept && !r.sleeping;
    sj->slept |= r.sleeping;
}

/* Steps the scene, through `pool` when given, and hashes every cloth. */
static void run_scene(cd_pool *pool, uint64_t hashes[SCENE_CLOTHS])
{
    uint64_t impulses = 0xcbf29ce484222325ull;
    int coupled_steps = 0;
    scene s;
    build_scene(&s);
    uint64_t initial[SCENE_CLOTHS];
    for (int k = 0; k < SCENE_CLOTHS; k++)
        initial[k] = position_hash(s.cloth[k]);

    step_job jobs[SCENE_CLOTHS];
    cd_job *list[SCENE_CLOTHS];
    for (int k = 0; k < SCENE_CLOTHS; k++) {
        jobs[k] = (step_job){.job = {.run = step_run},
                             .inst = s.cloth[k],
                             .global_wind = cd_world_global_wind(s.world)};
        list[k] = &jobs[k].job;
    }
    for (int step = 1; step <= SCENE_STEPS; step++) {
        animate(&s, step);
        if (pool != NULL) {
            cd_pool_run_batch(pool, list, SCENE_CLOTHS);
        } else {
            for (int k = 0; k < SCENE_CLOTHS; k++)
                step_run(list[k]);
        }
        /* The impulses of every step, chained. */
        const uint64_t h = impulse_hash(s.cloth[9]);
        impulses = (impulses ^ h) * 0x100000001b3ull;
        cd_collider_impulse first;
        if (cd_instance_collider_impulses(s.cloth[9], &first, 1) == 2 && first.linear.y != 0.0f)
            coupled_steps++;
    }
    for (int k = 0; k < SCENE_CLOTHS; k++) {
        hashes[k] = position_hash(s.cloth[k]);
        if (k == 9)
            hashes[k] ^= impulses;
        cr_assert_not(jobs[k].unstable, "cloth %d tripped the guard", k);
        cr_assert_neq(hashes[k], initial[k], "cloth %d never moved", k);
        cd_instance_info info;
        cd_instance_get_info(s.cloth[k], &info);
        cr_assert_eq(info.frame, (uint64_t)SCENE_STEPS, "cloth %d missed steps", k);
    }
    /* The scene does reach what it is there for: cloth 9 pushes its ball
     * (from its landing on), cloth 11 sleeps and wakes. */
    cr_assert(coupled_steps > 100, "cloth 9 touched its ball in %d steps", coupled_steps);
    cr_assert(jobs[11].slept && jobs[11].woke, "cloth 11 slept %d, woke %d", jobs[11].slept,
              jobs[11].woke);
    /* Cloth 12 fell fast enough to be searched more than once per step. */
    const cd_self_collision_stats self = cd_instance_self_collision_stats(s.cloth[12]);
    cr_assert(self.searches > (uint64_t)SCENE_STEPS && self.pairs > 0,
              "cloth 12: %llu searches, %llu pairs", (unsigned long long)self.searches,
              (unsigned long long)self.pairs);
    cd_world_destroy(s.world);
}

static void run_pooled(unsigned workers, uint64_t hashes[SCENE_CLOTHS])
{
    cd_pool *pool = cd_pool_create(workers, 4, NULL, NULL); /* capacity < jobs */
    cr_assert_not_null(pool);
    run_scene(pool, hashes);
    cd_pool_destroy(pool);
}

Test(determinism, positions_should_hash_the_same_with_1_or_4_workers_or_none, .timeout = 30)
{
    uint64_t serial[SCENE_CLOTHS], one[SCENE_CLOTHS], four[SCENE_CLOTHS], again[SCENE_CLOTHS];
    run_scene(NULL, serial);
    run_pooled(1, one);
    run_pooled(4, four);
    run_pooled(4, again); /* a second 4-worker run schedules differently */
    for (int k = 0; k < SCENE_CLOTHS; k++) {
        /* Bit-identical: the FNV-1a of the position bytes matches exactly. */
        cr_assert_eq(one[k], serial[k], "cloth %d: 1 worker %016llx, serial %016llx", k,
                     (unsigned long long)one[k], (unsigned long long)serial[k]);
        cr_assert_eq(four[k], serial[k], "cloth %d: 4 workers %016llx, serial %016llx", k,
                     (unsigned long long)four[k], (unsigned long long)serial[k]);
        cr_assert_eq(again[k], serial[k], "cloth %d: second 4-worker run differs", k);
    }
    /* Thirteen different cloths, thirteen different hashes. */
    for (int a = 0; a < SCENE_CLOTHS; a++)
        for (int b = a + 1; b < SCENE_CLOTHS; b++)
            cr_assert_neq(serial[a], serial[b], "cloths %d and %d hash alike", a, b);
}

/* Within one SIMD path (solver.h: cd_solver_simd_path), 1, 2 and 4 workers
 * give the same bits; the scalar reference, the AVX2 and the AVX-512
 * kernels each. */
static void check_path(const char *path)
{
    cr_assert(cd_solver_select_simd(path), "%s", path);
    uint64_t serial[SCENE_CLOTHS], one[SCENE_CLOTHS], two[SCENE_CLOTHS], four[SCENE_CLOTHS];
    run_scene(NULL, serial);
    run_pooled(1, one);
    run_pooled(2, two);
    run_pooled(4, four);
    for (int k = 0; k < SCENE_CLOTHS; k++) {
        cr_assert_eq(one[k], serial[k], "%s, cloth %d: 1 worker differs", path, k);
        cr_assert_eq(two[k], serial[k], "%s, cloth %d: 2 workers differ", path, k);
        cr_assert_eq(four[k], serial[k], "%s, cloth %d: 4 workers differ", path, k);
    }
}

Test(determinism, scalar_path_should_hash_the_same_with_1_2_or_4_workers, .timeout = 60)
{
    check_path("scalar");
}

Test(determinism, avx2_path_should_hash_the_same_with_1_2_or_4_workers, .timeout = 60)
{
    if (!__builtin_cpu_supports("avx2"))
        cr_skip_test("this CPU has no AVX2: the scalar path is the only one");
    check_path("avx2");
}

Test(determinism, avx512_path_should_hash_the_same_with_1_2_or_4_workers, .timeout = 60)
{
    if (!cd_solver_select_simd("avx512"))
        cr_skip_test("this CPU has no AVX-512 (F, VL, BW, DQ)");
    check_path("avx512");
}

Test(determinism, same_scene_should_hash_the_same_in_two_worlds)
{
    /* Nothing global leaks between worlds: two serial runs agree. */
    uint64_t first[SCENE_CLOTHS], second[SCENE_CLOTHS];
    run_scene(NULL, first);
    run_scene(NULL, second);
    for (int k = 0; k < SCENE_CLOTHS; k++)
        cr_assert_eq(first[k], second[k], "cloth %d", k);
}
