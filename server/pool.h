/* clothd worker pool — dedicated threads that run jobs (one instance step
 * each) and hand completed jobs back to one consumer thread.
 *
 * Jobs go in through a Concurrency Kit MPMC ring and wake a sleeping worker
 * through a semaphore; finished jobs go out through a second ring, and the
 * pool calls `notify` (the server passes a uv_async_send wrapper) after
 * each one. Idle workers block on the semaphore: no CPU is used when idle.
 *
 * The pool never looks inside a job: it calls job->run on some worker and
 * then queues the job as done. The caller owns job memory throughout.
 */
#ifndef CLOTHD_POOL_H
#define CLOTHD_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cd_job cd_job;
struct cd_job {
    void (*run)(cd_job *job); /* called on a worker thread */
    void *user;               /* free for the owner */
};

typedef struct cd_pool cd_pool;

/* Called on a worker thread after a job is queued as done (may be NULL). */
typedef void (*cd_pool_notify_fn)(void *arg);

#define CD_POOL_MAX_WORKERS 256

/* `capacity`: most jobs in flight at once (rounded up to a power of two).
 * Returns NULL on failure (bad arguments, no memory, no threads). */
cd_pool *cd_pool_create(unsigned workers, uint32_t capacity, cd_pool_notify_fn notify,
                        void *notify_arg);
/* Stops and joins every worker. Jobs still queued are not run. */
void cd_pool_destroy(cd_pool *pool); /* NULL is fine */

unsigned cd_pool_workers(const cd_pool *pool);

/* Queues a job; false when `capacity` jobs are already in flight. */
bool cd_pool_submit(cd_pool *pool, cd_job *job);

/* Next finished job, or NULL when none is waiting. One consumer thread. */
cd_job *cd_pool_take_done(cd_pool *pool);

/* Submits `count` jobs and blocks until all of them are done (for tests,
 * benchmarks and tools with no event loop; don't mix with async use).
 * `count` may exceed the capacity. */
void cd_pool_run_batch(cd_pool *pool, cd_job **jobs, uint32_t count);

#endif
