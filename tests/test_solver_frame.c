/* Characters that run, spin and teleport (solver/frame.c): with inertia 0
 * a cloth is carried rigidly by its inertia frame, so a sprint or a spin
 * leaves its shape in the frame unchanged; with inertia 1 (the default) it
 * lags as world-space cloth does; a teleport moves everything with no
 * velocity spike. */
#include "../solver/internal.h"
#include "../solver/vec3.h"
#include "solver_fixtures.h"

#define W 8
#define H 8
#define N (W * H)

/* A small curtain hanging from a "root" transform at (0, 2, 0), settled.
 * The seed's stepping (1 substep x 4): soft in shear, so in world space a
 * sprint along its own plane leaves it 0.44 m behind, which the carried
 * run must not show. (At the default small steps the same curtain follows
 * its top row within 1.7 mm in its plane: the comparison would prove
 * nothing. tests/e2e/test_garments.py runs the carry at the defaults.) */
static cd_instance *hanging(cd_world *world, float linear, float angular)
{
    cd_cloth_def def = fx_seed_def();
    def.width = W;
    def.height = H;
    def.spacing = 0.05f;
    def.origin = fx_v3(-0.175f, 2.0f, 0.0f);
    def.linear_inertia = linear;
    def.angular_inertia = angular;
    def.sleep_threshold = 0.0f;
    cd_instance *inst = fx_cloth(world, &def);
    uint32_t root;
    cr_assert_eq(cd_instance_set_transform(inst, "root", fx_v3(0, 2, 0), (cd_quat){0, 0, 0, 1},
                                           &root), CD_OK);
    for (uint32_t x = 0; x < W; x++)
        cr_assert_eq(cd_instance_attach(inst, x, root, NULL), CD_OK);
    cr_assert_eq(cd_instance_set_inertia_frame(inst, root), CD_OK);
    for (int f = 0; f < 120; f++)
        cd_instance_step(inst, FX_DT, fx_no_wind());
    return inst;
}

/* Largest change of any particle's position in the root's frame. */
static double drift_in_frame(const cd_instance *inst, const float *before, cd_vec3 root_before,
                             cd_quat turn_before)
{
    const cd_transform *root = &inst->transforms[0];
    double worst = 0.0;
    for (uint32_t i = 0; i < N; i++) {
        const cd_vec3 now = cd_quat_rotate(cd_quat_conjugate(root->rotation),
                                           cd_v3_sub(fx_pos(inst, i), root->position));
        const cd_vec3 then = cd_quat_rotate(cd_quat_conjugate(turn_before),
                                            cd_v3_sub(cd_v3_load(&before[3 * i]), root_before));
        worst = fmax(worst, fx_dist(now, then));
    }
    return worst;
}

/* Sprints at 12 m/s along x, or spins at 8 rad/s about y, for 20 steps. */
static double run(float linear, float angular, bool spin)
{
    cd_world *world = fx_world();
    cd_instance *inst = hanging(world, linear, angular);
    static float before[3 * N];
    fx_snapshot(inst, before);
    const cd_vec3 root0 = inst->transforms[0].position;
    const cd_quat turn0 = inst->transforms[0].rotation;
    for (int f = 1; f <= 20; f++) {
        const float t = (float)f * FX_DT;
        const cd_vec3 at = spin ? root0 : fx_v3(12.0f * t, 2.0f, 0.0f);
        const float a = spin ? 8.0f * t : 0.0f;
        cd_instance_set_transform(inst, "root", at, (cd_quat){0, sinf(0.5f * a), 0, cosf(0.5f * a)},
                                  NULL);
        cd_instance_step(inst, FX_DT, fx_no_wind());
        cr_assert(fx_all_finite(inst));
    }
    const double drift = drift_in_frame(inst, before, root0, turn0);
    cd_world_destroy(world);
    return drift;
}

Test(frame, inertia_zero_carries_a_sprinting_cloth_rigidly)
{
    const double carried = run(0.0f, 1.0f, false), world_space = run(1.0f, 1.0f, false);
    cr_log_info("sprint at 12 m/s: shape drift in the frame %.5f m carried, %.4f m in world space",
                carried, world_space);
    cr_expect_lt(carried, 2e-3, "carried: the shape moved %.5f m in the frame", carried);
    cr_expect_gt(world_space, 0.05, "world space: the cloth lags (%.4f m)", world_space);
}

Test(frame, inertia_zero_carries_a_spinning_cloth_rigidly)
{
    const double carried = run(1.0f, 0.0f, true), world_space = run(1.0f, 1.0f, true);
    cr_log_info("spin at 8 rad/s: shape drift in the frame %.5f m carried, %.4f m in world space",
                carried, world_space);
    cr_expect_lt(carried, 2e-3, "carried: the shape moved %.5f m in the frame", carried);
    cr_expect_gt(world_space, 0.05, "world space: the cloth flares (%.4f m)", world_space);
}

Test(frame, half_inertia_lies_between)
{
    const double half = run(0.5f, 1.0f, false), full = run(1.0f, 1.0f, false);
    cr_expect(half > 2e-3 && half < full, "half inertia %.4f m, full %.4f m", half, full);
}

/* A swinging curtain teleported 100 m away and turned a quarter round:
 * every particle lands where the rigid move puts it, its velocity turned
 * with it, and the next step is as fast as without the teleport. */
Test(frame, a_teleport_moves_everything_with_no_velocity_spike)
{
    cd_world *world = fx_world();
    cd_instance *inst = hanging(world, 1.0f, 1.0f);
    cd_instance *twin = hanging(world, 1.0f, 1.0f);
    cd_instance_set_wind(inst, fx_v3(0, 0, 3));
    cd_instance_set_wind(twin, fx_v3(0, 0, 3));
    for (int f = 0; f < 30; f++) { /* swinging */
        cd_instance_step(inst, FX_DT, fx_no_wind());
        cd_instance_step(twin, FX_DT, fx_no_wind());
    }
    const cd_quat quarter = {0, sinf(0.25f * 3.14159265f), 0, cosf(0.25f * 3.14159265f)};
    const cd_vec3 shift = fx_v3(100, 0, 50), pivot = fx_v3(0, 2, 0);
    cd_vec3 v_before[N];
    for (uint32_t i = 0; i < N; i++)
        v_before[i] = cd_instance_velocity(inst, i);
    cr_assert_eq(cd_instance_teleport(inst, shift, quarter, pivot), CD_OK);
    for (uint32_t i = 0; i < N; i++) {
        const cd_vec3 want = cd_v3_add(cd_v3_add(pivot, cd_quat_rotate(quarter, cd_v3_sub(fx_pos(twin, i), pivot))), shift);
        cr_assert_lt(fx_dist(fx_pos(inst, i), want), 1e-4, "particle %u", i);
        cr_assert_lt(fx_dist(cd_instance_velocity(inst, i), cd_quat_rotate(quarter, v_before[i])),
                     1e-2, "particle %u's velocity turned with it", i);
    }
    /* The wind does not turn with the cloth: turn it by hand, then compare
     * the next steps' speeds. */
    cd_instance_set_wind(inst, cd_quat_rotate(quarter, fx_v3(0, 0, 3)));
    double fastest = 0.0, twin_fastest = 0.0;
    for (int f = 0; f < 10; f++) {
        cd_instance_step(inst, FX_DT, fx_no_wind());
        cd_instance_step(twin, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < N; i++) {
            fastest = fmax(fastest, cd_v3_length(cd_instance_velocity(inst, i)));
            twin_fastest = fmax(twin_fastest, cd_v3_length(cd_instance_velocity(twin, i)));
        }
    }
    cr_expect_lt(fabs(fastest - twin_fastest), 0.05 * twin_fastest + 1e-3,
                 "after the teleport %.4f m/s, without %.4f m/s", fastest, twin_fastest);
    /* Nothing lands outside the world box: refused, nothing moved. */
    const cd_vec3 p0 = fx_pos(inst, 0);
    cr_expect_eq(cd_instance_teleport(inst, fx_v3(2e5f, 0, 0), (cd_quat){0, 0, 0, 1}, pivot),
                 CD_E_INVALID_ARGUMENT);
    cr_expect_eq(fx_dist(fx_pos(inst, 0), p0), 0.0);
    cd_world_destroy(world);
}
