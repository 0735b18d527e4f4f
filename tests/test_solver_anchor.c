/* The local frame (solver/anchor.c): particles kept relative to an anchor
 * beside them, whole metres, following them when they go far; everything
 * a user sees in world coordinates. */
#include "../solver/internal.h"
#include "solver_fixtures.h"

static cd_instance *sheet_at(cd_world *world, cd_vec3 origin)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 8;
    def.spacing = 0.05f;
    def.origin = origin;
    def.sleep_threshold = 0.0f;
    cd_instance *inst = fx_cloth(world, &def);
    for (uint32_t x = 0; x < 8; x++)
        cr_assert_eq(cd_instance_pin(inst, x, NULL), CD_OK);
    return inst;
}

Test(anchor, a_new_instance_is_anchored_at_its_centre_in_whole_metres)
{
    cd_world *world = fx_world();
    cd_instance *inst = sheet_at(world, fx_v3(1000.2f, -40.0f, 7.9f));
    const cd_vec3 a = cd_instance_anchor(inst);
    /* The sheet spans 0.35 m from its origin along x and down y. */
    cr_assert_eq(a.x, 1000.0f);
    cr_assert_eq(a.y, -40.0f);
    cr_assert_eq(a.z, 8.0f);
    /* World positions are where the layout put them (within the float
     * spacing at 1 km, 6.1e-5 m). */
    cr_assert_float_eq(fx_pos(inst, 9).x, 1000.25f, 1e-4);
    cr_assert_float_eq(fx_pos(inst, 9).y, -40.05f, 1e-5);
    cr_assert_float_eq(fx_pos(inst, 9).z, 7.9f, 1e-5);
    /* Locally they are small: the solver's coordinates. */
    cr_assert_float_eq(cd_instance_local_positions(inst)[3 * 9], 0.25f, 1e-4);
    cd_world_destroy(world);
}

/* A sheet teleported 40 m (past the 16 m the anchor lets it wander) swings
 * on as its twin left at home does: the anchor follows, and the shift of
 * the frame adds no velocity (the residual takes its rounding). */
Test(anchor, the_anchor_follows_a_teleport_and_adds_no_velocity)
{
    cd_world *world = fx_world();
    cd_instance *home = sheet_at(world, fx_v3(0, 2, 0));
    cd_instance *away = sheet_at(world, fx_v3(0, 2, 0));
    cd_instance_set_wind(home, fx_v3(0, 0, 3));
    cd_instance_set_wind(away, fx_v3(0, 0, 3));
    for (int f = 0; f < 30; f++) { /* swinging */
        cd_instance_step(home, FX_DT, fx_no_wind());
        cd_instance_step(away, FX_DT, fx_no_wind());
    }
    const cd_vec3 shift = fx_v3(40, 0, -24);
    cr_assert_eq(cd_instance_teleport(away, shift, (cd_quat){0, 0, 0, 1}, fx_v3(0, 0, 0)), CD_OK);
    const cd_vec3 a = cd_instance_anchor(away);
    cr_assert(a.x == 40.0f && a.y == 2.0f && a.z == -24.0f, "anchor at (%g, %g, %g)", a.x, a.y,
              a.z);
    for (uint32_t i = 0; i < 64; i++)
        cr_assert_lt(fx_dist(cd_instance_velocity(away, i), cd_instance_velocity(home, i)), 1e-3,
                     "particle %u's velocity", i);
    for (int f = 0; f < 60; f++) {
        cd_instance_step(home, FX_DT, fx_no_wind());
        cd_instance_step(away, FX_DT, fx_no_wind());
    }
    /* Where the twin is, moved: the same motion to 1e-4 m after a second
     * (the frame's rounding differs, nothing else). */
    for (uint32_t i = 0; i < 64; i++) {
        const cd_vec3 h = fx_pos(home, i);
        cr_assert_lt(fx_dist(fx_pos(away, i), fx_v3(h.x + shift.x, h.y + shift.y, h.z + shift.z)),
                     1e-4, "particle %u", i);
    }
    cd_world_destroy(world);
}

/* A cape walking across a level: the anchor follows in whole metres as
 * the pins go, and the particles stay near it. */
Test(anchor, the_anchor_follows_a_walk_across_a_level)
{
    cd_world *world = fx_world();
    cd_instance *inst = sheet_at(world, fx_v3(0, 2, 0));
    for (int f = 1; f <= 600; f++) { /* 10 s at 5 m/s along x: 50 m */
        for (uint32_t x = 0; x < 8; x++) {
            const cd_vec3 at = fx_v3(5.0f * (float)f * FX_DT + 0.05f * (float)x, 2, 0);
            cr_assert_eq(cd_instance_pin(inst, x, &at), CD_OK);
        }
        cr_assert_not(cd_instance_step(inst, FX_DT, fx_no_wind()).unstable);
    }
    const cd_vec3 a = cd_instance_anchor(inst);
    cr_assert(a.x > 30.0f && a.x == roundf(a.x), "anchor x %g", a.x);
    const float *local = cd_instance_local_positions(inst);
    for (uint32_t i = 0; i < 64; i++)
        cr_assert_lt(fabsf(local[3 * i]), 17.0f, "particle %u at local x %g", i, local[3 * i]);
    cr_assert_float_eq(fx_pos(inst, 7).x, 50.35f, 1e-4, "the top row where its pins are");
    cd_world_destroy(world);
}
