/* Snapshots: instances to bytes and back, bit for bit (snapshot.h). The
 * bytes' framing is snapshot_format.c's; PROTOCOL.md ("Snapshot files")
 * has the byte tables and a test vector. Sections: HEAD (counts, the SIMD
 * path), WRLD (the slot table, the global wind), one INST per instance,
 * END (how many sections precede it, so a file cut at a section boundary
 * is refused too).
 *
 * Why named fields rather than a struct dump: the struct layout can change
 * freely, a reader names the field that is wrong, and options come from
 * their table: every row of CD_CLOTH_OPTION_MAP (options_table.h) is
 * written as "opt.<wire name>" by its kind, so a new option is saved and
 * loaded with no change here. A file from before an option existed loads
 * with the row's default (which must mean "as before the option", as it
 * already must for clients that do not send it). An unknown field or
 * section is refused: it was written by a newer clothd, and ignoring it
 * would break bit-identity silently.
 *
 * What is saved: everything the step reads or that a later command reads
 * back, and the host's opaque "tag" (the server keeps each instance's
 * scene and lifetime there; the solver never reads it, and an instance
 * without one writes no field, so such files keep their bytes). What is rebuilt instead: whatever the builders derive from the
 * options and the rest shape (constraints, their colouring and parts, groups, the
 * team, a soft body's neighbours, surface and material elements), and
 * what every step resets before reading it (XPBD multipliers, contact
 * depths, the self-collision hash and pairs, which the first substep
 * searches afresh, the guard's block results).
 *
 * How to add a field to cd_instance (or cd_collider, cd_pin): decide
 * whether the step reads it before writing it (then save it) or the
 * builders derive it (then say so above). To save it: one cd_snap_put*()
 * line in write_instance and one cd_snap_get*() line in read_state under
 * the same new name; a file written before it lacks the field, so read it
 * with cd_snap_get_any(..., optional = true, ...) and a default that
 * behaves as before. Check its range in read_state if a bad value could
 * crash a step (a file may be forged: its CRC only proves it is whole).
 * Bump the INST version only if an old reader would misread the new file.
 * The _Static_asserts at the end fail the build when one of those structs
 * changes size, as a reminder to come here; test_snapshot.c's 300-step
 * test then proves the new state round-trips (the skin, the paint and the
 * inertia frame came this way: optional fields, absent in older files). A
 * new instance type or shape: save what its builder takes (as a soft
 * body's "rest" and "tets", a mesh cloth's "rest", "triangles" and
 * "uvs") and rebuild it in build_instance; a reader refuses an instance
 * type it does not know.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "snapshot.h"
#include "snapshot_format.h"
#include "vec3.h"

#define CD_MAX_INSTANCES_PER_SNAPSHOT 65535u /* the most slots a world has */
/* sizeof(cd_instance) on x86-64, less its options (saved by their table
 * rows, so a new option needs nothing here), when snapshot.c was last
 * brought up to date. */
#define CD_SNAPSHOT_INSTANCE_SIZE 1784

/* ---- the options, by their table rows -------------------------------------- */

#define OPT_PREFIX "opt."

static int option_type(const cd_option_spec *spec, uint32_t *width)
{
    *width = 1;
    switch (spec->kind) {
    case CD_OPTION_INT:
    case CD_OPTION_WIND_MODEL:
        return CD_SNAP_I32;
    case CD_OPTION_FLOAT:
        return CD_SNAP_F32;
    case CD_OPTION_VEC3:
    case CD_OPTION_POINT:
    case CD_OPTION_DIRECTION:
    case CD_OPTION_EXTENTS:
        *width = 3;
        return CD_SNAP_F32;
    case CD_OPTION_ROTATION:
        *width = 4;
        return CD_SNAP_F32;
    case CD_OPTION_BOOL:
        return CD_SNAP_U8;
    }
    return 0;
}

static void write_options(cd_snap_writer *w, const cd_cloth_def *def)
{
    for (int i = 0; i < CD_OPT_COUNT; i++) {
        const cd_option_spec *spec = &cd_cloth_option_specs[i];
        if (spec->flags & CD_OPTION_ALIAS)
            continue;
        char name[64];
        snprintf(name, sizeof name, OPT_PREFIX "%s", spec->name);
        uint32_t width;
        const int type = option_type(spec, &width);
        const uint8_t *member = (const uint8_t *)def + spec->offset;
        if (spec->kind == CD_OPTION_BOOL) {
            cd_snap_put_flag(w, name, *(const bool *)member);
        } else {
            _Static_assert(sizeof(cd_wind_model) == 4, "wind models are stored as I32");
            cd_snap_put(w, name, type, member, 1, width, width * cd_snap_type_size(type));
        }
    }
}

/* ---- one instance ------------------------------------------------------------ */

static void write_instance(cd_snap_writer *w, const cd_instance *inst, const cd_snapshot_tag *tag)
{
    const uint32_t n = inst->particle_count, type = (uint32_t)inst->type;
    cd_snap_begin_section(w, "INST", CD_SNAP_SECTION_VERSION);
    cd_snap_put1(w, "id", CD_SNAP_U32, &inst->id);
    cd_snap_put1(w, "type", CD_SNAP_U32, &type);
    /* The host's bytes (the server's scene): absent when it gave none. */
    if (tag != NULL && tag->len > 0)
        cd_snap_put_n(w, "tag", CD_SNAP_U8, tag->bytes, tag->len);
    write_options(w, &inst->def);
    cd_snap_put1(w, "particles", CD_SNAP_U32, &n);
    if (inst->type == CD_INSTANCE_SOFTBODY) {
        cd_snap_put_n(w, "rest", CD_SNAP_F32, inst->rest, 3 * n);
        cd_snap_put(w, "tets", CD_SNAP_U32, inst->tets, inst->tet_count, 4, sizeof(cd_tet));
    } else if (!cd_is_grid(inst)) { /* a mesh cloth */
        cd_snap_put_n(w, "rest", CD_SNAP_F32, inst->rest, 3 * n);
        cd_snap_put_n(w, "triangles", CD_SNAP_U32, inst->triangles, 3 * inst->triangle_count);
        if (inst->uvs != NULL)
            cd_snap_put_n(w, "uvs", CD_SNAP_F32, inst->uvs, 2 * n);
    }
    /* Painted properties: the painted ones, by their rows' names. */
    for (int k = 0; k < CD_PAINT_COUNT; k++)
        if (inst->paint[k] != NULL) {
            char name[64];
            snprintf(name, sizeof name, "paint.%s", cd_paint_specs[k].name);
            cd_snap_put_n(w, name, CD_SNAP_F32, inst->paint[k], n);
        }
    /* The skin: where the last skin command put it (skin_now is each
     * substep's, recomputed before it is read). */
    cd_snap_put_flag(w, "skin.skinned", inst->skinned);
    if (inst->skinned) {
        cd_snap_put_n(w, "skin.from", CD_SNAP_F32, inst->skin_from, 3 * n);
        cd_snap_put_n(w, "skin.to", CD_SNAP_F32, inst->skin_to, 3 * n);
        cd_snap_put_n(w, "skin.normal", CD_SNAP_F32, inst->skin_normal, 3 * n);
    }
    cd_snap_put_n(w, "anchor", CD_SNAP_F32, &inst->anchor, 3);
    cd_snap_put_n(w, "pos", CD_SNAP_F32, inst->pos, 3 * n);
    cd_snap_put_n(w, "prev", CD_SNAP_F32, inst->prev, 3 * n);
    cd_snap_put_n(w, "residual", CD_SNAP_F32, inst->residual, 3 * n);
    cd_snap_put_n(w, "invMass", CD_SNAP_F32, inst->inv_mass, n);
    cd_snap_put_n(w, "ownInvMass", CD_SNAP_F32, inst->own_inv_mass, n);
    cd_snap_put_n(w, "pinned", CD_SNAP_U8, inst->pinned, n);

    /* A struct array's members are read through its first element: with
     * no element, through a zeroed one (no value is read). */
    static const cd_pin no_pin;
    static const cd_collider no_collider;
    const cd_pin *pins = inst->pins != NULL ? inst->pins : &no_pin;
    const uint32_t k = inst->pin_count;
    cd_snap_put(w, "pins.particle", CD_SNAP_U32, &pins->particle, k, 1, sizeof *pins);
    cd_snap_put(w, "pins.attachment", CD_SNAP_U32, &pins->attachment, k, 1, sizeof *pins);
    cd_snap_put(w, "pins.local", CD_SNAP_F32, &pins->local, k, 3, sizeof *pins);
    cd_snap_put(w, "pins.from", CD_SNAP_F32, &pins->from, k, 3, sizeof *pins);
    cd_snap_put(w, "pins.to", CD_SNAP_F32, &pins->to, k, 3, sizeof *pins);

    cd_snap_put_n(w, "tethers.anchor", CD_SNAP_U32, inst->tether_anchor, n);
    /* A particle without an anchor has no length (the builders leave it
     * unset): 0 in the file, so that one state always gives the same bytes. */
    float *lengths = malloc(sizeof(float) * (n ? n : 1));
    if (lengths == NULL) {
        w->oom = true;
    } else {
        for (uint32_t i = 0; i < n; i++)
            lengths[i] = inst->tether_anchor[i] == CD_NO_ANCHOR ? 0.0f : inst->tether_length[i];
        cd_snap_put_n(w, "tethers.length", CD_SNAP_F32, lengths, n);
        free(lengths);
    }
    cd_snap_put_flag(w, "tethers.dirty", inst->tethers_dirty);

    const cd_collider *c = inst->colliders != NULL ? inst->colliders : &no_collider;
    const uint32_t s = inst->collider_slots;
    const size_t cs = sizeof *c;
    cd_snap_put(w, "colliders.type", CD_SNAP_U32, &c->type, s, 1, cs);
    cd_snap_put(w, "colliders.pose", CD_SNAP_F32, &c->pose, s, 6, cs);
    cd_snap_put(w, "colliders.from", CD_SNAP_F32, &c->from, s, 6, cs);
    cd_snap_put(w, "colliders.local", CD_SNAP_F32, &c->local, s, 6, cs);
    cd_snap_put(w, "colliders.attachment", CD_SNAP_U32, &c->attachment, s, 1, cs);
    cd_snap_put(w, "colliders.radius", CD_SNAP_F32, &c->radius, s, 1, cs);
    cd_snap_put(w, "colliders.height", CD_SNAP_F32, &c->height, s, 1, cs);
    cd_snap_put(w, "colliders.friction", CD_SNAP_F32, &c->friction, s, 1, cs);
    cd_snap_put(w, "colliders.staticFriction", CD_SNAP_F32, &c->static_friction, s, 1, cs);
    cd_snap_put(w, "colliders.coupling", CD_SNAP_F32, &c->coupling, s, 1, cs);
    cd_snap_put(w, "colliders.impulseLinear", CD_SNAP_F32, &c->impulse_linear, s, 3, cs);
    cd_snap_put(w, "colliders.impulseAngular", CD_SNAP_F32, &c->impulse_angular, s, 3, cs);
    cd_snap_put(w, "colliders.generation", CD_SNAP_U16, &c->generation, s, 1, cs);
    cd_snap_put(w, "colliders.active", CD_SNAP_U8, &c->active, s, 1, cs);
    /* The skeleton's shapes (issue 14): a box's rotation in each pose, a
     * tapered capsule's second radius, a box's half extents. */
    cd_snap_put(w, "colliders.poseRotation", CD_SNAP_F32, &c->pose.rotation, s, 4, cs);
    cd_snap_put(w, "colliders.fromRotation", CD_SNAP_F32, &c->from.rotation, s, 4, cs);
    cd_snap_put(w, "colliders.localRotation", CD_SNAP_F32, &c->local.rotation, s, 4, cs);
    cd_snap_put(w, "colliders.radius2", CD_SNAP_F32, &c->radius2, s, 1, cs);
    cd_snap_put(w, "colliders.halfExtents", CD_SNAP_F32, &c->half_extents, s, 3, cs);

    const cd_transform *t = inst->transforms;
    cd_snap_put(w, "transforms.name", CD_SNAP_U8, t->name, CD_MAX_TRANSFORMS, CD_TRANSFORM_NAME_MAX, sizeof *t);
    cd_snap_put(w, "transforms.position", CD_SNAP_F32, &t->position, CD_MAX_TRANSFORMS, 3, sizeof *t);
    cd_snap_put(w, "transforms.rotation", CD_SNAP_F32, &t->rotation, CD_MAX_TRANSFORMS, 4, sizeof *t);

    cd_snap_put1(w, "frame.transform", CD_SNAP_U32, &inst->inertia_frame);
    cd_snap_put_n(w, "frame.position", CD_SNAP_F32, &inst->frame_position, 3);
    cd_snap_put_n(w, "frame.rotation", CD_SNAP_F32, &inst->frame_rotation, 4);
    cd_snap_put_n(w, "wind", CD_SNAP_F32, &inst->wind, 3);
    cd_snap_put_n(w, "lastGlobalWind", CD_SNAP_F32, &inst->last_global_wind, 3);
    cd_snap_put_flag(w, "enabled", inst->enabled);
    cd_snap_put_flag(w, "unstable", inst->unstable);
    cd_snap_put_flag(w, "started", inst->started);
    cd_snap_put_flag(w, "sleeping", inst->sleeping);
    cd_snap_put1(w, "stillTime", CD_SNAP_F32, &inst->still_time);
    cd_snap_put1(w, "frame", CD_SNAP_U64, &inst->frame);
    cd_snap_put1(w, "time", CD_SNAP_F64, &inst->time);
    cd_snap_put1(w, "lastDt", CD_SNAP_F32, &inst->last_dt);
    cd_snap_put1(w, "lastSpeed", CD_SNAP_F32, &inst->last_speed);
    cd_snap_put1(w, "kineticEnergy", CD_SNAP_F32, &inst->kinetic_energy);
    cd_snap_put1(w, "lodNow", CD_SNAP_I32, &inst->lod_now);
    cd_snap_put_flag(w, "lodDegraded", inst->lod_degraded);
    cd_snap_put_flag(w, "self.reserved", inst->hash_start != NULL);
    cd_snap_put_n(w, "self.stats", CD_SNAP_U64, &inst->self_stats, 4);
    cd_snap_end_section(w);
}

cd_status cd_snapshot_save(const cd_world *world, const cd_id *ids, uint32_t count,
                           uint8_t **out, size_t *len, cd_field_fault *fault)
{
    return cd_snapshot_save_tagged(world, ids, count, NULL, out, len, fault);
}

cd_status cd_snapshot_save_tagged(const cd_world *world, const cd_id *ids, uint32_t count,
                                  const cd_snapshot_tag *tags, uint8_t **out, size_t *len,
                                  cd_field_fault *fault)
{
    assert(world != NULL && out != NULL && len != NULL);
    uint64_t particles = 0;
    for (uint32_t i = 0; i < count; i++) {
        const cd_instance *inst = cd_world_get(world, ids[i]);
        if (inst == NULL)
            return cd_fault_set(fault, CD_E_NOT_FOUND, CD_FAULT_FIELD, "instances",
                                "no instance %" PRIu32, ids[i]);
        particles += inst->particle_count;
    }
    const cd_world_def *def = cd_world_definition(world);
    const uint32_t slots = def->max_instances + 1u;
    uint16_t *generations = malloc(sizeof *generations * slots);
    uint16_t *fifo = malloc(sizeof *fifo * slots);
    cd_snap_writer w = {0};
    /* One allocation in the usual case: 45 bytes a particle, ~1.6 KB of
     * options, colliders and transforms an instance, the slot table. */
    w.cap = 4096 + 8 * (size_t)slots + 4096 * (size_t)count + 48 * (size_t)particles;
    w.buf = malloc(w.cap);
    if (generations == NULL || fifo == NULL || w.buf == NULL)
        w.oom = true;

    uint8_t *p = cd_snap_w_reserve(&w, 8);
    if (p != NULL)
        memcpy(p, cd_snap_magic, 8);
    cd_snap_w_u32(&w, CD_SNAPSHOT_VERSION);
    if (!w.oom)
        cd_snap_w_u32(&w, cd_crc32c(0, w.buf, 12));

    cd_snap_begin_section(&w, "HEAD", CD_SNAP_SECTION_VERSION);
    cd_snap_put1(&w, "instances", CD_SNAP_U32, &count);
    cd_snap_put1(&w, "particles", CD_SNAP_U64, &particles);
    const char *simd = cd_solver_simd_path();
    cd_snap_put_n(&w, "simd", CD_SNAP_U8, simd, (uint32_t)strlen(simd));
    cd_snap_end_section(&w);

    if (!w.oom) {
        const uint32_t free_count = cd_world_export_slots(world, generations, fifo);
        const cd_vec3 wind = cd_world_global_wind(world);
        cd_snap_begin_section(&w, "WRLD", CD_SNAP_SECTION_VERSION);
        cd_snap_put_n(&w, "globalWind", CD_SNAP_F32, &wind, 3);
        cd_snap_put1(&w, "maxInstances", CD_SNAP_U32, &def->max_instances);
        cd_snap_put_n(&w, "generations", CD_SNAP_U16, generations, slots);
        cd_snap_put_n(&w, "freeSlots", CD_SNAP_U16, fifo, free_count);
        cd_snap_end_section(&w);
    }
    free(generations);
    free(fifo);

    for (uint32_t i = 0; i < count; i++)
        write_instance(&w, cd_world_get(world, ids[i]), tags != NULL ? &tags[i] : NULL);

    const uint32_t before = w.sections;
    cd_snap_begin_section(&w, "END ", CD_SNAP_SECTION_VERSION);
    cd_snap_put1(&w, "sections", CD_SNAP_U32, &before);
    cd_snap_end_section(&w);
    if (w.oom) {
        free(w.buf);
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, "snapshot",
                            "out of memory for %" PRIu64 " particles", particles);
    }
    *out = w.buf;
    *len = w.len;
    return CD_OK;
}

static cd_status read_options(cd_snap_section *sec, cd_cloth_def *def, cd_field_fault *fault)
{
    for (int i = 0; i < CD_OPT_COUNT; i++) {
        const cd_option_spec *spec = &cd_cloth_option_specs[i];
        if (spec->flags & CD_OPTION_ALIAS)
            continue;
        char name[64];
        snprintf(name, sizeof name, OPT_PREFIX "%s", spec->name);
        if (cd_snap_find(sec, name) == NULL)
            continue; /* written before this option existed: its default */
        uint32_t width;
        const int type = option_type(spec, &width);
        uint8_t *member = (uint8_t *)def + spec->offset;
        cd_status st;
        if (spec->kind == CD_OPTION_BOOL) {
            st = cd_snap_get_flag(sec, name, (bool *)member, fault);
        } else if (spec->kind == CD_OPTION_WIND_MODEL) {
            int32_t model;
            if ((st = cd_snap_get_n(sec, name, CD_SNAP_I32, &model, 1, fault)) == CD_OK &&
                cd_wind_model_name(model) == NULL)
                return cd_snap_bad(fault, sec, "field \"%s\": %" PRId32 " is no wind model", name, model);
            *(cd_wind_model *)member = (cd_wind_model)model;
        } else {
            st = cd_snap_get(sec, name, type, member, 1, width, width * cd_snap_type_size(type), fault);
        }
        if (st != CD_OK)
            return st;
    }
    /* Other fields named opt.* are options this build does not know: all_used
     * refuses them. */
    return CD_OK;
}

/* The solver's own check of the options, its words after the section's. */
static cd_status check_def(cd_snap_section *sec, const cd_instance *inst, const cd_cloth_def *def,
                           bool cloth, cd_field_fault *fault)
{
    cd_field_fault f;
    cd_status st = cloth ? cd_cloth_def_check(def, &f) : cd_cloth_options_check(def, &f);
    if (st == CD_OK && inst != NULL)
        st = cd_self_distance_check(def->self_distance, inst->max_self_distance, cloth, &f);
    if (st != CD_OK)
        return cd_snap_bad(fault, sec, "option %s: %s", f.field, f.reason);
    return CD_OK;
}

static bool all_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!cd_float_is_valid(v[i]))
            return false;
    return true;
}

static cd_status finite_or_bad(cd_snap_section *sec, const char *name, const float *v, size_t n,
                               cd_field_fault *fault)
{
    for (size_t i = 0; i < n; i++)
        if (!cd_float_is_valid(v[i]))
            return cd_snap_bad(fault, sec, "field \"%s\"[%zu]: not a finite number", name, i);
    return CD_OK;
}

/* A mesh cloth from its rest shape, triangles and UVs, as create built it. */
static cd_status build_mesh_cloth(cd_snap_section *sec, cd_instance *inst, uint32_t n,
                                  const cd_cloth_def *def, cd_field_fault *fault)
{
    cd_status st = check_def(sec, NULL, def, false, fault);
    if (st != CD_OK)
        return st;
    const uint32_t m = cd_snap_count_of(sec, "triangles") / 3;
    const bool has_uvs = cd_snap_find(sec, "uvs") != NULL;
    float *vertices = malloc(sizeof(float) * 3u * (n ? n : 1));
    uint32_t *triangles = malloc(sizeof(uint32_t) * 3u * (m ? m : 1));
    float *uvs = has_uvs ? malloc(sizeof(float) * 2u * (n ? n : 1)) : NULL;
    if (vertices == NULL || triangles == NULL || (has_uvs && uvs == NULL))
        st = cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
    if (st == CD_OK)
        st = cd_snap_get_n(sec, "rest", CD_SNAP_F32, vertices, 3 * n, fault);
    if (st == CD_OK)
        st = cd_snap_get_n(sec, "triangles", CD_SNAP_U32, triangles, 3 * m, fault);
    if (st == CD_OK && has_uvs)
        st = cd_snap_get_n(sec, "uvs", CD_SNAP_F32, uvs, 2 * n, fault);
    const cd_tri_mesh mesh = {.vertices = vertices, .vertex_count = n, .triangles = triangles,
                              .triangle_count = m, .uvs = uvs};
    if (st == CD_OK) {
        cd_tri_fault tf;
        st = cd_tri_mesh_validate(&mesh, &tf);
        if (st == CD_E_INVALID_ARGUMENT) {
            cd_field_fault f;
            cd_tri_fault_describe(&tf, &mesh, &f);
            st = cd_snap_bad(fault, sec, "mesh %s: %s", f.field, f.reason);
        } else if (st != CD_OK) {
            st = cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
        }
    }
    if (st == CD_OK && !cd_mesh_cloth_build(inst, &mesh, def))
        st = cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label,
                          "out of memory for %" PRIu32 " particles", n);
    free(vertices);
    free(triangles);
    free(uvs);
    return st == CD_OK ? check_def(sec, inst, def, false, fault) : st;
}

/* Builds the instance's constant parts (constraints, colours, team) from
 * its options and rest shape, as create did. */
static cd_status build_instance(cd_snap_section *sec, uint32_t type, uint32_t n, cd_cloth_def *def,
                                cd_instance **out, cd_field_fault *fault)
{
    cd_status st;
    cd_instance *inst = calloc(1, sizeof *inst);
    if (inst == NULL)
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
    *out = inst;
    if (type == CD_INSTANCE_CLOTH && cd_snap_find(sec, "triangles") != NULL)
        return build_mesh_cloth(sec, inst, n, def, fault);
    if (type == CD_INSTANCE_CLOTH) {
        if ((st = check_def(sec, NULL, def, true, fault)) != CD_OK)
            return st;
        if ((uint64_t)def->width * (uint64_t)def->height != n)
            return cd_snap_bad(fault, sec, "field \"particles\": %" PRIu32 ", the grid has %" PRId32
                       " x %" PRId32, n, def->width, def->height);
        if (!cd_cloth_build(inst, def))
            return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label,
                                "out of memory for %" PRIu32 " particles", n);
        return check_def(sec, inst, def, true, fault);
    }
    if ((st = check_def(sec, NULL, def, false, fault)) != CD_OK)
        return st;
    const uint32_t tets = cd_snap_count_of(sec, "tets") / 4;
    cd_tet_mesh mesh = {.vertices = malloc(sizeof(float) * 3u * (n ? n : 1)),
                        .vertex_count = n,
                        .tets = malloc(sizeof(uint32_t) * 4u * (tets ? tets : 1)),
                        .tet_count = tets};
    if (mesh.vertices == NULL || mesh.tets == NULL) {
        cd_mesh_free(&mesh);
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
    }
    if ((st = cd_snap_get_n(sec, "rest", CD_SNAP_F32, mesh.vertices, 3 * n, fault)) != CD_OK ||
        (st = cd_snap_get_n(sec, "tets", CD_SNAP_U32, mesh.tets, 4 * tets, fault)) != CD_OK) {
        cd_mesh_free(&mesh);
        return st;
    }
    cd_mesh_fault mf;
    if (cd_tet_mesh_validate(mesh.vertices, n, mesh.tets, tets, &mf) != CD_OK) {
        cd_field_fault f;
        cd_mesh_fault_describe(&mf, mesh.tets, n, &f);
        cd_mesh_free(&mesh);
        return cd_snap_bad(fault, sec, "mesh %s: %s", f.field, f.reason);
    }
    const bool built = cd_softbody_build(inst, &mesh, def);
    cd_mesh_free(&mesh);
    if (!built)
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label,
                            "out of memory for %" PRIu32 " particles", n);
    return check_def(sec, inst, def, false, fault);
}

/* The dynamic state over the built instance. */
static cd_status read_state(cd_snap_section *sec, cd_instance *inst, cd_field_fault *fault)
{
    const uint32_t n = inst->particle_count;
    cd_status st;
#define TRY(call)                                                                                  \
    do {                                                                                           \
        if ((st = (call)) != CD_OK)                                                                \
            return st;                                                                             \
    } while (0)
    /* Paint first: it derives the constraints' compliance scales (the
     * masses it derives are read back below). */
    for (int k = 0; k < CD_PAINT_COUNT; k++) {
        char name[64];
        snprintf(name, sizeof name, "paint.%s", cd_paint_specs[k].name);
        if (cd_snap_find(sec, name) == NULL)
            continue;
        float *values = malloc(sizeof(float) * (n ? n : 1));
        if (values == NULL)
            return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
        cd_field_fault f;
        st = cd_snap_get_n(sec, name, CD_SNAP_F32, values, n, fault);
        if (st == CD_OK && (st = cd_instance_paint(inst, (cd_paint)k, values, n, &f)) != CD_OK)
            st = f.kind == CD_FAULT_MEMORY
                     ? cd_fault_set(fault, st, CD_FAULT_MEMORY, sec->label, "out of memory")
                     : cd_snap_bad(fault, sec, "paint %s: %s", f.field, f.reason);
        free(values);
        if (st != CD_OK)
            return st;
    }
    /* Positions are relative to the anchor (anchor.c); a file written
     * before the local frame has world positions and no anchor. */
    inst->anchor = cd_v3(0, 0, 0);
    TRY(cd_snap_get_any(sec, "anchor", CD_SNAP_F32, &inst->anchor, 3, 1, sizeof(float), true, NULL,
                        fault));
    if (!cd_vec3_in_world(inst->anchor))
        return cd_snap_bad(fault, sec, "anchor outside the world box");
    TRY(cd_snap_get_n(sec, "pos", CD_SNAP_F32, inst->pos, 3 * n, fault));
    TRY(finite_or_bad(sec, "pos", inst->pos, 3 * (size_t)n, fault));
    TRY(cd_snap_get_n(sec, "prev", CD_SNAP_F32, inst->prev, 3 * n, fault));
    TRY(finite_or_bad(sec, "prev", inst->prev, 3 * (size_t)n, fault));
    /* Absent from files written before compensated Verlet: zero, which
     * is where a fresh instance starts. */
    TRY(cd_snap_get_any(sec, "residual", CD_SNAP_F32, inst->residual, 3 * n, 1, sizeof(float), true, NULL,
                        fault));
    TRY(finite_or_bad(sec, "residual", inst->residual, 3 * (size_t)n, fault));
    TRY(cd_snap_get_n(sec, "invMass", CD_SNAP_F32, inst->inv_mass, n, fault));
    TRY(cd_snap_get_n(sec, "ownInvMass", CD_SNAP_F32, inst->own_inv_mass, n, fault));
    for (uint32_t i = 0; i < n; i++)
        if (!(inst->inv_mass[i] >= 0.0f && inst->inv_mass[i] < INFINITY &&
              inst->own_inv_mass[i] >= 0.0f && inst->own_inv_mass[i] < INFINITY))
            return cd_snap_bad(fault, sec, "particle %" PRIu32 ": inverse mass not a finite number >= 0",
                       i);
    TRY(cd_snap_get_n(sec, "pinned", CD_SNAP_U8, inst->pinned, n, fault));

    /* Transforms before pins and colliders, which may name them. */
    cd_transform *t = inst->transforms;
    TRY(cd_snap_get(sec, "transforms.name", CD_SNAP_U8, t->name, CD_MAX_TRANSFORMS, CD_TRANSFORM_NAME_MAX,
            sizeof *t, fault));
    TRY(cd_snap_get(sec, "transforms.position", CD_SNAP_F32, &t->position, CD_MAX_TRANSFORMS, 3, sizeof *t,
            fault));
    TRY(cd_snap_get(sec, "transforms.rotation", CD_SNAP_F32, &t->rotation, CD_MAX_TRANSFORMS, 4, sizeof *t,
            fault));
    for (uint32_t i = 0; i < CD_MAX_TRANSFORMS; i++)
        if (memchr(t[i].name, '\0', CD_TRANSFORM_NAME_MAX) == NULL ||
            !all_finite(&t[i].position.x, 3) || !all_finite(&t[i].rotation.x, 4))
            return cd_snap_bad(fault, sec, "transform %" PRIu32 ": malformed", i);

    const uint32_t k = cd_snap_count_of(sec, "pins.particle");
    if (k > n)
        return cd_snap_bad(fault, sec, "field \"pins.particle\": %" PRIu32 " pins for %" PRIu32
                   " particles", k, n);
    uint32_t cap = 0;
    while (cap < k)
        cap = cap ? cap * 2 : 8; /* as pins.c grows it */
    if (cap > 0 && (inst->pins = calloc(cap, sizeof *inst->pins)) == NULL)
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
    inst->pin_cap = cap;
    inst->pin_count = k;
    cd_pin *pins = inst->pins;
    cd_pin none;
    if (pins == NULL)
        pins = &none; /* zero records: nothing is written through it */
    TRY(cd_snap_get(sec, "pins.particle", CD_SNAP_U32, &pins->particle, k, 1, sizeof *pins, fault));
    TRY(cd_snap_get(sec, "pins.attachment", CD_SNAP_U32, &pins->attachment, k, 1, sizeof *pins, fault));
    TRY(cd_snap_get(sec, "pins.local", CD_SNAP_F32, &pins->local, k, 3, sizeof *pins, fault));
    TRY(cd_snap_get(sec, "pins.from", CD_SNAP_F32, &pins->from, k, 3, sizeof *pins, fault));
    TRY(cd_snap_get(sec, "pins.to", CD_SNAP_F32, &pins->to, k, 3, sizeof *pins, fault));
    for (uint32_t i = 0; i < k; i++) {
        const cd_pin *p = &inst->pins[i];
        if (p->particle >= n || p->attachment > CD_MAX_TRANSFORMS ||
            (p->attachment != 0 && t[p->attachment - 1].name[0] == '\0') ||
            !all_finite(&p->local.x, 3) || !all_finite(&p->from.x, 3) || !all_finite(&p->to.x, 3))
            return cd_snap_bad(fault, sec, "pin %" PRIu32 ": particle, transform or position out of range",
                       i);
    }

    TRY(cd_snap_get_n(sec, "tethers.anchor", CD_SNAP_U32, inst->tether_anchor, n, fault));
    TRY(cd_snap_get_n(sec, "tethers.length", CD_SNAP_F32, inst->tether_length, n, fault));
    for (uint32_t i = 0; i < n; i++)
        if (inst->tether_anchor[i] != CD_NO_ANCHOR &&
            (inst->tether_anchor[i] >= n || !cd_float_is_valid(inst->tether_length[i])))
            return cd_snap_bad(fault, sec, "tether of particle %" PRIu32 ": out of range", i);
    TRY(cd_snap_get_flag(sec, "tethers.dirty", &inst->tethers_dirty, fault));

    const uint32_t slots = cd_snap_count_of(sec, "colliders.type");
    if (slots > CD_MAX_COLLIDERS)
        return cd_snap_bad(fault, sec, "field \"colliders.type\": %" PRIu32 " slots, at most %d", slots,
                   CD_MAX_COLLIDERS);
    if (slots > 0 && (inst->colliders = calloc(slots, sizeof *inst->colliders)) == NULL)
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
    inst->collider_slots = slots;
    cd_collider *c = inst->colliders, cnone;
    if (c == NULL)
        c = &cnone;
    const size_t cs = sizeof *c;
    uint32_t *types = calloc(slots ? slots : 1, sizeof *types);
    if (types == NULL)
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
    st = cd_snap_get_n(sec, "colliders.type", CD_SNAP_U32, types, slots, fault);
    for (uint32_t i = 0; st == CD_OK && i < slots; i++) {
        if (types[i] >= CD_COLLIDER_TYPE_COUNT)
            st = cd_snap_bad(fault, sec, "collider slot %" PRIu32 ": unknown type %" PRIu32, i, types[i]);
        else
            inst->colliders[i].type = (cd_collider_type)types[i];
    }
    free(types);
    if (st != CD_OK)
        return st;
    TRY(cd_snap_get(sec, "colliders.pose", CD_SNAP_F32, &c->pose, slots, 6, cs, fault));
    TRY(cd_snap_get(sec, "colliders.from", CD_SNAP_F32, &c->from, slots, 6, cs, fault));
    TRY(cd_snap_get(sec, "colliders.local", CD_SNAP_F32, &c->local, slots, 6, cs, fault));
    TRY(cd_snap_get(sec, "colliders.attachment", CD_SNAP_U32, &c->attachment, slots, 1, cs, fault));
    TRY(cd_snap_get(sec, "colliders.radius", CD_SNAP_F32, &c->radius, slots, 1, cs, fault));
    TRY(cd_snap_get(sec, "colliders.height", CD_SNAP_F32, &c->height, slots, 1, cs, fault));
    TRY(cd_snap_get(sec, "colliders.friction", CD_SNAP_F32, &c->friction, slots, 1, cs, fault));
    TRY(cd_snap_get(sec, "colliders.staticFriction", CD_SNAP_F32, &c->static_friction, slots, 1, cs, fault));
    TRY(cd_snap_get(sec, "colliders.coupling", CD_SNAP_F32, &c->coupling, slots, 1, cs, fault));
    TRY(cd_snap_get(sec, "colliders.impulseLinear", CD_SNAP_F32, &c->impulse_linear, slots, 3, cs, fault));
    TRY(cd_snap_get(sec, "colliders.impulseAngular", CD_SNAP_F32, &c->impulse_angular, slots, 3, cs, fault));
    TRY(cd_snap_get(sec, "colliders.generation", CD_SNAP_U16, &c->generation, slots, 1, cs, fault));
    TRY(cd_snap_get_flags(sec, "colliders.active", &c->active, slots, cs, fault));
    /* Files from before tapered capsules and boxes have none of these:
     * identity rotations and radius2 = radius, as addCollider sets them
     * for the older types (whose steps never read them). */
    for (uint32_t i = 0; i < slots; i++) {
        cd_collider *ci = &inst->colliders[i];
        ci->pose.rotation = ci->from.rotation = ci->local.rotation = cd_quat_identity();
        ci->radius2 = ci->radius;
    }
    TRY(cd_snap_get_any(sec, "colliders.poseRotation", CD_SNAP_F32, &c->pose.rotation, slots, 4, cs,
                        true, NULL, fault));
    TRY(cd_snap_get_any(sec, "colliders.fromRotation", CD_SNAP_F32, &c->from.rotation, slots, 4, cs,
                        true, NULL, fault));
    TRY(cd_snap_get_any(sec, "colliders.localRotation", CD_SNAP_F32, &c->local.rotation, slots, 4,
                        cs, true, NULL, fault));
    TRY(cd_snap_get_any(sec, "colliders.radius2", CD_SNAP_F32, &c->radius2, slots, 1, cs, true, NULL,
                        fault));
    TRY(cd_snap_get_any(sec, "colliders.halfExtents", CD_SNAP_F32, &c->half_extents, slots, 3, cs,
                        true, NULL, fault));
    inst->collider_count = 0;
    for (uint32_t i = 0; i < slots; i++) {
        const cd_collider *ci = &inst->colliders[i];
        if (ci->attachment > CD_MAX_TRANSFORMS ||
            (ci->active && ci->attachment != 0 && t[ci->attachment - 1].name[0] == '\0') ||
            !all_finite(&ci->pose.position.x, 6) || !all_finite(&ci->from.position.x, 6) ||
            !all_finite(&ci->local.position.x, 6) || !all_finite(&ci->radius, 5) ||
            !all_finite(&ci->impulse_linear.x, 6) || !all_finite(&ci->pose.rotation.x, 4) ||
            !all_finite(&ci->from.rotation.x, 4) || !all_finite(&ci->local.rotation.x, 4) ||
            !all_finite(&ci->radius2, 4) ||
            (ci->active && ci->type == CD_COLLIDER_BOX &&
             !(ci->half_extents.x > 0.0f && ci->half_extents.y > 0.0f && ci->half_extents.z > 0.0f)))
            return cd_snap_bad(fault, sec, "collider slot %" PRIu32 ": out of range", i);
        inst->collider_count += ci->active;
    }

    bool skinned = false; /* files from before the skin have none */
    if (cd_snap_find(sec, "skin.skinned") != NULL)
        TRY(cd_snap_get_flag(sec, "skin.skinned", &skinned, fault));
    if (skinned) {
        if (!cd_skin_reserve(inst))
            return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
        TRY(cd_snap_get_n(sec, "skin.from", CD_SNAP_F32, inst->skin_from, 3 * n, fault));
        TRY(cd_snap_get_n(sec, "skin.to", CD_SNAP_F32, inst->skin_to, 3 * n, fault));
        TRY(cd_snap_get_n(sec, "skin.normal", CD_SNAP_F32, inst->skin_normal, 3 * n, fault));
        TRY(finite_or_bad(sec, "skin.from", inst->skin_from, 3 * (size_t)n, fault));
        TRY(finite_or_bad(sec, "skin.to", inst->skin_to, 3 * (size_t)n, fault));
        TRY(finite_or_bad(sec, "skin.normal", inst->skin_normal, 3 * (size_t)n, fault));
        memcpy(inst->skin_now, inst->skin_to, sizeof(float) * 3u * n);
        inst->skinned = true;
    }
    TRY(cd_snap_get_any(sec, "frame.transform", CD_SNAP_U32, &inst->inertia_frame, 1, 1, 4, true,
                        NULL, fault));
    TRY(cd_snap_get_any(sec, "frame.position", CD_SNAP_F32, &inst->frame_position, 1, 3, 12, true,
                        NULL, fault));
    TRY(cd_snap_get_any(sec, "frame.rotation", CD_SNAP_F32, &inst->frame_rotation, 1, 4, 16, true,
                        NULL, fault));
    if (inst->inertia_frame > CD_MAX_TRANSFORMS ||
        (inst->inertia_frame != 0 && t[inst->inertia_frame - 1].name[0] == '\0') ||
        !all_finite(&inst->frame_position.x, 3) || !all_finite(&inst->frame_rotation.x, 4))
        return cd_snap_bad(fault, sec, "the inertia frame: no such transform, or not finite");
    TRY(cd_snap_get_n(sec, "wind", CD_SNAP_F32, &inst->wind, 3, fault));
    TRY(cd_snap_get_n(sec, "lastGlobalWind", CD_SNAP_F32, &inst->last_global_wind, 3, fault));
    if (!all_finite(&inst->wind.x, 3) || !all_finite(&inst->last_global_wind.x, 3))
        return cd_snap_bad(fault, sec, "field \"wind\": not finite");
    TRY(cd_snap_get_flag(sec, "enabled", &inst->enabled, fault));
    TRY(cd_snap_get_flag(sec, "unstable", &inst->unstable, fault));
    TRY(cd_snap_get_flag(sec, "started", &inst->started, fault));
    TRY(cd_snap_get_flag(sec, "sleeping", &inst->sleeping, fault));
    TRY(cd_snap_get_n(sec, "stillTime", CD_SNAP_F32, &inst->still_time, 1, fault));
    TRY(cd_snap_get_n(sec, "frame", CD_SNAP_U64, &inst->frame, 1, fault));
    TRY(cd_snap_get_n(sec, "time", CD_SNAP_F64, &inst->time, 1, fault));
    TRY(cd_snap_get_n(sec, "lastDt", CD_SNAP_F32, &inst->last_dt, 1, fault));
    TRY(cd_snap_get_n(sec, "lastSpeed", CD_SNAP_F32, &inst->last_speed, 1, fault));
    /* Absent from files written before it was reported: 0 until a step. */
    inst->kinetic_energy = 0.0f;
    TRY(cd_snap_get_any(sec, "kineticEnergy", CD_SNAP_F32, &inst->kinetic_energy, 1, 1,
                        sizeof(float), true, NULL, fault));
    if (!(inst->kinetic_energy >= 0.0f) || isinf(inst->kinetic_energy))
        return cd_snap_bad(fault, sec, "kineticEnergy not a finite non-negative number");
    /* The level the last step ran at (lod.c: finer levels come one a step);
     * absent in files from before levels of detail: 0. */
    inst->lod_now = 0;
    TRY(cd_snap_get_any(sec, "lodNow", CD_SNAP_I32, &inst->lod_now, 1, 1, sizeof inst->lod_now,
                        true, NULL, fault));
    if (inst->lod_now < 0 || inst->lod_now >= CD_LOD_LEVELS)
        return cd_snap_bad(fault, sec, "field \"lodNow\": not a level of detail");
    /* Whether the host lowered it (get reports it); absent before: no. */
    inst->lod_degraded = false;
    if (cd_snap_find(sec, "lodDegraded") != NULL)
        TRY(cd_snap_get_flag(sec, "lodDegraded", &inst->lod_degraded, fault));
    bool reserved = false;
    TRY(cd_snap_get_flag(sec, "self.reserved", &reserved, fault));
    _Static_assert(sizeof(cd_self_collision_stats) == 4 * sizeof(uint64_t), "4 counters");
    TRY(cd_snap_get_n(sec, "self.stats", CD_SNAP_U64, &inst->self_stats, 4, fault));
    if (reserved && !cd_self_collision_reserve(inst))
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
#undef TRY
    return cd_snap_all_used(sec, fault);
}

/* One INST section to a new instance, not yet in any world, and its tag. */
static cd_status read_instance(cd_snap_section *sec, cd_instance **out, cd_snapshot_tag *tag,
                               cd_field_fault *fault)
{
    *out = NULL;
    uint32_t id = 0, type = 0, n = 0;
    cd_status st;
    tag->len = cd_snap_count_of(sec, "tag");
    if (tag->len > CD_SNAPSHOT_TAG_MAX)
        return cd_snap_bad(fault, sec, "field \"tag\": %" PRIu32 " bytes, at most %u", tag->len,
                           CD_SNAPSHOT_TAG_MAX);
    if (tag->len > 0 &&
        (st = cd_snap_get_n(sec, "tag", CD_SNAP_U8, tag->bytes, tag->len, fault)) != CD_OK)
        return st;
    if ((st = cd_snap_get_n(sec, "id", CD_SNAP_U32, &id, 1, fault)) != CD_OK ||
        (st = cd_snap_get_n(sec, "type", CD_SNAP_U32, &type, 1, fault)) != CD_OK ||
        (st = cd_snap_get_n(sec, "particles", CD_SNAP_U32, &n, 1, fault)) != CD_OK)
        return st;
    snprintf(sec->label + strlen(sec->label), sizeof sec->label - strlen(sec->label),
             " instance %" PRIu32, id);
    if (cd_id_index(id) == 0)
        return cd_snap_bad(fault, sec, "field \"id\": %" PRIu32 " is not an instance id", id);
    if (type > CD_INSTANCE_SOFTBODY)
        return cd_snap_bad(fault, sec, "field \"type\": unknown instance type %" PRIu32, type);
    cd_cloth_def def = type == CD_INSTANCE_CLOTH ? cd_default_cloth_def()
                                                 : cd_default_softbody_options();
    if ((st = read_options(sec, &def, fault)) != CD_OK)
        return st;
    if (n < 4 && type == CD_INSTANCE_SOFTBODY)
        return cd_snap_bad(fault, sec, "field \"particles\": %" PRIu32 ", at least 4", n);
    st = build_instance(sec, type, n, &def, out, fault);
    if (st == CD_OK) {
        /* The saved options exactly (the builders normalise right and down
         * again, and a soft body's layout fields are its own). */
        (*out)->def = def;
        st = read_state(sec, *out, fault);
    }
    if (st == CD_OK)
        (*out)->id = id;
    return st;
}

/* ---- the file ------------------------------------------------------------------ */

typedef struct decoded {
    cd_snapshot_info info;
    cd_vec3 global_wind;
    uint16_t *generations, *fifo;
    uint32_t generation_count, fifo_count;
    cd_instance **instances;
    cd_snapshot_tag *tags; /* one per instance */
    uint32_t count;
} decoded;

static void decoded_free(decoded *d)
{
    for (uint32_t i = 0; i < d->count; i++)
        cd_instance_free(d->instances[i]);
    free(d->instances);
    free(d->tags);
    free(d->generations);
    free(d->fifo);
    memset(d, 0, sizeof *d);
}

static cd_status expect_tag(const cd_snap_section *sec, const char *tag, cd_field_fault *fault)
{
    if (memcmp(sec->tag, tag, 4) != 0)
        return cd_snap_bad(fault, sec, "expected the %.4s section here", tag);
    return CD_OK;
}

static cd_status read_head(cd_snap_section *sec, decoded *d, cd_field_fault *fault)
{
    cd_status st;
    if ((st = cd_snap_get_n(sec, "instances", CD_SNAP_U32, &d->info.instances, 1, fault)) != CD_OK ||
        (st = cd_snap_get_n(sec, "particles", CD_SNAP_U64, &d->info.particles, 1, fault)) != CD_OK)
        return st;
    const uint32_t simd = cd_snap_count_of(sec, "simd");
    if (simd >= sizeof d->info.simd)
        return cd_snap_bad(fault, sec, "field \"simd\": %" PRIu32 " bytes, at most %zu", simd,
                   sizeof d->info.simd - 1);
    if ((st = cd_snap_get_n(sec, "simd", CD_SNAP_U8, d->info.simd, simd, fault)) != CD_OK)
        return st;
    if (d->info.instances > CD_MAX_INSTANCES_PER_SNAPSHOT)
        return cd_snap_bad(fault, sec, "field \"instances\": %" PRIu32 ", at most %u", d->info.instances,
                   CD_MAX_INSTANCES_PER_SNAPSHOT);
    return cd_snap_all_used(sec, fault);
}

static cd_status read_world(cd_snap_section *sec, decoded *d, cd_field_fault *fault)
{
    cd_status st;
    uint32_t max = 0;
    if ((st = cd_snap_get_n(sec, "globalWind", CD_SNAP_F32, &d->global_wind, 3, fault)) != CD_OK ||
        (st = cd_snap_get_n(sec, "maxInstances", CD_SNAP_U32, &max, 1, fault)) != CD_OK)
        return st;
    if (!all_finite(&d->global_wind.x, 3))
        return cd_snap_bad(fault, sec, "field \"globalWind\": not finite");
    if (max < 1 || max > CD_MAX_INSTANCES_PER_SNAPSHOT)
        return cd_snap_bad(fault, sec, "field \"maxInstances\": %" PRIu32 " out of range", max);
    d->generation_count = max + 1u;
    d->fifo_count = cd_snap_count_of(sec, "freeSlots");
    if (d->fifo_count > max)
        return cd_snap_bad(fault, sec, "field \"freeSlots\": %" PRIu32 " entries for %" PRIu32 " slots",
                   d->fifo_count, max);
    d->generations = malloc(sizeof *d->generations * d->generation_count);
    d->fifo = malloc(sizeof *d->fifo * (d->fifo_count ? d->fifo_count : 1));
    if (d->generations == NULL || d->fifo == NULL)
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec->label, "out of memory");
    if ((st = cd_snap_get_n(sec, "generations", CD_SNAP_U16, d->generations, d->generation_count, fault)) != CD_OK ||
        (st = cd_snap_get_n(sec, "freeSlots", CD_SNAP_U16, d->fifo, d->fifo_count, fault)) != CD_OK)
        return st;
    return cd_snap_all_used(sec, fault);
}

static cd_status decode(const uint8_t *data, size_t len, decoded *d, cd_field_fault *fault)
{
    memset(d, 0, sizeof *d);
    cd_snap_section sec = {.label = "header"};
    if (len < CD_SNAP_PREAMBLE_SIZE)
        return cd_snap_bad(fault, &sec, "truncated: %zu bytes, the preamble takes %u", len, CD_SNAP_PREAMBLE_SIZE);
    if (memcmp(data, cd_snap_magic, 8) != 0)
        return cd_snap_bad(fault, &sec, "not a clothd snapshot (wrong cd_snap_magic)");
    if (cd_snap_load_u32(data + 12) != cd_crc32c(0, data, 12))
        return cd_snap_bad(fault, &sec, "checksum mismatch: the file is damaged");
    const uint32_t version = cd_snap_load_u32(data + 8);
    if (version != CD_SNAPSHOT_VERSION)
        return cd_snap_bad(fault, &sec, "format version %" PRIu32 " is %s than this clothd reads (%u)",
                   version, version > CD_SNAPSHOT_VERSION ? "newer" : "other", CD_SNAPSHOT_VERSION);

    size_t at = CD_SNAP_PREAMBLE_SIZE;
    uint32_t index = 0;
    cd_status st = CD_OK;
    for (;; index++) {
        st = cd_snap_next_section(data, len, &at, index, &sec, fault);
        if (st == CD_OK && index == 0)
            if ((st = expect_tag(&sec, "HEAD", fault)) == CD_OK &&
                (st = read_head(&sec, d, fault)) == CD_OK) {
                d->instances = calloc(d->info.instances ? d->info.instances : 1,
                                      sizeof *d->instances);
                d->tags = calloc(d->info.instances ? d->info.instances : 1, sizeof *d->tags);
                if (d->instances == NULL || d->tags == NULL)
                    st = cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, sec.label,
                                      "out of memory");
            }
        if (st == CD_OK && index == 1 && (st = expect_tag(&sec, "WRLD", fault)) == CD_OK)
            st = read_world(&sec, d, fault);
        const bool is_end = st == CD_OK && memcmp(sec.tag, "END ", 4) == 0;
        if (st == CD_OK && index >= 2 && !is_end) {
            if (d->count == d->info.instances)
                st = expect_tag(&sec, "END ", fault);
            else if ((st = expect_tag(&sec, "INST", fault)) == CD_OK) {
                st = read_instance(&sec, &d->instances[d->count], &d->tags[d->count], fault);
                if (d->instances[d->count] != NULL)
                    d->count++; /* freed with the rest, whatever st */
            }
        }
        if (st == CD_OK && is_end) {
            uint32_t before = 0;
            if ((st = index < 2 ? expect_tag(&sec, index ? "WRLD" : "HEAD", fault) : CD_OK) ==
                    CD_OK &&
                (st = cd_snap_get_n(&sec, "sections", CD_SNAP_U32, &before, 1, fault)) == CD_OK &&
                (st = cd_snap_all_used(&sec, fault)) == CD_OK) {
                if (before != index)
                    st = cd_snap_bad(fault, &sec, "field \"sections\": %" PRIu32 ", but %" PRIu32
                             " sections precede it", before, index);
                else if (d->count != d->info.instances)
                    st = cd_snap_bad(fault, &sec, "%" PRIu32 " instances, the HEAD section announced %"
                             PRIu32, d->count, d->info.instances);
                else if (at != len)
                    st = cd_snap_bad(fault, &sec, "%zu bytes follow the END section", len - at);
            }
        }
        free(sec.fields);
        if (st != CD_OK || is_end)
            break;
    }
    if (st != CD_OK)
        return st;
    /* One instance per slot. */
    for (uint32_t i = 0; i < d->count; i++)
        for (uint32_t j = 0; j < i; j++)
            if (cd_id_index(d->instances[i]->id) == cd_id_index(d->instances[j]->id))
                return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "instances",
                                    "ids %" PRIu32 " and %" PRIu32 " share a slot",
                                    d->instances[j]->id, d->instances[i]->id);
    uint64_t particles = 0;
    for (uint32_t i = 0; i < d->count; i++)
        particles += d->instances[i]->particle_count;
    if (particles != d->info.particles)
        return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "section 0 (HEAD)",
                            "field \"particles\": %" PRIu64 ", the instances hold %" PRIu64,
                            d->info.particles, particles);
    return CD_OK;
}

cd_status cd_snapshot_check(const uint8_t *data, size_t len, cd_snapshot_info *info,
                            cd_field_fault *fault)
{
    decoded d;
    cd_status st = decode(data, len, &d, fault);
    if (st == CD_OK && info != NULL)
        *info = d.info;
    decoded_free(&d);
    return st;
}

/* The world's limits for the decoded instances (after a replace would
 * have destroyed the live ones). */
static cd_status check_limits(const cd_world *world, const decoded *d, cd_snapshot_mode mode,
                              cd_field_fault *fault)
{
    const cd_world_def *def = cd_world_definition(world);
    const bool replace = mode == CD_SNAPSHOT_REPLACE;
    uint64_t total = replace ? 0 : cd_world_total_particles(world);
    for (uint32_t i = 0; i < d->count; i++) {
        const cd_instance *inst = d->instances[i];
        const cd_instance *live = mode == CD_SNAPSHOT_RESTORE ? cd_world_get(world, inst->id) : NULL;
        if (live != NULL)
            total -= live->particle_count; /* replaced */
        char label[48];
        snprintf(label, sizeof label, "instance %" PRIu32, inst->id);
        if (mode != CD_SNAPSHOT_NEW_IDS && cd_id_index(inst->id) > def->max_instances)
            return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_INSTANCES, label,
                                "its slot %" PRIu32 " is beyond the limit of %" PRIu32
                                " instances", cd_id_index(inst->id), def->max_instances);
        if (inst->particle_count > def->max_particles)
            return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_PARTICLES, label,
                                "%" PRIu32 " particles exceed the limit of %" PRIu32,
                                inst->particle_count, def->max_particles);
        cd_field_fault f;
        if (cd_step_work_check(inst->particle_count, cd_substeps_bound(&inst->def),
                               inst->def.solver_iterations, def->max_step_work, &f) != CD_OK)
            return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_STEP_WORK, label, "%s",
                                f.reason);
        total += inst->particle_count;
    }
    if (mode == CD_SNAPSHOT_NEW_IDS && cd_world_count(world) + d->count > def->max_instances)
        return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_INSTANCES, "instances",
                            "%" PRIu32 " more would exceed the limit of %" PRIu32 " instances",
                            d->count, def->max_instances);
    if (def->max_total_particles != 0 && total > def->max_total_particles)
        return cd_fault_set(fault, CD_E_LIMIT_EXCEEDED, CD_FAULT_TOTAL_PARTICLES, "instances",
                            "%" PRIu64 " particles in all would exceed the limit of %" PRIu64,
                            total, def->max_total_particles);
    if (mode == CD_SNAPSHOT_RESTORE)
        for (uint32_t i = 0; i < d->count; i++) {
            const cd_id id = d->instances[i]->id;
            if (!cd_world_slot_taken(world, id) || cd_world_get(world, id) != NULL)
                continue;
            const cd_instance *other = NULL;
            for (uint32_t g = 0; other == NULL && g <= UINT16_MAX; g++)
                other = cd_world_get(world, (g << 16) | cd_id_index(id));
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "instances",
                                "instance %" PRIu32 " is gone and its slot holds instance %" PRIu32
                                " (a restore replaces only the saved instance itself)",
                                id, other ? other->id : 0);
        }
    if (mode == CD_SNAPSHOT_ADD)
        for (uint32_t i = 0; i < d->count; i++)
            if (cd_world_slot_taken(world, d->instances[i]->id)) {
                const cd_id id = d->instances[i]->id;
                const cd_instance *live = NULL;
                for (uint32_t g = 0; live == NULL && g <= UINT16_MAX; g++)
                    live = cd_world_get(world, (g << 16) | cd_id_index(id));
                return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "instances",
                                    "id %" PRIu32 " is in use (its slot holds instance %" PRIu32
                                    "); destroy it or load with \"replace\":true",
                                    id, live ? live->id : 0);
            }
    return CD_OK;
}

void cd_snapshot_loaded_free(cd_snapshot_loaded *loaded)
{
    if (loaded == NULL)
        return;
    free(loaded->ids);
    free(loaded->saved_ids);
    free(loaded->tags);
    loaded->ids = loaded->saved_ids = NULL;
    loaded->tags = NULL;
}

cd_status cd_snapshot_load(cd_world *world, const uint8_t *data, size_t len, cd_snapshot_mode mode,
                           cd_snapshot_loaded *loaded, cd_field_fault *fault)
{
    assert(world != NULL && data != NULL);
    decoded d;
    cd_status st = decode(data, len, &d, fault);
    if (st == CD_OK)
        st = check_limits(world, &d, mode, fault);
    if (st != CD_OK) {
        decoded_free(&d);
        return st;
    }
    /* Everything the commit needs, allocated before it changes anything. */
    const uint32_t max = cd_world_definition(world)->max_instances;
    const uint32_t live = cd_world_count(world);
    cd_id *ids = malloc(sizeof *ids * (d.count ? d.count : 1));
    cd_id *saved = malloc(sizeof *saved * (d.count ? d.count : 1));
    cd_id *old = malloc(sizeof *old * (live ? live : 1));
    uint16_t *fifo = malloc(sizeof *fifo * max);
    uint8_t *seen = calloc(max + 1u, 1);
    if (ids == NULL || saved == NULL || old == NULL || fifo == NULL || seen == NULL) {
        free(ids);
        free(saved);
        free(old);
        free(fifo);
        free(seen);
        decoded_free(&d);
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, "snapshot", "out of memory");
    }
    if (mode == CD_SNAPSHOT_REPLACE) {
        const uint32_t n = cd_world_list(world, old, live);
        for (uint32_t i = 0; i < n; i++)
            cd_world_destroy_instance(world, old[i]);
        cd_world_set_global_wind(world, d.global_wind);
    }
    for (uint32_t i = 0; i < d.count; i++) {
        saved[i] = d.instances[i]->id;
        if (mode == CD_SNAPSHOT_RESTORE)
            cd_world_destroy_instance(world, saved[i]); /* the live one, if any: its slot is taken back below */
        if (mode == CD_SNAPSHOT_NEW_IDS)
            ids[i] = cd_world_place(world, d.instances[i]);
        else
            cd_world_adopt(world, d.instances[i], ids[i] = saved[i]);
        d.instances[i] = NULL;
    }
    if (mode == CD_SNAPSHOT_REPLACE)
        cd_world_rebuild_free(world, d.generations, d.generation_count, d.fifo, d.fifo_count, fifo,
                              seen);
    else if (mode == CD_SNAPSHOT_ADD || mode == CD_SNAPSHOT_RESTORE)
        cd_world_rebuild_free(world, NULL, 0, NULL, 0, fifo, seen);
    else
        free(fifo); /* create's own slot order stands */
    free(seen);
    free(old);
    if (loaded != NULL) {
        *loaded = (cd_snapshot_loaded){.info = d.info, .ids = ids, .saved_ids = saved,
                                       .tags = d.tags};
        d.tags = NULL; /* the caller's now */
    } else {
        free(ids);
        free(saved);
    }
    d.count = 0; /* the world owns them now */
    decoded_free(&d);
    return CD_OK;
}

/* A reminder for whoever changes these structs: see the head comment. */
#if defined(__x86_64__) && defined(__LP64__)
_Static_assert(sizeof(cd_instance) - sizeof(cd_cloth_def) == CD_SNAPSHOT_INSTANCE_SIZE,
               "cd_instance changed: save the new field in snapshot.c (its head comment says "
               "how), then update CD_SNAPSHOT_INSTANCE_SIZE");
_Static_assert(sizeof(cd_collider) == 192, "cd_collider changed: see snapshot.c's head comment");
_Static_assert(sizeof(cd_pin) == 44, "cd_pin changed: see snapshot.c's head comment");
#endif
