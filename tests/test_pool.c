/* The worker pool (server/pool.c): every job runs exactly once, finished
 * jobs come back through cd_pool_take_done, submission is bounded by the
 * capacity, and destroy joins idle workers. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <criterion/criterion.h>

#include "../server/pool.h"

typedef struct counting_job {
    cd_job job; /* first: a cd_job * is a counting_job * */
    atomic_uint *runs;
} counting_job;

static void count_run(cd_job *job)
{
    counting_job *cj = (counting_job *)job;
    atomic_fetch_add(cj->runs, 1u);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

enum { JOBS = 1000 };

static void run_every_job_once(unsigned workers, uint32_t capacity)
{
    static atomic_uint runs[JOBS];
    static counting_job jobs[JOBS];
    static cd_job *list[JOBS];
    for (uint32_t i = 0; i < JOBS; i++) {
        atomic_init(&runs[i], 0u);
        jobs[i] = (counting_job){.job = {.run = count_run, .user = NULL}, .runs = &runs[i]};
        list[i] = &jobs[i].job;
    }
    cd_pool *pool = cd_pool_create(workers, capacity, NULL, NULL);
    cr_assert_not_null(pool);
    cr_assert_eq(cd_pool_workers(pool), workers);

    /* Three batches through the same pool, each far larger than capacity. */
    for (unsigned batch = 1; batch <= 3; batch++) {
        cd_pool_run_batch(pool, list, JOBS);
        for (uint32_t i = 0; i < JOBS; i++)
            /* Exactly once per batch: never skipped, never repeated. */
            cr_assert_eq(atomic_load(&runs[i]), batch, "%u workers, capacity %u: job %u ran %u "
                         "times after batch %u", workers, capacity, i, atomic_load(&runs[i]),
                         batch);
        cr_assert_null(cd_pool_take_done(pool), "a batch leaves nothing behind");
    }
    cd_pool_destroy(pool);
}

Test(pool, every_job_should_run_exactly_once_with_4_workers, .timeout = 20)
{
    run_every_job_once(4, 16);
}

Test(pool, every_job_should_run_exactly_once_with_1_worker_and_capacity_1, .timeout = 20)
{
    run_every_job_once(1, 1);
}

Test(pool, every_job_should_run_exactly_once_with_more_workers_than_capacity, .timeout = 20)
{
    run_every_job_once(8, 3);
}

Test(pool, take_done_should_return_null_when_nothing_is_done, .timeout = 10)
{
    cd_pool *pool = cd_pool_create(2, 8, NULL, NULL);
    cr_assert_not_null(pool);
    cr_assert_null(cd_pool_take_done(pool));
    cr_assert_null(cd_pool_take_done(pool), "and again");
    cd_pool_destroy(pool);
}

/* ---- asynchronous use: submit, notify, take_done ------------------------ */

static void notified(void *arg)
{
    atomic_fetch_add((atomic_uint *)arg, 1u);
}

Test(pool, submitted_jobs_should_come_back_once_each_through_take_done, .timeout = 10)
{
    enum { N = 64 };
    atomic_uint notes;
    atomic_init(&notes, 0u);
    cd_pool *pool = cd_pool_create(4, N, notified, &notes);
    cr_assert_not_null(pool);

    atomic_uint runs[N];
    counting_job jobs[N];
    unsigned returned[N] = {0};
    for (uint32_t i = 0; i < N; i++) {
        atomic_init(&runs[i], 0u);
        jobs[i] = (counting_job){.job = {.run = count_run, .user = &returned[i]}, .runs = &runs[i]};
        cr_assert(cd_pool_submit(pool, &jobs[i].job), "job %u refused below capacity", i);
    }
    uint32_t taken = 0;
    for (int spins = 0; taken < N && spins < 5000; spins++) {
        cd_job *job;
        while ((job = cd_pool_take_done(pool)) != NULL) {
            (*(unsigned *)job->user)++;
            taken++;
        }
        if (taken < N)
            sleep_ms(1);
    }
    cr_assert_eq(taken, N, "only %u of %u jobs came back", taken, N);
    for (uint32_t i = 0; i < N; i++) {
        cr_assert_eq(atomic_load(&runs[i]), 1u, "job %u ran %u times", i, atomic_load(&runs[i]));
        cr_assert_eq(returned[i], 1u, "job %u came back %u times", i, returned[i]);
    }
    /* One notification per finished job, made after it was queued. */
    cr_assert_eq(atomic_load(&notes), N);
    cr_assert_null(cd_pool_take_done(pool));
    cd_pool_destroy(pool);
}

/* A job that holds its worker until the gate opens. */
typedef struct gated_job {
    cd_job job;
    atomic_int *gate;
    atomic_uint *started;
} gated_job;

static void gated_run(cd_job *job)
{
    gated_job *g = (gated_job *)job;
    atomic_fetch_add(g->started, 1u);
    while (!atomic_load(g->gate))
        sleep_ms(1);
}

Test(pool, submit_should_refuse_more_jobs_in_flight_than_capacity, .timeout = 10)
{
    enum { CAP = 4 };
    atomic_uint notes, started;
    atomic_int gate;
    atomic_init(&notes, 0u);
    atomic_init(&started, 0u);
    atomic_init(&gate, 0);
    cd_pool *pool = cd_pool_create(2, CAP, notified, &notes);
    cr_assert_not_null(pool);

    gated_job jobs[CAP + 1];
    for (int i = 0; i <= CAP; i++)
        jobs[i] = (gated_job){.job = {.run = gated_run}, .gate = &gate, .started = &started};
    for (int i = 0; i < CAP; i++)
        cr_assert(cd_pool_submit(pool, &jobs[i].job), "job %d below capacity", i);
    cr_assert_not(cd_pool_submit(pool, &jobs[CAP].job), "capacity %d is the limit", CAP);

    atomic_store(&gate, 1);
    uint32_t taken = 0;
    for (int spins = 0; taken < CAP && spins < 5000; spins++) {
        while (cd_pool_take_done(pool) != NULL)
            taken++;
        if (taken < CAP)
            sleep_ms(1);
    }
    cr_assert_eq(taken, CAP);
    /* Taking the finished jobs frees their places. */
    cr_assert(cd_pool_submit(pool, &jobs[CAP].job));
    while (cd_pool_take_done(pool) == NULL)
        sleep_ms(1);
    cr_assert_eq(atomic_load(&started), CAP + 1);
    cd_pool_destroy(pool);
}

/* ---- lifecycle ------------------------------------------------------------ */

Test(pool, destroy_should_join_idle_workers_cleanly, .timeout = 10)
{
    /* Right after creation (workers may not be asleep yet)... */
    cd_pool *pool = cd_pool_create(8, 32, NULL, NULL);
    cr_assert_not_null(pool);
    cd_pool_destroy(pool);

    /* ...after they have been idle a while... */
    pool = cd_pool_create(8, 32, NULL, NULL);
    cr_assert_not_null(pool);
    sleep_ms(20);
    cd_pool_destroy(pool);

    /* ...and after work, idle again. Returning at all is the proof: a worker
     * that missed the stop would hang the join (and the 10 s timeout). */
    pool = cd_pool_create(3, 8, NULL, NULL);
    cr_assert_not_null(pool);
    atomic_uint runs;
    atomic_init(&runs, 0u);
    counting_job job = {.job = {.run = count_run}, .runs = &runs};
    cd_job *list[1] = {&job.job};
    cd_pool_run_batch(pool, list, 1);
    cr_assert_eq(atomic_load(&runs), 1u);
    sleep_ms(5);
    cd_pool_destroy(pool);

    cd_pool_destroy(NULL); /* harmless */
}

Test(pool, create_should_reject_bad_arguments)
{
    cr_assert_null(cd_pool_create(0, 8, NULL, NULL), "no workers");
    cr_assert_null(cd_pool_create(CD_POOL_MAX_WORKERS + 1, 8, NULL, NULL), "too many workers");
    cr_assert_null(cd_pool_create(2, 0, NULL, NULL), "no capacity");
}
