/* Small inline vector helpers shared by the solver's stages. */
#ifndef CLOTHD_VEC3_H
#define CLOTHD_VEC3_H

#include <math.h>

#include "solver.h"

static inline cd_vec3 cd_v3(float x, float y, float z) { return (cd_vec3){x, y, z}; }
static inline cd_vec3 cd_v3_add(cd_vec3 a, cd_vec3 b) { return cd_v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static inline cd_vec3 cd_v3_sub(cd_vec3 a, cd_vec3 b) { return cd_v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static inline cd_vec3 cd_v3_scale(cd_vec3 a, float s) { return cd_v3(a.x * s, a.y * s, a.z * s); }
static inline float cd_v3_dot(cd_vec3 a, cd_vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline cd_vec3 cd_v3_cross(cd_vec3 a, cd_vec3 b)
{
    return cd_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline float cd_v3_length(cd_vec3 a) { return sqrtf(cd_v3_dot(a, a)); }

/* Unit vector of `a`; `fallback` when `a` is zero or not finite. Scales by
 * the largest component first so that huge or tiny vectors survive. */
static inline cd_vec3 cd_v3_normalize_or(cd_vec3 a, cd_vec3 fallback)
{
    float m = fmaxf(fabsf(a.x), fmaxf(fabsf(a.y), fabsf(a.z)));
    if (!(m > 0.0f) || !isfinite(m))
        return fallback;
    a = cd_v3_scale(a, 1.0f / m);
    float len = cd_v3_length(a);
    if (!(len > 1e-12f))
        return fallback;
    return cd_v3_scale(a, 1.0f / len);
}

static inline cd_vec3 cd_v3_load(const float *p) { return cd_v3(p[0], p[1], p[2]); }
static inline void cd_v3_store(float *p, cd_vec3 v)
{
    p[0] = v.x;
    p[1] = v.y;
    p[2] = v.z;
}

static inline bool cd_float_is_valid(float f) { return isfinite(f); }

/* Unit quaternions (x, y, z, w). */
static inline cd_vec3 cd_quat_rotate(cd_quat q, cd_vec3 v)
{
    /* v' = v + 2w (u x v) + 2 u x (u x v), u = (x, y, z) */
    const cd_vec3 u = cd_v3(q.x, q.y, q.z);
    const cd_vec3 t = cd_v3_scale(cd_v3_cross(u, v), 2.0f);
    return cd_v3_add(v, cd_v3_add(cd_v3_scale(t, q.w), cd_v3_cross(u, t)));
}
static inline cd_quat cd_quat_conjugate(cd_quat q) { return (cd_quat){-q.x, -q.y, -q.z, q.w}; }
static inline cd_quat cd_quat_multiply(cd_quat a, cd_quat b)
{
    return (cd_quat){a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                     a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                     a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
                     a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z};
}
/* Unit length; `fallback` for a zero or non-finite q. */
static inline cd_quat cd_quat_normalize_or(cd_quat q, cd_quat fallback)
{
    float n = sqrtf(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
    if (!(n > 1e-12f) || !isfinite(n))
        return fallback;
    return (cd_quat){q.x / n, q.y / n, q.z / n, q.w / n};
}
static inline cd_quat cd_quat_identity(void) { return (cd_quat){0, 0, 0, 1}; }

/* The correction of a two-particle constraint along d = pb - pa: pa moves
 * by -d * sa, pb by +d * sb (packed xyz, the solver's hot loops). */
static inline void cd_move_pair(float *pa, float *pb, float dx, float dy, float dz, float sa,
                                float sb)
{
    pa[0] -= dx * sa;
    pa[1] -= dy * sa;
    pa[2] -= dz * sa;
    pb[0] += dx * sb;
    pb[1] += dy * sb;
    pb[2] += dz * sb;
}

#endif
