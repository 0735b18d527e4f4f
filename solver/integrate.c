/* Verlet integration as the seed writes it, once per substep of length h:
 *   x' = x + (x - prev) * keep + a * h^2
 * keep is the velocity kept per substep (from the per-step damping or the
 * per-second retention). Pinned particles are moved by their pins instead.
 *
 * Compensated: positions are 32-bit floats and Verlet keeps the velocity
 * as x - prev, so each rounding of x' entered the velocity for good. With
 * short substeps the increment a h^2 is a few dozen float spacings of x
 * (7.6e-5 m at 360 Hz against 9.5e-7 m at 10 m), and the roundings of a
 * regular motion do not average out: a body falling from 10 m for 0.5 s
 * ended 5.8 mm short at 6 substeps and 9.7 mm long at 12. `residual` keeps
 * what the rounding of x' left out (an exact two-sum, Knuth's TAOCP
 * 4.2.2) and adds it to the next move, as Kahan's summation does: the
 * same fall is then within 0.01 mm (tests/test_solver_integration.c). The residual
 * is below half a float spacing of x, so whatever sets prev by hand
 * (pins, teleports, restarts) may leave it as it is. integrate_avx2.c
 * does the same operations 8 particles at a time, bit for bit. */
#include "internal.h"
#include "vec3.h"

void cd_stage_prime_verlet(cd_instance *inst, cd_vec3 accel, float h)
{
    /* The implicit Verlet velocity (x - prev) / h lives at t - h/2. A body
     * at rest at t = 0 under constant a had velocity -a h/2 there, so
     * prev = x + a h^2 / 2; the free-fall trajectory is then exact.
     * Rounding prev to a float would start it with an error of up to half
     * a float spacing of x in h v (0.23 mm after 0.5 s at 10 m and 16
     * substeps): the residual takes that part. */
    const float half = 0.5f * h * h;
    const float a[3] = {accel.x, accel.y, accel.z};
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        float *p = &inst->pos[3 * i], *q = &inst->prev[3 * i], *c = &inst->residual[3 * i];
        for (int k = 0; k < 3; k++) {
            const float lead = -a[k] * half; /* the wanted x - prev */
            q[k] = p[k] - lead;
            c[k] = lead - (p[k] - q[k]);
        }
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
    const float a[3] = {ax, ay, az};
    float *restrict pos = inst->pos;
    float *restrict prev = inst->prev;
    float *restrict residual = inst->residual;
    const float *restrict w = inst->inv_mass;
    uint32_t begin, end;
    cd_particle_block(inst, block, &begin, &end);
    uint32_t i = begin;
#ifdef CD_HAVE_AVX2_KERNELS
    if (cd_solver_path_has_avx2()) /* the same bits, 8 at a time */
        i = cd_integrate_avx2(pos, prev, residual, w, begin, end, keep, a);
#endif
    for (; i < end; i++) {
        if (w[i] == 0.0f)
            continue;
        float *p = &pos[3 * i], *q = &prev[3 * i], *c = &residual[3 * i];
        for (int k = 0; k < 3; k++) {
            const float x = p[k];
            const float move = ((x - q[k]) + c[k]) * keep + a[k];
            const float next = x + move;
            /* Two-sum: next + lost == x + move exactly. */
            const float moved = next - x;
            const float lost = (x - (next - moved)) + (move - moved);
            p[k] = next;
            q[k] = x;
            c[k] = lost;
        }
    }
    if (inst->def.self_distance > 0.0f)
        cap_velocity(inst, sub, 0.5f * inst->def.self_distance, begin, end);
}

void cd_stage_integrate(cd_instance *inst, const cd_substep *sub)
{
    cd_team_run(inst, integrate_block, sub, cd_particle_blocks(inst));
}
