/* One step of one instance: `substeps` substeps of length h = dt / substeps
 * (Macklin et al. 2019, "Small Steps in Physics Simulation"), each running
 * the stages in this order:
 *
 *   1. pins        pinned particles travel towards their targets
 *   2. aero        aerodynamic wind, as impulses on the Verlet history
 *   3. integrate   Verlet with damping, gravity (+ constant wind)
 *   4. solve       `iterations` passes: distance groups (seed or XPBD),
 *                  tetrahedral volumes (soft bodies), then tethers
 *   5. self        self-collision (self_distance > 0): candidate pairs,
 *                  searched once per step for a slow cloth and up to
 *                  every other substep for a fast one, are separated in
 *                  every iteration and once more after the colliders
 *   6. collide     thickness, friction, coupling impulses
 *
 * then, once per step: pins and colliders settle on their targets, and the
 * guard checks every position (a non-finite or runaway one restores the
 * last good state, disables the instance and reports it). An instance whose
 * particles stay slower than sleep_threshold for CD_SLEEP_DELAY seconds
 * sleeps: its steps cost nothing until a command or a change of the global
 * wind wakes it.
 *
 * Nothing here allocates, and nothing reads state outside the instance
 * except the arguments, so a step is a pure function of (instance, dt,
 * global wind): the same on any thread. */
#include <float.h>
#include <string.h>

#include "internal.h"
#include "vec3.h"

static bool same_vec3(cd_vec3 a, cd_vec3 b)
{
    return a.x == b.x && a.y == b.y && a.z == b.z;
}

/* Velocity kept per substep: the per-second retention, or the seed's
 * per-step damping spread evenly over the substeps. */
static float keep_per_substep(const cd_cloth_def *d, float h, int substeps)
{
    if (d->velocity_retention != CD_UNSET)
        return powf(d->velocity_retention, h);
    if (substeps == 1)
        return 1.0f - d->damping;
    return powf(1.0f - d->damping, 1.0f / (float)substeps);
}

static void reset_impulses(cd_instance *inst)
{
    for (uint32_t k = 0; k < inst->collider_slots; k++) {
        inst->colliders[k].impulse_linear = cd_v3(0, 0, 0);
        inst->colliders[k].impulse_angular = cd_v3(0, 0, 0);
    }
}

/* A cloth resting on a coupled collider keeps handing it its weight: it
 * must not fall asleep, or the rigid body would suddenly feel nothing. */
static bool pressing_a_coupled_collider(const cd_instance *inst)
{
    for (uint32_t k = 0; k < inst->collider_slots; k++) {
        const cd_collider *c = &inst->colliders[k];
        if (c->active && c->coupling > 0.0f &&
            (c->impulse_linear.x != 0.0f || c->impulse_linear.y != 0.0f ||
             c->impulse_linear.z != 0.0f))
            return true;
    }
    return false;
}

static void update_sleep(cd_instance *inst, float dt, float max_speed)
{
    float threshold = inst->def.sleep_threshold;
    if (threshold <= 0.0f || max_speed >= threshold || pressing_a_coupled_collider(inst)) {
        inst->still_time = 0.0f;
        return;
    }
    inst->still_time += dt;
    if (inst->still_time >= CD_SLEEP_DELAY)
        inst->sleeping = true;
}

/* The Verlet history holds the velocity as the last substep's move,
 * x - prev = v h. A step whose substeps are longer or shorter (another
 * level of detail, another dt under automatic substeps) rescales it to
 * its own h, or the cloth would slow down or speed up at once: twice the
 * substeps without this doubles every velocity. Pinned particles are
 * moved by their pins and keep theirs. */
static void rescale_history(cd_instance *inst, float h)
{
    if (!inst->started || inst->last_dt <= 0.0f || inst->last_dt == h)
        return;
    const float r = h / inst->last_dt;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        const float *p = &inst->pos[3 * i];
        float *q = &inst->prev[3 * i];
        float *c = &inst->residual[3 * i];
        for (int k = 0; k < 3; k++) {
            q[k] = p[k] - (p[k] - q[k]) * r;
            c[k] *= r; /* part of the move too (integrate.c) */
        }
    }
    inst->last_dt = h;
}

static cd_step_result step_once(cd_instance *inst, float dt, cd_vec3 global_wind, int32_t lod)
{
    cd_step_result result = {.unstable = false, .sleeping = false, .lod = lod};
    if (!inst->enabled || !(dt > 0.0f && dt <= 1.0f) || !cd_vec3_is_valid(global_wind))
        return result;
    if (!same_vec3(global_wind, inst->last_global_wind)) {
        inst->last_global_wind = global_wind;
        cd_instance_wake(inst);
    }
    if (inst->sleeping) {
        reset_impulses(inst); /* nothing was handed over in this step */
        inst->frame++;
        inst->time += dt;
        result.sleeping = true;
        return result;
    }

    const cd_cloth_def *d = &inst->def;
    int32_t n, iterations;
    cd_lod_counts(d, dt, lod, &n, &iterations);
    inst->step_substeps = n;
    const cd_vec3 wind = cd_v3_add(inst->wind, global_wind);
    cd_substep sub = {.h = dt / (float)n, .accel = d->gravity, .wind = cd_v3(0, 0, 0)};
    if (d->wind_model == CD_WIND_CONSTANT)
        sub.accel = cd_v3_add(sub.accel, wind);
    else
        sub.wind = wind;
    sub.keep = keep_per_substep(d, sub.h, n);

    if (inst->tethers_dirty)
        cd_rebuild_tethers(inst);
    cd_stage_carry(inst);
    const bool self_collision = d->self_distance > 0.0f && inst->hash_start != NULL;
    int next_search = 0;
    const bool keep_momentum = cd_momentum_kept(inst);
    reset_impulses(inst);
    if (!inst->started) {
        cd_stage_prime_verlet(inst, sub.accel, sub.h);
        inst->started = true;
    } else {
        rescale_history(inst, sub.h);
    }
    for (int s = 0; s < n; s++) {
        sub.t0 = (float)s / (float)n;
        sub.t1 = (float)(s + 1) / (float)n;
        if (self_collision && s == next_search)
            next_search = s + cd_stage_find_self_pairs(inst, n - s);
        cd_stage_move_pins(inst, &sub);
        cd_stage_move_skin(inst, &sub);
        cd_stage_aerodynamics(inst, &sub);
        cd_stage_integrate(inst, &sub);
        cd_stage_reset_multipliers(inst);
        cd_stage_begin_contacts(inst);
        cd_vec3 turned = cd_v3(0, 0, 0); /* by the internal passes (momentum.c) */
        for (int32_t i = 0; i < iterations; i++) {
            cd_vec3 before;
            if (keep_momentum)
                cd_momentum_begin(inst, sub.h, &before);
            cd_stage_solve_distances(inst, sub.h);
            cd_stage_solve_volumes(inst, sub.h);
            if (keep_momentum)
                cd_momentum_add_change(inst, sub.h, before, &turned);
            cd_stage_contacts(inst, &sub);
            cd_stage_solve_tethers(inst);
            cd_stage_skin_limits(inst);
            if (self_collision)
                cd_stage_self_collide(inst);
        }
        cd_stage_collide(inst, &sub);
        if (self_collision) {
            /* Colliders press folds together: separate once more, then
             * let the colliders have the last word again. */
            cd_stage_self_collide(inst);
            cd_stage_collide(inst, &sub);
        }
        if (keep_momentum)
            cd_momentum_take_back(inst, sub.h, turned);
    }
    cd_stage_finish_pins(inst);
    cd_stage_finish_skin(inst);
    cd_stage_finish_colliders(inst);

    cd_guard_sums guard;
    if (!cd_stage_guard_ok(inst, &guard)) {
        cd_stage_guard_restore(inst);
        inst->enabled = false;
        inst->unstable = true;
        result.unstable = true;
        return result;
    }
    cd_anchor_follow_box(inst, guard.lo, guard.hi);
    inst->frame++;
    inst->time += dt;
    inst->last_dt = sub.h;
    inst->last_speed = sqrtf(guard.worst) / sub.h; /* the largest move over the last substep */
    /* Finite whatever the masses and the substep: no infinity may reach a
     * client (the sum over the particles could overflow a float). */
    inst->kinetic_energy = fminf(0.5f * guard.energy / (sub.h * sub.h), FLT_MAX);
    update_sleep(inst, dt, inst->last_speed);
    return result;
}

cd_step_result cd_instance_step_lod(cd_instance *inst, float dt, cd_vec3 global_wind,
                                    int32_t level)
{
    const int32_t lod = cd_instance_step_level(inst, level);
    const int32_t own = cd_instance_step_level(inst, inst->def.lod);
    inst->lod_degraded = lod > inst->def.lod && (lod > own || inst->lod_degraded);
    inst->lod_now = lod;
    cd_step_result result = step_once(inst, dt, global_wind, lod);
    result.degraded = inst->lod_degraded;
    cd_team_step_done(inst->team); /* helpers of this step may leave */
    return result;
}

cd_step_result cd_instance_step(cd_instance *inst, float dt, cd_vec3 global_wind)
{
    return cd_instance_step_lod(inst, dt, global_wind, 0);
}

uint64_t cd_instance_help_ticket(const cd_instance *inst)
{
    return cd_team_ticket(inst->team);
}

uint64_t cd_instance_help_step(cd_instance *inst, uint64_t ticket)
{
    return inst->team != NULL && ticket != 0 ? cd_team_help(inst->team, inst, ticket) : 0;
}

/* The guard over particles [begin, end) (cd_guard_sums). On the way, the
 * free particles' sum of m |move|^2 (pinned and kinematic ones, of inverse
 * mass 0, are led, not free) for the kinetic energy that `get` and
 * `status` report, and the bounding box the anchor follows (anchor.c): one
 * pass over the particles does all three, on every thread of a team (a
 * separate pass on the leading thread cost 4% of a 128 x 128 step). */
static void guard_range(const cd_instance *inst, uint32_t begin, uint32_t end, cd_guard_sums *out)
{
    const float *p = inst->pos, *q = inst->prev, *w = inst->inv_mass;
    const cd_vec3 a = inst->anchor; /* the box is the world's */
    float lo[3] = {p[3 * begin], p[3 * begin + 1], p[3 * begin + 2]};
    float hi[3] = {lo[0], lo[1], lo[2]};
    /* Branch-free scan; NaN fails the comparison and so counts as bad.
     * Comparisons rather than fminf/fmaxf, which honour NaN and so are
     * library calls without -ffinite-math-only. */
    uint32_t bad = 0;
    float worst = 0.0f, energy = 0.0f;
    for (uint32_t i = begin; i < end; i++) {
        const float x = p[3 * i], y = p[3 * i + 1], z = p[3 * i + 2];
        bad |= !(fabsf(x + a.x) <= CD_WORLD_EXTENT) | !(fabsf(y + a.y) <= CD_WORLD_EXTENT) |
               !(fabsf(z + a.z) <= CD_WORLD_EXTENT);
        const float dx = x - q[3 * i], dy = y - q[3 * i + 1], dz = z - q[3 * i + 2];
        const float d2 = dx * dx + dy * dy + dz * dz;
        worst = d2 > worst ? d2 : worst; /* a NaN move has a NaN position: bad */
        energy += w[i] > 0.0f ? d2 / w[i] : 0.0f;
        lo[0] = x < lo[0] ? x : lo[0];
        lo[1] = y < lo[1] ? y : lo[1];
        lo[2] = z < lo[2] ? z : lo[2];
        hi[0] = x > hi[0] ? x : hi[0];
        hi[1] = y > hi[1] ? y : hi[1];
        hi[2] = z > hi[2] ? z : hi[2];
    }
    *out = (cd_guard_sums){.worst = worst, .energy = energy, .bad = bad != 0,
                           .lo = {lo[0], lo[1], lo[2]}, .hi = {hi[0], hi[1], hi[2]}};
}

static void guard_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    (void)ctx;
    uint32_t begin, end;
    cd_particle_block(inst, block, &begin, &end);
    guard_range(inst, begin, end, &inst->block_guard[block]);
}

bool cd_stage_guard_ok(cd_instance *inst, cd_guard_sums *out)
{
    if (inst->team == NULL) {
        guard_range(inst, 0, inst->particle_count, out);
        return out->bad == 0;
    }
    /* The maximum, the box and the flag are exact whatever the blocks; the
     * energy is summed in block order, so any team gives the same sum. */
    const uint32_t blocks = cd_particle_blocks(inst);
    cd_team_run(inst, guard_block, NULL, blocks);
    *out = inst->block_guard[0];
    for (uint32_t b = 1; b < blocks; b++) {
        const cd_guard_sums *g = &inst->block_guard[b];
        out->worst = g->worst > out->worst ? g->worst : out->worst;
        out->energy += g->energy;
        for (int k = 0; k < 3; k++) {
            out->lo[k] = g->lo[k] < out->lo[k] ? g->lo[k] : out->lo[k];
            out->hi[k] = g->hi[k] > out->hi[k] ? g->hi[k] : out->hi[k];
        }
        out->bad |= g->bad;
    }
    return out->bad == 0;
}

void cd_stage_guard_restore(cd_instance *inst)
{
    /* Restart at rest from `prev`, the positions before the last substep:
     * with one substep those are the last good step's. Should they be
     * unusable too (a blow-up within the step's first substeps), reset to
     * the creation layout, pins at their targets. */
    const uint32_t n = inst->particle_count;
    bool usable = true;
    for (uint32_t i = 0; i < n; i++)
        usable &= cd_vec3_in_world(cd_to_world(inst, cd_v3_load(&inst->prev[3 * i])));
    for (uint32_t i = 0; i < n; i++) {
        cd_vec3 p = usable ? cd_v3_load(&inst->prev[3 * i])
                           : cd_to_local(inst, cd_initial_position(inst, i));
        cd_v3_store(&inst->pos[3 * i], p);
        cd_v3_store(&inst->prev[3 * i], p);
    }
    /* The residual of a runaway is as wild as its positions. */
    memset(inst->residual, 0, sizeof(float) * 3u * n);
    for (uint32_t k = 0; k < inst->pin_count; k++) {
        const cd_pin *pin = &inst->pins[k];
        const cd_vec3 at = cd_to_local(inst, pin->to);
        cd_v3_store(&inst->pos[3 * pin->particle], at);
        cd_v3_store(&inst->prev[3 * pin->particle], at);
    }
}
