/* Aerodynamic wind: every triangle of the cloth (its grid's two per cell,
 * or a soft body's surface faces) feels the air flowing past it. With u
 * the triangle's mean velocity minus the wind, N = (b - a) x (c - a) its
 * area vector (|N| = 2A), n = N / |N|, q = airDensity |u|^2 / 2 and
 * sin(alpha) = |n.u| / |u| (alpha: the incidence of the flow on the plate):
 *
 * "aero" (the default): a flat plate's normal force. The force is along
 *   the normal and grows as sin(alpha):
 *     F = -C q A (n.u/|u|) n = -(airDensity C / 4) |u| (N.u) N / |N|
 *   so C_D = C sin^2(alpha) and C_L = C sin(alpha) cos(alpha), with C the
 *   plate's drag coefficient broadside (`drag`; unset: CD_PLATE_DRAG =
 *   1.17, a square plate, Hoerner 1965). At 30 degrees: C_D 0.29, C_L
 *   0.51, as measured on flat plates (PROTOCOL.md, "Where clothd departs
 *   from the seed"). Two square roots and one division a triangle.
 * "dragLift": NvCloth's and Bullet's model, clothd's "aero" before the
 *   flat plate: with cos = n.u/|u| (n turned to face u),
 *     drag = -drag q A cos u/|u|,  lift = -lift q A cos (n - cos u/|u|)
 *   (`drag` unset: 1).
 *
 * A third of the force goes to each free corner as an impulse F h / m on
 * the Verlet history (prev -= F h^2 / 3m), which integration carries. The
 * force depends on the triangle's orientation and velocity, so a flag in
 * steady wind keeps fluttering instead of settling at an angle, and
 * heavier cloth is moved less.
 *
 * Order. Each triangle's velocity includes the impulses of the triangles
 * before it (Gauss-Seidel), so the order is fixed: a grid's rows of cells
 * with even y, then those with odd y (two stages); within a row, the even
 * cells' tl-bl-tr triangles, their tr-bl-br ones, then the odd cells'
 * (two runs of two kinds). The triangles of one kind in every other cell
 * share no particle, so a kernel may take 8 at once (aero_avx2.c,
 * bit-identical to the scalar reference below); the rows of a stage share
 * no particle either (a row of cells touches only its two rows of
 * particles), so a large instance's team shares a stage's rows out in
 * fixed blocks (team.c) with the bits of a serial step. A soft body's
 * faces run one after the other in the builder's order on the scalar
 * kernel (soft bodies have no team, and their surfaces are small). */

#include "internal.h"
#include "vec3.h"

/* ---- "aero": the flat plate, the scalar reference ------------------------ */

static inline void push_corner(float *q, float w, float g, float nx, float ny, float nz)
{
    if (w == 0.0f)
        return; /* pinned */
    const float t = g * w;
    q[0] = q[0] + nx * t;
    q[1] = q[1] + ny * t;
    q[2] = q[2] + nz * t;
}

/* The AVX2 kernel does these IEEE operations in this order; keep them so. */
static inline void plate_triangle(const float *restrict pos, float *restrict prev,
                                  const float *restrict w, uint32_t a, uint32_t b, uint32_t c,
                                  const cd_aero_params *p)
{
    const float *pa = &pos[3 * a], *pb = &pos[3 * b], *pc = &pos[3 * c];
    float *qa = &prev[3 * a], *qb = &prev[3 * b], *qc = &prev[3 * c];
    const float e1x = pb[0] - pa[0], e1y = pb[1] - pa[1], e1z = pb[2] - pa[2];
    const float e2x = pc[0] - pa[0], e2y = pc[1] - pa[1], e2z = pc[2] - pa[2];
    const float nx = e1y * e2z - e1z * e2y;
    const float ny = e1z * e2x - e1x * e2z;
    const float nz = e1x * e2y - e1y * e2x;
    const float ux = (((pa[0] - qa[0]) + (pb[0] - qb[0])) + (pc[0] - qc[0])) * p->inv_3h - p->wind.x;
    const float uy = (((pa[1] - qa[1]) + (pb[1] - qb[1])) + (pc[1] - qc[1])) * p->inv_3h - p->wind.y;
    const float uz = (((pa[2] - qa[2]) + (pb[2] - qb[2])) + (pc[2] - qc[2])) * p->inv_3h - p->wind.z;
    const float nn = nx * nx + ny * ny + nz * nz;
    if (!(nn > CD_AERO_MIN_NORMAL2))
        return; /* degenerate: no normal */
    const float uu = ux * ux + uy * uy + uz * uz;
    const float nu = nx * ux + ny * uy + nz * uz;
    /* -F h^2 / 3m = (rho C / 4)(h^2 / 3) (N.u / |N|) |u| N / m; in this
     * order no step overflows below |u| ~ 1e19 m/s (sqrt(uu / nn) would,
     * for a tiny triangle flung fast, and 0 x inf is NaN). */
    const float g = p->plate * (nu / sqrtf(nn)) * sqrtf(uu);
    push_corner(qa, w[a], g, nx, ny, nz);
    push_corner(qb, w[b], g, nx, ny, nz);
    push_corner(qc, w[c], g, nx, ny, nz);
}

void cd_aero_plate_scalar(const float *pos, float *prev, const float *inv_mass, uint32_t tl,
                          uint32_t width, uint32_t count, const cd_aero_params *p)
{
    for (uint32_t k = 0; k < count; k++) /* tl bl tr */
        plate_triangle(pos, prev, inv_mass, tl + 2 * k, tl + width + 2 * k, tl + 1 + 2 * k, p);
    for (uint32_t k = 0; k < count; k++) /* tr bl br */
        plate_triangle(pos, prev, inv_mass, tl + 1 + 2 * k, tl + width + 2 * k,
                       tl + width + 1 + 2 * k, p);
}

/* ---- "dragLift": drag and lift coefficients (scalar on every path) ------- */

static cd_vec3 velocity_of(const float *pos, const float *prev, uint32_t i, float inv_h)
{
    return cd_v3_scale(cd_v3_sub(cd_v3_load(&pos[3 * i]), cd_v3_load(&prev[3 * i])), inv_h);
}

static void drag_lift_triangle(const float *pos, float *prev, const float *inv_mass, uint32_t a,
                               uint32_t b, uint32_t c, const cd_aero_params *p)
{
    const float inv_h = 1.0f / p->h;
    cd_vec3 pa = cd_v3_load(&pos[3 * a]);
    cd_vec3 nA = cd_v3_cross(cd_v3_sub(cd_v3_load(&pos[3 * b]), pa),
                             cd_v3_sub(cd_v3_load(&pos[3 * c]), pa));
    float twice_area = cd_v3_length(nA);
    cd_vec3 v = cd_v3_scale(cd_v3_add(velocity_of(pos, prev, a, inv_h),
                                      cd_v3_add(velocity_of(pos, prev, b, inv_h),
                                                velocity_of(pos, prev, c, inv_h))),
                            1.0f / 3.0f);
    cd_vec3 u = cd_v3_sub(v, p->wind);
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
    /* Both forces scale with q cos; the coefficients already hold rho. */
    const float base = 0.5f * speed * speed * 0.5f * twice_area * cosine;
    cd_vec3 across = cd_v3_sub(n, cd_v3_scale(dir, cosine));
    cd_vec3 force = cd_v3_scale(cd_v3_add(cd_v3_scale(dir, p->drag),
                                          cd_v3_scale(across, p->lift)),
                                -base);
    const float h2 = p->h * p->h / 3.0f;
    const uint32_t corner[3] = {a, b, c};
    for (int k = 0; k < 3; k++) {
        float w = inv_mass[corner[k]];
        if (w == 0.0f)
            continue;
        float *q = &prev[3 * corner[k]];
        cd_v3_store(q, cd_v3_sub(cd_v3_load(q), cd_v3_scale(force, w * h2)));
    }
}

static void drag_lift_run(const float *pos, float *prev, const float *inv_mass, uint32_t tl,
                          uint32_t width, uint32_t count, const cd_aero_params *p)
{
    for (uint32_t k = 0; k < count; k++)
        drag_lift_triangle(pos, prev, inv_mass, tl + 2 * k, tl + width + 2 * k, tl + 1 + 2 * k, p);
    for (uint32_t k = 0; k < count; k++)
        drag_lift_triangle(pos, prev, inv_mass, tl + 1 + 2 * k, tl + width + 2 * k,
                           tl + width + 1 + 2 * k, p);
}

/* ---- the stage ------------------------------------------------------------ */

/* Triangles a block of rows holds at least (fewer only in a stage's last
 * block): a 128-wide grid takes 3 rows a block, 22 blocks a stage. */
#define AERO_BLOCK_TRIANGLES 512u

typedef struct aero_stage {
    cd_aero_kernel *kernel;
    cd_aero_params params;
    uint32_t parity;         /* rows of cells y = parity, parity + 2, ... */
    uint32_t rows;           /* how many */
    uint32_t rows_per_block;
} aero_stage;

/* One row of cells: its two runs, even cells then odd ones. */
static void aero_row(cd_instance *inst, const aero_stage *st, uint32_t y)
{
    const uint32_t w = (uint32_t)inst->width;
    for (uint32_t px = 0; px < 2; px++) {
        const uint32_t count = (w - px) / 2; /* cells x = px, px + 2, ..., x <= w - 2 */
        if (count > 0)
            st->kernel(inst->pos, inst->prev, inst->inv_mass, y * w + px, w, count, &st->params);
    }
}

static void aero_block(cd_instance *inst, const void *ctx, uint32_t block)
{
    const aero_stage *st = ctx;
    const uint32_t first = block * st->rows_per_block;
    const uint32_t end = first + st->rows_per_block < st->rows ? first + st->rows_per_block
                                                               : st->rows;
    for (uint32_t r = first; r < end; r++)
        aero_row(inst, st, st->parity + 2 * r);
}

/* The kernel of the flat plate on the process's SIMD path (distance.c). */
static cd_aero_kernel *plate_kernel(void)
{
#ifdef CD_HAVE_AVX2_KERNELS
    if (cd_solver_path_has_avx2())
        return cd_aero_plate_avx2;
#endif
    return cd_aero_plate_scalar;
}

void cd_stage_aerodynamics(cd_instance *inst, const cd_substep *sub)
{
    const cd_cloth_def *d = &inst->def;
    const bool plate = d->wind_model == CD_WIND_AERO;
    if (d->wind_model == CD_WIND_CONSTANT || d->air_density <= 0.0f)
        return;
    const float drag = d->drag != CD_UNSET ? d->drag : plate ? CD_PLATE_DRAG : 1.0f;
    const float lift = plate ? 0.0f : d->lift;
    if (drag <= 0.0f && lift <= 0.0f)
        return;
    aero_stage st = {
        .kernel = plate ? plate_kernel() : drag_lift_run,
        .params = {.inv_3h = 1.0f / (3.0f * sub->h),
                   .wind = sub->wind,
                   .plate = d->air_density * drag * (sub->h * sub->h) / 12.0f,
                   .h = sub->h,
                   .drag = d->air_density * drag,
                   .lift = d->air_density * lift},
    };
    if (!cd_is_grid(inst)) {
        /* A mesh's triangles or a soft body's surface faces, in the
         * builder's order (inner faces see no air). */
        for (uint32_t t = 0; t < inst->triangle_count; t++) {
            const uint32_t *tri = &inst->triangles[3 * t];
            if (plate)
                plate_triangle(inst->pos, inst->prev, inst->inv_mass, tri[0], tri[1], tri[2],
                               &st.params);
            else
                drag_lift_triangle(inst->pos, inst->prev, inst->inv_mass, tri[0], tri[1],
                                   tri[2], &st.params);
        }
        return;
    }
    const uint32_t w = (uint32_t)inst->width, h = (uint32_t)inst->height;
    const uint32_t per_row = 2 * (w - 1);
    st.rows_per_block = (AERO_BLOCK_TRIANGLES + per_row - 1) / per_row;
    for (st.parity = 0; st.parity < 2; st.parity++) {
        st.rows = (h - st.parity) / 2; /* rows of cells y < h - 1 */
        if (st.rows > 0)
            cd_team_run(inst, aero_block, &st, (st.rows + st.rows_per_block - 1) / st.rows_per_block);
    }
}
