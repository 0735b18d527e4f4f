/* Collider bookkeeping: slots with generation-checked ids, grown only by
 * addCollider (never during a step). */
#include <stdlib.h>

#include "internal.h"
#include "vec3.h"

static bool collider_def_is_valid(const cd_collider_def *def)
{
    if (def->type != CD_COLLIDER_SPHERE && def->type != CD_COLLIDER_CAPSULE &&
        def->type != CD_COLLIDER_PLANE)
        return false;
    return cd_vec3_is_valid(def->position) && cd_vec3_is_valid(def->normal) &&
           cd_v3_length(def->normal) > 0.0f && cd_float_is_valid(def->radius) &&
           def->radius >= 0.0f && cd_float_is_valid(def->height) && def->height >= 0.0f;
}

static cd_collider *find_collider(cd_instance *inst, cd_id id)
{
    uint32_t slot = id & 0xFFFFu;
    if (slot == 0 || slot > inst->collider_slots)
        return NULL;
    cd_collider *c = &inst->colliders[slot - 1];
    if (!c->active || c->generation != (uint16_t)(id >> 16))
        return NULL;
    return c;
}

cd_status cd_instance_add_collider(cd_instance *inst, const cd_collider_def *def, cd_id *out_id)
{
    if (!collider_def_is_valid(def))
        return CD_E_INVALID_ARGUMENT;
    uint32_t slot = 0;
    while (slot < inst->collider_slots && inst->colliders[slot].active)
        slot++;
    if (slot == inst->collider_slots) {
        if (inst->collider_slots >= CD_MAX_COLLIDERS)
            return CD_E_LIMIT_EXCEEDED;
        uint32_t cap = inst->collider_slots ? inst->collider_slots * 2 : 4;
        if (cap > CD_MAX_COLLIDERS)
            cap = CD_MAX_COLLIDERS;
        cd_collider *grown = realloc(inst->colliders, cap * sizeof *grown);
        if (grown == NULL)
            return CD_E_INTERNAL;
        for (uint32_t i = inst->collider_slots; i < cap; i++)
            grown[i] = (cd_collider){0};
        inst->colliders = grown;
        inst->collider_slots = cap;
    }
    cd_collider *c = &inst->colliders[slot];
    c->type = def->type;
    c->position = def->position;
    c->normal = cd_v3_normalize_or(def->normal, cd_v3(0, 1, 0));
    c->radius = def->radius;
    c->height = def->height;
    c->active = true;
    inst->collider_count++;
    *out_id = ((cd_id)c->generation << 16) | (slot + 1);
    return CD_OK;
}

cd_status cd_instance_move_collider(cd_instance *inst, cd_id collider, const cd_vec3 *position,
                                    const cd_vec3 *normal)
{
    cd_collider *c = find_collider(inst, collider);
    if (c == NULL)
        return CD_E_NOT_FOUND;
    if ((position && !cd_vec3_is_valid(*position)) ||
        (normal && (!cd_vec3_is_valid(*normal) || !(cd_v3_length(*normal) > 0.0f))))
        return CD_E_INVALID_ARGUMENT;
    if (position)
        c->position = *position;
    if (normal)
        c->normal = cd_v3_normalize_or(*normal, c->normal);
    return CD_OK;
}

uint32_t cd_instance_list_colliders(const cd_instance *inst, cd_id *ids, cd_collider_def *defs,
                                    uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t slot = 0; slot < inst->collider_slots; slot++) {
        const cd_collider *c = &inst->colliders[slot];
        if (!c->active)
            continue;
        if (n < cap) {
            ids[n] = ((cd_id)c->generation << 16) | (slot + 1);
            defs[n] = (cd_collider_def){.type = c->type,
                                        .position = c->position,
                                        .normal = c->normal,
                                        .radius = c->radius,
                                        .height = c->height};
        }
        n++;
    }
    return n;
}

cd_status cd_instance_remove_collider(cd_instance *inst, cd_id collider)
{
    cd_collider *c = find_collider(inst, collider);
    if (c == NULL)
        return CD_E_NOT_FOUND;
    c->active = false;
    c->generation++;
    inst->collider_count--;
    return CD_OK;
}
