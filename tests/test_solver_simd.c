/* The distance solve's colouring and its kernels (solver/colour.c,
 * solver/distance.c, solver/distance_avx2.c, solver/distance_avx512.c):
 * every colour holds constraints that share no particle, padded with inert
 * slots to a multiple of 8; the path is chosen from the CPU and can be
 * forced; the AVX2 and AVX-512 kernels and the scalar reference hang the
 * same curtain, bit for bit today (the kernels do the reference's IEEE
 * operations in its order). A
 * fused (FMA) variant measured 13-29 mm apart after 200 steps of a curtain
 * in wind: rounding differences grow in a swinging cloth, so a future
 * path that rounds differently needs a statistical comparison instead. */
#include <stdio.h>
#include <stdlib.h>

#include "../solver/internal.h"
#include "solver_fixtures.h"

static bool cpu_has_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}

static bool cpu_has_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}

/* The vector paths, each with its kernels and whether this CPU runs them. */
typedef struct vector_path {
    const char *name;
    cd_seed_kernel *seed;
    cd_xpbd_kernel *xpbd;
    bool (*runs)(void);
} vector_path;

static const vector_path vector_paths[] = {
    {"avx2", cd_solve_seed_avx2, cd_solve_xpbd_avx2, cpu_has_avx2},
    {"avx512", cd_solve_seed_avx512, cd_solve_xpbd_avx512, cpu_has_avx512},
};
#define VECTOR_PATHS (sizeof vector_paths / sizeof vector_paths[0])

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

Test(solver_simd, the_path_should_follow_the_cpu_and_be_forced_to_any_it_has)
{
    /* The unit tests run without CLOTHD_SIMD: the CPU decides, the widest
     * path first. */
    const char *best = cpu_has_avx512() ? "avx512" : cpu_has_avx2() ? "avx2" : "scalar";
    if (getenv("CLOTHD_SIMD") == NULL)
        cr_assert_str_eq(cd_solver_simd_path(), best);
    cr_assert(cd_solver_select_simd("scalar"));
    cr_assert_str_eq(cd_solver_simd_path(), "scalar");
    cr_assert_not(cd_solver_path_has_avx2(), "the other stages run their scalar loops");
    cr_assert_not(cd_solver_select_simd("avx1024"), "no such path");
    cr_assert_not(cd_solver_select_simd("AVX2"), "names are exact");
    cr_assert_not(cd_solver_select_simd(NULL));
    cr_assert_str_eq(cd_solver_simd_path(), "scalar", "a refused name changes nothing");
    for (size_t p = 0; p < VECTOR_PATHS; p++) {
        const bool runs = vector_paths[p].runs();
        cr_assert_eq(cd_solver_select_simd(vector_paths[p].name), runs, "%s",
                     vector_paths[p].name);
        cr_assert_str_eq(cd_solver_simd_path(), runs ? vector_paths[p].name : "scalar");
        /* AVX-512 CPUs have AVX2: aero, integration and tethers keep their
         * AVX2 kernels on either vector path. */
        cr_assert_eq(cd_solver_path_has_avx2(), runs, "%s", vector_paths[p].name);
        cr_assert(cd_solver_select_simd("scalar"));
    }
    cr_assert(cd_solver_select_simd(best));
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
    char before[16];
    snprintf(before, sizeof before, "%s", cd_solver_simd_path());
    float strain_ref;
    float *ref = hang("scalar", seed, &strain_ref);
    cr_assert_gt(strain_ref, 0.0f);
    int compared = 0;
    for (size_t p = 0; p < VECTOR_PATHS; p++) {
        const char *path = vector_paths[p].name;
        if (!vector_paths[p].runs())
            continue;
        float strain_simd;
        float *simd = hang(path, seed, &strain_simd);
        double worst = 0.0;
        for (size_t i = 0; i < 3u * AGREE_N * AGREE_N; i++)
            worst = fmax(worst, fabs((double)ref[i] - simd[i]));
        cr_log_info("%s on %s: positions within %.3g m, strain %.6f vs %.6f",
                    seed ? "seed" : "xpbd", path, worst, (double)strain_ref, (double)strain_simd);
        cr_assert_eq(memcmp(ref, simd, 3u * AGREE_N * AGREE_N * sizeof(float)), 0,
                     "%s: positions differ by up to %.3g m", path, worst);
        cr_assert_eq(strain_simd, strain_ref, "max strain %.9f (%s) vs %.9f (scalar)",
                     (double)strain_simd, path, (double)strain_ref);
        free(simd);
        compared++;
    }
    free(ref);
    cr_assert(cd_solver_select_simd(before));
    if (compared == 0)
        cr_skip_test("this CPU has no AVX2: nothing to compare the reference with");
}

Test(solver_simd, seed_curtain_in_wind_should_hang_bit_identically_on_every_path)
{
    check_agreement(true);
}

Test(solver_simd, xpbd_curtain_in_wind_should_hang_bit_identically_on_every_path)
{
    check_agreement(false);
}

/* The vector kernels against the reference on every block shape they treat
 * their own way (distance_avx2.c, distance_avx512.c): runs of consecutive
 * ends, whole or per half block; the two windows of consecutive particles
 * (a grid row's structural and bending links), whole or per half block;
 * scattered ends; mixtures of those. Each constraint has its own rest
 * length, multiplier and masses, so that a lane dealt to the wrong slot
 * shows, and every shape holds lanes the reference skips: both ends pinned
 * (wsum 0, and XPBD's zero denominator with alpha~ = 0) and coincident
 * ends. Each shape runs over its whole range and over every range that
 * starts on a block of 8 and ends anywhere (tails of 1..15 lanes); the
 * slots outside the range name particles 6 GB past the array, which a
 * lane that loaded or stored them would fault on (or show). Bit for bit,
 * the seed's projection and XPBD: positions and multipliers. */
#define KERNEL_PARTICLES 128
#define KERNEL_SLOTS 32
#define FAR_AWAY 0x20000000u /* times 12 bytes: far outside the positions */

typedef struct kernel_shape {
    const char *name;
    uint32_t slots; /* 16 or 32 */
    uint32_t a[KERNEL_SLOTS], b[KERNEL_SLOTS];
} kernel_shape;

/* Slots [from, from + 8) as a window of 16 particles from `first`: pairs
 * 0-1 2-3 ... (step 1) or quads 0-2 1-3 4-6 ... (step 2). */
static void window_half(kernel_shape *s, uint32_t from, uint32_t first, uint32_t step)
{
    for (uint32_t j = 0; j < 8; j++) {
        s->a[from + j] = first + (step == 1 ? 2 * j : 4 * (j / 2) + j % 2);
        s->b[from + j] = s->a[from + j] + step;
    }
}

static void run_half(uint32_t *ends, uint32_t from, uint32_t first)
{
    for (uint32_t j = 0; j < 8; j++)
        ends[from + j] = first + j;
}

static void copy_half(uint32_t *ends, uint32_t from, const uint32_t loose[8])
{
    memcpy(ends + from, loose, 8 * sizeof *ends);
}

/* Pinned particles are i % 7 == 3: 3 - 10, 24 - 59 and 66 - 101 have both
 * ends pinned. */
static const uint32_t loose_a[16] = {1, 40, 7, 22, 3, 60, 11, 50, 90, 115, 27, 81, 70, 125, 33, 100};
static const uint32_t loose_b[16] = {2, 41, 9, 35, 10, 5, 13, 48, 91, 64, 107, 82, 126, 17, 122, 111};
static const uint32_t loose_c[16] = {2, 41, 99, 35, 63, 5, 117, 48, 70, 1, 88, 120, 30, 77, 104, 56};

static uint32_t kernel_shapes(kernel_shape *s)
{
    uint32_t n = 0;
    s[n] = (kernel_shape){.name = "runs of 16", .slots = 16};
    run_half(s[n].a, 0, 8), run_half(s[n].a, 8, 16);
    run_half(s[n].b, 0, 43), run_half(s[n].b, 8, 51); /* a + 35: pinned with pinned */
    s[++n] = (kernel_shape){.name = "runs per half", .slots = 16};
    run_half(s[n].a, 0, 0), run_half(s[n].a, 8, 60);
    run_half(s[n].b, 0, 21), run_half(s[n].b, 8, 95);
    s[++n] = (kernel_shape){.name = "pairs window", .slots = 16};
    window_half(&s[n], 0, 16, 1), window_half(&s[n], 8, 32, 1);
    s[++n] = (kernel_shape){.name = "quads window", .slots = 16};
    window_half(&s[n], 0, 64, 2), window_half(&s[n], 8, 80, 2);
    s[++n] = (kernel_shape){.name = "pairs per half", .slots = 16};
    window_half(&s[n], 0, 0, 1), window_half(&s[n], 8, 33, 1);
    s[++n] = (kernel_shape){.name = "quads per half", .slots = 16};
    window_half(&s[n], 0, 100, 2), window_half(&s[n], 8, 50, 2);
    s[++n] = (kernel_shape){.name = "a window half and a loose one", .slots = 16};
    window_half(&s[n], 0, 16, 1);
    copy_half(s[n].a, 8, (const uint32_t[8]){1, 40, 7, 99, 3, 60, 11, 50});
    copy_half(s[n].b, 8, (const uint32_t[8]){2, 41, 9, 35, 10, 5, 13, 48});
    s[++n] = (kernel_shape){.name = "a run and loose b", .slots = 16};
    run_half(s[n].a, 0, 8), run_half(s[n].a, 8, 16);
    copy_half(s[n].b, 0, loose_c), copy_half(s[n].b, 8, loose_c + 8);
    s[++n] = (kernel_shape){.name = "loose a and a run", .slots = 16};
    copy_half(s[n].a, 0, loose_c), copy_half(s[n].a, 8, loose_c + 8);
    run_half(s[n].b, 0, 8), run_half(s[n].b, 8, 16);
    s[++n] = (kernel_shape){.name = "loose", .slots = 16};
    copy_half(s[n].a, 0, loose_a), copy_half(s[n].a, 8, loose_a + 8);
    copy_half(s[n].b, 0, loose_b), copy_half(s[n].b, 8, loose_b + 8);
    s[++n] = (kernel_shape){.name = "two windows", .slots = 32};
    window_half(&s[n], 0, 0, 1), window_half(&s[n], 8, 16, 1);
    window_half(&s[n], 16, 64, 2), window_half(&s[n], 24, 80, 2);
    return n + 1;
}

/* The shape is a colour: no particle twice, all in the array. */
static void check_shape(const kernel_shape *s)
{
    bool seen[KERNEL_PARTICLES] = {false};
    for (uint32_t i = 0; i < 2 * s->slots; i++) {
        const uint32_t p = i < s->slots ? s->a[i] : s->b[i - s->slots];
        cr_assert_lt(p, KERNEL_PARTICLES, "%s", s->name);
        cr_assert_not(seen[p], "%s: particle %u twice", s->name, p);
        seen[p] = true;
    }
}

/* Slots [begin, end) of `s` on the reference and on `path`, projecting
 * the seed's way (xpbd false) or XPBD's with alpha~. */
static void kernel_range(const vector_path *path, const kernel_shape *s, uint32_t begin,
                         uint32_t end, bool xpbd, float alpha)
{
    const size_t bytes = 3 * KERNEL_PARTICLES * sizeof(float);
    float *start = malloc(bytes), *ref = malloc(bytes), *simd = malloc(bytes);
    cr_assert(start != NULL && ref != NULL && simd != NULL);
    uint32_t seed = 12345;
    for (int i = 0; i < 3 * KERNEL_PARTICLES; i++) {
        seed = seed * 1664525u + 1013904223u;
        start[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
    memcpy(&start[3 * s->b[5]], &start[3 * s->a[5]], 3 * sizeof(float)); /* coincident */
    float w[KERNEL_PARTICLES];
    for (int i = 0; i < KERNEL_PARTICLES; i++)
        w[i] = i % 7 == 3 ? 0.0f : 0.5f + 0.25f * (float)(i % 5);
    uint32_t ca[KERNEL_SLOTS] __attribute__((aligned(64)));
    uint32_t cb[KERNEL_SLOTS] __attribute__((aligned(64)));
    float rest[KERNEL_SLOTS] __attribute__((aligned(64)));
    float lambda_ref[KERNEL_SLOTS] __attribute__((aligned(64)));
    float lambda_simd[KERNEL_SLOTS] __attribute__((aligned(64)));
    for (uint32_t l = 0; l < KERNEL_SLOTS; l++) {
        const bool in = l >= begin && l < end;
        ca[l] = in ? s->a[l] : FAR_AWAY;
        cb[l] = in ? s->b[l] : FAR_AWAY + 1;
        rest[l] = 0.05f + 0.01f * (float)l;
        lambda_ref[l] = lambda_simd[l] = 0.001f * (float)(l + 1);
    }
    cd_constraints c = {.a = ca, .b = cb, .rest = rest, .slots = KERNEL_SLOTS};
    memcpy(ref, start, bytes);
    memcpy(simd, start, bytes);
    if (xpbd) {
        c.lambda = lambda_ref;
        cd_solve_xpbd_scalar(ref, w, &c, begin, end, alpha);
        c.lambda = lambda_simd;
        path->xpbd(simd, w, &c, begin, end, alpha);
        cr_assert_eq(memcmp(lambda_ref, lambda_simd, sizeof lambda_ref), 0,
                     "%s, %s, slots %u..%u: multipliers differ", path->name, s->name, begin, end);
    } else {
        path->seed(simd, w, &c, begin, end, 0.7f);
        cd_solve_seed_scalar(ref, w, &c, begin, end, 0.7f);
    }
    cr_assert_eq(memcmp(ref, simd, bytes), 0,
                 "%s, %s, slots %u..%u (%s): positions differ", path->name, s->name, begin, end,
                 xpbd ? "xpbd" : "seed");
    if (begin == 0 && end == s->slots)
        cr_assert_neq(memcmp(ref, start, bytes), 0,
                      "%s: the block moved something", s->name);
    free(start);
    free(ref);
    free(simd);
}

Test(solver_simd, every_block_shape_should_project_as_the_reference)
{
    kernel_shape shapes[16];
    const uint32_t count = kernel_shapes(shapes);
    int tested = 0;
    for (size_t p = 0; p < VECTOR_PATHS; p++) {
        if (!vector_paths[p].runs())
            continue;
        tested++;
        for (uint32_t k = 0; k < count; k++) {
            check_shape(&shapes[k]);
            for (uint32_t begin = 0; begin < shapes[k].slots; begin += 8)
                for (uint32_t end = begin + 1; end <= shapes[k].slots; end++) {
                    kernel_range(&vector_paths[p], &shapes[k], begin, end, false, 0.0f);
                    kernel_range(&vector_paths[p], &shapes[k], begin, end, true, 0.3f);
                    kernel_range(&vector_paths[p], &shapes[k], begin, end, true, 0.0f);
                }
        }
    }
    if (tested == 0)
        cr_skip_test("this CPU has no AVX2: nothing to compare the reference with");
}
