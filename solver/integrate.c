/* Verlet integration as the seed writes it:
 *   x' = x + (x - prev) * (1 - damping) + a * dt^2
 * Pinned particles (inverse mass 0) stay where their pin put them. */
#include "internal.h"
#include "vec3.h"

void cd_stage_prime_verlet(cd_instance *inst, cd_vec3 accel, float dt)
{
    /* The implicit Verlet velocity (x - prev) / dt lives at t - dt/2. A body
     * at rest at t = 0 under constant a had velocity -a dt/2 there, so
     * prev = x + a dt^2 / 2; the free-fall trajectory is then exact. */
    const float h = 0.5f * dt * dt;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        float *p = &inst->pos[3 * i], *q = &inst->prev[3 * i];
        q[0] = p[0] + accel.x * h;
        q[1] = p[1] + accel.y * h;
        q[2] = p[2] + accel.z * h;
    }
}

void cd_stage_integrate(cd_instance *inst, cd_vec3 accel, float dt)
{
    const float keep = 1.0f - inst->damping;
    const float ax = accel.x * dt * dt, ay = accel.y * dt * dt, az = accel.z * dt * dt;
    float *restrict pos = inst->pos;
    float *restrict prev = inst->prev;
    const float *restrict w = inst->inv_mass;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        float *p = &pos[3 * i], *q = &prev[3 * i];
        float x = p[0], y = p[1], z = p[2];
        if (w[i] == 0.0f) {
            q[0] = x;
            q[1] = y;
            q[2] = z;
            continue;
        }
        p[0] = x + (x - q[0]) * keep + ax;
        p[1] = y + (y - q[1]) * keep + ay;
        p[2] = z + (z - q[2]) * keep + az;
        q[0] = x;
        q[1] = y;
        q[2] = z;
    }
}
