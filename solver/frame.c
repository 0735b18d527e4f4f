/* Characters that run, spin and teleport.
 *
 * Inertia (NvCloth's linear and angular inertia, Chaos' velocity scales):
 * a garment is simulated in world space, so a sprinting or spinning
 * character drags its cape through the air with all its momentum, and fast
 * motion stretches it against its skin. With an inertia frame (a transform
 * of the instance: the character's root or torso) and `linearInertia` /
 * `angularInertia` below 1, each step first carries every free particle
 * (position and Verlet history alike, so no velocity is added) by the
 * share 1 - inertia of the frame's motion since the last step: a rotation
 * about the frame's old position by (1 - angularInertia) of the frame's
 * turn, then (1 - linearInertia) of its translation. Inertia 1 (the
 * default) is plain world space; 0 carries the cloth rigidly with the
 * frame, as if simulated in its local space with no fictitious forces.
 * Pinned and skinned particles are not carried: they follow their targets.
 *
 * Teleport: the whole instance moved rigidly (particles and their history,
 * pins, the skin, the transforms, attached colliders, the inertia frame):
 * the next step sees no motion at all. Colliders not attached to a
 * transform are the world's (a floor) and stay. */
#include <math.h>

#include "internal.h"
#include "vec3.h"

/* q scaled to `share` of its angle (share in [0, 1]): slerp from identity. */
static cd_quat scaled_turn(cd_quat q, float share)
{
    if (q.w < 0.0f)
        q = (cd_quat){-q.x, -q.y, -q.z, -q.w}; /* the short way round */
    const float s = sqrtf(q.x * q.x + q.y * q.y + q.z * q.z);
    if (!(s > 1e-9f))
        return (cd_quat){0.0f, 0.0f, 0.0f, 1.0f};
    const float half = atan2f(s, q.w) * share;
    const float k = sinf(half) / s;
    return (cd_quat){q.x * k, q.y * k, q.z * k, cosf(half)};
}

static cd_vec3 moved(cd_vec3 p, cd_vec3 pivot, cd_quat q, cd_vec3 t)
{
    return cd_v3_add(cd_v3_add(pivot, cd_quat_rotate(q, cd_v3_sub(p, pivot))), t);
}

/* p -> pivot + q (p - pivot) + t for particle i's position and history. */
static void move_particle(cd_instance *inst, uint32_t i, cd_vec3 pivot, cd_quat q, cd_vec3 t)
{
    for (float *p = &inst->pos[3 * i];; p = &inst->prev[3 * i]) {
        const cd_vec3 r = cd_quat_rotate(q, cd_v3_sub(cd_v3_load(p), pivot));
        cd_v3_store(p, cd_v3_add(cd_v3_add(pivot, r), t));
        if (p == &inst->prev[3 * i])
            break;
    }
}

void cd_stage_carry(cd_instance *inst)
{
    const cd_cloth_def *d = &inst->def;
    if (inst->inertia_frame == 0)
        return;
    const cd_transform *f = &inst->transforms[inst->inertia_frame - 1];
    const cd_vec3 from = inst->frame_position;
    const cd_quat turn = cd_quat_multiply(f->rotation, cd_quat_conjugate(inst->frame_rotation));
    inst->frame_position = f->position;
    inst->frame_rotation = f->rotation;
    if (d->linear_inertia >= 1.0f && d->angular_inertia >= 1.0f)
        return;
    const cd_quat q = scaled_turn(turn, 1.0f - d->angular_inertia);
    const cd_vec3 t = cd_v3_scale(cd_v3_sub(f->position, from), 1.0f - d->linear_inertia);
    const cd_vec3 pivot = cd_to_local(inst, from); /* particles are local (anchor.c) */
    for (uint32_t i = 0; i < inst->particle_count; i++)
        if (inst->inv_mass[i] > 0.0f)
            move_particle(inst, i, pivot, q, t);
    /* What leads particles over the substeps starts carried too: attached
     * pins and the skin travel from their carried start to their new
     * targets. Left behind, they pulled a cloth carried at once back along
     * the path in every substep but the last (0.65 m of drift in ten
     * steps of a 12 m/s sprint at 6 substeps). */
    for (uint32_t k = 0; k < inst->pin_count; k++)
        if (inst->pins[k].attachment != 0)
            inst->pins[k].from = moved(inst->pins[k].from, from, q, t);
    for (uint32_t i = 0; inst->skinned && i < inst->particle_count; i++)
        cd_v3_store(&inst->skin_from[3 * i],
                    moved(cd_v3_load(&inst->skin_from[3 * i]), pivot, q, t));
}

cd_status cd_instance_set_inertia_frame(cd_instance *inst, uint32_t handle)
{
    if (handle > CD_MAX_TRANSFORMS || (handle != 0 && inst->transforms[handle - 1].name[0] == '\0'))
        return CD_E_INVALID_ARGUMENT;
    if (handle == inst->inertia_frame)
        return CD_OK; /* named again with each pose: its motion keeps counting */
    inst->inertia_frame = handle;
    if (handle != 0) { /* motion counts from now */
        inst->frame_position = inst->transforms[handle - 1].position;
        inst->frame_rotation = inst->transforms[handle - 1].rotation;
    }
    return CD_OK;
}

uint32_t cd_instance_inertia_frame(const cd_instance *inst)
{
    return inst->inertia_frame;
}

cd_status cd_instance_teleport(cd_instance *inst, cd_vec3 translation, cd_quat rotation,
                               cd_vec3 pivot)
{
    const float qn = sqrtf(rotation.x * rotation.x + rotation.y * rotation.y +
                           rotation.z * rotation.z + rotation.w * rotation.w);
    if (!cd_vec3_is_valid(translation) || !cd_vec3_in_world(pivot) || !(qn > 1e-6f) ||
        !isfinite(qn))
        return CD_E_INVALID_ARGUMENT;
    const cd_quat q = {rotation.x / qn, rotation.y / qn, rotation.z / qn, rotation.w / qn};
    /* Everything must land inside the world box, or nothing moves. */
    for (uint32_t i = 0; i < inst->particle_count; i++)
        if (!cd_vec3_in_world(
                moved(cd_to_world(inst, cd_v3_load(&inst->pos[3 * i])), pivot, q, translation)))
            return CD_E_INVALID_ARGUMENT;
    /* Particles and the skin are local (anchor.c), pins and transforms the
     * world's. The whole metres of the translation move the anchor, so the
     * particles move only by the rest: a jump of 40 m added to local
     * coordinates would round them to 4e-6 m, and their velocities by as
     * much over a substep. */
    const cd_vec3 whole = cd_v3(roundf(translation.x), roundf(translation.y), roundf(translation.z));
    const cd_vec3 rest = cd_v3_sub(translation, whole);
    const cd_vec3 local_pivot = cd_to_local(inst, pivot);
    for (uint32_t i = 0; i < inst->particle_count; i++)
        move_particle(inst, i, local_pivot, q, rest);
    for (uint32_t k = 0; k < inst->pin_count; k++) {
        cd_pin *pin = &inst->pins[k];
        pin->from = moved(pin->from, pivot, q, translation);
        pin->to = moved(pin->to, pivot, q, translation);
    }
    for (uint32_t i = 0; inst->skinned && i < inst->particle_count; i++) {
        float *targets[2] = {&inst->skin_from[3 * i], &inst->skin_to[3 * i]};
        for (int k = 0; k < 2; k++)
            cd_v3_store(targets[k], moved(cd_v3_load(targets[k]), local_pivot, q, rest));
        cd_v3_store(&inst->skin_normal[3 * i],
                    cd_quat_rotate(q, cd_v3_load(&inst->skin_normal[3 * i])));
    }
    /* Before the transforms re-place their pins, which converts to local. */
    inst->anchor = cd_v3_add(inst->anchor, whole);
    for (uint32_t h = 1; h <= CD_MAX_TRANSFORMS; h++) {
        cd_transform *t = &inst->transforms[h - 1];
        if (t->name[0] == '\0')
            continue;
        t->position = moved(t->position, pivot, q, translation);
        t->rotation = cd_quat_multiply(q, t->rotation);
        cd_follow_transform(inst, h);
    }
    for (uint32_t k = 0; k < inst->collider_slots; k++) {
        cd_collider *c = &inst->colliders[k];
        if (c->active && c->attachment != 0)
            c->from = c->pose; /* arrived: no sweep through the teleport */
    }
    for (uint32_t k = 0; k < inst->pin_count; k++)
        inst->pins[k].from = inst->pins[k].to;
    if (inst->inertia_frame != 0) {
        inst->frame_position = inst->transforms[inst->inertia_frame - 1].position;
        inst->frame_rotation = inst->transforms[inst->inertia_frame - 1].rotation;
    }
    cd_anchor_follow(inst); /* a turn about a far pivot: the frame comes along */
    cd_instance_wake(inst);
    return CD_OK;
}
