/* Cloth construction: the particle grid and the seed's constraint table.
 *
 *   structural  (x,y)-(x+1,y), (x,y)-(x,y+1)     rest s,      stiffness
 *   shear       (x,y)-(x+1,y+1), (x+1,y)-(x,y+1) rest s*sqrt2, stiffness*0.8
 *   bending     (x,y)-(x+2,y), (x,y)-(x,y+2)     rest 2s,     bendStiffness
 *
 * Constraints are stored in that order (structural first, which
 * cd_instance_max_structural_strain relies on). */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "vec3.h"

#define CD_SHEAR_FACTOR 0.8f

static uint32_t cloth_constraint_count(uint32_t w, uint32_t h)
{
    return (w - 1) * h + w * (h - 1) + 2 * (w - 1) * (h - 1) + (w - 2) * h + w * (h - 2);
}

static void push(cd_distance *c, uint32_t *n, uint32_t a, uint32_t b, float rest, float k)
{
    c[(*n)++] = (cd_distance){.a = a, .b = b, .rest = rest, .stiffness = k};
}

static void build_constraints(cd_instance *inst, const cd_cloth_def *def)
{
    const uint32_t w = (uint32_t)def->width, h = (uint32_t)def->height;
    const float s = def->spacing;
    const float k = def->stiffness;
    const float shear_k = def->stiffness * CD_SHEAR_FACTOR;
    const float shear_rest = s * sqrtf(2.0f);
    cd_distance *c = inst->constraints;
    uint32_t n = 0;

    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x + 1 < w; x++)
            push(c, &n, y * w + x, y * w + x + 1, s, k);
    for (uint32_t y = 0; y + 1 < h; y++)
        for (uint32_t x = 0; x < w; x++)
            push(c, &n, y * w + x, (y + 1) * w + x, s, k);
    inst->structural_count = n;

    for (uint32_t y = 0; y + 1 < h; y++)
        for (uint32_t x = 0; x + 1 < w; x++) {
            push(c, &n, y * w + x, (y + 1) * w + x + 1, shear_rest, shear_k);
            push(c, &n, y * w + x + 1, (y + 1) * w + x, shear_rest, shear_k);
        }

    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x + 2 < w; x++)
            push(c, &n, y * w + x, y * w + x + 2, 2.0f * s, def->bend_stiffness);
    for (uint32_t y = 0; y + 2 < h; y++)
        for (uint32_t x = 0; x < w; x++)
            push(c, &n, y * w + x, (y + 2) * w + x, 2.0f * s, def->bend_stiffness);

    assert(n == inst->constraint_count);
}

bool cd_cloth_build(cd_instance *inst, const cd_cloth_def *def)
{
    const uint32_t w = (uint32_t)def->width, h = (uint32_t)def->height;
    const uint32_t n = w * h;

    inst->type = CD_INSTANCE_CLOTH;
    inst->width = def->width;
    inst->height = def->height;
    inst->particle_count = n;
    inst->constraint_count = cloth_constraint_count(w, h);
    inst->pos = malloc(sizeof(float) * 3u * n);
    inst->prev = malloc(sizeof(float) * 3u * n);
    inst->inv_mass = malloc(sizeof(float) * n);
    inst->own_inv_mass = malloc(sizeof(float) * n);
    inst->pinned = calloc(n, 1);
    inst->constraints = malloc(sizeof(cd_distance) * inst->constraint_count);
    if (!inst->pos || !inst->prev || !inst->inv_mass || !inst->own_inv_mass || !inst->pinned ||
        !inst->constraints)
        return false;

    const cd_vec3 right = cd_v3_normalize_or(def->right, cd_v3(1, 0, 0));
    const cd_vec3 down = cd_v3_normalize_or(def->down, cd_v3(0, -1, 0));
    const float inv_mass = (float)n / def->mass;
    for (uint32_t y = 0; y < h; y++) {
        for (uint32_t x = 0; x < w; x++) {
            uint32_t i = y * w + x;
            cd_vec3 p = cd_v3_add(def->origin,
                                  cd_v3_add(cd_v3_scale(right, (float)x * def->spacing),
                                            cd_v3_scale(down, (float)y * def->spacing)));
            cd_v3_store(&inst->pos[3 * i], p);
            cd_v3_store(&inst->prev[3 * i], p);
            inst->inv_mass[i] = inv_mass;
            inst->own_inv_mass[i] = inv_mass;
        }
    }
    build_constraints(inst, def);

    inst->gravity = def->gravity;
    inst->damping = def->damping;
    inst->iterations = def->solver_iterations;
    inst->enabled = true;
    return true;
}

void cd_instance_free(cd_instance *inst)
{
    if (inst == NULL)
        return;
    free(inst->pos);
    free(inst->prev);
    free(inst->inv_mass);
    free(inst->own_inv_mass);
    free(inst->pinned);
    free(inst->constraints);
    free(inst->colliders);
    free(inst);
}
