/* Self-collision (selfDistance): unconnected particles keep their
 * distance, connected ones are exempt so a sheet lies flat. */
#include <stdlib.h>

#include "solver_fixtures.h"

static bool grid_connected(int w, uint32_t i, uint32_t j)
{
    int dx = abs((int)(i % (uint32_t)w) - (int)(j % (uint32_t)w));
    int dy = abs((int)(i / (uint32_t)w) - (int)(j / (uint32_t)w));
    return (dx <= 1 && dy <= 1) || (dx == 2 && dy == 0) || (dx == 0 && dy == 2);
}

/* Smallest distance between two particles no constraint joins. */
static double closest_unconnected(const cd_instance *cloth, int w)
{
    const uint32_t n = cd_instance_particle_count(cloth);
    double best = INFINITY;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            if (!grid_connected(w, i, j)) {
                double d = fx_dist(fx_pos(cloth, i), fx_pos(cloth, j));
                if (d < best)
                    best = d;
            }
    return best;
}

/* An n x n sheet (spacing 0.02) dropped slanted onto a frictionless
 * floor, where it folds over itself, stepped `steps` times at 60 Hz. */
static cd_instance *drop_sheet(cd_world *world, int n, float self_distance, int steps)
{
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = n;
    def.spacing = 0.02f;
    def.origin = fx_v3(0, 0.05f + (float)(n - 1) * 0.02f, 0);
    def.down = fx_v3(0, -1, 0.15f);
    def.self_distance = self_distance;
    def.substeps = 8;
    def.sleep_threshold = 0.0f;
    cd_instance *cloth = fx_cloth(world, &def);
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE);
    cd_id cid;
    cr_assert_eq(cd_instance_add_collider(cloth, &floor, &cid), CD_OK);
    for (int step = 0; step < steps; step++)
        cr_assert(!cd_instance_step(cloth, FX_DT, fx_no_wind()).unstable);
    return cloth;
}

/* The 64 x 64 sheet after 4 s: its closest unconnected particles. */
static double drop_in_folds(float self_distance)
{
    cd_world *world = fx_world();
    cd_instance *cloth = drop_sheet(world, 64, self_distance, 240);
    double closest = closest_unconnected(cloth, 64);
    cd_world_destroy(world);
    return closest;
}

Test(solver_self, folded_sheet_keeps_unconnected_particles_apart)
{
    const float d = 0.016f; /* 0.8 x spacing, as seed 003 advises */
    double with = drop_in_folds(d), without = drop_in_folds(0.0f);
    /* Without it the folds pass through each other; with it no two
     * unconnected particles end closer than 0.9 d (measured 1.00 d with 8
     * substeps; the bench has 32² and 128² too). */
    cr_assert(without < 0.25 * d, "without self-collision: %.4f", without);
    cr_assert(with >= 0.9 * d, "with self-collision: %.4f (%.2f d)", with, with / d);
}

Test(solver_self, a_sheet_with_self_collision_still_lies_flat)
{
    /* Neighbours joined by constraints are exempt: a sheet resting on the
     * floor with selfDistance 0.8 x spacing does not inflate. */
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = 16;
    def.spacing = 0.05f;
    def.down = fx_v3(0, 0, 1);
    def.origin = fx_v3(0, 0.01f, 0);
    def.self_distance = 0.04f;
    cd_instance *cloth = fx_cloth(world, &def);
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE);
    cd_id cid;
    cd_instance_add_collider(cloth, &floor, &cid);
    for (int step = 0; step < 120; step++)
        cd_instance_step(cloth, FX_DT, fx_no_wind());
    for (uint32_t i = 0; i < 256; i++)
        cr_assert(fabsf(fx_pos(cloth, i).y) < 1e-3f, "particle %u at height %.4f", i, fx_pos(cloth, i).y);
    cd_world_destroy(world);
}

/* Two separate tetrahedra of one soft body, a vertex of each 0.8 d from the
 * other, shifted together across the hash's cells: wherever the cell
 * boundaries fall, the pair must be found and pushed apart. (The search
 * once looked only half its reach around a particle and missed pairs at
 * some alignments.) 254 more tetrahedra far away give the hash a realistic
 * size, so that no bucket collision finds the pair by chance. */
#define TETS 256
Test(solver_self, a_close_pair_is_found_wherever_the_cells_fall)
{
    const float s = 0.1f, d = 0.05f, gap = 0.8f * d;
    static float vertices[TETS * 4 * 3];
    static uint32_t tets[TETS * 4];
    const float corner[4][3] = {{0, 0, 0}, {s, 0, 0}, {0, s, 0}, {0, 0, s}};
    for (int shift = 0; shift < 48; shift++) {
        const float x0 = (float)shift * 0.0025f; /* 0 .. 0.12: two cells and more */
        for (int t = 0; t < TETS; t++) {
            /* The first two side by side at the gap, the rest 1 m away. */
            const float tx = t < 2 ? x0 + (float)t * (s + gap) : 1.0f + (float)t * 0.3f;
            for (int k = 0; k < 4; k++) {
                float *v = &vertices[3 * (4 * t + k)];
                v[0] = tx + corner[k][0];
                v[1] = corner[k][1];
                v[2] = corner[k][2];
                tets[4 * t + k] = (uint32_t)(4 * t + k);
            }
        }
        cd_tet_mesh mesh = {.vertices = vertices, .vertex_count = TETS * 4, .tets = tets, .tet_count = TETS};
        cd_world *world = fx_world();
        cd_cloth_def o = cd_default_softbody_options();
        o.gravity = fx_v3(0, 0, 0);
        o.self_distance = d;
        o.sleep_threshold = 0.0f;
        cd_id id = 0;
        cr_assert_eq(cd_world_create_softbody(world, &mesh, &o, &id), CD_OK);
        cd_instance *body = cd_world_get(world, id);
        cd_instance_step(body, FX_DT, fx_no_wind());
        /* One step: the push has separated them (and set them drifting apart). */
        const double gap_now = fx_dist(fx_pos(body, 1), fx_pos(body, 4));
        cr_assert(gap_now >= 0.99 * d, "shift %d (x0 %.4f): vertices 1 and 4 %.4f = %.2f d apart", shift,
                  x0, gap_now, gap_now / d);
        cr_assert_eq(cd_instance_self_collision_stats(body).searches, 1, "a still body: one search per step");
        cd_world_destroy(world);
    }
}

/* Hostile settings cost a bounded search, not a hang (the timeouts catch a
 * regression): a selfDistance so small that its cells would overflow an
 * int, and a crowd packed into one cell by a far-away outlier. */
Test(solver_self, a_tiny_self_distance_searches_a_big_cloth_quickly, .timeout = 20)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = 384; /* 147,456 particles: a search over all pairs takes minutes */
    def.spacing = 0.01f;
    def.self_distance = 1e-20f;
    cd_instance *cloth = fx_cloth(world, &def);
    cd_instance_step(cloth, FX_DT, fx_no_wind());
    const cd_self_collision_stats st = cd_instance_self_collision_stats(cloth);
    cr_assert_eq(st.searches, 1);
    cr_assert_eq(st.pairs, 0);
    cr_assert_eq(st.overflows, 0);
    cd_world_destroy(world);
}

Test(solver_self, a_crowd_in_one_cell_stops_the_search_and_says_so, .timeout = 20)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = 128;
    def.spacing = 5e-4f; /* 6.4 cm across */
    def.self_distance = 4e-4f;
    cd_instance *cloth = fx_cloth(world, &def);
    /* One particle 90 km away stretches the box: cells of ~9 cm hold the
     * whole rest of the cloth. */
    const cd_vec3 far = fx_v3(9e4f, 0, 0);
    cr_assert_eq(cd_instance_pin(cloth, 0, &far), CD_OK);
    cd_instance_step(cloth, FX_DT, fx_no_wind());
    const cd_self_collision_stats st = cd_instance_self_collision_stats(cloth);
    cr_assert_geq(st.searches, 1);
    cr_assert_geq(st.overflows, 1, "the search should stop at its budget");
    cd_world_destroy(world);
}

/* The folded sheet, 32 x 32, after 150 steps on `path`: its positions
 * (malloc'd) and its self-collision statistics. */
static float *fold_on(const char *path, cd_self_collision_stats *stats)
{
    cr_assert(cd_solver_select_simd(path));
    cd_world *world = fx_world();
    cd_instance *cloth = drop_sheet(world, 32, 0.016f, 150);
    const size_t n = 3u * 32u * 32u;
    float *out = malloc(n * sizeof *out);
    cr_assert_not_null(out);
    memcpy(out, cd_instance_local_positions(cloth), n * sizeof *out);
    *stats = cd_instance_self_collision_stats(cloth);
    cd_world_destroy(world);
    return out;
}

Test(solver_self, the_avx2_candidate_test_should_keep_the_scalar_pairs_bit_for_bit)
{
    if (!__builtin_cpu_supports("avx2"))
        cr_skip_test("this CPU has no AVX2: nothing to compare the reference with");
    const char *path = cd_solver_simd_path();
    cd_self_collision_stats ref_stats, simd_stats;
    float *ref = fold_on("scalar", &ref_stats);
    float *simd = fold_on("avx2", &simd_stats);
    cd_solver_select_simd(path);
    /* The sheet has folded (pairs found), and the searches kept the same
     * pairs: the same counts, and positions equal to the last bit. */
    cr_assert_gt(ref_stats.pairs, 10000u, "the sheet folded: %llu pairs",
                 (unsigned long long)ref_stats.pairs);
    cr_assert_eq(simd_stats.searches, ref_stats.searches);
    cr_assert_eq(simd_stats.pairs, ref_stats.pairs);
    cr_assert_eq(simd_stats.examined, ref_stats.examined);
    cr_assert_eq(memcmp(ref, simd, sizeof(float) * 3u * 32u * 32u), 0,
                 "the paths' positions differ");
    free(ref);
    free(simd);
}
