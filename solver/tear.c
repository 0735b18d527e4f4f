/* Tearing (issue 14): a mesh cloth's structural edge stretched beyond
 * `tearStrain` splits one of its vertices, as O'Brien and Hodgins split a
 * node along its fracture plane: the triangles around the vertex are
 * parted by the plane through it perpendicular to the stretched edge, and
 * those on the far side get a new copy of the vertex (same rest position,
 * position and history: no jump, no velocity). The crack so opens across
 * the pull, and grows edge by edge as the next ones overstretch.
 *
 * It runs between steps (cd_world_tear), never inside one: it changes the
 * particle count and every array derived from the topology, which is
 * allocation, and it must not race the threads that step. Edges are taken
 * in a fixed order (most stretched first, ties by index), at most
 * CD_TEAR_PER_CALL a call, so the same commands tear the same edges
 * whatever the worker count. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

#define CD_TEAR_PER_CALL 16u

typedef struct candidate {
    float strain;
    uint32_t a, b;
} candidate;

static int most_stretched_first(const void *pa, const void *pb)
{
    const candidate *x = pa, *y = pb;
    if (x->strain != y->strain)
        return x->strain > y->strain ? -1 : 1;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    return x->b < y->b ? -1 : x->b > y->b;
}

/* The structural edges beyond tearStrain, most stretched first. */
static uint32_t find_candidates(const cd_instance *inst, candidate **out)
{
    const cd_group *g = &inst->groups[CD_GROUP_STRETCH];
    const cd_constraints *c = &inst->coloured;
    uint32_t n = 0, cap = 0;
    candidate *list = NULL;
    for (uint32_t col = g->colour_begin; col < g->colour_end; col++)
        for (uint32_t s = c->colours[col].begin; s < c->colours[col].begin + c->colours[col].count;
             s++) {
            const float d = cd_v3_length(cd_v3_sub(cd_v3_load(&inst->pos[3 * c->b[s]]),
                                                   cd_v3_load(&inst->pos[3 * c->a[s]])));
            const float strain = d / c->rest[s] - 1.0f;
            if (!(strain > inst->def.tear_strain))
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                candidate *grown = realloc(list, sizeof *list * cap);
                if (grown == NULL)
                    break;
                list = grown;
            }
            list[n++] = (candidate){strain, c->a[s] < c->b[s] ? c->a[s] : c->b[s],
                                    c->a[s] < c->b[s] ? c->b[s] : c->a[s]};
        }
    if (n > 1)
        qsort(list, n, sizeof *list, most_stretched_first);
    *out = list;
    return n;
}

/* Grows a per-particle array by one element, the copy of element `src`. */
static bool grow(void **array, size_t size, uint32_t n, uint32_t src)
{
    if (*array == NULL)
        return true;
    unsigned char *grown = realloc(*array, size * ((size_t)n + 1));
    if (grown == NULL)
        return false;
    memcpy(grown + size * n, grown + size * src, size);
    *array = grown;
    return true;
}

/* Appends a copy of particle v (free: never pinned, no tether yet). */
static bool copy_particle(cd_instance *inst, uint32_t v)
{
    const uint32_t n = inst->particle_count;
    bool ok = grow((void **)&inst->pos, 3 * sizeof(float), n, v) &&
              grow((void **)&inst->prev, 3 * sizeof(float), n, v) &&
              grow((void **)&inst->residual, 3 * sizeof(float), n, v) &&
              grow((void **)&inst->inv_mass, sizeof(float), n, v) &&
              grow((void **)&inst->own_inv_mass, sizeof(float), n, v) &&
              grow((void **)&inst->pinned, 1, n, v) &&
              grow((void **)&inst->tether_anchor, sizeof(uint32_t), n, v) &&
              grow((void **)&inst->tether_length, sizeof(float), n, v) &&
              grow((void **)&inst->rest, 3 * sizeof(float), n, v) &&
              grow((void **)&inst->uvs, 2 * sizeof(float), n, v);
    for (int k = 0; ok && k < CD_PAINT_COUNT; k++)
        ok = grow((void **)&inst->paint[k], sizeof(float), n, v);
    float **skin[4] = {&inst->skin_from, &inst->skin_to, &inst->skin_normal, &inst->skin_now};
    for (int k = 0; ok && k < 4; k++)
        ok = grow((void **)skin[k], 3 * sizeof(float), n, v);
    if (!ok)
        return false;
    inst->pinned[n] = 0;
    inst->inv_mass[n] = inst->own_inv_mass[v]; /* relumped after the splits */
    inst->tether_anchor[n] = CD_NO_ANCHOR;
    inst->particle_count = n + 1;
    return true;
}

/* Splits v along the plane through it perpendicular to v -> towards:
 * triangles whose centroid lies on the far side take a new copy of v.
 * False when the plane leaves every triangle on one side (nothing to
 * part) or out of memory (*oom). */
static bool split_vertex(cd_instance *inst, uint32_t v, uint32_t towards, bool *oom)
{
    const cd_vec3 p = cd_v3_load(&inst->pos[3 * v]);
    const cd_vec3 d = cd_v3_sub(cd_v3_load(&inst->pos[3 * towards]), p);
    uint32_t near = 0, far = 0;
    for (uint32_t t = 0; t < inst->triangle_count; t++) {
        const uint32_t *q = &inst->triangles[3 * t];
        if (q[0] != v && q[1] != v && q[2] != v)
            continue;
        cd_vec3 c = cd_v3(0, 0, 0);
        for (int k = 0; k < 3; k++)
            c = cd_v3_add(c, cd_v3_load(&inst->pos[3 * q[k]]));
        const bool beyond = cd_v3_dot(cd_v3_sub(cd_v3_scale(c, 1.0f / 3.0f), p), d) > 0.0f;
        far += beyond;
        near += !beyond;
    }
    if (near == 0 || far == 0)
        return false;
    const uint32_t copy = inst->particle_count;
    if (!copy_particle(inst, v)) {
        *oom = true;
        return false;
    }
    for (uint32_t t = 0; t < inst->triangle_count; t++) {
        uint32_t *q = &inst->triangles[3 * t];
        if (q[0] != v && q[1] != v && q[2] != v)
            continue;
        cd_vec3 c = cd_v3(0, 0, 0);
        for (int k = 0; k < 3; k++)
            c = cd_v3_add(c, cd_v3_load(&inst->pos[3 * q[k]]));
        if (cd_v3_dot(cd_v3_sub(cd_v3_scale(c, 1.0f / 3.0f), p), d) > 0.0f)
            for (int k = 0; k < 3; k++)
                q[k] = q[k] == v ? copy : q[k];
    }
    return true;
}

/* Everything sized by the particle count or derived from the topology,
 * after the splits. */
static bool rebuild(cd_instance *inst)
{
    inst->width = inst->def.width = (int32_t)inst->particle_count;
    if (!cd_mesh_cloth_derive(inst))
        return false;
    if (inst->team != NULL) {
        const uint32_t blocks = cd_particle_blocks(inst);
        cd_guard_sums *guard = realloc(inst->block_guard, sizeof(cd_guard_sums) * blocks);
        if (guard == NULL)
            return false;
        inst->block_guard = guard;
    }
    if (inst->hash_start != NULL) { /* self-collision's buffers, sized anew */
        cd_self_collision_release(inst);
        if (!cd_self_collision_reserve(inst))
            return false;
    }
    cd_refresh_masses(inst);
    inst->tethers_dirty = true;
    return cd_refresh_compliance_scale(inst);
}

uint32_t cd_instance_tear(cd_instance *inst, uint32_t max_new, bool *failed)
{
    *failed = false;
    if (!(inst->def.tear_strain > 0.0f) || cd_is_grid(inst) || inst->type != CD_INSTANCE_CLOTH ||
        inst->unstable)
        return 0;
    candidate *list = NULL;
    const uint32_t count = find_candidates(inst, &list);
    uint32_t torn = 0;
    bool oom = false;
    for (uint32_t i = 0; i < count && torn < CD_TEAR_PER_CALL && torn < max_new && !oom; i++)
        if (split_vertex(inst, list[i].a, list[i].b, &oom) ||
            (!oom && split_vertex(inst, list[i].b, list[i].a, &oom)))
            torn++;
    free(list);
    if (torn > 0 && !rebuild(inst))
        oom = true;
    if (torn > 0)
        cd_instance_wake(inst);
    *failed = oom;
    return torn;
}
