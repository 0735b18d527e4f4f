/* Sleeping (solver/step.c): an instance whose particles all stay slower
 * than sleep_threshold for CD_SLEEP_DELAY (1 s) sleeps; its steps then
 * change nothing but the frame count and clock, until a command that
 * touches it or a change of the global wind wakes it.
 *
 * The sleeper: the tablecloth of test_solver_contact.c (24 x 24, spacing
 * 0.05 m, 8 iterations) with the default options otherwise (aero wind,
 * sleep_threshold 0.01 m/s), dropped on a ball of radius 0.3 m with
 * friction 0.5 (static 0.6), on which it comes to rest.
 *
 * Numbers measured with gcc -O2 on x86-64 are given next to each assert. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "solver_fixtures.h"

#define TABLE_N 24
#define TABLE_PARTICLES (TABLE_N * TABLE_N)
#define FALL_ASLEEP_STEPS 600 /* 10 s */
#define RESETTLE_STEPS 300    /* 5 s: enough to fall asleep again after a wake */

typedef struct sleeper {
    cd_world *world;
    cd_instance *cloth;
    cd_id ball;
    int asleep_at; /* the first step whose result said "sleeping", 1-based */
} sleeper;

static void make_sleeper_coupled(sleeper *s, float sleep_threshold, float coupling)
{
    s->world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = TABLE_N;
    def.spacing = 0.05f;
    def.down = fx_v3(0, 0, 1);
    def.origin = fx_v3(-0.575f, 0.4f, -0.575f);
    def.solver_iterations = 8;
    def.sleep_threshold = sleep_threshold;
    s->cloth = fx_cloth(s->world, &def);
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_SPHERE);
    c.radius = 0.3f;
    c.friction = 0.5f;
    c.static_friction = 0.6f;
    c.coupling = coupling;
    cr_assert_eq(cd_instance_add_collider(s->cloth, &c, &s->ball), CD_OK);
    s->asleep_at = 0;
    for (int step = 1; step <= FALL_ASLEEP_STEPS && s->asleep_at == 0; step++)
        if (cd_instance_step(s->cloth, FX_DT, fx_no_wind()).sleeping)
            s->asleep_at = step;
}

static bool is_sleeping(const cd_instance *inst)
{
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    return info.sleeping;
}

static void make_sleeper(sleeper *s, float sleep_threshold)
{
    make_sleeper_coupled(s, sleep_threshold, 0.0f);
}

/* Asleep, then `wake` is applied: the instance reports awake and its next
 * step simulates. */
static void assert_woken(sleeper *s, const char *what)
{
    cr_assert_not(is_sleeping(s->cloth), "%s did not wake the instance", what);
    cd_step_result r = cd_instance_step(s->cloth, FX_DT, fx_no_wind());
    cr_assert_not(r.sleeping, "%s: the next step still slept", what);
}

Test(solver_sleep, tablecloth_at_rest_should_fall_asleep_and_stop_changing)
{
    sleeper s;
    make_sleeper(&s, 0.01f);
    /* Asleep within 10 s of the drop (measured at step 440, 7.3 s: it
     * lands at ~0.3 s, its hanging skirt swings down for ~6 s, then 1 s
     * below 0.01 m/s). */
    cr_assert(s.asleep_at > 0, "not asleep after %d steps", FALL_ASLEEP_STEPS);
    cr_assert(is_sleeping(s.cloth));
    /* Not before it can have landed and stood still for 1 s. */
    cr_assert(s.asleep_at > 60, "asleep at step %d", s.asleep_at);

    static float before[3 * TABLE_PARTICLES];
    fx_snapshot(s.cloth, before);
    cd_instance_info info;
    cd_instance_get_info(s.cloth, &info);
    const uint64_t frame = info.frame;
    for (int i = 0; i < 120; i++)
        cr_assert(cd_instance_step(s.cloth, FX_DT, fx_no_wind()).sleeping);
    /* Bit-identical positions across 120 sleeping steps ... */
    cr_assert(memcmp(before, cd_instance_local_positions(s.cloth), sizeof before) == 0);
    /* ... while the frame count and the clock go on. */
    cd_instance_get_info(s.cloth, &info);
    cr_assert_eq(info.frame, frame + 120);
    cr_assert_float_eq(info.time, (double)(frame + 120) * FX_DT, 1e-4);
    /* At rest on the ball: the centre particle on top (within 1 cm). */
    cr_assert_float_eq(fx_pos(s.cloth, 12 * TABLE_N + 12).y, 0.3, 0.01);
    cd_world_destroy(s.world);
}

Test(solver_sleep, threshold_0_should_never_sleep)
{
    sleeper s;
    make_sleeper(&s, 0.0f);
    cr_assert_eq(s.asleep_at, 0, "slept at step %d", s.asleep_at);
    cr_assert_not(is_sleeping(s.cloth));
    cd_world_destroy(s.world);
}

Test(solver_sleep, pin_and_unpin_should_wake_it)
{
    sleeper s;
    make_sleeper(&s, 0.01f);
    cr_assert(s.asleep_at > 0);
    cr_assert_eq(cd_instance_pin(s.cloth, 0, NULL), CD_OK);
    assert_woken(&s, "pin");
    /* Pinning rebuilds the tethers to that corner, which pull in the
     * particles stretched farther from it than at rest: the cloth moves
     * (up to 0.5 m/s) and comes to rest again (measured: asleep 2.7 s
     * after the pin). */
    for (int i = 0; i < RESETTLE_STEPS; i++)
        cd_instance_step(s.cloth, FX_DT, fx_no_wind());
    cr_assert(is_sleeping(s.cloth), "asleep again 5 s after the pin");
    cr_assert_eq(cd_instance_unpin(s.cloth, 0), CD_OK);
    assert_woken(&s, "unpin");
    cd_world_destroy(s.world);
}

Test(solver_sleep, wind_gravity_collider_and_configure_should_wake_it)
{
    sleeper s;
    make_sleeper(&s, 0.01f);
    cr_assert(s.asleep_at > 0);

    cr_assert_eq(cd_instance_set_wind(s.cloth, fx_v3(0, 0, 0)), CD_OK); /* even the same wind */
    assert_woken(&s, "set wind");
    for (int i = 0; i < RESETTLE_STEPS; i++)
        cd_instance_step(s.cloth, FX_DT, fx_no_wind());
    cr_assert(is_sleeping(s.cloth));

    cr_assert_eq(cd_instance_set_gravity(s.cloth, fx_v3(0, -9.81f, 0)), CD_OK);
    assert_woken(&s, "set gravity");
    for (int i = 0; i < RESETTLE_STEPS; i++)
        cd_instance_step(s.cloth, FX_DT, fx_no_wind());
    cr_assert(is_sleeping(s.cloth));

    const cd_vec3 same = fx_v3(0, 0, 0);
    cr_assert_eq(cd_instance_move_collider(s.cloth, s.ball, &same, NULL), CD_OK);
    assert_woken(&s, "move collider");
    for (int i = 0; i < RESETTLE_STEPS; i++)
        cd_instance_step(s.cloth, FX_DT, fx_no_wind());
    cr_assert(is_sleeping(s.cloth));

    /* A new level of detail or priority alone leaves it asleep (a game
     * server sets them from its camera every frame); a real change wakes. */
    cd_cloth_def def = cd_instance_def(s.cloth);
    def.lod = 2;
    def.priority = 5.0f;
    cr_assert_eq(cd_instance_configure(s.cloth, &def), CD_OK);
    cr_assert(is_sleeping(s.cloth), "lod and priority alone do not wake it");
    def.bend_stiffness *= 0.5f;
    cr_assert_eq(cd_instance_configure(s.cloth, &def), CD_OK);
    assert_woken(&s, "configure");
    cd_world_destroy(s.world);
}

Test(solver_sleep, changing_the_global_wind_should_wake_it_and_the_same_should_not)
{
    sleeper s;
    make_sleeper(&s, 0.01f);
    cr_assert(s.asleep_at > 0);
    /* The same global wind (zero, as during the drop): still asleep. */
    cr_assert(cd_instance_step(s.cloth, FX_DT, fx_no_wind()).sleeping);
    static float before[3 * TABLE_PARTICLES];
    fx_snapshot(s.cloth, before);
    /* A 5 m/s breeze: that very step simulates and the cloth moves. */
    cd_step_result r = cd_instance_step(s.cloth, FX_DT, fx_v3(5, 0, 0));
    cr_assert_not(r.sleeping);
    cr_assert_not(is_sleeping(s.cloth));
    cr_assert(memcmp(before, cd_instance_local_positions(s.cloth), sizeof before) != 0);
    cd_world_destroy(s.world);
}

Test(solver_sleep, cloth_resting_on_a_coupled_collider_stays_awake)
{
    /* A sheet lying on a coupled sphere keeps handing it its weight; were
     * it to sleep, the rigid body would suddenly feel nothing. */
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = 12;
    def.spacing = 0.05f;
    def.down = fx_v3(0, 0, 1);
    def.origin = fx_v3(-0.275f, 0.35f, -0.275f);
    cd_instance *cloth = fx_cloth(world, &def);
    cd_collider_def ball = cd_default_collider_def(CD_COLLIDER_SPHERE);
    ball.radius = 0.3f;
    ball.friction = 0.8f;
    ball.coupling = 1.0f;
    cd_id cid;
    cr_assert_eq(cd_instance_add_collider(cloth, &ball, &cid), CD_OK);
    for (int step = 0; step < 900; step++) {
        cd_step_result r = cd_instance_step(cloth, FX_DT, fx_no_wind());
        cr_assert(!r.sleeping, "asleep at step %d while resting on a coupled collider", step);
    }
    cd_collider_impulse imp;
    cr_assert_eq(cd_instance_collider_impulses(cloth, &imp, 1), 1u);
    /* Its weight over one step, downwards: 1 kg x g x dt = 0.1635 N s,
     * within 1% (measured 0.1635; coupling counts each particle's own
     * mass, no particleMass given). */
    const double weight = 1.0 * FX_G * FX_DT;
    cr_assert_float_eq(-imp.linear.y, weight, 0.01 * weight, "impulse %.4f", imp.linear.y);
    cd_world_destroy(world);
}
