/* Painted per-vertex properties and skinned motion constraints.
 *
 * A game animates its character and hands clothd, each frame, where every
 * vertex of the garment would be if it were skinned to the skeleton (and
 * that skin's normal). The cloth then moves freely within limits painted
 * per vertex, as Jolt's skinned constraints, NvCloth's motion constraints
 * and Chaos' max distance and backstop do:
 *   - within maxDistance of its skinned position (0: exactly there; such
 *     a particle is kinematic: inverse mass 0, moved like a pin);
 *   - outside its backstop: the sphere of backstopRadius whose surface
 *     lies backstopDistance behind the skinned position, along the
 *     negative normal (centre = skin - normal (distance + radius)), so the
 *     cloth cannot sink into the body. Applied only where backstopDistance
 *     < maxDistance, and before the max distance (Jolt's order).
 * Over a step the skinned positions move from the last skin to the new one
 * substep by substep (as pins do), so fast animation does not snap the
 * cloth. The constraints are projections that move only the particle: a
 * particle resting on its backstop is put back where it was each
 * iteration, so it gains no speed (the velocity is (x - prev) / h).
 *
 * Allocation: the paint arrays on first paint, the skin arrays on the first
 * skin; the stages allocate nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

const cd_paint_spec cd_paint_specs[CD_PAINT_COUNT] = {
#define CD_PAINT_ROW(ID, wire, lo, hi, fallback)                                                   \
    [CD_PAINT_##ID] = {.name = wire, .min = lo, .max = hi, .unpainted = fallback},
    CD_PAINT_MAP(CD_PAINT_ROW)
#undef CD_PAINT_ROW
};

static float paint_of(const cd_instance *inst, cd_paint which, uint32_t i)
{
    return inst->paint[which] ? inst->paint[which][i] : cd_paint_specs[which].unpainted;
}

bool cd_particle_kinematic(const cd_instance *inst, uint32_t i)
{
    return inst->skinned && inst->paint[CD_PAINT_MAX_DISTANCE] != NULL &&
           inst->paint[CD_PAINT_MAX_DISTANCE][i] == 0.0f;
}

float cd_particle_inv_mass_scale(const cd_instance *inst, uint32_t i)
{
    return paint_of(inst, CD_PAINT_INV_MASS_SCALE, i);
}

/* ---- the limits, for one particle ---- */

/* Moves p onto the particle's limits around skinned position s with normal
 * n; returns the move. */
static cd_vec3 limit_particle(const cd_instance *inst, uint32_t i, cd_vec3 p, cd_vec3 s, cd_vec3 n)
{
    const cd_vec3 start = p;
    const float max_distance = paint_of(inst, CD_PAINT_MAX_DISTANCE, i);
    const float back_distance = paint_of(inst, CD_PAINT_BACKSTOP_DISTANCE, i);
    const float radius = paint_of(inst, CD_PAINT_BACKSTOP_RADIUS, i);
    if (radius > 0.0f && back_distance < max_distance) {
        const cd_vec3 centre = cd_v3_sub(s, cd_v3_scale(n, back_distance + radius));
        const cd_vec3 d = cd_v3_sub(p, centre);
        const float d2 = cd_v3_dot(d, d);
        if (d2 < radius * radius) {
            const float len = sqrtf(d2);
            p = len > 0.0f ? cd_v3_add(centre, cd_v3_scale(d, radius / len))
                           : cd_v3_add(centre, cd_v3_scale(n, radius));
        }
    }
    if (inst->paint[CD_PAINT_MAX_DISTANCE] != NULL) {
        const cd_vec3 d = cd_v3_sub(p, s);
        const float d2 = cd_v3_dot(d, d);
        if (d2 > max_distance * max_distance)
            p = cd_v3_add(s, cd_v3_scale(d, max_distance / sqrtf(d2)));
    }
    return cd_v3_sub(p, start);
}

static bool limited(const cd_instance *inst)
{
    return inst->skinned && (inst->paint[CD_PAINT_MAX_DISTANCE] != NULL ||
                             inst->paint[CD_PAINT_BACKSTOP_RADIUS] != NULL);
}

/* Places every particle on its limits around the skin's end pose, moving
 * its history with it: a new skin or a new paint never starts it moving. */
static void place_within_limits(cd_instance *inst)
{
    if (!limited(inst))
        return;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        if (inst->pinned[i])
            continue;
        const cd_vec3 s = cd_v3_load(&inst->skin_to[3 * i]);
        const cd_vec3 n = cd_v3_load(&inst->skin_normal[3 * i]);
        const cd_vec3 move = limit_particle(inst, i, cd_v3_load(&inst->pos[3 * i]), s, n);
        cd_v3_store(&inst->pos[3 * i], cd_v3_add(cd_v3_load(&inst->pos[3 * i]), move));
        cd_v3_store(&inst->prev[3 * i], cd_v3_add(cd_v3_load(&inst->prev[3 * i]), move));
    }
}

/* ---- commands ---- */

cd_status cd_instance_paint(cd_instance *inst, cd_paint which, const float *values,
                            uint32_t count, cd_field_fault *fault)
{
    const cd_paint_spec *spec = &cd_paint_specs[which];
    const uint32_t n = inst->particle_count;
    if (values == NULL) {
        free(inst->paint[which]);
        inst->paint[which] = NULL;
    } else {
        if (count != 1 && count != n)
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, spec->name,
                                "%u values for %u vertices (one per vertex, or one for all)",
                                (unsigned)count, (unsigned)n);
        for (uint32_t i = 0; i < count; i++)
            if (!(values[i] >= spec->min && values[i] <= spec->max)) {
                char field[48];
                snprintf(field, sizeof field, count == 1 ? "%s" : "%s[%u]", spec->name,
                         (unsigned)i);
                return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, field,
                                    "must be a number in [%g, %g]", (double)spec->min,
                                    (double)spec->max);
            }
        if (inst->paint[which] == NULL && (inst->paint[which] = malloc(sizeof(float) * n)) == NULL)
            return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, spec->name,
                                "out of memory");
        for (uint32_t i = 0; i < n; i++)
            inst->paint[which][i] = values[count == 1 ? 0 : i];
    }
    cd_refresh_masses(inst);
    if ((which == CD_PAINT_STRETCH_COMPLIANCE_SCALE || which == CD_PAINT_BEND_COMPLIANCE_SCALE) &&
        !cd_refresh_compliance_scale(inst))
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, spec->name, "out of memory");
    if (inst->skinned)
        place_within_limits(inst);
    cd_instance_wake(inst);
    return CD_OK;
}

bool cd_instance_painted(const cd_instance *inst, cd_paint which, float *out)
{
    if (inst->paint[which] == NULL)
        return false;
    memcpy(out, inst->paint[which], sizeof(float) * inst->particle_count);
    return true;
}

bool cd_instance_skinned(const cd_instance *inst)
{
    return inst->skinned;
}

/* Area-weighted normals of the render triangles at the skinned positions. */
static void skin_normals(cd_instance *inst)
{
    const uint32_t n = inst->particle_count;
    float *out = inst->skin_normal;
    memset(out, 0, sizeof(float) * 3u * n);
    const uint32_t *tris = inst->triangles ? inst->triangles : inst->skin_triangles;
    const uint32_t count = inst->triangles ? inst->triangle_count : inst->skin_triangle_count;
    for (uint32_t t = 0; t < count; t++) {
        const uint32_t *q = &tris[3 * t];
        const cd_vec3 a = cd_v3_load(&inst->skin_to[3 * q[0]]);
        const cd_vec3 nrm = cd_v3_cross(cd_v3_sub(cd_v3_load(&inst->skin_to[3 * q[1]]), a),
                                        cd_v3_sub(cd_v3_load(&inst->skin_to[3 * q[2]]), a));
        for (int k = 0; k < 3; k++)
            cd_v3_store(&out[3 * q[k]], cd_v3_add(cd_v3_load(&out[3 * q[k]]), nrm));
    }
    for (uint32_t i = 0; i < n; i++)
        cd_v3_store(&out[3 * i], cd_v3_normalize_or(cd_v3_load(&out[3 * i]), cd_v3(0, 0, 0)));
}

bool cd_skin_reserve(cd_instance *inst)
{
    if (inst->skin_to != NULL)
        return true;
    const size_t bytes = sizeof(float) * 3u * inst->particle_count;
    inst->skin_from = malloc(bytes);
    inst->skin_to = malloc(bytes);
    inst->skin_normal = malloc(bytes);
    inst->skin_now = malloc(bytes);
    bool ok = inst->skin_from && inst->skin_to && inst->skin_normal && inst->skin_now;
    if (ok && inst->triangles == NULL) { /* the grid's triangles are implicit */
        const uint32_t m = cd_instance_triangles(inst, NULL, 0);
        inst->skin_triangles = malloc(sizeof(uint32_t) * 3u * (m ? m : 1));
        ok = inst->skin_triangles != NULL;
        if (ok)
            inst->skin_triangle_count = cd_instance_triangles(inst, inst->skin_triangles, m);
    }
    if (!ok) {
        free(inst->skin_from);
        free(inst->skin_to);
        free(inst->skin_normal);
        free(inst->skin_now);
        free(inst->skin_triangles);
        inst->skin_from = inst->skin_to = inst->skin_normal = inst->skin_now = NULL;
        inst->skin_triangles = NULL;
    }
    return ok;
}

cd_status cd_instance_skin(cd_instance *inst, const float *positions, const float *normals,
                           cd_field_fault *fault)
{
    const uint32_t n = inst->particle_count;
    for (uint32_t i = 0; i < n; i++) {
        char field[48];
        if (!cd_vec3_in_world(cd_v3_load(&positions[3 * i]))) {
            snprintf(field, sizeof field, "positions[%u]", (unsigned)i);
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, field,
                                "outside the world box (|x|, |y|, |z| <= %g m)",
                                (double)CD_WORLD_EXTENT);
        }
        if (normals != NULL && !cd_vec3_is_valid(cd_v3_load(&normals[3 * i]))) {
            snprintf(field, sizeof field, "normals[%u]", (unsigned)i);
            return cd_fault_set(fault, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, field,
                                "must be 3 finite numbers");
        }
    }
    const bool first = !inst->skinned;
    if (!cd_skin_reserve(inst))
        return cd_fault_set(fault, CD_E_INTERNAL, CD_FAULT_MEMORY, "positions", "out of memory");
    /* Kept in the particles' local frame (anchor.c). */
    for (uint32_t i = 0; i < n; i++)
        cd_v3_store(&inst->skin_to[3 * i], cd_to_local(inst, cd_v3_load(&positions[3 * i])));
    if (first)
        memcpy(inst->skin_from, inst->skin_to, sizeof(float) * 3u * n);
    if (normals != NULL) {
        for (uint32_t i = 0; i < n; i++)
            cd_v3_store(&inst->skin_normal[3 * i],
                        cd_v3_normalize_or(cd_v3_load(&normals[3 * i]), cd_v3(0, 0, 0)));
    } else {
        skin_normals(inst);
    }
    inst->skinned = true;
    if (first) {
        cd_refresh_masses(inst); /* maxDistance 0 makes particles kinematic */
        place_within_limits(inst);
        /* Kinematic particles start on their skin, at rest. */
        for (uint32_t i = 0; i < n; i++)
            if (cd_particle_kinematic(inst, i) && !inst->pinned[i]) {
                cd_v3_store(&inst->pos[3 * i], cd_v3_load(&inst->skin_to[3 * i]));
                cd_v3_store(&inst->prev[3 * i], cd_v3_load(&inst->skin_to[3 * i]));
            }
    }
    cd_instance_wake(inst);
    return CD_OK;
}

/* ---- stages ---- */

/* This substep's skinned positions, and the kinematic particles on them. */
static void move_skin_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    const float t = ((const cd_substep *)ctx)->t1;
    uint32_t begin, end;
    cd_particle_block(inst, block, &begin, &end);
    for (uint32_t i = begin; i < end; i++) {
        const cd_vec3 from = cd_v3_load(&inst->skin_from[3 * i]);
        const cd_vec3 s = cd_v3_add(from, cd_v3_scale(cd_v3_sub(cd_v3_load(&inst->skin_to[3 * i]), from), t));
        cd_v3_store(&inst->skin_now[3 * i], s);
        if (inst->inv_mass[i] == 0.0f && !inst->pinned[i] && cd_particle_kinematic(inst, i)) {
            cd_v3_store(&inst->prev[3 * i], cd_v3_load(&inst->pos[3 * i]));
            cd_v3_store(&inst->pos[3 * i], s);
        }
    }
}

void cd_stage_move_skin(cd_instance *inst, const cd_substep *sub)
{
    if (inst->skinned)
        cd_team_run(inst, move_skin_block, sub, cd_particle_blocks(inst));
}

static void limit_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    (void)ctx;
    uint32_t begin, end;
    cd_particle_block(inst, block, &begin, &end);
    for (uint32_t i = begin; i < end; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue; /* pinned or kinematic: placed by their stage */
        const cd_vec3 p = cd_v3_load(&inst->pos[3 * i]);
        const cd_vec3 move = limit_particle(inst, i, p, cd_v3_load(&inst->skin_now[3 * i]),
                                            cd_v3_load(&inst->skin_normal[3 * i]));
        cd_v3_store(&inst->pos[3 * i], cd_v3_add(p, move));
    }
}

void cd_stage_skin_limits(cd_instance *inst)
{
    if (limited(inst))
        cd_team_run(inst, limit_block, NULL, cd_particle_blocks(inst));
}

void cd_stage_finish_skin(cd_instance *inst)
{
    if (inst->skinned)
        memcpy(inst->skin_from, inst->skin_to, sizeof(float) * 3u * inst->particle_count);
}

size_t cd_skin_memory(const cd_instance *inst)
{
    size_t bytes = 0;
    for (int k = 0; k < CD_PAINT_COUNT; k++)
        bytes += inst->paint[k] ? sizeof(float) * inst->particle_count : 0;
    if (inst->coloured.compliance_scale != NULL)
        bytes += sizeof(float) * inst->coloured.slots;
    if (inst->skin_to != NULL)
        bytes += 4 * sizeof(float) * 3u * inst->particle_count +
                 sizeof(uint32_t) * 3u * inst->skin_triangle_count;
    return bytes;
}

void cd_skin_free(cd_instance *inst)
{
    for (int k = 0; k < CD_PAINT_COUNT; k++)
        free(inst->paint[k]);
    free(inst->skin_from);
    free(inst->skin_to);
    free(inst->skin_normal);
    free(inst->skin_now);
    free(inst->skin_triangles);
}
