/* Collision projection: every free particle that ends inside a collider is
 * moved to the nearest point of its surface (no friction or restitution in
 * v1, as in the seed).
 *   sphere   push out along centre -> particle
 *   capsule  the same about the closest point of its axis segment; the
 *            segment is height - 2 * radius long (height counts both caps)
 *   plane    remove the negative signed distance along the normal */
#include "internal.h"
#include "vec3.h"

/* Pushes p out of the ball (centre, r). A particle exactly at the centre
 * has no direction; it leaves along `fallback`. */
static void push_out_of_ball(float *p, cd_vec3 centre, float r, cd_vec3 fallback)
{
    cd_vec3 d = cd_v3_sub(cd_v3_load(p), centre);
    float d2 = cd_v3_dot(d, d);
    if (d2 >= r * r)
        return;
    cd_vec3 dir = d2 > 1e-24f ? cd_v3_scale(d, 1.0f / sqrtf(d2)) : fallback;
    cd_v3_store(p, cd_v3_add(centre, cd_v3_scale(dir, r)));
}

static void collide_sphere(cd_instance *inst, const cd_collider *c)
{
    for (uint32_t i = 0; i < inst->particle_count; i++)
        if (inst->inv_mass[i] != 0.0f)
            push_out_of_ball(&inst->pos[3 * i], c->position, c->radius, cd_v3(0, 1, 0));
}

static void collide_capsule(cd_instance *inst, const cd_collider *c)
{
    float half = 0.5f * c->height - c->radius;
    if (half < 0.0f)
        half = 0.0f;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        float *p = &inst->pos[3 * i];
        float t = cd_v3_dot(cd_v3_sub(cd_v3_load(p), c->position), c->normal);
        t = t < -half ? -half : (t > half ? half : t);
        cd_vec3 axis_point = cd_v3_add(c->position, cd_v3_scale(c->normal, t));
        /* A particle on the axis leaves sideways, perpendicular to it. */
        cd_vec3 side = fabsf(c->normal.x) < 0.9f ? cd_v3(1, 0, 0) : cd_v3(0, 1, 0);
        side = cd_v3_sub(side, cd_v3_scale(c->normal, cd_v3_dot(side, c->normal)));
        push_out_of_ball(p, axis_point, c->radius, cd_v3_normalize_or(side, cd_v3(0, 0, 1)));
    }
}

static void collide_plane(cd_instance *inst, const cd_collider *c)
{
    const cd_vec3 n = c->normal;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        float *p = &inst->pos[3 * i];
        float s = cd_v3_dot(cd_v3_sub(cd_v3_load(p), c->position), n);
        if (s < 0.0f)
            cd_v3_store(p, cd_v3_sub(cd_v3_load(p), cd_v3_scale(n, s)));
    }
}

void cd_stage_collide(cd_instance *inst)
{
    for (uint32_t k = 0; k < inst->collider_slots; k++) {
        const cd_collider *c = &inst->colliders[k];
        if (!c->active)
            continue;
        switch (c->type) {
        case CD_COLLIDER_SPHERE:
            collide_sphere(inst, c);
            break;
        case CD_COLLIDER_CAPSULE:
            collide_capsule(inst, c);
            break;
        case CD_COLLIDER_PLANE:
            collide_plane(inst, c);
            break;
        }
    }
}
