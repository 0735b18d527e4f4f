/* Verlet integration as the seed writes it, once per substep of length h:
 *   x' = x + (x - prev) * keep + a * h^2
 * keep is the velocity kept per substep (from the per-step damping or the
 * per-second retention). Pinned particles are moved by their pins instead. */
#include "internal.h"
#include "vec3.h"

void cd_stage_prime_verlet(cd_instance *inst, cd_vec3 accel, float h)
{
    /* The implicit Verlet velocity (x - prev) / h lives at t - h/2. A body
     * at rest at t = 0 under constant a had velocity -a h/2 there, so
     * prev = x + a h^2 / 2; the free-fall trajectory is then exact. */
    const float half = 0.5f * h * h;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        float *p = &inst->pos[3 * i], *q = &inst->prev[3 * i];
        q[0] = p[0] + accel.x * half;
        q[1] = p[1] + accel.y * half;
        q[2] = p[2] + accel.z * half;
    }
}

/* Self-collision's velocity cap: no free particle moves more than `limit`
 * in a substep relative to where it is led, so none can pass through
 * another between two checks. What tunnels is relative motion: a skinned
 * particle is capped relative to its skin's move over the substep (a cape
 * on a character walking at 1.4 m/s was held to 0.7 m/s and trailed at its
 * full reach), others relative to standing still. Pinned and kinematic
 * particles go where they are led: capping them left a fast-walking cape's
 * shoulders behind their skin. */
static void cap_velocity(cd_instance *inst, const cd_substep *sub, float limit, uint32_t begin,
                         uint32_t end)
{
    const float share = sub->t1 - sub->t0;
    for (uint32_t i = begin; i < end; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        float *p = &inst->pos[3 * i];
        const float *q = &inst->prev[3 * i];
        float r[3] = {0.0f, 0.0f, 0.0f}; /* the skin's move over this substep */
        if (inst->skinned)
            for (int k = 0; k < 3; k++)
                r[k] = (inst->skin_to[3 * i + k] - inst->skin_from[3 * i + k]) * share;
        const float dx = p[0] - q[0] - r[0], dy = p[1] - q[1] - r[1], dz = p[2] - q[2] - r[2];
        const float d2 = dx * dx + dy * dy + dz * dz;
        if (d2 <= limit * limit)
            continue;
        const float s = limit / sqrtf(d2);
        p[0] = q[0] + r[0] + dx * s;
        p[1] = q[1] + r[1] + dy * s;
        p[2] = q[2] + r[2] + dz * s;
    }
}

static void integrate_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    const cd_substep *sub = ctx;
    const float keep = sub->keep;
    const float h2 = sub->h * sub->h;
    const float ax = sub->accel.x * h2, ay = sub->accel.y * h2, az = sub->accel.z * h2;
    float *restrict pos = inst->pos;
    float *restrict prev = inst->prev;
    const float *restrict w = inst->inv_mass;
    uint32_t begin, end;
    cd_particle_block(inst, block, &begin, &end);
    for (uint32_t i = begin; i < end; i++) {
        if (w[i] == 0.0f)
            continue;
        float *p = &pos[3 * i], *q = &prev[3 * i];
        float x = p[0], y = p[1], z = p[2];
        p[0] = x + (x - q[0]) * keep + ax;
        p[1] = y + (y - q[1]) * keep + ay;
        p[2] = z + (z - q[2]) * keep + az;
        q[0] = x;
        q[1] = y;
        q[2] = z;
    }
    if (inst->def.self_distance > 0.0f)
        cap_velocity(inst, sub, 0.5f * inst->def.self_distance, begin, end);
}

void cd_stage_integrate(cd_instance *inst, const cd_substep *sub)
{
    cd_team_run(inst, integrate_block, sub, cd_particle_blocks(inst));
}
