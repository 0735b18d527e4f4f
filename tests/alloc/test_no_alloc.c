/* "No allocation inside a step": every stage of the solver (pins moved by a
 * transform, aerodynamic wind, XPBD and the seed's solver, substeps,
 * tethers rebuilt after an unpin, thickness, friction, coupling, attached
 * colliders, self-collision, soft-body volumes, sleeping) is stepped with
 * an allocation counter running, serially and through the worker pool.
 * Commands between steps may allocate (a pin list grows); steps may not.
 * The serial run goes once on each distance kernel (AVX2 and scalar). */
#include <criterion/criterion.h>

#include "../../server/internal.h"
#include "../solver_fixtures.h"
#include "count_alloc.h"

#define STEPS 120

typedef struct scene {
    cd_world *world;
    cd_instance *inst[3];
    uint32_t rig;
} scene;

static void build(scene *s)
{
    s->world = fx_world();

    /* 0: an XPBD cape on a walking rig, in aero wind, over colliders, with
     * thickness, friction, coupling and self-collision. */
    cd_cloth_def d = cd_default_cloth_def();
    d.width = d.height = 24;
    d.spacing = 0.03f;
    d.stretch_compliance = 1e-5f;
    d.bend_compliance = 0.02f;
    d.substeps = 3;
    d.thickness = 0.01f;
    d.lift = 0.5f;
    d.self_distance = 0.024f;
    d.origin = fx_v3(0, 1.5f, 0);
    s->inst[0] = fx_cloth(s->world, &d);
    cd_instance_set_wind(s->inst[0], fx_v3(3, 0, 1.5f));
    cr_assert_eq(cd_instance_set_transform(s->inst[0], "rig", fx_v3(0, 1.5f, 0), (cd_quat){0, 0, 0, 1},
                                           &s->rig),
                 CD_OK);
    for (uint32_t x = 0; x < 24; x++)
        cr_assert_eq(cd_instance_attach(s->inst[0], x, s->rig, NULL), CD_OK);
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_SPHERE);
    c.position = fx_v3(0.35f, 1.1f, 0.05f);
    c.radius = 0.2f;
    c.friction = 0.4f;
    c.static_friction = 0.5f;
    c.coupling = 1.0f;
    cd_id id;
    cr_assert_eq(cd_instance_add_collider(s->inst[0], &c, &id), CD_OK);
    c = cd_default_collider_def(CD_COLLIDER_CAPSULE);
    c.position = fx_v3(0.3f, -0.3f, 0.0f);
    c.normal = fx_v3(1, 0, 0);
    c.radius = 0.06f;
    c.height = 0.4f;
    c.attachment = s->rig;
    cr_assert_eq(cd_instance_add_collider(s->inst[0], &c, &id), CD_OK);
    c = cd_default_collider_def(CD_COLLIDER_PLANE);
    c.position = fx_v3(0, 0.9f, 0);
    c.friction = 0.6f;
    cr_assert_eq(cd_instance_add_collider(s->inst[0], &c, &id), CD_OK);

    /* 1: a soft ball dropped on a coupled floor, self-collision on. */
    cd_tet_mesh mesh;
    cr_assert_eq(cd_mesh_ball(fx_v3(5, 1, 0), 0.3f, 5, &mesh), CD_OK);
    cd_cloth_def o = cd_default_softbody_options();
    o.self_distance = 0.02f;
    cd_id sid;
    cr_assert_eq(cd_world_create_softbody(s->world, &mesh, &o, &sid), CD_OK);
    cd_mesh_free(&mesh);
    s->inst[1] = cd_world_get(s->world, sid);
    c = cd_default_collider_def(CD_COLLIDER_PLANE);
    c.position = fx_v3(5, 0, 0);
    c.coupling = 0.5f;
    cr_assert_eq(cd_instance_add_collider(s->inst[1], &c, &id), CD_OK);

    /* 2: the seed's curtain in constant wind, top row pinned: falls asleep. */
    d = cd_default_cloth_def();
    d.wind_model = CD_WIND_CONSTANT;
    d.origin = fx_v3(-5, 2, 0);
    s->inst[2] = fx_cloth(s->world, &d);
    for (uint32_t x = 0; x < 10; x++)
        cd_instance_pin(s->inst[2], x, NULL);
}

/* The host's part between steps: the rig walks; at step 60 the cape loses
 * its middle pins (tethers are rebuilt inside the next step). */
static void animate(scene *s, int step)
{
    const float t = (float)step * FX_DT;
    cd_instance_set_transform(s->inst[0], "rig", fx_v3(0.5f * t, 1.5f, 0.1f * t),
                              (cd_quat){0, sinf(0.1f * t), 0, cosf(0.1f * t)}, NULL);
    if (step == 60)
        for (uint32_t x = 4; x < 20; x++)
            cd_instance_unpin(s->inst[0], x);
}

static long counted(void (*fn)(void *), void *arg)
{
    const long before = atomic_load(&cd_alloc_count);
    atomic_store(&cd_alloc_counting, 1);
    fn(arg);
    atomic_store(&cd_alloc_counting, 0);
    return atomic_load(&cd_alloc_count) - before;
}

static void step_all(void *arg)
{
    scene *s = arg;
    for (int k = 0; k < 3; k++)
        cd_instance_step(s->inst[k], FX_DT, cd_world_global_wind(s->world));
}

/* Where the test's own allocation goes, so that the compiler cannot drop
 * the malloc/free pair. */
static void *volatile sink;

static void allocate_once(void *arg)
{
    sink = malloc(*(size_t *)arg);
}

Test(no_alloc, the_counter_counts)
{
    /* The interposition works: an allocation while counting is seen. */
    size_t size = 64;
    cr_assert_eq(counted(allocate_once, &size), 1);
    free(sink);
}

static void check_serial_steps(void)
{
    scene s;
    build(&s);
    long total = 0;
    bool slept = false;
    cd_instance_info info;
    for (int step = 0; step < STEPS; step++) {
        animate(&s, step);
        total += counted(step_all, &s);
        cd_instance_get_info(s.inst[2], &info);
        slept |= info.sleeping;
    }
    cr_assert_eq(total, 0, "%ld allocations in %d steps", total, STEPS);
    /* The scene did reach the stages it is there for. */
    cr_assert(slept, "the curtain never fell asleep");
    cr_assert(cd_instance_self_collision_stats(s.inst[0]).searches >= STEPS);
    cr_assert(cd_instance_self_collision_stats(s.inst[1]).searches >= STEPS);
    cd_collider_impulse imp[4];
    cr_assert_geq(cd_instance_collider_impulses(s.inst[1], imp, 4), 1);
    cd_world_destroy(s.world);
}

Test(no_alloc, serial_steps_allocate_nothing)
{
    check_serial_steps(); /* on the path this CPU chose (AVX2 where it has it) */
}

Test(no_alloc, serial_steps_on_the_scalar_path_allocate_nothing)
{
    cr_assert(cd_solver_select_simd("scalar"));
    cr_assert_str_eq(cd_solver_simd_path(), "scalar");
    check_serial_steps();
}

typedef struct step_job {
    cd_job job; /* first: a cd_job * is a step_job * */
    cd_instance *inst;
    cd_vec3 wind;
} step_job;

static void step_run(cd_job *job)
{
    step_job *sj = (step_job *)job;
    cd_instance_step(sj->inst, FX_DT, sj->wind);
}

typedef struct batch {
    cd_pool *pool;
    cd_job **list;
} batch;

static void run_batch(void *arg)
{
    batch *b = arg;
    cd_pool_run_batch(b->pool, b->list, 3);
}

Test(no_alloc, pooled_steps_allocate_nothing)
{
    scene s;
    build(&s);
    cd_pool *pool = cd_pool_create(2, 4, NULL, NULL);
    cr_assert_not_null(pool);
    step_job jobs[3];
    cd_job *list[3];
    for (int k = 0; k < 3; k++) {
        jobs[k] = (step_job){.job = {.run = step_run}, .inst = s.inst[k],
                             .wind = cd_world_global_wind(s.world)};
        list[k] = &jobs[k].job;
    }
    batch b = {.pool = pool, .list = list};
    long total = 0;
    for (int step = 0; step < STEPS; step++) {
        animate(&s, step);
        total += counted(run_batch, &b);
    }
    cr_assert_eq(total, 0, "%ld allocations in %d pooled steps", total, STEPS);
    cd_instance_info info;
    cd_instance_get_info(s.inst[0], &info);
    cr_assert_eq(info.frame, (uint64_t)STEPS);
    cd_pool_destroy(pool);
    cd_world_destroy(s.world);
}

/* A large curtain (over CD_TEAM_MIN_PARTICLES) stepped by its leader and a
 * helper on two workers: the team's stages allocate nothing either. */
typedef struct help_job {
    cd_job job;
    cd_instance *inst;
    uint64_t ticket;
    uint64_t helped;
} help_job;

static void help_run(cd_job *job)
{
    help_job *hj = (help_job *)job;
    hj->helped += cd_instance_help_step(hj->inst, hj->ticket);
}

typedef struct helped_batch {
    cd_pool *pool;
    step_job *step;
    help_job *help;
} helped_batch;

static void run_helped(void *arg)
{
    helped_batch *b = arg;
    b->help->ticket = cd_instance_help_ticket(b->step->inst);
    cd_job *list[2] = {&b->step->job, &b->help->job};
    cd_pool_run_batch(b->pool, list, 2);
}

Test(no_alloc, helped_steps_of_a_large_cloth_allocate_nothing)
{
    cd_world *world = fx_world();
    cd_cloth_def d = cd_default_cloth_def();
    d.width = d.height = 72;
    d.spacing = 0.02f;
    d.lift = 0.4f;
    d.sleep_threshold = 0.0f;
    cd_instance *inst = fx_cloth(world, &d);
    for (uint32_t x = 0; x < 72; x += 8)
        cr_assert_eq(cd_instance_pin(inst, x, NULL), CD_OK);
    cd_collider_def c = cd_default_collider_def(CD_COLLIDER_SPHERE);
    c.position = fx_v3(0.7f, -0.6f, 0.2f);
    c.radius = 0.3f;
    c.friction = 0.3f;
    cd_id id;
    cr_assert_eq(cd_instance_add_collider(inst, &c, &id), CD_OK);
    cd_instance_set_wind(inst, fx_v3(2, 0, 1));
    cd_pool *pool = cd_pool_create(2, 4, NULL, NULL);
    cr_assert_not_null(pool);
    step_job step = {.job = {.run = step_run}, .inst = inst};
    help_job help = {.job = {.run = help_run}, .inst = inst};
    helped_batch b = {.pool = pool, .step = &step, .help = &help};
    long total = 0;
    int steps = 0;
    /* Until the helper has run blocks too (a loaded machine may keep its
     * worker from the first steps), at least STEPS / 2 steps. */
    for (; steps < STEPS / 2 || (help.helped == 0 && steps < 20 * STEPS); steps++)
        total += counted(run_helped, &b);
    cr_assert_eq(total, 0, "%ld allocations in %d helped steps", total, steps);
    cr_assert_gt(help.helped, 0u, "the helper ran no block in %d steps", steps);
    cd_pool_destroy(pool);
    cd_world_destroy(world);
}

/* What a worker does after a step when subscribers asked for velocities and
 * normals (issue 15): the channels computed once, then every form encoded
 * into buffers the loop thread allocated (server/frames.c). Nothing of it
 * allocates either, for cloth and soft bodies alike. */
typedef struct framed {
    scene *s;
    cd_frame_channels channels[3];
    cd_frame_buf *forms[3][CD_FRAME_FORMS];
    uint8_t *rooms[3]; /* in a shared-memory ring: the "shm" subscribers' plain form */
} framed;

static void fill_frames(void *arg)
{
    framed *f = arg;
    cd_shm_ring_before_writes();
    for (int k = 0; k < 3; k++) {
        cd_frame_channels_compute(&f->channels[k], f->s->inst[k]);
        for (uint32_t form = 0; form < CD_FRAME_FORMS; form++)
            cd_frame_buf_fill(f->forms[k][form], f->s->inst[k], &f->channels[k]);
        cd_frame_fill_bytes(f->rooms[k], 0, f->s->inst[k], &f->channels[k]);
    }
}

Test(no_alloc, frames_with_velocities_and_normals_allocate_nothing)
{
    scene s;
    build(&s);
    framed f = {.s = &s};
    for (int k = 0; k < 3; k++) {
        const uint32_t n = cd_instance_particle_count(s.inst[k]);
        cr_assert(cd_frame_channels_alloc(&f.channels[k], n,
                                          CD_FRAME_FLAG_VELOCITIES | CD_FRAME_FLAG_NORMALS));
        for (uint32_t form = 0; form < CD_FRAME_FORMS; form++) {
            f.forms[k][form] = cd_frame_buf_alloc(cd_instance_id(s.inst[k]), n, (uint16_t)form);
            cr_assert_not_null(f.forms[k][form]);
        }
    }
    cd_shm_ring ring;
    uint8_t *map = aligned_alloc(4096, CD_SHM_HEADER_SIZE + (1u << 20));
    cr_assert_not_null(map);
    cd_shm_ring_format(&ring, map, 1u << 20, 1);
    long total = 0;
    for (int step = 0; step < 30; step++) {
        animate(&s, step);
        step_all(&s);
        for (int k = 0; k < 3; k++) { /* the loop thread's part: reserved before the step */
            uint64_t at;
            f.rooms[k] = cd_shm_ring_reserve(
                &ring, (uint32_t)cd_frame_size_flags(cd_instance_particle_count(s.inst[k]), 0), &at);
            cr_assert_not_null(f.rooms[k]);
        }
        total += counted(fill_frames, &f);
    }
    cr_assert_eq(total, 0, "%ld allocations filling frames", total);
    cr_assert_eq(memcmp(f.rooms[2], f.forms[2][0]->data, f.forms[2][0]->len), 0,
                 "a room in the ring holds the plain form's bytes");
    free(map);
    /* The frames hold the channels: the cape moved, so some velocity is
     * not zero (the plain form's velocities start after 12 bytes each). */
    const cd_frame_buf *full = f.forms[0][CD_FRAME_FLAG_VELOCITIES];
    bool moving = false;
    for (size_t b = 40 + 12 * (size_t)full->particles; b < full->len; b++)
        moving = moving || full->data[b] != 0;
    cr_assert(moving);
    for (int k = 0; k < 3; k++) {
        cd_frame_channels_free(&f.channels[k]);
        for (uint32_t form = 0; form < CD_FRAME_FORMS; form++)
            cd_frame_buf_unref(f.forms[k][form]);
    }
    cd_world_destroy(s.world);
}
