/* Instance queries and the commands that change an instance between steps:
 * pins, forces, enabling. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

cd_id cd_instance_id(const cd_instance *inst)
{
    return inst->id;
}

void cd_instance_get_info(const cd_instance *inst, cd_instance_info *out)
{
    *out = (cd_instance_info){
        .id = inst->id,
        .type = inst->type,
        .width = inst->width,
        .height = inst->height,
        .particles = inst->particle_count,
        .constraints = inst->constraint_count + inst->tet_count, /* edges + volumes */
        .colliders = inst->collider_count,
        .enabled = inst->enabled,
        .unstable = inst->unstable,
        .sleeping = inst->sleeping,
        .frame = inst->frame,
        .time = inst->time,
        .lod = inst->started ? inst->lod_now : inst->def.lod,
        .lod_degraded = inst->started && inst->lod_degraded,
        .kinetic_energy = inst->started && !inst->sleeping ? inst->kinetic_energy : 0.0,
    };
}

uint32_t cd_instance_particle_count(const cd_instance *inst)
{
    return inst->particle_count;
}

bool cd_instance_is_pinned(const cd_instance *inst, uint32_t particle)
{
    return particle < inst->particle_count && inst->pinned[particle] != 0;
}

cd_status cd_instance_set_wind(cd_instance *inst, cd_vec3 wind)
{
    if (!cd_vec3_is_valid(wind))
        return CD_E_INVALID_ARGUMENT;
    inst->wind = wind;
    cd_instance_wake(inst);
    return CD_OK;
}

cd_vec3 cd_instance_wind(const cd_instance *inst)
{
    return inst->wind;
}

cd_status cd_instance_set_gravity(cd_instance *inst, cd_vec3 gravity)
{
    if (!cd_vec3_is_valid(gravity))
        return CD_E_INVALID_ARGUMENT;
    inst->def.gravity = gravity;
    inst->tethers_dirty = true; /* their slack depends on the weight */
    cd_instance_wake(inst);
    return CD_OK;
}

void cd_instance_set_enabled(cd_instance *inst, bool enabled)
{
    inst->enabled = enabled;
    if (enabled)
        inst->unstable = false;
    cd_instance_wake(inst);
}

bool cd_instance_enabled(const cd_instance *inst)
{
    return inst->enabled;
}

size_t cd_instance_memory(const cd_instance *inst)
{
    size_t n = inst->particle_count;
    /* pos, prev, carry; inv_mass, own_inv_mass, tether length; tether
     * anchor; pinned */
    return sizeof *inst +
           n * (3 * 3 * sizeof(float) + 3 * sizeof(float) + sizeof(uint32_t) + 1) +
           (size_t)inst->coloured.slots * (2 * sizeof(uint32_t) + 2 * sizeof(float)) +
           (size_t)inst->coloured.colour_count * sizeof(cd_colour) +
           (inst->coloured.part_count
                ? (CD_GROUP_COUNT * ((size_t)inst->coloured.part_count + 1) + 1) * sizeof(uint32_t)
                : 0) +
           (inst->rest ? n * 3 * sizeof(float) : 0) +
           (inst->contact_depth ? n * sizeof(float) : 0) + (size_t)inst->tet_count * sizeof(cd_tet) +
           (size_t)inst->triangle_count * 3 * sizeof(uint32_t) +
           (inst->uvs ? n * 2 * sizeof(float) : 0) +
           (inst->edge_start ? (n + 1) * sizeof(uint32_t) + n * sizeof(float) +
                                   (size_t)inst->edge_start[n] *
                                       (sizeof(uint32_t) + sizeof(float) + sizeof(cd_heap_entry)) +
                                   n * sizeof(cd_heap_entry)
                             : 0) +
           cd_self_collision_memory(inst) + cd_skin_memory(inst) + cd_material_memory(inst) +
           (size_t)inst->pin_cap * sizeof(cd_pin) +
           (size_t)inst->collider_slots * sizeof(cd_collider) +
           (inst->team ? cd_team_memory() + cd_particle_blocks(inst) * (sizeof(float) + 1) : 0);
}

float cd_instance_max_structural_strain(const cd_instance *inst)
{
    float worst = 0.0f;
    const cd_group *g = &inst->groups[CD_GROUP_STRETCH];
    const cd_constraints *c = &inst->coloured;
    for (uint32_t col = g->colour_begin; col < g->colour_end; col++) {
        const uint32_t begin = c->colours[col].begin, end = begin + c->colours[col].count;
        for (uint32_t i = begin; i < end; i++) {
            cd_vec3 d = cd_v3_sub(cd_v3_load(&inst->pos[3 * c->b[i]]),
                                  cd_v3_load(&inst->pos[3 * c->a[i]]));
            float strain = fabsf(cd_v3_length(d) - c->rest[i]) / c->rest[i];
            if (strain > worst)
                worst = strain;
        }
    }
    return worst;
}

bool cd_instance_uvs(const cd_instance *inst, float *out)
{
    if (inst->uvs != NULL) {
        memcpy(out, inst->uvs, sizeof(float) * 2u * inst->particle_count);
        return true;
    }
    if (!cd_is_grid(inst))
        return false;
    const uint32_t w = (uint32_t)inst->width, h = (uint32_t)inst->height;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        out[2 * i] = (float)(i % w) / (float)(w - 1);
        out[2 * i + 1] = (float)(i / w) / (float)(h - 1);
    }
    return true;
}

float cd_instance_volume(const cd_instance *inst)
{
    float v = 0.0f;
    for (uint32_t t = 0; t < inst->tet_count; t++) {
        const uint32_t *q = inst->tets[t].v;
        v += cd_tet_volume(cd_v3_load(&inst->pos[3 * q[0]]), cd_v3_load(&inst->pos[3 * q[1]]),
                           cd_v3_load(&inst->pos[3 * q[2]]), cd_v3_load(&inst->pos[3 * q[3]]));
    }
    return v;
}

float cd_instance_rest_volume(const cd_instance *inst)
{
    return inst->rest_volume;
}
