/* solver/render.c — what a renderer reads besides the positions (issue 15):
 * each particle's velocity, (pos - prev) / last_dt, and the area-weighted
 * unit vertex normals of the render triangles, on the side down x right of
 * the grid (outwards for a soft body). */
#include <stdlib.h>

#include "solver_fixtures.h"

/* A sheet held by its top edge, lying flat (right +x, down +z) so that it
 * swings down through the y axis: every particle moves, each differently. */
static cd_instance *swinging_sheet(cd_world *world, int32_t substeps)
{
    cd_cloth_def d = cd_default_cloth_def();
    d.width = 12;
    d.height = 9;
    d.down = fx_v3(0, 0, 1);
    d.origin = fx_v3(0, 2, 0);
    d.substeps = substeps;
    d.wind_model = CD_WIND_CONSTANT; /* no air: prev is the substep's start */
    d.sleep_threshold = 0.0f;
    cd_instance *inst = fx_cloth(world, &d);
    for (uint32_t x = 0; x < 12; x++)
        cr_assert_eq(cd_instance_pin(inst, x, NULL), CD_OK);
    return inst;
}

static float *floats_for(const cd_instance *inst)
{
    float *p = malloc(sizeof(float) * 3 * cd_instance_particle_count(inst));
    cr_assert_not_null(p);
    return p;
}

Test(solver_render, velocities_are_zero_before_the_first_step)
{
    cd_world *world = fx_world();
    cd_instance *sheet = swinging_sheet(world, 1);
    float *v = floats_for(sheet);
    for (uint32_t i = 0; i < 3 * cd_instance_particle_count(sheet); i++)
        v[i] = 99.0f;
    cd_instance_velocities(sheet, v);
    for (uint32_t i = 0; i < 3 * cd_instance_particle_count(sheet); i++)
        cr_assert_eq(v[i], 0.0f, "component %u", i);
    free(v);
    cd_world_destroy(world);
}

Test(solver_render, velocities_should_equal_the_last_moves_over_dt_on_a_swinging_sheet)
{
    cd_world *world = fx_world();
    cd_instance *sheet = swinging_sheet(world, 1); /* one substep: its length is dt */
    const uint32_t n = cd_instance_particle_count(sheet);
    float *before = floats_for(sheet), *v = floats_for(sheet);
    double fastest = 0;
    for (int step = 0; step < 30; step++) {
        memcpy(before, cd_instance_local_positions(sheet), sizeof(float) * 3 * n);
        cd_instance_step(sheet, FX_DT, fx_no_wind());
        cd_instance_velocities(sheet, v);
        const float *after = cd_instance_local_positions(sheet);
        for (uint32_t i = 0; i < 3 * n; i++) {
            const double expected = ((double)after[i] - before[i]) / FX_DT;
            cr_assert_leq(fabs(v[i] - expected), 1e-4 + 1e-5 * fabs(expected),
                          "step %d, component %u: %.9g, expected %.9g", step, i, (double)v[i],
                          expected);
            fastest = fmax(fastest, fabs(expected));
        }
        for (uint32_t i = 0; i < n; i++) {
            const cd_vec3 one = cd_instance_velocity(sheet, i);
            cr_assert(one.x == v[3 * i] && one.y == v[3 * i + 1] && one.z == v[3 * i + 2],
                      "cd_instance_velocity agrees with cd_instance_velocities");
        }
        for (uint32_t x = 0; x < 12; x++) /* the pinned edge stays */
            cr_assert(v[3 * x] == 0 && v[3 * x + 1] == 0 && v[3 * x + 2] == 0);
    }
    cr_assert_gt(fastest, 1.0, "the sheet swings (fastest %.3f m/s)", fastest);
    free(before);
    free(v);
    cd_world_destroy(world);
}

Test(solver_render, velocities_are_over_the_last_substep_when_there_are_several)
{
    cd_world *world = fx_world();
    cd_instance *sheet = swinging_sheet(world, 4);
    const uint32_t n = cd_instance_particle_count(sheet);
    float *before = floats_for(sheet), *v = floats_for(sheet);
    for (int step = 0; step < 20; step++)
        cd_instance_step(sheet, FX_DT, fx_no_wind());
    memcpy(before, cd_instance_local_positions(sheet), sizeof(float) * 3 * n);
    cd_instance_step(sheet, FX_DT, fx_no_wind());
    cd_instance_velocities(sheet, v);
    /* The sheet accelerates through the step: the last quarter's velocity
     * is close to the step's mean, but not equal to it. */
    const float *after = cd_instance_local_positions(sheet);
    const uint32_t tip = n - 1;
    const double mean_y = ((double)after[3 * tip + 1] - before[3 * tip + 1]) / FX_DT;
    cr_assert_lt(v[3 * tip + 1], 0.0f, "the free edge falls");
    cr_assert_leq(fabs(v[3 * tip + 1] - mean_y), 0.2 * fabs(mean_y));
    cr_assert_neq(v[3 * tip + 1], (float)mean_y);
    free(before);
    free(v);
    cd_world_destroy(world);
}

Test(solver_render, velocities_are_zero_while_the_instance_sleeps)
{
    cd_world *world = fx_world();
    cd_cloth_def d = cd_default_cloth_def();
    d.wind_model = CD_WIND_CONSTANT;
    cd_instance *curtain = fx_cloth(world, &d);
    for (uint32_t x = 0; x < 10; x++)
        cd_instance_pin(curtain, x, NULL);
    float *v = floats_for(curtain);
    bool moved = false, slept = false;
    for (int step = 0; step < 1200 && !slept; step++) {
        slept = cd_instance_step(curtain, FX_DT, fx_no_wind()).sleeping;
        cd_instance_velocities(curtain, v);
        float most = 0;
        for (uint32_t i = 0; i < 300; i++)
            most = fmaxf(most, fabsf(v[i]));
        moved = moved || most > 0.0f;
        if (slept)
            cr_assert_eq(most, 0.0f, "asleep, yet a velocity of %g", (double)most);
    }
    cr_assert(moved && slept);
    free(v);
    cd_world_destroy(world);
}

/* |n| within 1e-6 of 1. */
static void assert_unit(const float *n, uint32_t i)
{
    const double len = sqrt((double)n[0] * n[0] + (double)n[1] * n[1] + (double)n[2] * n[2]);
    cr_assert_leq(fabs(len - 1.0), 1e-6, "normal %u has length %.9g", i, len);
}

Test(solver_render, normals_of_a_flat_grid_point_down_x_right)
{
    cd_world *world = fx_world();
    /* The defaults: right +x, down -y: down x right = +z. */
    cd_cloth_def d = cd_default_cloth_def();
    cd_instance *curtain = fx_cloth(world, &d);
    /* Lying flat, down +z: down x right = +y, up. */
    d.down = fx_v3(0, 0, 1);
    d.origin = fx_v3(5, 1, 0);
    cd_instance *table = fx_cloth(world, &d);
    float *n = floats_for(curtain);
    cd_instance_normals(curtain, n);
    for (uint32_t i = 0; i < 100; i++)
        cr_assert(n[3 * i] == 0 && n[3 * i + 1] == 0 && fabsf(n[3 * i + 2] - 1) <= 1e-6f, "curtain %u",
                  i);
    cd_instance_normals(table, n);
    for (uint32_t i = 0; i < 100; i++)
        cr_assert(n[3 * i] == 0 && fabsf(n[3 * i + 1] - 1) <= 1e-6f && n[3 * i + 2] == 0, "table %u",
                  i);
    free(n);
    cd_world_destroy(world);
}

/* The normals recomputed here from cd_instance_triangles, in double: the
 * area-weighted sum of the topology's own triangles, made unit. */
static void reference_normals(const cd_instance *inst, double *out)
{
    const uint32_t n = cd_instance_particle_count(inst), t = cd_instance_triangles(inst, NULL, 0);
    uint32_t *tri = malloc(sizeof(uint32_t) * 3 * t);
    cr_assert_not_null(tri);
    cd_instance_triangles(inst, tri, t);
    memset(out, 0, sizeof(double) * 3 * n);
    const float *p = cd_instance_local_positions(inst);
    for (uint32_t k = 0; k < t; k++) {
        const float *a = &p[3 * tri[3 * k]], *b = &p[3 * tri[3 * k + 1]], *c = &p[3 * tri[3 * k + 2]];
        const double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        const double w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        const double x[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2],
                             u[0] * w[1] - u[1] * w[0]};
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 3; q++)
                out[3 * tri[3 * k + j] + q] += x[q];
    }
    for (uint32_t i = 0; i < n; i++) {
        const double len = sqrt(out[3 * i] * out[3 * i] + out[3 * i + 1] * out[3 * i + 1] +
                                out[3 * i + 2] * out[3 * i + 2]);
        for (int q = 0; q < 3 && len > 0; q++)
            out[3 * i + q] /= len;
    }
    free(tri);
}

Test(solver_render, normals_of_a_swinging_sheet_are_unit_and_those_of_its_topology)
{
    cd_world *world = fx_world();
    cd_instance *sheet = swinging_sheet(world, 2);
    const uint32_t n = cd_instance_particle_count(sheet);
    float *nrm = floats_for(sheet);
    double *ref = malloc(sizeof(double) * 3 * n);
    cr_assert_not_null(ref);
    for (int step = 0; step < 40; step++) {
        cd_instance_step(sheet, FX_DT, fx_no_wind());
        if (step % 8 != 7)
            continue;
        cd_instance_normals(sheet, nrm);
        reference_normals(sheet, ref);
        const float *p = cd_instance_local_positions(sheet);
        for (uint32_t i = 0; i < n; i++) {
            assert_unit(&nrm[3 * i], i);
            for (int q = 0; q < 3; q++)
                cr_assert_leq(fabs(nrm[3 * i + q] - ref[3 * i + q]), 1e-5, "normal %u", i);
            /* The documented side: that of (next row - p) x (next column - p),
             * down x right of the grid as it is now. */
            const uint32_t x = i % 12, y = i / 12;
            const uint32_t down = y + 1 < 9 ? i + 12 : i, up = y + 1 < 9 ? i : i - 12;
            const uint32_t right = x + 1 < 12 ? i + 1 : i, left = x + 1 < 12 ? i : i - 1;
            const cd_vec3 dv = {p[3 * down] - p[3 * up], p[3 * down + 1] - p[3 * up + 1],
                                p[3 * down + 2] - p[3 * up + 2]};
            const cd_vec3 rv = {p[3 * right] - p[3 * left], p[3 * right + 1] - p[3 * left + 1],
                                p[3 * right + 2] - p[3 * left + 2]};
            const cd_vec3 side = {dv.y * rv.z - dv.z * rv.y, dv.z * rv.x - dv.x * rv.z,
                                  dv.x * rv.y - dv.y * rv.x};
            cr_assert_gt(side.x * nrm[3 * i] + side.y * nrm[3 * i + 1] + side.z * nrm[3 * i + 2],
                         0.0f, "normal %u points away from down x right", i);
        }
    }
    /* It did swing: the free edge's normal is far from the flat +y. */
    cr_assert_lt(nrm[3 * (n - 1) + 1], 0.9f);
    free(nrm);
    free(ref);
    cd_world_destroy(world);
}

static cd_instance *softbody(cd_world *world, const cd_tet_mesh *m)
{
    cd_cloth_def o = cd_default_softbody_options();
    cd_id id;
    cr_assert_eq(cd_world_create_softbody(world, m, &o, &id), CD_OK);
    return cd_world_get(world, id);
}

Test(solver_render, normals_are_weighted_by_area_on_a_single_tetrahedron)
{
    /* Corner b = (1,0,0) touches the faces z = 0 and y = 0 (area 1/2,
     * outward -z and -y) and the slanted face (area sqrt(3)/2, outward
     * (1,1,1)/sqrt(3)): by area they sum to (1/2, 0, 0), so its normal is
     * exactly +x (by angle it would not be: 45, 45 and 60 degrees). */
    cd_world *world = fx_world();
    float v[] = {0, 1, 0, 1, 1, 0, 0, 2, 0, 0, 1, 1};
    uint32_t tet[] = {0, 1, 2, 3};
    cd_tet_mesh m = {v, 4, tet, 1};
    cd_instance *body = softbody(world, &m);
    float n[12];
    cd_instance_normals(body, n);
    const double s = 1.0 / sqrt(3.0);
    const double expected[12] = {-s, -s, -s, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (int i = 0; i < 12; i++)
        cr_assert_leq(fabs(n[i] - expected[i]), 1e-6, "component %d: %.9g", i, (double)n[i]);
    cd_world_destroy(world);
}

Test(solver_render, soft_body_normals_point_outwards_and_interior_vertices_have_none)
{
    cd_world *world = fx_world();
    cd_tet_mesh m;
    cr_assert_eq(cd_mesh_ball(fx_v3(0, 1, 0), 0.3f, 6, &m), CD_OK);
    cd_instance *ball = softbody(world, &m);
    cd_mesh_free(&m);
    for (int step = 0; step < 10; step++)
        cd_instance_step(ball, FX_DT, fx_no_wind());
    const uint32_t count = cd_instance_particle_count(ball);
    float *n = floats_for(ball);
    cd_instance_normals(ball, n);
    /* Which particles the surface triangles touch. */
    const uint32_t t = cd_instance_triangles(ball, NULL, 0);
    uint32_t *tri = malloc(sizeof(uint32_t) * 3 * t);
    bool *surface = calloc(count, sizeof(bool));
    cr_assert(tri != NULL && surface != NULL);
    cd_instance_triangles(ball, tri, t);
    for (uint32_t k = 0; k < 3 * t; k++)
        surface[tri[k]] = true;
    cd_vec3 centre = {0, 0, 0};
    for (uint32_t i = 0; i < count; i++) {
        const cd_vec3 p = fx_pos(ball, i);
        centre = (cd_vec3){centre.x + p.x / count, centre.y + p.y / count, centre.z + p.z / count};
    }
    uint32_t interior = 0;
    for (uint32_t i = 0; i < count; i++) {
        const float *q = &n[3 * i];
        if (!surface[i]) {
            cr_assert(q[0] == 0 && q[1] == 0 && q[2] == 0, "interior vertex %u", i);
            interior++;
            continue;
        }
        assert_unit(q, i);
        const cd_vec3 p = fx_pos(ball, i);
        const double out = (p.x - centre.x) * q[0] + (p.y - centre.y) * q[1] + (p.z - centre.z) * q[2];
        const double r = sqrt((p.x - centre.x) * (p.x - centre.x) + (p.y - centre.y) * (p.y - centre.y) +
                              (p.z - centre.z) * (p.z - centre.z));
        cr_assert_gt(out, 0.5 * r, "surface vertex %u: its normal points inwards", i);
    }
    cr_assert_gt(interior, 0u, "a ball of resolution 6 has interior vertices");
    free(n);
    free(tri);
    free(surface);
    cd_world_destroy(world);
}

/* A mesh cloth (a fan of four triangles around a centre, wound
 * counter-clockwise seen from +y) pinned at its rim points up; and a
 * tearable grid, torn apart, keeps unit normals over its new topology. */
Test(solver_render, mesh_and_torn_cloth_normals_follow_their_triangles)
{
    cd_world *world = fx_world();
    const float v[] = {0, 1, 0, 1, 1, 0, 0, 1, -1, -1, 1, 0, 0, 1, 1};
    const uint32_t t[] = {0, 1, 2, 0, 2, 3, 0, 3, 4, 0, 4, 1};
    const cd_tri_mesh mesh = {.vertices = v, .vertex_count = 5, .triangles = t, .triangle_count = 4};
    cd_cloth_def o = cd_default_cloth_def();
    cd_id id;
    cd_field_fault fault = {0};
    cr_assert_eq(cd_world_create_mesh_cloth_ex(world, &mesh, &o, &id, &fault), CD_OK, "%s: %s", fault.field,
                 fault.reason);
    cd_instance *fan = cd_world_get(world, id);
    float n[15];
    cd_instance_normals(fan, n);
    for (uint32_t i = 0; i < 5; i++) /* (1,0,0)->(0,0,-1): (b-a)x(c-a) = +y */
        cr_assert(fabsf(n[3 * i]) < 1e-6f && fabsf(n[3 * i + 1] - 1) < 1e-6f && fabsf(n[3 * i + 2]) < 1e-6f,
                  "fan vertex %u: %g %g %g", i, (double)n[3 * i], (double)n[3 * i + 1], (double)n[3 * i + 2]);

    /* A strip pulled apart by its two ends tears; its normals are still
     * those of its (new) triangles. */
    cd_cloth_def d = cd_default_cloth_def();
    d.width = 12;
    d.height = 4;
    d.tear_strain = 0.05f;
    d.sleep_threshold = 0.0f;
    cd_instance *strip = fx_cloth(world, &d);
    for (uint32_t y = 0; y < 4; y++) {
        cr_assert_eq(cd_instance_pin(strip, 12 * y, NULL), CD_OK);
        cr_assert_eq(cd_instance_pin(strip, 12 * y + 11, NULL), CD_OK);
    }
    uint32_t torn = 0;
    for (int step = 0; step < 60; step++) {
        for (uint32_t y = 0; y < 4; y++) { /* the right end walks away */
            const cd_vec3 p = {1.1f + 0.02f * (float)step, -0.1f * (float)y, 0};
            cd_instance_pin(strip, 12 * y + 11, &p);
        }
        cd_instance_step(strip, FX_DT, fx_no_wind());
        torn += cd_world_tear(world, cd_instance_id(strip));
    }
    cr_assert_gt(torn, 0u, "the strip tore");
    const uint32_t count = cd_instance_particle_count(strip);
    cr_assert_gt(count, 48u);
    float *nrm = floats_for(strip);
    double *ref = malloc(sizeof(double) * 3 * count);
    cr_assert_not_null(ref);
    cd_instance_normals(strip, nrm);
    reference_normals(strip, ref);
    for (uint32_t i = 0; i < count; i++)
        for (int q = 0; q < 3; q++)
            cr_assert_leq(fabs(nrm[3 * i + q] - ref[3 * i + q]), 1e-5, "normal %u", i);
    free(nrm);
    free(ref);
    cd_world_destroy(world);
}

/* ---- kinetic energy ------------------------------------------------------------ */

Test(solver_render, kinetic_energy_of_a_free_fall_should_be_half_m_v_squared)
{
    /* A 1 kg sheet falling in vacuum, undamped, for 0.5 s at 60 Hz (6
     * substeps): Verlet's velocity (x - prev) / h is the one at t - h/2,
     * so the reported energy is 1/2 M (g (t - h/2))^2 = 11.889 J; within
     * 0.1%, for a 10 x 10 sheet and for an 80 x 80 one, whose guard pass
     * (which sums the energy) runs in blocks for a team of threads. Before
     * the first step it is 0. */
    static const int32_t sides[] = {10, 80};
    for (int k = 0; k < 2; k++) {
        cd_world *world = fx_world();
        cd_cloth_def def = cd_default_cloth_def();
        def.width = def.height = sides[k];
        def.air_density = 0.0f;
        def.velocity_retention = 1.0f;
        def.sleep_threshold = 0.0f;
        cd_instance *sheet = fx_cloth(world, &def);
        cd_instance_info info;
        cd_instance_get_info(sheet, &info);
        cr_assert_eq(info.kinetic_energy, 0.0);
        for (int s = 0; s < 30; s++)
            cd_instance_step(sheet, FX_DT, fx_no_wind());
        cd_instance_get_info(sheet, &info);
        const double h = FX_DT / 6.0, v = FX_G * (0.5 - h / 2);
        const double want = 0.5 * 1.0 * v * v;
        cr_assert_float_eq(info.kinetic_energy, want, 1e-3 * want, "%d: %.5f J, want %.5f J",
                           sides[k], info.kinetic_energy, want);
        cd_world_destroy(world);
    }
}

Test(solver_render, kinetic_energy_should_leave_pinned_particles_out_and_be_zero_asleep)
{
    /* A curtain swinging from its top row: the energy is 1/2 sum m v^2 of
     * the other particles, each with its own mass (fx_grid_mass), from the
     * velocities `get` reports, within 1e-4; asleep, it is 0. */
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.down = fx_v3(0, 0, 1); /* horizontal: it swings down */
    cd_instance *curtain = fx_cloth(world, &def);
    for (uint32_t x = 0; x < 10; x++)
        cr_assert_eq(cd_instance_pin(curtain, x, NULL), CD_OK);
    for (int s = 0; s < 20; s++)
        cd_instance_step(curtain, FX_DT, fx_no_wind());
    double want = 0.0;
    for (uint32_t i = 10; i < 100; i++) {
        const cd_vec3 v = cd_instance_velocity(curtain, i);
        want += 0.5 * fx_grid_mass(10, 10, 1.0, i) * (v.x * v.x + v.y * v.y + v.z * v.z);
    }
    cd_instance_info info;
    cd_instance_get_info(curtain, &info);
    cr_assert_gt(want, 0.1, "it swings: %.4f J", want);
    cr_assert_float_eq(info.kinetic_energy, want, 1e-4 * want, "%.6f J, want %.6f J",
                       info.kinetic_energy, want);
    for (int s = 0; s < 60 * 60 && !info.sleeping; s++) {
        cd_instance_step(curtain, FX_DT, fx_no_wind());
        cd_instance_get_info(curtain, &info);
    }
    cr_assert(info.sleeping, "asleep within a minute");
    cr_assert_eq(info.kinetic_energy, 0.0);
    cd_world_destroy(world);
}
