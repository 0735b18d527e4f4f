/* Thickness, friction, collision in every substep and two-way coupling
 * (solver/collide.c, solver/colliders.c).
 *
 * The tablecloth: 24 x 24 particles, spacing 0.05 m (1.15 m square), 1 kg,
 * lying flat (down = +z) 0.4 m above the origin and centred over it
 * (origin (-0.575, 0.4, -0.575)), 8 iterations, no air; it drops on a ball
 * of radius 0.3 m at the origin. Particle 300 (row 12, column 12) is the
 * one nearest the centre, 0.025 m from it along x and z.
 *
 * Numbers measured with gcc -O2 on x86-64 are given next to each assert. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "solver_fixtures.h"

#define SURFACE_TOL 1e-5 /* metres: projection onto a surface, in floats */
#define TABLE_N 24
#define TABLE_CENTRE (12u * TABLE_N + 12u)
#define BALL_R 0.3f

static cd_id add_collider(cd_instance *cloth, const cd_collider_def *def)
{
    cd_id id = 0;
    cd_status st = cd_instance_add_collider(cloth, def, &id);
    cr_assert_eq(st, CD_OK, "collider accepted (%s)", cd_status_name(st));
    return id;
}

static cd_instance *tablecloth(cd_world *world, float thickness)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = TABLE_N;
    def.spacing = 0.05f;
    def.down = fx_v3(0, 0, 1);
    def.origin = fx_v3(-0.575f, 0.4f, -0.575f);
    def.thickness = thickness;
    def.solver_iterations = 8;
    def.air_density = 0.0f;
    return fx_cloth(world, &def);
}

static cd_collider_def ball(float friction, float static_friction)
{
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_SPHERE);
    c.radius = BALL_R;
    c.friction = friction;
    c.static_friction = static_friction;
    return c;
}

static double horizontal_offset(cd_vec3 p)
{
    return sqrt((double)p.x * p.x + (double)p.z * p.z);
}

/* ---- friction -------------------------------------------------------------- */

Test(solver_contact, tablecloth_on_a_ball_with_friction_should_stay_centred)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 0.0f);
    cd_collider_def c = ball(0.5f, 0.6f);
    add_collider(cloth, &c);
    for (int step = 0; step < 600; step++)
        cr_assert_not(cd_instance_step(cloth, FX_DT, fx_no_wind()).unstable);
    const cd_vec3 centre = fx_pos(cloth, TABLE_CENTRE);
    /* Started 0.035 m off the ball's vertical axis; after 10 s still within
     * 0.06 m of it (measured 0.033 m) ... */
    cr_assert(horizontal_offset(centre) < 0.06, "centre (%.4f %.4f %.4f)", centre.x, centre.y,
              centre.z);
    /* ... and on top of the ball, within 1 cm (measured 0.298 m). */
    cr_assert_float_eq(centre.y, BALL_R, 0.01, "centre height %.4f m", centre.y);
    cd_world_destroy(world);
}

Test(solver_contact, tablecloth_on_a_frictionless_ball_should_slide_off)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 0.0f);
    cd_collider_def c = ball(0.0f, 0.0f);
    add_collider(cloth, &c);
    for (int step = 0; step < 600; step++)
        cr_assert_not(cd_instance_step(cloth, FX_DT, fx_no_wind()).unstable);
    const cd_vec3 centre = fx_pos(cloth, TABLE_CENTRE);
    /* The seed's frictionless contact: the drape is an unstable balance and
     * the cloth ends off the ball, its centre more than 0.5 m from the axis
     * or more than 0.5 m below the ball's centre (measured: fallen to
     * y = -86 m, 1.07 m off the axis). */
    cr_assert(horizontal_offset(centre) > 0.5 || centre.y < -0.5, "centre (%.4f %.4f %.4f)",
              centre.x, centre.y, centre.z);
    cd_world_destroy(world);
}

Test(solver_contact, plane_moving_sideways_with_friction_should_carry_the_cloth_on_it)
{
    /* A 10 x 10 sheet (0.45 m square) resting on the ground plane y = -0.01,
     * which then slides along +x at 1 m/s for 2 s. */
    for (int with_friction = 0; with_friction < 2; with_friction++) {
        cd_world *world = fx_world();
        cd_cloth_def def = cd_default_cloth_def();
        def.width = def.height = 10;
        def.spacing = 0.05f;
        def.down = fx_v3(0, 0, 1);
        def.origin = fx_v3(-0.225f, 0, -0.225f);
        def.air_density = 0.0f;
        def.sleep_threshold = 0.0f;
        cd_instance *cloth = fx_cloth(world, &def);
        cd_collider_def c = cd_default_collider_def(CD_COLLIDER_PLANE);
        c.position = fx_v3(0, -0.01f, 0);
        c.friction = c.static_friction = with_friction ? 1.0f : 0.0f;
        cd_id ground = add_collider(cloth, &c);
        for (int step = 0; step < 60; step++)
            cd_instance_step(cloth, FX_DT, fx_no_wind());
        cd_vec3 before = fx_pos(cloth, 45);
        cd_vec3 at = c.position;
        for (int step = 0; step < 120; step++) {
            at.x += 1.0f / 60.0f;
            cr_assert_eq(cd_instance_move_collider(cloth, ground, &at, NULL), CD_OK);
            cd_instance_step(cloth, FX_DT, fx_no_wind());
        }
        const double moved = fx_pos(cloth, 45).x - before.x;
        if (with_friction) {
            /* Carried: it moves with the plane's 2 m within 10% (measured
             * 1.956 m; friction mu g accelerates it to the plane's speed in
             * about 0.1 s) and ends at its speed within 1%. */
            cr_assert_float_eq(moved, at.x, 0.1 * at.x, "moved %.4f m, plane %.4f m", moved,
                               at.x);
            cr_assert_float_eq(cd_instance_velocity(cloth, 45).x, 1.0, 0.01);
        } else {
            /* Without friction the plane slides under it: less than 1 mm
             * (measured 0). */
            cr_assert(fabs(moved) < 1e-3, "moved %.6f m", moved);
        }
        cd_world_destroy(world);
    }
}

/* ---- thickness ----------------------------------------------------------- */

Test(solver_contact, thickness_should_hold_every_particle_that_far_off_a_ball)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 0.02f);
    cd_collider_def c = ball(0.5f, 0.6f);
    add_collider(cloth, &c);
    double nearest = INFINITY;
    for (int step = 0; step < 300; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < TABLE_N * TABLE_N; i++)
            nearest = fmin(nearest, fx_dist(fx_pos(cloth, i), fx_v3(0, 0, 0)));
    }
    /* Never closer than r + thickness = 0.32 m, within 1e-5 m (measured
     * 0.3200000 m: the draped particles sit exactly there). */
    cr_assert(nearest >= BALL_R + 0.02 - SURFACE_TOL, "nearest %.7f m", nearest);
    cr_assert(nearest < BALL_R + 0.02 + 1e-3, "the cloth never reached the ball: %.5f", nearest);
    /* The draped centre rests on the thickness (measured 0.318 m up). */
    cr_assert_float_eq(fx_pos(cloth, TABLE_CENTRE).y, BALL_R + 0.02, 0.01);
    cd_world_destroy(world);
}

Test(solver_contact, thickness_should_hold_every_particle_that_far_above_a_plane)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 0.02f);
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_PLANE);
    c.position = fx_v3(0, 0.1f, 0);
    add_collider(cloth, &c);
    double lowest = INFINITY;
    for (int step = 0; step < 120; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < TABLE_N * TABLE_N; i++)
            lowest = fmin(lowest, fx_pos(cloth, i).y);
    }
    /* Never below 0.1 + 0.02 m, within 1e-5 m (measured 0.1200000 m) ... */
    cr_assert(lowest >= 0.12 - SURFACE_TOL, "lowest %.7f m", lowest);
    /* ... and lying on it: every particle at 0.12 m within 1 mm. */
    for (uint32_t i = 0; i < TABLE_N * TABLE_N; i++)
        cr_assert_float_eq(fx_pos(cloth, i).y, 0.12, 1e-3, "particle %u", i);
    cd_world_destroy(world);
}

/* Distance from p to the segment (-half, 0, 0)..(half, 0, 0). */
static double distance_to_x_segment(cd_vec3 p, double half)
{
    double t = fmax(-half, fmin(half, (double)p.x));
    return fx_dist(p, fx_v3((float)t, 0, 0));
}

Test(solver_contact, thickness_should_hold_every_particle_that_far_off_a_capsule)
{
    cd_world *world = fx_world();
    cd_instance *cloth = tablecloth(world, 0.02f);
    /* Along x, radius 0.2, 0.8 m long with its caps: the segment is 0.4 m. */
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_CAPSULE);
    c.normal = fx_v3(1, 0, 0);
    c.radius = 0.2f;
    c.height = 0.8f;
    c.friction = 0.5f;
    c.static_friction = 0.6f;
    add_collider(cloth, &c);
    double nearest = INFINITY;
    for (int step = 0; step < 300; step++) {
        cd_instance_step(cloth, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < TABLE_N * TABLE_N; i++)
            nearest = fmin(nearest, distance_to_x_segment(fx_pos(cloth, i), 0.2));
    }
    /* Never closer than 0.2 + 0.02 m to the axis segment, within 1e-5 m
     * (measured 0.2200000 m). */
    cr_assert(nearest >= 0.22 - SURFACE_TOL, "nearest %.7f m", nearest);
    cr_assert(nearest < 0.22 + 1e-3, "the cloth never reached the capsule: %.5f", nearest);
    cd_world_destroy(world);
}

/* ---- collision in every substep -------------------------------------------- */

/* A free 11 x 11 sheet (0.5 m square) at y = 0, no gravity, and a thin bar
 * (capsule along x, radius 0.03 m, 1 m long) 0.1 m below it that rises at
 * 10 m/s: in one step of 1/60 s it moves 0.167 m, through the sheet to
 * 0.067 m above it. Returns the lowest and highest height of the sheet's
 * middle row (z = 0, right above the bar) after that step. */
static void sweep_bar(int32_t substeps, double *low, double *high)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 11;
    def.spacing = 0.05f;
    def.down = fx_v3(0, 0, 1);
    def.origin = fx_v3(-0.25f, 0, -0.25f);
    def.gravity = fx_v3(0, 0, 0);
    def.air_density = 0.0f;
    def.substeps = substeps;
    def.sleep_threshold = 0.0f;
    cd_instance *sheet = fx_cloth(world, &def);
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_CAPSULE);
    c.position = fx_v3(0, -0.1f, 0);
    c.normal = fx_v3(1, 0, 0);
    c.radius = 0.03f;
    c.height = 1.0f;
    cd_id bar = add_collider(sheet, &c);
    cd_instance_step(sheet, FX_DT, fx_no_wind());
    cd_vec3 to = fx_v3(0, -0.1f + 10.0f / 60.0f, 0);
    cr_assert_eq(cd_instance_move_collider(sheet, bar, &to, NULL), CD_OK);
    cd_instance_step(sheet, FX_DT, fx_no_wind());
    *low = INFINITY;
    *high = -INFINITY;
    for (uint32_t x = 0; x < 11; x++) {
        const double y = fx_pos(sheet, 5 * 11 + x).y;
        *low = fmin(*low, y);
        *high = fmax(*high, y);
    }
    cd_world_destroy(world);
}

Test(solver_contact, fast_thin_bar_should_catch_the_cloth_with_8_substeps_and_tunnel_with_1)
{
    double low, high;
    /* One substep: the bar goes from 0.1 m below to 0.067 m above (more
     * than its radius away both times) and never meets the cloth: the
     * seed's tunnelling. The middle row has not moved (measured 0). */
    sweep_bar(1, &low, &high);
    cr_assert(fabs(low) < 1e-6 && fabs(high) < 1e-6, "1 substep: middle row %.5f..%.5f m", low,
              high);
    /* Eight substeps: it moves 0.021 m per substep, less than its radius,
     * so it meets every particle of the row below its axis and pushes it
     * up: the row rides on top of the bar, at 0.0667 + 0.03 m within 1 mm
     * (measured 0.0966 to 0.0967 m). Four substeps (0.042 m each, more
     * than the radius) would push the row down through the bar. */
    sweep_bar(8, &low, &high);
    const double top = -0.1 + 10.0 / 60.0 + 0.03;
    cr_assert(low > top - 1e-3 && high < top + 1e-3, "8 substeps: middle row %.5f..%.5f m, bar top %.5f",
              low, high, top);
}

/* ---- two-way coupling ------------------------------------------------------ */

/* A 12 x 12 sheet (0.55 m square, 1 kg, 144 particles) lying flat 0.5 m up,
 * centred over the origin, no damping, no air, 2 substeps, and no mass set
 * for coupling: the reported impulses must be its real momentum, with each
 * particle's own mass (lumped by area: sheet_mass()). After
 * 10 steps of fall, 40 steps (0.67 s) are watched, over which it lands on
 * the collider. */
typedef struct landing {
    cd_vec3 dp;                 /* momentum change of the sheet */
    cd_vec3 dl;                 /* angular momentum change about the collider */
    cd_vec3 gravity_impulse;    /* M g T */
    cd_vec3 gravity_moment;     /* integral of M (com - c) x g dt, trapezoid */
    cd_vec3 linear, angular;    /* sums of the reported impulses */
    uint32_t reported;          /* cd_instance_collider_impulses, last step */
} landing;

#define SHEET_MASS 1.0
#define SHEET_PARTICLES 144u

static cd_vec3 v3_sum(cd_vec3 a, cd_vec3 b)
{
    return fx_v3(a.x + b.x, a.y + b.y, a.z + b.z);
}

/* Particle k's mass: a third of each adjacent triangle's share. */
static double sheet_mass(uint32_t k)
{
    return fx_grid_mass(12, 12, SHEET_MASS, k);
}

static void momenta(const cd_instance *sheet, cd_vec3 c, double p[3], double l[3], double com[3])
{
    for (int a = 0; a < 3; a++)
        p[a] = l[a] = com[a] = 0.0;
    for (uint32_t k = 0; k < SHEET_PARTICLES; k++) {
        const double m = sheet_mass(k);
        const cd_vec3 v = cd_instance_velocity(sheet, k), x = fx_pos(sheet, k);
        const double r[3] = {x.x - c.x, x.y - c.y, x.z - c.z};
        p[0] += m * v.x;
        p[1] += m * v.y;
        p[2] += m * v.z;
        l[0] += m * (r[1] * v.z - r[2] * v.y);
        l[1] += m * (r[2] * v.x - r[0] * v.z);
        l[2] += m * (r[0] * v.y - r[1] * v.x);
        com[0] += m * x.x / SHEET_MASS;
        com[1] += m * x.y / SHEET_MASS;
        com[2] += m * x.z / SHEET_MASS;
    }
}

static landing land_sheet(cd_collider_def collider)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 12;
    def.spacing = 0.05f;
    def.down = fx_v3(0, 0, 1);
    def.origin = fx_v3(-0.275f, 0.5f, -0.275f);
    def.mass = (float)SHEET_MASS;
    def.damping = 0.0f;
    def.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    def.air_density = 0.0f;
    def.sleep_threshold = 0.0f;
    def.substeps = 2;
    cd_instance *sheet = fx_cloth(world, &def);
    add_collider(sheet, &collider);
    const cd_vec3 c = collider.position;
    for (int i = 0; i < 10; i++)
        cd_instance_step(sheet, FX_DT, fx_no_wind());

    landing out = {.linear = fx_v3(0, 0, 0), .angular = fx_v3(0, 0, 0)};
    double p0[3], l0[3], com[3], p1[3], l1[3], com1[3], moment[3] = {0, 0, 0};
    momenta(sheet, c, p0, l0, com);
    const int steps = 40;
    for (int i = 0; i < steps; i++) {
        cd_instance_step(sheet, FX_DT, fx_no_wind());
        cd_collider_impulse imp;
        out.reported = cd_instance_collider_impulses(sheet, &imp, 1);
        if (out.reported == 1) {
            out.linear = v3_sum(out.linear, imp.linear);
            out.angular = v3_sum(out.angular, imp.angular);
        }
        momenta(sheet, c, p1, l1, com1);
        /* M (com - c) x g with g = (0, -g, 0): (g rz, 0, -g rx) M. */
        const double rz = 0.5 * (com[2] + com1[2]) - c.z, rx = 0.5 * (com[0] + com1[0]) - c.x;
        moment[0] += SHEET_MASS * FX_G * rz * FX_DT;
        moment[2] -= SHEET_MASS * FX_G * rx * FX_DT;
        memcpy(com, com1, sizeof com);
    }
    const double t = steps * (double)FX_DT;
    out.dp = fx_v3((float)(p1[0] - p0[0]), (float)(p1[1] - p0[1]), (float)(p1[2] - p0[2]));
    out.dl = fx_v3((float)(l1[0] - l0[0]), (float)(l1[1] - l0[1]), (float)(l1[2] - l0[2]));
    out.gravity_impulse = fx_v3(0, (float)(-SHEET_MASS * FX_G * t), 0);
    out.gravity_moment = fx_v3((float)moment[0], (float)moment[1], (float)moment[2]);
    cd_world_destroy(world);
    return out;
}

static cd_collider_def coupled_ball(float x, float coupling, float friction)
{
    cd_collider_def c = ball(friction, friction);
    c.position = fx_v3(x, 0, 0);
    c.coupling = coupling;
    return c;
}

static double norm(cd_vec3 v)
{
    return fx_dist(v, fx_v3(0, 0, 0));
}

/* Asserts `got` == `want` within `rel` of |want| on the whole vector, and
 * on each axis carrying more than 1% of it. */
static void assert_vec_close(cd_vec3 got, cd_vec3 want, double rel, const char *what)
{
    const double scale = norm(want);
    cr_assert(norm(fx_v3(got.x - want.x, got.y - want.y, got.z - want.z)) <= rel * scale,
              "%s: (%.6f %.6f %.6f) vs (%.6f %.6f %.6f)", what, got.x, got.y, got.z, want.x,
              want.y, want.z);
    const float g[3] = {got.x, got.y, got.z}, w[3] = {want.x, want.y, want.z};
    for (int a = 0; a < 3; a++)
        if (fabs(w[a]) > 0.01 * scale)
            cr_assert(fabs(g[a] - w[a]) <= rel * fabs(w[a]), "%s axis %d: %.6f vs %.6f", what, a,
                      g[a], w[a]);
}

Test(solver_contact, coupled_ball_should_receive_the_momentum_the_landing_sheet_lost)
{
    /* The ball 0.05 m off-centre along x, so the sheet is also pushed
     * sideways and the x axis carries a real impulse. */
    const landing l = land_sheet(coupled_ball(0.05f, 1.0f, 0.0f));
    cr_assert_eq(l.reported, 1u);
    /* What the contact gave the sheet: dP minus gravity's M g T. The ball
     * received its opposite, within 1% (measured (0.97331, -4.25539,
     * -0.00062) N s on both sides, agreeing to 1e-5). */
    const cd_vec3 lost = fx_v3(-(l.dp.x - l.gravity_impulse.x), -(l.dp.y - l.gravity_impulse.y),
                               -(l.dp.z - l.gravity_impulse.z));
    cr_assert(norm(lost) > 1.0, "the sheet did land: %.4f N s", norm(lost));
    assert_vec_close(l.linear, lost, 0.01, "linear impulse vs momentum lost");
}

Test(solver_contact, coupling_should_scale_the_impulses_and_0_should_report_none)
{
    const landing full = land_sheet(coupled_ball(0.05f, 1.0f, 0.0f));
    const landing half = land_sheet(coupled_ball(0.05f, 0.5f, 0.0f));
    const landing none = land_sheet(coupled_ball(0.05f, 0.0f, 0.0f));
    /* Coupling does not change the cloth's motion, only the share handed
     * back: exactly half, within 1e-5 relative (measured exact). */
    assert_vec_close(half.linear, fx_v3(0.5f * full.linear.x, 0.5f * full.linear.y,
                                        0.5f * full.linear.z),
                     1e-5, "coupling 0.5");
    cr_assert(memcmp(&half.dp, &full.dp, sizeof full.dp) == 0, "the sheet moved differently");
    /* Coupling 0: the collider is not listed at all. */
    cr_assert_eq(none.reported, 0u);
    cr_assert_eq(full.reported, 1u);
}

Test(solver_contact, frictionless_ball_should_receive_no_torque_about_its_centre)
{
    /* Every push is along the ball's radius, so r x J = 0 for each one:
     * below 1e-5 of |J| x radius even for an off-centre landing (measured
     * 0 to 1e-7). With friction the pushes have a tangential part, and the
     * off-centre landing turns the ball about z by more than 10% of
     * |J| x radius (measured 0.886 N m s of 2.43). */
    const landing smooth = land_sheet(coupled_ball(0.1f, 1.0f, 0.0f));
    const landing rough = land_sheet(coupled_ball(0.1f, 1.0f, 0.5f));
    const double scale = norm(smooth.linear) * BALL_R;
    cr_assert(norm(smooth.angular) < 1e-5 * scale, "frictionless: |L| %.3e of %.3f",
              norm(smooth.angular), scale);
    cr_assert(fabs(rough.angular.z) > 0.1 * norm(rough.linear) * BALL_R,
              "with friction: L (%.4f %.4f %.4f)", rough.angular.x, rough.angular.y,
              rough.angular.z);
}

Test(solver_contact, centred_landing_should_turn_a_rough_ball_by_nearly_nothing)
{
    /* Centred: the torques of the four quadrants cancel, within 1e-3 of
     * |J| x radius (measured 5e-4 N m s of 2.44: the Gauss-Seidel order's
     * slight asymmetry). */
    const landing l = land_sheet(coupled_ball(0.0f, 1.0f, 0.5f));
    const double scale = norm(l.linear) * BALL_R;
    cr_assert(norm(l.linear) > 5.0, "landed: %.3f N s", norm(l.linear));
    cr_assert(norm(l.angular) < 1e-3 * scale, "|L| %.3e of %.3f", norm(l.angular), scale);
}

Test(solver_contact, coupled_plane_should_receive_the_angular_momentum_the_sheet_lost)
{
    /* A table top at y = 0.2 whose reference point (0.3, 0.2, -0.1) is off
     * the sheet's centre: the sheet lands flat on it, and about that point
     * the plane takes the sheet's change of angular momentum minus
     * gravity's moment, within 1% (measured (0.81341, 0, 2.44024) against
     * (0.81341, 0, 2.44024) N m s). */
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_PLANE);
    c.position = fx_v3(0.3f, 0.2f, -0.1f);
    c.coupling = 1.0f;
    const landing l = land_sheet(c);
    const cd_vec3 lost = fx_v3(-(l.dl.x - l.gravity_moment.x), -(l.dl.y - l.gravity_moment.y),
                               -(l.dl.z - l.gravity_moment.z));
    cr_assert(norm(lost) > 1.0, "a real moment: %.4f N m s", norm(lost));
    assert_vec_close(l.angular, lost, 0.01, "angular impulse vs angular momentum lost");
    /* And it is the lever arm's: (sheet centre - point) x J, the sheet
     * being centred at x = z = 0 (within 1%). */
    const cd_vec3 arm = fx_v3(-0.3f, 0, 0.1f);
    const cd_vec3 expected = fx_v3(arm.y * l.linear.z - arm.z * l.linear.y,
                                   arm.z * l.linear.x - arm.x * l.linear.z,
                                   arm.x * l.linear.y - arm.y * l.linear.x);
    assert_vec_close(l.angular, expected, 0.01, "angular impulse vs lever arm x J");
}
