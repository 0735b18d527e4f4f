/* Soft bodies in material units (issue 10): Young's modulus E (Pa) and
 * Poisson's ratio nu, through per-tetrahedron constraints derived from
 * continuum mechanics, solved with XPBD. A compliance per edge made a finer
 * mesh of the same body stiffer, and edge springs scaled to E (clothd's
 * first try) got tension right but bending 0.3-0.66x of the beam formula.
 *
 * The model. A tet's deformation gradient is F = Ds Dm^-1, with Ds = [x1-x0,
 * x2-x0, x3-x0] now and Dm the same at rest (its inverse is stored). Its
 * energy, V0 times the density
 *   Psi = mu |dev E|^2 + K/2 (det F - 1)^2,   E = (F^T F - I) / 2,
 * is two XPBD constraints (Macklin and Mueller, "A Constraint-based
 * Formulation of Stable Neo-Hookean Materials", MIG 2021: one deviatoric
 * and one hydrostatic constraint per tet, compliance 1 / (modulus V0)):
 *   deviatoric  C_D = |dev E|    (Green strain's deviator), compliance 1 / (2 mu V0)
 *   volume      C_V = det F - 1,                           compliance 1 / (K V0)
 * with mu = E / (2 (1 + nu)) and K = E / (3 (1 - 2 nu)). Linearised, Psi =
 * mu |dev eps|^2 + K/2 tr(eps)^2: Hooke's law with E and nu. Green strain
 * does not see rotations; det F < 0 (a tet turned inside out) is pushed
 * back to +1 by the volume constraint, as the seed's volume constraint does.
 *
 * Why not Macklin and Mueller's own pair, C_D = |F| (compliance 1/(mu V0))
 * and C_H = det F - (1 + mu/lam)? Both are far from zero at rest and hold
 * each other in balance there; a shear is resisted only through the turn
 * of their gradients, which XPBD's Gauss-Newton step does not see. Built
 * first (with the two solved together), it was stable only for substeps
 * under a tet's wave-crossing time l/c: a tet with one free vertex,
 * E = 30 MPa, 8 substeps at 60 Hz, overshot its rest shape 5x a substep
 * and a cantilever blew up; at 16 it was fine. Both constraints here are
 * zero at rest, so XPBD stays unconditionally stable, as with distances.
 *
 * The solve. The two constraints of a tet are solved together, one 2x2
 * XPBD system a tet:
 *   [A_DD + aD, A_DV     ] [dD]   [-C_D - aD lD]
 *   [A_DV,      A_VV + aV] [dV] = [-C_V - aV lV],  A_XY = sum_k w_k gX_k . gY_k
 * with a~ = compliance / h^2 and gradients gX_k = (dC/dF) row k of Dm^-1
 * (k = 1..3; vertex 0 takes minus their sum), dC_D/dF = F dev E / |dev E|,
 * d det F / dF = cof F. Near rest the two gradients are nearly orthogonal
 * (shape against volume), so the system is well conditioned.
 *
 * Tets of one colour share no vertex (colour.c), so a colour's tets are
 * independent: with a team they run in blocks of CD_ELEMENT_BLOCK fixed by
 * the instance, and the bits are those of one thread running them in
 * order. The elements are stored colour by colour, one cache line each. */
#include <stdlib.h>

#include "internal.h"
#include "vec3.h"

/* Tets per team block: ~4x a distance constraint's work each. */
#define CD_ELEMENT_BLOCK 128u

bool cd_material_active(const cd_instance *inst)
{
    return inst->type == CD_INSTANCE_SOFTBODY && inst->def.youngs_modulus > 0.0f &&
           inst->elements != NULL;
}

size_t cd_material_memory(const cd_instance *inst)
{
    return inst->elements == NULL ? 0
                                  : (size_t)inst->tet_count * sizeof(cd_element) +
                                        (size_t)inst->element_colour_count * sizeof(cd_colour);
}

static cd_vec3 rest_vertex(const cd_instance *inst, uint32_t i)
{
    return cd_v3_load(&inst->rest[3 * i]);
}

bool cd_material_reserve(cd_instance *inst)
{
    if (inst->elements != NULL)
        return true;
    const uint32_t m = inst->tet_count;
    uint32_t *flat = malloc(sizeof(uint32_t) * 4u * m);
    uint32_t *order = malloc(sizeof(uint32_t) * m);
    cd_colour *colours = malloc(sizeof(cd_colour) * m);
    cd_element *elements = aligned_alloc(64, sizeof(cd_element) * m);
    uint32_t count = 0;
    if (flat != NULL && order != NULL && colours != NULL && elements != NULL) {
        for (uint32_t t = 0; t < m; t++)
            for (int k = 0; k < 4; k++)
                flat[4 * t + k] = inst->tets[t].v[k];
        count = cd_colour_tets(flat, m, inst->particle_count, order, colours);
    }
    free(flat);
    cd_colour *fitted = count > 0 ? realloc(colours, sizeof(cd_colour) * count) : NULL;
    if (fitted == NULL) {
        free(order);
        free(colours);
        free(elements);
        return false;
    }
    for (uint32_t s = 0; s < m; s++) {
        const cd_tet *tet = &inst->tets[order[s]];
        cd_element *e = &elements[s];
        *e = (cd_element){.rest_volume = tet->rest_volume};
        for (int k = 0; k < 4; k++)
            e->v[k] = tet->v[k];
        /* Dm^-1's rows are the cross products of Dm's other two columns
         * over det Dm (= 6 V0 > 0: creation refused inverted tets). */
        const cd_vec3 x0 = rest_vertex(inst, tet->v[0]);
        const cd_vec3 d[3] = {cd_v3_sub(rest_vertex(inst, tet->v[1]), x0),
                              cd_v3_sub(rest_vertex(inst, tet->v[2]), x0),
                              cd_v3_sub(rest_vertex(inst, tet->v[3]), x0)};
        const double det = (double)cd_v3_dot(d[0], cd_v3_cross(d[1], d[2]));
        for (int k = 0; k < 3; k++) {
            const cd_vec3 row = cd_v3_cross(d[(k + 1) % 3], d[(k + 2) % 3]);
            e->inv_rest[3 * k] = (float)(row.x / det);
            e->inv_rest[3 * k + 1] = (float)(row.y / det);
            e->inv_rest[3 * k + 2] = (float)(row.z / det);
        }
    }
    free(order);
    inst->elements = elements;
    inst->element_colours = fitted;
    inst->element_colour_count = count;
    return true;
}

void cd_material_reset_multipliers(cd_instance *inst)
{
    if (inst->elements == NULL)
        return;
    for (uint32_t s = 0; s < inst->tet_count; s++) {
        inst->elements[s].lambda_dev = 0.0f;
        inst->elements[s].lambda_vol = 0.0f;
    }
}

/* What one pass needs: a~ per unit rest volume of both constraints, and
 * the colour being solved. */
typedef struct material_pass {
    float dev, vol; /* 1 / (2 mu h^2), 1 / (K h^2) */
    const cd_colour *colour;
} material_pass;

/* Strains below this have no direction worth following (float's noise on
 * F^T F - I is ~1e-7). */
#define CD_MIN_DEVIATOR 1e-7f

static void solve_element(float *restrict pos, const float *restrict inv_mass,
                          cd_element *restrict e, const material_pass *p)
{
    float w[4], x[4][3];
    for (int k = 0; k < 4; k++) {
        w[k] = inv_mass[e->v[k]];
        for (int i = 0; i < 3; i++)
            x[k][i] = pos[3 * e->v[k] + i];
    }
    if (w[0] + w[1] + w[2] + w[3] == 0.0f)
        return;
    const float *b = e->inv_rest; /* b[3k + j]: row k of Dm^-1 */
    float f[3][3];                /* f[j]: column j of F */
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++)
            f[j][i] = (x[1][i] - x[0][i]) * b[j] + (x[2][i] - x[0][i]) * b[3 + j] +
                      (x[3][i] - x[0][i]) * b[6 + j];
    /* dev E, and its size C_D. */
    float dev[3][3];
    for (int a = 0; a < 3; a++)
        for (int c = a; c < 3; c++) {
            const float v = 0.5f * (f[a][0] * f[c][0] + f[a][1] * f[c][1] + f[a][2] * f[c][2] -
                                    (a == c ? 1.0f : 0.0f));
            dev[a][c] = dev[c][a] = v;
        }
    const float third = (dev[0][0] + dev[1][1] + dev[2][2]) * (1.0f / 3.0f);
    for (int a = 0; a < 3; a++)
        dev[a][a] -= third;
    float cd2 = 0.0f;
    for (int a = 0; a < 3; a++)
        for (int c = 0; c < 3; c++)
            cd2 += dev[a][c] * dev[a][c];
    const float cd = sqrtf(cd2);
    const bool shaped = cd > CD_MIN_DEVIATOR;
    const float inv_cd = shaped ? 1.0f / cd : 0.0f;
    float pd[3][3]; /* columns of dC_D/dF = F dev / |dev| */
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++)
            pd[j][i] = (f[0][i] * dev[0][j] + f[1][i] * dev[1][j] + f[2][i] * dev[2][j]) * inv_cd;
    float cof[3][3]; /* columns of cof F = d det F / dF */
    for (int j = 0; j < 3; j++) {
        const float *u = f[(j + 1) % 3], *v = f[(j + 2) % 3];
        cof[j][0] = u[1] * v[2] - u[2] * v[1];
        cof[j][1] = u[2] * v[0] - u[0] * v[2];
        cof[j][2] = u[0] * v[1] - u[1] * v[0];
    }
    const float det_f = f[0][0] * cof[0][0] + f[0][1] * cof[0][1] + f[0][2] * cof[0][2];

    float gd[4][3], gv[4][3];
    for (int i = 0; i < 3; i++) {
        gd[0][i] = gv[0][i] = 0.0f;
        for (int k = 0; k < 3; k++) {
            const float *row = &b[3 * k];
            gd[k + 1][i] = pd[0][i] * row[0] + pd[1][i] * row[1] + pd[2][i] * row[2];
            gv[k + 1][i] = cof[0][i] * row[0] + cof[1][i] * row[1] + cof[2][i] * row[2];
            gd[0][i] -= gd[k + 1][i];
            gv[0][i] -= gv[k + 1][i];
        }
    }
    float add = 0.0f, adv = 0.0f, avv = 0.0f;
    for (int k = 0; k < 4; k++) {
        add += w[k] * (gd[k][0] * gd[k][0] + gd[k][1] * gd[k][1] + gd[k][2] * gd[k][2]);
        adv += w[k] * (gd[k][0] * gv[k][0] + gd[k][1] * gv[k][1] + gd[k][2] * gv[k][2]);
        avv += w[k] * (gv[k][0] * gv[k][0] + gv[k][1] * gv[k][1] + gv[k][2] * gv[k][2]);
    }
    const float inv_v0 = 1.0f / e->rest_volume;
    const float ad = p->dev * inv_v0, av = p->vol * inv_v0;
    const float rd = shaped ? -cd - ad * e->lambda_dev : 0.0f;
    const float rv = -(det_f - 1.0f) - av * e->lambda_vol;
    const float det = (add + ad) * (avv + av) - adv * adv;
    if (!(det > 0.0f))
        return;
    const float inv_det = 1.0f / det;
    const float dd = ((avv + av) * rd - adv * rv) * inv_det;
    const float dv = ((add + ad) * rv - adv * rd) * inv_det;
    e->lambda_dev += dd;
    e->lambda_vol += dv;
    for (int k = 0; k < 4; k++) {
        if (w[k] == 0.0f)
            continue;
        float *q = &pos[3 * e->v[k]];
        for (int i = 0; i < 3; i++)
            q[i] = x[k][i] + w[k] * (gd[k][i] * dd + gv[k][i] * dv);
    }
}

static void solve_range(cd_instance *inst, const material_pass *p, uint32_t begin, uint32_t end)
{
    for (uint32_t s = begin; s < end; s++)
        solve_element(inst->pos, inst->inv_mass, &inst->elements[s], p);
}

static void element_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    const material_pass *p = ctx;
    const uint32_t begin = p->colour->begin + block * CD_ELEMENT_BLOCK;
    const uint32_t end = p->colour->begin + p->colour->count;
    solve_range(inst, p, begin, begin + CD_ELEMENT_BLOCK < end ? begin + CD_ELEMENT_BLOCK : end);
}

void cd_stage_solve_material(cd_instance *inst, float h)
{
    const float e = inst->def.youngs_modulus, nu = inst->def.poisson_ratio;
    const float mu = e / (2.0f * (1.0f + nu));
    const float bulk = e / (3.0f * (1.0f - 2.0f * nu));
    material_pass p = {.dev = 1.0f / (2.0f * mu * h * h), .vol = 1.0f / (bulk * h * h)};
    for (uint32_t k = 0; k < inst->element_colour_count; k++) {
        p.colour = &inst->element_colours[k];
        if (inst->team == NULL)
            solve_range(inst, &p, p.colour->begin, p.colour->begin + p.colour->count);
        else
            cd_team_run(inst, element_block, &p,
                        (p.colour->count + CD_ELEMENT_BLOCK - 1) / CD_ELEMENT_BLOCK);
    }
}
