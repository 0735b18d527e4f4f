/* Skinned motion constraints and painted properties: maxDistance 0 follows
 * the skin exactly, maxDistance d keeps each particle within d of its
 * skinned position while the skin moves fast, the backstop keeps the cloth
 * on the body's outer side while the body turns, and neither a skin update
 * nor resting on a backstop makes a particle gain speed. */
#include <stdlib.h>

#include "../solver/internal.h"
#include "../solver/vec3.h"
#include "solver_fixtures.h"

#define W 12
#define H 10
#define N (W * H)
#define S 0.05f

static cd_instance *cape(cd_world *world)
{
    cd_cloth_def def = fx_seed_def();
    def.width = W;
    def.height = H;
    def.spacing = S;
    def.origin = fx_v3(-0.5f * S * (W - 1), 1.5f, 0.2f);
    return fx_cloth(world, &def);
}

/* The cloth's rest grid moved by `offset` and turned by `angle` about the
 * vertical axis through the origin: the skin of a body that walks and
 * turns. Normals +z turned likewise (the cape's outer side). */
static void pose(const cd_instance *inst, cd_vec3 offset, float angle, float *skin, float *normal)
{
    const float c = cosf(angle), s = sinf(angle);
    for (uint32_t i = 0; i < N; i++) {
        const cd_vec3 r = cd_initial_position(inst, i);
        skin[3 * i] = c * r.x + s * r.z + offset.x;
        skin[3 * i + 1] = r.y + offset.y;
        skin[3 * i + 2] = -s * r.x + c * r.z + offset.z;
        normal[3 * i] = s;
        normal[3 * i + 1] = 0.0f;
        normal[3 * i + 2] = c;
    }
}

static void paint_all(cd_instance *inst, cd_paint which, float value)
{
    cr_assert_eq(cd_instance_paint(inst, which, &value, 1, NULL), CD_OK);
}

static double max_speed(const cd_instance *inst)
{
    double worst = 0.0;
    for (uint32_t i = 0; i < N; i++) {
        cd_vec3 v = cd_instance_velocity(inst, i);
        double sp = sqrt((double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z);
        worst = sp > worst ? sp : worst;
    }
    return worst;
}

static void follows_exactly(bool self_collision)
{
    cd_world *world = fx_world();
    cd_instance *inst = cape(world);
    static float skin[3 * N], normal[3 * N];
    if (self_collision) { /* its velocity cap must leave led particles alone */
        cd_cloth_def def = cd_instance_def(inst);
        def.self_distance = 0.8f * S;
        cr_assert_eq(cd_instance_configure(inst, &def), CD_OK);
    }
    paint_all(inst, CD_PAINT_MAX_DISTANCE, 0.0f);
    for (int f = 0; f < 120; f++) {
        const float t = (float)f * FX_DT;
        pose(inst, fx_v3(2.0f * t, 0.1f * sinf(9.0f * t), 0), 3.0f * t, skin, normal);
        cr_assert_eq(cd_instance_skin(inst, skin, normal, NULL), CD_OK);
        cd_instance_step(inst, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < N; i++)
            cr_assert_lt(fx_dist(fx_pos(inst, i), fx_v3(skin[3 * i], skin[3 * i + 1],
                                                         skin[3 * i + 2])),
                         1e-5, "frame %d particle %u off its skin", f, i);
    }
    cd_world_destroy(world);
}

Test(skin, max_distance_zero_follows_the_skin_exactly)
{
    follows_exactly(false);
    follows_exactly(true);
}

/* The top row follows the skin; the rest may stray 5 cm while the body
 * swings 30 cm side to side at 2 Hz and turns. */
Test(skin, max_distance_keeps_every_particle_within_reach_of_a_fast_skin)
{
    cd_world *world = fx_world();
    cd_instance *inst = cape(world);
    static float skin[3 * N], normal[3 * N], reach[N];
    for (uint32_t i = 0; i < N; i++)
        reach[i] = i < W ? 0.0f : 0.05f;
    cr_assert_eq(cd_instance_paint(inst, CD_PAINT_MAX_DISTANCE, reach, N, NULL), CD_OK);
    double worst = 0.0;
    for (int f = 0; f < 180; f++) {
        const float t = (float)f * FX_DT;
        pose(inst, fx_v3(0.3f * sinf(12.566f * t), 0, 0), 1.0f * sinf(6.0f * t), skin, normal);
        cr_assert_eq(cd_instance_skin(inst, skin, normal, NULL), CD_OK);
        cd_instance_step(inst, FX_DT, fx_no_wind());
        cr_assert(fx_all_finite(inst));
        for (uint32_t i = 0; i < N; i++) {
            double d = fx_dist(fx_pos(inst, i), fx_v3(skin[3 * i], skin[3 * i + 1], skin[3 * i + 2]));
            worst = d - reach[i] > worst ? d - reach[i] : worst;
        }
    }
    cr_expect_lt(worst, 1e-4, "a particle strayed %.5f m beyond its reach", worst);
    cd_world_destroy(world);
}

/* A body turning at 3 rad/s under a cape with a backstop: every particle
 * stays outside its backstop sphere (the body's side of the skin). */
Test(skin, the_backstop_keeps_the_cloth_outside_a_turning_body)
{
    cd_world *world = fx_world();
    cd_instance *inst = cape(world);
    static float skin[3 * N], normal[3 * N];
    paint_all(inst, CD_PAINT_MAX_DISTANCE, 0.2f);
    paint_all(inst, CD_PAINT_BACKSTOP_DISTANCE, 0.0f);
    paint_all(inst, CD_PAINT_BACKSTOP_RADIUS, 0.5f);
    double deepest = 0.0;
    for (int f = 0; f < 180; f++) {
        const float t = (float)f * FX_DT;
        pose(inst, fx_v3(0, 0, 0), 3.0f * t, skin, normal);
        cr_assert_eq(cd_instance_skin(inst, skin, normal, NULL), CD_OK);
        cd_instance_step(inst, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < N; i++) {
            const cd_vec3 s = fx_v3(skin[3 * i], skin[3 * i + 1], skin[3 * i + 2]);
            const cd_vec3 n = fx_v3(normal[3 * i], normal[3 * i + 1], normal[3 * i + 2]);
            const cd_vec3 centre = fx_v3(s.x - 0.5f * n.x, s.y - 0.5f * n.y, s.z - 0.5f * n.z);
            double inside = 0.5 - fx_dist(fx_pos(inst, i), centre);
            deepest = inside > deepest ? inside : deepest;
        }
    }
    cr_expect_lt(deepest, 1e-4, "a particle was %.5f m inside its backstop", deepest);
    cd_world_destroy(world);
}

/* A cloth lying on its backstop under gravity (normals up, the sphere
 * below): it settles, and stays at rest instead of gaining speed. */
Test(skin, a_particle_resting_on_its_backstop_does_not_gain_speed)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = W;
    def.height = H;
    def.spacing = S;
    def.down = fx_v3(0, 0, 1); /* lying flat */
    def.sleep_threshold = 0.0f;
    cd_instance *inst = fx_cloth(world, &def);
    static float skin[3 * N], normal[3 * N];
    for (uint32_t i = 0; i < N; i++) {
        cd_v3_store(&skin[3 * i], cd_initial_position(inst, i));
        cd_v3_store(&normal[3 * i], fx_v3(0, 1, 0));
    }
    paint_all(inst, CD_PAINT_MAX_DISTANCE, 1.0f);
    paint_all(inst, CD_PAINT_BACKSTOP_DISTANCE, 0.02f);
    paint_all(inst, CD_PAINT_BACKSTOP_RADIUS, 10.0f);
    cr_assert_eq(cd_instance_skin(inst, skin, normal, NULL), CD_OK);
    double later = 0.0;
    for (int f = 0; f < 300; f++) {
        cr_assert_eq(cd_instance_skin(inst, skin, normal, NULL), CD_OK); /* the same skin */
        cd_instance_step(inst, FX_DT, fx_no_wind());
        if (f >= 120)
            later = fmax(later, max_speed(inst));
    }
    cr_expect_lt(later, 1e-3, "resting on the backstop, a particle moves at %.5f m/s", later);
    /* It rests on the sphere, 2 cm below the skin. */
    const double y = fx_pos(inst, N / 2 + W / 2).y;
    cr_expect(fabs(y - (-0.02)) < 2e-3, "middle at y = %.4f m", y);
    cd_world_destroy(world);
}

/* A skin moving steadily at 1 m/s: the kinematic top row moves at 1 m/s
 * from the first step on, and re-sending the same pose adds nothing. */
Test(skin, a_skin_update_causes_no_velocity_spike)
{
    cd_world *world = fx_world();
    cd_instance *inst = cape(world);
    static float skin[3 * N], normal[3 * N], reach[N];
    for (uint32_t i = 0; i < N; i++)
        reach[i] = i < W ? 0.0f : 0.1f;
    cr_assert_eq(cd_instance_paint(inst, CD_PAINT_MAX_DISTANCE, reach, N, NULL), CD_OK);
    double top = 0.0, all = 0.0;
    for (int f = 0; f < 60; f++) {
        pose(inst, fx_v3((float)f * FX_DT, 0, 0), 0.0f, skin, normal);
        cr_assert_eq(cd_instance_skin(inst, skin, normal, NULL), CD_OK);
        if (f % 2 == 0) /* some frames send their pose twice */
            cr_assert_eq(cd_instance_skin(inst, skin, normal, NULL), CD_OK);
        cd_instance_step(inst, FX_DT, fx_no_wind());
        for (uint32_t i = 0; i < W && f > 0; i++)
            top = fmax(top, fabs(cd_instance_velocity(inst, i).x - 1.0));
        all = fmax(all, max_speed(inst));
    }
    cr_expect_lt(top, 1e-3, "the skinned row's speed is off 1 m/s by %.5f", top);
    cr_expect_lt(all, 2.0, "no particle faster than twice the body (%.3f m/s)", all);
    cd_world_destroy(world);
}

Test(skin, inv_mass_scale_zero_holds_a_particle_still)
{
    cd_world *world = fx_world();
    cd_instance *inst = cape(world);
    static float scale[N];
    for (uint32_t i = 0; i < N; i++)
        scale[i] = i == 0 || i == W - 1 ? 0.0f : 1.0f;
    cr_assert_eq(cd_instance_paint(inst, CD_PAINT_INV_MASS_SCALE, scale, N, NULL), CD_OK);
    const cd_vec3 corner = fx_pos(inst, W - 1);
    for (int f = 0; f < 60; f++)
        cd_instance_step(inst, FX_DT, fx_no_wind());
    cr_expect_eq(fx_dist(fx_pos(inst, W - 1), corner), 0.0);
    cr_expect_lt(fx_pos(inst, N - 1).y, corner.y - 0.3f, "the rest hangs");
    float back[N];
    cr_assert(cd_instance_painted(inst, CD_PAINT_INV_MASS_SCALE, back));
    cr_expect_eq(back[0], 0.0f);
    cr_expect(!cd_instance_painted(inst, CD_PAINT_BACKSTOP_RADIUS, back));
    cd_world_destroy(world);
}

Test(skin, paint_checks_the_count_and_the_range)
{
    cd_world *world = fx_world();
    cd_instance *inst = cape(world);
    static float values[N + 1];
    cd_field_fault f;
    cr_expect_eq(cd_instance_paint(inst, CD_PAINT_MAX_DISTANCE, values, N - 1, &f),
                 CD_E_INVALID_ARGUMENT);
    cr_expect_str_eq(f.field, "maxDistance");
    cr_expect_str_eq(f.reason, "119 values for 120 vertices (one per vertex, or one for all)");
    values[7] = -1.0f;
    cr_expect_eq(cd_instance_paint(inst, CD_PAINT_MAX_DISTANCE, values, N, &f),
                 CD_E_INVALID_ARGUMENT);
    cr_expect_str_eq(f.field, "maxDistance[7]");
    cr_expect_str_eq(f.reason, "must be a number in [0, 100000]");
    cr_expect(!cd_instance_painted(inst, CD_PAINT_MAX_DISTANCE, values), "nothing changed");
    values[7] = NAN;
    cr_expect_eq(cd_instance_paint(inst, CD_PAINT_BACKSTOP_RADIUS, values, N, &f),
                 CD_E_INVALID_ARGUMENT);
    cd_world_destroy(world);
}

/* ---- painted compliance ---- */

/* A 2 x 21 strip hung from its top pair (XPBD stretch 3e-4 m/N, bending
 * near free at 1 m/N, converged: 4 substeps x 30 iterations, tethers off):
 * its elongation after 3 s, and the hash of its positions. */
static double strip_elongation(const float *scale, uint64_t *hash)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = 2;
    def.height = 21;
    def.spacing = 0.05f;
    def.mass = 0.5f;
    def.stretch_compliance = 3e-4f;
    def.bend_compliance = 1.0f;
    def.substeps = 4;
    def.solver_iterations = 30;
    def.tethers = false;
    cd_instance *inst = fx_cloth(world, &def);
    cd_instance_pin(inst, 0, NULL);
    cd_instance_pin(inst, 1, NULL);
    if (scale != NULL)
        paint_all(inst, CD_PAINT_STRETCH_COMPLIANCE_SCALE, *scale);
    for (int f = 0; f < 180; f++)
        cd_instance_step(inst, FX_DT, fx_no_wind());
    const double length = fx_dist(fx_pos(inst, 0), fx_pos(inst, 40));
    *hash = fx_fnv1a(cd_instance_local_positions(inst), sizeof(float) * 3 * 42);
    cd_world_destroy(world);
    return length - 1.0;
}

Test(skin, a_painted_compliance_scale_of_2_doubles_a_hanging_strips_stretch)
{
    uint64_t plain_hash, one_hash, two_hash;
    const float one = 1.0f, two = 2.0f;
    const double plain = strip_elongation(NULL, &plain_hash);
    const double ones = strip_elongation(&one, &one_hash);
    const double doubled = strip_elongation(&two, &two_hash);
    cr_log_info("strip stretch %.5f m, painted x2 %.5f m (ratio %.3f)", plain, doubled,
                doubled / plain);
    /* Linear in the compliance while the strain is small (0.6% here; at
     * 2% the diagonals' turning already makes it 2.1). */
    cr_expect_gt(plain, 0.003, "the strip stretches (%.5f m)", plain);
    cr_expect_lt(fabs(doubled / plain - 2.0), 0.04, "ratio %.3f", doubled / plain);
    cr_expect_eq(one_hash, plain_hash, "a scale of 1 everywhere is the same bits (%.6f, %.6f)",
                 ones, plain);
}
