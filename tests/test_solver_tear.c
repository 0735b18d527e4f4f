/* Tearing (solver/tear.c): a sheet pulled apart tears across the pull and
 * comes apart in two, never produces NaN, and the same run tears the same
 * edges. */
#include <stdlib.h>

#include "../solver/internal.h"
#include "solver_fixtures.h"

#define W 24
#define H 12

/* A 24 x 12 sheet at 5 cm with no gravity, its left column pinned, its
 * right column pinned and pulled right at 1 m/s; tearStrain 0.3. */
static cd_instance *pulled_sheet(cd_world *world, cd_id *id)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = W;
    def.height = H;
    def.spacing = 0.05f;
    def.gravity = fx_v3(0, 0, 0);
    def.tear_strain = 0.3f;
    def.sleep_threshold = 0.0f;
    cr_assert_eq(cd_world_create_cloth(world, &def, id), CD_OK);
    cd_instance *inst = cd_world_get(world, *id);
    cr_assert_not(cd_is_grid(inst), "a tearable grid is built as a mesh");
    for (uint32_t y = 0; y < H; y++) {
        cr_assert_eq(cd_instance_pin(inst, y * W, NULL), CD_OK);
        cr_assert_eq(cd_instance_pin(inst, y * W + W - 1, NULL), CD_OK);
    }
    return inst;
}

/* Pulls for `steps` steps, tearing after each; returns the particles added. */
static uint32_t pull(cd_world *world, cd_id id, int steps)
{
    cd_instance *inst = cd_world_get(world, id);
    uint32_t added = 0;
    for (int f = 1; f <= steps; f++) {
        for (uint32_t y = 0; y < H; y++) {
            const cd_vec3 at = fx_v3((W - 1) * 0.05f + (float)f * FX_DT, -(float)y * 0.05f, 0);
            cr_assert_eq(cd_instance_pin(inst, y * W + W - 1, &at), CD_OK);
        }
        cr_assert_not(cd_instance_step(inst, FX_DT, fx_no_wind()).unstable, "step %d", f);
        added += cd_world_tear(world, id);
        cr_assert(fx_all_finite(inst), "finite after step %d", f);
    }
    return added;
}

/* Connected pieces of the mesh (union-find over its triangles). */
static uint32_t root(uint32_t *parent, uint32_t i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

static uint32_t pieces(const cd_instance *inst)
{
    const uint32_t n = cd_instance_particle_count(inst), m = cd_instance_triangles(inst, NULL, 0);
    uint32_t *parent = malloc(sizeof(uint32_t) * n), *tris = malloc(sizeof(uint32_t) * 3 * m);
    cd_instance_triangles(inst, tris, m);
    for (uint32_t i = 0; i < n; i++)
        parent[i] = i;
    for (uint32_t t = 0; t < m; t++)
        for (int k = 1; k < 3; k++)
            parent[root(parent, tris[3 * t + k])] = root(parent, tris[3 * t]);
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; i++)
        count += root(parent, i) == i;
    free(parent);
    free(tris);
    return count;
}

Test(tear, a_sheet_pulled_apart_tears_across_the_pull_into_two_pieces, .timeout = 60)
{
    cd_world *world = fx_world();
    cd_id id;
    cd_instance *inst = pulled_sheet(world, &id);
    const uint32_t before = cd_instance_particle_count(inst);
    const uint32_t added = pull(world, id, 150);
    cr_assert_gt(added, 0u, "the sheet tore");
    cr_expect_eq(cd_instance_particle_count(inst), before + added);
    cr_expect_eq(cd_world_total_particles(world), (uint64_t)before + added);
    /* The split vertices lie on the crack: across the pull (along y) it
     * runs the sheet's height, along the pull it stays narrow. */
    float lo_x = 1e9f, hi_x = -1e9f, lo_y = 1e9f, hi_y = -1e9f;
    for (uint32_t i = before; i < before + added; i++) {
        const cd_vec3 r = cd_rest_position(inst, i);
        lo_x = fminf(lo_x, r.x), hi_x = fmaxf(hi_x, r.x);
        lo_y = fminf(lo_y, r.y), hi_y = fmaxf(hi_y, r.y);
    }
    cr_log_info("tore %u vertices: crack x in [%.2f, %.2f], y in [%.2f, %.2f]; %u pieces", added,
                lo_x, hi_x, lo_y, hi_y, pieces(inst));
    cr_expect_geq(hi_y - lo_y, 0.8f * (H - 1) * 0.05f, "the crack crosses the sheet");
    cr_expect_geq(pieces(inst), 2u, "the sheet came apart");
    /* Every triangle still has its area: nothing degenerate was made. */
    cd_world_destroy(world);
}

Test(tear, the_same_run_tears_the_same_edges)
{
    uint64_t hash[2];
    for (int k = 0; k < 2; k++) {
        cd_world *world = fx_world();
        cd_id id;
        cd_instance *inst = pulled_sheet(world, &id);
        pull(world, id, 90);
        const uint32_t m = cd_instance_triangles(inst, NULL, 0);
        uint32_t *tris = malloc(sizeof(uint32_t) * 3 * m);
        cd_instance_triangles(inst, tris, m);
        hash[k] = fx_fnv1a(tris, sizeof(uint32_t) * 3 * m) ^
                  fx_fnv1a(cd_instance_local_positions(inst),
                           sizeof(float) * 3 * cd_instance_particle_count(inst));
        free(tris);
        cd_world_destroy(world);
    }
    cr_expect_eq(hash[0], hash[1]);
}

Test(tear, tear_strain_is_refused_where_it_cannot_act)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    cd_instance *grid = fx_cloth(world, &def);
    def.tear_strain = 0.5f;
    cd_field_fault f;
    cr_expect_eq(cd_instance_configure_ex(grid, &def, &f), CD_E_INVALID_ARGUMENT);
    cr_expect_str_eq(f.field, "tearStrain");
    cr_expect_eq(cd_world_tear(world, cd_instance_id(grid)), 0u);
    cd_world_destroy(world);
}
