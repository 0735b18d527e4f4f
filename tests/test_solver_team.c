/* One large instance stepped by several threads (solver/team.c): the same
 * bits with no helper, or 1, 2 or 3 helpers on a worker pool, on both
 * SIMD paths; the aerodynamic stage on its own likewise; a helper that
 * comes late returns; small cloths take no help. */
#include <string.h>

#include <criterion/criterion.h>

#include "../server/pool.h"
#include "../solver/internal.h"
#include "solver_fixtures.h"

#define TEAM_SIDE 96 /* 9,216 particles: 18 particle blocks, ~9 per colour */
#define TEAM_STEPS 60

/* A curtain pinned along its top edge (tethers on), draping over a ball
 * with friction onto a floor, in aerodynamic wind; `compliant` solves
 * stretch with XPBD, `coupled` hands the ball momentum (colliders then run
 * in one pass: impulses are summed in particle order). */
static cd_instance *large_curtain(cd_world *world, bool compliant, bool coupled)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = TEAM_SIDE;
    def.spacing = 0.02f;
    def.origin = fx_v3(-0.95f, 2.2f, 0.0f);
    def.solver_iterations = 6;
    def.substeps = 2;
    def.wind_model = CD_WIND_AERO;
    def.sleep_threshold = 0.0f;
    if (compliant)
        def.stretch_compliance = 1e-6f;
    cd_instance *inst = fx_cloth(world, &def);
    for (uint32_t x = 0; x < TEAM_SIDE; x += 5)
        cr_assert_eq(cd_instance_pin(inst, x, NULL), CD_OK);
    cd_collider_def ball = cd_default_collider_def(CD_COLLIDER_SPHERE);
    ball.position = fx_v3(0.0f, 1.2f, 0.3f);
    ball.radius = 0.4f;
    ball.friction = 0.3f;
    ball.static_friction = 0.5f;
    ball.coupling = coupled ? 0.5f : 0.0f;
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE);
    cd_id id;
    cr_assert_eq(cd_instance_add_collider(inst, &ball, &id), CD_OK);
    cr_assert_eq(cd_instance_add_collider(inst, &floor, &id), CD_OK);
    cr_assert_eq(cd_instance_set_wind(inst, fx_v3(2.0f, 0.0f, 1.5f)), CD_OK);
    return inst;
}

/* The same curtain as a garment: a mesh cloth (the grid's vertices and
 * triangles) with self-collision, its top row skinned (maxDistance 0), the
 * rest within 0.3 m of a skin that sways, above a backstop. */
static float garment_skin[3 * TEAM_SIDE * TEAM_SIDE], garment_normal[3 * TEAM_SIDE * TEAM_SIDE];

static cd_instance *large_garment(cd_world *world)
{
    const uint32_t w = TEAM_SIDE, n = w * w;
    static float v[3 * TEAM_SIDE * TEAM_SIDE];
    static uint32_t t[6 * (TEAM_SIDE - 1) * (TEAM_SIDE - 1)];
    for (uint32_t i = 0; i < n; i++) {
        v[3 * i] = -0.95f + 0.02f * (float)(i % w);
        v[3 * i + 1] = 2.2f - 0.02f * (float)(i / w);
        v[3 * i + 2] = 0.0f;
    }
    uint32_t k = 0;
    for (uint32_t y = 0; y + 1 < w; y++)
        for (uint32_t x = 0; x + 1 < w; x++) {
            const uint32_t tl = y * w + x, q[6] = {tl, tl + w, tl + 1, tl + 1, tl + w, tl + w + 1};
            memcpy(&t[k], q, sizeof q);
            k += 6;
        }
    cd_tri_mesh mesh = {.vertices = v, .vertex_count = n, .triangles = t, .triangle_count = k / 3};
    cd_cloth_def def = cd_default_cloth_def();
    def.solver_iterations = 6;
    def.substeps = 2;
    def.sleep_threshold = 0.0f;
    def.self_distance = 0.015f;
    cd_id id;
    cr_assert_eq(cd_world_create_mesh_cloth_ex(world, &mesh, &def, &id, NULL), CD_OK);
    cd_instance *inst = cd_world_get(world, id);
    static float reach[TEAM_SIDE * TEAM_SIDE];
    for (uint32_t i = 0; i < n; i++)
        reach[i] = i < w ? 0.0f : 0.3f;
    cr_assert_eq(cd_instance_paint(inst, CD_PAINT_MAX_DISTANCE, reach, n, NULL), CD_OK);
    const float radius = 0.5f, behind = 0.0f;
    cr_assert_eq(cd_instance_paint(inst, CD_PAINT_BACKSTOP_RADIUS, &radius, 1, NULL), CD_OK);
    cr_assert_eq(cd_instance_paint(inst, CD_PAINT_BACKSTOP_DISTANCE, &behind, 1, NULL), CD_OK);
    for (uint32_t i = 0; i < n; i++) {
        garment_normal[3 * i + 2] = 1.0f;
        memcpy(&garment_skin[3 * i], &v[3 * i], sizeof(float) * 3);
    }
    return inst;
}

/* A soft box of 16^3 = 4,096 vertices with a material (solver/material.c:
 * its tets solved colour by colour in blocks), pinned along one edge of
 * its top, falling onto a floor and swinging. */
static cd_instance *large_soft_body(cd_world *world)
{
    cd_tet_mesh m;
    cr_assert_eq(cd_mesh_box(fx_v3(-0.3f, 0.4f, -0.3f), fx_v3(0.6f, 0.6f, 0.6f), 15, 15, 15, &m),
                 CD_OK);
    cd_cloth_def def = cd_default_softbody_options();
    def.youngs_modulus = 2e4f;
    def.poisson_ratio = 0.4f;
    def.substeps = 2;
    def.solver_iterations = 2;
    def.sleep_threshold = 0.0f;
    cd_id id;
    cr_assert_eq(cd_world_create_softbody(world, &m, &def, &id), CD_OK);
    cd_instance *inst = cd_world_get(world, id);
    for (uint32_t i = 0; i < m.vertex_count; i++)
        if (m.vertices[3 * i + 1] > 0.999f && m.vertices[3 * i + 2] < -0.299f)
            cr_assert_eq(cd_instance_pin(inst, i, NULL), CD_OK);
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE);
    cr_assert_eq(cd_instance_add_collider(inst, &floor, &id), CD_OK);
    cd_mesh_free(&m);
    return inst;
}

static void sway(cd_instance *inst, int step)
{
    const uint32_t n = cd_instance_particle_count(inst);
    static float pose[3 * TEAM_SIDE * TEAM_SIDE];
    const float dx = 0.2f * sinf(0.3f * (float)step), dz = 0.1f * sinf(0.2f * (float)step);
    for (uint32_t i = 0; i < n; i++) {
        pose[3 * i] = garment_skin[3 * i] + dx;
        pose[3 * i + 1] = garment_skin[3 * i + 1];
        pose[3 * i + 2] = garment_skin[3 * i + 2] + dz;
    }
    cr_assert_eq(cd_instance_skin(inst, pose, garment_normal, NULL), CD_OK);
}

typedef struct team_job {
    cd_job job;
    cd_instance *inst;
    uint64_t ticket; /* 0: the leader */
    uint64_t helped; /* blocks this helper ran */
} team_job;

static void team_run(cd_job *job)
{
    team_job *tj = (team_job *)job;
    if (tj->ticket == 0)
        cr_assert_not(cd_instance_step(tj->inst, FX_DT, fx_no_wind()).unstable);
    else
        tj->helped = cd_instance_help_step(tj->inst, tj->ticket);
}

/* What run_large steps. */
/* A sheet with self-collision dropped slanted onto a floor, where it
 * folds (tests/test_solver_self.c): its pair search is shared by the team. */
static cd_instance *large_fold(cd_world *world)
{
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = TEAM_SIDE;
    def.spacing = 0.02f;
    def.origin = fx_v3(0, 0.05f + (TEAM_SIDE - 1) * 0.02f, 0);
    def.down = fx_v3(0, -1, 0.15f);
    def.self_distance = 0.016f;
    def.substeps = 4;
    def.sleep_threshold = 0.0f;
    cd_instance *inst = fx_cloth(world, &def);
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE);
    cd_id id;
    cr_assert_eq(cd_instance_add_collider(inst, &floor, &id), CD_OK);
    return inst;
}

typedef enum large_kind { LARGE_CURTAIN, LARGE_GARMENT, LARGE_SOFT, LARGE_FOLD } large_kind;

static uint64_t run_large(int helpers, bool compliant, bool coupled, large_kind kind,
                          uint64_t *helped);

/* Steps a fresh curtain TEAM_STEPS times, the leader and `helpers` helper
 * jobs on a pool of helpers + 1 workers (no pool at all when helpers < 0;
 * not even the instance's team with NO_TEAM), and returns the hash of
 * every step's positions chained. */
#define NO_TEAM (-2)
static uint64_t run_curtain(int helpers, bool compliant, bool coupled, uint64_t *helped)
{
    return run_large(helpers, compliant, coupled, LARGE_CURTAIN, helped);
}

static uint64_t run_large(int helpers, bool compliant, bool coupled, large_kind kind,
                          uint64_t *helped)
{
    *helped = 0;
    cd_world *world = fx_world();
    const bool garment = kind == LARGE_GARMENT;
    cd_instance *inst = kind == LARGE_SOFT   ? large_soft_body(world)
                        : kind == LARGE_FOLD ? large_fold(world)
                        : garment            ? large_garment(world)
                                             : large_curtain(world, compliant, coupled);
    cd_pool *pool = helpers >= 0 ? cd_pool_create((unsigned)helpers + 1, 8, NULL, NULL) : NULL;
    cd_team *team = inst->team;
    if (helpers == NO_TEAM)
        inst->team = NULL; /* every stage serial, as a small instance steps */
    uint64_t chain = 0;
    for (int step = 0; step < TEAM_STEPS; step++) {
        if (garment)
            sway(inst, step);
        if (pool == NULL) {
            cr_assert_not(cd_instance_step(inst, FX_DT, fx_no_wind()).unstable);
        } else {
            team_job jobs[4];
            cd_job *list[4];
            const uint64_t ticket = cd_instance_help_ticket(inst);
            cr_assert_neq(ticket, 0u, "a large cloth takes help");
            for (int k = 0; k <= helpers; k++) {
                jobs[k] = (team_job){.job = {.run = team_run}, .inst = inst,
                                     .ticket = k == 0 ? 0 : ticket};
                list[k] = &jobs[k].job;
            }
            cd_pool_run_batch(pool, list, (uint32_t)helpers + 1);
            for (int k = 1; k <= helpers; k++)
                *helped += jobs[k].helped;
        }
        const uint32_t n = cd_instance_particle_count(inst);
        chain = chain * 31 + fx_fnv1a(cd_instance_local_positions(inst), sizeof(float) * 3 * n);
        cd_collider_impulse imp[2];
        const uint32_t got = cd_instance_collider_impulses(inst, imp, 2);
        chain = chain * 31 + fx_fnv1a(imp, got * sizeof imp[0]);
    }
    inst->team = team;
    cd_pool_destroy(pool);
    cd_world_destroy(world);
    return chain;
}

static void same_bits_with_any_helpers(bool compliant, bool coupled)
{
    uint64_t helped = 0, helped_in_all = 0;
    const uint64_t alone = run_curtain(-1, compliant, coupled, &helped);
    for (int helpers = 0; helpers <= 3; helpers++) {
        cr_assert_eq(run_curtain(helpers, compliant, coupled, &helped), alone,
                     "%d helpers differ from a serial step (%s, %s)", helpers,
                     compliant ? "XPBD" : "seed", coupled ? "coupled" : "uncoupled");
        helped_in_all += helped;
    }
    /* The comparison means something only if helpers did take blocks
     * (thousands of stages: even a loaded machine gives them some). */
    cr_assert_gt(helped_in_all, 0u, "no helper ran a block");
}

static const char *const paths_of_team[] = {"scalar", "avx2", "avx512"};
#define TEAM_PATHS (sizeof paths_of_team / sizeof paths_of_team[0])

/* A skinned mesh garment with self-collision: the same bits too. */
Test(solver_team, a_large_skinned_garment_should_step_to_the_same_bits_with_0_to_3_helpers,
     .timeout = 120)
{
    uint64_t helped = 0, helped_in_all = 0;
    const uint64_t alone = run_large(-1, false, false, LARGE_GARMENT, &helped);
    for (int helpers = 1; helpers <= 3; helpers += 2) {
        cr_assert_eq(run_large(helpers, false, false, LARGE_GARMENT, &helped), alone,
                     "%d helpers differ from a serial step", helpers);
        helped_in_all += helped;
    }
    cr_assert_gt(helped_in_all, 0u, "no helper ran a block");
}

/* A grid folding onto itself: its self-collision searches run in blocks
 * (self_collision.c), and the pairs must come out in the serial order. */
Test(solver_team, a_large_folding_sheet_should_step_to_the_same_bits_with_0_to_3_helpers,
     .timeout = 120)
{
    const char *path = cd_solver_simd_path();
    for (size_t p = 0; p < 2; p++) {
        if (!cd_solver_select_simd(p == 0 ? "scalar" : "avx2"))
            continue; /* a CPU without AVX2 */
        uint64_t helped = 0, helped_in_all = 0;
        /* The reference: no team at all, so one search over every particle. */
        const uint64_t alone = run_large(NO_TEAM, false, false, LARGE_FOLD, &helped);
        cr_assert_eq(run_large(-1, false, false, LARGE_FOLD, &helped), alone,
                     "the team's blocks run by the leader alone differ (%s)",
                     cd_solver_simd_path());
        for (int helpers = 1; helpers <= 3; helpers += 2) {
            cr_assert_eq(run_large(helpers, false, false, LARGE_FOLD, &helped), alone,
                         "%d helpers differ from a serial step (%s)", helpers,
                         cd_solver_simd_path());
            helped_in_all += helped;
        }
        cr_assert_gt(helped_in_all, 0u, "no helper ran a block");
    }
    cd_solver_select_simd(path);
}

/* A soft body with a material: its tets' colours run in blocks. */
Test(solver_team, a_large_material_soft_body_should_step_to_the_same_bits_with_0_to_3_helpers,
     .timeout = 120)
{
    uint64_t helped = 0, helped_in_all = 0;
    const uint64_t alone = run_large(-1, false, false, LARGE_SOFT, &helped);
    for (int helpers = 0; helpers <= 3; helpers++) {
        cr_assert_eq(run_large(helpers, false, false, LARGE_SOFT, &helped), alone,
                     "%d helpers differ from a serial step", helpers);
        helped_in_all += helped;
    }
    cr_assert_gt(helped_in_all, 0u, "no helper ran a block");
}

Test(solver_team, a_large_cloth_should_step_to_the_same_bits_with_0_to_3_helpers, .timeout = 120)
{
    const char *path = cd_solver_simd_path();
    for (size_t p = 0; p < TEAM_PATHS; p++) {
        if (!cd_solver_select_simd(paths_of_team[p]))
            continue; /* a CPU without AVX2 or AVX-512 */
        same_bits_with_any_helpers(false, false);
        same_bits_with_any_helpers(true, true);
    }
    cd_solver_select_simd(path);
}

Test(solver_team, a_helper_should_return_at_once_when_its_step_is_over)
{
    cd_world *world = fx_world();
    cd_instance *inst = large_curtain(world, false, false);
    const uint64_t ticket = cd_instance_help_ticket(inst);
    cd_instance_step(inst, FX_DT, fx_no_wind());
    cd_instance_help_step(inst, ticket); /* would spin for ever if not */
    cr_assert_eq(cd_instance_help_ticket(inst), ticket + 1);
    /* A disabled instance's step is over at once too. */
    cd_instance_set_enabled(inst, false);
    const uint64_t next = cd_instance_help_ticket(inst);
    cd_instance_step(inst, FX_DT, fx_no_wind());
    cd_instance_help_step(inst, next);
    cd_world_destroy(world);
}

Test(solver_team, a_cloth_under_4096_particles_should_take_no_help)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = 63;
    def.height = 64;
    def.spacing = 0.02f;
    cd_instance *small = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_help_ticket(small), 0u);
    cd_instance_help_step(small, 1); /* no team: returns */
    def.width = 64;
    cd_instance *large = fx_cloth(world, &def);
    cr_assert_neq(cd_instance_help_ticket(large), 0u);
    cd_world_destroy(world);
}

/* ---- the aerodynamic stage on its own (solver/aero.c) ---------------------- */

#define AERO_STEPS 20
#define AERO_STAGES_PER_STEP 24 /* a stage lasts ~0.05 ms: a helper must find some */

typedef struct aero_job {
    cd_job job;
    cd_instance *inst;
    const cd_substep *sub;
    uint64_t ticket; /* 0: the leader */
    uint64_t helped;
    uint64_t chain;  /* the leader's: the hash of prev after each stage, chained */
} aero_job;

static void aero_run(cd_job *job)
{
    aero_job *aj = (aero_job *)job;
    if (aj->ticket != 0) {
        aj->helped = cd_instance_help_step(aj->inst, aj->ticket);
        return;
    }
    const uint32_t n = cd_instance_particle_count(aj->inst);
    for (int k = 0; k < AERO_STAGES_PER_STEP; k++) {
        cd_stage_aerodynamics(aj->inst, aj->sub);
        aj->chain = aj->chain * 31 + fx_fnv1a(aj->inst->prev, sizeof(float) * 3 * n);
    }
    cd_team_step_done(aj->inst->team); /* what cd_instance_step does after a step */
}

/* The curtain after 20 steps, then AERO_STEPS "steps" of 8 calls of the
 * aerodynamic stage alone in a wind of (6, 0, 4) m/s (`model`), the leader
 * and `helpers` helpers on a pool (no pool when helpers < 0); the hash of
 * the Verlet history after each call, chained. */
static uint64_t run_aero(int helpers, cd_wind_model model, uint64_t *helped)
{
    *helped = 0;
    cd_world *world = fx_world();
    cd_instance *inst = large_curtain(world, false, false);
    cd_cloth_def def = cd_instance_def(inst);
    def.wind_model = model;
    cr_assert_eq(cd_instance_configure(inst, &def), CD_OK);
    for (int step = 0; step < 20; step++)
        cr_assert_not(cd_instance_step(inst, FX_DT, fx_no_wind()).unstable);
    const cd_substep sub = {.h = FX_DT / 2, .keep = 1.0f, .wind = fx_v3(6.0f, 0.0f, 4.0f)};
    const int extra = helpers > 0 ? helpers : 0;
    cd_pool *pool = helpers >= 0 ? cd_pool_create((unsigned)extra + 1, 8, NULL, NULL) : NULL;
    uint64_t chain = 0;
    for (int k = 0; k < AERO_STEPS; k++) {
        aero_job jobs[4];
        cd_job *list[4];
        const uint64_t ticket = cd_instance_help_ticket(inst);
        for (int j = 0; j <= extra; j++) {
            jobs[j] = (aero_job){.job = {.run = aero_run}, .inst = inst, .sub = &sub,
                                 .ticket = j == 0 ? 0 : ticket, .chain = chain};
            list[j] = &jobs[j].job;
        }
        if (pool == NULL)
            aero_run(&jobs[0].job);
        else
            cd_pool_run_batch(pool, list, (uint32_t)extra + 1);
        chain = jobs[0].chain;
        for (int j = 1; j <= extra; j++)
            *helped += jobs[j].helped;
    }
    cd_pool_destroy(pool);
    cd_world_destroy(world);
    return chain;
}

Test(solver_team, the_aerodynamic_stage_should_give_the_same_bits_with_0_to_3_helpers,
     .timeout = 120)
{
    /* Its rows of cells are shared out in blocks (a 96-wide grid: 3 rows
     * of cells, 570 triangles, a block; 16 blocks for each of the two
     * parities of rows). */
    const char *path = cd_solver_simd_path();
    const cd_wind_model models[] = {CD_WIND_AERO, CD_WIND_DRAG_LIFT};
    for (size_t p = 0; p < TEAM_PATHS; p++) {
        if (!cd_solver_select_simd(paths_of_team[p]))
            continue;
        for (int m = 0; m < 2; m++) {
            uint64_t helped = 0, all = 0;
            const uint64_t alone = run_aero(-1, models[m], &helped);
            for (int helpers = 0; helpers <= 3; helpers++) {
                cr_assert_eq(run_aero(helpers, models[m], &helped), alone,
                             "%s, %s: %d helpers differ from a serial stage", paths_of_team[p],
                             cd_wind_model_name(models[m]), helpers);
                all += helped;
            }
            /* The comparison means something only if helpers did take
             * blocks: 1,440 stages of ~0.05 ms (the scheduler of a busy
             * machine may keep a helper off the CPU through a whole
             * step, but not through all of them). */
            cr_assert_gt(all, 0u, "%s, %s: helpers ran no aero block", paths_of_team[p],
                         cd_wind_model_name(models[m]));
        }
    }
    cd_solver_select_simd(path);
}
