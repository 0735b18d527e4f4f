/* Collision, once per substep: every free particle closer to a collider's
 * surface than `thickness` (or inside it) is moved out along the surface
 * normal to that distance, then friction acts on its motion relative to
 * the collider, and coupled colliders are handed the momentum the particle
 * gained.
 *   sphere   surface at radius from the centre
 *   capsule  surface at radius from a segment of length height - 2 radius
 *            along its axis (height counts both caps)
 *   plane    the normal's side is outside
 * Colliders move from last step's pose to this step's over the substeps,
 * so a fast collider sweeps instead of jumping through the cloth.
 *
 * Friction (position-based, as in Macklin et al. 2014): with d the depth
 * just corrected and t the tangential part of the particle's motion over
 * the substep relative to the collider's, static friction cancels t when
 * |t| < static_friction d, kinetic friction removes up to friction d of it.
 *
 * Soft bodies meet their colliders in every solver iteration as well
 * (cd_stage_contacts), not only after them: solved after the iterations
 * only, the floor leaves the bottom of a resting body squashed at the end
 * of each substep, the next substep's constraints push it back, and that
 * jitter, through Gauss-Seidel's order, pumps the body into a steady spin
 * about the vertical on a frictionless floor (a smooth ball of resolution
 * 5: 0.19 m/s, never asleep; in the iterations: 0.002 m/s). The depth
 * corrected so far in the substep is kept per particle (contact_depth), so
 * static friction is bounded by the whole substep's d, and kinetic
 * friction, taken a share at each correction, sums to friction x d.
 *
 * Coupling (seed 003): a particle moved by delta in a substep of length h
 * has had its momentum changed by m delta / h (m: the particle's own mass,
 * the one its dynamics use, unless particle_mass overrides it); the
 * collider is handed -coupling m delta / h, and its moment about the
 * collider's position. */
#include <string.h>

#include "internal.h"
#include "vec3.h"

typedef struct contact_frame {
    cd_pose pose;
    cd_vec3 motion; /* the collider's displacement over this substep */
    float reach;    /* radius + thickness (sphere, capsule) */
    float half;     /* capsule: half the axis segment */
} contact_frame;

static cd_pose pose_at(const cd_collider *c, float t)
{
    cd_pose p;
    p.position = cd_v3_add(c->from.position,
                           cd_v3_scale(cd_v3_sub(c->pose.position, c->from.position), t));
    cd_vec3 n = cd_v3_add(c->from.normal, cd_v3_scale(cd_v3_sub(c->pose.normal, c->from.normal), t));
    p.normal = cd_v3_normalize_or(n, c->pose.normal);
    return p;
}

/* Distance past the surface (> 0 when too close) and the outward normal. */
static float penetration(const cd_collider *c, const contact_frame *f, float thickness, cd_vec3 x,
                         cd_vec3 *normal)
{
    cd_vec3 centre = f->pose.position;
    if (c->type == CD_COLLIDER_PLANE) {
        *normal = f->pose.normal;
        return thickness - cd_v3_dot(cd_v3_sub(x, centre), f->pose.normal);
    }
    cd_vec3 fallback = cd_v3(0, 1, 0);
    if (c->type == CD_COLLIDER_CAPSULE) {
        cd_vec3 axis = f->pose.normal;
        float t = cd_v3_dot(cd_v3_sub(x, centre), axis);
        t = t < -f->half ? -f->half : (t > f->half ? f->half : t);
        centre = cd_v3_add(centre, cd_v3_scale(axis, t));
        /* A particle on the axis leaves sideways, perpendicular to it. */
        cd_vec3 side = fabsf(axis.x) < 0.9f ? cd_v3(1, 0, 0) : cd_v3(0, 1, 0);
        fallback = cd_v3_normalize_or(cd_v3_sub(side, cd_v3_scale(axis, cd_v3_dot(side, axis))),
                                      cd_v3(0, 0, 1));
    }
    cd_vec3 d = cd_v3_sub(x, centre);
    float d2 = cd_v3_dot(d, d);
    if (d2 >= f->reach * f->reach)
        return -1.0f;
    float dist = sqrtf(d2);
    *normal = dist > 1e-12f ? cd_v3_scale(d, 1.0f / dist) : fallback;
    return f->reach - dist;
}

static void collide_one(cd_instance *inst, cd_collider *c, const cd_substep *sub,
                        uint32_t begin, uint32_t end)
{
    const float thickness = inst->def.thickness;
    contact_frame f;
    f.pose = pose_at(c, sub->t1);
    f.motion = cd_v3_sub(f.pose.position, pose_at(c, sub->t0).position);
    f.reach = c->radius + thickness;
    f.half = 0.5f * c->height - c->radius;
    if (f.half < 0.0f)
        f.half = 0.0f;
    const float coupled = c->coupling / sub->h; /* times each particle's mass */
    const float given_mass = inst->def.particle_mass; /* CD_UNSET: the particle's own */
    float *pushed = inst->contact_depth; /* soft bodies: depth so far this substep */

    for (uint32_t i = begin; i < end; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        float *p = &inst->pos[3 * i];
        cd_vec3 before = cd_v3_load(p), n;
        float depth = penetration(c, &f, thickness, before, &n);
        if (!(depth > 0.0f))
            continue;
        cd_vec3 x = cd_v3_add(before, cd_v3_scale(n, depth));
        const float substep_depth = pushed != NULL ? (pushed[i] += depth) : depth;
        if (c->static_friction > 0.0f || c->friction > 0.0f) {
            cd_vec3 rel = cd_v3_sub(cd_v3_sub(x, cd_v3_load(&inst->prev[3 * i])), f.motion);
            cd_vec3 t = cd_v3_sub(rel, cd_v3_scale(n, cd_v3_dot(rel, n)));
            float tl = cd_v3_length(t);
            if (tl < c->static_friction * substep_depth)
                x = cd_v3_sub(x, t);
            else if (tl > 0.0f && c->friction > 0.0f)
                x = cd_v3_sub(x, cd_v3_scale(t, fminf(c->friction * depth / tl, 1.0f)));
        }
        cd_v3_store(p, x);
        if (coupled > 0.0f) {
            const float m = given_mass > 0.0f ? given_mass : 1.0f / inst->own_inv_mass[i];
            cd_vec3 impulse = cd_v3_scale(cd_v3_sub(x, before), -coupled * m);
            c->impulse_linear = cd_v3_add(c->impulse_linear, impulse);
            c->impulse_angular = cd_v3_add(c->impulse_angular,
                                           cd_v3_cross(cd_v3_sub(x, f.pose.position), impulse));
        }
    }
}

/* A block: every collider, in slot order, over a range of particles (each
 * particle meets the colliders in the same order as in one pass). */
static void collide_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    uint32_t begin, end;
    cd_particle_block(inst, block, &begin, &end);
    for (uint32_t k = 0; k < inst->collider_slots; k++)
        if (inst->colliders[k].active)
            collide_one(inst, &inst->colliders[k], ctx, begin, end);
}

void cd_stage_begin_contacts(cd_instance *inst)
{
    if (inst->contact_depth != NULL)
        memset(inst->contact_depth, 0, sizeof(float) * inst->particle_count);
}

void cd_stage_contacts(cd_instance *inst, const cd_substep *sub)
{
    if (inst->contact_depth != NULL)
        cd_stage_collide(inst, sub);
}

void cd_stage_collide(cd_instance *inst, const cd_substep *sub)
{
    bool any = false, coupled = false;
    for (uint32_t k = 0; k < inst->collider_slots; k++) {
        any |= inst->colliders[k].active;
        coupled |= inst->colliders[k].active && inst->colliders[k].coupling > 0.0f;
    }
    if (!any)
        return;
    if (coupled) {
        /* Impulses are summed particle after particle: one pass, in order. */
        for (uint32_t k = 0; k < inst->collider_slots; k++)
            if (inst->colliders[k].active)
                collide_one(inst, &inst->colliders[k], sub, 0, inst->particle_count);
        return;
    }
    cd_team_run(inst, collide_block, sub, cd_particle_blocks(inst));
}
