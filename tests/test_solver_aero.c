/* Aerodynamic wind (solver/aero.c, solver/aero_avx2.c) and the seed's
 * constant-acceleration wind kept as a mode.
 *
 * The flat plate ("aero", the default): its drag and lift coefficients
 * against measured flat plates, a falling sheet's terminal velocity and a
 * hinged banner's angle against the model's own balance; the two kernels
 * bit for bit on grids of every width; the old model ("dragLift") kept.
 *
 * The flag: 20 x 12 particles, spacing 0.05 m (0.95 m x 0.55 m), its left
 * column pinned, origin (0, 2, 0), the default options (aero wind, air
 * 1.225 kg/m^3, 4 iterations, 1 substep, tethers), in a steady wind of
 * (8, 0, 1) m/s, stepped at 60 Hz. Particle 239 is the tip (the free
 * edge's bottom corner); the free edge is column 19.
 *
 * Numbers measured with gcc -O2 on x86-64 are given next to each assert. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../solver/internal.h"
#include "solver_fixtures.h"

static const char *const paths[] = {"scalar", "avx2"};

#define FLAG_W 20
#define FLAG_H 12
#define FLAG_TIP ((FLAG_H - 1) * FLAG_W + FLAG_W - 1)
#define FLAG_STEPS 1080 /* 18 s */
#define FLAG_WATCH 600 /* watched from 10 s on */

typedef struct flag_run {
    double tip_speed_min, tip_speed_max; /* over 10..18 s */
    double edge_mean_x;                  /* mean x of the free edge over 10..18 s */
    bool asleep;                         /* at 18 s */
    float final[3 * FLAG_W * FLAG_H];
} flag_run;

static void fly_flag(float mass, cd_wind_model model, flag_run *out)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = FLAG_W;
    def.height = FLAG_H;
    def.spacing = 0.05f;
    def.mass = mass;
    def.wind_model = model;
    def.origin = fx_v3(0, 2, 0);
    cd_instance *flag = fx_cloth(world, &def);
    for (uint32_t y = 0; y < FLAG_H; y++)
        cr_assert_eq(cd_instance_pin(flag, y * FLAG_W, NULL), CD_OK);
    cr_assert_eq(cd_instance_set_wind(flag, fx_v3(8, 0, 1)), CD_OK);

    out->tip_speed_min = INFINITY;
    out->tip_speed_max = 0.0;
    double sum_x = 0.0;
    int watched = 0;
    for (int step = 0; step < FLAG_STEPS; step++) {
        cr_assert_not(cd_instance_step(flag, FX_DT, fx_no_wind()).unstable, "step %d", step);
        if (step < FLAG_WATCH)
            continue;
        const double speed = fx_dist(cd_instance_velocity(flag, FLAG_TIP), fx_v3(0, 0, 0));
        out->tip_speed_min = fmin(out->tip_speed_min, speed);
        out->tip_speed_max = fmax(out->tip_speed_max, speed);
        double edge = 0.0;
        for (uint32_t y = 0; y < FLAG_H; y++)
            edge += fx_pos(flag, y * FLAG_W + FLAG_W - 1).x;
        sum_x += edge / FLAG_H;
        watched++;
    }
    out->edge_mean_x = sum_x / watched;
    cd_instance_info info;
    cd_instance_get_info(flag, &info);
    out->asleep = info.sleeping;
    fx_snapshot(flag, out->final);
    cd_world_destroy(world);
}

Test(solver_aero, flag_in_steady_wind_should_keep_fluttering_after_10_s)
{
    static flag_run light;
    fly_flag(0.1f, CD_WIND_AERO, &light);
    cr_log_info("tip %.3f..%.3f m/s, free edge mean x %.3f m", light.tip_speed_min,
                light.tip_speed_max, light.edge_mean_x);
    /* The tip's speed keeps changing by more than 0.3 m/s between 10 and
     * 18 s (measured over 10..15 s with even masses: 1.53 to 4.15 m/s; 0.77
     * to 2.26 with "dragLift") ... */
    cr_assert(light.tip_speed_max - light.tip_speed_min > 0.3, "tip speed %.3f..%.3f m/s",
              light.tip_speed_min, light.tip_speed_max);
    /* ... so it never comes to rest and never sleeps. */
    cr_assert(light.tip_speed_min > 0.1, "tip speed down to %.3f m/s", light.tip_speed_min);
    cr_assert_not(light.asleep);
    /* And it flies downwind: the free edge is more than 0.8 m out along +x
     * (0.95 m at most; measured 0.913 m). */
    cr_assert(light.edge_mean_x > 0.8, "free edge mean x %.3f m", light.edge_mean_x);
}

Test(solver_aero, doubling_the_mass_should_reduce_the_wind_deflection)
{
    static flag_run one, two;
    fly_flag(1.0f, CD_WIND_AERO, &one);
    fly_flag(2.0f, CD_WIND_AERO, &two);
    cr_log_info("free edge mean x: 1 kg %.3f m, 2 kg %.3f m", one.edge_mean_x, two.edge_mean_x);
    /* The seed's parameter guide: heavier cloth is moved less. The free
     * edge's mean x drops by more than 20% (measured 0.790 m -> 0.412 m,
     * -48%; with "dragLift" 0.807 m -> 0.431 m). */
    cr_assert(two.edge_mean_x < 0.8 * one.edge_mean_x, "1 kg: %.3f m, 2 kg: %.3f m",
              one.edge_mean_x, two.edge_mean_x);
}

Test(solver_aero, constant_wind_should_push_any_mass_the_same_and_let_the_flag_freeze)
{
    static flag_run one, two;
    fly_flag(1.0f, CD_WIND_CONSTANT, &one);
    fly_flag(2.0f, CD_WIND_CONSTANT, &two);
    /* The seed's wind is an acceleration: mass does not enter, and with a
     * uniform mass (the inverse masses differ by exactly 2) the positions
     * are bit-identical. */
    cr_assert(memcmp(one.final, two.final, sizeof one.final) == 0,
              "1 kg and 2 kg flags differ in constant-wind mode");
    /* It settles at an angle: the tip slower than 0.05 m/s at some point
     * after 10 s (measured 0.001 m/s) and asleep by 18 s (measured: at
     * 15.7 s with mass lumped by area); this is the failure the
     * aerodynamic model fixes. */
    cr_assert(one.tip_speed_min < 0.05, "tip speed down to %.4f m/s", one.tip_speed_min);
    cr_assert(one.asleep);
}

/* A 10 x 10 sheet, 1 kg, spacing 0.1 m, released at rest 10 m up with no
 * damping; flat (down = +z: it falls face first) or edge-on (down = -y:
 * it falls along its own plane). Returns the mean height after 1 s. */
static double fall_one_second(bool flat, float air_density, float *final)
{
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.damping = 0.0f;
    def.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    def.air_density = air_density;
    def.sleep_threshold = 0.0f;
    def.origin = fx_v3(0, 10, 0);
    if (flat)
        def.down = fx_v3(0, 0, 1);
    cd_instance *sheet = fx_cloth(world, &def);
    for (int i = 0; i < 60; i++)
        cd_instance_step(sheet, FX_DT, fx_no_wind());
    double y = 0.0;
    for (uint32_t i = 0; i < 100; i++)
        y += fx_pos(sheet, i).y;
    if (final != NULL)
        fx_snapshot(sheet, final);
    cd_world_destroy(world);
    return y / 100.0;
}

Test(solver_aero, sheet_falling_flat_through_still_air_should_fall_slower_than_in_vacuum)
{
    const double air = fall_one_second(true, 1.225f, NULL);
    const double vacuum = fall_one_second(true, 0.0f, NULL);
    /* In vacuum: 10 - g/2 = 5.095 m within 1 mm (measured 5.0955 m). */
    cr_assert_float_eq(vacuum, 10.0 - 0.5 * FX_G, 1e-3, "vacuum: %.5f m", vacuum);
    /* Through air it has fallen less than 3.5 m of the 4.9 m (measured
     * 3.15 m: its terminal speed is 4.1 m/s, below). */
    cr_log_info("fell %.4f m through air", 10.0 - air);
    cr_assert(10.0 - air < 3.5, "fell %.4f m through air", 10.0 - air);
}

Test(solver_aero, sheet_falling_edge_on_should_feel_no_drag)
{
    static float air[300], vacuum[300];
    const double y_air = fall_one_second(false, 1.225f, air);
    const double y_vacuum = fall_one_second(false, 0.0f, vacuum);
    /* The force scales with cos(normal, relative wind), which is 0 when
     * the sheet moves in its own plane: the same fall as in vacuum within
     * 1e-6 m per coordinate (measured bit-identical). */
    for (int i = 0; i < 300; i++)
        cr_assert_float_eq(air[i], vacuum[i], 1e-6, "coordinate %d: %.7f vs %.7f", i, air[i],
                           vacuum[i]);
    /* And that fall is free fall: the mean drops g/2 within 1 mm. */
    cr_assert_float_eq(y_vacuum - y_air, 0.0, 1e-6);
    cr_assert_float_eq(y_air, 10.0 - 0.45 - 0.5 * FX_G, 1e-3, "mean height %.5f m", y_air);
}

/* ---- the flat plate: coefficients ------------------------------------------ */

#define PLATE_N 20        /* 19 x 19 cells: runs of 10 and 9, a full AVX2 block and a partial one */
#define PLATE_SPACING 0.05
#define PLATE_WIND 10.0   /* m/s */
#define PLATE_DEG (3.14159265358979323846 / 180.0)

/* The force the air puts on a 0.95 m square plate at rest, at `deg`
 * degrees of incidence (the wind in the plate's x-z plane), from one call
 * of the stage: the sum over the particles of m (-change of prev) / h^2
 * (each triangle hands a third of its force to each corner). The plate
 * weighs 200 kg (0.5 kg a particle): an impulse changes a corner's
 * velocity by < 6 mm/s against 10 m/s of wind, so the triangles after it
 * (Gauss-Seidel) see the same wind within 0.1%. `prev_out` (3 floats a
 * particle) gets the history after the call, to compare the paths. */
static cd_vec3 plate_force(const char *path, cd_wind_model model, float drag, double deg,
                           float *prev_out)
{
    cr_assert(cd_solver_select_simd(path));
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = def.height = PLATE_N;
    def.spacing = (float)PLATE_SPACING;
    def.mass = 200.0f;
    def.wind_model = model;
    def.drag = drag;
    def.origin = fx_v3(-0.475f, 0.475f, 0.0f); /* centred on 0: fine float steps */
    cd_instance *plate = fx_cloth(world, &def);
    const uint32_t n = plate->particle_count;
    float *before = malloc(sizeof(float) * 3 * n);
    cr_assert_not_null(before);
    memcpy(before, plate->prev, sizeof(float) * 3 * n);
    const double a = deg * PLATE_DEG;
    const cd_substep sub = {.h = FX_DT,
                            .keep = 1.0f,
                            .accel = fx_v3(0, 0, 0),
                            .wind = fx_v3((float)(PLATE_WIND * cos(a)), 0.0f,
                                          (float)(PLATE_WIND * sin(a))),
                            .t0 = 0.0f,
                            .t1 = 1.0f};
    cd_stage_aerodynamics(plate, &sub);
    double f[3] = {0, 0, 0};
    const double h2 = (double)FX_DT * FX_DT;
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            f[k] -= ((double)plate->prev[3 * i + k] - before[3 * i + k]) /
                    ((double)plate->inv_mass[i] * h2);
    if (prev_out != NULL)
        memcpy(prev_out, plate->prev, sizeof(float) * 3 * n);
    free(before);
    cd_world_destroy(world);
    return fx_v3((float)f[0], (float)f[1], (float)f[2]);
}

/* Drag (along the wind) and lift (across it) coefficients of the force. */
static void coefficients(cd_vec3 f, double deg, double *cd, double *cl)
{
    const double a = deg * PLATE_DEG;
    const double qa = 0.5 * 1.225 * PLATE_WIND * PLATE_WIND * pow((PLATE_N - 1) * PLATE_SPACING, 2);
    const double wx = cos(a), wz = sin(a);
    const double along = f.x * wx + f.z * wz;
    const double ax = f.x - along * wx, ay = f.y, az = f.z - along * wz;
    *cd = along / qa;
    *cl = sqrt(ax * ax + ay * ay + az * az) / qa;
}

/* Measured flat plates (Hoerner, "Fluid-Dynamic Drag", 1965, and
 * "Fluid-Dynamic Lift", 1985, as issue 10 quotes them): a square plate
 * broadside has C_D 1.17; at 30 degrees of incidence C_D 0.29 and C_L
 * 0.51. The model is C_N = 1.17 sin(alpha) along the normal. */
typedef struct plate_row {
    double deg, cd, cl;
} plate_row;
static const plate_row measured[] = {{30, 0.29, 0.51}, {90, 1.17, 0.0}};

Test(solver_aero, flat_plate_should_give_the_drag_and_lift_of_measured_plates_on_both_paths)
{
    const uint32_t floats = 3 * PLATE_N * PLATE_N;
    static float ref[3 * PLATE_N * PLATE_N], simd[3 * PLATE_N * PLATE_N];
    const char *path = cd_solver_simd_path();
    /* The measured points, within 3% (measured 0.2925 / 0.5067 at 30
     * degrees, 1.1700 / 0.0000 at 90). */
    for (size_t r = 0; r < sizeof measured / sizeof measured[0]; r++) {
        double cd, cl;
        coefficients(plate_force("scalar", CD_WIND_AERO, CD_UNSET, measured[r].deg, NULL),
                     measured[r].deg, &cd, &cl);
        cr_log_info("%.0f deg: C_D %.4f (measured %.2f), C_L %.4f (measured %.2f)",
                    measured[r].deg, cd, measured[r].cd, cl, measured[r].cl);
        cr_assert_float_eq(cd, measured[r].cd, 0.03 * measured[r].cd, "%.0f deg: C_D %.4f",
                           measured[r].deg, cd);
        cr_assert_float_eq(cl, measured[r].cl, 0.03 * fmax(measured[r].cl, 0.5),
                           "%.0f deg: C_L %.4f", measured[r].deg, cl);
    }
    /* The model's curve, C_D = 1.17 sin^2, C_L = 1.17 sin cos, within 1%,
     * the force along the normal within 0.1 degree, and both kernels bit
     * for bit. */
    static const double degrees[] = {5, 10, 20, 30, 45, 60, 75, 90};
    for (size_t r = 0; r < sizeof degrees / sizeof degrees[0]; r++) {
        const double d = degrees[r], s = sin(d * PLATE_DEG), c = cos(d * PLATE_DEG);
        const cd_vec3 f = plate_force("scalar", CD_WIND_AERO, CD_UNSET, d, ref);
        double cd, cl;
        coefficients(f, d, &cd, &cl);
        cr_assert_float_eq(cd, CD_PLATE_DRAG * s * s, 0.01 * CD_PLATE_DRAG * s * s,
                           "%.0f deg: C_D %.5f", d, cd);
        cr_assert_float_eq(cl, CD_PLATE_DRAG * s * c, 0.01 * CD_PLATE_DRAG * s + 1e-4,
                           "%.0f deg: C_L %.5f", d, cl);
        const double off = atan2(hypot(f.x, f.y), fabs(f.z)) / PLATE_DEG;
        cr_assert_lt(off, 0.1, "%.0f deg: the force is %.3f degrees off the normal", d, off);
        if (cd_solver_select_simd("avx2")) {
            plate_force("avx2", CD_WIND_AERO, CD_UNSET, d, simd);
            cr_assert_eq(memcmp(ref, simd, sizeof(float) * floats), 0, "%.0f deg: paths differ", d);
        }
    }
    cd_solver_select_simd(path);
}

Test(solver_aero, drag_should_scale_the_plate_and_drag_lift_should_keep_the_old_coefficients)
{
    const char *path = cd_solver_simd_path();
    double cd, cl;
    /* `drag` is the plate's broadside coefficient: 2.34 doubles 1.17's. */
    coefficients(plate_force("scalar", CD_WIND_AERO, 2.34f, 30, NULL), 30, &cd, &cl);
    cr_assert_float_eq(cd, 2 * 0.2925, 0.006, "C_D %.4f", cd);
    cr_assert_float_eq(cl, 2 * 0.5067, 0.01, "C_L %.4f", cl);
    /* "dragLift", clothd's model before the flat plate, `drag` unset (1)
     * and lift 0.5: C_D = sin(alpha) = 0.50 and C_L = 0.5 sin cos = 0.217
     * at 30 degrees (issue 10's "C_D 0.50 / C_L 0.22"), on either path
     * (it has the scalar kernel only). */
    for (int p = 0; p < 2; p++) {
        if (!cd_solver_select_simd(paths[p]))
            continue;
        coefficients(plate_force(paths[p], CD_WIND_DRAG_LIFT, CD_UNSET, 30, NULL), 30, &cd, &cl);
        cr_assert_float_eq(cd, 0.5, 0.005, "%s: C_D %.4f", paths[p], cd);
        cr_assert_float_eq(cl, 0.2165, 0.003, "%s: C_L %.4f", paths[p], cl);
    }
    cd_solver_select_simd(path);
}

Test(solver_aero, a_tiny_triangle_flung_in_its_own_plane_should_feel_nothing_on_both_paths)
{
    /* 20 x 2 particles 2 um apart (|N|^2 = 1.6e-23, just above the
     * degenerate bound) moving at 1e8 m/s in their own plane: N.u is 0
     * exactly, and so must be the force. (|u| / |N| computed as
     * sqrt(uu / nn) overflows to infinity here, and 0 x inf is NaN.) */
    const char *path = cd_solver_simd_path();
    for (int p = 0; p < 2; p++) {
        if (!cd_solver_select_simd(paths[p]))
            continue;
        cd_world *world = fx_world();
        cd_cloth_def def = fx_seed_def();
        def.width = 20;
        def.height = 2;
        def.spacing = 2e-6f;
        cd_instance *cloth = fx_cloth(world, &def);
        const uint32_t n = cloth->particle_count;
        for (uint32_t i = 0; i < n; i++)
            cloth->prev[3 * i] = cloth->pos[3 * i] - 1e8f * FX_DT;
        float before[3 * 40];
        memcpy(before, cloth->prev, sizeof before);
        const cd_substep sub = {.h = FX_DT, .keep = 1.0f, .wind = fx_v3(0, 0, 0)};
        cd_stage_aerodynamics(cloth, &sub);
        cr_assert_eq(memcmp(before, cloth->prev, sizeof before), 0, "%s: prev changed", paths[p]);
        cd_world_destroy(world);
    }
    cd_solver_select_simd(path);
}

/* ---- the two kernels on grids of every width -------------------------------- */

/* A w x h flag (left column pinned, wind (6, 1, 2) m/s, 2 substeps) after
 * 40 steps on `path`; returns its positions (malloc'd). */
static float *flag_on(const char *path, int w, int h)
{
    cr_assert(cd_solver_select_simd(path));
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = w;
    def.height = h;
    def.spacing = 0.04f;
    def.substeps = 2;
    def.sleep_threshold = 0.0f;
    cd_instance *flag = fx_cloth(world, &def);
    for (int y = 0; y < h; y++)
        cr_assert_eq(cd_instance_pin(flag, (uint32_t)(y * w), NULL), CD_OK);
    cd_instance_set_wind(flag, fx_v3(6.0f, 1.0f, 2.0f));
    for (int s = 0; s < 40; s++)
        cr_assert_not(cd_instance_step(flag, FX_DT, fx_no_wind()).unstable);
    const size_t n = 3u * (size_t)w * (size_t)h;
    float *out = malloc(n * sizeof *out);
    cr_assert_not_null(out);
    memcpy(out, cd_instance_local_positions(flag), n * sizeof *out);
    cd_world_destroy(world);
    return out;
}

Test(solver_aero, both_kernels_should_move_grids_of_every_width_bit_for_bit)
{
    if (!__builtin_cpu_supports("avx2"))
        cr_skip_test("this CPU has no AVX2: nothing to compare the reference with");
    const char *path = cd_solver_simd_path();
    /* Widths 2..41: runs of 0 to 20 cells, shorter than a block (scalar),
     * whole blocks, and a partial last block; pinned corners in them. */
    for (int w = 2; w <= 41; w++) {
        const int h = 3 + w % 5;
        float *ref = flag_on("scalar", w, h);
        float *simd = flag_on("avx2", w, h);
        double worst = 0.0;
        for (int i = 0; i < 3 * w * h; i++)
            worst = fmax(worst, fabs((double)ref[i] - simd[i]));
        cr_assert_eq(memcmp(ref, simd, sizeof(float) * 3u * (size_t)(w * h)), 0,
                     "%d x %d: positions differ by up to %.3g m", w, h, worst);
        free(ref);
        free(simd);
    }
    cd_solver_select_simd(path);
}

/* ---- the flat plate: balances ----------------------------------------------- */

Test(solver_aero, grid_masses_should_be_a_third_of_each_adjacent_triangle)
{
    /* Issue 10: mass lumped by area, as the aerodynamic stage hands out its
     * forces, so every particle's drag per kilogram is the same. A 7 x 5
     * sheet of 2 kg: each particle's mass is fx_grid_mass's within float
     * rounding, and they sum to the total. */
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = 7;
    def.height = 5;
    def.mass = 2.0f;
    cd_instance *cloth = fx_cloth(world, &def);
    double total = 0.0;
    for (uint32_t i = 0; i < 35; i++) {
        const double want = fx_grid_mass(7, 5, 2.0, i), got = 1.0 / cloth->inv_mass[i];
        cr_assert_float_eq(got, want, 1e-6 * want, "particle %u: %.7f kg, want %.7f", i, got, want);
        total += got;
    }
    cr_assert_float_eq(total, 2.0, 1e-5);
    /* An interior particle carries a cell's mass, an edge one half, the
     * corners a sixth or a third of it. */
    const double cell = 2.0 / 24.0;
    cr_assert_float_eq(1.0 / cloth->inv_mass[8], cell, 1e-7);
    cr_assert_float_eq(1.0 / cloth->inv_mass[3], cell / 2, 1e-7);
    cr_assert_float_eq(1.0 / cloth->inv_mass[0], cell / 6, 1e-7);
    cr_assert_float_eq(1.0 / cloth->inv_mass[6], cell / 3, 1e-7);
    cd_world_destroy(world);
}

#define SHEET_N 10
#define SHEET_SPACING 0.1f
#define SHEET_MASS 1.0f

/* The sheet of the tests above (10 x 10, spacing 0.1 m, 1 kg) falling
 * face first from 100 m through still air, its mass lumped by area as the
 * builder does (a third of each triangle to its corners), no damping (the seed's per-step damping is a drag of its own) and the
 * default stepping (automatic substeps, one pass each): its mean vertical
 * velocity over 2..3 s, and its largest height difference (cupping) at
 * 3 s. */
static void fall_face_first(const char *path, bool at_defaults, double *speed, double *cupping)
{
    cr_assert(cd_solver_select_simd(path));
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = SHEET_N;
    def.spacing = SHEET_SPACING;
    def.mass = SHEET_MASS;
    def.down = fx_v3(0, 0, 1); /* horizontal */
    def.origin = fx_v3(0, 100, 0);
    if (!at_defaults) {
        def.damping = 0.0f;
        def.velocity_retention = CD_UNSET; /* the seed's per-step damping */
    }
    def.sleep_threshold = 0.0f;
    cd_instance *sheet = fx_cloth(world, &def);
    const uint32_t n = SHEET_N * SHEET_N;
    double y2 = 0.0, y3 = 0.0;
    for (int s = 1; s <= 180; s++) {
        cr_assert_not(cd_instance_step(sheet, FX_DT, fx_no_wind()).unstable);
        if (s == 120 || s == 180) {
            double y = 0.0;
            for (uint32_t i = 0; i < n; i++)
                y += fx_pos(sheet, i).y;
            *(s == 120 ? &y2 : &y3) = y / n;
        }
    }
    *speed = (y2 - y3) / 1.0;
    double lo = INFINITY, hi = -INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        lo = fmin(lo, fx_pos(sheet, i).y);
        hi = fmax(hi, fx_pos(sheet, i).y);
    }
    *cupping = hi - lo;
    cd_world_destroy(world);
}

Test(solver_aero, flat_sheet_should_fall_at_its_drag_balance_terminal_velocity)
{
    /* sqrt(2 m g / (rho C_D A)), C_D = 1.17 broadside, A = 0.81 m^2:
     * 4.111 m/s (v tanh(g t / v): terminal within 0.02% by 2 s). */
    const double side = (SHEET_N - 1) * SHEET_SPACING;
    const double balance = sqrt(2.0 * SHEET_MASS * FX_G / (1.225 * CD_PLATE_DRAG * side * side));
    /* Within 5% (measured 4.142 m/s, +0.8%, at the default small steps;
     * at 1 substep x 4 iterations 4.197, +2%: within a substep the
     * triangles after a particle's first ones see it already slowed, so
     * the stage's drag is a little low) and flat within 5% of its width
     * (measured 33 mm, 3.7%: in world coordinates at 100 m, where the
     * float spacing is 7.6e-6 m, the roundings seeded a cup of 147 mm at
     * these small steps; the local frame of anchor.c keeps them out). Lumped by the
     * grid's cells instead, masses and aerodynamic forces disagreed at the
     * corners and the sheet cupped 0.44 m (issue 10). A sheet falling flat is not stable: distance-based
     * bending has no stiffness about the flat shape and a tilted triangle
     * catches less air, so a cup, once seeded, grows (at 1 substep: 80 mm
     * at 4 s, 0.3 m at 5 s). */
    const char *path = cd_solver_simd_path();
    for (int p = 0; p < 2; p++) {
        if (!cd_solver_select_simd(paths[p]))
            continue;
        double speed, cupping;
        fall_face_first(paths[p], false, &speed, &cupping);
        cr_log_info("%s: %.4f m/s (balance %.4f), cupping %.5f m", paths[p], speed, balance,
                    cupping);
        cr_assert_float_eq(speed, balance, 0.05 * balance, "%s: %.4f m/s, balance %.4f m/s",
                           paths[p], speed, balance);
        cr_assert_lt(cupping, 0.05 * side, "%s: cupped %.4f m", paths[p], cupping);
    }
    cd_solver_select_simd(path);
}

Test(solver_aero, flat_sheet_at_the_defaults_should_fall_at_the_balance_with_its_damping)
{
    /* Every option at its default: velocityRetention r = 0.547 per second
     * takes c = -ln r = 0.603 of the velocity per second from every
     * particle, a linear drag of its own, so the sheet's balance is
     *   m g = rho C_D A v^2 / 2 + m c v
     *   -> v = (sqrt(c^2 + 4 k g) - c) / (2 k), k = rho C_D A / (2 m)
     * = 3.624 m/s (the air alone: 4.111). Within 5% (measured 3.642 m/s,
     * +0.5%) and flat within 5% of its width (measured 19 mm, 2.1%);
     * PROTOCOL.md says why the default keeps this damping. */
    const double side = (SHEET_N - 1) * SHEET_SPACING;
    const double c = -log((double)cd_default_cloth_def().velocity_retention);
    const double k = 1.225 * CD_PLATE_DRAG * side * side / (2.0 * SHEET_MASS);
    const double balance = (sqrt(c * c + 4.0 * k * FX_G) - c) / (2.0 * k);
    double speed, cupping;
    fall_face_first(cd_solver_simd_path(), true, &speed, &cupping);
    cr_log_info("defaults: %.4f m/s (balance %.4f), cupping %.5f m", speed, balance, cupping);
    cr_assert_float_eq(speed, balance, 0.05 * balance, "%.4f m/s, balance %.4f m/s", speed, balance);
    cr_assert_lt(cupping, 0.05 * side, "cupped %.4f m", cupping);
}

#define BANNER_W 10
#define BANNER_H 11
#define BANNER_WIND 2.0f

/* A banner 0.45 m wide and 0.5 m long (10 x 11, spacing 0.05 m, 0.1 kg
 * lumped by area) hinged along its top row, stiff (compliance 0, 4
 * substeps x 16 iterations), in a horizontal wind square to it. Returns the mean angle
 * from the vertical of the line from the hinge to the bottom row over
 * 4..8 s, and in `balance` the angle at which the model's normal force and
 * gravity hold each other about the hinge, computed from the instance's
 * own masses:
 *   C q cos(t) sum_tri (A/3) sum_corners l = g sin(t) sum_free m l
 * (l: a particle's distance from the hinge along the banner). */
static double banner_angle(const char *path, double *balance)
{
    cr_assert(cd_solver_select_simd(path));
    cd_world *world = fx_world();
    cd_cloth_def def = fx_seed_def();
    def.width = BANNER_W;
    def.height = BANNER_H;
    def.spacing = 0.05f;
    def.mass = 0.1f;
    def.origin = fx_v3(0, 2, 0);
    def.stretch_compliance = 0.0f;
    def.bend_compliance = 0.0f;
    def.substeps = 4;
    def.solver_iterations = 16;
    def.velocity_retention = 0.2f; /* settles; no effect on the balance */
    def.sleep_threshold = 0.0f;
    cd_instance *banner = fx_cloth(world, &def);
    for (uint32_t x = 0; x < BANNER_W; x++)
        cr_assert_eq(cd_instance_pin(banner, x, NULL), CD_OK);
    cd_instance_set_wind(banner, fx_v3(0, 0, BANNER_WIND));
    /* The balance. A cell of row r has corners r and r + 1 rows from the
     * hinge; its tl-bl-tr triangle's corners are at rows r, r + 1, r and
     * its tr-bl-br one's at r, r + 1, r + 1. (Row 0's share goes into the
     * pins, at no distance from the hinge.) */
    const double s = def.spacing, cell = s * s / 2.0; /* a triangle's area */
    double aero = 0.0, weight = 0.0;
    for (int r = 0; r + 1 < BANNER_H; r++)
        aero += (BANNER_W - 1) * (cell / 3.0) * (s * (3 * r + 1) + s * (3 * r + 2));
    for (uint32_t i = BANNER_W; i < banner->particle_count; i++)
        weight += (s * (double)(i / BANNER_W)) / (double)banner->inv_mass[i];
    const double q = 0.5 * 1.225 * BANNER_WIND * BANNER_WIND;
    *balance = atan(CD_PLATE_DRAG * q * aero / (FX_G * weight)) / PLATE_DEG;
    double sum = 0.0;
    int watched = 0;
    for (int step = 1; step <= 480; step++) {
        cr_assert_not(cd_instance_step(banner, FX_DT, fx_no_wind()).unstable);
        if (step <= 240)
            continue;
        double dy = 0.0, dz = 0.0;
        for (uint32_t x = 0; x < BANNER_W; x++) {
            const cd_vec3 top = fx_pos(banner, x), bottom = fx_pos(banner, (BANNER_H - 1) * BANNER_W + x);
            dy += top.y - bottom.y;
            dz += bottom.z - top.z;
        }
        sum += atan2(dz, dy) / PLATE_DEG;
        watched++;
    }
    cd_world_destroy(world);
    return sum / watched;
}

Test(solver_aero, banner_in_steady_wind_should_hang_at_the_models_balance)
{
    const char *path = cd_solver_simd_path();
    for (int p = 0; p < 2; p++) {
        if (!cd_solver_select_simd(paths[p]))
            continue;
        double balance;
        const double angle = banner_angle(paths[p], &balance);
        /* Within 2 degrees (measured 32.90 against 33.32 on both paths:
         * the banner is not quite rigid). */
        cr_log_info("%s: mean angle %.2f deg, balance %.2f deg", paths[p], angle, balance);
        cr_assert_float_eq(angle, balance, 2.0, "%s: %.2f deg, balance %.2f deg", paths[p], angle,
                           balance);
    }
    cd_solver_select_simd(path);
}
