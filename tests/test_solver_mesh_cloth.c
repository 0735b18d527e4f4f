/* Mesh cloth: a cloth from vertices and triangles. A rectangle given as a
 * mesh hangs like the grid; a cape with a neck cut-out hangs, collides and
 * self-collides; mass is lumped by area; tethers follow the cloth around a
 * hole; every bad mesh is refused with its fault. */
#include <stdlib.h>

#include "../solver/internal.h"
#include "solver_fixtures.h"

/* A W x H rectangle of the grid's layout (origin 0, right +x, down -y),
 * triangulated as the grid's render triangles (tl bl tr, tr bl br), with
 * cells listed in `skip` (x, y pairs, -1 terminated) left out. */
typedef struct rect_mesh {
    float *v;
    uint32_t *t;
    cd_tri_mesh mesh;
} rect_mesh;

static rect_mesh rect(uint32_t w, uint32_t h, float s, bool (*hole)(uint32_t x, uint32_t y))
{
    rect_mesh r = {.v = malloc(sizeof(float) * 3 * w * h),
                   .t = malloc(sizeof(uint32_t) * 6 * (w - 1) * (h - 1))};
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            float *p = &r.v[3 * (y * w + x)];
            p[0] = (float)x * s;
            p[1] = -(float)y * s;
            p[2] = 0.0f;
        }
    uint32_t n = 0;
    for (uint32_t y = 0; y + 1 < h; y++)
        for (uint32_t x = 0; x + 1 < w; x++) {
            if (hole && hole(x, y))
                continue;
            uint32_t tl = y * w + x, tr = tl + 1, bl = tl + w, br = bl + 1;
            const uint32_t q[6] = {tl, bl, tr, tr, bl, br};
            memcpy(&r.t[3 * n], q, sizeof q);
            n += 2;
        }
    r.mesh = (cd_tri_mesh){.vertices = r.v, .vertex_count = w * h, .triangles = r.t,
                           .triangle_count = n};
    return r;
}

static void rect_free(rect_mesh *r)
{
    free(r->v);
    free(r->t);
}

static cd_instance *mesh_cloth(cd_world *world, const cd_tri_mesh *mesh, const cd_cloth_def *def)
{
    cd_id id = 0;
    cd_field_fault fault = {0};
    cd_status st = cd_world_create_mesh_cloth_ex(world, mesh, def, &id, &fault);
    cr_assert_eq(st, CD_OK, "mesh accepted: %s: %s", fault.field, fault.reason);
    return cd_world_get(world, id);
}

Test(mesh_cloth, a_rectangle_derives_the_grids_structural_and_shear_constraints)
{
    cd_world *world = fx_world();
    rect_mesh r = rect(8, 6, 0.1f, NULL);
    cd_cloth_def def = cd_default_cloth_def();
    def.width = 8;
    def.height = 6;
    cd_instance *grid = fx_cloth(world, &def);
    cd_instance *mesh = mesh_cloth(world, &r.mesh, &def);
    for (int g = CD_GROUP_STRETCH; g <= CD_GROUP_BEND; g++)
        cr_expect_eq(mesh->groups[g].end - mesh->groups[g].begin,
                     grid->groups[g].end - grid->groups[g].begin, "group %d", g);
    cr_expect_float_eq(mesh->max_self_distance, 0.1f, 1e-6f);
    rect_free(&r);
    cd_world_destroy(world);
}

/* The check: the same rectangle as a grid and as a mesh, pinned
 * at its top corners, hangs to the same shape within 1% of its size, at
 * the default settings. */
Test(mesh_cloth, a_rectangle_mesh_hangs_like_the_grid)
{
    cd_world *world = fx_world();
    const uint32_t w = 16, h = 12;
    const float s = 0.05f;
    rect_mesh r = rect(w, h, s, NULL);
    cd_cloth_def def = cd_default_cloth_def();
    def.width = (int32_t)w;
    def.height = (int32_t)h;
    def.spacing = s;
    cd_instance *grid = fx_cloth(world, &def);
    cd_instance *mesh = mesh_cloth(world, &r.mesh, &def);
    for (int k = 0; k < 2; k++) {
        cd_instance *inst = k ? mesh : grid;
        cr_assert_eq(cd_instance_pin(inst, 0, NULL), CD_OK);
        cr_assert_eq(cd_instance_pin(inst, w - 1, NULL), CD_OK);
        for (int i = 0; i < 240; i++)
            cd_instance_step(inst, FX_DT, fx_no_wind());
    }
    double worst = 0.0;
    for (uint32_t i = 0; i < w * h; i++) {
        double d = fx_dist(fx_pos(grid, i), fx_pos(mesh, i));
        worst = d > worst ? d : worst;
    }
    const double size = (double)(w - 1) * s;
    cr_expect_lt(worst, 0.01 * size, "largest gap %.4f m, %.2f%% of %.2f m", worst,
                 100.0 * worst / size, size);
    cr_log_info("mesh vs grid, hanging from two corners: largest gap %.2f%% of the size",
                100.0 * worst / size);
    rect_free(&r);
    cd_world_destroy(world);
}

Test(mesh_cloth, mass_is_a_third_of_each_triangles_area)
{
    cd_world *world = fx_world();
    /* Two triangles of areas 1/2 and 1 (a right triangle and a wider one). */
    const float v[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 2, 1, 0};
    const uint32_t t[] = {0, 1, 2, 1, 3, 2};
    cd_tri_mesh m = {.vertices = v, .vertex_count = 4, .triangles = t, .triangle_count = 2};
    cd_cloth_def def = cd_default_cloth_def();
    def.mass = 3.0f; /* 2 kg per m^2 over 1.5 m^2 */
    cd_instance *inst = mesh_cloth(world, &m, &def);
    const double expect[4] = {2.0 * 0.5 / 3, 2.0 * 1.5 / 3, 2.0 * 1.5 / 3, 2.0 * 1.0 / 3};
    double total = 0.0;
    for (int i = 0; i < 4; i++) {
        double mass = 1.0 / inst->own_inv_mass[i];
        cr_expect_float_eq(mass, expect[i], 1e-5, "vertex %d: %.6f kg", i, mass);
        total += mass;
    }
    cr_expect_float_eq(total, 3.0, 1e-5);
    cd_world_destroy(world);
}

/* A U-shaped strip pinned at one tip: the other tip's tether is the way
 * along the cloth around the gap, not the straight line across it. */
static bool u_gap(uint32_t x, uint32_t y)
{
    return x >= 1 && x <= 2 && y < 6; /* cells x 1..2, rows 0..5: the gap */
}

Test(mesh_cloth, tethers_follow_the_cloth_around_a_hole)
{
    cd_world *world = fx_world();
    rect_mesh r = rect(5, 8, 0.1f, u_gap);
    /* Vertices (2, y<6) belong to no triangle once the gap is cut: keep
     * only cells that exist, and drop the unused vertices by remapping. */
    uint32_t remap[40], kept = 0;
    uint8_t used[40] = {0};
    for (uint32_t i = 0; i < 3 * r.mesh.triangle_count; i++)
        used[r.t[i]] = 1;
    float v[120];
    for (uint32_t i = 0; i < 40; i++)
        if (used[i]) {
            memcpy(&v[3 * kept], &r.v[3 * i], sizeof(float) * 3);
            remap[i] = kept++;
        }
    for (uint32_t i = 0; i < 3 * r.mesh.triangle_count; i++)
        r.t[i] = remap[r.t[i]];
    cd_tri_mesh m = {.vertices = v, .vertex_count = kept, .triangles = r.t,
                     .triangle_count = r.mesh.triangle_count};
    cd_cloth_def def = cd_default_cloth_def();
    cd_instance *inst = mesh_cloth(world, &m, &def);
    const uint32_t left_tip = remap[0], right_tip = remap[4];
    cr_assert_eq(cd_instance_pin(inst, left_tip, NULL), CD_OK);
    cd_rebuild_tethers(inst);
    cr_assert_eq(inst->tether_anchor[right_tip], left_tip);
    /* The shortest way over the cloth runs from the tip to the gap's
     * inner corner (1, 6), under the gap to (3, 6) and up to the other
     * tip: 2 sqrt(0.37) + 0.2 = 1.417 m, where the straight line across
     * the gap is 0.4 m. The search's paths over edges and shortcuts may
     * run up to 8% longer (mesh_cloth.c). */
    const float around = 2.0f * sqrtf(0.37f) + 0.2f;
    const float tether = inst->tether_length[right_tip];
    cr_expect(tether >= around - 1e-4f && tether <= 1.08f * around,
              "tether %.4f m for %.4f m around the gap", tether, around);
    /* Where nothing is in the way, the straight line: the bottom left
     * corner (0, 7) hangs 0.7 m straight below the pin. */
    cr_expect_float_eq(inst->tether_length[remap[7 * 5]], 0.7f, 1e-5f);
    rect_free(&r);
    cd_world_destroy(world);
}

/* A cape: a rectangle with a neck cut-out at the top middle, pinned along
 * the shoulders, draped over a sphere, self-collision on. */
static bool neck(uint32_t x, uint32_t y)
{
    return x >= 6 && x <= 9 && y < 3;
}

Test(mesh_cloth, a_cape_with_a_neck_hole_hangs_collides_and_self_collides)
{
    cd_world *world = fx_world();
    const uint32_t w = 16, h = 14;
    const float s = 0.04f;
    rect_mesh r = rect(w, h, s, neck);
    cd_cloth_def def = cd_default_cloth_def();
    def.self_distance = 0.02f;
    def.thickness = 0.005f;
    /* The cut leaves vertices (7..9, 0..2) unused: pin those that are used
     * along the top; the unused ones are refused, so cut them first. */
    uint8_t used[16 * 14] = {0};
    for (uint32_t i = 0; i < 3 * r.mesh.triangle_count; i++)
        used[r.t[i]] = 1;
    uint32_t remap[16 * 14], kept = 0;
    float *v = malloc(sizeof(float) * 3 * w * h);
    for (uint32_t i = 0; i < w * h; i++)
        if (used[i]) {
            memcpy(&v[3 * kept], &r.v[3 * i], sizeof(float) * 3);
            remap[i] = kept++;
        }
    for (uint32_t i = 0; i < 3 * r.mesh.triangle_count; i++)
        r.t[i] = remap[r.t[i]];
    cd_tri_mesh m = {.vertices = v, .vertex_count = kept, .triangles = r.t,
                     .triangle_count = r.mesh.triangle_count};
    cd_instance *inst = mesh_cloth(world, &m, &def);
    for (uint32_t x = 0; x < w; x++)
        if (used[x])
            cr_assert_eq(cd_instance_pin(inst, remap[x], NULL), CD_OK);
    /* A body under the cape: a sphere just behind the cloth's plane. */
    cd_collider_def body = cd_default_collider_def(CD_COLLIDER_SPHERE);
    body.position = fx_v3(0.3f, -0.35f, -0.16f);
    body.radius = 0.2f;
    cd_id collider;
    cr_assert_eq(cd_instance_add_collider(inst, &body, &collider), CD_OK);
    /* Blow the cape into the body for a second, then let it settle. */
    cd_instance_set_wind(inst, fx_v3(0, 0, -6.0f));
    for (int i = 0; i < 240; i++) {
        if (i == 60)
            cd_instance_set_wind(inst, fx_v3(0, 0, 0));
        cd_instance_step(inst, FX_DT, fx_no_wind());
        cr_assert(fx_all_finite(inst), "finite at step %d", i);
    }
    double deepest = 0.0, lowest = 0.0;
    for (uint32_t i = 0; i < kept; i++) {
        cd_vec3 p = fx_pos(inst, i);
        double inside = body.radius + def.thickness - fx_dist(p, body.position);
        deepest = inside > deepest ? inside : deepest;
        lowest = p.y < lowest ? p.y : lowest;
    }
    cr_expect_lt(deepest, 0.01, "a particle is %.4f m inside the body", deepest);
    cr_expect_lt(lowest, -0.45, "the cape hangs (lowest point %.3f m)", lowest);
    cd_self_collision_stats st = cd_instance_self_collision_stats(inst);
    cr_expect_gt(st.searches, 0u, "self-collision ran");
    free(v);
    rect_free(&r);
    cd_world_destroy(world);
}

/* ---- faults ---- */

static const float square_v[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 2, 2, 0};

static void expect_fault(const uint32_t *t, uint32_t count, uint32_t vertices, const char *field,
                         const char *reason)
{
    cd_tri_mesh m = {.vertices = square_v, .vertex_count = vertices, .triangles = t,
                     .triangle_count = count};
    cd_tri_fault tf;
    cr_assert_eq(cd_tri_mesh_validate(&m, &tf), CD_E_INVALID_ARGUMENT);
    cd_field_fault f;
    cd_tri_fault_describe(&tf, &m, &f);
    cr_expect_str_eq(f.field, field);
    cr_expect_str_eq(f.reason, reason);
}

Test(mesh_cloth, every_bad_mesh_is_refused_naming_its_fault)
{
    const uint32_t out_of_range[] = {0, 1, 2, 1, 3, 9};
    expect_fault(out_of_range, 2, 4, "triangles[5]", "index 9 out of range (4 vertices)");
    const uint32_t repeated_vertex[] = {0, 1, 2, 1, 1, 3};
    expect_fault(repeated_vertex, 2, 4, "triangles", "triangle 1 is degenerate (zero area)");
    const uint32_t duplicate[] = {0, 1, 2, 1, 3, 2, 2, 0, 1};
    expect_fault(duplicate, 3, 4, "triangles", "triangle 2 repeats triangle 0");
    const uint32_t fan[] = {0, 1, 2, 0, 1, 3, 0, 1, 4};
    expect_fault(fan, 3, 5, "triangles",
                 "edge 0-1 is shared by 3 triangles (non-manifold: at most 2)");
    const uint32_t unused[] = {0, 1, 2, 1, 3, 2};
    expect_fault(unused, 2, 5, "vertices", "vertex 4 belongs to no triangle");
    expect_fault(unused, 0, 4, "triangles", "a mesh needs at least 1 triangle");

    const float collinear_v[] = {0, 0, 0, 1, 0, 0, 2, 0, 0};
    const uint32_t one[] = {0, 1, 2};
    cd_tri_mesh flat = {.vertices = collinear_v, .vertex_count = 3, .triangles = one,
                        .triangle_count = 1};
    cd_tri_fault tf;
    cr_expect_eq(cd_tri_mesh_validate(&flat, &tf), CD_E_INVALID_ARGUMENT);
    cr_expect_eq(tf.kind, CD_TRI_DEGENERATE);

    const float far_v[] = {0, 0, 0, 1, 0, 0, 0, 2e5f, 0};
    cd_tri_mesh far = {.vertices = far_v, .vertex_count = 3, .triangles = one,
                       .triangle_count = 1};
    cr_expect_eq(cd_tri_mesh_validate(&far, &tf), CD_E_INVALID_ARGUMENT);
    cr_expect_eq(tf.kind, CD_TRI_BAD_VERTEX);
    cr_expect_eq(tf.index, 2u);
}

Test(mesh_cloth, self_distance_is_bounded_by_the_shortest_edge)
{
    cd_world *world = fx_world();
    rect_mesh r = rect(4, 4, 0.1f, NULL);
    cd_cloth_def def = cd_default_cloth_def();
    def.self_distance = 0.2f;
    cd_id id = 0;
    cd_field_fault f;
    cr_expect_eq(cd_world_create_mesh_cloth_ex(world, &r.mesh, &def, &id, &f),
                 CD_E_INVALID_ARGUMENT);
    cr_expect_str_eq(f.field, "selfDistance");
    cr_expect_eq(cd_world_count(world), 0u, "nothing was created");
    rect_free(&r);
    cd_world_destroy(world);
}
