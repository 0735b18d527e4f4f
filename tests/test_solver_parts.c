/* A large instance's constraints cut into parts (solver/colour.c): a
 * team solves the parts side by side, then the boundary. Each part's
 * constraints have both ends in its particle range, so no two parts share
 * a particle; the boundary holds exactly the rest; every constraint is in
 * one colour of one part; a mesh numbered at random, whose boundary would
 * be most of it, keeps the whole-colour stages; small cloths have no
 * parts. (Same bits on 0 to 3 helpers: test_solver_team.c, whose curtain
 * has 4 parts; scalar and AVX2 agree on a 2-part curtain:
 * test_solver_simd.c.) */
#include <stdlib.h>

#include <criterion/criterion.h>

#include "../solver/internal.h"
#include "solver_fixtures.h"

static cd_instance *grid(cd_world *world, int side)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = side;
    return fx_cloth(world, &def);
}

static uint32_t part_of(uint32_t particle, uint32_t n, uint32_t parts)
{
    return (uint32_t)((uint64_t)particle * parts / n);
}

/* Counts the constraints of `p` (parts: the boundary) in every group,
 * asserting that they lie where they should and that no particle is twice
 * in a colour. */
static uint32_t check_part(const cd_instance *inst, uint32_t p, uint32_t *seen, uint32_t *stamp)
{
    const cd_constraints *c = &inst->coloured;
    const uint32_t parts = c->part_count, span = parts + 1, n = inst->particle_count;
    uint32_t count = 0;
    for (int g = 0; g < CD_GROUP_COUNT; g++) {
        const uint32_t first = c->part_colour[g * span + p], end = c->part_colour[g * span + p + 1];
        cr_assert_leq(inst->groups[g].colour_begin, first);
        cr_assert_leq(end, inst->groups[g].colour_end);
        for (uint32_t col = first; col < end; col++) {
            ++*stamp;
            for (uint32_t i = c->colours[col].begin; i < c->colours[col].begin + c->colours[col].count;
                 i++) {
                const uint32_t pa = part_of(c->a[i], n, parts), pb = part_of(c->b[i], n, parts);
                if (p < parts)
                    cr_assert(pa == p && pb == p, "constraint %u-%u of part %u", c->a[i], c->b[i], p);
                else
                    cr_assert_neq(pa, pb, "boundary constraint %u-%u within one part", c->a[i],
                                  c->b[i]);
                cr_assert_neq(seen[c->a[i]], *stamp, "particle %u twice in colour %u", c->a[i], col);
                cr_assert_neq(seen[c->b[i]], *stamp, "particle %u twice in colour %u", c->b[i], col);
                seen[c->a[i]] = seen[c->b[i]] = *stamp;
                count++;
            }
        }
    }
    return count;
}

Test(solver_parts, a_large_grid_should_be_cut_into_four_bands_and_a_small_boundary)
{
    cd_world *world = fx_world();
    cd_instance *cloth = grid(world, 128);
    const cd_constraints *c = &cloth->coloured;
    cr_assert_eq(c->part_count, 4u, "16,384 particles: a part per 4,096");
    uint32_t *seen = calloc(cloth->particle_count, sizeof *seen), stamp = 0;
    cr_assert_not_null(seen);
    uint32_t total = 0;
    for (uint32_t p = 0; p < c->part_count; p++) {
        const uint32_t in_part = check_part(cloth, p, seen, &stamp);
        cr_assert_gt(in_part, 0u, "part %u", p);
        total += in_part;
    }
    const uint32_t boundary = check_part(cloth, c->part_count, seen, &stamp);
    total += boundary;
    cr_assert_eq(total, cloth->constraint_count, "every constraint in one part or the boundary");
    /* 3 cuts between bands of 32 rows: each is crossed by the 128 vertical
     * stretch links, 2 x 127 shear links and 2 x 128 vertical bending
     * links (the two rows on either side) = 638 constraints. */
    cr_assert_eq(boundary, 3u * 638u, "boundary %u of %u", boundary, cloth->constraint_count);
    free(seen);
    cd_world_destroy(world);
}

Test(solver_parts, a_small_cloth_should_have_no_parts)
{
    cd_world *world = fx_world();
    cr_assert_eq(grid(world, 63)->coloured.part_count, 0u, "3,969 particles take no team");
    cr_assert_eq(grid(world, 64)->coloured.part_count, 2u, "4,096 particles: two parts at least");
    cr_assert_eq(grid(world, 256)->coloured.part_count, 8u, "65,536 particles: 8 parts at most");
    cd_world_destroy(world);
}

/* A 64 x 64 sheet as a mesh whose vertices are numbered at random: most
 * constraints would cross parts, so the instance keeps whole colours. */
Test(solver_parts, a_mesh_numbered_at_random_should_keep_whole_colours)
{
    enum { W = 64, N = W * W };
    float *v = malloc(sizeof(float) * 3 * N);
    uint32_t *t = malloc(sizeof(uint32_t) * 6 * (W - 1) * (W - 1));
    uint32_t *number = malloc(sizeof(uint32_t) * N);
    cr_assert(v && t && number);
    for (uint32_t i = 0; i < N; i++)
        number[i] = i;
    uint64_t state = 12345;
    for (uint32_t i = N - 1; i > 0; i--) { /* Fisher-Yates, a fixed LCG */
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t j = (uint32_t)((state >> 33) % (i + 1));
        const uint32_t keep = number[i];
        number[i] = number[j];
        number[j] = keep;
    }
    for (uint32_t y = 0; y < W; y++)
        for (uint32_t x = 0; x < W; x++) {
            float *p = &v[3 * number[y * W + x]];
            p[0] = (float)x * 0.05f;
            p[1] = -(float)y * 0.05f;
            p[2] = 0.0f;
        }
    uint32_t k = 0;
    for (uint32_t y = 0; y + 1 < W; y++)
        for (uint32_t x = 0; x + 1 < W; x++) {
            const uint32_t tl = number[y * W + x], tr = number[y * W + x + 1],
                           bl = number[(y + 1) * W + x], br = number[(y + 1) * W + x + 1];
            const uint32_t q[6] = {tl, bl, tr, tr, bl, br};
            for (int i = 0; i < 6; i++)
                t[k++] = q[i];
        }
    const cd_tri_mesh mesh = {.vertices = v, .vertex_count = N, .triangles = t,
                              .triangle_count = k / 3};
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    cd_id id = 0;
    cd_field_fault fault = {0};
    cr_assert_eq(cd_world_create_mesh_cloth_ex(world, &mesh, &def, &id, &fault), CD_OK, "%s: %s",
                 fault.field, fault.reason);
    const cd_instance *cloth = cd_world_get(world, id);
    cr_assert_not_null(cloth->team, "4,096 particles take help");
    cr_assert_eq(cloth->coloured.part_count, 0u);
    cr_assert_null(cloth->coloured.part_colour);
    cd_world_destroy(world);
    free(v);
    free(t);
    free(number);
}

/* A tear derives a mesh cloth's constraints again (mesh_cloth.c): its
 * parts are cut again, and the old ones freed (the ASan run of the unit
 * tests finds a leak otherwise). */
Test(solver_parts, a_mesh_derived_again_should_be_cut_again)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 64;
    def.tear_strain = 0.3f; /* a tearable grid is built as a mesh */
    cd_instance *cloth = fx_cloth(world, &def);
    cr_assert_eq(cloth->coloured.part_count, 2u);
    for (int again = 0; again < 2; again++) {
        cr_assert(cd_mesh_cloth_derive(cloth));
        const cd_constraints *c = &cloth->coloured;
        cr_assert_eq(c->part_count, 2u);
        uint32_t *seen = calloc(cloth->particle_count, sizeof *seen), stamp = 0, total = 0;
        cr_assert_not_null(seen);
        for (uint32_t p = 0; p <= c->part_count; p++)
            total += check_part(cloth, p, seen, &stamp);
        cr_assert_eq(total, cloth->constraint_count);
        free(seen);
    }
    cd_world_destroy(world);
}
