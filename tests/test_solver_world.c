/* The world: generation-checked instance ids, slots, limits, definition
 * validation and memory accounting (solver/world.c, solver/instance.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "solver_fixtures.h"

static cd_world *small_world(uint32_t max_instances, uint32_t max_particles)
{
    cd_world_def def = {.max_instances = max_instances, .max_particles = max_particles};
    cd_world *world = cd_world_create(&def);
    cr_assert_not_null(world);
    return world;
}

static cd_id create(cd_world *world)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 2; /* small: these tests are about handles */
    cd_id id = 0;
    cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_OK);
    cr_assert_neq(id, 0u, "0 is the null id");
    return id;
}

static int compare_ids(const void *a, const void *b)
{
    cd_id x = *(const cd_id *)a, y = *(const cd_id *)b;
    return (x > y) - (x < y);
}

Test(solver_world, first_ids_should_be_1_then_2)
{
    cd_world *world = fx_world();
    cr_assert_eq(cd_world_count(world), 0u);
    cd_id a = create(world), b = create(world);
    cr_assert_eq(a, 1u);
    cr_assert_eq(b, 2u);
    cr_assert_eq(cd_world_count(world), 2u);
    cr_assert_eq(cd_instance_id(cd_world_get(world, a)), a);
    cr_assert_eq(cd_instance_id(cd_world_get(world, b)), b);
    cd_instance_info info;
    cd_instance_get_info(cd_world_get(world, b), &info);
    cr_assert_eq(info.id, b);
    cd_world_destroy(world);
}

Test(solver_world, destroyed_id_should_never_be_valid_again_after_many_creations)
{
    enum { ROUNDS = 5000 };
    cd_world *world = small_world(8, 1024);
    const cd_id first = create(world);
    cr_assert_eq(cd_world_destroy_instance(world, first), CD_OK);
    cr_assert_null(cd_world_get(world, first));
    cr_assert_eq(cd_world_destroy_instance(world, first), CD_E_NOT_FOUND);

    static cd_id issued[ROUNDS + 1];
    issued[0] = first;
    cd_id keep[4] = {0};
    for (uint32_t k = 1; k <= ROUNDS; k++) {
        /* Churn: 4 long-lived instances shuffle around the short-lived ones. */
        cd_id id = create(world);
        issued[k] = id;
        if (k % 97 == 0) {
            uint32_t slot = (k / 97) % 4;
            if (keep[slot] != 0)
                cr_assert_eq(cd_world_destroy_instance(world, keep[slot]), CD_OK);
            keep[slot] = id;
        } else {
            cr_assert_eq(cd_world_destroy_instance(world, id), CD_OK);
            cr_assert_null(cd_world_get(world, id), "id %#x valid after destroy", id);
        }
        cr_assert_null(cd_world_get(world, first), "round %u: the first id came back", k);
    }
    /* Every id ever issued is distinct (the 16-bit generation has not
     * wrapped: each of 8 slots was reused about 625 times). */
    qsort(issued, ROUNDS + 1, sizeof issued[0], compare_ids);
    for (uint32_t k = 1; k <= ROUNDS; k++)
        cr_assert_neq(issued[k], issued[k - 1], "id %#x issued twice", issued[k]);
    cr_assert_eq(cd_world_count(world), 4u);
    cd_world_destroy(world);
}

Test(solver_world, reused_slot_should_get_a_different_id)
{
    cd_world *world = small_world(1, 1024);
    cd_id a = create(world);
    cr_assert_eq(cd_world_destroy_instance(world, a), CD_OK);
    cd_id b = create(world);
    cr_assert_eq(cd_id_index(a), cd_id_index(b), "one slot, so the same slot");
    cr_assert_neq(a, b, "but a new generation");
    cr_assert_null(cd_world_get(world, a));
    cr_assert_not_null(cd_world_get(world, b));
    cr_assert_eq(cd_world_destroy_instance(world, a), CD_E_NOT_FOUND, "stale id destroys nothing");
    cr_assert_not_null(cd_world_get(world, b));
    cd_world_destroy(world);
}

Test(solver_world, freed_slots_should_be_reused_oldest_freed_first)
{
    cd_world *world = small_world(4, 1024);
    cd_id ids[4];
    for (int k = 0; k < 4; k++)
        ids[k] = create(world);
    cr_assert_eq(cd_world_destroy_instance(world, ids[2]), CD_OK); /* slot 3 first */
    cr_assert_eq(cd_world_destroy_instance(world, ids[0]), CD_OK); /* then slot 1 */
    cr_assert_eq(cd_id_index(create(world)), 3u);
    cr_assert_eq(cd_id_index(create(world)), 1u);
    cd_world_destroy(world);
}

Test(solver_world, never_issued_ids_should_not_resolve)
{
    cd_world *world = small_world(4, 1024);
    cd_id a = create(world);
    cr_assert_null(cd_world_get(world, 0), "the null id");
    cr_assert_null(cd_world_get(world, 2), "a free slot");
    cr_assert_null(cd_world_get(world, 5), "beyond max_instances");
    cr_assert_null(cd_world_get(world, 0xFFFFu), "far beyond max_instances");
    cr_assert_null(cd_world_get(world, a | (1u << 16)), "a future generation");
    cr_assert_null(cd_world_get(NULL, a), "no world");
    cr_assert_eq(cd_world_destroy_instance(world, 0), CD_E_NOT_FOUND);
    cr_assert_eq(cd_world_destroy_instance(world, 9), CD_E_NOT_FOUND);
    cr_assert_eq(cd_world_count(world), 1u);
    cd_world_destroy(world);
}

Test(solver_world, max_instances_should_be_enforced)
{
    cd_world *world = small_world(3, 1024);
    cd_id ids[3];
    for (int k = 0; k < 3; k++)
        ids[k] = create(world);
    cd_cloth_def def = cd_default_cloth_def();
    cd_id extra = 0;
    cr_assert_eq(cd_world_create_cloth(world, &def, &extra), CD_E_LIMIT_EXCEEDED);
    cr_assert_eq(cd_world_count(world), 3u);
    /* A slot freed is a slot available. */
    cr_assert_eq(cd_world_destroy_instance(world, ids[1]), CD_OK);
    cr_assert_eq(cd_world_create_cloth(world, &def, &extra), CD_OK);
    cr_assert_eq(cd_world_create_cloth(world, &def, &extra), CD_E_LIMIT_EXCEEDED);
    cd_world_destroy(world);
}

Test(solver_world, max_particles_should_be_enforced_per_instance)
{
    cd_world *world = small_world(16, 100);
    cd_cloth_def def = cd_default_cloth_def();
    cd_id id = 0;
    cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_OK, "10x10 is exactly 100");
    def.height = 11;
    cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_E_LIMIT_EXCEEDED);
    def.width = def.height = 65535; /* 4.3e9 particles: no 32-bit overflow */
    cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_E_LIMIT_EXCEEDED);
    def.width = 50;
    def.height = 2;
    cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_OK, "the limit is per instance");
    cr_assert_eq(cd_world_count(world), 2u);
    cd_world_destroy(world);
}

Test(solver_world, world_create_should_reject_an_out_of_range_def)
{
    cr_assert_null(cd_world_create(NULL));
    cd_world_def def = {.max_instances = 0, .max_particles = 1024};
    cr_assert_null(cd_world_create(&def));
    def.max_instances = 65536; /* slots are 16-bit */
    cr_assert_null(cd_world_create(&def));
    def.max_instances = 65535;
    def.max_particles = 3; /* not even a 2x2 cloth */
    cr_assert_null(cd_world_create(&def));
    def.max_particles = 4;
    cd_world *world = cd_world_create(&def);
    cr_assert_not_null(world);
    cd_world_destroy(world);
    cd_world_destroy(NULL); /* harmless */
}

/* Each entry breaks exactly one field of the default def. */
typedef struct bad_def {
    const char *what;
    void (*spoil)(cd_cloth_def *def);
} bad_def;

static void width_1(cd_cloth_def *d) { d->width = 1; }
static void width_negative(cd_cloth_def *d) { d->width = -4; }
static void height_1(cd_cloth_def *d) { d->height = 1; }
static void spacing_0(cd_cloth_def *d) { d->spacing = 0.0f; }
static void spacing_negative(cd_cloth_def *d) { d->spacing = -0.1f; }
static void spacing_nan(cd_cloth_def *d) { d->spacing = NAN; }
static void spacing_inf(cd_cloth_def *d) { d->spacing = INFINITY; }
static void mass_0(cd_cloth_def *d) { d->mass = 0.0f; }
static void mass_negative(cd_cloth_def *d) { d->mass = -1.0f; }
static void mass_nan(cd_cloth_def *d) { d->mass = NAN; }
static void stiffness_1_5(cd_cloth_def *d) { d->stiffness = 1.5f; }
static void stiffness_negative(cd_cloth_def *d) { d->stiffness = -0.1f; }
static void stiffness_nan(cd_cloth_def *d) { d->stiffness = NAN; }
static void bend_1_5(cd_cloth_def *d) { d->bend_stiffness = 1.5f; }
static void bend_nan(cd_cloth_def *d) { d->bend_stiffness = NAN; }
static void damping_1_5(cd_cloth_def *d) { d->damping = 1.5f; }
static void damping_negative(cd_cloth_def *d) { d->damping = -0.01f; }
static void origin_nan(cd_cloth_def *d) { d->origin.y = NAN; }
static void origin_inf(cd_cloth_def *d) { d->origin.z = -INFINITY; }
static void right_zero(cd_cloth_def *d) { d->right = fx_v3(0, 0, 0); }
static void right_nan(cd_cloth_def *d) { d->right.x = NAN; }
static void down_zero(cd_cloth_def *d) { d->down = fx_v3(0, 0, 0); }
static void down_inf(cd_cloth_def *d) { d->down.y = INFINITY; }
static void gravity_nan(cd_cloth_def *d) { d->gravity.y = NAN; }
static void right_parallel_to_down(cd_cloth_def *d) { d->right = fx_v3(0, -2, 0); }
static void right_opposite_to_down(cd_cloth_def *d) { d->right = fx_v3(0, 3, 0); }
static void origin_beyond_guard(cd_cloth_def *d) { d->origin = fx_v3(2.0e5f, 0, 0); }
static void grid_beyond_guard(cd_cloth_def *d) { d->origin = fx_v3(0, -99999.5f, 0); }
static void spacing_beyond_guard(cd_cloth_def *d) { d->spacing = 2.0e4f; }
static void iterations_0(cd_cloth_def *d) { d->solver_iterations = 0; }
static void iterations_negative(cd_cloth_def *d) { d->solver_iterations = -3; }

Test(solver_world, invalid_cloth_def_should_be_rejected_field_by_field)
{
    static const bad_def cases[] = {
        {"width 1", width_1},
        {"width -4", width_negative},
        {"height 1", height_1},
        {"spacing 0", spacing_0},
        {"spacing -0.1", spacing_negative},
        {"spacing NaN", spacing_nan},
        {"spacing inf", spacing_inf},
        {"mass 0", mass_0},
        {"mass -1", mass_negative},
        {"mass NaN", mass_nan},
        {"stiffness 1.5", stiffness_1_5},
        {"stiffness -0.1", stiffness_negative},
        {"stiffness NaN", stiffness_nan},
        {"bend 1.5", bend_1_5},
        {"bend NaN", bend_nan},
        {"damping 1.5", damping_1_5},
        {"damping -0.01", damping_negative},
        {"origin NaN", origin_nan},
        {"origin -inf", origin_inf},
        {"right (0,0,0)", right_zero},
        {"right NaN", right_nan},
        {"down (0,0,0)", down_zero},
        {"down inf", down_inf},
        {"gravity NaN", gravity_nan},
        {"right parallel to down", right_parallel_to_down},
        {"right opposite to down", right_opposite_to_down},
        /* Finite, but a particle would start beyond the guard's 1e5 m box
         * and the instance could never take a step. */
        {"origin at 2e5 m", origin_beyond_guard},
        {"bottom row at -100000.4 m", grid_beyond_guard},
        {"spacing 2e4 m (9 x 2e4 = 1.8e5 m)", spacing_beyond_guard},
        {"iterations 0", iterations_0},
        {"iterations -3", iterations_negative},
    };
    cd_world *world = fx_world();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cd_cloth_def def = cd_default_cloth_def();
        cases[k].spoil(&def);
        cd_id id = 0xDEADu;
        cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_E_INVALID_ARGUMENT, "%s accepted",
                     cases[k].what);
        cr_assert_eq(id, 0xDEADu, "%s: the out id is not written on failure", cases[k].what);
    }
    cr_assert_eq(cd_world_count(world), 0u, "nothing was created");

    /* The edges of every range are valid. */
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 2;
    def.stiffness = 0.0f;
    def.bend_stiffness = 1.0f;
    def.damping = 1.0f;
    def.solver_iterations = 1;
    cd_id id = 0;
    cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_OK);
    def.stiffness = 1.0f;
    def.bend_stiffness = 0.0f;
    def.damping = 0.0f;
    cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_OK);
    cd_world_destroy(world);
}

Test(solver_world, list_should_return_live_ids_in_slot_order)
{
    cd_world *world = small_world(8, 1024);
    cd_id ids[8];
    for (int k = 0; k < 5; k++)
        ids[k] = create(world); /* slots 1..5 */
    cr_assert_eq(cd_world_destroy_instance(world, ids[1]), CD_OK);
    cr_assert_eq(cd_world_destroy_instance(world, ids[3]), CD_OK);
    for (int k = 5; k < 8; k++)
        ids[k] = create(world); /* slots 6, 7, 8 (never used come first) */
    const cd_id reused = create(world); /* slot 2, the oldest freed */
    cr_assert_eq(cd_id_index(reused), 2u);

    cd_id listed[16];
    memset(listed, 0, sizeof listed);
    const uint32_t n = cd_world_list(world, listed, 16);
    cr_assert_eq(n, 7u);
    cr_assert_eq(n, cd_world_count(world));
    const cd_id expected[7] = {ids[0], reused, ids[2], ids[4], ids[5], ids[6], ids[7]};
    for (uint32_t k = 0; k < 7; k++)
        cr_assert_eq(listed[k], expected[k], "position %u: %#x, want %#x", k, listed[k],
                     expected[k]);
    for (uint32_t k = 1; k < 7; k++)
        cr_assert(cd_id_index(listed[k - 1]) < cd_id_index(listed[k]), "slot order at %u", k);
    cr_assert_eq(listed[7], 0u, "nothing written past the live count");

    /* A short buffer gets the first `cap` ids; the count is still all. */
    cd_id three[3] = {0};
    cr_assert_eq(cd_world_list(world, three, 3), 7u);
    cr_assert(memcmp(three, expected, sizeof three) == 0);
    cr_assert_eq(cd_world_list(world, NULL, 0), 7u, "a count-only call");
    cd_world_destroy(world);
}

Test(solver_world, instance_pointer_should_stay_valid_while_others_come_and_go)
{
    cd_world *world = small_world(64, 1024);
    cd_id keep = create(world);
    cd_instance *inst = cd_world_get(world, keep);
    cd_id others[40];
    for (int k = 0; k < 40; k++)
        others[k] = create(world);
    for (int k = 0; k < 40; k += 2)
        cr_assert_eq(cd_world_destroy_instance(world, others[k]), CD_OK);
    for (int k = 0; k < 20; k++)
        create(world);
    cr_assert_eq(cd_world_get(world, keep), inst, "the same object");
    cr_assert_eq(cd_instance_id(inst), keep);
    cr_assert_eq(cd_instance_particle_count(inst), 4u);
    cd_world_destroy(world);
}

Test(solver_world, memory_of_a_20x20_cloth_should_be_under_the_seeds_rates)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 20;
    cd_instance *cloth = fx_cloth(world, &def);
    const size_t bytes = cd_instance_memory(cloth);
    /* Floor: positions and previous positions (2 x 400 x 12 bytes) plus the
     * 2202 constraints of 16 bytes, which it must at least count. */
    const size_t floor_bytes = 2u * 400u * 12u + 2202u * 16u;
    /* The seed's estimate is ~57 KB: ~64 bytes per particle and ~16 per
     * constraint for "~2,000" of them. This cloth has 2202 (shear on both
     * diagonals, PROTOCOL.md), so the seed's rates give 60,832 bytes; clothd
     * keeps 53 bytes per particle (positions, previous positions and the
     * compensated-Verlet residual, masses, tether) and 16 per constraint slot
     * (measured 58,776 with the colours' padding and the instance). */
    cr_assert(bytes < 400u * 64u + 2202u * 16u, "%zu bytes", bytes);
    cr_assert(bytes > floor_bytes, "%zu bytes does not even cover %zu", bytes, floor_bytes);

    /* Three colliders of the seed's ~40 bytes, its example, still fit
     * (measured 59,496: clothd's collider keeps its pose, path and
     * impulses in 192 bytes). */
    cd_collider_def sphere = cd_default_collider_def(CD_COLLIDER_SPHERE);
    cd_id id;
    for (int k = 0; k < 3; k++)
        cr_assert_eq(cd_instance_add_collider(cloth, &sphere, &id), CD_OK);
    const size_t with_colliders = cd_instance_memory(cloth);
    cr_assert(with_colliders > bytes, "colliders are counted");
    cr_assert(with_colliders < 400u * 64u + 2202u * 16u + 3u * 40u, "%zu bytes", with_colliders);

    /* Self-collision's buffers come with selfDistance, and are counted:
     * 48 candidate pairs of 8 bytes, a 32-byte hash entry (its cell,
     * index, position and move), a float and 2-4 bucket starts per
     * particle, and 8 entries of padding (solver/DESIGN.md says about 430). */
    def = cd_instance_def(cloth);
    def.self_distance = 0.08f;
    cr_assert_eq(cd_instance_configure(cloth, &def), CD_OK);
    const double per_particle = (double)(cd_instance_memory(cloth) - with_colliders) / 400.0;
    cr_assert(per_particle >= 48 * 8 + 32 + 4 + 8 &&
                  per_particle <= 48 * 8 + 32 + 4 + 16 + 8.0 * 32 / 400,
              "%.1f bytes per particle", per_particle);
    cd_world_destroy(world);
}

/* ---- the world's faults name the field (issue 9, item 10) ---------------- */

static void expect_fault(cd_world *world, const cd_cloth_def *def, cd_status code,
                         cd_fault_kind kind, const char *message)
{
    cd_id id = 0xDEADu;
    cd_field_fault f;
    cr_assert_eq(cd_world_create_cloth_ex(world, def, &id, &f), code, "%s", message);
    cr_assert_eq(id, 0xDEADu);
    cr_assert_eq(f.kind, kind, "%s: kind %d", message, f.kind);
    char got[256];
    snprintf(got, sizeof got, "%s: %s", f.field, f.reason);
    cr_assert_str_eq(got, message);
}

Test(solver_world, a_bad_field_is_named_not_blamed_on_the_layout)
{
    cd_world *world = fx_world();
    cd_cloth_def def = cd_default_cloth_def();
    def.thickness = 5000.0f;
    expect_fault(world, &def, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD,
                 "thickness: must be a number in [0, 1000]");
    def = cd_default_cloth_def();
    def.tether_scale = 3e38f;
    expect_fault(world, &def, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD,
                 "tetherScale: must be a number in [1, 1000]");
    def = cd_default_cloth_def();
    def.mass = NAN;
    expect_fault(world, &def, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD, "mass: must be finite");
    def = cd_default_cloth_def();
    def.right = fx_v3(0, 0, 0);
    expect_fault(world, &def, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD,
                 "right: must not be zero-length");
    def = cd_default_cloth_def();
    def.wind_model = (cd_wind_model)7;
    expect_fault(world, &def, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD,
                 "windModel: must be \"aero\", \"constant\" or \"dragLift\"");
    def = cd_default_cloth_def();
    def.right = fx_v3(0, 3, 0);
    expect_fault(world, &def, CD_E_INVALID_ARGUMENT, CD_FAULT_LAYOUT,
                 "down: must not be parallel to right");
    def = cd_default_cloth_def();
    def.origin = fx_v3(0, -99999.5f, 0);
    expect_fault(world, &def, CD_E_INVALID_ARGUMENT, CD_FAULT_LAYOUT,
                 "origin: the cloth reaches outside the world box (|x|, |y|, |z| <= 100000 m)");
    def = cd_default_cloth_def();
    def.self_distance = 0.2f; /* spacing 0.1 */
    expect_fault(world, &def, CD_E_INVALID_ARGUMENT, CD_FAULT_FIELD,
                 "selfDistance: must be at most the spacing (0.1 m)");
    cr_assert_eq(cd_world_count(world), 0u);
    cd_world_destroy(world);
}

Test(solver_world, limits_are_faults_of_their_own_kind)
{
    cd_world_def wd = {.max_instances = 2, .max_particles = 400, .max_total_particles = 700,
                       .max_step_work = 400 * 4 * 2};
    cd_world *world = cd_world_create(&wd);
    cr_assert_not_null(world);
    cd_cloth_def def = fx_seed_def(); /* 1 x 4 */
    def.width = 21;
    def.height = 20;
    expect_fault(world, &def, CD_E_LIMIT_EXCEEDED, CD_FAULT_PARTICLES,
                 "width, height: 420 particles exceed the limit of 400");
    def.width = 20;
    def.substeps = 3;
    expect_fault(world, &def, CD_E_LIMIT_EXCEEDED, CD_FAULT_STEP_WORK,
                 "substeps, iterations: 400 particles x 3 substeps x 4 iterations = 4800 "
                 "exceeds the step work limit of 3200");
    def.substeps = 2; /* exactly the limit */
    cd_id a = 0, b = 0, c = 0;
    cr_assert_eq(cd_world_create_cloth_ex(world, &def, &a, NULL), CD_OK);
    cr_assert_eq(cd_world_total_particles(world), 400u);
    expect_fault(world, &def, CD_E_LIMIT_EXCEEDED, CD_FAULT_TOTAL_PARTICLES,
                 "width, height: 400 particles would bring the total to 800, over the limit "
                 "of 700");
    def.height = 15; /* 300: the total is then exactly 700 */
    cr_assert_eq(cd_world_create_cloth_ex(world, &def, &b, NULL), CD_OK);
    cr_assert_eq(cd_world_total_particles(world), 700u);
    def.width = def.height = 2;
    expect_fault(world, &def, CD_E_LIMIT_EXCEEDED, CD_FAULT_INSTANCES,
                 "instance: at most 2 instances");
    /* A destroy frees its particles and its slot. */
    cr_assert_eq(cd_world_destroy_instance(world, a), CD_OK);
    cr_assert_eq(cd_world_total_particles(world), 300u);
    cr_assert_eq(cd_world_create_cloth_ex(world, &def, &c, NULL), CD_OK);
    cr_assert_eq(cd_world_total_particles(world), 304u);
    cd_world_destroy(world);
}

Test(solver_world, configure_refuses_work_over_the_limit_and_changes_nothing)
{
    cd_world_def wd = {.max_instances = 4, .max_particles = 4096, .max_step_work = 100 * 8 * 8};
    cd_world *world = cd_world_create(&wd);
    cd_cloth_def def = fx_seed_def(); /* 100 particles, 1 x 4 */
    cd_id id = 0;
    cr_assert_eq(cd_world_create_cloth(world, &def, &id), CD_OK);
    cd_instance *inst = cd_world_get(world, id);
    def.substeps = 8;
    def.solver_iterations = 9;
    def.thickness = 0.01f;
    cd_field_fault f;
    cr_assert_eq(cd_instance_configure_ex(inst, &def, &f), CD_E_LIMIT_EXCEEDED);
    cr_assert_str_eq(f.field, "substeps, iterations");
    cr_assert_str_eq(f.reason, "100 particles x 8 substeps x 9 iterations = 7200 exceeds the "
                               "step work limit of 6400");
    cr_assert_eq(cd_instance_def(inst).substeps, 1, "a refused configure changes nothing");
    cr_assert_eq(cd_instance_def(inst).thickness, 0.0f);
    def.solver_iterations = 8;
    cr_assert_eq(cd_instance_configure_ex(inst, &def, &f), CD_OK);
    cr_assert_eq(cd_instance_def(inst).substeps, 8);
    def.self_distance = 0.5f;
    cr_assert_eq(cd_instance_configure_ex(inst, &def, &f), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(f.field, "selfDistance");
    cd_world_destroy(world);
}

Test(solver_world, a_soft_body_names_its_vertices)
{
    cd_world_def wd = {.max_instances = 4, .max_particles = 100, .max_total_particles = 150};
    cd_world *world = cd_world_create(&wd);
    cd_tet_mesh box;
    cr_assert_eq(cd_mesh_box(fx_v3(0, 0, 0), fx_v3(1, 1, 1), 3, 3, 3, &box), CD_OK); /* 64 */
    cd_cloth_def o = cd_default_softbody_options();
    cd_id a = 0, b = 0;
    cd_field_fault f;
    cr_assert_eq(cd_world_create_softbody_ex(world, &box, &o, &a, &f), CD_OK);
    cr_assert_eq(cd_world_create_softbody_ex(world, &box, &o, &b, &f), CD_OK);
    cr_assert_eq(cd_world_create_softbody_ex(world, &box, &o, &b, &f), CD_E_LIMIT_EXCEEDED);
    cr_assert_str_eq(f.field, "vertices");
    cr_assert_str_eq(f.reason, "64 particles would bring the total to 192, over the limit of 150");
    cr_assert_eq(cd_world_destroy_instance(world, a), CD_OK);
    o.self_distance = 0.5f; /* cells of 1/3 m */
    cr_assert_eq(cd_world_create_softbody_ex(world, &box, &o, &b, &f), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(f.field, "selfDistance");
    cr_assert(strncmp(f.reason, "must be at most the shortest edge of the mesh (0.333", 51) == 0,
              "%s", f.reason);
    cr_assert_eq(cd_world_count(world), 1u);
    cr_assert_eq(cd_world_total_particles(world), 64u);
    box.tets[0] = 999;
    cr_assert_eq(cd_world_create_softbody_ex(world, &box, &o, &b, &f), CD_E_INVALID_ARGUMENT);
    cr_assert_str_eq(f.field, "tetrahedra[0]");
    cr_assert_str_eq(f.reason, "index 999 out of range (64 vertices)");
    cd_mesh_free(&box);
    cd_world_destroy(world);
}
