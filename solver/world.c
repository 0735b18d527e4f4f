/* The world: instance handles (slot + generation), the instance table and
 * the server-wide wind. Slots are handed out oldest-freed first so that a
 * destroyed id stays invalid for as long as possible. */
#include <stdlib.h>

#include "internal.h"
#include "vec3.h"

#define CD_MAX_INSTANCES 65535u

typedef struct cd_slot {
    cd_instance *instance; /* NULL when free */
    uint16_t generation;
} cd_slot;

struct cd_world {
    cd_world_def def;
    cd_slot *slots;      /* def.max_instances + 1 entries; slot 0 is null */
    uint16_t *free_fifo; /* free slot indices, oldest freed first */
    uint32_t free_head;
    uint32_t free_count;
    uint32_t live;
    cd_vec3 global_wind;
};

cd_cloth_def cd_default_cloth_def(void)
{
    return (cd_cloth_def){
        .width = 10,
        .height = 10,
        .spacing = 0.1f,
        .mass = 1.0f,
        .stiffness = 0.9f,
        .bend_stiffness = 0.5f,
        .damping = 0.01f,
        .origin = {0.0f, 0.0f, 0.0f},
        .right = {1.0f, 0.0f, 0.0f},
        .down = {0.0f, -1.0f, 0.0f},
        .gravity = {0.0f, -9.81f, 0.0f},
        .solver_iterations = 4,
        .stretch_compliance = CD_UNSET,
        .bend_compliance = CD_UNSET,
        .substeps = 1,
        .velocity_retention = CD_UNSET,
        .thickness = 0.0f,
        .particle_mass = 0.05f,
        .wind_model = CD_WIND_AERO,
        .air_density = 1.225f,
        .drag = 1.0f,
        .lift = 0.5f,
        .tethers = true,
        .tether_scale = 1.0f,
        .sleep_threshold = 0.01f,
        .self_distance = 0.0f,
        .volume_stiffness = 0.9f,
        .volume_compliance = CD_UNSET,
    };
}

cd_collider_def cd_default_collider_def(cd_collider_type type)
{
    return (cd_collider_def){
        .type = type,
        .position = {0.0f, 0.0f, 0.0f},
        .normal = {0.0f, 1.0f, 0.0f},
        .radius = 0.5f,
        .height = 1.0f,
        .friction = 0.0f,
        .static_friction = 0.0f,
        .coupling = 0.0f,
        .attachment = 0,
    };
}

cd_world_def cd_default_world_def(void)
{
    return (cd_world_def){.max_instances = 1024, .max_particles = 262144};
}

bool cd_vec3_is_valid(cd_vec3 v)
{
    return cd_float_is_valid(v.x) && cd_float_is_valid(v.y) && cd_float_is_valid(v.z);
}

bool cd_vec3_in_world(cd_vec3 v)
{
    /* Written so that NaN fails every comparison. */
    return fabsf(v.x) <= CD_WORLD_EXTENT && fabsf(v.y) <= CD_WORLD_EXTENT &&
           fabsf(v.z) <= CD_WORLD_EXTENT;
}

cd_world *cd_world_create(const cd_world_def *def)
{
    if (def == NULL || def->max_instances < 1 || def->max_instances > CD_MAX_INSTANCES ||
        def->max_particles < 4)
        return NULL;
    cd_world *world = calloc(1, sizeof *world);
    if (world == NULL)
        return NULL;
    world->def = *def;
    world->slots = calloc(def->max_instances + 1u, sizeof *world->slots);
    world->free_fifo = calloc(def->max_instances, sizeof *world->free_fifo);
    if (world->slots == NULL || world->free_fifo == NULL) {
        cd_world_destroy(world);
        return NULL;
    }
    for (uint32_t i = 0; i < def->max_instances; i++)
        world->free_fifo[i] = (uint16_t)(i + 1u);
    world->free_count = def->max_instances;
    return world;
}

void cd_world_destroy(cd_world *world)
{
    if (world == NULL)
        return;
    if (world->slots != NULL) {
        for (uint32_t i = 1; i <= world->def.max_instances; i++)
            cd_instance_free(world->slots[i].instance);
    }
    free(world->slots);
    free(world->free_fifo);
    free(world);
}

static cd_id make_id(uint32_t slot, uint16_t generation)
{
    return ((cd_id)generation << 16) | slot;
}

/* Non-zero and not parallel: otherwise particles would coincide. */
static bool axes_span_a_plane(cd_vec3 right, cd_vec3 down)
{
    cd_vec3 zero = cd_v3(0, 0, 0);
    cd_vec3 r = cd_v3_normalize_or(right, zero), d = cd_v3_normalize_or(down, zero);
    return cd_v3_length(cd_v3_cross(r, d)) > 1e-3f;
}

/* True when every particle of the grid starts inside the instability
 * guard's box: a cloth laid out beyond it would trip the guard on every
 * step and could never be simulated. The grid is affine, so its corners
 * bound it; they are computed as cd_cloth_build computes positions. */
static bool grid_in_world(const cd_cloth_def *def)
{
    const cd_vec3 right = cd_v3_normalize_or(def->right, cd_v3(1, 0, 0));
    const cd_vec3 down = cd_v3_normalize_or(def->down, cd_v3(0, -1, 0));
    const float xs[2] = {0.0f, (float)(def->width - 1) * def->spacing};
    const float ys[2] = {0.0f, (float)(def->height - 1) * def->spacing};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            cd_vec3 p = cd_v3_add(def->origin,
                                  cd_v3_add(cd_v3_scale(right, xs[i]), cd_v3_scale(down, ys[j])));
            if (!cd_vec3_in_world(p))
                return false;
        }
    return true;
}

static bool cloth_def_is_valid(const cd_cloth_def *def)
{
    return def->width >= 2 && def->height >= 2 && cd_float_is_valid(def->spacing) &&
           def->spacing > 0.0f && cd_vec3_is_valid(def->origin) && cd_vec3_is_valid(def->right) &&
           cd_vec3_is_valid(def->down) && axes_span_a_plane(def->right, def->down) &&
           grid_in_world(def) && cd_options_are_valid(def);
}

/* Takes a free slot for `inst` (already built); the caller checked that
 * one is free. */
static cd_id place_instance(cd_world *world, cd_instance *inst)
{
    uint32_t slot = world->free_fifo[world->free_head];
    world->free_head = (world->free_head + 1u) % world->def.max_instances;
    world->free_count--;
    world->slots[slot].instance = inst;
    world->live++;
    inst->id = make_id(slot, world->slots[slot].generation);
    return inst->id;
}

cd_status cd_world_create_cloth(cd_world *world, const cd_cloth_def *def, cd_id *out_id)
{
    assert(world != NULL && def != NULL && out_id != NULL);
    if (!cloth_def_is_valid(def))
        return CD_E_INVALID_ARGUMENT;
    if ((uint64_t)def->width * (uint64_t)def->height > world->def.max_particles)
        return CD_E_LIMIT_EXCEEDED;
    if (world->free_count == 0)
        return CD_E_LIMIT_EXCEEDED;

    cd_instance *inst = calloc(1, sizeof *inst);
    if (inst == NULL)
        return CD_E_INTERNAL;
    if (!cd_cloth_build(inst, def)) {
        cd_instance_free(inst);
        return CD_E_INTERNAL;
    }
    *out_id = place_instance(world, inst);
    return CD_OK;
}

cd_status cd_world_create_softbody(cd_world *world, const cd_tet_mesh *mesh,
                                   const cd_cloth_def *options, cd_id *out_id)
{
    assert(world != NULL && mesh != NULL && options != NULL && out_id != NULL);
    cd_mesh_fault fault;
    if (cd_tet_mesh_validate(mesh->vertices, mesh->vertex_count, mesh->tets, mesh->tet_count,
                             &fault) != CD_OK ||
        !cd_options_are_valid(options))
        return CD_E_INVALID_ARGUMENT;
    if (mesh->vertex_count > world->def.max_particles || world->free_count == 0)
        return CD_E_LIMIT_EXCEEDED;
    cd_instance *inst = calloc(1, sizeof *inst);
    if (inst == NULL)
        return CD_E_INTERNAL;
    if (!cd_softbody_build(inst, mesh, options)) {
        cd_instance_free(inst);
        return CD_E_INTERNAL;
    }
    *out_id = place_instance(world, inst);
    return CD_OK;
}

cd_instance *cd_world_get(const cd_world *world, cd_id id)
{
    uint32_t slot = id & 0xFFFFu;
    if (world == NULL || slot == 0 || slot > world->def.max_instances)
        return NULL;
    const cd_slot *s = &world->slots[slot];
    if (s->instance == NULL || s->generation != (uint16_t)(id >> 16))
        return NULL;
    return s->instance;
}

cd_status cd_world_destroy_instance(cd_world *world, cd_id id)
{
    cd_instance *inst = cd_world_get(world, id);
    if (inst == NULL)
        return CD_E_NOT_FOUND;
    uint32_t slot = id & 0xFFFFu;
    cd_instance_free(inst);
    world->slots[slot].instance = NULL;
    world->slots[slot].generation++;
    uint32_t tail = (world->free_head + world->free_count) % world->def.max_instances;
    world->free_fifo[tail] = (uint16_t)slot;
    world->free_count++;
    world->live--;
    return CD_OK;
}

uint32_t cd_world_count(const cd_world *world)
{
    return world->live;
}

uint32_t cd_world_list(const cd_world *world, cd_id *ids, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 1; i <= world->def.max_instances && n < world->live; i++) {
        const cd_slot *s = &world->slots[i];
        if (s->instance == NULL)
            continue;
        if (n < cap)
            ids[n] = s->instance->id;
        n++;
    }
    return n;
}

void cd_world_set_global_wind(cd_world *world, cd_vec3 wind)
{
    world->global_wind = wind;
}

cd_vec3 cd_world_global_wind(const cd_world *world)
{
    return world->global_wind;
}
