/* clothd server — the per-step time budget's scheduler (budget.c): the
 * plan, and the rate that turns its cost units into time.
 *
 * Both are plain functions of the figures they are given: no clock, no
 * world, no threads, so a unit test drives them with made-up costs and
 * step times (tests/test_budget.c). The server feeds the rate the batches'
 * measured times (unless --step-cost-ps fixes it), so its decisions follow
 * the machine's load; a recording journals them (server/recording.c) and a
 * replay steps at the recorded levels, bit for bit. */
#ifndef CLOTHD_SERVER_BUDGET_H
#define CLOTHD_SERVER_BUDGET_H

#include <stdint.h>

#include "../solver/solver.h"

/* The coarsest level the budget lowers an instance to (an instance whose
 * own `lod` is coarser keeps its own). */
#define CD_BUDGET_FLOOR 2

/* The rate a plan starts from before any budgeted batch was measured:
 * picoseconds of a batch's wall time per cost unit. The development
 * machine's 2 workers (AVX2) measured 4,800 for 64 capes when idle and
 * 11,000-39,000 while other processes took its cores (bench/README.md,
 * section 12). */
#define CD_STEP_COST_PS_DEFAULT 8000

/* The measured rate (the default): the plan predicts at this percentile
 * of the rates (wall time over planned units) of the last
 * CD_BUDGET_RATE_WINDOW budgeted batches, i.e. at their median times
 * their spread (p98 / p50), both as this machine's load makes them now.
 * 192 batches are about three seconds of a 60 Hz game: the rate follows a
 * change of load within them, and three steps that waited for a core do
 * not move it. Replayed over step times of the 64 capes recorded on the
 * loaded development machine (8 traces, spread p95/p50 1.9 to 4.4; the
 * budget is then often out of reach even with every cape at the floor),
 * the 98th percentile of 192 met the budget within 0.6 points of the best
 * any plan could (every cape at the floor), the 95th of 128 within 3.6
 * points for 15% more detail kept (bench/README.md, section 12, and
 * bench/budget_rates.py). */
#define CD_BUDGET_RATE_WINDOW 192u
#define CD_BUDGET_RATE_PERCENTILE 98u

/* The plan fits the predicted time into this share of the budget, leaving
 * the rest for what the prediction does not see (in percent). With a
 * fixed rate (--step-cost-ps) the share carries all of the step times'
 * spread: at 90% the 64 capes' steps (p95 14% over p50 on the idle
 * machine) met their budget 78% of the time, at 80% 97-98%. A measured
 * rate at a high percentile carries the spread itself; its share covers a
 * load that rises within the window. */
#define CD_BUDGET_TARGET_PCT 80u
#define CD_BUDGET_MEASURED_TARGET_PCT 90u

/* The rate a batch is planned at: fixed, or measured from the batches
 * before it. Plain data: the same samples give the same rate. */
typedef struct cd_budget_rate {
    uint32_t fixed_ps; /* nonzero: --step-cost-ps, never adapted */
    uint32_t ps;       /* the rate the next plan uses */
    uint32_t count;    /* samples held, up to the window */
    uint32_t next;     /* the ring's slot for the next sample */
    uint32_t samples[CD_BUDGET_RATE_WINDOW]; /* ps per unit, the newest, a ring */
    uint32_t sorted[CD_BUDGET_RATE_WINDOW];  /* the same `count` values, ascending */
} cd_budget_rate;

/* `fixed_ps` 0: measured, starting from CD_STEP_COST_PS_DEFAULT. */
void cd_budget_rate_init(cd_budget_rate *rate, uint32_t fixed_ps);
/* A budgeted batch of `units` planned cost units took `ms` of wall time
 * (ignored with a fixed rate, with no units, or a time that is not
 * positive and finite). */
void cd_budget_rate_add(cd_budget_rate *rate, uint64_t units, double ms);
/* The share of the budget (percent) a plan at this rate fills at most. */
uint32_t cd_budget_rate_target_pct(const cd_budget_rate *rate);

/* One instance of a batch. */
typedef struct cd_budget_item {
    uint64_t cost[CD_LOD_LEVELS]; /* predicted cost units of its step at each level */
    float priority;               /* higher keeps its detail longer */
    int32_t base;                 /* its own level (the `lod` option) */
    int32_t level;                /* out: the level it steps at, base..max(base, floor) */
} cd_budget_item;

/* Scratch for the plan: one per item. */
typedef struct cd_budget_rank {
    float priority;
    uint32_t index;
} cd_budget_rank;

/* Chooses each item's level so that the summed cost fits `budget` units:
 * every item starts at its base level; while the sum is over, the items of
 * the lowest priority (ties: the earlier item first) are lowered one level
 * at a time in turn, none below `floor` nor where the next level costs no
 * less, before any item of the next priority is touched. Returns the planned sum (over `budget` when even the
 * floor does not fit). `ranks` has `count` entries of scratch. */
uint64_t cd_budget_plan(cd_budget_item *items, uint32_t count, uint64_t budget, int32_t floor,
                        cd_budget_rank *ranks);

/* Cost units to time and back at `ps_per_unit` picoseconds of a batch's
 * wall time per unit (cd_budget_rate's ps). */
double cd_budget_units_to_ms(uint64_t units, uint32_t ps_per_unit);
uint64_t cd_budget_ms_to_units(double ms, uint32_t ps_per_unit);

#endif
