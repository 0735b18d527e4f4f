/* Gauss-Seidel projection of distance constraints (the seed's formula):
 *   dx = pb - pa, d = |dx|, c = (d - rest) / d * stiffness
 *   pa += dx * c * wa / (wa + wb),  pb -= dx * c * wb / (wa + wb)
 * One call is one pass over every constraint in array order. */
#include "internal.h"
#include "vec3.h"

void cd_stage_solve_distances(cd_instance *inst)
{
    float *restrict pos = inst->pos;
    const float *restrict w = inst->inv_mass;
    const cd_distance *restrict c = inst->constraints;
    const uint32_t count = inst->constraint_count;

    for (uint32_t i = 0; i < count; i++) {
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
        const float s = (d - c[i].rest) / d * c[i].stiffness / wsum;
        const float sa = s * wa, sb = s * wb;
        pa[0] += dx * sa;
        pa[1] += dy * sa;
        pa[2] += dz * sa;
        pb[0] -= dx * sb;
        pb[1] -= dy * sb;
        pb[2] -= dz * sb;
    }
}
