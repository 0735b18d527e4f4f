/* The world: instance handles (slot + generation), the instance table and
 * the server-wide wind. Slots are handed out oldest-freed first so that a
 * destroyed id stays invalid for as long as possible. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
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
    uint64_t total_particles; /* of the live instances */
    cd_slot *slots;      /* def.max_instances + 1 entries; slot 0 is null */
    uint16_t *free_fifo; /* free slot indices, oldest freed first */
    uint32_t free_head;
    uint32_t free_count;
    uint32_t live;
    cd_vec3 global_wind;
};

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

/* Takes a free slot for `inst` (already built); the caller checked that
 * one is free. */
static cd_id place_instance(cd_world *world, cd_instance *inst)
{
    uint32_t slot = world->free_fifo[world->free_head];
    world->free_head = (world->free_head + 1u) % world->def.max_instances;
    world->free_count--;
    world->slots[slot].instance = inst;
    world->live++;
    world->total_particles += inst->particle_count;
    inst->id = make_id(slot, world->slots[slot].generation);
    return inst->id;
}

void cd_mesh_fault_describe(const cd_mesh_fault *mf, const uint32_t *tets,
                            uint32_t vertex_count, cd_field_fault *fault)
{
    if (fault == NULL)
        return;
    char field[48];
    const cd_status bad = CD_E_INVALID_ARGUMENT;
    switch (mf->kind) {
    case CD_MESH_TOO_FEW_VERTICES:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "vertices", "at least 4 required, got %" PRIu32,
                    vertex_count);
        return;
    case CD_MESH_NO_TETRAHEDRA:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "tetrahedra", "at least one required");
        return;
    case CD_MESH_BAD_VERTEX:
        snprintf(field, sizeof field, "vertices[%" PRIu32 "]", mf->index);
        cd_fault_set(fault, bad, CD_FAULT_MESH, field,
                    "outside the world box (|x|, |y|, |z| <= %g m)", (double)CD_WORLD_EXTENT);
        return;
    case CD_MESH_INDEX_OUT_OF_RANGE:
        snprintf(field, sizeof field, "tetrahedra[%" PRIu32 "]", mf->index);
        cd_fault_set(fault, bad, CD_FAULT_MESH, field,
                    "index %" PRIu32 " out of range (%" PRIu32 " vertices)", tets[mf->index],
                    vertex_count);
        return;
    case CD_MESH_DEGENERATE_TET:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "tetrahedra",
                    "tetrahedron %" PRIu32 " is degenerate (zero volume)", mf->index);
        return;
    case CD_MESH_INVERTED_TET:
        cd_fault_set(fault, bad, CD_FAULT_MESH, "tetrahedra",
                    "tetrahedron %" PRIu32 " is inverted (negative volume); swap two of its indices",
                    mf->index);
        return;
    case CD_MESH_OK:
        break;
    }
    cd_fault_set(fault, bad, CD_FAULT_MESH, "tetrahedra", "invalid mesh");
}

/* The world's limits for a new instance of `particles` particles whose
 * options are `options`, in the order the API documents. `field` names the
 * particles ("width, height" or "vertices"). */
static cd_status check_limits(const cd_world *world, uint64_t particles,
                              const cd_cloth_def *options, const char *field,
                              cd_field_fault *fault)
{
    if (particles > world->def.max_particles)
        return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_PARTICLES, field,
                           "%" PRIu64 " particles exceed the limit of %" PRIu32, particles,
                           world->def.max_particles);
    cd_status st = cd_step_work_check(particles, cd_substeps_bound(options), options->solver_iterations,
                                      world->def.max_step_work, fault);
    if (st != CD_OK)
        return st;
    if (world->free_count == 0)
        return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_INSTANCES, "instance",
                           "at most %" PRIu32 " instances", world->def.max_instances);
    const uint64_t total = world->total_particles + particles;
    if (world->def.max_total_particles != 0 && total > world->def.max_total_particles)
        return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_TOTAL_PARTICLES, field,
                           "%" PRIu64 " particles would bring the total to %" PRIu64
                           ", over the limit of %" PRIu64,
                           particles, total, world->def.max_total_particles);
    return CD_OK;
}

/* A grid that may tear is built as a mesh cloth of the grid's own
 * vertices, triangles and UVs: tearing changes its topology, which the
 * grid keeps implicit. */
static cd_status create_tearable_grid(cd_world *world, const cd_cloth_def *def, cd_id *out_id,
                                      cd_field_fault *fault)
{
    const uint32_t w = (uint32_t)def->width, h = (uint32_t)def->height, n = w * h;
    cd_instance *grid = calloc(1, sizeof *grid);
    cd_cloth_def layout = *def;
    layout.tear_strain = 0.0f;
    layout.self_distance = 0.0f;
    float *uvs = malloc(sizeof(float) * 2u * n);
    float *vertices = malloc(sizeof(float) * 3u * n);
    uint32_t *tris = malloc(sizeof(uint32_t) * 6u * (w - 1) * (h - 1));
    cd_status st = CD_E_INTERNAL;
    if (grid != NULL && uvs != NULL && vertices != NULL && tris != NULL &&
        cd_cloth_build(grid, &layout) && cd_instance_uvs(grid, uvs)) {
        const uint32_t m = cd_instance_triangles(grid, tris, (w - 1) * (h - 1) * 2);
        /* The grid lays itself out around its anchor (anchor.c): the mesh
         * takes world positions. */
        cd_instance_copy_positions(grid, vertices);
        const cd_tri_mesh mesh = {.vertices = vertices, .vertex_count = n, .triangles = tris,
                                  .triangle_count = m, .uvs = uvs};
        st = cd_world_create_mesh_cloth_ex(world, &mesh, def, out_id, fault);
    } else {
        cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, "width, height",
                     "out of memory for %u particles", (unsigned)n);
    }
    cd_instance_free(grid);
    free(uvs);
    free(vertices);
    free(tris);
    return st;
}

cd_id cd_world_place(cd_world *world, cd_instance *inst)
{
    assert(world->free_count > 0);
    inst->max_step_work = world->def.max_step_work;
    return place_instance(world, inst);
}

cd_status cd_world_create_cloth_ex(cd_world *world, const cd_cloth_def *def, cd_id *out_id,
                                   cd_field_fault *fault)
{
    assert(world != NULL && def != NULL && out_id != NULL);
    cd_status st = cd_cloth_def_check(def, fault);
    if (st != CD_OK)
        return st;
    const uint64_t particles = (uint64_t)def->width * (uint64_t)def->height;
    if ((st = check_limits(world, particles, def, "width, height", fault)) != CD_OK)
        return st;
    if (def->tear_strain > 0.0f)
        return create_tearable_grid(world, def, out_id, fault);

    cd_instance *inst = calloc(1, sizeof *inst);
    if (inst == NULL || !cd_cloth_build(inst, def)) {
        cd_instance_free(inst);
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, "width, height",
                           "out of memory for %" PRIu64 " particles", particles);
    }
    inst->max_step_work = world->def.max_step_work;
    cd_anchor_place(inst); /* built in world coordinates: now local ones */
    *out_id = place_instance(world, inst);
    return CD_OK;
}

cd_status cd_world_create_cloth(cd_world *world, const cd_cloth_def *def, cd_id *out_id)
{
    return cd_world_create_cloth_ex(world, def, out_id, NULL);
}

/* The end of creating a soft body or a mesh cloth built into `inst`
 * (`built`: no allocation failed): its shortest edge, known once its edges
 * are, bounds selfDistance; then it takes a slot. */
static cd_status place_mesh_instance(cd_world *world, cd_instance *inst, bool built,
                                     const cd_cloth_def *options, uint32_t vertices,
                                     cd_id *out_id, cd_field_fault *fault)
{
    if (!built) {
        cd_instance_free(inst);
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, "vertices",
                            "out of memory for %" PRIu32 " particles", vertices);
    }
    cd_status st = cd_self_distance_check(options->self_distance, inst->max_self_distance, false,
                                          fault);
    if (st != CD_OK) {
        cd_instance_free(inst);
        return st;
    }
    inst->max_step_work = world->def.max_step_work;
    cd_anchor_place(inst); /* built in world coordinates: now local ones */
    *out_id = place_instance(world, inst);
    return CD_OK;
}

cd_status cd_world_create_softbody_ex(cd_world *world, const cd_tet_mesh *mesh,
                                      const cd_cloth_def *options, cd_id *out_id,
                                      cd_field_fault *fault)
{
    assert(world != NULL && mesh != NULL && options != NULL && out_id != NULL);
    cd_mesh_fault mf;
    if (cd_tet_mesh_validate(mesh->vertices, mesh->vertex_count, mesh->tets, mesh->tet_count,
                             &mf) != CD_OK) {
        cd_mesh_fault_describe(&mf, mesh->tets, mesh->vertex_count, fault);
        return CD_E_INVALID_ARGUMENT;
    }
    cd_status st = cd_cloth_options_check(options, fault);
    if (st != CD_OK)
        return st;
    if ((st = check_limits(world, mesh->vertex_count, options, "vertices", fault)) != CD_OK)
        return st;
    cd_instance *inst = calloc(1, sizeof *inst);
    const bool built = inst != NULL && cd_softbody_build(inst, mesh, options);
    return place_mesh_instance(world, inst, built, options, mesh->vertex_count, out_id, fault);
}

cd_status cd_world_create_softbody(cd_world *world, const cd_tet_mesh *mesh,
                                   const cd_cloth_def *options, cd_id *out_id)
{
    return cd_world_create_softbody_ex(world, mesh, options, out_id, NULL);
}

cd_status cd_world_create_mesh_cloth_ex(cd_world *world, const cd_tri_mesh *mesh,
                                        const cd_cloth_def *options, cd_id *out_id,
                                        cd_field_fault *fault)
{
    assert(world != NULL && mesh != NULL && options != NULL && out_id != NULL);
    cd_tri_fault tf;
    cd_status st = cd_tri_mesh_validate(mesh, &tf);
    if (st == CD_E_INVALID_ARGUMENT) {
        cd_tri_fault_describe(&tf, mesh, fault);
        return st;
    }
    if (st != CD_OK)
        return cd_fault_set(fault, st, CD_FAULT_MEMORY, "vertices", "out of memory");
    if ((st = cd_cloth_options_check(options, fault)) != CD_OK)
        return st;
    if ((st = check_limits(world, mesh->vertex_count, options, "vertices", fault)) != CD_OK)
        return st;
    cd_instance *inst = calloc(1, sizeof *inst);
    const bool built = inst != NULL && cd_mesh_cloth_build(inst, mesh, options);
    return place_mesh_instance(world, inst, built, options, mesh->vertex_count, out_id, fault);
}

static uint64_t headroom(uint64_t limit, uint64_t used)
{
    return limit > used ? limit - used : 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

uint32_t cd_world_tear(cd_world *world, cd_id id)
{
    cd_instance *inst = cd_world_get(world, id);
    if (inst == NULL || !(inst->def.tear_strain > 0.0f))
        return 0;
    /* New particles stay within every limit a create would check. */
    const uint64_t n = inst->particle_count;
    uint64_t room = headroom(world->def.max_particles, n);
    if (world->def.max_total_particles != 0)
        room = min_u64(room, headroom(world->def.max_total_particles, world->total_particles));
    if (world->def.max_step_work != 0) {
        const uint64_t per = (uint64_t)cd_substeps_bound(&inst->def) *
                             (uint64_t)inst->def.solver_iterations;
        room = min_u64(room, headroom(world->def.max_step_work / per, n));
    }
    bool failed = false;
    const uint32_t torn = cd_instance_tear(inst, room > UINT32_MAX ? UINT32_MAX : (uint32_t)room,
                                           &failed);
    world->total_particles += torn;
    if (failed) { /* half rebuilt: never step it again */
        inst->enabled = false;
        inst->unstable = true;
    }
    return torn;
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
    world->total_particles -= inst->particle_count;
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

uint64_t cd_world_total_particles(const cd_world *world)
{
    return world->total_particles;
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

/* ---- snapshots (snapshot.c) ---------------------------------------------- */

const cd_world_def *cd_world_definition(const cd_world *world)
{
    return &world->def;
}

uint32_t cd_world_export_slots(const cd_world *world, uint16_t *generations, uint16_t *fifo)
{
    for (uint32_t i = 0; i <= world->def.max_instances; i++)
        generations[i] = world->slots[i].generation;
    for (uint32_t k = 0; k < world->free_count; k++)
        fifo[k] = world->free_fifo[(world->free_head + k) % world->def.max_instances];
    return world->free_count;
}

bool cd_world_slot_taken(const cd_world *world, cd_id id)
{
    const uint32_t slot = cd_id_index(id);
    return slot >= 1 && slot <= world->def.max_instances && world->slots[slot].instance != NULL;
}

void cd_world_adopt(cd_world *world, cd_instance *inst, cd_id id)
{
    const uint32_t slot = cd_id_index(id);
    assert(slot >= 1 && slot <= world->def.max_instances && world->slots[slot].instance == NULL);
    world->slots[slot].instance = inst;
    world->slots[slot].generation = (uint16_t)(id >> 16);
    world->live++;
    world->total_particles += inst->particle_count;
    inst->id = id;
    inst->max_step_work = world->def.max_step_work;
}

void cd_world_rebuild_free(cd_world *world, const uint16_t *generations, uint32_t generation_count,
                           const uint16_t *order, uint32_t order_count, uint16_t *fifo,
                           uint8_t *seen)
{
    const uint32_t max = world->def.max_instances;
    for (uint32_t i = 1; i < generation_count && i <= max; i++)
        if (world->slots[i].instance == NULL)
            world->slots[i].generation = generations[i];
    uint32_t n = 0;
    /* The saved order first, then the world's own, each free slot once. */
    for (int pass = 0; pass < 2; pass++) {
        const uint32_t count = pass == 0 ? order_count : world->free_count;
        for (uint32_t k = 0; k < count; k++) {
            const uint32_t slot =
                pass == 0 ? order[k] : world->free_fifo[(world->free_head + k) % max];
            if (slot < 1 || slot > max || seen[slot] || world->slots[slot].instance != NULL)
                continue;
            seen[slot] = 1;
            fifo[n++] = (uint16_t)slot;
        }
    }
    free(world->free_fifo);
    world->free_fifo = fifo;
    world->free_head = 0;
    world->free_count = n;
    assert(n + world->live == max);
}
