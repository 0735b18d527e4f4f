/* The instability guard (solver/step.c): a step that leaves any coordinate
 * non-finite or farther than 1e5 m from the origin is undone, the instance
 * is disabled and flagged unstable, and the step reports it. Positions a
 * caller can read are therefore always finite. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "solver_fixtures.h"

#define GUARD_LIMIT CD_WORLD_EXTENT /* metres */

static bool all_within_guard(const cd_instance *inst)
{
    for (uint32_t i = 0; i < cd_instance_particle_count(inst); i++) {
        const cd_vec3 p = fx_pos(inst, i); /* the box is the world's */
        if (!(fabsf(p.x) <= GUARD_LIMIT && fabsf(p.y) <= GUARD_LIMIT && fabsf(p.z) <= GUARD_LIMIT))
            return false;
    }
    return true;
}

Test(solver_guard, runaway_step_should_be_undone_reported_and_disable_the_instance)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    /* Finite, but one step of it moves a particle by g dt^2 = 2.8e8 m. */
    def.gravity = fx_v3(0, -1e12f, 0);
    def.tethers = false; /* a tether to the pin would hold the cloth back */
    cd_instance *cloth = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_pin(cloth, 0, NULL), CD_OK);

    float before[300];
    int caught_at = 0;
    for (int step = 1; step <= 2 && !caught_at; step++) {
        fx_snapshot(cloth, before);
        cd_step_result r = cd_instance_step(cloth, FX_DT, fx_no_wind());
        if (r.unstable)
            caught_at = step;
    }
    /* Runs past 1e5 m within a step or two. */
    cr_assert(caught_at >= 1, "the guard did not fire within two steps");

    /* Undone to the bit: the positions from before the bad step. */
    cr_assert(fx_all_finite(cloth));
    cr_assert(fx_same_positions(cloth, before),
              "positions differ from those before step %d", caught_at);
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert_not(info.enabled);
    cr_assert(info.unstable);
    cr_assert_not(cd_instance_enabled(cloth));
    /* The undone step does not count. */
    cr_assert_eq(info.frame, (uint64_t)(caught_at - 1));
    /* It restarts at rest: zero velocity everywhere. */
    for (uint32_t i = 0; i < 100; i++) {
        cd_vec3 v = cd_instance_velocity(cloth, i);
        cr_assert(v.x == 0.0f && v.y == 0.0f && v.z == 0.0f, "particle %u moves", i);
    }

    /* Disabled: further steps change nothing and report nothing. */
    cd_step_result r = cd_instance_step(cloth, FX_DT, fx_no_wind());
    cr_assert_not(r.unstable);
    cr_assert(fx_same_positions(cloth, before));
    cd_world_destroy(world);
}

Test(solver_guard, enabling_should_clear_the_unstable_flag_and_resume_from_rest)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.gravity = fx_v3(0, -1e12f, 0);
    cd_instance *cloth = fx_cloth(world, &def);
    cd_step_result r = {.unstable = false};
    for (int step = 0; step < 2 && !r.unstable; step++)
        r = cd_instance_step(cloth, FX_DT, fx_no_wind());
    cr_assert(r.unstable);

    cd_instance_set_enabled(cloth, true);
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert(info.enabled);
    cr_assert_not(info.unstable, "enable clears the flag");

    /* With sane gravity it steps again, from rest: no particle falls more
     * than g dt^2 = 2.7 mm in its first step (1e-6 m rounding). */
    cr_assert_eq(cd_instance_set_gravity(cloth, fx_v3(0, -9.81f, 0)), CD_OK);
    float before[300];
    fx_snapshot(cloth, before);
    r = cd_instance_step(cloth, FX_DT, fx_no_wind());
    cr_assert_not(r.unstable);
    const double most = FX_G * FX_DT * FX_DT + 1e-6;
    for (uint32_t i = 0; i < 100; i++) {
        double drop = before[3 * i + 1] - fx_pos(cloth, i).y;
        cr_assert(drop > 0.0 && drop <= most, "particle %u fell %.7f m", i, drop);
    }
    cd_instance_get_info(cloth, &info);
    cr_assert(info.enabled && !info.unstable);
    cr_assert_eq(info.frame, 1u);
    cd_world_destroy(world);
}

/* Steps `cloth` up to `steps` times, asserting after each that every
 * position is finite and inside the guard's box. */
static void assert_never_nan(cd_instance *cloth, float dt, cd_vec3 wind, int steps,
                             const char *what)
{
    for (int step = 1; step <= steps; step++) {
        cd_step_result r = cd_instance_step(cloth, dt, wind);
        cr_assert(fx_all_finite(cloth), "%s: non-finite position after step %d", what, step);
        cr_assert(all_within_guard(cloth), "%s: beyond 1e5 m after step %d", what, step);
        if (r.unstable) {
            cd_instance_set_enabled(cloth, true); /* and provoke it again */
        }
    }
}

Test(solver_guard, positions_should_never_contain_a_nan_or_infinity)
{
    cd_world *world = fx_world();

    /* The largest finite gravity with a pinned particle: the constraint
     * next to the pin sees a distance whose square overflows, inf / inf is
     * NaN. The guard has to catch NaN, not only large values. */
    cd_cloth_def def = cd_default_cloth_def();
    def.gravity = fx_v3(0, -3.0e38f, 0);
    cd_instance *cloth = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_pin(cloth, 0, NULL), CD_OK);
    assert_never_nan(cloth, 1.0f, fx_no_wind(), 5, "gravity -3e38, dt 1");

    /* Huge wind, from the instance and from the world, every axis. */
    def = cd_default_cloth_def();
    cloth = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_set_wind(cloth, fx_v3(3.0e38f, -3.0e38f, 3.0e38f)), CD_OK);
    assert_never_nan(cloth, FX_DT, fx_v3(3.0e38f, 3.0e38f, -3.0e38f), 5, "wind 3e38");

    /* Stiff, undamped and one second per step, with a pin far away: stretch
     * that no step can resolve. */
    def = cd_default_cloth_def();
    def.stiffness = 1.0f;
    def.bend_stiffness = 1.0f;
    def.damping = 0.0f;
    def.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    cloth = fx_cloth(world, &def);
    cd_vec3 far = fx_v3(9.0e4f, -9.0e4f, 9.0e4f);
    cr_assert_eq(cd_instance_pin(cloth, 99, &far), CD_OK);
    assert_never_nan(cloth, 1.0f, fx_no_wind(), 10, "far pin, dt 1");

    /* Every read of every instance: all finite. */
    cd_id ids[8];
    uint32_t n = cd_world_list(world, ids, 8);
    cr_assert_eq(n, 3u);
    for (uint32_t k = 0; k < n; k++)
        cr_assert(fx_all_finite(cd_world_get(world, ids[k])));
    cd_world_destroy(world);
}

Test(solver_guard, cloth_accepted_at_the_edge_of_the_guard_box_should_step)
{
    /* Creation refuses a grid reaching beyond 1e5 m, so whatever it accepts
     * can be simulated: here a curtain whose top-right corner is 1 m inside
     * the box (float spacing there is 8 mm, so it is a coarse cloth). */
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.origin = fx_v3(99999.0f, 99999.0f, -99999.0f);
    def.right = fx_v3(-1, 0, 0);
    cd_instance *cloth = fx_cloth(world, &def);
    for (uint32_t x = 0; x < 10; x++)
        cr_assert_eq(cd_instance_pin(cloth, x, NULL), CD_OK);
    for (int step = 1; step <= 120; step++) {
        cd_step_result r = cd_instance_step(cloth, FX_DT, fx_no_wind());
        cr_assert_not(r.unstable, "step %d tripped the guard", step);
    }
    cr_assert(all_within_guard(cloth));
    /* It hangs: the bottom row is below the pins. */
    cr_assert(fx_pos(cloth, 95).y < 99999.0f - 0.5f);
    cd_world_destroy(world);
}
