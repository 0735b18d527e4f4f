/* Collider bookkeeping: slots with generation-checked ids, grown only by
 * addCollider (never during a step); poses, attachments, and the impulses
 * handed to coupled colliders. */
#include <stdlib.h>

#include "internal.h"
#include "vec3.h"

/* The fields against their rows (cd_collider_def_check, options.c), then
 * the attachment, which only the instance can check. */
static bool collider_def_is_valid(const cd_instance *inst, const cd_collider_def *def)
{
    if (cd_collider_def_check(def, NULL) != CD_OK)
        return false;
    return def->attachment == 0 || (def->attachment <= CD_MAX_TRANSFORMS &&
                                     inst->transforms[def->attachment - 1].name[0] != '\0');
}

static cd_collider *find_collider(const cd_instance *inst, cd_id id)
{
    uint32_t slot = id & 0xFFFFu;
    if (slot == 0 || slot > inst->collider_slots)
        return NULL;
    cd_collider *c = &inst->colliders[slot - 1];
    if (!c->active || c->generation != (uint16_t)(id >> 16))
        return NULL;
    return c;
}

static cd_id collider_id(const cd_instance *inst, const cd_collider *c)
{
    return ((cd_id)c->generation << 16) | (uint32_t)(c - inst->colliders + 1);
}

/* World pose from the local one (attached) or as given. A box's normal
 * is its own +y axis (what `get` reports; collision reads the rotation). */
void cd_collider_place(const cd_instance *inst, cd_collider *c)
{
    if (c->attachment == 0) {
        c->pose = c->local;
    } else {
        const cd_transform *t = &inst->transforms[c->attachment - 1];
        c->pose.position = cd_transform_point(t, c->local.position);
        c->pose.normal =
            cd_v3_normalize_or(cd_transform_direction(t, c->local.normal), c->local.normal);
        c->pose.rotation = cd_quat_normalize_or(cd_quat_multiply(t->rotation, c->local.rotation),
                                             c->local.rotation);
    }
    if (c->type == CD_COLLIDER_BOX)
        c->pose.normal = cd_quat_rotate(c->pose.rotation, cd_v3(0, 1, 0));
}

/* The def's rotation as the collider keeps it: boxes normalise theirs (it
 * is unit within CD_ROTATION_UNIT_TOLERANCE), the others keep identity. */
static cd_quat own_rotation(cd_collider_type type, cd_quat q)
{
    return type == CD_COLLIDER_BOX ? cd_quat_normalize_or(q, cd_quat_identity()) : cd_quat_identity();
}

cd_status cd_instance_add_collider(cd_instance *inst, const cd_collider_def *def, cd_id *out_id)
{
    if (!collider_def_is_valid(inst, def))
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
    uint16_t generation = c->generation;
    *c = (cd_collider){
        .type = def->type,
        .local = {.position = def->position,
                  .normal = cd_v3_normalize_or(def->normal, cd_v3(0, 1, 0)),
                  .rotation = own_rotation(def->type, def->rotation)},
        .attachment = def->attachment,
        .radius = def->radius,
        .height = def->height,
        .radius2 = def->radius2 == CD_UNSET ? def->radius : def->radius2,
        .half_extents = def->half_extents,
        .friction = def->friction,
        .static_friction = def->static_friction,
        .coupling = def->coupling,
        .generation = generation,
        .active = true,
    };
    cd_collider_place(inst, c);
    c->from = c->pose; /* a new collider does not sweep from anywhere */
    inst->collider_count++;
    cd_instance_wake(inst);
    *out_id = collider_id(inst, c);
    return CD_OK;
}

cd_status cd_instance_move_collider(cd_instance *inst, cd_id collider, const cd_vec3 *position,
                                    const cd_vec3 *normal)
{
    cd_collider *c = find_collider(inst, collider);
    if (c == NULL)
        return CD_E_NOT_FOUND;
    if ((position && !cd_vec3_in_world(*position)) ||
        (normal && (c->type == CD_COLLIDER_BOX || !cd_vec3_is_valid(*normal) ||
                    !(cd_v3_length(*normal) > 0.0f))))
        return CD_E_INVALID_ARGUMENT;
    if (position)
        c->local.position = *position;
    if (normal)
        c->local.normal = cd_v3_normalize_or(*normal, c->local.normal);
    cd_collider_place(inst, c);
    cd_instance_wake(inst);
    return CD_OK;
}

cd_status cd_instance_turn_collider(cd_instance *inst, cd_id collider, cd_quat rotation)
{
    cd_collider *c = find_collider(inst, collider);
    if (c == NULL)
        return CD_E_NOT_FOUND;
    cd_collider_def probe = cd_default_collider_def(CD_COLLIDER_BOX);
    probe.rotation = rotation;
    if (c->type != CD_COLLIDER_BOX ||
        cd_option_check(&cd_collider_option_specs[CD_COLLIDER_OPT_ROTATION], &probe, NULL) != CD_OK)
        return CD_E_INVALID_ARGUMENT;
    c->local.rotation = own_rotation(c->type, rotation);
    cd_collider_place(inst, c);
    cd_instance_wake(inst);
    return CD_OK;
}

/* What a def says of the live collider: its world pose and shape. */
static cd_collider_def collider_def(const cd_collider *c)
{
    return (cd_collider_def){.type = c->type,
                             .position = c->pose.position,
                             .normal = c->pose.normal,
                             .radius = c->radius,
                             .height = c->height,
                             .radius2 = c->radius2,
                             .half_extents = c->half_extents,
                             .rotation = c->pose.rotation,
                             .friction = c->friction,
                             .static_friction = c->static_friction,
                             .coupling = c->coupling,
                             .attachment = c->attachment};
}

cd_status cd_instance_get_collider(const cd_instance *inst, cd_id collider, cd_collider_def *out)
{
    cd_collider *c = find_collider(inst, collider);
    if (c == NULL)
        return CD_E_NOT_FOUND;
    *out = collider_def(c);
    return CD_OK;
}

cd_status cd_instance_remove_collider(cd_instance *inst, cd_id collider)
{
    cd_collider *c = find_collider(inst, collider);
    if (c == NULL)
        return CD_E_NOT_FOUND;
    c->active = false;
    c->generation++;
    inst->collider_count--;
    cd_instance_wake(inst);
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
            ids[n] = collider_id(inst, c);
            defs[n] = collider_def(c);
        }
        n++;
    }
    return n;
}

uint32_t cd_instance_collider_impulses(const cd_instance *inst, cd_collider_impulse *out,
                                       uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t slot = 0; slot < inst->collider_slots; slot++) {
        const cd_collider *c = &inst->colliders[slot];
        if (!c->active || c->coupling <= 0.0f)
            continue;
        if (n < cap)
            out[n] = (cd_collider_impulse){.collider = collider_id(inst, c),
                                           .linear = c->impulse_linear,
                                           .angular = c->impulse_angular};
        n++;
    }
    return n;
}

void cd_stage_finish_colliders(cd_instance *inst)
{
    for (uint32_t k = 0; k < inst->collider_slots; k++)
        inst->colliders[k].from = inst->colliders[k].pose;
}
