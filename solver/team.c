/* One large instance stepped by several threads at once (issue 8), as
 * Box2D v3 solves one island on several workers: the step's parallel
 * stages are cut into blocks of independent work (a range of particles,
 * or of one colour's constraints) and every thread present claims blocks
 * until the stage is done; the serial parts in between run on the thread
 * that called cd_instance_step (the leader).
 *
 * The blocks are fixed by the instance, never by the number of threads,
 * and no two blocks of a stage touch one particle: whoever runs a block,
 * and in whatever order, the positions are the same bits as a serial step
 * (which runs the same blocks in order). Helpers are optional: the leader
 * claims blocks too, so a stage finishes even when no helper ever came
 * (its job still queued behind other instances, or no pool at all), and a
 * helper that arrives after the step is over returns at once.
 *
 * The leader claims blocks from the front, helpers from the back: with
 * one helper (two cores) each thread works on the same half of the cloth
 * stage after stage, and that half stays in its core's cache. (Claiming
 * in order, first come first served, moved half the cloth between the
 * cores at every stage: 1.10x on two workers instead of 1.8x.)
 *
 * Synchronisation, one stage:
 *   leader: writes the stage into the
 *           slot of its sequence number (function and context), resets `done`, publishes `cursor`
 *           = {sequence, front 0, back = blocks} (release); claims and
 *           runs blocks; waits for `done` to reach the block count
 *           (acquire).
 *   anyone: loads `cursor` (acquire), reads the slot of its sequence,
 *           claims the block at the front (front + 1) or the back (back -
 *           1) while front < back by compare-and-swap of the whole cursor
 *           (a claim succeeds only while that stage is current, so the
 *           slot read was that stage's), runs it, adds one to `done`
 *           (release).
 * Slots alternate, so the one a late thread reads is never the one being
 * written. A helper spins between stages (a stage lasts microseconds; a
 * condition variable's wake-up is tens of microseconds) and yields the CPU
 * after a while of finding nothing. */
#include <assert.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

typedef struct cd_team_stage {
    _Atomic(cd_block_fn *) fn;
    _Atomic(const void *) ctx;
} cd_team_stage;

/* cursor: sequence << 32 | back << 16 | front; blocks < 2^16 a stage. */
#define CURSOR(sequence, back, front)                                                             \
    ((uint_fast64_t)(sequence) << 32 | (uint_fast64_t)(back) << 16 | (uint_fast64_t)(front))
#define CURSOR_FRONT(c) ((uint32_t)((c) & 0xFFFFu))
#define CURSOR_BACK(c) ((uint32_t)(((c) >> 16) & 0xFFFFu))

/* The claimed cursor, the finished count and the rest live on separate
 * cache lines: the leader polls `done` while helpers claim blocks. */
struct cd_team {
    alignas(64) atomic_uint_fast64_t cursor; /* CURSOR(): the stage's unclaimed blocks */
    alignas(64) atomic_uint done;            /* blocks of the current stage finished */
    alignas(64) atomic_uint_fast64_t steps_done;
    atomic_uint helpers; /* threads in cd_team_help: how large a share to claim */
    cd_team_stage stages[2];     /* by sequence & 1 */
    uint32_t sequence;           /* the leader's */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

cd_team *cd_team_create(void)
{
    cd_team *team = aligned_alloc(64, sizeof *team);
    if (team == NULL)
        return NULL;
    team->sequence = 0; /* no stage yet: sequence 0 with no blocks */
    atomic_init(&team->cursor, 0);
    atomic_init(&team->done, 0);
    atomic_init(&team->steps_done, 0);
    atomic_init(&team->helpers, 0);
    for (int s = 0; s < 2; s++) {
        atomic_init(&team->stages[s].fn, NULL);
        atomic_init(&team->stages[s].ctx, NULL);
    }
    return team;
}

size_t cd_team_memory(void)
{
    return sizeof(cd_team);
}

void cd_team_free(cd_team *team)
{
    free(team);
}

/* Claims some blocks of the current stage, from the front or the back,
 * and runs them; returns how many (0: none was left). A claim takes a
 * share of what is left (guided self-scheduling): each claim is a compare-
 * and-swap that moves the cursor's cache line between cores, so a few
 * large claims then smaller ones near the end balance the threads with a
 * handful of claims a stage instead of one per block. */
static uint32_t run_some_blocks(cd_team *team, cd_instance *inst, bool from_back)
{
    const uint32_t threads = 1u + atomic_load_explicit(&team->helpers, memory_order_relaxed);
    uint_fast64_t cursor = atomic_load_explicit(&team->cursor, memory_order_acquire);
    for (;;) {
        const cd_team_stage *stage = &team->stages[(cursor >> 32) & 1u];
        const uint32_t front = CURSOR_FRONT(cursor), back = CURSOR_BACK(cursor);
        cd_block_fn *fn = atomic_load_explicit(&stage->fn, memory_order_relaxed);
        const void *ctx = atomic_load_explicit(&stage->ctx, memory_order_relaxed);
        if (front >= back)
            return 0;
        uint32_t take = (back - front) / (2u * threads);
        take = take > 0 ? take : 1;
        const uint32_t first = from_back ? back - take : front;
        const uint_fast64_t claimed = from_back ? CURSOR(cursor >> 32, back - take, front)
                                                : CURSOR(cursor >> 32, back, front + take);
        /* On failure `cursor` is reloaded: another block, or a new stage. */
        if (atomic_compare_exchange_weak_explicit(&team->cursor, &cursor, claimed,
                                                  memory_order_acq_rel,
                                                  memory_order_acquire)) {
            for (uint32_t b = first; b < first + take; b++)
                fn(inst, ctx, b);
            atomic_fetch_add_explicit(&team->done, take, memory_order_release);
            return take;
        }
    }
}

void cd_team_run(cd_instance *inst, cd_block_fn *fn, const void *ctx, uint32_t blocks)
{
    cd_team *team = inst->team;
    assert(blocks < 0x10000u); /* the largest instance has a few hundred */
    if (team == NULL) {
        for (uint32_t b = 0; b < blocks; b++)
            fn(inst, ctx, b);
        return;
    }
    const uint32_t sequence = ++team->sequence;
    cd_team_stage *stage = &team->stages[sequence & 1u];
    atomic_store_explicit(&stage->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&stage->ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&team->done, 0, memory_order_relaxed);
    atomic_store_explicit(&team->cursor, CURSOR(sequence, blocks, 0), memory_order_release);
    while (run_some_blocks(team, inst, false) > 0)
        ;
    while (atomic_load_explicit(&team->done, memory_order_acquire) < blocks)
        cpu_relax();
}

uint64_t cd_team_ticket(const cd_team *team)
{
    return team == NULL ? 0 : (uint64_t)atomic_load(&team->steps_done) + 1;
}

void cd_team_step_done(cd_team *team)
{
    if (team != NULL)
        atomic_fetch_add_explicit(&team->steps_done, 1, memory_order_release);
}

uint64_t cd_team_help(cd_team *team, cd_instance *inst, uint64_t ticket)
{
    unsigned idle = 0;
    uint64_t blocks = 0;
    atomic_fetch_add_explicit(&team->helpers, 1, memory_order_relaxed);
    while (atomic_load_explicit(&team->steps_done, memory_order_acquire) < ticket) {
        const uint32_t ran = run_some_blocks(team, inst, true);
        if (ran > 0) {
            blocks += ran;
            idle = 0;
            continue;
        }
        if (++idle < 4096) {
            cpu_relax();
        } else {
            idle = 0;
            sched_yield(); /* the leader is in a serial part, or not started */
        }
    }
    atomic_fetch_sub_explicit(&team->helpers, 1, memory_order_relaxed);
    return blocks;
}
