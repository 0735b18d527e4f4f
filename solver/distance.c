/* Gauss-Seidel projection of distance constraints, one pass over every
 * group per call, colour after colour (colour.c). A group runs one of two
 * projections:
 *
 * The seed's (compliance < 0), scaled by the group's stiffness k:
 *   dx = pb - pa, d = |dx|, s = (d - rest) / d * k / (wa + wb)
 *   pa += dx * s * wa,  pb -= dx * s * wb
 *
 * XPBD (compliance alpha >= 0, Macklin et al. 2016), with alpha~ = alpha/h^2
 * and the multiplier lambda accumulated over the substep's iterations:
 *   C = d - rest,  dl = (-C - alpha~ lambda) / (wa + wb + alpha~)
 *   lambda += dl,  pa -= wa dl dx/d,  pb += wb dl dx/d
 * which converges to the same stretch whatever the iteration count.
 *
 * Three implementations: the scalar reference below, the AVX2 one of
 * distance_avx2.c (8 constraints of a colour at a time) and the AVX-512
 * one of distance_avx512.c (16), picked once at start-up from the CPU. A
 * colour's constraints share no particle, so all make the same sequence
 * of projections, with the same IEEE operations in the same order: today
 * they give bit-identical positions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

void cd_solve_seed_scalar(float *restrict pos, const float *restrict w,
                          const cd_constraints *restrict c, uint32_t begin, uint32_t end, float k)
{
    for (uint32_t i = begin; i < end; i++) {
        const uint32_t a = c->a[i], b = c->b[i];
        const float wa = w[a], wb = w[b];
        const float wsum = wa + wb;
        if (wsum == 0.0f)
            continue;
        float *pa = &pos[3 * a], *pb = &pos[3 * b];
        const float dx = pb[0] - pa[0], dy = pb[1] - pa[1], dz = pb[2] - pa[2];
        const float d2 = dx * dx + dy * dy + dz * dz;
        if (!(d2 > 1e-20f))
            continue; /* coincident: no direction to correct along */
        const float d = sqrtf(d2);
        const float s = (d - c->rest[i]) / d * k / wsum;
        cd_move_pair(pa, pb, dx, dy, dz, -s * wa, -s * wb);
    }
}

/* One XPBD projection of slot i with alpha~ `alpha`. */
static inline void xpbd_project(float *restrict pos, const float *restrict w,
                                cd_constraints *restrict c, uint32_t i, float alpha)
{
    const uint32_t a = c->a[i], b = c->b[i];
    const float wa = w[a], wb = w[b];
    const float denom = wa + wb + alpha;
    if (denom == 0.0f)
        return;
    float *pa = &pos[3 * a], *pb = &pos[3 * b];
    const float dx = pb[0] - pa[0], dy = pb[1] - pa[1], dz = pb[2] - pa[2];
    const float d2 = dx * dx + dy * dy + dz * dz;
    if (!(d2 > 1e-20f))
        return;
    const float d = sqrtf(d2);
    const float dl = (c->rest[i] - d - alpha * c->lambda[i]) / denom;
    c->lambda[i] += dl;
    const float s = dl / d;
    cd_move_pair(pa, pb, dx, dy, dz, s * wa, s * wb);
}

void cd_solve_xpbd_scalar(float *restrict pos, const float *restrict w,
                          cd_constraints *restrict c, uint32_t begin, uint32_t end,
                          float alpha_tilde)
{
    for (uint32_t i = begin; i < end; i++)
        xpbd_project(pos, w, c, i, alpha_tilde);
}

void cd_solve_xpbd_scaled_scalar(float *restrict pos, const float *restrict w,
                                 cd_constraints *restrict c, uint32_t begin, uint32_t end,
                                 float alpha_tilde)
{
    for (uint32_t i = begin; i < end; i++)
        xpbd_project(pos, w, c, i, alpha_tilde * c->compliance_scale[i]);
}

bool cd_refresh_compliance_scale(cd_instance *inst)
{
    cd_constraints *c = &inst->coloured;
    const float *stretch = inst->paint[CD_PAINT_STRETCH_COMPLIANCE_SCALE];
    const float *bend = inst->paint[CD_PAINT_BEND_COMPLIANCE_SCALE];
    if (stretch == NULL && bend == NULL) {
        free(c->compliance_scale);
        c->compliance_scale = NULL;
        return true;
    }
    if (c->compliance_scale == NULL &&
        (c->compliance_scale = aligned_alloc(32, (sizeof(float) * c->slots + 31) / 32 * 32 + 32)) ==
            NULL)
        return false;
    for (uint32_t s = 0; s < c->slots; s++)
        c->compliance_scale[s] = 1.0f; /* padding, and unpainted groups */
    for (int g = 0; g < CD_GROUP_COUNT; g++) {
        const float *paint = g == CD_GROUP_BEND ? bend : stretch;
        if (paint == NULL)
            continue;
        for (uint32_t col = inst->groups[g].colour_begin; col < inst->groups[g].colour_end; col++)
            for (uint32_t s = c->colours[col].begin; s < c->colours[col].begin + c->colours[col].count;
                 s++)
                c->compliance_scale[s] = 0.5f * (paint[c->a[s]] + paint[c->b[s]]);
    }
    return true;
}

/* ---- the path, chosen once ------------------------------------------------ */

typedef struct cd_simd_path {
    const char *name;
    cd_seed_kernel *seed;
    cd_xpbd_kernel *xpbd;
    bool avx2; /* the CPU has AVX2: the other stages run their AVX2 kernels */
} cd_simd_path;

static const cd_simd_path scalar_path = {"scalar", cd_solve_seed_scalar, cd_solve_xpbd_scalar,
                                         false};
#ifdef CD_HAVE_AVX2_KERNELS
static const cd_simd_path avx2_path = {"avx2", cd_solve_seed_avx2, cd_solve_xpbd_avx2, true};
static const cd_simd_path avx512_path = {"avx512", cd_solve_seed_avx512, cd_solve_xpbd_avx512,
                                         true};
#endif

/* Written before main (and by cd_solver_select_simd, which tests and
 * benches call while no step runs); read-only while steps run. */
static const cd_simd_path *active_path = &scalar_path;

/* The paths this CPU runs, best first: scalar always runs. */
static bool cpu_runs(const cd_simd_path *path)
{
#ifdef CD_HAVE_AVX2_KERNELS
    __builtin_cpu_init();
    if (path == &avx2_path)
        return __builtin_cpu_supports("avx2");
    if (path == &avx512_path) /* the kernels' target; AVX-512 implies AVX2 */
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx2");
#endif
    return path == &scalar_path;
}

static const cd_simd_path *const paths[] = {
#ifdef CD_HAVE_AVX2_KERNELS
    &avx512_path,
    &avx2_path,
#endif
    &scalar_path,
};

__attribute__((constructor)) static void pick_simd_path(void)
{
    const char *forced = getenv("CLOTHD_SIMD");
    if (forced != NULL && cd_solver_select_simd(forced))
        return;
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
        if (cpu_runs(paths[p])) {
            active_path = paths[p];
            break;
        }
    if (forced != NULL) /* refused: the log's simd= and status's "simd" say what runs */
        fprintf(stderr, "CLOTHD_SIMD=%s: no such path on this CPU or build; using %s\n", forced,
                active_path->name);
}

const char *cd_solver_simd_path(void)
{
    return active_path->name;
}

bool cd_solver_path_has_avx2(void)
{
    return active_path->avx2;
}

bool cd_solver_select_simd(const char *name)
{
    if (name == NULL)
        return false;
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
        if (strcmp(name, paths[p]->name) == 0 && cpu_runs(paths[p])) {
            active_path = paths[p];
            return true;
        }
    return false;
}

void cd_stage_reset_multipliers(cd_instance *inst)
{
    /* Only XPBD groups read their multipliers: the seed's solver (the
     * bench's curtain) skips the memset, which is serial work on a large
     * cloth that several threads step (0.4 MB on a 128 x 128 curtain). */
    const cd_constraints *c = &inst->coloured;
    for (int g = 0; g < CD_GROUP_COUNT; g++) {
        const cd_group *group = &inst->groups[g];
        if (group->compliance < 0.0f || group->colour_begin == group->colour_end)
            continue;
        const uint32_t begin = c->colours[group->colour_begin].begin;
        const cd_colour *last = &c->colours[group->colour_end - 1];
        memset(c->lambda + begin, 0, sizeof(float) * (last->begin + last->count - begin));
    }
    for (uint32_t t = 0; t < inst->tet_count; t++)
        inst->tets[t].lambda = 0.0f;
    cd_material_reset_multipliers(inst);
}

/* One colour of one group, and the projection's parameter. */
typedef struct colour_job {
    const cd_simd_path *path;
    const cd_colour *colour;
    bool xpbd;
    float param; /* k, or alpha~ */
} colour_job;

/* Below this many constraints a colour goes to the scalar kernel: a
 * mostly padded block of 8 costs more than the projections it saves (a
 * 4 x 4 cloth stepped in 6.3 us on AVX2, 1.8 us scalar). Same bits. */
#define CD_SIMD_MIN_RUN 64u

static void solve_slots(cd_instance *inst, const colour_job *job, uint32_t begin, uint32_t end)
{
    const cd_simd_path *path = end - begin < CD_SIMD_MIN_RUN ? &scalar_path : job->path;
    if (job->xpbd && inst->coloured.compliance_scale != NULL)
        cd_solve_xpbd_scaled_scalar(inst->pos, inst->inv_mass, &inst->coloured, begin, end,
                                    job->param);
    else if (job->xpbd)
        path->xpbd(inst->pos, inst->inv_mass, &inst->coloured, begin, end, job->param);
    else
        path->seed(inst->pos, inst->inv_mass, &inst->coloured, begin, end, job->param);
}

static void colour_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    const colour_job *job = ctx;
    const uint32_t begin = job->colour->begin + block * CD_TEAM_BLOCK;
    const uint32_t end = job->colour->begin + job->colour->count;
    solve_slots(inst, job, begin, begin + CD_TEAM_BLOCK < end ? begin + CD_TEAM_BLOCK : end);
}

/* The projection of group g: k, or alpha~. */
static void set_group(colour_job *job, const cd_group *group, float inv_h2)
{
    job->xpbd = group->compliance >= 0.0f;
    job->param = job->xpbd ? group->compliance * inv_h2 : group->stiffness;
}

/* Part p of a large instance (colour.c): every group's colours in it. */
typedef struct parts_job {
    const cd_simd_path *path;
    float inv_h2;
} parts_job;

static void solve_part(cd_instance *inst, const parts_job *ctx, uint32_t p)
{
    const cd_constraints *c = &inst->coloured;
    const uint32_t span = c->part_count + 1;
    colour_job job = {.path = ctx->path};
    for (int g = 0; g < CD_GROUP_COUNT; g++) {
        set_group(&job, &inst->groups[g], ctx->inv_h2);
        for (uint32_t col = c->part_colour[g * span + p]; col < c->part_colour[g * span + p + 1];
             col++) {
            job.colour = &c->colours[col];
            solve_slots(inst, &job, job.colour->begin, job.colour->begin + job.colour->count);
        }
    }
}

static void part_block(cd_instance *inst, const void *ctx, uint32_t part)
{
    solve_part(inst, ctx, part);
}

void cd_stage_solve_distances(cd_instance *inst, float h)
{
    if (cd_material_active(inst))
        return; /* a material's edges are no springs: its tets hold it (material.c) */
    const float inv_h2 = 1.0f / (h * h);
    if (inst->coloured.part_count > 0) {
        /* The parts side by side, then the boundary on this thread. */
        const parts_job parts = {.path = active_path, .inv_h2 = inv_h2};
        cd_team_run(inst, part_block, &parts, inst->coloured.part_count);
        solve_part(inst, &parts, inst->coloured.part_count);
        return;
    }
    colour_job job = {.path = active_path};
    for (int g = 0; g < CD_GROUP_COUNT; g++) {
        const cd_group *group = &inst->groups[g];
        set_group(&job, group, inv_h2);
        for (uint32_t col = group->colour_begin; col < group->colour_end; col++) {
            job.colour = &inst->coloured.colours[col];
            if (inst->team == NULL)
                solve_slots(inst, &job, job.colour->begin, job.colour->begin + job.colour->count);
            else
                cd_team_run(inst, colour_block, &job,
                            (job.colour->count + CD_TEAM_BLOCK - 1) / CD_TEAM_BLOCK);
        }
    }
}
