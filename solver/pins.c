/* Pins, named transforms (attachments) and long-range tethers.
 *
 * A pin holds a particle at a target. Moving a pin (or the transform it is
 * attached to) does not teleport it for the solver: over the next step the
 * particle travels from where the last step left it to the new target,
 * substep by substep, so the cloth sees a smooth kinematic motion (a cape
 * follows shoulders that move every tick). Queries see the new target at
 * once.
 *
 * Tethers (NvCloth's long-range constraints, Jolt's LRA): every free
 * particle may not get farther from its nearest pin (nearest in the rest
 * shape) than their rest distance times tether_scale. One unilateral
 * constraint per particle bounds the stretch of a hanging cloth whatever
 * the iteration count. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

/* ---- pins -------------------------------------------------------------- */

static cd_pin *find_pin(cd_instance *inst, uint32_t particle)
{
    for (uint32_t i = 0; i < inst->pin_count; i++)
        if (inst->pins[i].particle == particle)
            return &inst->pins[i];
    return NULL;
}

/* The pin of `particle`, created if needed; NULL on out of memory. */
static cd_pin *get_or_add_pin(cd_instance *inst, uint32_t particle)
{
    cd_pin *pin = find_pin(inst, particle);
    if (pin != NULL)
        return pin;
    if (inst->pin_count == inst->pin_cap) {
        uint32_t cap = inst->pin_cap ? inst->pin_cap * 2 : 8;
        cd_pin *grown = realloc(inst->pins, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        inst->pins = grown;
        inst->pin_cap = cap;
    }
    /* Targets are the world's (anchor.c); the particle stays where it is. */
    const cd_vec3 here = cd_v3_load(&inst->pos[3 * particle]);
    const cd_vec3 target = cd_to_world(inst, here);
    pin = &inst->pins[inst->pin_count++];
    *pin = (cd_pin){.particle = particle, .attachment = 0, .from = target, .to = target};
    inst->inv_mass[particle] = 0.0f;
    inst->pinned[particle] = 1;
    /* A newly pinned particle carries no velocity of its own. */
    cd_v3_store(&inst->prev[3 * particle], here);
    inst->tethers_dirty = true;
    return pin;
}

static void place_pin(cd_instance *inst, cd_pin *pin, cd_vec3 target)
{
    pin->to = target;
    cd_v3_store(&inst->pos[3 * pin->particle], cd_to_local(inst, target));
}

cd_status cd_instance_pin(cd_instance *inst, uint32_t particle, const cd_vec3 *position)
{
    if (particle >= inst->particle_count)
        return CD_E_INVALID_ARGUMENT;
    /* Non-finite, or beyond the guard's box where every step would trip it. */
    if (position != NULL && !cd_vec3_in_world(*position))
        return CD_E_INVALID_ARGUMENT;
    cd_pin *pin = get_or_add_pin(inst, particle);
    if (pin == NULL)
        return CD_E_INTERNAL;
    pin->attachment = 0;
    if (position != NULL)
        place_pin(inst, pin, *position);
    cd_instance_wake(inst);
    return CD_OK;
}

cd_status cd_instance_unpin(cd_instance *inst, uint32_t particle)
{
    if (particle >= inst->particle_count)
        return CD_E_INVALID_ARGUMENT;
    cd_pin *pin = find_pin(inst, particle);
    if (pin != NULL) {
        *pin = inst->pins[--inst->pin_count];
        inst->tethers_dirty = true;
    }
    inst->inv_mass[particle] = inst->own_inv_mass[particle];
    inst->pinned[particle] = 0;
    cd_instance_wake(inst);
    return CD_OK;
}

void cd_stage_move_pins(cd_instance *inst, const cd_substep *sub)
{
    for (uint32_t i = 0; i < inst->pin_count; i++) {
        const cd_pin *pin = &inst->pins[i];
        float *p = &inst->pos[3 * pin->particle];
        cd_v3_store(&inst->prev[3 * pin->particle], cd_v3_load(p));
        const cd_vec3 at = cd_v3_add(pin->from, cd_v3_scale(cd_v3_sub(pin->to, pin->from), sub->t1));
        cd_v3_store(p, cd_to_local(inst, at));
    }
}

void cd_stage_finish_pins(cd_instance *inst)
{
    for (uint32_t i = 0; i < inst->pin_count; i++) {
        cd_pin *pin = &inst->pins[i];
        pin->from = pin->to;
        /* exact, no rounding drift */
        cd_v3_store(&inst->pos[3 * pin->particle], cd_to_local(inst, pin->to));
    }
}

/* ---- transforms ---------------------------------------------------------- */

cd_vec3 cd_transform_point(const cd_transform *t, cd_vec3 local)
{
    return cd_v3_add(t->position, cd_quat_rotate(t->rotation, local));
}

cd_vec3 cd_transform_direction(const cd_transform *t, cd_vec3 local)
{
    return cd_quat_rotate(t->rotation, local);
}

uint32_t cd_instance_find_transform(const cd_instance *inst, const char *name)
{
    if (name == NULL || name[0] == '\0')
        return 0;
    for (uint32_t i = 0; i < CD_MAX_TRANSFORMS; i++)
        if (strcmp(inst->transforms[i].name, name) == 0)
            return i + 1;
    return 0;
}

/* Moves every pin and collider attached to transform `handle`. */
void cd_follow_transform(cd_instance *inst, uint32_t handle)
{
    const cd_transform *t = &inst->transforms[handle - 1];
    for (uint32_t i = 0; i < inst->pin_count; i++) {
        cd_pin *pin = &inst->pins[i];
        if (pin->attachment == handle)
            place_pin(inst, pin, cd_transform_point(t, pin->local));
    }
    for (uint32_t k = 0; k < inst->collider_slots; k++) {
        cd_collider *c = &inst->colliders[k];
        if (c->active && c->attachment == handle)
            cd_collider_place(inst, c);
    }
}

cd_status cd_instance_set_transform(cd_instance *inst, const char *name, cd_vec3 position,
                                    cd_quat rotation, uint32_t *out_handle)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len >= CD_TRANSFORM_NAME_MAX || !cd_vec3_in_world(position))
        return CD_E_INVALID_ARGUMENT;
    float qn = sqrtf(rotation.x * rotation.x + rotation.y * rotation.y +
                     rotation.z * rotation.z + rotation.w * rotation.w);
    if (!(qn > 1e-6f) || !isfinite(qn))
        return CD_E_INVALID_ARGUMENT;
    rotation = (cd_quat){rotation.x / qn, rotation.y / qn, rotation.z / qn, rotation.w / qn};

    uint32_t handle = cd_instance_find_transform(inst, name);
    if (handle == 0) {
        for (uint32_t i = 0; i < CD_MAX_TRANSFORMS && handle == 0; i++)
            if (inst->transforms[i].name[0] == '\0')
                handle = i + 1;
        if (handle == 0)
            return CD_E_LIMIT_EXCEEDED;
        memcpy(inst->transforms[handle - 1].name, name, len + 1);
    }
    cd_transform *t = &inst->transforms[handle - 1];
    t->position = position;
    t->rotation = rotation;
    cd_follow_transform(inst, handle);
    cd_instance_wake(inst);
    if (out_handle != NULL)
        *out_handle = handle;
    return CD_OK;
}

cd_status cd_instance_attach(cd_instance *inst, uint32_t particle, uint32_t handle,
                             const cd_vec3 *local)
{
    if (particle >= inst->particle_count || handle < 1 || handle > CD_MAX_TRANSFORMS ||
        inst->transforms[handle - 1].name[0] == '\0')
        return CD_E_INVALID_ARGUMENT;
    if (local != NULL && !cd_vec3_in_world(*local))
        return CD_E_INVALID_ARGUMENT;
    const cd_transform *t = &inst->transforms[handle - 1];
    cd_vec3 offset;
    if (local != NULL) {
        offset = *local;
    } else {
        cd_vec3 here = cd_to_world(inst, cd_v3_load(&inst->pos[3 * particle]));
        offset = cd_quat_rotate(cd_quat_conjugate(t->rotation), cd_v3_sub(here, t->position));
    }
    cd_vec3 target = cd_transform_point(t, offset);
    if (!cd_vec3_in_world(target))
        return CD_E_INVALID_ARGUMENT;
    cd_pin *pin = get_or_add_pin(inst, particle);
    if (pin == NULL)
        return CD_E_INTERNAL;
    pin->attachment = handle;
    pin->local = offset;
    place_pin(inst, pin, target);
    cd_instance_wake(inst);
    return CD_OK;
}

/* ---- tethers ------------------------------------------------------------- */

/* The stretch a tether allows beyond tetherScale when the stretch is XPBD
 * (compliance a > 0, m/N): a a M g / l, the strain of one link of rest
 * length l holding the whole cloth's weight M g, more than any link of a
 * hanging cloth carries. A tether at the rest distance would cancel the
 * compliance (a truss hung from its top dropped 0.000 mm where a 1 mm
 * stretch was asked for); this one still stops the overshoot of fast
 * motion. Seed stiffness and compliance 0 mean "inextensible": none. */
static float tether_slack(const cd_instance *inst)
{
    const cd_cloth_def *d = &inst->def;
    if (!(d->stretch_compliance > 0.0f))
        return 0.0f;
    const float link = cd_is_grid(inst) ? d->spacing : inst->max_self_distance;
    const float g = sqrtf(d->gravity.x * d->gravity.x + d->gravity.y * d->gravity.y +
                          d->gravity.z * d->gravity.z);
    return link > 0.0f ? d->stretch_compliance * d->mass * g / link : 0.0f;
}

/* ---- geodesic distances over a mesh cloth's edges ---- */

/* A binary min-heap of (distance, particle), ties broken by particle
 * index: the search visits particles in a fixed order. */
static bool heap_less(cd_heap_entry a, cd_heap_entry b)
{
    return a.distance < b.distance || (a.distance == b.distance && a.particle < b.particle);
}

static void heap_push(cd_heap_entry *h, uint32_t *size, cd_heap_entry v)
{
    uint32_t i = (*size)++;
    while (i > 0 && heap_less(v, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static cd_heap_entry heap_pop(cd_heap_entry *h, uint32_t *size)
{
    const cd_heap_entry top = h[0], last = h[--(*size)];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *size)
            break;
        if (c + 1 < *size && heap_less(h[c + 1], h[c]))
            c++;
        if (!heap_less(h[c], last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*size > 0)
        h[i] = last;
    return top;
}

/* Dijkstra from every pin at once over the rest lengths of the edges:
 * each particle's distance along the cloth to its nearest pin, and that
 * pin (a cape's hem is tied to the shoulder it hangs from, not to the one
 * nearest through the neck cut-out). The graph holds the mesh's edges and
 * the shortcuts across them (mesh_cloth.c). An entry is pushed once per pin and
 * once per improvement, and an edge improves its far end at most once (a
 * particle is expanded once, when it leaves the queue at its final
 * distance): the queue, sized pins + edge ends when the mesh was built,
 * never overflows and the search allocates nothing. */
#define GEODESIC_DETOUR 1.1f

static void geodesic_tethers(cd_instance *inst, float scale)
{
    const uint32_t n = inst->particle_count;
    float *dist = inst->geodesic;
    for (uint32_t i = 0; i < n; i++)
        dist[i] = INFINITY;
    uint32_t size = 0;
    for (uint32_t p = 0; p < n; p++)
        if (inst->pinned[p]) {
            dist[p] = 0.0f;
            inst->tether_anchor[p] = p;
            heap_push(inst->heap, &size, (cd_heap_entry){0.0f, p});
        }
    while (size > 0) {
        const cd_heap_entry top = heap_pop(inst->heap, &size);
        const uint32_t v = top.particle;
        if (top.distance > dist[v])
            continue; /* improved since it was queued */
        for (uint32_t e = inst->edge_start[v]; e < inst->edge_start[v + 1]; e++) {
            const uint32_t w = inst->edge_to[e];
            const float d = dist[v] + inst->edge_length[e];
            if (!(d < dist[w]))
                continue;
            dist[w] = d;
            inst->tether_anchor[w] = inst->tether_anchor[v];
            heap_push(inst->heap, &size, (cd_heap_entry){d, w});
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        if (inst->pinned[i] || dist[i] == INFINITY) {
            inst->tether_anchor[i] = CD_NO_ANCHOR;
            continue;
        }
        /* The graph's paths run up to 8% longer than straight lines over
         * flat cloth (mesh_cloth.c): when one is within 10% of the straight
         * line to its pin, nothing is in the way and the straight line is
         * the length (a rectangle's tethers are then the grid's); a longer
         * one goes around a hole or a cut, and is the length. */
        const cd_vec3 d = cd_v3_sub(cd_rest_position(inst, inst->tether_anchor[i]),
                                    cd_rest_position(inst, i));
        const float straight = cd_v3_length(d);
        const float along = dist[i] <= GEODESIC_DETOUR * straight ? straight : dist[i];
        inst->tether_length[i] = along * scale;
    }
}

void cd_rebuild_tethers(cd_instance *inst)
{
    inst->tethers_dirty = false;
    const float scale = inst->def.tether_scale * (1.0f + tether_slack(inst));
    const uint32_t n = inst->particle_count;
    for (uint32_t i = 0; i < n; i++)
        inst->tether_anchor[i] = CD_NO_ANCHOR;
    if (!inst->def.tethers || inst->pin_count == 0)
        return;
    if (inst->edge_start != NULL) {
        geodesic_tethers(inst, scale);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (inst->pinned[i])
            continue;
        cd_vec3 rest = cd_rest_position(inst, i);
        float best = INFINITY;
        uint32_t anchor = CD_NO_ANCHOR;
        /* Ties go to the lowest pin index in the pin list: deterministic. */
        for (uint32_t k = 0; k < inst->pin_count; k++) {
            cd_vec3 d = cd_v3_sub(cd_rest_position(inst, inst->pins[k].particle), rest);
            float d2 = cd_v3_dot(d, d);
            if (d2 < best) {
                best = d2;
                anchor = inst->pins[k].particle;
            }
        }
        inst->tether_anchor[i] = anchor;
        inst->tether_length[i] = sqrtf(best) * scale;
    }
}

static void tether_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    (void)ctx;
    float *restrict pos = inst->pos;
    const uint32_t *restrict anchor = inst->tether_anchor;
    const float *restrict length = inst->tether_length;
    uint32_t begin, end;
    cd_particle_block(inst, block, &begin, &end);
    uint32_t i = begin;
#ifdef CD_HAVE_AVX2_KERNELS
    if (cd_solver_path_has_avx2()) /* the same bits, 8 at a time */
        i = cd_tethers_avx2(pos, anchor, length, begin, end);
#endif
    for (; i < end; i++) {
        const uint32_t a = anchor[i];
        if (a == CD_NO_ANCHOR)
            continue;
        float *p = &pos[3 * i];
        const float *q = &pos[3 * a]; /* a pinned particle: no block moves it */
        const float dx = p[0] - q[0], dy = p[1] - q[1], dz = p[2] - q[2];
        const float d2 = dx * dx + dy * dy + dz * dz;
        const float limit = length[i];
        if (d2 <= limit * limit)
            continue;
        const float s = limit / sqrtf(d2); /* only the free end moves */
        p[0] = q[0] + dx * s;
        p[1] = q[1] + dy * s;
        p[2] = q[2] + dz * s;
    }
}

void cd_stage_solve_tethers(cd_instance *inst)
{
    /* A material's stretch is its Young's modulus' (material.c). */
    if (!inst->def.tethers || inst->pin_count == 0 || cd_material_active(inst))
        return;
    cd_team_run(inst, tether_block, NULL, cd_particle_blocks(inst));
}
