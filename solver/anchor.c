/* The local frame: particles are kept relative to an anchor near them.
 *
 * Positions are 32-bit floats, whose spacing grows with the distance from
 * the origin: 9.5e-7 m at 10 m, 7.6e-6 m at 100 m, 6.1e-5 m at 1 km. Small
 * steps make that spacing matter: gravity moves a particle by g h^2 in a
 * substep, 7.6e-5 m at 360 Hz, about one float spacing at 1 km, and every
 * rounding of a constraint's correction becomes a velocity of spacing / h.
 * Simulated in world coordinates, a strip hanging at 100 m from the origin
 * kept shivering at 0.03 m/s under automatic substeps and never slept; at
 * 1 km at 0.2 m/s. Kept relative to an anchor beside it, it is as quiet
 * as at the origin (tests/test_solver_integration.c). NvCloth simulates in
 * a local space for the same reason, and Jolt keeps a soft body's
 * vertices relative to its body.
 *
 * What is local: pos, prev, the residual (a difference: the same in any
 * frame) and the skin's positions. Everything a user gives or reads stays
 * in world coordinates (pins' targets, transforms, colliders, the skin
 * command's points, get and frames) and is converted where it meets the
 * particles. The anchor is a whole number of metres, placed at the
 * instance's centre when it is built and moved by whole metres after a
 * step that left the particles more than CD_ANCHOR_DRIFT from it (a cape
 * on a character walking across a level). */
#include <math.h>

#include "internal.h"
#include "vec3.h"

/* How far the particles' centre may wander from the anchor, in metres,
 * before the anchor follows: near enough that the float spacing of local
 * positions stays below 2e-6 m (16 m and a 16 m instance). */
#define CD_ANCHOR_DRIFT 16.0f

/* The centre of a bounding box (lo, hi). */
static cd_vec3 box_centre(const float lo[3], const float hi[3])
{
    return cd_v3(0.5f * (lo[0] + hi[0]), 0.5f * (lo[1] + hi[1]), 0.5f * (lo[2] + hi[2]));
}

/* The centre of the particles' bounding box, in the frame they are in
 * (after a step, the guard's pass measures the box on its way: step.c). */
static cd_vec3 particles_centre(const float *pos, uint32_t n)
{
    if (n == 0)
        return cd_v3(0, 0, 0);
    /* Comparisons, not fminf/fmaxf: those honour NaN, so without
     * -ffinite-math-only they are library calls; positions here were
     * checked finite when they were built or moved. */
    float lo[3] = {pos[0], pos[1], pos[2]}, hi[3] = {pos[0], pos[1], pos[2]};
    for (uint32_t i = 1; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const float v = pos[3 * i + k];
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
    return box_centre(lo, hi);
}

/* Moves the local frame by `shift` (whole metres). A velocity is a
 * difference of pos and prev, each rounded by the move: the residual takes
 * what the two roundings changed, so no particle gains speed. */
static void shift_frame(cd_instance *inst, cd_vec3 shift)
{
    const float s[3] = {shift.x, shift.y, shift.z};
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        float *p = &inst->pos[3 * i], *q = &inst->prev[3 * i], *r = &inst->residual[3 * i];
        for (int k = 0; k < 3; k++) {
            const float was = p[k] - q[k];
            p[k] -= s[k];
            q[k] -= s[k];
            r[k] += was - (p[k] - q[k]);
        }
    }
    float *skin[3] = {inst->skin_from, inst->skin_to, inst->skin_now};
    for (int a = 0; a < 3; a++)
        if (skin[a] != NULL)
            for (uint32_t i = 0; i < 3 * inst->particle_count; i++)
                skin[a][i] -= s[i % 3];
    inst->anchor = cd_v3_add(inst->anchor, shift);
}

void cd_anchor_place(cd_instance *inst)
{
    const cd_vec3 c = particles_centre(inst->pos, inst->particle_count);
    shift_frame(inst, cd_v3(roundf(c.x), roundf(c.y), roundf(c.z)));
}

static void follow(cd_instance *inst, cd_vec3 c)
{
    if (fabsf(c.x) > CD_ANCHOR_DRIFT || fabsf(c.y) > CD_ANCHOR_DRIFT || fabsf(c.z) > CD_ANCHOR_DRIFT)
        shift_frame(inst, cd_v3(roundf(c.x), roundf(c.y), roundf(c.z)));
}

void cd_anchor_follow_box(cd_instance *inst, const float lo[3], const float hi[3])
{
    follow(inst, box_centre(lo, hi));
}

void cd_anchor_follow(cd_instance *inst)
{
    follow(inst, particles_centre(inst->pos, inst->particle_count));
}

cd_vec3 cd_instance_anchor(const cd_instance *inst)
{
    return inst->anchor;
}

const float *cd_instance_local_positions(const cd_instance *inst)
{
    return inst->pos;
}

void cd_instance_copy_positions(const cd_instance *inst, float *out)
{
    const float a[3] = {inst->anchor.x, inst->anchor.y, inst->anchor.z};
    for (uint32_t i = 0; i < 3 * inst->particle_count; i++)
        out[i] = inst->pos[i] + a[i % 3];
}

cd_vec3 cd_instance_position(const cd_instance *inst, uint32_t particle)
{
    return cd_to_world(inst, cd_v3_load(&inst->pos[3 * (size_t)particle]));
}
