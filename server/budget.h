/* clothd server — the per-step time budget's scheduler (budget.c).
 *
 * A pure function of predicted costs: no clock, no world, no threads, so a
 * unit test drives it with made-up costs and the server's decisions are a
 * function of the commands (tests/test_budget.c). */
#ifndef CLOTHD_SERVER_BUDGET_H
#define CLOTHD_SERVER_BUDGET_H

#include <stdint.h>

#include "../solver/solver.h"

/* The coarsest level the budget lowers an instance to (an instance whose
 * own `lod` is coarser keeps its own). */
#define CD_BUDGET_FLOOR 2

/* --step-cost-ps's default: picoseconds of a batch's wall time per cost
 * unit. The development machine's 2 workers (AVX2) measured 4,800 for 64
 * capes when idle and 11,000-39,000 while other processes took its cores
 * (bench/README.md, section 12); 8,000 leaves room over the idle rate.
 * Another machine calibrates its own from the step reply's predictedMs and
 * actualMs (bench/bench_lod.py does, at the 90th percentile). */
#define CD_STEP_COST_PS_DEFAULT 8000

/* The plan fits the predicted time into this share of the budget, leaving
 * the rest for what counted work does not see (another process taking a
 * core for a moment, the reply): in percent. At 90% the actual times'
 * spread (p95 14% over p50) left 78% of the 64 capes' steps within their
 * budget on an idle machine; at 80%, 97-98% (bench/README.md, section 12). */
#define CD_BUDGET_TARGET_PCT 80u

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
 * wall time per unit (--step-cost-ps). */
double cd_budget_units_to_ms(uint64_t units, uint32_t ps_per_unit);
uint64_t cd_budget_ms_to_units(double ms, uint32_t ps_per_unit);

#endif
