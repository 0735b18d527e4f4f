/* The worker pool's hand-off under ThreadSanitizer (make e2e-tsan and make
 * check build it with -fsanitize=thread). A plain program: Criterion's
 * runner cannot start under TSan ("Could not initialize inheritable
 * arena"), so tests/test_pool.c cannot be reused here.
 *
 * As in the server: jobs write plain (non-atomic) memory on the workers;
 * the consumer, woken only through a relaxed counter (the server's wake-up
 * is uv_async_send, which TSan does not see either), takes each finished
 * job, reads what the worker wrote and writes it again before submitting
 * the job anew. Without the pool's release/acquire at the hand-off TSan
 * reports these accesses as races; with it the program runs clean and
 * exits 0. It also checks the values, so a lost or repeated job fails. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../server/pool.h"

enum { JOBS = 64, ROUNDS = 400, CELLS = 32 };

typedef struct work {
    cd_job job; /* first: a cd_job * is a work * */
    unsigned round;
    unsigned cells[CELLS]; /* plain memory, handed back and forth */
} work;

static atomic_uint wakeups;

static void notify(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&wakeups, 1u, memory_order_relaxed);
}

static void run(cd_job *job)
{
    work *w = (work *)job;
    for (unsigned i = 0; i < CELLS; i++)
        w->cells[i] += i + 1; /* reads the consumer's write, writes anew */
}

int main(void)
{
    static work jobs[JOBS];
    cd_pool *pool = cd_pool_create(4, JOBS, notify, NULL);
    if (pool == NULL) {
        fprintf(stderr, "pool_handoff: cd_pool_create failed\n");
        return 1;
    }
    for (unsigned j = 0; j < JOBS; j++) {
        jobs[j].job.run = run;
        if (!cd_pool_submit(pool, &jobs[j].job)) {
            fprintf(stderr, "pool_handoff: submit %u refused\n", j);
            return 1;
        }
    }
    unsigned long done = 0, want = (unsigned long)JOBS * ROUNDS;
    while (done < want) {
        cd_job *job = cd_pool_take_done(pool);
        if (job == NULL)
            continue; /* spin: the relaxed wake-up counter orders nothing */
        work *w = (work *)job;
        done++;
        w->round++;
        for (unsigned i = 0; i < CELLS; i++) {
            if (w->cells[i] != w->round * (i + 1) * 2 - (i + 1)) {
                fprintf(stderr, "pool_handoff: job %ld cell %u holds %u after round %u\n",
                        (long)(w - jobs), i, w->cells[i], w->round);
                return 1;
            }
            w->cells[i] += i + 1; /* the consumer's write */
        }
        if (w->round < ROUNDS && !cd_pool_submit(pool, job)) {
            fprintf(stderr, "pool_handoff: resubmit refused\n");
            return 1;
        }
    }
    cd_pool_destroy(pool);
    printf("pool_handoff: %lu hand-offs through 4 workers, %u wake-ups, values exact\n", done * 2,
           atomic_load(&wakeups));
    return 0;
}
