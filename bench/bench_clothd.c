/* bench_clothd — clothd's side of `make bench`.
 *
 * Times the solver through its public API (solver/solver.h) and the worker
 * pool (server/pool.h), with no sockets in the way. bench/run.py drives it
 * together with bench_bullet and prints the tables; see bench/README.md.
 *
 * The curtain: W x W particles, the seed's defaults (spacing 0.1 m, total
 * mass 1 kg, stiffness 0.9, bend 0.5, damping 0.01, right (1,0,0), down
 * (0,-1,0), g (0,-9.81,0)) with the given solver iterations, the top row
 * (row 0, particles 0..W-1) pinned in place, dt 1/60. It runs the seed's
 * solver, as Bullet's peer does: no tethers, the seed's constant wind (no
 * aerodynamics), no sleeping (a sleeping curtain would time nothing).
 *
 * The distance kernel is the process's (CLOTHD_SIMD=scalar forces the
 * scalar reference; READY and SMALLSTEPS name it as "simd"): run.py starts
 * a second bench_clothd with it to compare the paths in one run.
 *
 * Usage:
 *   bench_clothd           runs a default script and prints one line per case
 *   bench_clothd --serve   reads commands from stdin, one per line, and
 *                          answers each with one `TAG {json}` line (flushed)
 * Commands:
 *   curtain N ITERS WARMUP   build the timed curtain, run WARMUP steps -> READY
 *   sample STEPS             time STEPS steps of the timed curtain  -> SAMPLE
 *   strain N ITERS STEPS     fresh curtain, STEPS steps, max strain -> STRAIN
 *   free                     drop the timed curtain                 -> FREED
 *   workers COUNT N ITERS WARMUP STEPS SAMPLES
 *                            COUNT curtains of N x N stepped through a
 *                            1-worker and a 2-worker pool, samples
 *                            alternating, then a position hash of each set
 *                                                                    -> WORKERS
 *   memory W H               cd_instance_memory of a W x H cloth   -> MEMORY
 * The solver's depth (issue 3; the curtain there has clothd's default
 * options unless a command says otherwise, sleeping off):
 *   depth N SUBSTEPS ITERS TETHERS AIR STEPS
 *                            a fresh curtain, STEPS steps; strain at the
 *                            end, µs/step over the second half      -> DEPTH
 *   smallsteps N SUBSTEPS ITERS STEPS
 *                            issue 8: XPBD (compliance 0, bend 0.02) with
 *                            tethers, constant wind (no aero stage); the
 *                            second half timed, with the SIMD path
 *                                                               -> SMALLSTEPS
 *   release N SUBSTEPS ITERS TETHERS STEPS
 *                            a fresh curtain created horizontal (down +z),
 *                            top row pinned, left to swing down; the peak
 *                            strain over STEPS steps and at the end -> RELEASE
 *   stretch MODE ITERS HZ    the 16 x 16 sheet of test_solver_xpbd.c, 4 s
 *                            (MODE 0: XPBD compliance, 1: the seed's
 *                            stiffness 0.5); its settled stretch   -> STRETCH
 *   hang N MODE START STEPS  MODE 0: defaults, 1: no tethers, 2: the
 *                            seed's solver; START 0: hanging, 1: released
 *                            from horizontal; strain at 5 s and at the end,
 *                            µs/step                               -> HANG
 *   sleep N SAMPLES          a default curtain left to fall asleep, timed
 *                            against an awake twin                 -> SLEEP
 * Self-collision and soft bodies (issue 4):
 *   self W H START END CHUNK FINAL
 *                            two W x H folded sheets (the scenario of
 *                            test_solver_self.c scaled), selfDistance
 *                            0.8 x spacing and 0: stepped to START, then
 *                            CHUNK-step samples alternate up to END; with
 *                            FINAL > 0 both run on to step FINAL and their
 *                            closest unconnected distance is measured
 *                                                                    -> SELF
 *   softbody VOL_PERMILLE STEPS
 *                            the dropped ball of test_solver_softbody.c
 *                            at volume stiffness VOL_PERMILLE / 1000:
 *                            median CPU µs of its awake steps and its
 *                            volume / rest volume after STEPS steps
 *                                                                 -> SOFTBODY
 * The aerodynamic stage alone (issue 8: its cost per triangle). The one
 * place the bench reaches past solver.h: it calls the stage itself
 * (solver/internal.h), so that a bench_clothd built from an older tree
 * times that tree's stage with the same script (bench/README.md, 8):
 *   aero N MODEL WARMUP      a default N x N curtain (windModel MODEL, a
 *                            wire name; sleeping off; top row pinned) in a
 *                            wind of (3, 0, 1.5) m/s, WARMUP steps; then
 *                            its mass is raised to 1e9 kg, so that the
 *                            stage's impulses no longer move it and every
 *                            call sees the same swinging state; says
 *                            whether the AVX2 path exists      -> AERO_READY
 *   aerosample PATH CALLS    CALLS calls of the stage on the SIMD path PATH
 *                            ("scalar" or "avx2"; the process's path is
 *                            restored after)                 -> AERO_SAMPLE
 * Levels of detail (issue 15):
 *   lod N ITERS SUBSTEPS STEPS WIND
 *                            one N x N cape per level (3 cm spacing, top
 *                            row pinned, WIND 1: the capes' aero wind),
 *                            STEPS steps in turn: CPU µs per step, strain
 *                            and shape against level 0              -> LOD
 *   quit
 * Errors: `ERROR {"message":...}` and exit code 1. A determinism mismatch is
 * reported in WORKERS with "identical":false; the run goes on and exits 1.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../server/pool.h"
#include "../solver/internal.h" /* the aero commands only: cd_stage_aerodynamics */
#include "../solver/options_table.h"
#include "../solver/solver.h"

#define BENCH_DT (1.0f / 60.0f)
#define BENCH_SEED_MEMORY_ESTIMATE 57000u /* the seed's ~57 KB for 20 x 20 */
#define BENCH_MAX_SAMPLES 64

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread: unlike wall time, it does not grow while
 * other processes of a shared machine have the core. */
static double thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process (every worker thread included). */
static double process_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void emit(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(const char *tag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", tag);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

static int fail(const char *message)
{
    emit("ERROR", "{\"engine\":\"clothd\",\"message\":\"%s\"}", message);
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *values, int count)
{
    double sorted[BENCH_MAX_SAMPLES];
    memcpy(sorted, values, (size_t)count * sizeof *sorted);
    qsort(sorted, (size_t)count, sizeof *sorted, cmp_double);
    return count % 2 ? sorted[count / 2] : 0.5 * (sorted[count / 2 - 1] + sorted[count / 2]);
}

/* FNV-1a over the bytes of every position of the instance. */
static uint64_t fnv1a(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) {
        hash ^= p[i];
        hash *= 1099511628211ull;
    }
    return hash;
}

#define FNV_OFFSET 14695981039346656037ull

/* ---- curtains --------------------------------------------------------- */

/* The first seed's solver: its stepping (one substep of `iters` passes),
 * no tethers, wind as a constant acceleration (so no aerodynamics stage),
 * no sleeping. Everything else as cd_default. */
static void seed_solver(cd_cloth_def *def)
{
    def->substeps = 1;
    def->tethers = false;
    def->wind_model = CD_WIND_CONSTANT;
    def->sleep_threshold = 0.0f;
}

static cd_instance *pinned_curtain(cd_world *world, const cd_cloth_def *def_in);

/* Creates the Bullet comparison's curtain in `world` (the seed's solver,
 * top row pinned); NULL (and a printed error) on failure. */
static cd_instance *make_curtain(cd_world *world, int n, int iters)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = n;
    def.height = n;
    def.solver_iterations = iters;
    seed_solver(&def);
    return pinned_curtain(world, &def);
}

/* Creates `def` in `world` and pins its top row in place; NULL (and a
 * printed error) on failure. */
static cd_instance *pinned_curtain(cd_world *world, const cd_cloth_def *def_in)
{
    const cd_cloth_def def = *def_in;
    const int n = def.width;
    cd_id id = 0;
    cd_status status = cd_world_create_cloth(world, &def, &id);
    if (status != CD_OK) {
        fail(cd_status_message(status));
        return NULL;
    }
    cd_instance *inst = cd_world_get(world, id);
    if (inst == NULL) {
        fail("cd_world_get returned NULL for a fresh id");
        return NULL;
    }
    /* The layout hangs the sheet from row 0: particle x of row y is at
     * origin + right * x * spacing + down * y * spacing. Check it. */
    const float *p = cd_instance_local_positions(inst);
    const float s = def.spacing;
    const float down[3] = {def.down.x, def.down.y, def.down.z};
    for (int k = 0; k < 3; k++) {
        const float step_down = p[3 * n + k] - p[k];
        if (step_down < down[k] * s - 0.01f * s || step_down > down[k] * s + 0.01f * s) {
            fail("unexpected particle layout: row 0 is not the top row");
            return NULL;
        }
    }
    for (int x = 0; x < n; x++) {
        if (cd_instance_pin(inst, (uint32_t)x, NULL) != CD_OK) {
            fail("cd_instance_pin failed");
            return NULL;
        }
    }
    return inst;
}

/* Steps `steps` times; false when the instability guard fired. */
static bool step_curtain(cd_instance *inst, int steps)
{
    const cd_vec3 no_wind = {0.0f, 0.0f, 0.0f};
    bool ok = true;
    for (int i = 0; i < steps; i++) {
        cd_step_result r = cd_instance_step(inst, BENCH_DT, no_wind);
        ok = ok && !r.unstable;
    }
    return ok;
}

typedef struct bench_state {
    cd_world *world;
    cd_instance *timed;
    cd_instance *aero; /* the aero commands' curtain */
    uint32_t aero_triangles;
    int timed_n, timed_iters;
    uint32_t timed_constraints;
    bool mismatch; /* worker counts gave different positions */
} bench_state;

static void free_timed(bench_state *st)
{
    if (st->timed != NULL)
        cd_world_destroy_instance(st->world, cd_instance_id(st->timed));
    st->timed = NULL;
}

static int cmd_curtain(bench_state *st, int n, int iters, int warmup)
{
    free_timed(st);
    cd_instance *inst = make_curtain(st->world, n, iters);
    if (inst == NULL)
        return 1;
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    st->timed = inst;
    st->timed_n = n;
    st->timed_iters = iters;
    st->timed_constraints = info.constraints;
    const double t0 = now_seconds();
    const bool ok = step_curtain(inst, warmup);
    const double t1 = now_seconds();
    if (!ok)
        return fail("curtain: the instability guard fired during warm-up");
    emit("READY",
         "{\"engine\":\"clothd\",\"simd\":\"%s\",\"n\":%d,\"iters\":%d,\"particles\":%" PRIu32
         ",\"constraints\":%" PRIu32 ",\"warmup_steps\":%d,\"warmup_us\":%.2f}",
         cd_solver_simd_path(), n, iters, info.particles, info.constraints, warmup,
         warmup > 0 ? (t1 - t0) * 1e6 / warmup : 0.0);
    return 0;
}

static int cmd_sample(bench_state *st, int steps, double *out_us)
{
    if (st->timed == NULL)
        return fail("sample: no curtain");
    const double c0 = thread_cpu_seconds();
    const double t0 = now_seconds();
    const bool ok = step_curtain(st->timed, steps);
    const double us = (now_seconds() - t0) * 1e6 / steps;
    const double cpu_us = (thread_cpu_seconds() - c0) * 1e6 / steps;
    if (!ok)
        return fail("sample: the instability guard fired");
    if (out_us != NULL)
        *out_us = us;
    else
        emit("SAMPLE",
             "{\"engine\":\"clothd\",\"n\":%d,\"steps\":%d,\"us\":%.3f,\"cpu_us\":%.3f,"
             "\"projections_per_s\":%.0f}",
             st->timed_n, steps, us, cpu_us,
             (double)st->timed_constraints * st->timed_iters / (us * 1e-6));
    return 0;
}

static int cmd_strain(bench_state *st, int n, int iters, int steps, double *out_strain)
{
    cd_instance *inst = make_curtain(st->world, n, iters);
    if (inst == NULL)
        return 1;
    const bool ok = step_curtain(inst, steps);
    const double strain = cd_instance_max_structural_strain(inst);
    cd_world_destroy_instance(st->world, cd_instance_id(inst));
    if (!ok)
        return fail("strain: the instability guard fired");
    if (out_strain != NULL)
        *out_strain = strain;
    else
        emit("STRAIN", "{\"engine\":\"clothd\",\"n\":%d,\"iters\":%d,\"steps\":%d,\"strain\":%.6f}",
             n, iters, steps, strain);
    return 0;
}

/* ---- worker scaling --------------------------------------------------- */

typedef struct bench_set {
    cd_pool *pool;
    unsigned workers;
    int count;
    cd_job *jobs;
    cd_job **job_ptrs;    /* each step's batch: steps and helpers */
    cd_instance **insts;
    struct help_job *helps; /* (workers - 1) per instance, as the server queues them */
    double sps[BENCH_MAX_SAMPLES];   /* instance steps per second, per sample */
    double cores[BENCH_MAX_SAMPLES]; /* process CPU seconds per wall second */
} bench_set;

static void step_job(cd_job *job)
{
    /* An instance caught by the instability guard keeps its flag until it is
     * enabled again; any_unstable() reads it after the run. */
    const cd_vec3 no_wind = {0.0f, 0.0f, 0.0f};
    (void)cd_instance_step(job->user, BENCH_DT, no_wind);
}

/* A helper of one large instance's step (solver.h, cd_instance_help_step). */
typedef struct help_job {
    cd_job job;
    uint64_t ticket;
} help_job;

static void help_run(cd_job *job)
{
    help_job *hj = (help_job *)job;
    (void)cd_instance_help_step(hj->job.user, hj->ticket);
}

/* Each step is one batch, queued as the server queues it: each instance's
 * step, then the other workers' helpers when it is large enough. */
static void step_set(bench_set *set, int steps)
{
    const unsigned helpers = set->workers - 1;
    for (int i = 0; i < steps; i++) {
        uint32_t n = 0;
        for (int k = 0; k < set->count; k++) {
            const uint64_t ticket = cd_instance_help_ticket(set->insts[k]);
            set->job_ptrs[n++] = &set->jobs[k];
            for (unsigned h = 0; ticket != 0 && h < helpers; h++) {
                help_job *hj = &set->helps[(size_t)k * helpers + h];
                hj->ticket = ticket;
                set->job_ptrs[n++] = &hj->job;
            }
        }
        cd_pool_run_batch(set->pool, set->job_ptrs, n);
    }
}

static uint64_t hash_set(const bench_set *set)
{
    uint64_t h = FNV_OFFSET;
    for (int i = 0; i < set->count; i++) {
        const cd_instance *inst = set->insts[i];
        h = fnv1a(h, cd_instance_local_positions(inst),
                  (size_t)cd_instance_particle_count(inst) * 3 * sizeof(float));
    }
    return h;
}

static bool any_unstable(const bench_set *set)
{
    for (int i = 0; i < set->count; i++) {
        cd_instance_info info;
        cd_instance_get_info(set->insts[i], &info);
        if (info.unstable)
            return true;
    }
    return false;
}

static void free_set(bench_set *set)
{
    cd_pool_destroy(set->pool);
    free(set->jobs);
    free(set->job_ptrs);
    free(set->insts);
    free(set->helps);
}

static int init_set(bench_set *set, cd_world *world, unsigned workers, int count, int n, int iters)
{
    memset(set, 0, sizeof *set);
    set->workers = workers;
    set->count = count;
    set->pool = cd_pool_create(workers, (uint32_t)count * workers, NULL, NULL);
    set->jobs = calloc((size_t)count, sizeof *set->jobs);
    set->job_ptrs = calloc((size_t)count * workers, sizeof *set->job_ptrs);
    set->insts = calloc((size_t)count, sizeof *set->insts);
    set->helps = calloc((size_t)count * workers, sizeof *set->helps);
    if (set->pool == NULL || set->jobs == NULL || set->job_ptrs == NULL || set->insts == NULL ||
        set->helps == NULL)
        return fail("workers: cannot create the pool or the job arrays");
    for (int i = 0; i < count; i++) {
        set->insts[i] = make_curtain(world, n, iters);
        if (set->insts[i] == NULL)
            return 1;
        set->jobs[i].run = step_job;
        set->jobs[i].user = set->insts[i];
        for (unsigned h = 0; h + 1 < workers; h++)
            set->helps[(size_t)i * (workers - 1) + h].job =
                (cd_job){.run = help_run, .user = set->insts[i]};
    }
    return 0;
}

static int cmd_workers(bench_state *st, int count, int n, int iters, int warmup, int steps,
                       int samples)
{
    if (samples < 1 || samples > BENCH_MAX_SAMPLES)
        return fail("workers: SAMPLES must be in [1, 64]");
    bench_set sets[2];
    memset(sets, 0, sizeof sets);
    int rc = init_set(&sets[0], st->world, 1, count, n, iters);
    if (rc == 0)
        rc = init_set(&sets[1], st->world, 2, count, n, iters);
    if (rc == 0) {
        step_set(&sets[0], warmup);
        step_set(&sets[1], warmup);
        /* A/B/A/B: drift of the shared machine hits both sets alike. */
        double ratios[BENCH_MAX_SAMPLES];
        for (int s = 0; s < samples; s++) {
            for (int k = 0; k < 2; k++) {
                const double c0 = process_cpu_seconds();
                const double t0 = now_seconds();
                step_set(&sets[k], steps);
                const double wall = now_seconds() - t0;
                sets[k].sps[s] = (double)count * steps / wall;
                sets[k].cores[s] = (process_cpu_seconds() - c0) / wall;
            }
            ratios[s] = sets[1].sps[s] / sets[0].sps[s];
        }
        const uint64_t h1 = hash_set(&sets[0]), h2 = hash_set(&sets[1]);
        const bool unstable = any_unstable(&sets[0]) || any_unstable(&sets[1]);
        const double m1 = median(sets[0].sps, samples), m2 = median(sets[1].sps, samples);
        emit("WORKERS",
             "{\"engine\":\"clothd\",\"instances\":%d,\"n\":%d,\"iters\":%d,\"warmup_steps\":%d,"
             "\"steps_per_sample\":%d,\"samples\":%d,"
             "\"w1_instance_steps_per_s\":%.1f,\"w2_instance_steps_per_s\":%.1f,"
             "\"w1_set_steps_per_s\":%.2f,\"w2_set_steps_per_s\":%.2f,"
             "\"speedup\":%.4f,\"speedup_paired\":%.4f,\"w1_cores_used\":%.3f,"
             "\"w2_cores_used\":%.3f,\"steps_each\":%d,"
             "\"hash_w1\":\"%016" PRIx64 "\",\"hash_w2\":\"%016" PRIx64 "\",\"identical\":%s,"
             "\"unstable\":%s}",
             count, n, iters, warmup, steps, samples, m1, m2, m1 / count, m2 / count, m2 / m1,
             median(ratios, samples), median(sets[0].cores, samples),
             median(sets[1].cores, samples), warmup + steps * samples, h1, h2,
             h1 == h2 ? "true" : "false", unstable ? "true" : "false");
        if (h1 != h2)
            st->mismatch = true; /* reported, and the exit code says so */
    }
    for (int k = 1; k >= 0; k--) {
        if (sets[k].insts != NULL) {
            for (int i = 0; i < sets[k].count; i++) {
                if (sets[k].insts[i] != NULL)
                    cd_world_destroy_instance(st->world, cd_instance_id(sets[k].insts[i]));
            }
        }
        free_set(&sets[k]);
    }
    return rc;
}

/* ---- memory ----------------------------------------------------------- */

static int cmd_memory(bench_state *st, int w, int h)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = w;
    def.height = h;
    cd_id id = 0;
    cd_status status = cd_world_create_cloth(st->world, &def, &id);
    if (status != CD_OK)
        return fail(cd_status_message(status));
    const cd_instance *inst = cd_world_get(st->world, id);
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    const size_t bytes = cd_instance_memory(inst);
    cd_world_destroy_instance(st->world, id);
    emit("MEMORY",
         "{\"engine\":\"clothd\",\"width\":%d,\"height\":%d,\"particles\":%" PRIu32
         ",\"constraints\":%" PRIu32 ",\"bytes\":%zu,\"seed_estimate_bytes\":%u,\"ratio\":%.4f}",
         w, h, info.particles, info.constraints, bytes, BENCH_SEED_MEMORY_ESTIMATE,
         (double)bytes / BENCH_SEED_MEMORY_ESTIMATE);
    return 0;
}

/* ---- the solver's depth (issue 3) ------------------------------------- */

#define DEPTH_CHUNKS 5

/* Steps `inst` `steps` times in DEPTH_CHUNKS chunks and returns the median
 * wall and thread-CPU µs per step of the chunks; false when the guard fired. */
static bool time_steps(cd_instance *inst, int steps, double *us, double *cpu_us)
{
    double wall[DEPTH_CHUNKS], cpu[DEPTH_CHUNKS];
    const int chunk = steps / DEPTH_CHUNKS > 0 ? steps / DEPTH_CHUNKS : 1;
    bool ok = true;
    for (int k = 0; k < DEPTH_CHUNKS; k++) {
        const double c0 = thread_cpu_seconds(), t0 = now_seconds();
        ok = step_curtain(inst, chunk) && ok;
        wall[k] = (now_seconds() - t0) * 1e6 / chunk;
        cpu[k] = (thread_cpu_seconds() - c0) * 1e6 / chunk;
    }
    *us = median(wall, DEPTH_CHUNKS);
    *cpu_us = median(cpu, DEPTH_CHUNKS);
    return ok;
}

/* A default curtain (clothd's options) with sleeping off. */
static cd_cloth_def depth_curtain(int n)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = n;
    def.height = n;
    def.sleep_threshold = 0.0f;
    return def;
}

static int cmd_depth(bench_state *st, int n, int substeps, int iters, int tethers, int air,
                     int steps)
{
    cd_cloth_def def = depth_curtain(n);
    def.substeps = substeps;
    def.solver_iterations = iters;
    def.tethers = tethers != 0;
    if (!air)
        def.air_density = 0.0f;
    cd_instance *inst = pinned_curtain(st->world, &def);
    if (inst == NULL)
        return 1;
    double us = 0.0, cpu_us = 0.0;
    bool ok = step_curtain(inst, steps - steps / 2);
    ok = time_steps(inst, steps / 2, &us, &cpu_us) && ok;
    const double strain = cd_instance_max_structural_strain(inst);
    cd_world_destroy_instance(st->world, cd_instance_id(inst));
    if (!ok)
        return fail("depth: the instability guard fired");
    emit("DEPTH",
         "{\"engine\":\"clothd\",\"n\":%d,\"substeps\":%d,\"iters\":%d,\"tethers\":%s,"
         "\"air\":%s,\"steps\":%d,\"strain\":%.6f,\"us\":%.2f,\"cpu_us\":%.2f}",
         n, substeps, iters, tethers ? "true" : "false", air ? "true" : "false", steps, strain,
         us, cpu_us);
    return 0;
}

/* Issue 8's small-steps case: clothd's defaults but XPBD (stretch and shear
 * compliance 0, bend 0.02 m/N) with tethers, wind as a constant
 * acceleration (no aerodynamic stage), SUBSTEPS x ITERS;
 * STEPS / 2 steps to settle, then the rest timed. The whole step is timed;
 * the projections counted are the distance constraints' (constraints x
 * substeps x iterations; the tethers' one-per-particle are extra). */
static int cmd_smallsteps(bench_state *st, int n, int substeps, int iters, int steps)
{
    cd_cloth_def def = depth_curtain(n);
    def.substeps = substeps;
    def.solver_iterations = iters;
    def.tethers = true;
    def.wind_model = CD_WIND_CONSTANT;
    def.stretch_compliance = 0.0f; /* XPBD: inextensible stretch and shear */
    def.bend_compliance = 0.02f;   /* m/N, as the `stretch` sheet */
    cd_instance *inst = pinned_curtain(st->world, &def);
    if (inst == NULL)
        return 1;
    cd_instance_info info;
    cd_instance_get_info(inst, &info);
    double us = 0.0, cpu_us = 0.0;
    bool ok = step_curtain(inst, steps - steps / 2);
    ok = time_steps(inst, steps / 2, &us, &cpu_us) && ok;
    const double strain = cd_instance_max_structural_strain(inst);
    cd_world_destroy_instance(st->world, cd_instance_id(inst));
    if (!ok)
        return fail("smallsteps: the instability guard fired");
    emit("SMALLSTEPS",
         "{\"engine\":\"clothd\",\"simd\":\"%s\",\"n\":%d,\"substeps\":%d,\"iters\":%d,"
         "\"constraints\":%" PRIu32 ",\"steps\":%d,\"strain\":%.6f,\"us\":%.2f,"
         "\"cpu_us\":%.2f,\"projections_per_cpu_s\":%.0f}",
         cd_solver_simd_path(), n, substeps, iters, info.constraints, steps, strain, us, cpu_us,
         (double)info.constraints * substeps * iters / (cpu_us * 1e-6));
    return 0;
}

static int cmd_release(bench_state *st, int n, int substeps, int iters, int tethers, int steps)
{
    cd_cloth_def def = depth_curtain(n);
    def.substeps = substeps;
    def.solver_iterations = iters;
    def.tethers = tethers != 0;
    def.down = (cd_vec3){0.0f, 0.0f, 1.0f};
    cd_instance *inst = pinned_curtain(st->world, &def);
    if (inst == NULL)
        return 1;
    double peak = 0.0;
    bool ok = true;
    for (int i = 0; i < steps; i++) {
        ok = step_curtain(inst, 1) && ok;
        const double strain = cd_instance_max_structural_strain(inst);
        peak = strain > peak ? strain : peak;
    }
    const double strain = cd_instance_max_structural_strain(inst);
    cd_world_destroy_instance(st->world, cd_instance_id(inst));
    if (!ok)
        return fail("release: the instability guard fired");
    emit("RELEASE",
         "{\"engine\":\"clothd\",\"n\":%d,\"substeps\":%d,\"iters\":%d,\"tethers\":%s,"
         "\"steps\":%d,\"peak_strain\":%.6f,\"strain\":%.6f}",
         n, substeps, iters, tethers ? "true" : "false", steps, peak, strain);
    return 0;
}

/* The hanging sheet of tests/test_solver_xpbd.c: 16 x 16, spacing 0.05 m,
 * 1 kg, top row pinned, no tethers, no air, velocity_retention 0.05/s,
 * 8 substeps; XPBD (stretch 0.005 m/N, bend 0.02 m/N) or the seed's
 * stiffness 0.5. Settled for 4 s; the stretch is how far the bottom row's
 * mean hangs below its rest length, 0.75 m. */
static int cmd_stretch(bench_state *st, int mode, int iters, int hz)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = 16;
    def.spacing = 0.05f;
    def.solver_iterations = iters;
    def.substeps = 8;
    def.tethers = false;
    def.air_density = 0.0f;
    def.velocity_retention = 0.05f;
    def.sleep_threshold = 0.0f;
    if (mode == 0) {
        def.stretch_compliance = 0.005f;
        def.bend_compliance = 0.02f;
        def.stiffness = def.bend_stiffness = 1.0f;
    } else {
        def.stiffness = def.bend_stiffness = 0.5f;
    }
    cd_instance *inst = pinned_curtain(st->world, &def);
    if (inst == NULL)
        return 1;
    const float dt = 1.0f / (float)hz;
    const cd_vec3 no_wind = {0.0f, 0.0f, 0.0f};
    bool ok = true;
    for (int i = 0; i < 4 * hz; i++)
        ok = !cd_instance_step(inst, dt, no_wind).unstable && ok;
    const float *p = cd_instance_local_positions(inst);
    double bottom = 0.0;
    for (int x = 0; x < 16; x++)
        bottom += p[3 * (15 * 16 + x) + 1];
    const double stretch = (p[1] - bottom / 16.0) - 0.75;
    cd_world_destroy_instance(st->world, cd_instance_id(inst));
    if (!ok)
        return fail("stretch: the instability guard fired");
    emit("STRETCH",
         "{\"engine\":\"clothd\",\"mode\":\"%s\",\"iters\":%d,\"hz\":%d,\"stretch_m\":%.7f}",
         mode == 0 ? "xpbd" : "seed", iters, hz, stretch);
    return 0;
}

static int cmd_hang(bench_state *st, int n, int mode, int start, int steps)
{
    cd_cloth_def def = depth_curtain(n);
    if (mode == 1)
        def.tethers = false;
    else if (mode == 2) {
        seed_solver(&def);
        def.solver_iterations = 4; /* the seed's default, in its one substep */
    }
    if (start == 1)
        def.down = (cd_vec3){0.0f, 0.0f, 1.0f}; /* released from horizontal */
    cd_instance *inst = pinned_curtain(st->world, &def);
    if (inst == NULL)
        return 1;
    const int five_seconds = 300;
    const double c0 = thread_cpu_seconds();
    bool ok = step_curtain(inst, steps < five_seconds ? steps : five_seconds);
    const double strain_5s = cd_instance_max_structural_strain(inst);
    if (steps > five_seconds)
        ok = step_curtain(inst, steps - five_seconds) && ok;
    const double cpu_us = (thread_cpu_seconds() - c0) * 1e6 / steps;
    const double strain = cd_instance_max_structural_strain(inst);
    cd_world_destroy_instance(st->world, cd_instance_id(inst));
    if (!ok)
        return fail("hang: the instability guard fired");
    static const char *const modes[] = {"defaults", "no tethers", "seed"};
    emit("HANG",
         "{\"engine\":\"clothd\",\"n\":%d,\"mode\":\"%s\",\"start\":\"%s\",\"steps\":%d,"
         "\"strain_5s\":%.6f,\"strain\":%.6f,\"cpu_us\":%.2f}",
         n, modes[mode], start ? "horizontal" : "hanging", steps, strain_5s, strain, cpu_us);
    return 0;
}

#define SLEEP_AWAKE_STEPS 20
#define SLEEP_ASLEEP_STEPS 20000

/* A default curtain (tethers: it hangs still from the start) left to fall
 * asleep, and an awake twin with sleeping off; samples alternate. */
static int cmd_sleep(bench_state *st, int n, int samples)
{
    if (samples < 1 || samples > BENCH_MAX_SAMPLES)
        return fail("sleep: SAMPLES must be in [1, 64]");
    cd_cloth_def def = cd_default_cloth_def();
    def.width = def.height = n;
    cd_instance *sleeper = pinned_curtain(st->world, &def);
    def.sleep_threshold = 0.0f;
    cd_instance *awake = sleeper ? pinned_curtain(st->world, &def) : NULL;
    if (sleeper == NULL || awake == NULL)
        return 1;
    const cd_vec3 no_wind = {0.0f, 0.0f, 0.0f};
    int asleep_after = 0;
    for (int i = 1; i <= 600 && asleep_after == 0; i++)
        if (cd_instance_step(sleeper, BENCH_DT, no_wind).sleeping)
            asleep_after = i;
    int rc = 0;
    if (asleep_after == 0) {
        rc = fail("sleep: the curtain did not fall asleep within 600 steps");
    } else {
        step_curtain(awake, 60);
        double us_awake[BENCH_MAX_SAMPLES], us_asleep[BENCH_MAX_SAMPLES];
        bool stayed = true;
        for (int k = 0; k < samples; k++) {
            double c0 = thread_cpu_seconds();
            step_curtain(awake, SLEEP_AWAKE_STEPS);
            us_awake[k] = (thread_cpu_seconds() - c0) * 1e6 / SLEEP_AWAKE_STEPS;
            c0 = thread_cpu_seconds();
            for (int i = 0; i < SLEEP_ASLEEP_STEPS; i++)
                stayed = cd_instance_step(sleeper, BENCH_DT, no_wind).sleeping && stayed;
            us_asleep[k] = (thread_cpu_seconds() - c0) * 1e6 / SLEEP_ASLEEP_STEPS;
        }
        const double a = median(us_awake, samples), z = median(us_asleep, samples);
        if (!stayed)
            rc = fail("sleep: the sleeping curtain woke up");
        else
            emit("SLEEP",
                 "{\"engine\":\"clothd\",\"n\":%d,\"asleep_after_steps\":%d,\"samples\":%d,"
                 "\"awake_cpu_us\":%.3f,\"asleep_cpu_us\":%.5f,\"ratio\":%.7f}",
                 n, asleep_after, samples, a, z, z / a);
    }
    cd_world_destroy_instance(st->world, cd_instance_id(sleeper));
    cd_world_destroy_instance(st->world, cd_instance_id(awake));
    return rc;
}

/* ---- self-collision and soft bodies (issue 4) ------------------------- */

#define SELF_SPACING 0.02f
#define SELF_DISTANCE_FACTOR 0.8f /* selfDistance = 0.8 x spacing, as seed 003 advises */

/* The folded sheet of tests/test_solver_self.c scaled to w x h: spacing
 * 0.02 m, slanted (down (0,-1,0.15)) with its lowest row just above the
 * floor, 8 substeps, 4 iterations, sleeping off; clothd's defaults
 * otherwise (aero stage with still air included). */
static cd_instance *folded_sheet(cd_world *world, int w, int h, float self_distance)
{
    cd_cloth_def def = cd_default_cloth_def();
    def.width = w;
    def.height = h;
    def.spacing = SELF_SPACING;
    def.origin = (cd_vec3){0.0f, 0.05f + (float)(h - 1) * SELF_SPACING, 0.0f};
    def.down = (cd_vec3){0.0f, -1.0f, 0.15f};
    def.substeps = 8;
    def.solver_iterations = 4;
    def.sleep_threshold = 0.0f;
    def.self_distance = self_distance;
    cd_id id = 0;
    cd_status status = cd_world_create_cloth(world, &def, &id);
    if (status != CD_OK) {
        fail(cd_status_message(status));
        return NULL;
    }
    cd_instance *inst = cd_world_get(world, id);
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE); /* frictionless */
    cd_id cid = 0;
    if (inst == NULL || cd_instance_add_collider(inst, &floor, &cid) != CD_OK) {
        fail("folded sheet: cannot add the floor");
        return NULL;
    }
    return inst;
}

/* Joined by a constraint in an n-wide grid: neighbours within one cell and
 * the skip-one bending partners (the exemption of self_collision.c). */
static bool grid_connected(int n, uint32_t i, uint32_t j)
{
    const int dx = abs((int)(i % (uint32_t)n) - (int)(j % (uint32_t)n));
    const int dy = abs((int)(i / (uint32_t)n) - (int)(j / (uint32_t)n));
    return (dx <= 1 && dy <= 1) || (dx == 2 && dy == 0) || (dx == 0 && dy == 2);
}

/* Smallest distance between two particles no constraint joins, over all
 * pairs (brute force, so it checks the spatial hash rather than using it). */
static double closest_unconnected(const cd_instance *inst, int n)
{
    const uint32_t count = cd_instance_particle_count(inst);
    const float *p = cd_instance_local_positions(inst);
    double best2 = INFINITY;
    for (uint32_t i = 0; i < count; i++)
        for (uint32_t j = i + 1; j < count; j++) {
            const double dx = (double)p[3 * j] - p[3 * i], dy = (double)p[3 * j + 1] - p[3 * i + 1],
                         dz = (double)p[3 * j + 2] - p[3 * i + 2];
            const double d2 = dx * dx + dy * dy + dz * dz;
            if (d2 < best2 && !grid_connected(n, i, j))
                best2 = d2;
        }
    return sqrt(best2);
}

/* Two identical folded sheets, self-collision on and off, stepped to START
 * untimed; then CHUNK-step samples of each alternate (on off, off on, ...)
 * up to step END; then, when FINAL > 0, both run on to step FINAL and the
 * closest unconnected distance of each is measured. The searches and
 * pairs are the self-collision stats of the timed window. */
static int cmd_self(bench_state *st, int w, int h, int start, int end, int chunk, int final)
{
    const int samples = (end - start) / chunk;
    if (samples < 1 || samples > BENCH_MAX_SAMPLES)
        return fail("self: (END - START) / CHUNK must be in [1, 64]");
    const float d = SELF_DISTANCE_FACTOR * SELF_SPACING;
    cd_instance *sheet[2] = {folded_sheet(st->world, w, h, d), NULL}; /* on, off */
    if (sheet[0] != NULL)
        sheet[1] = folded_sheet(st->world, w, h, 0.0f);
    int rc = 0;
    if (sheet[0] == NULL || sheet[1] == NULL) {
        rc = 1;
    } else {
        bool ok = step_curtain(sheet[0], start);
        ok = step_curtain(sheet[1], start) && ok;
        double us[2][BENCH_MAX_SAMPLES], ratios[BENCH_MAX_SAMPLES];
        const cd_self_collision_stats before = cd_instance_self_collision_stats(sheet[0]);
        for (int s = 0; s < samples; s++) {
            for (int k = 0; k < 2; k++) {
                const int which = (s + k) % 2; /* alternate who goes first */
                const double c0 = thread_cpu_seconds();
                ok = step_curtain(sheet[which], chunk) && ok;
                us[which][s] = (thread_cpu_seconds() - c0) * 1e6 / chunk;
            }
            ratios[s] = us[0][s] / us[1][s];
        }
        const cd_self_collision_stats after = cd_instance_self_collision_stats(sheet[0]);
        double closest[2] = {-1.0, -1.0};
        if (final > 0) {
            for (int k = 0; k < 2; k++) {
                ok = step_curtain(sheet[k], final - start - samples * chunk) && ok;
                closest[k] = closest_unconnected(sheet[k], w);
            }
        }
        if (!ok) {
            rc = fail("self: the instability guard fired");
        } else {
            const double on = median(us[0], samples), off = median(us[1], samples);
            const double particles = (double)w * h;
            const double searches = (double)(after.searches - before.searches);
            char list[2][BENCH_MAX_SAMPLES * 16];
            for (int k = 0; k < 2; k++) {
                size_t len = 0;
                list[k][0] = '\0';
                for (int s = 0; s < samples; s++)
                    len += (size_t)snprintf(list[k] + len, sizeof list[k] - len, "%s%.1f",
                                            s ? "," : "", us[k][s]);
            }
            char tail[160] = "";
            if (final > 0)
                snprintf(tail, sizeof tail,
                         ",\"final_steps\":%d,\"closest_on\":%.6f,\"closest_off\":%.6f", final,
                         closest[0], closest[1]);
            emit("SELF",
                 "{\"engine\":\"clothd\",\"width\":%d,\"height\":%d,\"particles\":%.0f,"
                 "\"spacing\":%.3f,"
                 "\"self_distance\":%.4f,\"substeps\":8,\"iters\":4,\"start\":%d,\"end\":%d,"
                 "\"chunk\":%d,\"samples\":%d,\"on_cpu_us\":%.2f,\"off_cpu_us\":%.2f,"
                 "\"ratio\":%.4f,\"ratio_paired\":%.4f,\"on_us_per_particle\":%.5f,"
                 "\"off_us_per_particle\":%.5f,\"on_cpu_us_samples\":[%s],"
                 "\"off_cpu_us_samples\":[%s],\"searches_per_step\":%.3f,"
                 "\"pairs_per_particle_per_search\":%.4f,"
                 "\"examined_per_particle_per_search\":%.2f,\"overflows\":%" PRIu64 "%s}",
                 w, h, particles, SELF_SPACING, d, start, start + samples * chunk, chunk, samples, on,
                 off, on / off, median(ratios, samples), on / particles, off / particles, list[0],
                 list[1], searches / (samples * chunk),
                 searches > 0 ? (double)(after.pairs - before.pairs) / searches / particles : 0.0,
                 searches > 0 ? (double)(after.examined - before.examined) / searches / particles
                              : 0.0,
                 after.overflows - before.overflows, tail);
        }
    }
    for (int k = 0; k < 2; k++)
        if (sheet[k] != NULL)
            cd_world_destroy_instance(st->world, cd_instance_id(sheet[k]));
    return rc;
}

#define BALL_RADIUS 0.3f
#define BALL_RESOLUTION 6u

/* The dropped ball of tests/test_solver_softbody.c: radius 0.3 m,
 * resolution 6, centre 1 m above a plane of friction 0.5, the soft-body
 * defaults with volume stiffness VOL/1000 and no air; STEPS steps. Times
 * every step (thread CPU) and reports the median of the awake ones. */
static int cmd_softbody(bench_state *st, int vol_permille, int steps)
{
    if (steps > 100000)
        return fail("softbody: STEPS must be at most 100000");
    cd_tet_mesh mesh;
    cd_status status = cd_mesh_ball((cd_vec3){0.0f, 1.0f, 0.0f}, BALL_RADIUS, BALL_RESOLUTION, &mesh);
    if (status != CD_OK)
        return fail(cd_status_message(status));
    cd_cloth_def options = cd_default_softbody_options();
    options.volume_stiffness = (float)vol_permille / 1000.0f;
    options.air_density = 0.0f;
    cd_id id = 0;
    status = cd_world_create_softbody(st->world, &mesh, &options, &id);
    const uint32_t tets = mesh.tet_count;
    cd_mesh_free(&mesh);
    if (status != CD_OK)
        return fail(cd_status_message(status));
    cd_instance *ball = cd_world_get(st->world, id);
    cd_collider_def floor = cd_default_collider_def(CD_COLLIDER_PLANE);
    floor.friction = 0.5f;
    cd_id cid = 0;
    double *us = malloc(sizeof(double) * (size_t)steps);
    int rc = 0;
    if (us == NULL || cd_instance_add_collider(ball, &floor, &cid) != CD_OK) {
        rc = fail("softbody: cannot add the floor");
    } else {
        const cd_vec3 no_wind = {0.0f, 0.0f, 0.0f};
        int awake = 0, asleep_after = 0;
        bool ok = true;
        for (int i = 1; i <= steps; i++) {
            const double c0 = thread_cpu_seconds();
            const cd_step_result r = cd_instance_step(ball, BENCH_DT, no_wind);
            const double t = (thread_cpu_seconds() - c0) * 1e6;
            ok = ok && !r.unstable;
            if (r.sleeping) {
                if (asleep_after == 0)
                    asleep_after = i;
            } else {
                us[awake++] = t;
            }
        }
        cd_instance_info info;
        cd_instance_get_info(ball, &info);
        const double kept = cd_instance_volume(ball) / cd_instance_rest_volume(ball);
        if (!ok || awake == 0) {
            rc = fail("softbody: the instability guard fired, or no step simulated");
        } else {
            qsort(us, (size_t)awake, sizeof *us, cmp_double);
            const double med =
                awake % 2 ? us[awake / 2] : 0.5 * (us[awake / 2 - 1] + us[awake / 2]);
            emit("SOFTBODY",
                 "{\"engine\":\"clothd\",\"radius\":%.2f,\"resolution\":%u,"
                 "\"volume_stiffness\":%.3f,\"particles\":%" PRIu32 ",\"tets\":%" PRIu32
                 ",\"constraints\":%" PRIu32 ",\"substeps\":%d,\"iters\":%d,\"steps\":%d,"
                 "\"awake_steps\":%d,\"asleep_after_steps\":%d,\"cpu_us\":%.2f,"
                 "\"volume_ratio\":%.5f}",
                 BALL_RADIUS, BALL_RESOLUTION, options.volume_stiffness, info.particles, tets,
                 info.constraints, options.substeps, options.solver_iterations, steps, awake,
                 asleep_after, med, kept);
        }
    }
    free(us);
    cd_world_destroy_instance(st->world, id);
    return rc;
}

/* ---- the aerodynamic stage alone ------------------------------------- */

#define AERO_WIND_X 3.0f /* the capes' wind of bench_server.py */
#define AERO_WIND_Z 1.5f

static void free_aero(bench_state *st)
{
    if (st->aero != NULL)
        cd_world_destroy_instance(st->world, cd_instance_id(st->aero));
    st->aero = NULL;
}

static int cmd_aero(bench_state *st, int n, const char *model, int warmup)
{
    free_aero(st);
    cd_cloth_def def = depth_curtain(n);
    int m = 0;
    while (cd_wind_model_name(m) != NULL && strcmp(cd_wind_model_name(m), model) != 0)
        m++;
    if (cd_wind_model_name(m) == NULL)
        return fail("aero: this build has no such windModel");
    def.wind_model = (cd_wind_model)m;
    cd_instance *inst = pinned_curtain(st->world, &def);
    if (inst == NULL)
        return 1;
    st->aero = inst;
    if (cd_instance_set_wind(inst, (cd_vec3){AERO_WIND_X, 0.0f, AERO_WIND_Z}) != CD_OK)
        return fail("aero: cannot set the wind");
    if (!step_curtain(inst, warmup))
        return fail("aero: the instability guard fired during warm-up");
    /* Frozen: impulses of F h / 1e9 kg leave the velocities as they are. */
    def = cd_instance_def(inst);
    def.mass = 1e9f;
    if (cd_instance_configure(inst, &def) != CD_OK)
        return fail("aero: cannot raise the mass");
    st->aero_triangles = 2u * (uint32_t)(n - 1) * (uint32_t)(n - 1);
    char path[16];
    snprintf(path, sizeof path, "%s", cd_solver_simd_path());
    const bool avx2 = cd_solver_select_simd("avx2");
    cd_solver_select_simd(path);
    emit("AERO_READY",
         "{\"engine\":\"clothd\",\"n\":%d,\"model\":\"%s\",\"triangles\":%" PRIu32
         ",\"warmup_steps\":%d,\"avx2\":%s}",
         n, model, st->aero_triangles, warmup, avx2 ? "true" : "false");
    return 0;
}

static int cmd_aerosample(bench_state *st, const char *path, int calls)
{
    if (st->aero == NULL)
        return fail("aerosample: no aero curtain");
    char before[16];
    snprintf(before, sizeof before, "%s", cd_solver_simd_path());
    if (!cd_solver_select_simd(path))
        return fail("aerosample: this CPU or build has no such SIMD path");
    const cd_cloth_def def = cd_instance_def(st->aero);
    const cd_substep sub = {.h = BENCH_DT / (float)def.substeps,
                            .keep = 1.0f,
                            .accel = def.gravity,
                            .wind = {AERO_WIND_X, 0.0f, AERO_WIND_Z},
                            .t0 = 0.0f,
                            .t1 = 1.0f};
    const double c0 = thread_cpu_seconds(), t0 = now_seconds();
    for (int i = 0; i < calls; i++)
        cd_stage_aerodynamics(st->aero, &sub);
    const double wall = now_seconds() - t0, cpu = thread_cpu_seconds() - c0;
    cd_solver_select_simd(before);
    const double per = 1e9 / ((double)calls * st->aero_triangles);
    emit("AERO_SAMPLE",
         "{\"engine\":\"clothd\",\"path\":\"%s\",\"calls\":%d,\"triangles\":%" PRIu32
         ",\"us_per_call\":%.3f,\"cpu_us_per_call\":%.3f,\"ns_per_triangle\":%.4f,"
         "\"cpu_ns_per_triangle\":%.4f}",
         path, calls, st->aero_triangles, wall * 1e6 / calls, cpu * 1e6 / calls, wall * per,
         cpu * per);
    return 0;
}

/* ---- driver ----------------------------------------------------------- */

/* Returns 0 to go on, 1 on error, 2 on quit. */

/* ---- levels of detail (issue 15) ------------------------------------------ */

/* The capes of bench_server.py: N x N at 3 cm, ITERS iterations (SUBSTEPS
 * substeps, 0: automatic), clothd's defaults otherwise, top row pinned,
 * sleeping off; with WIND the capes' (3, 0, 1.5) m/s aero wind, without
 * it released from horizontal to swing down and settle. One twin
 * per level, stepped in turn, STEPS steps: each level's CPU µs per step
 * (median of 10 chunks), its max strain at the end and after each chunk
 * but the first (mean and peak), and its shape against
 * level 0's: the largest and the RMS distance between a particle and its
 * level-0 twin, over the cape's span. */
static int cmd_lod(bench_state *st, int n, int iters, int substeps, int steps, int wind)
{
    enum { CHUNKS = 10 };
    cd_instance *twins[CD_LOD_LEVELS];
    double cpu[CD_LOD_LEVELS][CHUNKS];
    double strain_sum[CD_LOD_LEVELS] = {0}, strain_peak[CD_LOD_LEVELS] = {0};
    for (int k = 0; k < CD_LOD_LEVELS; k++) {
        cd_cloth_def def = depth_curtain(n);
        def.spacing = 0.03f;
        def.solver_iterations = iters;
        def.substeps = substeps;
        def.lod = k;
        if (!wind)
            def.down = (cd_vec3){0.0f, 0.0f, 1.0f}; /* released from horizontal */
        if ((twins[k] = pinned_curtain(st->world, &def)) == NULL)
            return 1;
    }
    const cd_vec3 air = wind ? (cd_vec3){AERO_WIND_X, 0.0f, 1.5f} : (cd_vec3){0, 0, 0};
    const int chunk = steps / CHUNKS > 0 ? steps / CHUNKS : 1;
    bool ok = true;
    for (int c = 0; c < CHUNKS; c++) {
        for (int k = 0; k < CD_LOD_LEVELS; k++) {
            const double c0 = thread_cpu_seconds();
            for (int i = 0; i < chunk; i++)
                ok = !cd_instance_step(twins[k], BENCH_DT, air).unstable && ok;
            cpu[k][c] = (thread_cpu_seconds() - c0) * 1e6 / chunk;
            if (c > 0) { /* after the first chunk: the strain it swings at */
                const double strain = cd_instance_max_structural_strain(twins[k]);
                strain_sum[k] += strain;
                strain_peak[k] = strain > strain_peak[k] ? strain : strain_peak[k];
            }
        }
    }
    const float *full = cd_instance_local_positions(twins[0]);
    const uint32_t count = cd_instance_particle_count(twins[0]);
    const double span = 0.03 * (n - 1);
    for (int k = 0; k < CD_LOD_LEVELS; k++) {
        const float *p = cd_instance_local_positions(twins[k]);
        double worst = 0.0, sum2 = 0.0;
        for (uint32_t i = 0; i < count; i++) {
            const double dx = p[3 * i] - full[3 * i], dy = p[3 * i + 1] - full[3 * i + 1],
                         dz = p[3 * i + 2] - full[3 * i + 2];
            const double d2 = dx * dx + dy * dy + dz * dz;
            sum2 += d2;
            worst = d2 > worst ? d2 : worst;
        }
        int32_t s, it;
        const cd_cloth_def def = cd_instance_def(twins[k]);
        cd_lod_counts(&def, BENCH_DT, k, &s, &it);
        emit("LOD",
             "{\"engine\":\"clothd\",\"n\":%d,\"wind\":%d,\"steps\":%d,\"level\":%d,"
             "\"substeps\":%d,\"iters\":%d,\"frame_interval\":%u,\"cpu_us\":%.2f,"
             "\"strain\":%.6f,\"strain_mean\":%.6f,\"strain_peak\":%.6f,"
             "\"shape_max_pct\":%.3f,\"shape_rms_pct\":%.3f}",
             n, wind, steps, k, s, it, cd_lod_frame_interval(k), median(cpu[k], CHUNKS),
             (double)cd_instance_max_structural_strain(twins[k]), strain_sum[k] / (CHUNKS - 1),
             strain_peak[k], 100.0 * sqrt(worst) / span,
             100.0 * sqrt(sum2 / count) / span);
    }
    for (int k = 0; k < CD_LOD_LEVELS; k++)
        cd_world_destroy_instance(st->world, cd_instance_id(twins[k]));
    return ok ? 0 : fail("lod: the instability guard fired");
}

static int run_command(bench_state *st, const char *line)
{
    char cmd[32];
    int a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
    int got = sscanf(line, "%31s %d %d %d %d %d %d", cmd, &a, &b, &c, &d, &e, &f);
    if (got < 1)
        return 0;
    char word[32];
    if (strcmp(cmd, "aero") == 0) {
        if (sscanf(line, "%31s %d %31s %d", cmd, &a, word, &b) != 4 || a < 2 || a > 1024 || b < 0)
            return fail("aero: expected N MODEL WARMUP");
        return cmd_aero(st, a, word, b);
    }
    if (strcmp(cmd, "aerosample") == 0) {
        if (sscanf(line, "%31s %31s %d", cmd, word, &a) != 3 || a < 1)
            return fail("aerosample: expected PATH CALLS");
        return cmd_aerosample(st, word, a);
    }
    if (strcmp(cmd, "curtain") == 0) {
        if (got != 4 || a < 2 || b < 1 || c < 0)
            return fail("curtain: expected N ITERS WARMUP");
        return cmd_curtain(st, a, b, c);
    }
    if (strcmp(cmd, "sample") == 0) {
        if (got != 2 || a < 1)
            return fail("sample: expected STEPS >= 1");
        return cmd_sample(st, a, NULL);
    }
    if (strcmp(cmd, "strain") == 0) {
        if (got != 4 || a < 2 || b < 1 || c < 0)
            return fail("strain: expected N ITERS STEPS");
        return cmd_strain(st, a, b, c, NULL);
    }
    if (strcmp(cmd, "free") == 0) {
        free_timed(st);
        emit("FREED", "{\"engine\":\"clothd\"}");
        return 0;
    }
    if (strcmp(cmd, "workers") == 0) {
        if (got != 7 || a < 1 || b < 2 || c < 1 || d < 0 || e < 1 || f < 1)
            return fail("workers: expected COUNT N ITERS WARMUP STEPS SAMPLES");
        return cmd_workers(st, a, b, c, d, e, f);
    }
    if (strcmp(cmd, "memory") == 0) {
        if (got != 3 || a < 2 || b < 2)
            return fail("memory: expected W H");
        return cmd_memory(st, a, b);
    }
    if (strcmp(cmd, "depth") == 0) {
        if (got != 7 || a < 2 || b < 0 || b > 64 || c < 1 || c > 256 || f < 2)
            return fail("depth: expected N SUBSTEPS (0: automatic) ITERS TETHERS AIR STEPS");
        return cmd_depth(st, a, b, c, d, e, f);
    }
    if (strcmp(cmd, "smallsteps") == 0) {
        if (got != 5 || a < 2 || b < 1 || b > 64 || c < 1 || c > 256 || d < 2)
            return fail("smallsteps: expected N SUBSTEPS ITERS STEPS");
        return cmd_smallsteps(st, a, b, c, d);
    }
    if (strcmp(cmd, "release") == 0) {
        if (got != 6 || a < 2 || b < 0 || b > 64 || c < 1 || c > 256 || e < 1)
            return fail("release: expected N SUBSTEPS (0: automatic) ITERS TETHERS STEPS");
        return cmd_release(st, a, b, c, d, e);
    }
    if (strcmp(cmd, "stretch") == 0) {
        if (got != 4 || a < 0 || a > 1 || b < 1 || b > 256 || c < 1 || c > 1000)
            return fail("stretch: expected MODE ITERS HZ");
        return cmd_stretch(st, a, b, c);
    }
    if (strcmp(cmd, "hang") == 0) {
        if (got != 5 || a < 2 || b < 0 || b > 2 || c < 0 || c > 1 || d < 1)
            return fail("hang: expected N MODE START STEPS");
        return cmd_hang(st, a, b, c, d);
    }
    if (strcmp(cmd, "sleep") == 0) {
        if (got != 3 || a < 2)
            return fail("sleep: expected N SAMPLES");
        return cmd_sleep(st, a, b);
    }
    if (strcmp(cmd, "self") == 0) {
        if (got != 7 || a < 4 || a > 1024 || b < 4 || b > 1024 || c < 0 || d <= c || e < 1 ||
            (f != 0 && f < d))
            return fail("self: expected W H START END CHUNK FINAL");
        return cmd_self(st, a, b, c, d, e, f);
    }
    if (strcmp(cmd, "softbody") == 0) {
        if (got != 3 || a < 0 || a > 1000 || b < 1)
            return fail("softbody: expected VOL_PERMILLE STEPS");
        return cmd_softbody(st, a, b);
    }
    if (strcmp(cmd, "lod") == 0) {
        if (got != 6 || a < 2 || a > 1024 || b < 1 || b > 256 || c < 0 || c > 64 || d < 1)
            return fail("lod: expected N ITERS SUBSTEPS STEPS WIND");
        return cmd_lod(st, a, b, c, d, e);
    }
    if (strcmp(cmd, "quit") == 0)
        return 2;
    return fail("unknown command");
}

/* Stand-alone run, no interleaving with Bullet. */
static int run_default(bench_state *st)
{
    static const int sizes[] = {32, 64, 128};
    static const int steps[] = {400, 100, 25};
    for (int k = 0; k < 3; k++) {
        if (cmd_curtain(st, sizes[k], 8, 120))
            return 1;
        double us[7];
        for (int i = 0; i < 7; i++) {
            if (cmd_sample(st, steps[k], &us[i]))
                return 1;
        }
        const double med = median(us, 7);
        const uint32_t constraints = st->timed_constraints;
        free_timed(st);
        double strain = 0.0;
        if (cmd_strain(st, sizes[k], 8, 300, &strain))
            return 1;
        emit("CLOTHD",
             "{\"case\":\"curtain\",\"n\":%d,\"iters\":8,\"constraints\":%" PRIu32
             ",\"clothd_us\":%.2f,\"clothd_projections_per_s\":%.0f,\"clothd_strain\":%.6f}",
             sizes[k], constraints, med, (double)constraints * 8 / (med * 1e-6), strain);
    }
    if (run_command(st, "workers 64 32 8 60 20 7"))
        return 1;
    if (run_command(st, "memory 20 20"))
        return 1;
    /* The solver's depth: equal-cost substeps x iterations, then sleeping. */
    static const char *const depth[] = {"depth 64 1 8 0 1 300", "depth 64 2 4 0 1 300",
                                        "depth 64 4 2 0 1 300", "depth 64 8 1 0 1 300",
                                        "depth 64 1 4 1 1 300", "depth 64 0 1 1 1 300",
                                        "sleep 64 7"};
    for (size_t k = 0; k < sizeof depth / sizeof depth[0]; k++)
        if (run_command(st, depth[k]))
            return 1;
    /* Self-collision and soft bodies: the 64² folded sheet on/off, a ball. */
    static const char *const issue4[] = {"self 64 64 20 180 10 240", "softbody 1000 240",
                                         "softbody 20 240"};
    for (size_t k = 0; k < sizeof issue4 / sizeof issue4[0]; k++)
        if (run_command(st, issue4[k]))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    bool serve = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--serve") == 0) {
            serve = true;
        } else {
            fprintf(stderr, "usage: %s [--serve]\n", argv[0]);
            return 2;
        }
    }
    cd_world_def wdef = cd_default_world_def();
    bench_state st = {.world = cd_world_create(&wdef)};
    if (st.world == NULL)
        return fail("cd_world_create failed");
    int rc = 0;
    if (!serve) {
        rc = run_default(&st);
    } else {
        char line[256];
        while (fgets(line, sizeof line, stdin) != NULL) {
            rc = run_command(&st, line);
            if (rc != 0)
                break;
        }
        if (rc == 2)
            rc = 0;
    }
    free_timed(&st);
    free_aero(&st);
    cd_world_destroy(st.world);
    return rc != 0 || st.mismatch ? 1 : 0;
}
