/* Levels of detail (solver/lod.c, issue 15): what each level runs, what it
 * costs, and that changing level mid-simulation never makes a cloth jump or
 * explode. The "jump" is measured against the cloth's own motion: in the
 * step where the level changes, no particle lands farther from where the
 * unchanged level would have put it than JUMP_TOLERANCE of the span, and
 * the fastest particle's move in that step and the next ones stays within
 * MOVE_RATIO of its move in the step before (straight from the coarsest
 * level to full detail, before finer levels came one a step, it was 1.51). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "../solver/snapshot.h"
#include "solver_fixtures.h"

#define N 16
#define SPACING 0.05f
#define SPAN ((N - 1) * SPACING)
#define JUMP_TOLERANCE 0.015 /* of the span: 11 mm on this 75 cm sheet (measured: 1.0% at most) */
#define MOVE_RATIO 1.25 /* the swinging hem itself speeds up 5-13% a step */

/* A sheet released from horizontal (down +z), top row pinned: it swings. */
static cd_instance *swinging_sheet(cd_world *world, int32_t substeps, int32_t iterations)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = N;
    def.spacing = SPACING;
    def.down = fx_v3(0, 0, 1);
    def.origin = fx_v3(0, 2, 0);
    def.substeps = substeps;
    def.solver_iterations = iterations;
    def.sleep_threshold = 0.0f;
    cd_instance *inst = fx_cloth(world, &def);
    for (uint32_t x = 0; x < N; x++)
        cr_assert_eq(cd_instance_pin(inst, x, NULL), CD_OK);
    return inst;
}

static double largest_move(const float *a, const float *b, uint32_t n)
{
    double worst = 0.0;
    for (uint32_t i = 0; i < n; i++)
        worst = fmax(worst, fx_dist(fx_v3(a[3 * i], a[3 * i + 1], a[3 * i + 2]),
                                    fx_v3(b[3 * i], b[3 * i + 1], b[3 * i + 2])));
    return worst;
}

Test(solver_lod, each_level_halves_the_work_iterations_first)
{
    static const struct {
        int32_t substeps, iterations;
        int32_t want[CD_LOD_LEVELS][2];
    } cases[] = {
        {1, 8, {{1, 8}, {1, 4}, {1, 2}, {1, 1}}},
        {1, 4, {{1, 4}, {1, 2}, {1, 1}, {1, 1}}},
        {4, 4, {{4, 4}, {4, 2}, {4, 1}, {2, 1}}},
        {0, 1, {{6, 1}, {3, 1}, {2, 1}, {1, 1}}}, /* automatic: 6 at 60 Hz */
        {3, 3, {{3, 3}, {3, 2}, {3, 1}, {2, 1}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cd_cloth_def def = cd_default_cloth_def();
        def.substeps = cases[c].substeps;
        def.solver_iterations = cases[c].iterations;
        for (int32_t k = 0; k < CD_LOD_LEVELS; k++) {
            int32_t s, it;
            cd_lod_counts(&def, FX_DT, k, &s, &it);
            cr_assert(s == cases[c].want[k][0] && it == cases[c].want[k][1],
                      "%d x %d at level %d: %d x %d", cases[c].substeps, cases[c].iterations,
                      k, s, it);
        }
    }
    cr_assert_eq(cd_lod_frame_interval(0), 1u);
    cr_assert_eq(cd_lod_frame_interval(1), 1u);
    cr_assert_eq(cd_lod_frame_interval(2), 2u);
    cr_assert_eq(cd_lod_frame_interval(3), 4u);
    cr_assert_eq(cd_lod_frame_interval(99), 4u, "past the last level: the last");
}

Test(solver_lod, cost_counts_half_iterations_and_nothing_while_asleep)
{
    cd_world *world = fx_world();
    cd_instance *sheet = swinging_sheet(world, 1, 8);
    const uint64_t p = N * N;
    cr_assert_eq(cd_instance_step_cost(sheet, FX_DT, 0), p * 1 * 17);
    cr_assert_eq(cd_instance_step_cost(sheet, FX_DT, 1), p * 1 * 9);
    cr_assert_eq(cd_instance_step_cost(sheet, FX_DT, 3), p * 1 * 3);
    /* Its own level is a floor: a finer level is not asked for. */
    cd_cloth_def def = cd_instance_def(sheet);
    def.lod = 2;
    cr_assert_eq(cd_instance_configure(sheet, &def), CD_OK);
    cr_assert_eq(cd_instance_step_cost(sheet, FX_DT, 0), p * 1 * 5);
    cr_assert_eq(cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0).lod, 2);
    cr_assert_eq(cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 3).lod, 3);
    cd_instance_set_enabled(sheet, false);
    cr_assert_eq(cd_instance_step_cost(sheet, FX_DT, 0), 0u);
    cd_world_destroy(world);
}

/* One step of `changed` at level `to`, of `same` at `from` (twins in the
 * same state): how far apart they land, and the moves. */
static void one_switch(int32_t substeps, int32_t iterations, int32_t from, int32_t to,
                       int warmup)
{
    cd_world *world = fx_world();
    cd_instance *same = swinging_sheet(world, substeps, iterations);
    cd_instance *changed = swinging_sheet(world, substeps, iterations);
    const uint32_t n = N * N;
    float before[3 * N * N], prior[3 * N * N], after_same[3 * N * N];
    for (int i = 0; i < warmup; i++) {
        if (i == warmup - 1)
            fx_snapshot(same, prior);
        cd_instance_step_lod(same, FX_DT, fx_no_wind(), from);
        cd_instance_step_lod(changed, FX_DT, fx_no_wind(), from);
    }
    fx_snapshot(same, before);
    cd_instance_step_lod(same, FX_DT, fx_no_wind(), from);
    const int32_t first = to < from - 1 ? from - 1 : to; /* finer: one level a step */
    cr_assert_eq(cd_instance_step_lod(changed, FX_DT, fx_no_wind(), to).lod, first);
    fx_snapshot(same, after_same);
    float *after = malloc(sizeof(float) * 3 * n);
    fx_snapshot(changed, after);
    cr_assert(fx_all_finite(changed));
    const double apart = largest_move(after, after_same, n) / SPAN;
    const double move_before = largest_move(before, prior, n);
    const double move = largest_move(after, before, n);
    cr_assert_lt(apart, JUMP_TOLERANCE,
                 "%d x %d, level %d -> %d: %.3f%% of the span from the unchanged twin",
                 substeps, iterations, from, to, 100.0 * apart);
    cr_assert_lt(move, MOVE_RATIO * move_before + 1e-4,
                 "%d x %d, level %d -> %d: moved %.2f mm, %.2f mm the step before", substeps,
                 iterations, from, to, 1e3 * move, 1e3 * move_before);
    /* Finer levels come one a step: the steps after the first ask for
     * `to` again; each moves within MOVE_RATIO of the step before. */
    for (int k = 1; k < CD_LOD_LEVELS; k++) {
        memcpy(prior, before, sizeof prior);
        memcpy(before, after, sizeof before);
        const int32_t ran = cd_instance_step_lod(changed, FX_DT, fx_no_wind(), to).lod;
        cr_assert_geq(ran, to);
        fx_snapshot(changed, after);
        const double m0 = largest_move(before, prior, n), m1 = largest_move(after, before, n);
        cr_assert_lt(m1, MOVE_RATIO * m0 + 1e-4,
                     "%d x %d, level %d -> %d, step %d (at %d): moved %.2f mm, %.2f mm before",
                     substeps, iterations, from, to, k, ran, 1e3 * m1, 1e3 * m0);
    }
    cr_assert(fx_all_finite(changed));
    free(after);
    cd_world_destroy(world);
}

Test(solver_lod, switching_levels_mid_swing_should_not_jump)
{
    /* 20 steps after release the sheet swings at about 2 m/s at its hem. */
    for (int32_t to = 1; to < CD_LOD_LEVELS; to++) {
        one_switch(4, 4, 0, to, 20);
        one_switch(4, 4, to, 0, 20);
        one_switch(1, 8, 0, to, 20);
        one_switch(1, 8, to, 0, 20);
        one_switch(0, 1, 0, to, 20);
        one_switch(0, 1, to, 0, 20);
    }
}

Test(solver_lod, a_free_fall_keeps_its_velocity_across_a_change_of_substeps)
{
    /* No pins, no air: every particle falls at g t whatever the substeps.
     * Without the history's rescale, 4 -> 1 substeps would quarter the
     * velocity at once and 1 -> 4 quadruple it. */
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.origin = fx_v3(0, 50, 0);
    def.substeps = 4;
    def.solver_iterations = 1;
    def.air_density = 0.0f;
    def.velocity_retention = 1.0f;
    def.sleep_threshold = 0.0f;
    cd_instance *sheet = fx_cloth(world, &def);
    static const int32_t levels[] = {0, 3, 0, 2, 3, 1, 0};
    for (int step = 1; step <= 70; step++) {
        cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), levels[(step / 10) % 7]);
        const double want = FX_G * step * FX_DT;
        const cd_vec3 v = cd_instance_velocity(sheet, 55);
        cr_assert(fabs(-v.y - want) < 0.01 * want + 0.02, "step %d: %.4f m/s, want %.4f",
                  step, (double)-v.y, want);
    }
    cd_world_destroy(world);
}

Test(solver_lod, switching_every_step_stays_finite_and_no_faster_than_full_detail)
{
    cd_world *world = fx_world();
    cd_instance *full = swinging_sheet(world, 4, 4);
    cd_instance *toggled = swinging_sheet(world, 4, 4);
    double fastest_full = 0.0, fastest_toggled = 0.0;
    for (int step = 0; step < 300; step++) {
        cd_instance_step_lod(full, FX_DT, fx_no_wind(), 0);
        cr_assert_not(cd_instance_step_lod(toggled, FX_DT, fx_no_wind(), (step * 7) % 4).unstable);
        for (uint32_t i = 0; i < N * N; i++) {
            const cd_vec3 a = cd_instance_velocity(full, i), b = cd_instance_velocity(toggled, i);
            fastest_full = fmax(fastest_full, fx_dist(a, fx_v3(0, 0, 0)));
            fastest_toggled = fmax(fastest_toggled, fx_dist(b, fx_v3(0, 0, 0)));
        }
    }
    cr_assert(fx_all_finite(toggled));
    cr_assert_lt(fastest_toggled, 1.1 * fastest_full, "%.3f m/s against %.3f m/s at level 0",
                 fastest_toggled, fastest_full);
    cr_assert_lt(cd_instance_max_structural_strain(toggled), 0.05);
    cd_world_destroy(world);
}

Test(solver_lod, stepping_at_a_level_is_deterministic)
{
    cd_world *world = fx_world();
    cd_instance *a = swinging_sheet(world, 0, 2);
    cd_instance *b = swinging_sheet(world, 0, 2);
    for (int step = 0; step < 60; step++) {
        cd_instance_step_lod(a, FX_DT, fx_no_wind(), step % 4);
        cd_instance_step_lod(b, FX_DT, fx_no_wind(), step % 4);
    }
    const size_t bytes = sizeof(float) * 3 * N * N;
    cr_assert_eq(fx_fnv1a(cd_instance_local_positions(a), bytes),
                 fx_fnv1a(cd_instance_local_positions(b), bytes));
    cd_world_destroy(world);
}

/* The level its last step ran at and whether the caller degraded it. */
static void assert_level(const cd_instance *inst, int32_t lod, bool degraded, const char *when)
{
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    cr_assert_eq(info.lod, lod, "%s: ran at %d, want %d", when, info.lod, lod);
    cr_assert_eq(info.lod_degraded, degraded, "%s: degraded %d", when, info.lod_degraded);
}

static void set_lod(cd_instance *inst, int32_t lod)
{
    cd_cloth_def def = cd_instance_def(inst);
    def.lod = lod;
    cr_assert_eq(cd_instance_configure(inst, &def), CD_OK);
}

Test(solver_lod, a_level_the_caller_lowered_is_degraded_until_it_is_back)
{
    cd_world *world = fx_world();
    cd_instance *sheet = swinging_sheet(world, 1, 8);
    set_lod(sheet, 1);
    assert_level(sheet, 1, false, "before the first step: its own");
    cd_step_result r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
    cr_assert(r.lod == 1 && !r.degraded, "its own level is not degraded");
    assert_level(sheet, 1, false, "own level");

    /* A budget lowers it to 3; the steps that come back (2) are still the
     * budget's doing, the one at its own level is not. */
    r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 3);
    cr_assert(r.lod == 3 && r.degraded);
    assert_level(sheet, 3, true, "lowered");
    r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
    cr_assert(r.lod == 2 && r.degraded, "coming back from the budget: %d", r.lod);
    r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
    cr_assert(r.lod == 1 && !r.degraded, "back at its own level");
    assert_level(sheet, 1, false, "back");

    /* Its own lod goes 3 -> 0: the way back is its own, not degraded. */
    set_lod(sheet, 3);
    r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
    cr_assert(r.lod == 3 && !r.degraded, "its own coarse level");
    set_lod(sheet, 0);
    for (int32_t want = 2; want >= 0; want--) {
        r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
        cr_assert(r.lod == want && !r.degraded, "own way back: %d (want %d), degraded %d", r.lod,
                  want, r.degraded);
    }
    /* Lowered while coming back on its own: degraded from then on. */
    set_lod(sheet, 3);
    cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
    set_lod(sheet, 0);
    r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
    cr_assert(r.lod == 2 && !r.degraded);
    r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 2);
    cr_assert(r.lod == 2 && r.degraded, "asked for 2 where it would have run 1");
    r = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
    cr_assert(r.lod == 1 && r.degraded, "and the way back from it");
    assert_level(sheet, 1, true, "coming back");
    cd_world_destroy(world);
}

Test(solver_lod, a_snapshot_keeps_the_level_a_cloth_comes_back_from)
{
    /* Stepped at level 3, saved, loaded: both twins come back to full
     * detail one level a step, the same bits, degraded until they are back
     * (snapshot.c's "lodNow" and "lodDegraded"). */
    cd_world *a = fx_world();
    cd_instance *sheet = swinging_sheet(a, 4, 4);
    for (int step = 0; step < 20; step++)
        cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 3);
    const cd_id id = cd_instance_id(sheet);
    uint8_t *data = NULL;
    size_t len = 0;
    cr_assert_eq(cd_snapshot_save(a, &id, 1, &data, &len, NULL), CD_OK);
    cd_world *b = fx_world();
    cr_assert_eq(cd_snapshot_load(b, data, len, CD_SNAPSHOT_REPLACE, NULL, NULL), CD_OK);
    cd_instance *twin = cd_world_get(b, id);
    cr_assert_not_null(twin);
    const size_t bytes = sizeof(float) * 3 * N * N;
    for (int step = 0; step < 5; step++) {
        const cd_step_result ran = cd_instance_step_lod(sheet, FX_DT, fx_no_wind(), 0);
        const cd_step_result ran_twin = cd_instance_step_lod(twin, FX_DT, fx_no_wind(), 0);
        cr_assert_eq(ran_twin.lod, ran.lod);
        cr_assert_eq(ran.lod, step < 3 ? 2 - step : 0, "step %d ran at %d", step, ran.lod);
        cr_assert_eq(ran_twin.degraded, ran.lod > 0, "step %d: degraded %d", step, ran_twin.degraded);
        cr_assert_eq(fx_fnv1a(cd_instance_local_positions(sheet), bytes),
                     fx_fnv1a(cd_instance_local_positions(twin), bytes), "step %d", step);
    }
    free(data);
    cd_world_destroy(a);
    cd_world_destroy(b);
}
