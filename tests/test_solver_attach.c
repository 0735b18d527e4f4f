/* Long-range attachments (tethers) and named transforms that pins and
 * colliders follow (solver/pins.c, solver/colliders.c).
 *
 * Numbers measured with gcc -O2 on x86-64 are given next to each assert. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "solver_fixtures.h"

static cd_quat identity(void)
{
    return (cd_quat){0.0f, 0.0f, 0.0f, 1.0f};
}

/* A turn of `degrees` about the unit axis (x, y, z). */
static cd_quat turn(double degrees, double x, double y, double z)
{
    const double half = degrees * M_PI / 360.0, s = sin(half);
    return (cd_quat){(float)(x * s), (float)(y * s), (float)(z * s), (float)cos(half)};
}

/* p + q v q*, in double. */
static cd_vec3 apply(cd_vec3 p, cd_quat q, cd_vec3 v)
{
    const double ux = q.x, uy = q.y, uz = q.z, w = q.w;
    /* t = 2 u x v; v' = v + w t + u x t */
    const double tx = 2 * (uy * v.z - uz * v.y), ty = 2 * (uz * v.x - ux * v.z),
                 tz = 2 * (ux * v.y - uy * v.x);
    return fx_v3((float)(p.x + v.x + w * tx + (uy * tz - uz * ty)),
                 (float)(p.y + v.y + w * ty + (uz * tx - ux * tz)),
                 (float)(p.z + v.z + w * tz + (ux * ty - uy * tx)));
}

/* ---- tethers --------------------------------------------------------------- */

/* Max structural strain of a 64 x 64 curtain with the default options (the
 * seed's stiffness 0.9, 4 iterations, 1 substep, aero wind, tethers on
 * unless turned off), its top row pinned, after 300 steps at 60 Hz. */
static float big_curtain_strain(bool tethers)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = 64;
    def.tethers = tethers;
    cd_instance *curtain = fx_cloth(world, &def);
    for (uint32_t x = 0; x < 64; x++)
        cd_instance_pin(curtain, x, NULL);
    for (int i = 0; i < 300; i++)
        cr_assert_not(cd_instance_step(curtain, FX_DT, fx_no_wind()).unstable);
    const float strain = cd_instance_max_structural_strain(curtain);
    cd_world_destroy(world);
    return strain;
}

Test(solver_attach, default_64x64_curtain_should_stretch_less_than_1_percent, .timeout = 60)
{
    const float with = big_curtain_strain(true);
    const float without = big_curtain_strain(false);
    /* The target: below 1% (measured 0.014%) ... */
    cr_assert(with < 0.01f, "tethers on: max strain %.5f", with);
    /* ... where the same solver without tethers stretches by more than 10%
     * (measured 27.9%): 4 Gauss-Seidel iterations cannot carry 63 rows. */
    cr_assert(without > 0.10f, "tethers off: max strain %.5f", without);
}

/* Hangs a 16 x 16 curtain (spacing 0.1 m, no air) by its top row for 1 s,
 * then unpins all of that row but its two corners and runs 5 s more.
 * Returns the largest amount by which a free particle got farther from its
 * nearest corner (nearest in the rest shape) than `scale` times their rest
 * distance, over every step after the unpinning. */
static double worst_tether_excess(bool tethers, float scale)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = 16;
    def.tethers = tethers;
    def.tether_scale = scale;
    def.air_density = 0.0f;
    cd_instance *curtain = fx_cloth(world, &def);
    for (uint32_t x = 0; x < 16; x++)
        cd_instance_pin(curtain, x, NULL);
    for (int i = 0; i < 60; i++)
        cd_instance_step(curtain, FX_DT, fx_no_wind());
    for (uint32_t x = 1; x < 15; x++)
        cr_assert_eq(cd_instance_unpin(curtain, x), CD_OK);

    double worst = -INFINITY;
    for (int step = 0; step < 300; step++) {
        cd_instance_step(curtain, FX_DT, fx_no_wind());
        for (uint32_t k = 0; k < 256; k++) {
            if (cd_instance_is_pinned(curtain, k))
                continue;
            const int x = (int)(k % 16), y = (int)(k / 16);
            /* 16 columns: no particle is as near one corner as the other. */
            const uint32_t corner = x < 8 ? 0u : 15u;
            const int cx = x < 8 ? 0 : 15;
            const double rest = 0.1 * sqrt((double)((x - cx) * (x - cx) + y * y));
            const double d = fx_dist(fx_pos(curtain, k), fx_pos(curtain, corner));
            worst = fmax(worst, d - scale * rest);
        }
    }
    cd_world_destroy(world);
    return worst;
}

Test(solver_attach, tethers_should_be_rebuilt_for_the_pins_left_after_an_unpin)
{
    /* With tethers, no particle ever gets farther from its nearest remaining
     * pin than its rest distance, within 1e-4 m (measured <= 1e-6 m): the
     * anchors moved from the unpinned top row to the two corners. */
    const double on = worst_tether_excess(true, 1.0f);
    cr_assert(on <= 1e-4, "tethers on: %.6f m past the limit", on);
    /* Without them the corner-hung curtain sags more than 5 cm past it
     * (measured 0.155 m), so the bound above is the tethers' doing. */
    const double off = worst_tether_excess(false, 1.0f);
    cr_assert(off > 0.05, "tethers off: %.6f m past the limit", off);
}

Test(solver_attach, tether_scale_should_set_the_slack_of_the_tethers)
{
    /* Scale 1.2: the limit is 1.2 x the rest distance, held within 1e-4 m
     * (measured <= 1e-6 m) ... */
    const double loose = worst_tether_excess(true, 1.2f);
    cr_assert(loose <= 1e-4, "scale 1.2: %.6f m past the limit", loose);
    /* ... and a curtain hung by its top corners does use the slack. */
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = 16;
    def.tether_scale = 1.2f;
    def.air_density = 0.0f;
    cd_instance *curtain = fx_cloth(world, &def);
    cd_instance_pin(curtain, 0, NULL);
    cd_instance_pin(curtain, 15, NULL);
    for (int i = 0; i < 300; i++)
        cd_instance_step(curtain, FX_DT, fx_no_wind());
    /* The bottom-left corner, 1.5 m from particle 0 at rest, hangs more
     * than 1 cm beyond that and within 1.2 x 1.5 m + 1e-4 (measured
     * 1.5964 m; at scale 1.0 it is held at 1.5000 m). */
    const double d = fx_dist(fx_pos(curtain, 240), fx_pos(curtain, 0));
    cr_assert(d > 1.5 + 0.01 && d <= 1.8 + 1e-4, "bottom corner %.4f m from its pin", d);
    cd_world_destroy(world);
}

/* ---- transforms -------------------------------------------------------------- */

/* A 10 x 10 cape (spacing 0.05 m) hanging from (0, 1.5, 0), no air. */
static cd_instance *cape(cd_world *world, int32_t substeps)
{
    cd_cloth_def def = fx_seed_def();
    def.spacing = 0.05f;
    def.origin = fx_v3(0, 1.5f, 0);
    def.air_density = 0.0f;
    def.substeps = substeps;
    def.sleep_threshold = 0.0f;
    return fx_cloth(world, &def);
}

Test(solver_attach, attached_particles_should_sit_at_the_transform_times_their_offset)
{
    cd_world *world = fx_world();
    cd_instance *c = cape(world, 2);
    uint32_t shoulders = 0;
    const cd_vec3 p0 = fx_v3(0.2f, 1.5f, 0);
    cr_assert_eq(cd_instance_set_transform(c, "shoulders", p0, identity(), &shoulders), CD_OK);
    cr_assert_eq(shoulders, 1u);
    cr_assert_eq(cd_instance_find_transform(c, "shoulders"), shoulders);
    /* The top row, attached where it is: offsets (x * 0.05 - 0.2, 0, 0). */
    cd_vec3 offset[10];
    for (uint32_t x = 0; x < 10; x++) {
        cr_assert_eq(cd_instance_attach(c, x, shoulders, NULL), CD_OK);
        cr_assert(cd_instance_is_pinned(c, x));
        offset[x] = fx_v3((float)x * 0.05f - 0.2f, 0, 0);
    }
    for (int i = 0; i < 30; i++)
        cd_instance_step(c, FX_DT, fx_no_wind());

    /* Move and turn the shoulders: 90 degrees about y, then 30 about x. */
    const cd_vec3 p1 = fx_v3(0.5f, 1.7f, -0.3f);
    const cd_quat q = turn(90.0, 0, 1, 0);
    cr_assert_eq(cd_instance_set_transform(c, "shoulders", p1, q, NULL), CD_OK);
    float target[30];
    for (uint32_t x = 0; x < 10; x++) {
        const cd_vec3 want = apply(p1, q, offset[x]), got = fx_pos(c, x);
        /* Queries see the new target at once: T . offset within 1e-6 m. */
        cr_assert(fx_dist(got, want) < 1e-6, "particle %u at (%.6f %.6f %.6f), want (%.6f %.6f %.6f)",
                  x, got.x, got.y, got.z, want.x, want.y, want.z);
        memcpy(&target[3 * x], &got, sizeof got);
    }
    cd_instance_step(c, FX_DT, fx_no_wind());
    /* After the step they end exactly there, to the bit. */
    for (uint32_t x = 0; x < 10; x++) {
        const cd_vec3 got = fx_pos(c, x);
        cr_assert(memcmp(&got, &target[3 * x], sizeof got) == 0, "particle %u moved off", x);
    }
    /* A second transform and a new turn: the handle stays, the offsets too. */
    const cd_quat q2 = turn(30.0, 1, 0, 0);
    cr_assert_eq(cd_instance_set_transform(c, "shoulders", p1, q2, &shoulders), CD_OK);
    cr_assert_eq(shoulders, 1u);
    for (int i = 0; i < 5; i++)
        cd_instance_step(c, FX_DT, fx_no_wind());
    for (uint32_t x = 0; x < 10; x++)
        cr_assert(fx_dist(fx_pos(c, x), apply(p1, q2, offset[x])) < 1e-6, "particle %u", x);
    cd_world_destroy(world);
}

Test(solver_attach, moved_transform_should_carry_its_particles_over_the_whole_step)
{
    /* 4 substeps: an attached particle travels a quarter of the move in each
     * substep. Its velocity after the step, (pos - prev) / h over the last
     * substep, is then move / dt; a pin that jumped at the first substep
     * would show 0. Within 0.1% (measured within 3e-5 relative). */
    cd_world *world = fx_world();
    cd_instance *c = cape(world, 4);
    uint32_t t = 0;
    cr_assert_eq(cd_instance_set_transform(c, "hand", fx_v3(0, 1.5f, 0), identity(), &t), CD_OK);
    cr_assert_eq(cd_instance_attach(c, 0, t, NULL), CD_OK);
    cr_assert_eq(cd_instance_attach(c, 9, t, NULL), CD_OK);
    for (int i = 0; i < 10; i++)
        cd_instance_step(c, FX_DT, fx_no_wind());
    const cd_vec3 move = fx_v3(0.03f, 0.01f, -0.02f);
    cr_assert_eq(cd_instance_set_transform(c, "hand", fx_v3(move.x, 1.5f + move.y, move.z), identity(), NULL), CD_OK);
    cd_instance_step(c, FX_DT, fx_no_wind());
    const cd_vec3 v = cd_instance_velocity(c, 9);
    const double want[3] = {move.x / FX_DT, move.y / FX_DT, move.z / FX_DT};
    cr_assert_float_eq(v.x, want[0], 1e-3 * fabs(want[0]), "vx %.5f, want %.5f", v.x, want[0]);
    cr_assert_float_eq(v.y, want[1], 1e-3 * fabs(want[1]), "vy %.5f, want %.5f", v.y, want[1]);
    cr_assert_float_eq(v.z, want[2], 1e-3 * fabs(want[2]), "vz %.5f, want %.5f", v.z, want[2]);
    cd_world_destroy(world);
}

Test(solver_attach, collider_attached_to_a_transform_should_follow_it)
{
    cd_world *world = fx_world();
    cd_instance *c = cape(world, 1);
    for (uint32_t x = 0; x < 10; x++)
        cd_instance_pin(c, x, NULL);
    uint32_t arm = 0;
    const cd_vec3 p0 = fx_v3(2, 0, 0); /* far from the cape */
    cr_assert_eq(cd_instance_set_transform(c, "arm", p0, identity(), &arm), CD_OK);
    /* A ball 0.1 m along the arm's local x. */
    cd_collider_def def = cd_default_collider_def(CD_COLLIDER_SPHERE);
    def.position = fx_v3(0.1f, 0, 0);
    def.radius = 0.08f;
    def.attachment = arm;
    cd_id ball = 0;
    cr_assert_eq(cd_instance_add_collider(c, &def, &ball), CD_OK);
    for (int i = 0; i < 60; i++)
        cd_instance_step(c, FX_DT, fx_no_wind());

    /* Turn the arm 90 degrees about z and bring it to the cape: the ball
     * goes to p1 + R (0.1, 0, 0) = p1 + (0, 0.1, 0), where particle 44
     * (row 4, column 4) hangs. */
    const cd_vec3 hanging = fx_pos(c, 44);
    const cd_vec3 p1 = fx_v3(hanging.x, hanging.y - 0.1f, hanging.z);
    cr_assert_eq(cd_instance_set_transform(c, "arm", p1, turn(90.0, 0, 0, 1), NULL), CD_OK);
    cd_id id;
    cd_collider_def now;
    cr_assert_eq(cd_instance_list_colliders(c, &id, &now, 1), 1u);
    cr_assert_eq(id, ball);
    cr_assert_eq(now.attachment, arm);
    /* Its world pose is T . local within 1e-6 m. */
    const cd_vec3 centre = apply(p1, turn(90.0, 0, 0, 1), def.position);
    cr_assert(fx_dist(now.position, centre) < 1e-6, "ball at (%.6f %.6f %.6f)", now.position.x,
              now.position.y, now.position.z);
    cr_assert(fx_dist(centre, hanging) < 1e-5);
    /* And it acts there: after a step nothing is inside it (1e-5 m) and
     * particle 44, which was at its centre, was pushed out. */
    cd_instance_step(c, FX_DT, fx_no_wind());
    for (uint32_t i = 10; i < 100; i++)
        cr_assert(fx_dist(fx_pos(c, i), centre) >= 0.08 - 1e-5, "particle %u inside", i);
    cr_assert(fx_dist(fx_pos(c, 44), hanging) > 0.05);
    cd_world_destroy(world);
}

Test(solver_attach, pinning_an_attached_particle_should_detach_it)
{
    cd_world *world = fx_world();
    cd_instance *c = cape(world, 1);
    uint32_t t = 0;
    cr_assert_eq(cd_instance_set_transform(c, "hand", fx_v3(0, 1.5f, 0), identity(), &t), CD_OK);
    const cd_vec3 local = fx_v3(0.1f, 0, 0);
    cr_assert_eq(cd_instance_attach(c, 0, t, &local), CD_OK);
    /* An explicit offset: at T . (0.1, 0, 0) = (0.1, 1.5, 0). */
    cr_assert(fx_dist(fx_pos(c, 0), fx_v3(0.1f, 1.5f, 0)) < 1e-6);
    const cd_vec3 here = fx_v3(-0.2f, 1.4f, 0.1f);
    cr_assert_eq(cd_instance_pin(c, 0, &here), CD_OK);
    cr_assert_eq(cd_instance_set_transform(c, "hand", fx_v3(1, 1, 1), identity(), NULL), CD_OK);
    cd_instance_step(c, FX_DT, fx_no_wind());
    /* The plain pin holds; the transform no longer moves it (bit-exact). */
    const cd_vec3 p = fx_pos(c, 0);
    cr_assert(memcmp(&p, &here, sizeof p) == 0);
    /* Unpinned, it falls like any particle. */
    cr_assert_eq(cd_instance_unpin(c, 0), CD_OK);
    cr_assert_not(cd_instance_is_pinned(c, 0));
    cd_world_destroy(world);
}

Test(solver_attach, transforms_should_reject_bad_names_rotations_and_positions)
{
    cd_world *world = fx_world();
    cd_instance *c = cape(world, 1);
    const cd_vec3 o = fx_v3(0, 0, 0);
    uint32_t h = 99;
    /* Unknown names: no handle. */
    cr_assert_eq(cd_instance_find_transform(c, "nobody"), 0u);
    cr_assert_eq(cd_instance_find_transform(c, ""), 0u);
    cr_assert_eq(cd_instance_find_transform(c, NULL), 0u);
    /* Names: 1..31 bytes (CD_TRANSFORM_NAME_MAX counts the NUL). */
    char longest[CD_TRANSFORM_NAME_MAX], too_long[CD_TRANSFORM_NAME_MAX + 1];
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    memset(too_long, 'b', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = '\0';
    cr_assert_eq(cd_instance_set_transform(c, longest, o, identity(), &h), CD_OK);
    cr_assert_eq(cd_instance_find_transform(c, longest), h);
    cr_assert_eq(cd_instance_set_transform(c, too_long, o, identity(), NULL),
                 CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_find_transform(c, too_long), 0u);
    cr_assert_eq(cd_instance_set_transform(c, "", o, identity(), NULL), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_set_transform(c, NULL, o, identity(), NULL), CD_E_INVALID_ARGUMENT);
    /* Rotations: zero or non-finite rejected; any other length normalised. */
    cr_assert_eq(cd_instance_set_transform(c, "r", o, (cd_quat){0, 0, 0, 0}, NULL),
                 CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_set_transform(c, "r", o, (cd_quat){NAN, 0, 0, 1}, NULL),
                 CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_set_transform(c, "r", o, (cd_quat){0, INFINITY, 0, 1}, NULL),
                 CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_find_transform(c, "r"), 0u, "a rejected transform was created");
    /* Positions: finite and inside the world box. */
    cr_assert_eq(cd_instance_set_transform(c, "p", fx_v3(NAN, 0, 0), identity(), NULL),
                 CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_set_transform(c, "p", fx_v3(0, 2e5f, 0), identity(), NULL),
                 CD_E_INVALID_ARGUMENT);
    /* A quaternion of length 2 is the same turn as its unit one. */
    uint32_t s = 0;
    cr_assert_eq(cd_instance_set_transform(c, "scaled", fx_v3(0, 1.5f, 0),
                                           (cd_quat){0, 0, 0, 2}, &s),
                 CD_OK);
    const cd_vec3 local = fx_v3(0.1f, 0, 0);
    cr_assert_eq(cd_instance_attach(c, 5, s, &local), CD_OK);
    cr_assert(fx_dist(fx_pos(c, 5), fx_v3(0.1f, 1.5f, 0)) < 1e-6);
    cd_world_destroy(world);
}

Test(solver_attach, seventeenth_transform_should_exceed_the_limit)
{
    cd_world *world = fx_world();
    cd_instance *c = cape(world, 1);
    char name[16];
    for (int k = 0; k < CD_MAX_TRANSFORMS; k++) {
        snprintf(name, sizeof name, "t%d", k);
        uint32_t h = 0;
        cr_assert_eq(cd_instance_set_transform(c, name, fx_v3(0, 0, 0), identity(), &h), CD_OK);
        cr_assert_eq(h, (uint32_t)k + 1u, "handles are 1..16 in order");
    }
    cr_assert_eq(cd_instance_set_transform(c, "t16", fx_v3(0, 0, 0), identity(), NULL),
                 CD_E_LIMIT_EXCEEDED);
    cr_assert_eq(cd_instance_find_transform(c, "t16"), 0u);
    /* Moving an existing one is still fine at the limit. */
    cr_assert_eq(cd_instance_set_transform(c, "t3", fx_v3(1, 0, 0), identity(), NULL), CD_OK);
    cd_world_destroy(world);
}

Test(solver_attach, attach_should_reject_unknown_handles_and_bad_offsets)
{
    cd_world *world = fx_world();
    cd_instance *c = cape(world, 1);
    uint32_t h = 0;
    cr_assert_eq(cd_instance_set_transform(c, "hand", fx_v3(0, 1, 0), identity(), &h), CD_OK);
    const cd_vec3 ok = fx_v3(0, 0, 0), far = fx_v3(0, 2e5f, 0), nan = fx_v3(0, NAN, 0);
    cr_assert_eq(cd_instance_attach(c, 0, 0, &ok), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_attach(c, 0, h + 1, &ok), CD_E_INVALID_ARGUMENT); /* unused slot */
    cr_assert_eq(cd_instance_attach(c, 0, CD_MAX_TRANSFORMS + 1, &ok), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_attach(c, 100, h, &ok), CD_E_INVALID_ARGUMENT); /* 100 particles */
    cr_assert_eq(cd_instance_attach(c, 0, h, &far), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_attach(c, 0, h, &nan), CD_E_INVALID_ARGUMENT);
    /* Nothing of that pinned anything. */
    cr_assert_not(cd_instance_is_pinned(c, 0));
    /* A collider attached to a transform that does not exist. */
    cd_collider_def def = cd_default_collider_def(CD_COLLIDER_SPHERE);
    cd_id id = 0;
    def.attachment = h + 1;
    cr_assert_eq(cd_instance_add_collider(c, &def, &id), CD_E_INVALID_ARGUMENT);
    def.attachment = CD_MAX_TRANSFORMS + 1;
    cr_assert_eq(cd_instance_add_collider(c, &def, &id), CD_E_INVALID_ARGUMENT);
    cd_instance_info info;
    cd_instance_get_info(c, &info);
    cr_assert_eq(info.colliders, 0u);
    cd_world_destroy(world);
}
