/* What a renderer reads besides the positions: the triangles, each
 * particle's velocity and its vertex normal.
 *
 * All three only read the instance and write into the caller's arrays
 * (no allocation), so the server calls them where it builds frames: on the
 * worker that has just stepped the instance, or on the loop thread while
 * no step runs.
 *
 * Velocity: (pos - prev) / last_dt, prev being the position before the
 * last substep and last_dt that substep's length: the velocity Verlet
 * carries into the next substep, in m/s. Zero before the first step (no
 * history yet) and while the instance sleeps (it is at rest: its steps move
 * nothing).
 *
 * Normals: each render triangle (a, b, c) adds (b - a) x (c - a), whose
 * length is twice its area, to its three corners; each sum is then made
 * unit. So a normal points to the side from which its triangles are wound
 * counter-clockwise: for the cloth grid (tl bl tr) down x right of the
 * layout at creation (+z for the defaults right (1,0,0), down (0,-1,0)),
 * for a mesh cloth the side its triangles' winding gives, for a soft body
 * outwards. A triangle of twice-area 1e-12 m^2 or less adds
 * nothing (as in the aerodynamic stage); a particle that no triangle with
 * an area touches (a soft body's interior vertex, a collapsed corner) gets
 * (0, 0, 0). */
#include <math.h>

#include "render.h"
#include "vec3.h"

uint32_t cd_instance_triangles(const cd_instance *inst, uint32_t *indices, uint32_t cap)
{
    cd_render_cursor c = cd_render_begin(inst);
    const uint32_t n = c.left;
    for (uint32_t t = 0; t < n && t < cap; t++)
        cd_render_next(&c, &indices[3 * (size_t)t]);
    return n;
}

/* 1 / last_dt, or 0 when the velocities are zero. */
static float velocity_scale(const cd_instance *inst)
{
    if (!inst->started || inst->sleeping || !(inst->last_dt > 0.0f))
        return 0.0f;
    return 1.0f / inst->last_dt;
}

cd_vec3 cd_instance_velocity(const cd_instance *inst, uint32_t particle)
{
    const float s = velocity_scale(inst);
    if (particle >= inst->particle_count || s == 0.0f)
        return cd_v3(0, 0, 0);
    cd_vec3 d = cd_v3_sub(cd_v3_load(&inst->pos[3 * (size_t)particle]),
                          cd_v3_load(&inst->prev[3 * (size_t)particle]));
    return cd_v3_scale(d, s);
}

void cd_instance_velocities(const cd_instance *inst, float *out)
{
    const float s = velocity_scale(inst);
    const size_t n = 3 * (size_t)inst->particle_count;
    if (s == 0.0f) {
        memset(out, 0, n * sizeof(float));
        return;
    }
    const float *p = inst->pos, *q = inst->prev;
    for (size_t i = 0; i < n; i++)
        out[i] = (p[i] - q[i]) * s;
}

void cd_instance_normals(const cd_instance *inst, float *out)
{
    const size_t n = 3 * (size_t)inst->particle_count;
    memset(out, 0, n * sizeof(float));
    const float *p = inst->pos;
    cd_render_cursor c = cd_render_begin(inst);
    uint32_t v[3];
    while (cd_render_next(&c, v)) {
        const cd_vec3 a = cd_v3_load(&p[3 * (size_t)v[0]]);
        const cd_vec3 nrm = cd_v3_cross(cd_v3_sub(cd_v3_load(&p[3 * (size_t)v[1]]), a),
                                        cd_v3_sub(cd_v3_load(&p[3 * (size_t)v[2]]), a));
        if (!(cd_v3_dot(nrm, nrm) > CD_AERO_MIN_NORMAL2))
            continue;
        for (int k = 0; k < 3; k++) {
            float *o = &out[3 * (size_t)v[k]];
            o[0] += nrm.x;
            o[1] += nrm.y;
            o[2] += nrm.z;
        }
    }
    /* Divided by the length (not multiplied by its inverse): a flat
     * grid's normals come out exactly unit along their axis. Positions in
     * the world box keep the squared sums far from overflow; a sum whose
     * square underflows to 0 (triangles that cancel) is no normal. */
    for (size_t i = 0; i < n; i += 3) {
        const float len2 = out[i] * out[i] + out[i + 1] * out[i + 1] + out[i + 2] * out[i + 2];
        if (!(len2 > 0.0f)) {
            out[i] = out[i + 1] = out[i + 2] = 0.0f;
            continue;
        }
        const float len = sqrtf(len2);
        out[i] /= len;
        out[i + 1] /= len;
        out[i + 2] /= len;
    }
}
