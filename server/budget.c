/* The per-step time budget (a soft one: it lowers detail, never refuses or
 * shortens a step). Game engines budget animation and physics per frame
 * this way: Unreal's animation budget allocator ranks components by a
 * significance the game sets and throttles the least significant first.
 * clothd ranks the instances of a step batch by their `priority` and lowers
 * their level of detail (solver/lod.c) until the batch's predicted cost
 * fits, never below a floor; the next batch starts again from every
 * instance's own level, so detail comes back as soon as there is room.
 *
 * The prediction is counted work (cd_instance_step_cost) at a rate in
 * picoseconds per unit. Unreal's allocator measures its components' time
 * and so adapts to the machine and its load; clothd does too by default:
 * the rate is a high percentile of what the recent budgeted batches took
 * per unit, so that the prediction carries the spread of the step times
 * as the load makes it now (a fixed rate with a fixed headroom met the
 * budget on the idle machine and missed it under load: bench/README.md,
 * section 12). The decisions then depend on the clock; a recording
 * journals each instance's level, so a replay is still bit-identical. An
 * operator who wants the same choices from the same commands on any
 * machine gives a fixed rate (--step-cost-ps). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"

static int by_priority(const void *a, const void *b)
{
    const cd_budget_rank *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

uint64_t cd_budget_plan(cd_budget_item *items, uint32_t count, uint64_t budget, int32_t floor,
                        cd_budget_rank *ranks)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < count; i++) {
        cd_budget_item *it = &items[i];
        it->base = it->base < 0 ? 0 : it->base >= CD_LOD_LEVELS ? CD_LOD_LEVELS - 1 : it->base;
        it->level = it->base;
        total += it->cost[it->level];
        ranks[i] = (cd_budget_rank){.priority = it->priority, .index = i};
    }
    if (total <= budget)
        return total;
    floor = floor >= CD_LOD_LEVELS ? CD_LOD_LEVELS - 1 : floor;
    qsort(ranks, count, sizeof ranks[0], by_priority);
    for (uint32_t g = 0; g < count;) {
        uint32_t end = g + 1; /* [g, end): one priority */
        while (end < count && ranks[end].priority == ranks[g].priority)
            end++;
        for (bool lowered = true; lowered;) {
            lowered = false;
            for (uint32_t r = g; r < end; r++) {
                cd_budget_item *it = &items[ranks[r].index];
                /* At the floor, or nothing to gain (one substep of one
                 * iteration already; asleep): left as it is. */
                if (it->level >= floor || it->cost[it->level + 1] >= it->cost[it->level])
                    continue;
                total -= it->cost[it->level];
                it->level++;
                total += it->cost[it->level];
                lowered = true;
                if (total <= budget)
                    return total;
            }
        }
        g = end;
    }
    return total;
}

double cd_budget_units_to_ms(uint64_t units, uint32_t ps_per_unit)
{
    return (double)units * (double)ps_per_unit * 1e-9;
}

uint64_t cd_budget_ms_to_units(double ms, uint32_t ps_per_unit)
{
    if (!(ms > 0.0) || ps_per_unit == 0)
        return 0;
    const double units = ms * 1e9 / (double)ps_per_unit;
    return units >= 1.8e19 ? UINT64_MAX : (uint64_t)units;
}

void cd_budget_rate_init(cd_budget_rate *rate, uint32_t fixed_ps)
{
    memset(rate, 0, sizeof *rate);
    rate->fixed_ps = fixed_ps;
    rate->ps = fixed_ps != 0 ? fixed_ps : CD_STEP_COST_PS_DEFAULT;
}

/* Where `v` goes in the first `n` of `sorted` (before any equal value). */
static uint32_t lower_bound(const uint32_t *sorted, uint32_t n, uint32_t v)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void cd_budget_rate_add(cd_budget_rate *rate, uint64_t units, double ms)
{
    if (rate->fixed_ps != 0 || units == 0 || !(ms > 0.0) || !isfinite(ms))
        return;
    const double ps = ms * 1e9 / (double)units;
    const uint32_t v = ps < 1.0 ? 1u : ps > 1e9 ? 1000000000u : (uint32_t)ps;
    /* The window is a ring in arrival order and the same values sorted:
     * the oldest leaves both, the newest enters both (no sort per batch). */
    uint32_t *sorted = rate->sorted;
    if (rate->count == CD_BUDGET_RATE_WINDOW) {
        const uint32_t old = lower_bound(sorted, rate->count, rate->samples[rate->next]);
        memmove(&sorted[old], &sorted[old + 1], (rate->count - old - 1) * sizeof sorted[0]);
        rate->count--;
    }
    const uint32_t at = lower_bound(sorted, rate->count, v);
    memmove(&sorted[at + 1], &sorted[at], (rate->count - at) * sizeof sorted[0]);
    sorted[at] = v;
    rate->count++;
    rate->samples[rate->next] = v;
    rate->next = (rate->next + 1) % CD_BUDGET_RATE_WINDOW;
    /* The nearest-rank percentile: with few samples, the largest. */
    const uint32_t rank = (CD_BUDGET_RATE_PERCENTILE * rate->count + 99u) / 100u;
    rate->ps = sorted[rank - 1];
}

uint32_t cd_budget_rate_target_pct(const cd_budget_rate *rate)
{
    return rate->fixed_ps != 0 ? CD_BUDGET_TARGET_PCT : CD_BUDGET_MEASURED_TARGET_PCT;
}
