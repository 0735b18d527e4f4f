/* Worker pool: dedicated threads, a Concurrency Kit MPMC ring of jobs with a
 * semaphore to sleep on, and an MPSC ring of finished jobs.
 *
 * Submission is bounded by `capacity` jobs in flight (counted by the single
 * consumer), so neither ring can ever be full when a thread pushes to it. */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>

#include <ck_pr.h>
#include <ck_ring.h>

/* ThreadSanitizer and the rings. Concurrency Kit synchronises with inline
 * assembly (CAS and fences) that TSan does not see, while it does see the
 * ring's copies of each entry into and out of its slot: without help it
 * reports every hand-off as a race and, worse, sees no order between what a
 * worker wrote into an instance and what the loop thread then reads.
 *
 * So at each hand-off the pool states what ck guarantees: the producer
 * releases the job before it enqueues it, the consumer acquires the job
 * after it dequeues it (every write made before the hand-off happens-before
 * every read after it, as in a mutex-protected queue), and the ring's own
 * slot copies inside enqueue and dequeue are not recorded. Nothing else is
 * hidden from TSan: a real race on the job or on an instance is still
 * reported. Outside TSan builds the macros are empty. */
#if defined(__SANITIZE_THREAD__)
#define CD_POOL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CD_POOL_TSAN 1
#endif
#endif

#ifdef CD_POOL_TSAN
#include <sanitizer/tsan_interface.h>
/* TSan's dynamic annotations (exported by its runtime, no header). */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define HANDOFF_RELEASE(job) __tsan_release(job)
#define HANDOFF_ACQUIRE(job) __tsan_acquire(job)
#define RING_ACCESS_BEGIN()                                                                        \
    do {                                                                                           \
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);                                              \
        AnnotateIgnoreWritesBegin(__FILE__, __LINE__);                                             \
    } while (0)
#define RING_ACCESS_END()                                                                          \
    do {                                                                                           \
        AnnotateIgnoreWritesEnd(__FILE__, __LINE__);                                               \
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);                                                \
    } while (0)
#else
#define HANDOFF_RELEASE(job) ((void)(job))
#define HANDOFF_ACQUIRE(job) ((void)(job))
#define RING_ACCESS_BEGIN() ((void)0)
#define RING_ACCESS_END() ((void)0)
#endif

/* The four ring operations, each a visible hand-off of one job. The
 * dequeues acquire only when they return an entry. */
static bool jobs_push(cd_pool *pool, cd_job *job);
static bool jobs_pop(cd_pool *pool, cd_job **job);
static bool done_push(cd_pool *pool, cd_job *job);
static bool done_pop(cd_pool *pool, cd_job **job);

struct cd_pool {
    ck_ring_t jobs;
    ck_ring_buffer_t *job_buf;
    ck_ring_t done;
    ck_ring_buffer_t *done_buf;
    sem_t work;      /* one post per queued job, one per worker at shutdown */
    sem_t done_sem;  /* blocking mode only (notify == NULL) */
    cd_pool_notify_fn notify;
    void *notify_arg;
    uint32_t capacity;  /* jobs in flight at most */
    uint32_t in_flight; /* consumer side: submitted and not yet taken */
    int stopping;
    unsigned workers;
    unsigned started;
    pthread_t threads[CD_POOL_MAX_WORKERS];
};

static bool jobs_push(cd_pool *pool, cd_job *job)
{
    HANDOFF_RELEASE(job);
    RING_ACCESS_BEGIN();
    bool ok = ck_ring_enqueue_mpmc(&pool->jobs, pool->job_buf, job);
    RING_ACCESS_END();
    return ok;
}

static bool jobs_pop(cd_pool *pool, cd_job **job)
{
    RING_ACCESS_BEGIN();
    bool ok = ck_ring_dequeue_mpmc(&pool->jobs, pool->job_buf, job);
    RING_ACCESS_END();
    if (ok)
        HANDOFF_ACQUIRE(*job);
    return ok;
}

static bool done_push(cd_pool *pool, cd_job *job)
{
    HANDOFF_RELEASE(job);
    RING_ACCESS_BEGIN();
    bool ok = ck_ring_enqueue_mpsc(&pool->done, pool->done_buf, job);
    RING_ACCESS_END();
    return ok;
}

static bool done_pop(cd_pool *pool, cd_job **job)
{
    RING_ACCESS_BEGIN();
    bool ok = ck_ring_dequeue_mpsc(&pool->done, pool->done_buf, job);
    RING_ACCESS_END();
    if (ok)
        HANDOFF_ACQUIRE(*job);
    return ok;
}

static void wait_sem(sem_t *sem)
{
    while (sem_wait(sem) != 0 && errno == EINTR) {
    }
}

static void *worker_main(void *arg)
{
    cd_pool *pool = arg;
    for (;;) {
        wait_sem(&pool->work);
        if (ck_pr_load_int(&pool->stopping))
            return NULL;
        cd_job *job;
        /* The semaphore counts queued jobs, so the entry is there. */
        while (!jobs_pop(pool, &job))
            ck_pr_stall();
        job->run(job);
        while (!done_push(pool, job))
            ck_pr_stall();
        if (pool->notify != NULL)
            pool->notify(pool->notify_arg);
        else
            sem_post(&pool->done_sem);
    }
}

static uint32_t ring_size_for(uint32_t capacity)
{
    uint32_t size = 2;
    while (size < capacity + 1u) /* a ck_ring of size n holds n - 1 */
        size <<= 1;
    return size;
}

cd_pool *cd_pool_create(unsigned workers, uint32_t capacity, cd_pool_notify_fn notify,
                        void *notify_arg)
{
    if (workers < 1 || workers > CD_POOL_MAX_WORKERS || capacity < 1 || capacity > (1u << 24))
        return NULL;
    cd_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return NULL;
    uint32_t size = ring_size_for(capacity);
    pool->job_buf = calloc(size, sizeof *pool->job_buf);
    pool->done_buf = calloc(size, sizeof *pool->done_buf);
    if (pool->job_buf == NULL || pool->done_buf == NULL) {
        free(pool->job_buf);
        free(pool->done_buf);
        free(pool);
        return NULL;
    }
    ck_ring_init(&pool->jobs, size);
    ck_ring_init(&pool->done, size);
    sem_init(&pool->work, 0, 0);
    sem_init(&pool->done_sem, 0, 0);
    pool->notify = notify;
    pool->notify_arg = notify_arg;
    pool->capacity = capacity;
    pool->workers = workers;

    /* Workers never handle signals: the event loop thread does. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i < workers; i++) {
        if (pthread_create(&pool->threads[i], NULL, worker_main, pool) != 0)
            break;
        pool->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pool->started != workers) {
        cd_pool_destroy(pool);
        return NULL;
    }
    return pool;
}

void cd_pool_destroy(cd_pool *pool)
{
    if (pool == NULL)
        return;
    ck_pr_store_int(&pool->stopping, 1);
    for (unsigned i = 0; i < pool->started; i++)
        sem_post(&pool->work);
    for (unsigned i = 0; i < pool->started; i++)
        pthread_join(pool->threads[i], NULL);
    sem_destroy(&pool->work);
    sem_destroy(&pool->done_sem);
    free(pool->job_buf);
    free(pool->done_buf);
    free(pool);
}

unsigned cd_pool_workers(const cd_pool *pool)
{
    return pool->workers;
}

bool cd_pool_submit(cd_pool *pool, cd_job *job)
{
    if (pool->in_flight >= pool->capacity)
        return false;
    if (!jobs_push(pool, job))
        return false;
    pool->in_flight++;
    sem_post(&pool->work);
    return true;
}

cd_job *cd_pool_take_done(cd_pool *pool)
{
    cd_job *job;
    if (!done_pop(pool, &job))
        return NULL;
    pool->in_flight--;
    return job;
}

void cd_pool_run_batch(cd_pool *pool, cd_job **jobs, uint32_t count)
{
    uint32_t next = 0, finished = 0;
    while (finished < count) {
        while (next < count && cd_pool_submit(pool, jobs[next]))
            next++;
        /* One post per finished job, made after the job is queued as done. */
        wait_sem(&pool->done_sem);
        cd_job *done = cd_pool_take_done(pool);
        (void)done;
        finished++;
    }
}
