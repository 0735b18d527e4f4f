/* Soft bodies in material units: Young's modulus and Poisson's ratio
 * instead of a compliance per edge (which made a finer mesh of the same
 * body stiffer: the same value on 3x the edges, issue 10).
 *
 * Edges: a bar of cross-section A and length l of Young's modulus E is a
 * spring of k = E A / l. An edge stands for the material of the
 * tetrahedra around it: A l ~ (the volume of those tets) / (edges per
 * tet), so k_e = E c V_e / l_e^2 with V_e the summed volume of the tets
 * sharing the edge and c a constant of the lattice, calibrated once so
 * that a bar of the box generator's tets stretched by a known force has
 * modulus E (tests/test_solver_material.c). The step's XPBD stretch then
 * runs with compliance 1/E times a per-edge factor l_e^2 / (c V_e)
 * (compliance_scale, the same slot factor painted compliance uses).
 * Volumes: C = V - V0 stores (1/2) K dV^2 / V0, K = E / (3 (1 - 2 nu)) the
 * bulk modulus, so each tet's compliance is V0 / K (volume.c). */
#include <stdlib.h>

#include "internal.h"
#include "vec3.h"

/* c above: measured, see the head comment. */
#define CD_EDGE_STIFFNESS_FACTOR 0.7257f

bool cd_material_active(const cd_instance *inst)
{
    return inst->type == CD_INSTANCE_SOFTBODY && inst->def.youngs_modulus > 0.0f;
}

float cd_material_bulk_compliance(const cd_instance *inst)
{
    return 3.0f * (1.0f - 2.0f * inst->def.poisson_ratio) / inst->def.youngs_modulus;
}

/* Each slot's factor l^2 / (c V_e) into `scale` (slots entries). */
bool cd_material_edge_factors(const cd_instance *inst, float *scale)
{
    const uint32_t n = inst->particle_count;
    uint32_t *start = calloc((size_t)n + 1, sizeof(uint32_t));
    uint32_t *tets = malloc(sizeof(uint32_t) * 4u * (inst->tet_count ? inst->tet_count : 1));
    if (start == NULL || tets == NULL) {
        free(start);
        free(tets);
        return false;
    }
    /* The tets of each vertex (CSR). */
    for (uint32_t t = 0; t < inst->tet_count; t++)
        for (int k = 0; k < 4; k++)
            start[inst->tets[t].v[k] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    uint32_t *fill = calloc(n ? n : 1, sizeof(uint32_t));
    if (fill == NULL) {
        free(start);
        free(tets);
        return false;
    }
    for (uint32_t t = 0; t < inst->tet_count; t++)
        for (int k = 0; k < 4; k++) {
            const uint32_t v = inst->tets[t].v[k];
            tets[start[v] + fill[v]++] = t;
        }
    free(fill);
    const cd_constraints *c = &inst->coloured;
    const cd_group *g = &inst->groups[CD_GROUP_STRETCH];
    for (uint32_t col = g->colour_begin; col < g->colour_end; col++)
        for (uint32_t s = c->colours[col].begin; s < c->colours[col].begin + c->colours[col].count;
             s++) {
            const uint32_t a = c->a[s], b = c->b[s];
            float volume = 0.0f;
            for (uint32_t k = start[a]; k < start[a + 1]; k++) {
                const cd_tet *tet = &inst->tets[tets[k]];
                if (tet->v[0] == b || tet->v[1] == b || tet->v[2] == b || tet->v[3] == b)
                    volume += tet->rest_volume;
            }
            scale[s] *= volume > 0.0f
                            ? c->rest[s] * c->rest[s] / (CD_EDGE_STIFFNESS_FACTOR * volume)
                            : 1.0f;
        }
    free(start);
    free(tets);
    return true;
}
