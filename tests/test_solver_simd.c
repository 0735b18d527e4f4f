/* The distance solve's colouring and its two kernels (solver/colour.c,
 * solver/distance.c, solver/distance_avx2.c): every colour holds
 * constraints that share no particle, padded with inert slots to a
 * multiple of 8; the path is chosen from the CPU and can be forced; the
 * AVX2 kernels and the scalar reference hang the same curtain, bit for bit
 * today (the kernels do the reference's IEEE operations in its order). A
 * fused (FMA) variant measured 13-29 mm apart after 200 steps of a curtain
 * in wind: rounding differences grow in a swinging cloth, so a future
 * path that rounds differently needs a statistical comparison instead. */
#include <stdlib.h>

#include "../solver/internal.h"
#include "solver_fixtures.h"

static bool cpu_has_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}

/* Every colour: aligned, padded, no particle twice, padding inert; every
 * group's colours together hold exactly its constraints. */
static void check_colouring(const cd_instance *inst)
{
    const cd_constraints *c = &inst->coloured;
    uint32_t *seen = calloc(inst->particle_count, sizeof *seen);
    cr_assert_not_null(seen);
    uint32_t total = 0, stamp = 0;
    cr_assert_eq(c->slots % CD_LANES, 0u);
    for (int g = 0; g < CD_GROUP_COUNT; g++) {
        const cd_group *gr = &inst->groups[g];
        cr_assert_leq(gr->colour_begin, gr->colour_end);
        for (uint32_t col = gr->colour_begin; col < gr->colour_end; col++) {
            const cd_colour *k = &c->colours[col];
            cr_assert_eq(k->begin % CD_LANES, 0u, "colour %u starts at %u", col, k->begin);
            cr_assert_gt(k->count, 0u, "colour %u is empty", col);
            stamp++;
            for (uint32_t i = k->begin; i < k->begin + k->count; i++) {
                cr_assert_neq(c->a[i], c->b[i]);
                cr_assert_neq(seen[c->a[i]], stamp, "colour %u: particle %u twice", col, c->a[i]);
                seen[c->a[i]] = stamp;
                cr_assert_neq(seen[c->b[i]], stamp, "colour %u: particle %u twice", col, c->b[i]);
                seen[c->b[i]] = stamp;
                cr_assert_gt(c->rest[i], 0.0f);
            }
            const uint32_t padded_end = (k->begin + k->count + CD_LANES - 1) / CD_LANES * CD_LANES;
            for (uint32_t i = k->begin + k->count; i < padded_end; i++)
                cr_assert(c->a[i] == 0 && c->b[i] == 0 && c->rest[i] == 0.0f,
                          "slot %u is padding", i);
            total += k->count;
        }
    }
    cr_assert_eq(total, inst->constraint_count);
    cr_assert_null(inst->constraints, "the builders' list is freed once coloured");
    free(seen);
}

Test(solver_simd, a_grid_should_take_four_colours_per_group_and_share_no_particle_in_one)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = 13;
    def.height = 7;
    cd_instance *cloth = fx_cloth(world, &def);
    check_colouring(cloth);
    /* The builder emits each family in two colours: greedy keeps exactly
     * those, so the projection order is the builder's. */
    for (int g = 0; g < CD_GROUP_COUNT; g++)
        cr_assert_eq(cloth->groups[g].colour_end - cloth->groups[g].colour_begin, 4u, "group %d",
                     g);
    cd_world_destroy(world);
}

Test(solver_simd, a_tet_mesh_should_be_coloured_with_no_particle_twice_in_a_colour)
{
    /* The colouring itself on an irregular mesh: the ball's edges. */
    cd_tet_mesh mesh;
    cr_assert_eq(cd_mesh_ball(fx_v3(0, 1, 0), 0.3f, 6, &mesh), CD_OK);
    uint32_t edge_count = 0;
    uint32_t *edges = cd_tet_edges(mesh.tets, mesh.tet_count, &edge_count);
    cr_assert_not_null(edges);
    cd_instance *inst = calloc(1, sizeof *inst);
    cr_assert_not_null(inst);
    inst->particle_count = mesh.vertex_count;
    inst->constraint_count = edge_count;
    inst->constraints = malloc(edge_count * sizeof(cd_distance));
    cr_assert_not_null(inst->constraints);
    for (uint32_t e = 0; e < edge_count; e++)
        inst->constraints[e] = (cd_distance){.a = edges[2 * e], .b = edges[2 * e + 1], .rest = 1};
    inst->groups[CD_GROUP_STRETCH] = (cd_group){.begin = 0, .end = edge_count};
    inst->groups[CD_GROUP_SHEAR] = (cd_group){.begin = edge_count, .end = edge_count};
    inst->groups[CD_GROUP_BEND] = (cd_group){.begin = edge_count, .end = edge_count};
    cr_assert(cd_colour_constraints(inst));
    cr_assert_gt(inst->coloured.colour_count, 4u, "a mesh needs more colours than a grid");
    check_colouring(inst);
    free(edges);
    cd_mesh_free(&mesh);
    cd_instance_free(inst);
}

Test(solver_simd, a_soft_body_ball_should_be_coloured_with_no_particle_twice_in_a_colour)
{
    cd_world *world = fx_world();
    cd_tet_mesh mesh;
    cr_assert_eq(cd_mesh_ball(fx_v3(0, 1, 0), 0.3f, 6, &mesh), CD_OK);
    cd_cloth_def options = cd_default_softbody_options();
    cd_id id = 0;
    cr_assert_eq(cd_world_create_softbody(world, &mesh, &options, &id), CD_OK);
    cd_mesh_free(&mesh);
    cd_instance *ball = cd_world_get(world, id);
    check_colouring(ball);
    cr_assert_gt(ball->groups[CD_GROUP_STRETCH].colour_end, 4u, "a mesh needs more colours");
    cd_world_destroy(world);
}

Test(solver_simd, a_vertex_of_degree_100_should_get_100_colours_beyond_the_first_64)
{
    /* A star: particle 0 joined to 1..100. Colours are found 64 at a time;
     * the 36 left over take colours 64..99. */
    cd_instance *inst = calloc(1, sizeof *inst);
    cr_assert_not_null(inst);
    inst->particle_count = 101;
    inst->constraint_count = 100;
    inst->constraints = malloc(100 * sizeof(cd_distance));
    cr_assert_not_null(inst->constraints);
    for (uint32_t i = 0; i < 100; i++)
        inst->constraints[i] = (cd_distance){.a = 0, .b = i + 1, .rest = 1.0f};
    inst->groups[CD_GROUP_STRETCH] = (cd_group){.begin = 0, .end = 100};
    inst->groups[CD_GROUP_SHEAR] = (cd_group){.begin = 100, .end = 100};
    inst->groups[CD_GROUP_BEND] = (cd_group){.begin = 100, .end = 100};
    cr_assert(cd_colour_constraints(inst));
    cr_assert_eq(inst->coloured.colour_count, 100u);
    cr_assert_eq(inst->coloured.slots, 800u, "each colour padded to 8 slots");
    for (uint32_t k = 0; k < 100; k++)
        cr_assert_eq(inst->coloured.b[inst->coloured.colours[k].begin], k + 1,
                     "array order kept");
    check_colouring(inst);
    cd_instance_free(inst);
}

Test(solver_simd, the_path_should_follow_the_cpu_and_be_forced_to_scalar)
{
    /* The unit tests run without CLOTHD_SIMD: the CPU decides. */
    const char *env = getenv("CLOTHD_SIMD");
    if (env == NULL || strcmp(env, "scalar") != 0)
        cr_assert_str_eq(cd_solver_simd_path(), cpu_has_avx2() ? "avx2" : "scalar");
    cr_assert(cd_solver_select_simd("scalar"));
    cr_assert_str_eq(cd_solver_simd_path(), "scalar");
    cr_assert_not(cd_solver_select_simd("avx512"), "no such path");
    cr_assert_not(cd_solver_select_simd(NULL));
    cr_assert_str_eq(cd_solver_simd_path(), "scalar", "a refused name changes nothing");
    cr_assert_eq(cd_solver_select_simd("avx2"), cpu_has_avx2());
    cr_assert_str_eq(cd_solver_simd_path(), cpu_has_avx2() ? "avx2" : "scalar");
}

#define AGREE_N 64
#define AGREE_STEPS 200

/* The bench's curtain (the seed's solver at 8 iterations, or clothd's
 * defaults: XPBD and tethers), top row pinned, stepped on `path`. */
static float *hang(const char *path, bool seed, float *strain)
{
    cr_assert(cd_solver_select_simd(path));
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = AGREE_N;
    def.sleep_threshold = 0.0f;
    if (seed) {
        def.solver_iterations = 8;
        def.tethers = false;
        def.wind_model = CD_WIND_CONSTANT;
    }
    cd_instance *cloth = fx_cloth(world, &def);
    for (uint32_t x = 0; x < AGREE_N; x++)
        cr_assert_eq(cd_instance_pin(cloth, x, NULL), CD_OK);
    cd_instance_set_wind(cloth, fx_v3(1.0f, 0.0f, 0.5f)); /* not only in its plane */
    for (int s = 0; s < AGREE_STEPS; s++)
        cr_assert_not(cd_instance_step(cloth, FX_DT, fx_no_wind()).unstable);
    const size_t n = 3u * AGREE_N * AGREE_N;
    float *out = malloc(n * sizeof *out);
    cr_assert_not_null(out);
    memcpy(out, cd_instance_local_positions(cloth), n * sizeof *out);
    *strain = cd_instance_max_structural_strain(cloth);
    cd_world_destroy(world);
    return out;
}

static void check_agreement(bool seed)
{
    if (!cpu_has_avx2())
        cr_skip_test("this CPU has no AVX2: nothing to compare the reference with");
    float strain_ref, strain_simd;
    float *ref = hang("scalar", seed, &strain_ref);
    float *simd = hang("avx2", seed, &strain_simd);
    double worst = 0.0;
    for (size_t i = 0; i < 3u * AGREE_N * AGREE_N; i++)
        worst = fmax(worst, fabs((double)ref[i] - simd[i]));
    cr_log_info("%s: positions within %.3g m, strain %.6f vs %.6f", seed ? "seed" : "xpbd", worst,
                (double)strain_ref, (double)strain_simd);
    cr_assert_eq(memcmp(ref, simd, 3u * AGREE_N * AGREE_N * sizeof(float)), 0,
                 "positions differ by up to %.3g m", worst);
    cr_assert_eq(strain_simd, strain_ref, "max strain %.9f (avx2) vs %.9f (scalar)",
                 (double)strain_simd, (double)strain_ref);
    cr_assert_gt(strain_ref, 0.0f);
    free(ref);
    free(simd);
}

Test(solver_simd, seed_curtain_in_wind_should_hang_bit_identically_on_avx2_and_scalar)
{
    check_agreement(true);
}

Test(solver_simd, xpbd_curtain_in_wind_should_hang_bit_identically_on_avx2_and_scalar)
{
    check_agreement(false);
}

/* The AVX2 kernels against the reference on one block of each shape the
 * kernel treats its own way (distance_avx2.c): runs, the two windows of 16
 * consecutive particles (a grid row's structural and bending links) and
 * scattered ends, each constraint with its own rest length, multiplier and
 * masses, so that a lane dealt to the wrong slot shows. Bit for bit, for
 * the seed's projection and for XPBD (positions and multipliers). */
#define KERNEL_PARTICLES 64
static void kernel_case(const uint32_t a[8], const uint32_t b[8])
{
    float pos0[3 * KERNEL_PARTICLES], w[KERNEL_PARTICLES];
    uint32_t seed = 12345;
    for (int i = 0; i < 3 * KERNEL_PARTICLES; i++) {
        seed = seed * 1664525u + 1013904223u;
        pos0[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
    for (int i = 0; i < KERNEL_PARTICLES; i++)
        w[i] = i % 7 == 3 ? 0.0f : 0.5f + 0.25f * (float)(i % 5); /* some pinned */
    cd_constraints c = {0};
    uint32_t ca[8] __attribute__((aligned(32))), cb[8] __attribute__((aligned(32)));
    float rest[8] __attribute__((aligned(32))), lambda[2][8] __attribute__((aligned(32)));
    for (int l = 0; l < 8; l++) {
        ca[l] = a[l];
        cb[l] = b[l];
        rest[l] = 0.05f + 0.01f * (float)l;
        lambda[0][l] = lambda[1][l] = 0.001f * (float)(l + 1);
    }
    c.a = ca;
    c.b = cb;
    c.rest = rest;
    c.slots = 8;
    for (int xpbd = 0; xpbd < 2; xpbd++) {
        float ref[3 * KERNEL_PARTICLES], simd[3 * KERNEL_PARTICLES];
        memcpy(ref, pos0, sizeof ref);
        memcpy(simd, pos0, sizeof simd);
        float lambda_ref[8] __attribute__((aligned(32))), lambda_simd[8] __attribute__((aligned(32)));
        memcpy(lambda_ref, lambda[0], sizeof lambda_ref);
        memcpy(lambda_simd, lambda[1], sizeof lambda_simd);
        if (xpbd) {
            c.lambda = lambda_ref;
            cd_solve_xpbd_scalar(ref, w, &c, 0, 8, 0.3f);
            c.lambda = lambda_simd;
            cd_solve_xpbd_avx2(simd, w, &c, 0, 8, 0.3f);
            cr_assert_eq(memcmp(lambda_ref, lambda_simd, sizeof lambda_ref), 0,
                         "a = %u.. b = %u..: multipliers differ", a[0], b[0]);
        } else {
            cd_solve_seed_scalar(ref, w, &c, 0, 8, 0.7f);
            cd_solve_seed_avx2(simd, w, &c, 0, 8, 0.7f);
        }
        cr_assert_eq(memcmp(ref, simd, sizeof ref), 0, "a = %u.. b = %u.. (%s): positions differ",
                     a[0], b[0], xpbd ? "xpbd" : "seed");
        cr_assert_neq(memcmp(ref, pos0, sizeof ref), 0, "the block moved something");
    }
}

Test(solver_simd, every_block_shape_should_project_as_the_reference)
{
    if (!cpu_has_avx2())
        cr_skip_test("this CPU has no AVX2: nothing to compare the reference with");
    static const uint32_t run_a[8] = {8, 9, 10, 11, 12, 13, 14, 15};
    static const uint32_t run_b[8] = {24, 25, 26, 27, 28, 29, 30, 31};
    static const uint32_t pairs_a[8] = {16, 18, 20, 22, 24, 26, 28, 30};
    static const uint32_t pairs_b[8] = {17, 19, 21, 23, 25, 27, 29, 31};
    static const uint32_t quads_a[8] = {32, 33, 36, 37, 40, 41, 44, 45};
    static const uint32_t quads_b[8] = {34, 35, 38, 39, 42, 43, 46, 47};
    static const uint32_t loose_a[8] = {1, 40, 7, 22, 3, 60, 11, 50};
    static const uint32_t loose_b[8] = {2, 41, 9, 35, 63, 5, 13, 48};
    kernel_case(run_a, run_b);
    kernel_case(pairs_a, pairs_b);
    kernel_case(quads_a, quads_b);
    kernel_case(loose_a, loose_b);
    static const uint32_t other_b[8] = {2, 41, 19, 35, 63, 5, 17, 48}; /* none of 8..15 */
    kernel_case(run_a, other_b);
}
