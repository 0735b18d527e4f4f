/* Angular momentum kept through a soft body's internal constraints.
 *
 * Internal forces cannot turn a body: a distance or volume constraint's
 * correction is central (along the constraint's own gradient, computed at
 * the current positions) and conserves linear and angular momentum as
 * positions go. But the Verlet velocity (x - prev) / h also sees where the
 * particles were at the start of the substep: a correction J along n
 * changes sum m (x - c) x v by J (prev_a - prev_b) x n / h, which is not
 * zero once the pair has turned during the substep. In a body that keeps
 * correcting (one resting on a floor, always a little squashed), these
 * terms do not cancel: they feed on any rotation about the vertical and
 * spun a soft ball resting on a frictionless floor up to a steady 0.06 to
 * 0.19 m/s at its rim, so that it never slept (solver/DESIGN.md).
 *
 * So the solver measures what the internal passes (distances, volumes) did
 * to the body's angular momentum about its centre of mass in a substep and
 * takes it back at the end of the substep with a rigid rotation of the
 * velocities (prev += h w x (x - c), w = I^-1 dL), as Müller et al.'s
 * momentum-conserving damping does for its rigid modes. Contacts and the
 * colliders' friction may turn the body (they are external) and are not
 * measured. Soft bodies only: a cloth is held by pins and colliders, and
 * the issue has not been seen there. */
#include "internal.h"
#include "vec3.h"

/* The centre of mass. */
static cd_vec3 centre_of_mass(const cd_instance *inst)
{
    double m_sum = 0.0, cx = 0.0, cy = 0.0, cz = 0.0;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        const double m = 1.0 / inst->own_inv_mass[i];
        m_sum += m;
        cx += m * inst->pos[3 * i];
        cy += m * inst->pos[3 * i + 1];
        cz += m * inst->pos[3 * i + 2];
    }
    return cd_v3((float)(cx / m_sum), (float)(cy / m_sum), (float)(cz / m_sum));
}

/* Angular momentum about the centre of mass, velocities over a substep of
 * length h. */
static cd_vec3 angular_momentum(const cd_instance *inst, float h)
{
    const cd_vec3 c = centre_of_mass(inst);
    double lx = 0.0, ly = 0.0, lz = 0.0;
    for (uint32_t i = 0; i < inst->particle_count; i++) {
        const double m = 1.0 / inst->own_inv_mass[i] / h;
        const cd_vec3 r = cd_v3_sub(cd_v3_load(&inst->pos[3 * i]), c);
        const cd_vec3 v = cd_v3_sub(cd_v3_load(&inst->pos[3 * i]), cd_v3_load(&inst->prev[3 * i]));
        lx += m * ((double)r.y * v.z - (double)r.z * v.y);
        ly += m * ((double)r.z * v.x - (double)r.x * v.z);
        lz += m * ((double)r.x * v.y - (double)r.y * v.x);
    }
    return cd_v3((float)lx, (float)ly, (float)lz);
}

bool cd_momentum_kept(const cd_instance *inst)
{
    /* Painted inverse masses (0 is allowed) and kinematic skinned
     * particles hold the body like pins do. */
    return inst->type == CD_INSTANCE_SOFTBODY && inst->pin_count == 0 && !inst->skinned &&
           inst->paint[CD_PAINT_INV_MASS_SCALE] == NULL;
}

void cd_momentum_begin(const cd_instance *inst, float h, cd_vec3 *before)
{
    *before = angular_momentum(inst, h);
}

void cd_momentum_add_change(const cd_instance *inst, float h, cd_vec3 before, cd_vec3 *change)
{
    *change = cd_v3_add(*change, cd_v3_sub(angular_momentum(inst, h), before));
}

void cd_momentum_take_back(cd_instance *inst, float h, cd_vec3 change)
{
    if (change.x == 0.0f && change.y == 0.0f && change.z == 0.0f)
        return;
    const uint32_t n = inst->particle_count;
    const cd_vec3 c = centre_of_mass(inst);
    /* The inertia tensor about the centre, I = sum m (r.r E - r r^T). */
    double I[3][3] = {{0}};
    for (uint32_t i = 0; i < n; i++) {
        const double m = 1.0 / inst->own_inv_mass[i];
        const cd_vec3 rv = cd_v3_sub(cd_v3_load(&inst->pos[3 * i]), c);
        const double r[3] = {rv.x, rv.y, rv.z};
        const double rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                I[a][b] += m * ((a == b ? rr : 0.0) - r[a] * r[b]);
    }
    /* w = I^-1 dL by the adjugate (a body of particles in general position
     * has an invertible I; a degenerate one is left alone). */
    const double det = I[0][0] * (I[1][1] * I[2][2] - I[1][2] * I[2][1]) -
                       I[0][1] * (I[1][0] * I[2][2] - I[1][2] * I[2][0]) +
                       I[0][2] * (I[1][0] * I[2][1] - I[1][1] * I[2][0]);
    if (!(fabs(det) > 1e-30))
        return;
    const double L[3] = {change.x, change.y, change.z};
    double inv[3][3];
    inv[0][0] = I[1][1] * I[2][2] - I[1][2] * I[2][1];
    inv[0][1] = I[0][2] * I[2][1] - I[0][1] * I[2][2];
    inv[0][2] = I[0][1] * I[1][2] - I[0][2] * I[1][1];
    inv[1][0] = I[1][2] * I[2][0] - I[1][0] * I[2][2];
    inv[1][1] = I[0][0] * I[2][2] - I[0][2] * I[2][0];
    inv[1][2] = I[0][2] * I[1][0] - I[0][0] * I[1][2];
    inv[2][0] = I[1][0] * I[2][1] - I[1][1] * I[2][0];
    inv[2][1] = I[0][1] * I[2][0] - I[0][0] * I[2][1];
    inv[2][2] = I[0][0] * I[1][1] - I[0][1] * I[1][0];
    double w[3];
    for (int a = 0; a < 3; a++)
        w[a] = (inv[a][0] * L[0] + inv[a][1] * L[1] + inv[a][2] * L[2]) / det;
    const cd_vec3 omega = cd_v3((float)(w[0] * h), (float)(w[1] * h), (float)(w[2] * h));
    /* Lowering each velocity by w x r: prev moves by h w x r. */
    for (uint32_t i = 0; i < n; i++) {
        if (inst->inv_mass[i] == 0.0f)
            continue;
        const cd_vec3 r = cd_v3_sub(cd_v3_load(&inst->pos[3 * i]), c);
        float *q = &inst->prev[3 * i];
        cd_v3_store(q, cd_v3_add(cd_v3_load(q), cd_v3_cross(omega, r)));
    }
}
