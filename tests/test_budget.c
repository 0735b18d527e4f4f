/* The step budget's plan and rate (server/budget.c, issue 15), from
 * made-up predicted costs and step times: the lowest priority is lowered
 * first, nothing goes below the floor, and the next plan with room returns
 * everything to its own level; the measured rate is the 98th percentile of
 * its window's batches, a fixed one never moves. Neither reads a clock, so
 * the same costs and times give the same levels. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../server/budget.h"

/* A cape-like cost: each level about half the one before. */
static cd_budget_item item(float priority, int32_t base)
{
    return (cd_budget_item){.cost = {1000, 520, 280, 160}, .priority = priority, .base = base};
}

static uint64_t plan(cd_budget_item *items, uint32_t count, uint64_t budget)
{
    cd_budget_rank ranks[16];
    cr_assert_leq(count, 16u);
    return cd_budget_plan(items, count, budget, CD_BUDGET_FLOOR, ranks);
}

Test(budget, a_batch_that_fits_keeps_every_level)
{
    cd_budget_item items[3] = {item(0, 0), item(1, 1), item(2, 0)};
    cr_assert_eq(plan(items, 3, 2520), 2520u);
    cr_assert_eq(items[0].level, 0);
    cr_assert_eq(items[1].level, 1, "its own level, not full detail");
    cr_assert_eq(items[2].level, 0);
}

Test(budget, lowest_priority_is_lowered_first)
{
    /* Priorities 3, 1, 2, 1: the two at 1 take turns (index order), then 2. */
    cd_budget_item items[4] = {item(3, 0), item(1, 0), item(2, 0), item(1, 0)};
    cr_assert_eq(plan(items, 4, 3500), 3040u); /* 4000 - 480 - 480 */
    cr_assert_eq(items[1].level, 1);
    cr_assert_eq(items[3].level, 1);
    cr_assert_eq(items[0].level, 0);
    cr_assert_eq(items[2].level, 0);

    cd_budget_item more[4] = {item(3, 0), item(1, 0), item(2, 0), item(1, 0)};
    cr_assert_eq(plan(more, 4, 2300), 2080u);
    cr_assert_eq(more[1].level, 2, "both lowest at the floor first");
    cr_assert_eq(more[3].level, 2);
    cr_assert_eq(more[2].level, 1, "then the next priority");
    cr_assert_eq(more[0].level, 0, "the highest keeps full detail");
}

Test(budget, ties_go_in_batch_order_one_level_at_a_time)
{
    cd_budget_item items[3] = {item(0, 0), item(0, 0), item(0, 0)};
    cr_assert_eq(plan(items, 3, 2600), 2520u);
    cr_assert_eq(items[0].level, 1);
    cr_assert_eq(items[1].level, 0);
    cr_assert_eq(items[2].level, 0);
    cr_assert_eq(plan(items, 3, 1600), 1560u);
    cr_assert_eq(items[0].level, 1);
    cr_assert_eq(items[1].level, 1);
    cr_assert_eq(items[2].level, 1, "each one level before any a second");
}

Test(budget, never_below_the_floor)
{
    cd_budget_item items[3] = {item(0, 0), item(5, 0), item(9, 3)};
    const uint64_t total = plan(items, 3, 1);
    cr_assert_eq(items[0].level, CD_BUDGET_FLOOR);
    cr_assert_eq(items[1].level, CD_BUDGET_FLOOR);
    cr_assert_eq(items[2].level, 3, "its own coarser level stays");
    cr_assert_eq(total, 280u + 280u + 160u, "over the budget: reported, not cut");
    cr_assert_gt(total, 1u);
}

Test(budget, back_to_full_detail_when_the_budget_is_raised)
{
    cd_budget_item items[2] = {item(0, 0), item(1, 0)};
    plan(items, 2, 600);
    cr_assert_eq(items[0].level, 2);
    cr_assert_eq(items[1].level, 2);
    cr_assert_eq(plan(items, 2, 2000), 2000u);
    cr_assert_eq(items[0].level, 0);
    cr_assert_eq(items[1].level, 0);
}

Test(budget, nothing_to_gain_is_left_alone)
{
    /* An instance at one substep of one iteration costs the same at every
     * level, a sleeping one nothing: lowering them saves nothing. */
    cd_budget_item items[3] = {
        {.cost = {300, 300, 300, 300}, .priority = 0},
        {.cost = {0, 0, 0, 0}, .priority = 0},
        item(1, 0),
    };
    cr_assert_eq(plan(items, 3, 900), 820u);
    cr_assert_eq(items[0].level, 0);
    cr_assert_eq(items[1].level, 0);
    cr_assert_eq(items[2].level, 1);
}

Test(budget, the_same_costs_give_the_same_plan)
{
    for (int run = 0; run < 2; run++) {
        cd_budget_item items[5] = {item(2, 0), item(0.5f, 0), item(2, 1), item(0.5f, 0),
                                   item(-1, 0)};
        cr_assert_eq(plan(items, 5, 3000), 2840u);
        const int32_t want[5] = {0, 1, 1, 1, 2};
        for (int i = 0; i < 5; i++)
            cr_assert_eq(items[i].level, want[i], "run %d item %d: %d", run, i, items[i].level);
    }
}

Test(budget, units_and_milliseconds)
{
    cr_assert_eq(cd_budget_ms_to_units(1.0, 8000), 125000u); /* 1 ms / 8 ns */
    cr_assert_float_eq(cd_budget_units_to_ms(125000, 8000), 1.0, 1e-12);
    cr_assert_eq(cd_budget_ms_to_units(0.0, 8000), 0u);
}

/* ---- the rate (cd_budget_rate) ----------------------------------------- */

Test(budget, a_fixed_rate_never_moves)
{
    cd_budget_rate rate;
    cd_budget_rate_init(&rate, 3000);
    cr_assert_eq(rate.ps, 3000u);
    for (int i = 0; i < 300; i++)
        cd_budget_rate_add(&rate, 1000, 50.0); /* 50,000,000 ps a unit */
    cr_assert_eq(rate.ps, 3000u, "--step-cost-ps is the operator's");
    cr_assert_eq(cd_budget_rate_target_pct(&rate), CD_BUDGET_TARGET_PCT);
}

Test(budget, a_measured_rate_starts_at_the_default_and_takes_the_first_batch)
{
    cd_budget_rate rate;
    cd_budget_rate_init(&rate, 0);
    cr_assert_eq(rate.ps, (uint32_t)CD_STEP_COST_PS_DEFAULT);
    cr_assert_eq(cd_budget_rate_target_pct(&rate), CD_BUDGET_MEASURED_TARGET_PCT);
    cd_budget_rate_add(&rate, 0, 5.0);          /* nothing planned: no rate */
    cd_budget_rate_add(&rate, 1000, 0.0);       /* no time */
    cd_budget_rate_add(&rate, 1000, -1.0);
    cd_budget_rate_add(&rate, 1000, INFINITY);
    cr_assert_eq(rate.ps, (uint32_t)CD_STEP_COST_PS_DEFAULT);
    cd_budget_rate_add(&rate, 1000000, 5.0); /* 5 ms for a million units: 5,000 ps */
    cr_assert_eq(rate.ps, 5000u);
}

Test(budget, a_measured_rate_is_the_98th_percentile_of_the_window)
{
    cr_assert_eq(CD_BUDGET_RATE_PERCENTILE, 98u);
    cd_budget_rate rate;
    cd_budget_rate_init(&rate, 0);
    /* 100 batches of 1,000,000 units at 1..100 ms, shuffled (37 is prime
     * to 100): 1,000 ps a unit per ms. */
    for (int i = 0; i < 100; i++)
        cd_budget_rate_add(&rate, 1000000, (double)((i * 37) % 100 + 1));
    cr_assert_eq(rate.ps, 98000u, "nearest rank: the 98th of 100");
    /* Fewer than 50: the largest. */
    cd_budget_rate_init(&rate, 0);
    const double ms[5] = {2.0, 9.0, 3.0, 4.0, 1.0};
    for (int i = 0; i < 5; i++)
        cd_budget_rate_add(&rate, 1000000, ms[i]);
    cr_assert_eq(rate.ps, 9000u);
}

Test(budget, a_measured_rate_follows_the_load_within_its_window)
{
    cr_assert_eq(CD_BUDGET_RATE_WINDOW, 192u);
    cd_budget_rate rate;
    cd_budget_rate_init(&rate, 0);
    for (uint32_t i = 0; i < CD_BUDGET_RATE_WINDOW; i++)
        cd_budget_rate_add(&rate, 1000000, 4.0);
    cr_assert_eq(rate.ps, 4000u);
    /* A few steps that waited for a core: above the 98th, no change. */
    for (int i = 0; i < 3; i++)
        cd_budget_rate_add(&rate, 1000000, 40.0);
    cr_assert_eq(rate.ps, 4000u, "3 slow steps of 192");
    /* One more slow step tips the percentile to the next slowest. */
    cd_budget_rate_add(&rate, 1000000, 12.0);
    cr_assert_eq(rate.ps, 12000u, "4 of 192 above: the 98th is the slower rate");
    /* A window later the old rates are gone, the slowest too. */
    for (uint32_t i = 0; i < CD_BUDGET_RATE_WINDOW; i++)
        cd_budget_rate_add(&rate, 1000000, 12.0);
    cr_assert_eq(rate.ps, 12000u);
    for (uint32_t i = 0; i < CD_BUDGET_RATE_WINDOW; i++)
        cd_budget_rate_add(&rate, 2000000, 4.0); /* faster again */
    cr_assert_eq(rate.ps, 2000u, "the window forgets what it no longer holds");
    for (uint32_t i = 1; i < rate.count; i++)
        cr_assert_leq(rate.sorted[i - 1], rate.sorted[i]);
}

static int by_value(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

Test(budget, the_measured_rate_is_the_percentile_of_exactly_the_last_window)
{
    /* Against a brute force over the last batches' rates (ties included:
     * the rates come from 40 distinct times). */
    enum { BATCHES = 700 };
    static uint32_t history[BATCHES];
    cd_budget_rate rate;
    cd_budget_rate_init(&rate, 0);
    for (uint32_t i = 0; i < BATCHES; i++) {
        const double ms = 1.0 + (double)((i * 7919u) % 40u) / 8.0;
        cd_budget_rate_add(&rate, 1000000, ms);
        history[i] = (uint32_t)(ms * 1000.0);
        const uint32_t n = i + 1 < CD_BUDGET_RATE_WINDOW ? i + 1 : CD_BUDGET_RATE_WINDOW;
        uint32_t last[CD_BUDGET_RATE_WINDOW];
        memcpy(last, &history[i + 1 - n], n * sizeof last[0]);
        qsort(last, n, sizeof last[0], by_value);
        const uint32_t rank = (CD_BUDGET_RATE_PERCENTILE * n + 99u) / 100u;
        cr_assert_eq(rate.ps, last[rank - 1], "batch %u: %u, want %u", i, rate.ps, last[rank - 1]);
    }
}
