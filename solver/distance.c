/* Gauss-Seidel projection of distance constraints, one pass over every
 * group per call, in array order. A group runs one of two projections:
 *
 * The seed's (compliance < 0), scaled by the group's stiffness k:
 *   dx = pb - pa, d = |dx|, s = (d - rest) / d * k
 *   pa += dx * s * wa / (wa + wb),  pb -= dx * s * wb / (wa + wb)
 *
 * XPBD (compliance alpha >= 0, Macklin et al. 2016), with alpha~ = alpha/h^2
 * and the multiplier lambda accumulated over the substep's iterations:
 *   C = d - rest,  dl = (-C - alpha~ lambda) / (wa + wb + alpha~)
 *   lambda += dl,  pa -= wa dl dx/d,  pb += wb dl dx/d
 * which converges to the same stretch whatever the iteration count. */
#include "internal.h"
#include "vec3.h"

static void solve_seed(float *restrict pos, const float *restrict w,
                       const cd_distance *restrict c, uint32_t begin, uint32_t end, float k)
{
    for (uint32_t i = begin; i < end; i++) {
        const uint32_t a = c[i].a, b = c[i].b;
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
        const float s = (d - c[i].rest) / d * k / wsum;
        cd_move_pair(pa, pb, dx, dy, dz, -s * wa, -s * wb);
    }
}

static void solve_xpbd(float *restrict pos, const float *restrict w, cd_distance *restrict c,
                       uint32_t begin, uint32_t end, float alpha_tilde)
{
    for (uint32_t i = begin; i < end; i++) {
        const uint32_t a = c[i].a, b = c[i].b;
        const float wa = w[a], wb = w[b];
        const float denom = wa + wb + alpha_tilde;
        if (denom == 0.0f)
            continue;
        float *pa = &pos[3 * a], *pb = &pos[3 * b];
        const float dx = pb[0] - pa[0], dy = pb[1] - pa[1], dz = pb[2] - pa[2];
        const float d2 = dx * dx + dy * dy + dz * dz;
        if (!(d2 > 1e-20f))
            continue;
        const float d = sqrtf(d2);
        const float dl = (c[i].rest - d - alpha_tilde * c[i].lambda) / denom;
        c[i].lambda += dl;
        const float s = dl / d;
        cd_move_pair(pa, pb, dx, dy, dz, s * wa, s * wb);
    }
}

void cd_stage_reset_multipliers(cd_instance *inst)
{
    for (uint32_t i = 0; i < inst->constraint_count; i++)
        inst->constraints[i].lambda = 0.0f;
    for (uint32_t t = 0; t < inst->tet_count; t++)
        inst->tets[t].lambda = 0.0f;
}

void cd_stage_solve_distances(cd_instance *inst, float h)
{
    const float inv_h2 = 1.0f / (h * h);
    for (int g = 0; g < CD_GROUP_COUNT; g++) {
        const cd_group *group = &inst->groups[g];
        if (group->compliance < 0.0f)
            solve_seed(inst->pos, inst->inv_mass, inst->constraints, group->begin, group->end,
                       group->stiffness);
        else
            solve_xpbd(inst->pos, inst->inv_mass, inst->constraints, group->begin, group->end,
                       group->compliance * inv_h2);
    }
}
