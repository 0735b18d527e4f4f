/* Colliders: sphere, capsule, plane projection (solver/collide.c) and their
 * bookkeeping (solver/colliders.c).
 *
 * Collision is the last stage of a step, so after any step no free particle
 * may be inside a collider (one collider at a time here): the surface
 * projection lands on the surface up to float rounding, hence 1e-5 m.
 *
 * Where a test needs particles at chosen spots it builds a "probe" cloth:
 * stiffness 0 and bend 0 (constraints move nothing), gravity 0 and damping 0
 * (integration moves nothing), each particle placed by pin-then-unpin. One
 * step then moves exactly the particles the collider pushes.
 *
 * Numbers measured with gcc -O2 on x86-64 are given next to each test. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "solver_fixtures.h"

#define SURFACE_TOL 1e-5 /* metres: projection onto a surface, in floats */

/* ---- helpers --------------------------------------------------------------- */

static cd_collider_def sphere_def(cd_vec3 centre, float r)
{
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_SPHERE);
    c.position = centre;
    c.radius = r;
    return c;
}

static cd_collider_def capsule_def(cd_vec3 centre, cd_vec3 axis, float r, float height)
{
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_CAPSULE);
    c.position = centre;
    c.normal = axis;
    c.radius = r;
    c.height = height;
    return c;
}

static cd_collider_def plane_def(cd_vec3 point, cd_vec3 normal)
{
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_PLANE);
    c.position = point;
    c.normal = normal;
    return c;
}

static cd_id add_collider(cd_instance *cloth, const cd_collider_def *def)
{
    cd_id id = 0;
    cd_status st = cd_instance_add_collider(cloth, def, &id);
    cr_assert_eq(st, CD_OK, "collider accepted (%s)", cd_status_name(st));
    cr_assert_neq(id, 0u);
    return id;
}

static cd_vec3 unit(cd_vec3 v)
{
    double l = sqrt((double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z);
    return fx_v3((float)(v.x / l), (float)(v.y / l), (float)(v.z / l));
}

static cd_vec3 along(cd_vec3 base, cd_vec3 dir, double t)
{
    return fx_v3((float)(base.x + dir.x * t), (float)(base.y + dir.y * t),
                 (float)(base.z + dir.z * t));
}

/* Distance from p to the segment centre +- half * axis (axis is unit). */
static double segment_distance(cd_vec3 p, cd_vec3 centre, cd_vec3 axis, double half)
{
    double dx = (double)p.x - centre.x, dy = (double)p.y - centre.y, dz = (double)p.z - centre.z;
    double t = dx * axis.x + dy * axis.y + dz * axis.z;
    t = t < -half ? -half : (t > half ? half : t);
    return fx_dist(p, along(centre, axis, t));
}

static double signed_distance(cd_vec3 p, cd_vec3 point, cd_vec3 unit_normal)
{
    return ((double)p.x - point.x) * unit_normal.x + ((double)p.y - point.y) * unit_normal.y +
           ((double)p.z - point.z) * unit_normal.z;
}

/* A horizontal cloth (down = +z) centred over x = z = 0 at height y. */
static cd_instance *tablecloth(cd_world *world, int32_t n, float spacing, float y)
{
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = n;
    def.spacing = spacing;
    def.down = fx_v3(0, 0, 1);
    const float half = 0.5f * (float)(n - 1) * spacing;
    def.origin = fx_v3(-half, y, -half);
    return fx_cloth(world, &def);
}

/* A cloth whose particles move only when a collider pushes them. */
static cd_instance *probe(cd_world *world, int32_t w, int32_t h)
{
    cd_cloth_def def = fx_seed_def();
    def.width = w;
    def.height = h;
    def.stiffness = 0.0f;
    def.bend_stiffness = 0.0f;
    def.damping = 0.0f;
    def.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    def.gravity = fx_v3(0, 0, 0);
    /* Away from every collider below, but near enough to the origin, where
     * the particles are placed, for the local frame (anchor.c) to keep
     * their float spacing at 5e-7 m. */
    def.origin = fx_v3(4, 4, 4);
    return fx_cloth(world, &def);
}

/* Puts particle i at p and returns where it is: p within the float
 * spacing of the local frame's coordinates (anchor.c). */
static cd_vec3 place(cd_instance *cloth, uint32_t i, cd_vec3 p)
{
    cr_assert_eq(cd_instance_pin(cloth, i, &p), CD_OK);
    cr_assert_eq(cd_instance_unpin(cloth, i), CD_OK);
    return fx_pos(cloth, i);
}

static bool same_bits(cd_vec3 a, cd_vec3 b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* ---- sphere ---------------------------------------------------------------- */

/* The 15x15 tablecloth, 0.08 m spacing, 0.2 m above a 0.3 m ball at the
 * origin; particle 112 is its centre, straight above the ball's top. */
#define DRAPE_N 15
#define DRAPE_CENTRE 112u
static const uint32_t drape_corners[4] = {0, 14, 210, 224};

static void assert_outside_ball(const cd_instance *cloth, cd_vec3 centre, float r, int step)
{
    for (uint32_t i = 0; i < cd_instance_particle_count(cloth); i++) {
        if (cd_instance_is_pinned(cloth, i))
            continue;
        double d = fx_dist(fx_pos(cloth, i), centre);
        /* Nothing inside the ball, within 1e-5 m. */
        cr_assert(d >= r - SURFACE_TOL, "step %d particle %u at %.7f m from the centre", step, i,
                  d);
    }
}

Test(solver_collision, cloth_dropped_on_a_sphere_should_drape_and_never_enter_it)
{
    /* Measured: the cloth lands at step ~12 and is fully draped by step 30
     * (centre 0.298 m, corners -0.42 to -0.43 m). With no friction (seed v1)
     * the draped cloth is an unstable balance: the Gauss-Seidel sweep order
     * (row-major, from particle 0) tips it towards +x/+z (mirroring the grid
     * mirrors the drift) and it slides off after step ~45. So the drape is
     * checked at step 30 and the non-penetration at all 200 steps. */
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, DRAPE_N, 0.08f, 0.5f);
    const cd_vec3 centre = fx_v3(0, 0, 0);
    const float r = 0.3f;
    cd_collider_def sphere = sphere_def(centre, r);
    add_collider(cloth, &sphere);

    for (int step = 1; step <= 200; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        assert_outside_ball(cloth, centre, r, step);
        if (step != 30)
            continue;
        /* Draped: the middle rests on the top, within 1 cm (measured 2 mm)... */
        cr_assert_float_eq(fx_pos(cloth, DRAPE_CENTRE).y, r, 0.01, "centre at y %.5f",
                           fx_pos(cloth, DRAPE_CENTRE).y);
        /* ...and each corner hangs below the ball's equator (measured
         * -0.42 m, i.e. 0.72 m below the top). */
        for (size_t k = 0; k < 4; k++)
            cr_assert(fx_pos(cloth, drape_corners[k]).y < 0.0f, "corner %u at y %.4f",
                      drape_corners[k], fx_pos(cloth, drape_corners[k]).y);
    }
    cd_world_destroy(world);
}

Test(solver_collision, cloth_held_on_top_of_a_sphere_should_stay_draped_for_200_steps)
{
    /* The same cloth with its centre pinned on the ball's top cannot slide
     * off. Measured after 200 steps: corners at -0.374 to -0.377 m. */
    cd_world *world = fx_world();
    const float r = 0.3f;
    cd_instance *cloth = tablecloth(world, DRAPE_N, 0.08f, r);
    const cd_vec3 centre = fx_v3(0, 0, 0), top = fx_v3(0, r, 0);
    cr_assert_eq(cd_instance_pin(cloth, DRAPE_CENTRE, &top), CD_OK);
    cd_collider_def sphere = sphere_def(centre, r);
    add_collider(cloth, &sphere);

    for (int step = 1; step <= 200; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        assert_outside_ball(cloth, centre, r, step);
    }
    for (size_t k = 0; k < 4; k++) {
        float y = fx_pos(cloth, drape_corners[k]).y;
        /* Every corner below the ball's equator, so well below its top
         * (measured -0.375 m), and not fallen away: above -0.6 m. */
        cr_assert(y < 0.0f && y > -0.6f, "corner %u at y %.4f", drape_corners[k], y);
    }
    cd_world_destroy(world);
}

Test(solver_collision, particle_inside_a_sphere_should_be_projected_along_the_radius)
{
    cd_world *world = fx_world();
    cd_instance *cloth = probe(world, 2, 2);
    const cd_vec3 c = fx_v3(1, 2, 3);
    const cd_vec3 inside = fx_v3(1.1f, 2.2f, 3.0f), outside = fx_v3(1.0f, 2.0f, 3.6f);
    place(cloth, 0, inside);
    place(cloth, 1, c); /* exactly at the centre: no radius to follow */
    place(cloth, 2, outside);
    cd_collider_def sphere = sphere_def(c, 0.5f);
    add_collider(cloth, &sphere);
    cd_instance_step(cloth, FX_DT, fx_no_wind());

    /* On the surface, on the ray from the centre through where it was. */
    const double len = sqrt(0.1 * 0.1 + 0.2 * 0.2);
    cd_vec3 p = fx_pos(cloth, 0);
    cr_assert_float_eq(p.x, 1.0 + 0.5 * 0.1 / len, SURFACE_TOL);
    cr_assert_float_eq(p.y, 2.0 + 0.5 * 0.2 / len, SURFACE_TOL);
    cr_assert_float_eq(p.z, 3.0, SURFACE_TOL);
    /* The centre leaves straight up (the documented fallback), 1e-5 m. */
    p = fx_pos(cloth, 1);
    cr_assert_float_eq(p.x, 1.0, SURFACE_TOL);
    cr_assert_float_eq(p.y, 2.5, SURFACE_TOL);
    cr_assert_float_eq(p.z, 3.0, SURFACE_TOL);
    /* Outside the ball: untouched, to the bit. */
    cr_assert(same_bits(fx_pos(cloth, 2), outside));
    cd_world_destroy(world);
}

/* ---- capsule --------------------------------------------------------------- */

static void drop_on_capsule(cd_vec3 axis)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 12, 0.08f, 0.4f);
    const cd_vec3 centre = fx_v3(0, 0, 0), u = unit(axis);
    const float r = 0.15f, height = 1.2f;
    const double half = 0.5 * height - r; /* the axis segment, caps excluded */
    cd_collider_def capsule = capsule_def(centre, axis, r, height);
    add_collider(cloth, &capsule);

    int touching = 0;
    for (int step = 1; step <= 200; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < 144; i++) {
            double d = segment_distance(fx_pos(cloth, i), centre, u, half);
            /* Nothing inside the capsule, within 1e-5 m. */
            cr_assert(d >= r - SURFACE_TOL, "axis (%g %g %g) step %d particle %u at %.7f m",
                      axis.x, axis.y, axis.z, step, i, d);
            touching += d < r + 1e-3;
        }
    }
    /* It really was lying on the capsule, not missing it. */
    cr_assert(touching > 0, "the cloth never touched the capsule");
    cd_world_destroy(world);
}

Test(solver_collision, cloth_dropped_on_a_horizontal_capsule_should_stay_outside)
{
    drop_on_capsule(fx_v3(1, 0, 0));
}

Test(solver_collision, cloth_dropped_on_a_tilted_capsule_should_stay_outside)
{
    /* Not normalised on purpose: the solver normalises the axis. */
    drop_on_capsule(fx_v3(2, 1, 0.6f));
}

/* Capsule at c along unit u, radius 0.2, total height 1.0: the segment is
 * +-0.3 m, the cap tips at +-0.5 m. `side` is a unit vector across the axis. */
static void capsule_height_counts_the_caps(cd_vec3 c, cd_vec3 u, cd_vec3 side)
{
    cd_world *world = fx_world();
    cd_instance *cloth = probe(world, 3, 2);
    const float r = 0.2f;
    const cd_vec3 end = along(c, u, 0.3);
    const cd_vec3 past_end = along(along(c, u, 0.35), side, 0.1); /* inside the cap */
    const cd_vec3 beyond_tip = along(c, u, 0.52);                 /* past height / 2 */
    const cd_vec3 in_tip = along(c, u, 0.48);
    const cd_vec3 in_body = along(c, side, 0.1);
    const cd_vec3 on_axis = along(c, u, -0.1);
    place(cloth, 0, past_end);
    const cd_vec3 beyond_tip_placed = place(cloth, 1, beyond_tip);
    place(cloth, 2, in_tip);
    place(cloth, 3, in_body);
    place(cloth, 4, on_axis);
    const cd_vec3 far_away = fx_pos(cloth, 5); /* left where the grid put it */
    cd_collider_def capsule = capsule_def(c, u, r, 1.0f);
    add_collider(cloth, &capsule);
    cd_instance_step(cloth, FX_DT, fx_no_wind());

    /* 0.05 m past the segment's end and 0.1 m off the axis: pushed out of
     * the end cap to 0.2 m from the segment's end, away from it. */
    cd_vec3 p = fx_pos(cloth, 0);
    cr_assert_float_eq(fx_dist(p, end), r, SURFACE_TOL, "cap push: %.7f m from the end",
                       fx_dist(p, end));
    const double l = sqrt(0.05 * 0.05 + 0.1 * 0.1);
    cd_vec3 want = along(along(end, u, 0.2 * 0.05 / l), side, 0.2 * 0.1 / l);
    cr_assert_float_eq(fx_dist(p, want), 0.0, SURFACE_TOL, "pushed along end -> particle");
    /* 0.52 m along the axis, past the tip at height / 2: untouched. */
    cr_assert(same_bits(fx_pos(cloth, 1), beyond_tip_placed), "beyond the tip it was moved");
    /* 0.48 m along the axis, inside the tip: out to the tip at 0.5 m. */
    cr_assert_float_eq(fx_dist(fx_pos(cloth, 2), along(c, u, 0.5)), 0.0, SURFACE_TOL);
    /* Inside the cylinder: out across the axis to r. */
    cr_assert_float_eq(fx_dist(fx_pos(cloth, 3), along(c, side, 0.2)), 0.0, SURFACE_TOL);
    /* On the axis itself: out sideways to r, not along the axis. */
    p = fx_pos(cloth, 4);
    cr_assert_float_eq(segment_distance(p, c, u, 0.3), r, SURFACE_TOL);
    cr_assert_float_eq(signed_distance(p, c, u), -0.1, SURFACE_TOL);
    /* Particle 5 was never near: untouched, so nothing but the collider
     * moved anything in this step. */
    cr_assert(same_bits(fx_pos(cloth, 5), far_away));
    cd_world_destroy(world);
}

Test(solver_collision, capsule_height_should_be_the_total_length_including_caps)
{
    capsule_height_counts_the_caps(fx_v3(0, 1, 0), fx_v3(1, 0, 0), fx_v3(0, 1, 0));
}

Test(solver_collision, tilted_capsule_height_should_be_the_total_length_including_caps)
{
    capsule_height_counts_the_caps(fx_v3(0.5f, 1, -2), fx_v3(0.6f, 0.8f, 0),
                                   fx_v3(-0.8f, 0.6f, 0));
}

/* ---- plane ----------------------------------------------------------------- */

Test(solver_collision, cloth_dropped_on_the_ground_should_stay_above_it_and_lie_flat)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 10, 0.1f, 0.5f);
    cd_collider_def ground = plane_def(fx_v3(0, 0, 0), fx_v3(0, 1, 0));
    add_collider(cloth, &ground);
    for (int step = 1; step <= 200; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < 100; i++)
            /* Never below the ground by more than 1e-5 m. */
            cr_assert(fx_pos(cloth, i).y >= -SURFACE_TOL, "step %d particle %u at y %.7f", step,
                      i, fx_pos(cloth, i).y);
    }
    for (uint32_t i = 0; i < 100; i++)
        /* Lying on it: within 1 mm of y = 0. */
        cr_assert(fx_pos(cloth, i).y <= 1e-3f, "particle %u still at y %.5f", i,
                  fx_pos(cloth, i).y);
    cd_world_destroy(world);
}

Test(solver_collision, cloth_on_a_tilted_plane_should_stay_on_its_side_and_slide_downhill)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 10, 0.1f, 0.6f);
    /* Slope y = 0.2 - 0.3 x through (0, 0.2, 0): downhill is +x. */
    const cd_vec3 point = fx_v3(0, 0.2f, 0), n = unit(fx_v3(0.3f, 1, 0));
    cd_collider_def slope = plane_def(point, fx_v3(0.3f, 1, 0));
    add_collider(cloth, &slope);
    double mean_x_before = 0.0;
    for (uint32_t i = 0; i < 100; i++)
        mean_x_before += fx_pos(cloth, i).x / 100.0;

    for (int step = 1; step <= 200; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < 100; i++) {
            double s = signed_distance(fx_pos(cloth, i), point, n);
            /* Never behind the plane by more than 1e-5 m. */
            cr_assert(s >= -SURFACE_TOL, "step %d particle %u at %.7f m", step, i, s);
        }
    }
    double mean_x = 0.0;
    for (uint32_t i = 0; i < 100; i++)
        mean_x += fx_pos(cloth, i).x / 100.0;
    /* No friction in v1: it slides downhill, a good half metre in 3.3 s. */
    cr_assert(mean_x > mean_x_before + 0.5, "mean x %.3f -> %.3f", mean_x_before, mean_x);
    cd_world_destroy(world);
}

/* ---- moving and removing --------------------------------------------------- */

Test(solver_collision, rising_sphere_should_push_particles_out_and_carry_the_cloth)
{
    /* A weightless 11x11 cloth at y = 0; particle 60 is its centre. A ball
     * of 0.3 m rises from just below it, 1 cm a step, for a second. */
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 11, 0.1f, 0.0f);
    cr_assert_eq(cd_instance_set_gravity(cloth, fx_v3(0, 0, 0)), CD_OK);
    const float r = 0.3f;
    cd_collider_def sphere = sphere_def(fx_v3(0, -0.31f, 0), r);
    cd_id id = add_collider(cloth, &sphere);
    cd_instance_step(cloth, FX_DT, fx_no_wind());
    cr_assert(fx_pos(cloth, 60).y == 0.0f, "no contact yet");

    for (int step = 1; step <= 60; step++) {
        cd_vec3 centre = fx_v3(0, -0.31f + 0.01f * (float)step, 0);
        cr_assert_eq(cd_instance_move_collider(cloth, id, &centre, NULL), CD_OK);
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        assert_outside_ball(cloth, centre, r, step);
        /* Carried on the ball's top: the centre particle is there, within
         * 1 cm. */
        cr_assert_float_eq(fx_pos(cloth, 60).y, centre.y + r, 0.01, "step %d centre at %.4f",
                           step, fx_pos(cloth, 60).y);
    }
    cd_world_destroy(world);
}

Test(solver_collision, turning_a_plane_should_push_particles_to_its_new_positive_side)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 10, 0.1f, 0.0f);
    cr_assert_eq(cd_instance_set_gravity(cloth, fx_v3(0, 0, 0)), CD_OK);
    cd_collider_def ground = plane_def(fx_v3(0, 0, 0), fx_v3(0, 1, 0));
    cd_id id = add_collider(cloth, &ground);
    cd_vec3 tilted = fx_v3(1, 1, 0);
    cr_assert_eq(cd_instance_move_collider(cloth, id, NULL, &tilted), CD_OK);
    cd_instance_step(cloth, FX_DT, fx_no_wind());
    const cd_vec3 n = unit(tilted);
    int pushed = 0;
    for (uint32_t i = 0; i < 100; i++) {
        double s = signed_distance(fx_pos(cloth, i), fx_v3(0, 0, 0), n);
        /* On the new normal's side, within 1e-5 m. */
        cr_assert(s >= -SURFACE_TOL, "particle %u at %.7f m", i, s);
        pushed += fx_pos(cloth, i).y > 1e-4f;
    }
    /* The half with x < 0 was behind the turned plane and moved. */
    cr_assert(pushed >= 40, "%d particles pushed", pushed);
    cd_world_destroy(world);
}

Test(solver_collision, removed_sphere_should_let_the_cloth_fall_through)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, DRAPE_N, 0.08f, 0.5f);
    const float r = 0.3f;
    cd_collider_def sphere = sphere_def(fx_v3(0, 0, 0), r);
    cd_id id = add_collider(cloth, &sphere);
    for (int step = 0; step < 30; step++)
        cd_instance_step(cloth, FX_DT, fx_no_wind());
    /* Draped on the ball first (see the drop test), centre within 1 cm. */
    cr_assert_float_eq(fx_pos(cloth, DRAPE_CENTRE).y, r, 0.01);

    cr_assert_eq(cd_instance_remove_collider(cloth, id), CD_OK);
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert_eq(info.colliders, 0u);
    for (int step = 0; step < 60; step++)
        cd_instance_step(cloth, FX_DT, fx_no_wind());
    for (uint32_t i = 0; i < DRAPE_N * DRAPE_N; i++)
        /* One more second of fall (some 5 m): all of it below the ball. */
        cr_assert(fx_pos(cloth, i).y < -r, "particle %u at y %.3f", i, fx_pos(cloth, i).y);
    cd_world_destroy(world);
}

/* ---- ids, validation, limits ---------------------------------------------- */

Test(solver_collision, removed_collider_id_should_be_not_found_even_after_slot_reuse)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 4, 0.1f, 0.0f);
    cd_collider_def sphere = sphere_def(fx_v3(0, -1, 0), 0.2f);
    cd_id old = add_collider(cloth, &sphere);
    cr_assert_eq(cd_instance_remove_collider(cloth, old), CD_OK);
    cd_vec3 where = fx_v3(0, 1, 0);
    cr_assert_eq(cd_instance_move_collider(cloth, old, &where, NULL), CD_E_NOT_FOUND);
    cr_assert_eq(cd_instance_remove_collider(cloth, old), CD_E_NOT_FOUND);

    cd_id fresh = add_collider(cloth, &sphere); /* takes the same slot */
    cr_assert_neq(fresh, old, "a reused slot hands out a new id");
    cr_assert_eq(cd_id_index(fresh), cd_id_index(old));
    cr_assert_eq(cd_instance_move_collider(cloth, old, &where, NULL), CD_E_NOT_FOUND);
    cr_assert_eq(cd_instance_remove_collider(cloth, old), CD_E_NOT_FOUND);
    cr_assert_eq(cd_instance_move_collider(cloth, fresh, &where, NULL), CD_OK);

    /* Never issued: the null id and slots beyond any allocated. */
    cr_assert_eq(cd_instance_remove_collider(cloth, 0), CD_E_NOT_FOUND);
    cr_assert_eq(cd_instance_remove_collider(cloth, 0xFFFF), CD_E_NOT_FOUND);
    cr_assert_eq(cd_instance_remove_collider(cloth, (7u << 16) | 1u), CD_E_NOT_FOUND);
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert_eq(info.colliders, 1u);
    cd_world_destroy(world);
}

Test(solver_collision, collider_with_a_zero_or_invalid_vector_should_be_rejected)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 4, 0.1f, 0.0f);
    cd_id id = 0;
    cd_collider_def bad = plane_def(fx_v3(0, 0, 0), fx_v3(0, 0, 0));
    cr_assert_eq(cd_instance_add_collider(cloth, &bad, &id), CD_E_INVALID_ARGUMENT);
    bad = capsule_def(fx_v3(0, 0, 0), fx_v3(0, 0, 0), 0.1f, 0.5f);
    cr_assert_eq(cd_instance_add_collider(cloth, &bad, &id), CD_E_INVALID_ARGUMENT);
    bad = plane_def(fx_v3(NAN, 0, 0), fx_v3(0, 1, 0));
    cr_assert_eq(cd_instance_add_collider(cloth, &bad, &id), CD_E_INVALID_ARGUMENT);
    bad = plane_def(fx_v3(0, 0, 0), fx_v3(0, INFINITY, 0));
    cr_assert_eq(cd_instance_add_collider(cloth, &bad, &id), CD_E_INVALID_ARGUMENT);
    bad = sphere_def(fx_v3(0, 0, 0), -0.1f);
    cr_assert_eq(cd_instance_add_collider(cloth, &bad, &id), CD_E_INVALID_ARGUMENT);
    bad = capsule_def(fx_v3(0, 0, 0), fx_v3(1, 0, 0), 0.1f, NAN);
    cr_assert_eq(cd_instance_add_collider(cloth, &bad, &id), CD_E_INVALID_ARGUMENT);
    bad = sphere_def(fx_v3(0, 0, 0), 0.1f);
    bad.type = (cd_collider_type)7;
    cr_assert_eq(cd_instance_add_collider(cloth, &bad, &id), CD_E_INVALID_ARGUMENT);
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert_eq(info.colliders, 0u, "nothing was added");

    cd_collider_def good = plane_def(fx_v3(0, -1, 0), fx_v3(0, 1, 0));
    id = add_collider(cloth, &good);
    const cd_vec3 zero = fx_v3(0, 0, 0), nan_v = fx_v3(0, NAN, 0);
    cr_assert_eq(cd_instance_move_collider(cloth, id, NULL, &zero), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_move_collider(cloth, id, NULL, &nan_v), CD_E_INVALID_ARGUMENT);
    cr_assert_eq(cd_instance_move_collider(cloth, id, &nan_v, NULL), CD_E_INVALID_ARGUMENT);
    /* A rejected move leaves the plane at y = -1: the cloth at y = 0 is
     * untouched by a step without gravity. */
    cr_assert_eq(cd_instance_set_gravity(cloth, fx_v3(0, 0, 0)), CD_OK);
    cd_instance_step(cloth, FX_DT, fx_no_wind());
    cr_assert_float_eq(fx_pos(cloth, 5).y, 0.0, 1e-6);
    cd_world_destroy(world);
}

Test(solver_collision, sixty_fifth_collider_should_exceed_the_limit)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 4, 0.1f, 0.0f);
    cd_collider_def sphere = sphere_def(fx_v3(0, -5, 0), 0.1f);
    cd_id ids[64];
    for (int k = 0; k < 64; k++) {
        ids[k] = add_collider(cloth, &sphere);
        for (int j = 0; j < k; j++)
            cr_assert_neq(ids[j], ids[k], "ids %d and %d collide", j, k);
    }
    cd_id extra = 0;
    cr_assert_eq(cd_instance_add_collider(cloth, &sphere, &extra), CD_E_LIMIT_EXCEEDED);
    cd_instance_info info;
    cd_instance_get_info(cloth, &info);
    cr_assert_eq(info.colliders, 64u);

    /* Room again after a removal. */
    cr_assert_eq(cd_instance_remove_collider(cloth, ids[17]), CD_OK);
    cr_assert_eq(cd_instance_add_collider(cloth, &sphere, &extra), CD_OK);
    cr_assert_eq(cd_instance_add_collider(cloth, &sphere, &extra), CD_E_LIMIT_EXCEEDED);
    cd_world_destroy(world);
}

Test(solver_collision, pinned_particles_should_never_be_moved_by_colliders)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 10, 0.1f, 0.0f);
    /* Pin three particles, then surround them with every kind of collider. */
    const uint32_t pinned[] = {0, 1, 10};
    cd_vec3 at[3];
    for (size_t k = 0; k < 3; k++) {
        cr_assert_eq(cd_instance_pin(cloth, pinned[k], NULL), CD_OK);
        at[k] = fx_pos(cloth, pinned[k]);
    }
    const cd_vec3 corner = at[0];
    cd_collider_def sphere = sphere_def(corner, 0.25f);
    cd_collider_def capsule = capsule_def(corner, fx_v3(0, 0, 1), 0.2f, 0.6f);
    cd_collider_def plane = plane_def(fx_v3(0, 1, 0), fx_v3(0, 1, 0)); /* all below it */
    add_collider(cloth, &sphere);
    add_collider(cloth, &capsule);
    add_collider(cloth, &plane);

    for (int step = 1; step <= 30; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        for (size_t k = 0; k < 3; k++)
            /* A pin outranks every collider, to the bit. */
            cr_assert(same_bits(fx_pos(cloth, pinned[k]), at[k]), "step %d pin %u moved", step,
                      pinned[k]);
    }
    /* The free particles did obey the plane (the last collider applied). */
    for (uint32_t i = 0; i < 100; i++)
        if (!cd_instance_is_pinned(cloth, i))
            cr_assert(fx_pos(cloth, i).y >= 1.0f - SURFACE_TOL, "particle %u", i);
    cd_world_destroy(world);
}
