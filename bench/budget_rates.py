#!/usr/bin/env python3
"""Where the step budget's measured rate comes from (server/budget.h):
record the step times of bench_lod.py's budget scene, then replay them
through rate estimators (a percentile of a window of recent batches, and
the share of the budget a plan fills) to see which meets the budget most
often for the least detail lost (bench/README.md, section 12).

    python3 bench/budget_rates.py --record t.json [--steps 1000]   # one trace, ~20 s
    python3 bench/budget_rates.py t.json [u.json ...]              # replay them

A trace holds each step's actualMs and the cost units it ran (from the
levels the reply lists) under a budget of half the full-detail time, with
clothd's own measured rate. The replay assumes a step's time per unit does
not depend on the plan (the same wall time per unit at any level): for each
step the estimator sees the rates of the steps before, plans the units that
fit its share of the budget (between every cape at the floor and full
detail), and the step met the budget when that many units at its own
recorded rate fit. "detail" is the planned units over full detail's (every
cape at the floor is 0.29). "floor" is the share of steps that met the
budget with every cape at the floor: no plan does better.
"""

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_lod import CAPE_ITERS, CAPE_N, CAPES, Clothd, Line, setup_capes  # noqa: E402
from run import load_average  # noqa: E402

# Cost units a cape's step takes at each level (solver/lod.c: 1 x 8, 1 x 4,
# 1 x 2, 1 x 1; particles x substeps x (2 x iterations + 1)).
LEVEL_UNITS = [CAPE_N * CAPE_N * (2 * it + 1) for it in (CAPE_ITERS, CAPE_ITERS // 2,
                                                         CAPE_ITERS // 4, 1)]
FULL = CAPES * LEVEL_UNITS[0]
FLOOR = CAPES * LEVEL_UNITS[2]
WINDOWS = (64, 128, 192)
PERCENTILES = (90, 95, 98)
SHARES = (0.85, 0.9, 1.0)


def record(build, path, steps):
    server = Clothd(os.path.join(build, "clothd"), [])
    try:
        c = Line(server.port)
        ids = setup_capes(c)
        full = [c.ask({"cmd": "step", "budgetMs": 60000})["actualMs"] for _ in range(100)]
        budget = round(sorted(full)[50] / 2, 3)
        rows = []
        for _ in range(steps):
            r = c.ask({"cmd": "step", "budgetMs": budget})
            level = {d["instance"]: d["lod"] for d in r["degraded"]}
            rows.append({"actual": r["actualMs"], "predicted": r["predictedMs"],
                         "units": sum(LEVEL_UNITS[level.get(i, 0)] for i in ids)})
        c.close()
    finally:
        server.stop()
    with open(path, "w") as f:
        json.dump({"load_before": load_average(), "full_ms": sorted(full)[50], "budget": budget,
                   "full_rates": [a / FULL for a in full], "rows": rows}, f)
    met = sum(1 for r in rows if r["actual"] <= budget)
    print(f"{path}: {steps} steps, budget {budget} ms, {100 * met / steps:.1f}% met")


def nearest_rank(values, pct):
    ordered = sorted(values)
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]


def replay(trace, window, pct, share, fixed=None):
    """Met % and detail kept at a measured rate, or at `fixed` (ms a unit)."""
    budget = trace["budget"]
    rates = [r["actual"] / r["units"] for r in trace["rows"]]
    met = kept = 0.0
    for k, rate in enumerate(rates):
        seen = rates[max(0, k - window):k] or [rates[0]]
        plan_rate = fixed if fixed else nearest_rank(seen, pct)
        units = min(FULL, max(FLOOR, budget * share / plan_rate))
        met += rate * units <= budget
        kept += units / FULL
    return 100 * met / len(rates), kept / len(rates)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--record", metavar="FILE")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    if args.record:
        record(args.build, args.record, args.steps)
        return 0
    traces = [json.load(open(p)) for p in args.traces]
    if not traces:
        ap.error("give traces to replay, or --record FILE")
    for p, t in zip(args.traces, traces):
        rates = [r["actual"] / r["units"] for r in t["rows"]]
        floor = sum(1 for x in rates if x * FLOOR <= t["budget"]) / len(rates)
        print(f"{p}: load {t['load_before']}, budget {t['budget']} ms, step time per unit "
              f"p95/p50 {nearest_rank(rates, 95) / nearest_rank(rates, 50):.2f}, "
              f"floor {100 * floor:.1f}%")
    print("| percentile | window | share | " + " | ".join(f"trace {i + 1}: met / detail"
                                                          for i in range(len(traces)))
          + " | lowest met | mean detail |")
    print("|---" * (5 + len(traces)) + "|")
    # The fixed rate before the measured one: the p90 of the full-detail
    # steps before the trace (bench_lod.py --calibrate), at 80% and 90%.
    if all("full_rates" in t for t in traces):
        for share in (0.8, 0.9):
            out = [replay(t, 0, 0, share, nearest_rank(t["full_rates"], 90)) for t in traces]
            print(f"| fixed, p90 of full detail | - | {share:.2f} | "
                  + " | ".join(f"{m:.1f}% / {d:.2f}" for m, d in out)
                  + f" | {min(m for m, _ in out):.1f}% | "
                  f"{sum(d for _, d in out) / len(out):.3f} |")
    for pct in PERCENTILES:
        for window in WINDOWS:
            for share in SHARES:
                out = [replay(t, window, pct, share) for t in traces]
                print(f"| {pct} | {window} | {share:.2f} | "
                      + " | ".join(f"{m:.1f}% / {d:.2f}" for m, d in out)
                      + f" | {min(m for m, _ in out):.1f}% | "
                      f"{sum(d for _, d in out) / len(out):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
