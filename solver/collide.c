/* Collision, once per substep: every free particle closer to a collider's
 * surface than `thickness` (or inside it) is moved out along the surface
 * normal to that distance, then friction acts on its motion relative to
 * the collider, and coupled colliders are handed the momentum the particle
 * gained.
 *   sphere   surface at radius from the centre
 *   capsule  surface at radius from a segment of length height - 2 radius
 *            along its axis (height counts both caps)
 *   plane    the normal's side is outside
 *   tapered capsule  the convex hull of two spheres, radius at the -axis
 *            end and radius2 at the +axis end, their centres L = height -
 *            radius - radius2 apart (height counts both caps, as for the
 *            capsule). Its side is a cone whose slant is sin a = (radius -
 *            radius2) / L: the surface normal there leans along the axis,
 *            and a point is pushed out along that normal, not radially.
 *            Thickness inflates both spheres, which keeps the slant.
 *   box      half extents along its own axes, turned by its rotation; a
 *            point inside leaves through the nearest face, a point
 *            outside within thickness moves out from the nearest point
 *            of the box (corners and edges round off by thickness).
 * Colliders move from last step's pose to this step's over the substeps,
 * so a fast collider sweeps instead of jumping through the cloth (a box's
 * rotation is blended the short way round, normalised).
 *
 * Friction (position-based, as in Macklin et al. 2014): with d the depth
 * just corrected and t the tangential part of the particle's motion over
 * the substep relative to the collider's, static friction cancels t when
 * |t| < static_friction d, kinetic friction removes up to friction d of it.
 * The collider's motion is its centre's; a box's is its surface point's
 * (it has a whole rotation: a turning box drags what rests on its faces).
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
    cd_pose pose;   /* at the substep's end */
    cd_pose before; /* at its start (boxes: the motion of a surface point) */
    cd_vec3 motion; /* the collider's centre's displacement over this substep */
    cd_vec3 across; /* capsules: the way out of a point on the axis */
    float reach;    /* radius + thickness (sphere, capsule) */
    float half;     /* capsule: half the axis segment; tapered: half of L */
    /* Tapered capsule: the inflated end radii, the slant's sine and cosine
     * (s, c) and c L, the side's extent along it. A hull whose one sphere
     * holds the other is that sphere alone (solid = true). */
    float reach2, slant_s, slant_c, side_end;
    bool solid;
} contact_frame;

static cd_quat blend_rotation(cd_quat a, cd_quat b, float t)
{
    if (a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w < 0.0f)
        b = (cd_quat){-b.x, -b.y, -b.z, -b.w}; /* the short way round */
    cd_quat q = {a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t, a.z + (b.z - a.z) * t,
                 a.w + (b.w - a.w) * t};
    return cd_quat_normalize_or(q, b);
}

static cd_pose pose_at(const cd_collider *c, float t)
{
    cd_pose p;
    p.position = cd_v3_add(c->from.position,
                           cd_v3_scale(cd_v3_sub(c->pose.position, c->from.position), t));
    cd_vec3 n = cd_v3_add(c->from.normal, cd_v3_scale(cd_v3_sub(c->pose.normal, c->from.normal), t));
    p.normal = cd_v3_normalize_or(n, c->pose.normal);
    p.rotation = c->type == CD_COLLIDER_BOX ? blend_rotation(c->from.rotation, c->pose.rotation, t)
                                            : c->pose.rotation;
    return p;
}

/* A unit vector perpendicular to the unit `axis`: the way out of a point
 * on the axis. */
static cd_vec3 across(cd_vec3 axis)
{
    cd_vec3 side = fabsf(axis.x) < 0.9f ? cd_v3(1, 0, 0) : cd_v3(0, 1, 0);
    return cd_v3_normalize_or(cd_v3_sub(side, cd_v3_scale(axis, cd_v3_dot(side, axis))),
                              cd_v3(0, 0, 1));
}

/* Depth past a sphere of radius `reach` about `centre`; `fallback` is the
 * way out of its very centre. */
static float sphere_depth(cd_vec3 centre, float reach, cd_vec3 x, cd_vec3 fallback,
                          cd_vec3 *normal)
{
    cd_vec3 d = cd_v3_sub(x, centre);
    float d2 = cd_v3_dot(d, d);
    if (d2 >= reach * reach)
        return -1.0f;
    float dist = sqrtf(d2);
    *normal = dist > 1e-12f ? cd_v3_scale(d, 1.0f / dist) : fallback;
    return reach - dist;
}

/* The tapered capsule, in the plane of the axis and the point: with y the
 * point's height above the -axis sphere's centre A, r its distance from
 * the axis and (s, c) the slant, the side's outward normal is c r^ + s
 * axis and a point's foot on the side's line sits at u = c y - s r along
 * it: u < 0 is nearest to A's sphere, u > c L to B's, and between them
 * the signed distance to the hull is c r + s y - reach (exact inside as
 * well: a convex hull's nearest boundary point keeps the point's u). */
static float tapered_depth(const contact_frame *f, cd_vec3 x, cd_vec3 *normal)
{
    const cd_vec3 axis = f->pose.normal;
    const cd_vec3 a = cd_v3_sub(f->pose.position, cd_v3_scale(axis, f->half));
    const cd_vec3 b = cd_v3_add(f->pose.position, cd_v3_scale(axis, f->half));
    if (f->solid) /* one sphere holds the other: the bigger one alone */
        return f->reach >= f->reach2 ? sphere_depth(a, f->reach, x, f->across, normal)
                                     : sphere_depth(b, f->reach2, x, f->across, normal);
    const cd_vec3 d = cd_v3_sub(x, a);
    const float y = cd_v3_dot(d, axis);
    const cd_vec3 radial = cd_v3_sub(d, cd_v3_scale(axis, y));
    const float r = cd_v3_length(radial);
    const cd_vec3 out = r > 1e-12f ? cd_v3_scale(radial, 1.0f / r) : f->across;
    const float u = f->slant_c * y - f->slant_s * r;
    if (u < 0.0f)
        return sphere_depth(a, f->reach, x, out, normal);
    if (u > f->side_end)
        return sphere_depth(b, f->reach2, x, out, normal);
    const float depth = f->reach - (f->slant_c * r + f->slant_s * y);
    if (!(depth > 0.0f))
        return -1.0f;
    *normal = cd_v3_add(cd_v3_scale(out, f->slant_c), cd_v3_scale(axis, f->slant_s));
    return depth;
}

/* The box in its own frame: outside, the nearest point of the box, and a
 * contact only within thickness; inside, out through the nearest face
 * (the first of x, y, z on a tie). */
static float box_depth(const cd_collider *c, const contact_frame *f, float thickness, cd_vec3 x,
                       cd_vec3 *normal)
{
    const cd_quat q = f->pose.rotation;
    const cd_vec3 p = cd_quat_rotate(cd_quat_conjugate(q), cd_v3_sub(x, f->pose.position));
    const float h[3] = {c->half_extents.x, c->half_extents.y, c->half_extents.z};
    const float v[3] = {p.x, p.y, p.z};
    float e[3];
    for (int i = 0; i < 3; i++)
        e[i] = v[i] > h[i] ? v[i] - h[i] : (v[i] < -h[i] ? v[i] + h[i] : 0.0f);
    const float e2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
    if (e2 > 0.0f) {
        if (e2 >= thickness * thickness)
            return -1.0f;
        const float dist = sqrtf(e2);
        *normal = cd_quat_rotate(q, cd_v3(e[0] / dist, e[1] / dist, e[2] / dist));
        return thickness - dist;
    }
    int axis = 0;
    float inside = h[0] - fabsf(v[0]);
    for (int i = 1; i < 3; i++) {
        if (h[i] - fabsf(v[i]) < inside) {
            inside = h[i] - fabsf(v[i]);
            axis = i;
        }
    }
    float n[3] = {0, 0, 0};
    n[axis] = v[axis] < 0.0f ? -1.0f : 1.0f;
    *normal = cd_quat_rotate(q, cd_v3(n[0], n[1], n[2]));
    return thickness + inside;
}

/* Distance past the surface (> 0 when too close) and the outward normal. */
static float penetration(const cd_collider *c, const contact_frame *f, float thickness, cd_vec3 x,
                         cd_vec3 *normal)
{
    cd_vec3 centre = f->pose.position;
    switch (c->type) {
    case CD_COLLIDER_PLANE:
        *normal = f->pose.normal;
        return thickness - cd_v3_dot(cd_v3_sub(x, centre), f->pose.normal);
    case CD_COLLIDER_TAPERED_CAPSULE:
        return tapered_depth(f, x, normal);
    case CD_COLLIDER_BOX:
        return box_depth(c, f, thickness, x, normal);
    case CD_COLLIDER_CAPSULE: {
        cd_vec3 axis = f->pose.normal;
        float t = cd_v3_dot(cd_v3_sub(x, centre), axis);
        t = t < -f->half ? -f->half : (t > f->half ? f->half : t);
        centre = cd_v3_add(centre, cd_v3_scale(axis, t));
        /* A particle on the axis leaves sideways, perpendicular to it. */
        return sphere_depth(centre, f->reach, x, f->across, normal);
    }
    case CD_COLLIDER_SPHERE:
    case CD_COLLIDER_TYPE_COUNT:
        break;
    }
    return sphere_depth(centre, f->reach, x, cd_v3(0, 1, 0), normal);
}

/* The substep's frame of one collider: its poses and its shape's numbers. */
static void frame_for(const cd_instance *inst, const cd_collider *c, const cd_substep *sub,
                      float thickness, contact_frame *f)
{
    *f = (contact_frame){.pose = pose_at(c, sub->t1)};
    f->before = pose_at(c, sub->t0);
    /* Into the particles' local frame (anchor.c): only positions move. */
    f->pose.position = cd_to_local(inst, f->pose.position);
    f->before.position = cd_to_local(inst, f->before.position);
    f->motion = cd_v3_sub(f->pose.position, f->before.position);
    f->reach = c->radius + thickness;
    if (c->type == CD_COLLIDER_CAPSULE || c->type == CD_COLLIDER_TAPERED_CAPSULE)
        f->across = across(f->pose.normal); /* once a substep, not per particle */
    if (c->type != CD_COLLIDER_TAPERED_CAPSULE) {
        f->half = 0.5f * c->height - c->radius;
        if (f->half < 0.0f)
            f->half = 0.0f;
        return;
    }
    f->reach2 = c->radius2 + thickness;
    const float length = fmaxf(c->height - c->radius - c->radius2, 0.0f);
    f->half = 0.5f * length;
    f->solid = !(length > fabsf(c->radius - c->radius2) * 1.0001f);
    f->slant_s = f->solid ? 0.0f : (c->radius - c->radius2) / length;
    f->slant_c = sqrtf(fmaxf(1.0f - f->slant_s * f->slant_s, 0.0f));
    f->side_end = f->slant_c * length;
}

/* The collider's displacement at x over the substep: its centre's, or for
 * a box the motion of its material point that ends at x. */
static cd_vec3 motion_at(const cd_collider *c, const contact_frame *f, cd_vec3 x)
{
    if (c->type != CD_COLLIDER_BOX)
        return f->motion;
    const cd_vec3 local = cd_quat_rotate(cd_quat_conjugate(f->pose.rotation),
                                      cd_v3_sub(x, f->pose.position));
    const cd_vec3 was = cd_v3_add(f->before.position, cd_quat_rotate(f->before.rotation, local));
    return cd_v3_sub(x, was);
}

static void collide_one(cd_instance *inst, cd_collider *c, const cd_substep *sub,
                        uint32_t begin, uint32_t end)
{
    const float thickness = inst->def.thickness;
    contact_frame f;
    frame_for(inst, c, sub, thickness, &f);
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
            cd_vec3 rel = cd_v3_sub(cd_v3_sub(x, cd_v3_load(&inst->prev[3 * i])),
                                    motion_at(c, &f, x));
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
