/* One step of one instance. The stages, in order:
 *
 *   1. prime     first step only: Verlet history for "at rest at t = 0"
 *   2. integrate Verlet with the seed's damping, gravity + wind
 *   3. solve     Gauss-Seidel distance projection, `iterations` passes
 *   4. collide   project free particles out of every collider
 *   5. guard     a non-finite or runaway position restores the last good
 *                state, disables the instance and reports it
 *
 * Nothing here allocates, and nothing reads state outside the instance
 * except the arguments, so a step is a pure function of (instance, dt,
 * global wind): the same on any thread. */
#include "internal.h"
#include "vec3.h"

cd_step_result cd_instance_step(cd_instance *inst, float dt, cd_vec3 global_wind)
{
    cd_step_result result = {.unstable = false};
    if (!inst->enabled || !(dt > 0.0f && dt <= 1.0f) || !cd_vec3_is_valid(global_wind))
        return result;

    cd_vec3 accel = cd_v3_add(inst->gravity, cd_v3_add(inst->wind, global_wind));
    if (!inst->started) {
        cd_stage_prime_verlet(inst, accel, dt);
        inst->started = true;
    }
    cd_stage_integrate(inst, accel, dt);
    for (int32_t i = 0; i < inst->iterations; i++)
        cd_stage_solve_distances(inst);
    cd_stage_collide(inst);

    if (!cd_stage_guard_ok(inst)) {
        cd_stage_guard_restore(inst);
        inst->enabled = false;
        inst->unstable = true;
        result.unstable = true;
        return result;
    }
    inst->frame++;
    inst->time += dt;
    inst->last_dt = dt;
    return result;
}

bool cd_stage_guard_ok(const cd_instance *inst)
{
    const float *p = inst->pos;
    const uint32_t n = 3 * inst->particle_count;
    /* Branch-free scan; NaN fails the comparison and so counts as bad. */
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++)
        bad |= !(fabsf(p[i]) <= CD_WORLD_EXTENT);
    return bad == 0;
}

void cd_stage_guard_restore(cd_instance *inst)
{
    /* `prev` holds the positions before this step, which passed the guard
     * last time; restart from them at rest. */
    const uint32_t n = 3 * inst->particle_count;
    for (uint32_t i = 0; i < n; i++)
        inst->pos[i] = inst->prev[i];
}
