/* Verlet integration, forces and the step's bookkeeping (solver/integrate.c,
 * solver/step.c).
 *
 * The solver primes the Verlet history so that a cloth is at rest at t = 0:
 * under a constant acceleration a, particle positions are then exactly
 * x0 + a t^2 / 2 at t = n dt (the floats' rounding aside). A free-falling
 * cloth keeps every rest length, so its constraints do not disturb that.
 *
 * Measured (gcc -O2, x86-64): worst |y - (y0 - g t^2 / 2)| over 30 steps and
 * 100 particles is 1.0e-6 m; worst velocity error after 30 steps 9.5e-6 m/s;
 * sideways drift of a free-falling cloth 1.2e-7 m. The tolerances below are
 * 1e-4 m and 1e-3 m/s, as the contract states, 100x above what is measured. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "solver_fixtures.h"

#define FALL_STEPS 30

/* The seed's integrator in a vacuum: no damping, no air, and wind as the
 * seed's constant acceleration (the aerodynamic model has its own tests). */
static cd_cloth_def undamped_free_cloth(void)
{
    cd_cloth_def def = fx_seed_def();
    def.damping = 0.0f;
    def.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    def.air_density = 0.0f;
    def.wind_model = CD_WIND_CONSTANT;
    return def;
}

Test(solver_integration, free_fall_should_follow_y0_minus_half_g_t_squared_at_every_step)
{
    cd_world *world = fx_world();
    cd_cloth_def def = undamped_free_cloth();
    cd_instance *cloth = fx_cloth(world, &def);
    const uint32_t n = cd_instance_particle_count(cloth);
    float start[300];
    cr_assert_eq(n, 100u);
    fx_snapshot(cloth, start);

    for (int step = 1; step <= FALL_STEPS; step++) {
        cd_step_result r = cd_instance_step(cloth, FX_DT, fx_no_wind());
        cr_assert_not(r.unstable);
        const double t = step * (double)FX_DT;
        for (uint32_t i = 0; i < n; i++) {
            cd_vec3 p = fx_pos(cloth, i);
            double expected_y = start[3 * i + 1] - 0.5 * FX_G * t * t;
            /* Exact kinematics within 1e-4 m (measured 1.0e-6 m). */
            cr_assert_float_eq(p.y, expected_y, 1e-4, "step %d particle %u: y %.7f, want %.7f",
                               step, i, p.y, expected_y);
            /* Gravity is vertical: x and z stay put within 1e-5 m
             * (measured 1.2e-7 m of rounding through the constraints). */
            cr_assert_float_eq(p.x, start[3 * i], 1e-5, "step %d particle %u x", step, i);
            cr_assert_float_eq(p.z, start[3 * i + 2], 1e-5, "step %d particle %u z", step, i);
        }
    }
    cd_world_destroy(world);
}

/* Short substeps, far from the origin: the increment g h^2 is only some
 * dozens of float spacings of y there (7.6e-5 m at 360 Hz against 9.5e-7
 * m at 10 m), and plain Verlet in world coordinates kept every rounding
 * of y in its velocity: a cloth dropped from 10 m ended 5.8 mm short
 * after 0.5 s at 6 substeps, 9.7 mm long at 12, 18 mm long at 16.
 * Compensated (integrate.c's residual) and kept near an anchor
 * (anchor.c), it is within 0.3 mm at every count; measured 0.002 mm at 1
 * substep, 0.013 at 6, 0.08 at 12 and 0.17 at 16. What is left comes from
 * the constraints: local coordinates round finely near the anchor and
 * coarser away from it, so one move of every particle rounds a little
 * differently across the cloth (by up to 6e-8 m), and the passes that
 * straighten it round too. */
Test(solver_integration, free_fall_with_short_substeps_should_stay_exact_far_from_the_origin)
{
    const int counts[] = {1, 6, 12, 16};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        cd_world *world = fx_world();
        cd_cloth_def def = undamped_free_cloth();
        def.origin = fx_v3(3, 10, -7);
        def.substeps = counts[k];
        cd_instance *cloth = fx_cloth(world, &def);
        float start[300];
        fx_snapshot(cloth, start);
        for (int step = 1; step <= 30; step++)
            cd_instance_step(cloth, FX_DT, fx_no_wind());
        const double t = 30 * (double)FX_DT;
        for (uint32_t i = 0; i < 100; i++) {
            const double want = start[3 * i + 1] - 0.5 * FX_G * t * t;
            cr_assert_float_eq(fx_pos(cloth, i).y, want, 3e-4,
                               "%d substeps, particle %u: y %.6f, want %.6f", counts[k], i,
                               fx_pos(cloth, i).y, want);
        }
        cd_world_destroy(world);
    }
}

Test(solver_integration, damping_should_remove_that_fraction_of_velocity_each_step)
{
    cd_world *world = fx_world();
    cd_cloth_def def = undamped_free_cloth();
    cd_instance *free_fall = fx_cloth(world, &def);
    def.damping = 0.01f;
    def.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    cd_instance *damped = fx_cloth(world, &def);
    const float y0 = fx_pos(damped, 0).y;

    /* The seed's recurrence in double: x' = x + (x - prev)(1 - damping) + a dt^2,
     * primed for rest at t = 0 (prev = x + a dt^2 / 2). */
    const double a = -FX_G, dt = FX_DT;
    double x = y0, prev = y0 + a * dt * dt / 2.0;
    for (int step = 1; step <= FALL_STEPS; step++) {
        cd_instance_step(free_fall, FX_DT, fx_no_wind());
        cd_instance_step(damped, FX_DT, fx_no_wind());
        double next = x + (x - prev) * (1.0 - 0.01) + a * dt * dt;
        prev = x;
        x = next;
        /* The damped cloth follows the damped recurrence within 1e-4 m. */
        cr_assert_float_eq(fx_pos(damped, 0).y, x, 1e-4, "step %d", step);
    }
    const double drop_free = y0 - fx_pos(free_fall, 0).y;
    const double drop_damped = y0 - fx_pos(damped, 0).y;
    /* Measured over 0.5 s: 1.2263 m undamped, 1.1177 m with damping 0.01. */
    cr_assert(drop_damped < drop_free - 0.05, "damped drop %.4f m is not below free %.4f m",
              drop_damped, drop_free);
    cr_assert(drop_damped > 0.5 * drop_free, "damping 0.01 must not stop the fall (%.4f m)",
              drop_damped);
    cd_world_destroy(world);
}

Test(solver_integration, velocity_should_be_minus_g_times_t_minus_half_dt_after_free_fall)
{
    cd_world *world = fx_world();
    cd_cloth_def def = undamped_free_cloth();
    cd_instance *cloth = fx_cloth(world, &def);

    cd_vec3 v0 = cd_instance_velocity(cloth, 0);
    /* Before the first step the cloth is at rest: exactly zero. */
    cr_assert(v0.x == 0.0f && v0.y == 0.0f && v0.z == 0.0f);

    for (int step = 0; step < FALL_STEPS; step++)
        cd_instance_step(cloth, FX_DT, fx_no_wind());
    /* (x - prev) / dt is the velocity at the middle of the last step. */
    const double t = FALL_STEPS * (double)FX_DT;
    const double expected = -FX_G * (t - FX_DT / 2.0);
    for (uint32_t i = 0; i < cd_instance_particle_count(cloth); i++) {
        cd_vec3 v = cd_instance_velocity(cloth, i);
        /* Within 1e-3 m/s (measured 9.5e-6 m/s). */
        cr_assert_float_eq(v.y, expected, 1e-3, "particle %u: vy %.6f, want %.6f", i, v.y,
                           expected);
        cr_assert_float_eq(v.x, 0.0, 1e-3, "particle %u vx", i);
        cr_assert_float_eq(v.z, 0.0, 1e-3, "particle %u vz", i);
    }
    /* An index out of range reads as zero velocity rather than out of bounds. */
    cd_vec3 out = cd_instance_velocity(cloth, 100);
    cr_assert(out.x == 0.0f && out.y == 0.0f && out.z == 0.0f);
    cd_world_destroy(world);
}

Test(solver_integration, gravity_set_before_the_first_step_should_set_the_fall_rate)
{
    cd_world *world = fx_world();
    cd_cloth_def def = undamped_free_cloth();
    cd_instance *cloth = fx_cloth(world, &def);
    /* The Moon, and a sideways component to show every axis is honoured. */
    cr_assert_eq(cd_instance_set_gravity(cloth, fx_v3(0.0f, -1.62f, 0.5f)), CD_OK);
    const cd_vec3 p0 = fx_pos(cloth, 37);

    for (int step = 1; step <= FALL_STEPS; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        const double t = step * (double)FX_DT;
        cd_vec3 p = fx_pos(cloth, 37);
        /* x0 + g t^2 / 2 on each axis, within 1e-4 m. */
        cr_assert_float_eq(p.y, p0.y - 0.5 * 1.62 * t * t, 1e-4, "step %d y", step);
        cr_assert_float_eq(p.z, p0.z + 0.5 * 0.5 * t * t, 1e-4, "step %d z", step);
        cr_assert_float_eq(p.x, p0.x, 1e-4, "step %d x", step);
    }
    cd_world_destroy(world);
}

Test(solver_integration, gravity_switched_off_mid_flight_should_leave_uniform_motion)
{
    cd_world *world = fx_world();
    cd_cloth_def def = undamped_free_cloth();
    cd_instance *cloth = fx_cloth(world, &def);
    for (int step = 0; step < 10; step++)
        cd_instance_step(cloth, FX_DT, fx_no_wind());
    const cd_vec3 v10 = cd_instance_velocity(cloth, 0);
    /* It was falling at about g (10 - 1/2) dt = 1.55 m/s. */
    cr_assert_float_eq(v10.y, -FX_G * 9.5 * FX_DT, 1e-3);

    cr_assert_eq(cd_instance_set_gravity(cloth, fx_v3(0, 0, 0)), CD_OK);
    for (int step = 0; step < 20; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        cd_vec3 v = cd_instance_velocity(cloth, 0);
        /* No force, no damping: Newton's first law, within 1e-4 m/s. */
        cr_assert_float_eq(v.y, v10.y, 1e-4, "step %d after switch: vy %.6f", step, v.y);
    }
    cd_world_destroy(world);
}

Test(solver_integration, set_gravity_and_set_wind_should_reject_non_finite_vectors)
{
    cd_world *world = fx_world();
    cd_cloth_def def = undamped_free_cloth();
    cd_instance *cloth = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_set_gravity(cloth, fx_v3(0, NAN, 0)), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_set_gravity(cloth, fx_v3(INFINITY, 0, 0)), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_set_wind(cloth, fx_v3(0, 0, NAN)), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_set_wind(cloth, fx_v3(-INFINITY, 0, 0)), CD_E_INVALID_ARGUMENT);

    /* The rejected calls changed nothing: it still falls at g (1e-4 m). */
    const float y0 = fx_pos(cloth, 0).y;
    cd_instance_step(cloth, FX_DT, fx_no_wind());
    cr_assert_float_eq(fx_pos(cloth, 0).y, y0 - 0.5 * FX_G * FX_DT * FX_DT, 1e-4);
    cr_assert_float_eq(fx_pos(cloth, 0).x, 0.0, 1e-6);
    cd_world_destroy(world);
}

Test(solver_integration, wind_should_push_like_a_constant_acceleration_of_the_same_vector)
{
    cd_world *world = fx_world();
    cd_cloth_def def = undamped_free_cloth();
    def.gravity = fx_v3(0, 0, 0);
    cd_instance *windy = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_set_wind(windy, fx_v3(1, 0, 0)), CD_OK);
    def.gravity = fx_v3(1, 0, 0);
    cd_instance *tilted = fx_cloth(world, &def);
    float start[300];
    fx_snapshot(windy, start);

    for (int step = 1; step <= FALL_STEPS; step++) {
        cd_instance_step(windy, FX_DT, fx_no_wind());
        cd_instance_step(tilted, FX_DT, fx_no_wind());
        const double t = step * (double)FX_DT;
        for (uint32_t i = 0; i < 100; i++) {
            cd_vec3 p = fx_pos(windy, i);
            /* x0 + 1 m/s^2 * t^2 / 2 within 1e-4 m; y and z unmoved. */
            cr_assert_float_eq(p.x, start[3 * i] + 0.5 * t * t, 1e-4, "step %d particle %u", step,
                               i);
            cr_assert_float_eq(p.y, start[3 * i + 1], 1e-4, "step %d particle %u", step, i);
            cr_assert_float_eq(p.z, start[3 * i + 2], 1e-4, "step %d particle %u", step, i);
        }
        /* Wind is an acceleration like gravity: the same bits, step by step. */
        cr_assert(memcmp(cd_instance_local_positions(windy), cd_instance_local_positions(tilted),
                         sizeof start) == 0,
                  "step %d: wind (1,0,0) and gravity (1,0,0) differ", step);
    }
    cd_world_destroy(world);
}

Test(solver_integration, global_wind_should_add_to_the_instance_wind)
{
    cd_world *world = fx_world();
    cd_world_set_global_wind(world, fx_v3(0, 0, 2));
    cd_vec3 g = cd_world_global_wind(world);
    cr_assert(g.x == 0.0f && g.y == 0.0f && g.z == 2.0f, "global wind reads back as set");

    cd_cloth_def def = undamped_free_cloth();
    def.gravity = fx_v3(0, 0, 0);
    cd_instance *local = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_set_wind(local, fx_v3(1, 0, 0)), CD_OK);
    cd_instance *combined = fx_cloth(world, &def);
    cr_assert_eq(cd_instance_set_wind(combined, fx_v3(1, 0, 2)), CD_OK);
    const cd_vec3 p0 = fx_pos(local, 55);

    for (int step = 1; step <= FALL_STEPS; step++) {
        cd_instance_step(local, FX_DT, cd_world_global_wind(world));
        cd_instance_step(combined, FX_DT, fx_no_wind());
        const double t = step * (double)FX_DT;
        cd_vec3 p = fx_pos(local, 55);
        /* Own wind (1,0,0) plus global (0,0,2): x + t^2/2, z + t^2, 1e-4 m. */
        cr_assert_float_eq(p.x, p0.x + 0.5 * t * t, 1e-4, "step %d x", step);
        cr_assert_float_eq(p.z, p0.z + 0.5 * 2.0 * t * t, 1e-4, "step %d z", step);
        cr_assert_float_eq(p.y, p0.y, 1e-4, "step %d y", step);
        /* The same as an own wind of (1,0,2): bit-identical. */
        cr_assert(memcmp(cd_instance_local_positions(local), cd_instance_local_positions(combined),
                         300 * sizeof(float)) == 0,
                  "step %d: own + global wind differs from their sum", step);
    }
    cd_world_destroy(world);
}

Test(solver_integration, disabled_instance_should_not_move_and_keep_its_frame)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    cd_instance *cloth = fx_cloth(world, &def);
    for (int step = 0; step < 5; step++)
        cd_instance_step(cloth, FX_DT, fx_no_wind());

    cd_instance_set_enabled(cloth, false);
    cr_assert_not(cd_instance_enabled(cloth));
    float before[300];
    fx_snapshot(cloth, before);
    cd_instance_info info_before;
    cd_instance_get_info(cloth, &info_before);

    for (int step = 0; step < 10; step++) {
        cd_step_result r = cd_instance_step(cloth, FX_DT, fx_v3(3, 0, 0));
        cr_assert_not(r.unstable, "a skipped step reports nothing");
    }
    /* Not a bit moved, and the clock stood still. */
    cr_assert(fx_same_positions(cloth, before));
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert_eq(info.frame, 5u);
    cr_assert_eq(info.frame, info_before.frame);
    cr_assert(info.time == info_before.time, "time %.9f stayed %.9f", info.time,
              info_before.time);
    cr_assert_not(info.enabled);

    /* Enabled again, it carries on falling from where it stopped. */
    cd_instance_set_enabled(cloth, true);
    cd_instance_step(cloth, FX_DT, fx_no_wind());
    cr_assert(fx_pos(cloth, 99).y < before[3 * 99 + 1], "it falls again once enabled");
    cd_instance_get_info(cloth, &info);
    cr_assert_eq(info.frame, 6u);
    cd_world_destroy(world);
}

Test(solver_integration, frame_and_time_should_count_every_step_taken)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    cd_instance *cloth = fx_cloth(world, &def);
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert_eq(info.frame, 0u);
    cr_assert(info.time == 0.0);

    double elapsed = 0.0;
    for (int step = 1; step <= 40; step++) {
        float dt = step % 2 ? FX_DT : FX_DT / 2.0f; /* mixed step sizes */
        cd_instance_step(cloth, dt, fx_no_wind());
        elapsed += dt;
        cd_instance_get_info(cloth, &info);
        cr_assert_eq(info.frame, (uint64_t)step);
        /* Simulated seconds are the sum of the dts, within 1e-9 s. */
        cr_assert_float_eq(info.time, elapsed, 1e-9, "step %d", step);
    }
    cd_world_destroy(world);
}

Test(solver_integration, step_should_ignore_a_dt_out_of_range_or_a_non_finite_wind)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    cd_instance *cloth = fx_cloth(world, &def);
    cd_instance_step(cloth, FX_DT, fx_no_wind());
    float before[300];
    fx_snapshot(cloth, before);

    const float bad_dt[] = {0.0f, -FX_DT, 1.5f, NAN, INFINITY};
    for (size_t k = 0; k < sizeof bad_dt / sizeof bad_dt[0]; k++) {
        cd_step_result r = cd_instance_step(cloth, bad_dt[k], fx_no_wind());
        cr_assert_not(r.unstable);
    }
    cd_instance_step(cloth, FX_DT, fx_v3(NAN, 0, 0));
    cd_instance_step(cloth, FX_DT, fx_v3(0, INFINITY, 0));

    /* None of them was a step: positions and the frame counter unchanged. */
    cr_assert(fx_same_positions(cloth, before));
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert_eq(info.frame, 1u);
    cr_assert(info.enabled && !info.unstable);
    cd_world_destroy(world);
}
