/* Tetrahedral volume constraints (soft bodies), after Müller's "Ten Minute
 * Physics" soft body and XPBD: C = V - V0 with V the signed volume
 *   V = (x1 - x0) . ((x2 - x0) x (x3 - x0)) / 6
 * and gradients g_j = (x_b - x_a) x (x_c - x_a) / 6 over the face opposite
 * vertex j, oriented towards j. A tet turned inside out has V < 0 and the
 * same projection pushes it back towards +V0: inverted tets recover.
 *   seed (compliance unset):  dl = -C / sum(w |g|^2) * volume_stiffness
 *   XPBD:                     dl = (-C - a~ l) / (sum(w |g|^2) + a~), a~ = a/h^2
 * A soft body with a material (youngsModulus) solves its tets as
 * Neo-Hookean elements instead (material.c). */
#include "internal.h"
#include "vec3.h"

/* Vertices of the face opposite each vertex, ordered so that the cross
 * product points towards that vertex for a positive tet. */
static const int opposite[4][3] = {{1, 3, 2}, {0, 2, 3}, {0, 3, 1}, {0, 1, 2}};

void cd_stage_solve_volumes(cd_instance *inst, float h)
{
    if (inst->tet_count == 0)
        return;
    if (cd_material_active(inst)) { /* its tets are Neo-Hookean elements */
        cd_stage_solve_material(inst, h);
        return;
    }
    const float compliance = inst->def.volume_compliance;
    const bool xpbd = compliance >= 0.0f;
    const float alpha = xpbd ? compliance / (h * h) : 0.0f;
    const float k = inst->def.volume_stiffness;
    float *pos = inst->pos;
    const float *w = inst->inv_mass;

    for (uint32_t t = 0; t < inst->tet_count; t++) {
        cd_tet *tet = &inst->tets[t];
        cd_vec3 x[4], g[4];
        for (int j = 0; j < 4; j++)
            x[j] = cd_v3_load(&pos[3 * tet->v[j]]);
        float wsum = 0.0f;
        for (int j = 0; j < 4; j++) {
            const int *f = opposite[j];
            g[j] = cd_v3_scale(cd_v3_cross(cd_v3_sub(x[f[1]], x[f[0]]), cd_v3_sub(x[f[2]], x[f[0]])),
                               1.0f / 6.0f);
            wsum += w[tet->v[j]] * cd_v3_dot(g[j], g[j]);
        }
        if (!(wsum + alpha > 1e-20f))
            continue;
        const float c = cd_tet_volume(x[0], x[1], x[2], x[3]) - tet->rest_volume;
        float dl;
        if (xpbd) {
            dl = (-c - alpha * tet->lambda) / (wsum + alpha);
            tet->lambda += dl;
        } else {
            dl = -c / wsum * k;
        }
        for (int j = 0; j < 4; j++) {
            const float s = dl * w[tet->v[j]];
            cd_v3_store(&pos[3 * tet->v[j]], cd_v3_add(x[j], cd_v3_scale(g[j], s)));
        }
    }
}
