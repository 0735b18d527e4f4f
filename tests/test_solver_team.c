/* One large instance stepped by several threads (solver/team.c): the same
 * bits with no helper, or 1, 2 or 3 helpers on a worker pool, on both
 * SIMD paths; a helper that comes late returns; small cloths take no help. */
#include <string.h>

#include <criterion/criterion.h>

#include "../server/pool.h"
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

/* Steps a fresh curtain TEAM_STEPS times, the leader and `helpers` helper
 * jobs on a pool of helpers + 1 workers (no pool at all when helpers < 0),
 * and returns the hash of every step's positions chained. */
static uint64_t run_curtain(int helpers, bool compliant, bool coupled, uint64_t *helped)
{
    *helped = 0;
    cd_world *world = fx_world();
    cd_instance *inst = large_curtain(world, compliant, coupled);
    cd_pool *pool = helpers >= 0 ? cd_pool_create((unsigned)helpers + 1, 8, NULL, NULL) : NULL;
    uint64_t chain = 0;
    for (int step = 0; step < TEAM_STEPS; step++) {
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
        chain = chain * 31 + fx_fnv1a(cd_instance_positions(inst), sizeof(float) * 3 * n);
        cd_collider_impulse imp[2];
        const uint32_t got = cd_instance_collider_impulses(inst, imp, 2);
        chain = chain * 31 + fx_fnv1a(imp, got * sizeof imp[0]);
    }
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

Test(solver_team, a_large_cloth_should_step_to_the_same_bits_with_0_to_3_helpers, .timeout = 120)
{
    const char *path = cd_solver_simd_path();
    const char *paths[] = {"scalar", "avx2"};
    for (int p = 0; p < 2; p++) {
        if (!cd_solver_select_simd(paths[p]))
            continue; /* a CPU without AVX2 */
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
