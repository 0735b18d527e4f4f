/* Aerodynamic wind (as NvCloth and Bullet model it): every triangle of the
 * grid feels the air flowing past it. With u the triangle's velocity
 * relative to the air, A its area, n its unit normal turned to face u,
 * cos = n.u/|u| and q = rho |u|^2 A / 2:
 *   drag = -drag_coefficient q cos u/|u|         (against the motion)
 *   lift = -lift_coefficient q cos (n - cos u/|u|) (across it)
 * A third of the force goes to each corner as an impulse F h / m, applied
 * to the Verlet history (prev -= F h^2 / m), so that integration carries
 * it. Forces depend on mass: heavier cloth is moved less. Because the force
 * depends on the triangle's orientation and velocity, a flag in steady
 * wind keeps fluttering instead of settling at an angle. */
#include "internal.h"
#include "vec3.h"

static cd_vec3 velocity_of(const cd_instance *inst, uint32_t i, float inv_h)
{
    return cd_v3_scale(cd_v3_sub(cd_v3_load(&inst->pos[3 * i]), cd_v3_load(&inst->prev[3 * i])),
                       inv_h);
}

static void push_triangle(cd_instance *inst, uint32_t a, uint32_t b, uint32_t c,
                          const cd_substep *sub, float coeff_drag, float coeff_lift)
{
    const float inv_h = 1.0f / sub->h;
    cd_vec3 pa = cd_v3_load(&inst->pos[3 * a]);
    cd_vec3 nA = cd_v3_cross(cd_v3_sub(cd_v3_load(&inst->pos[3 * b]), pa),
                             cd_v3_sub(cd_v3_load(&inst->pos[3 * c]), pa));
    float twice_area = cd_v3_length(nA);
    cd_vec3 v = cd_v3_scale(cd_v3_add(velocity_of(inst, a, inv_h),
                                      cd_v3_add(velocity_of(inst, b, inv_h),
                                                velocity_of(inst, c, inv_h))),
                            1.0f / 3.0f);
    cd_vec3 u = cd_v3_sub(v, sub->wind);
    float speed = cd_v3_length(u);
    if (!(twice_area > 1e-12f) || !(speed > 1e-6f))
        return;
    cd_vec3 n = cd_v3_scale(nA, 1.0f / twice_area);
    cd_vec3 dir = cd_v3_scale(u, 1.0f / speed);
    float cosine = cd_v3_dot(n, dir);
    if (cosine < 0.0f) {
        n = cd_v3_scale(n, -1.0f);
        cosine = -cosine;
    }
    /* Both forces scale with q cos; coefficients already hold rho. */
    const float base = 0.5f * speed * speed * 0.5f * twice_area * cosine;
    cd_vec3 across = cd_v3_sub(n, cd_v3_scale(dir, cosine));
    cd_vec3 force = cd_v3_scale(cd_v3_add(cd_v3_scale(dir, coeff_drag),
                                          cd_v3_scale(across, coeff_lift)),
                                -base);
    /* A third per corner, as a change of the Verlet history. */
    const float h2 = sub->h * sub->h / 3.0f;
    const uint32_t corner[3] = {a, b, c};
    for (int k = 0; k < 3; k++) {
        float w = inst->inv_mass[corner[k]];
        if (w == 0.0f)
            continue;
        float *prev = &inst->prev[3 * corner[k]];
        cd_v3_store(prev, cd_v3_sub(cd_v3_load(prev), cd_v3_scale(force, w * h2)));
    }
}

void cd_stage_aerodynamics(cd_instance *inst, const cd_substep *sub)
{
    const cd_cloth_def *d = &inst->def;
    if (d->wind_model != CD_WIND_AERO || d->air_density <= 0.0f ||
        (d->drag <= 0.0f && d->lift <= 0.0f))
        return;
    const float coeff_drag = d->air_density * d->drag;
    const float coeff_lift = d->air_density * d->lift;
    if (inst->type == CD_INSTANCE_SOFTBODY) {
        /* The surface faces; the inner ones see no air. */
        for (uint32_t t = 0; t < inst->triangle_count; t++) {
            const uint32_t *tri = &inst->triangles[3 * t];
            push_triangle(inst, tri[0], tri[1], tri[2], sub, coeff_drag, coeff_lift);
        }
        return;
    }
    const uint32_t w = (uint32_t)inst->width, h = (uint32_t)inst->height;
    for (uint32_t y = 0; y + 1 < h; y++) {
        for (uint32_t x = 0; x + 1 < w; x++) {
            uint32_t tl = y * w + x, tr = tl + 1, bl = tl + w, br = bl + 1;
            push_triangle(inst, tl, bl, tr, sub, coeff_drag, coeff_lift);
            push_triangle(inst, tr, bl, br, sub, coeff_drag, coeff_lift);
        }
    }
}
