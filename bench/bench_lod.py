#!/usr/bin/env python3
"""Levels of detail and the step budget (issue 15): what each level costs
and how it looks, and a scene that overruns its budget at full detail.

11. levels: `bench_clothd --serve`'s `lod` command, one 32x32 cape (3 cm, top
   row pinned) per level stepped in turn: CPU µs per step, max structural
   strain, and the shape against level 0's (largest and RMS distance of a
   particle from its level-0 twin, in % of the span). Three scenes: 1x8 in
   the capes' wind (strain only: a flapping cape's shape is chaotic), 1x8
   released from horizontal and settled (10 s), and automatic substeps
   (6x1 at 60 Hz) released and settled.

12. budget: the real build/clothd with 2 workers and 64 awake capes of
   32x32 (bench_server.py's: 8 iterations, global wind), priority i for
   cape i, clothd's own rate (measured from its recent steps; or a fixed
   --step-cost-ps, given or calibrated: --step-cost-ps N, --calibrate).
   Their full-detail time is the median `actualMs` of STEPS steps with a
   budget too large to lower anything; then STEPS steps with `budgetMs`
   half of it: the share of steps whose `actualMs` met the budget (goal
   >= 95%), the levels chosen, the predicted and actual times, the rate
   the plans used, and the strain of the capes by the level they ran at
   (max structural strain from `get`, sampled every 10 steps), against the
   same capes at full detail before. Then the budget is raised and every
   cape must be back at full detail.

Prints tables, then one machine-readable line per case:

    BENCH {"case":"lod",...}
    BENCH {"case":"budget",...}

Benchmarks report figures; nothing here fails on a slow machine. The exit
code is non-zero only when a server or bench_clothd misbehaves.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_server import BANNER, BenchError, Line, percentile  # noqa: E402
from run import load_average  # noqa: E402

CAPES = 64
CAPE_N = 32
CAPE_ITERS = 8
CAPE_SPACING = 0.03
WIND = [3.0, 0.0, 1.5]
WORKERS = 2
WARMUP_STEPS = 30
SAMPLE_EVERY = 10
GOAL_MET = 95.0

LEVEL_SCENES = (("1x8, capes' wind", "lod 32 8 1 600 1"),
                ("1x8, released and settled", "lod 32 8 1 600 0"),
                ("automatic 6x1, released and settled", "lod 32 1 0 600 0"))


def run_levels(build, log):
    path = os.path.join(build, "bench_clothd")
    if not os.access(path, os.X_OK):
        raise BenchError(f"{path} is missing; run `make {path}`")
    rows = []
    for name, command in LEVEL_SCENES:
        log(f"  levels: {name} ...")
        out = subprocess.run([path, "--serve"], input=command + "\nquit\n", text=True,
                             capture_output=True, timeout=600)
        if out.returncode != 0:
            raise BenchError(f"bench_clothd: `{command}` exited {out.returncode}: {out.stdout}")
        for line in out.stdout.splitlines():
            head, _, body = line.partition(" ")
            if head == "LOD":
                rows.append(dict(json.loads(body), case="lod", scene=name))
    return rows


class Clothd:
    def __init__(self, path, args):
        if not os.access(path, os.X_OK):
            raise BenchError(f"{path} is missing; run `make`")
        self.proc = subprocess.Popen([path, "--port", "0", "--workers", str(WORKERS)] + args,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        m = BANNER.search(self.proc.stdout.readline())
        if not m:
            self.proc.kill()
            raise BenchError("clothd: unexpected banner")
        self.port = int(m.group(2))

    def cpu_ns(self):
        """CPU time of all the server's threads so far (schedstat, ns)."""
        total = 0
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
        return total

    def stop(self):
        self.proc.terminate()
        if self.proc.wait(timeout=10) != 0:
            raise BenchError("clothd did not exit cleanly")


def max_strain(positions, n, rest):
    """Largest |d - rest| / rest over the grid's horizontal and vertical pairs."""
    worst = 0.0
    p = positions
    for y in range(n):
        for x in range(n):
            i = 3 * (y * n + x)
            for j in ((i + 3) if x + 1 < n else None, (i + 3 * n) if y + 1 < n else None):
                if j is None:
                    continue
                d = math.sqrt((p[i] - p[j]) ** 2 + (p[i + 1] - p[j + 1]) ** 2
                              + (p[i + 2] - p[j + 2]) ** 2)
                worst = max(worst, abs(d - rest) / rest)
    return worst


def setup_capes(c):
    ids = []
    for i in range(CAPES):
        x, z = (i % 8) * 1.2, (i // 8) * 1.2
        r = c.ask({"cmd": "create", "width": CAPE_N, "height": CAPE_N, "spacing": CAPE_SPACING,
                   "origin": [x, 2.0, z], "solverIterations": CAPE_ITERS, "sleepThreshold": 0,
                   "priority": i})
        ids.append(r["instance"])
        c.ask({"cmd": "pin", "instance": r["instance"], "particles": list(range(CAPE_N))})
    c.ask({"cmd": "wind", "wind": WIND})
    for _ in range(WARMUP_STEPS):
        c.ask({"cmd": "step"})
    return ids


def run_phase(c, ids, budget, steps, strains):
    """`steps` steps at `budget` ms; strains[level] gets each cape's sampled
    max strain by the level it ran at."""
    replies = []
    for k in range(steps):
        r = c.ask({"cmd": "step", "budgetMs": budget})
        if r["stepped"] != CAPES:
            raise BenchError(f"step reply {r}")
        replies.append(r)
        if strains is not None and k % SAMPLE_EVERY == SAMPLE_EVERY - 1:
            level = {d["instance"]: d["lod"] for d in r["degraded"]}
            for inst in ids:
                g = c.ask({"cmd": "get", "instance": inst})
                strains.setdefault(level.get(inst, 0), []).append(
                    max_strain(g["positions"], CAPE_N, CAPE_SPACING))
    return replies


def full_units():
    """The capes' cost units at full detail (solver.h: cd_instance_step_cost):
    particles x substeps x (2 x iterations + 1)."""
    return CAPES * CAPE_N * CAPE_N * 1 * (2 * CAPE_ITERS + 1)


def calibrate(c, ids, steps, log):
    """`steps` full-detail steps (a budget too large to lower anything):
    the rate that predicts their 90th percentile of actualMs (a rate for
    the median would put half the steps of a plan that just fits over the
    budget on a machine whose speed wanders; the 90th covers most of it)."""
    log("  calibrate: full detail ...")
    actual = [r["actualMs"] for r in run_phase(c, ids, 60000, steps, None)]
    p90 = percentile(actual, 90)
    return {"steps": steps, "actual_ms_p50": round(percentile(actual, 50), 3),
            "actual_ms_p90": round(p90, 3), "ps_per_unit": round(p90 * 1e9 / full_units())}


def run_budget(build, steps, cost_ps, calibrate_rate, log):
    """The budget scene; `cost_ps` a fixed rate, or None: clothd's measured
    one (or, with `calibrate_rate`, a first server's p90, fixed)."""
    cal = None
    if calibrate_rate and not cost_ps:
        server = Clothd(os.path.join(build, "clothd"), [])
        try:
            c = Line(server.port)
            log("  calibrate: 64 capes ...")
            ids = setup_capes(c)
            cal = calibrate(c, ids, max(steps // 2, 20), log)
            log(f"  calibrate: {cal}")
            c.close()
        finally:
            server.stop()
        cost_ps = cal["ps_per_unit"]
    server = Clothd(os.path.join(build, "clothd"),
                    ["--step-cost-ps", str(cost_ps)] if cost_ps else [])
    rate = f"--step-cost-ps {cost_ps}" if cost_ps else "the measured rate"
    try:
        c = Line(server.port)
        log(f"  budget: 64 capes, {rate} ...")
        ids = setup_capes(c)
        log("  budget: full detail ...")
        full_strain = {}
        cpu0 = server.cpu_ns()
        full = run_phase(c, ids, 60000, steps, full_strain)
        cpu_full = (server.cpu_ns() - cpu0) / steps
        full_ms = statistics.median(r["actualMs"] for r in full)
        full_pred = statistics.median(r["predictedMs"] for r in full)
        budget = round(full_ms / 2, 3)
        log(f"  budget: {budget} ms (half of {full_ms:.3f}) ...")
        strains = {}
        cpu0 = server.cpu_ns()
        half = run_phase(c, ids, budget, steps, strains)
        cpu_half = (server.cpu_ns() - cpu0) / steps
        stats = c.ask({"cmd": "stats"})["steps"]["budget"]
        log("  budget: raised again ...")
        back = run_phase(c, ids, 60000, 5, None)
        c.close()
    finally:
        server.stop()
    actual = [r["actualMs"] for r in half]
    met = sum(1 for a in actual if a <= budget)
    # Missed with every cape at the floor already: nothing left to lower,
    # the machine gave the step less than the floor's time.
    at_floor = [len(r["degraded"]) == CAPES and all(d["lod"] >= 2 for d in r["degraded"])
                for r in half]
    missed_at_floor = sum(1 for a, f in zip(actual, at_floor) if a > budget and f)
    ratio = [r["actualMs"] / r["predictedMs"] for r in half if r["predictedMs"] > 0]
    counts = {}
    for r in half:
        for d in r["degraded"]:
            counts[d["lod"]] = counts.get(d["lod"], 0) + 1
    row = {"case": "budget", "capes": CAPES, "n": CAPE_N, "iters": CAPE_ITERS,
           "workers": WORKERS, "steps": steps, "load_before": load_average(),
           "rate": "fixed" if cost_ps else "measured", "step_cost_ps": cost_ps,
           "calibration": cal, "cost_ps_at_end": stats["costPs"],
           "full_actual_ms_p50": round(full_ms, 3), "full_predicted_ms": round(full_pred, 3),
           "full_actual_over_predicted": round(full_ms / full_pred, 3),
           "budget_ms": budget,
           "met_pct": round(100.0 * met / len(actual), 1),
           "at_floor_pct": round(100.0 * sum(at_floor) / len(actual), 1),
           "missed_at_floor_pct": round(100.0 * missed_at_floor / len(actual), 1),
           "missed_with_room_pct": round(100.0 * (len(actual) - met - missed_at_floor)
                                         / len(actual), 1),
           "actual_ms_p50": round(percentile(actual, 50), 3),
           "actual_ms_p95": round(percentile(actual, 95), 3),
           "actual_ms_max": round(max(actual), 3),
           "predicted_ms": round(statistics.median(r["predictedMs"] for r in half), 3),
           "actual_over_predicted_p50": round(percentile(ratio, 50), 3),
           "actual_over_predicted_p95": round(percentile(ratio, 95), 3),
           "server_cpu_ms_full": round(cpu_full / 1e6, 3),
           "server_cpu_ms_budget": round(cpu_half / 1e6, 3),
           "degraded_per_step": {str(k): round(v / steps, 2) for k, v in sorted(counts.items())},
           "strain_full_detail_mean": round(statistics.mean(full_strain[0]), 4),
           "strain_full_detail_max": round(max(full_strain[0]), 4),
           "strain_by_level_mean": {str(k): round(statistics.mean(v), 4)
                                    for k, v in sorted(strains.items())},
           "strain_by_level_max": {str(k): round(max(v), 4) for k, v in sorted(strains.items())},
           "back_to_full_detail": all(not r["degraded"] for r in back[3:])}
    row["verdict_met"] = "PASS" if row["met_pct"] >= GOAL_MET else "MISS"
    return row


def print_tables(levels, budget):
    print()
    print(f"load average before: {load_average()}")
    if levels:
        print("11. Levels of detail: one 32x32 cape per level, CPU of one step on one core")
        print("| scene | level | substeps x iterations | frames every | µs/step | "
              "strain at the end | strain mean / peak | shape vs level 0, max / RMS (% of span) |")
        print("|---|---|---|---|---|---|---|---|")
        for r in levels:
            shape = ("(chaotic)" if r["wind"] else
                     f"{r['shape_max_pct']:.2f} / {r['shape_rms_pct']:.2f}")
            print(f"| {r['scene']} | {r['level']} | {r['substeps']} x {r['iters']} | "
                  f"{r['frame_interval']} | {r['cpu_us']:.1f} | {100 * r['strain']:.2f}% | "
                  f"{100 * r['strain_mean']:.2f}% / {100 * r['strain_peak']:.2f}% | {shape} |")
    if budget:
        b = budget
        print()
        print(f"12. The step budget: {CAPES} capes of {CAPE_N}² at {CAPE_ITERS} iterations, "
              f"{WORKERS} workers, budget half the full-detail time")
        cal = b["calibration"]
        if cal:
            print(f"calibration (a first server, {cal['steps']} steps at full detail): p50 "
                  f"{cal['actual_ms_p50']} ms, p90 {cal['actual_ms_p90']} ms for {full_units()} "
                  f"units: {cal['ps_per_unit']} ps per unit (from the p90)")
        rate = (f"fixed, --step-cost-ps {b['step_cost_ps']}" if b["rate"] == "fixed"
                else f"measured, {b['cost_ps_at_end']} ps per unit at the end")
        print(f"rate: {rate}; actual / predicted under the budget: p50 "
              f"{b['actual_over_predicted_p50']}, p95 {b['actual_over_predicted_p95']}")
        print(f"full detail: {b['full_actual_ms_p50']} ms actual (p50), {b['full_predicted_ms']} ms "
              f"predicted; budget {b['budget_ms']} ms")
        print(f"with the budget: {b['met_pct']}% of {b['steps']} steps met it ({b['verdict_met']}, "
              f"goal {GOAL_MET}%); actual p50 {b['actual_ms_p50']} ms, p95 {b['actual_ms_p95']} ms, "
              f"max {b['actual_ms_max']} ms; predicted {b['predicted_ms']} ms")
        print(f"steps with every cape at the floor: {b['at_floor_pct']}%; missed there (nothing "
              f"left to lower): {b['missed_at_floor_pct']}% of the steps; missed with detail left "
              f"to lower: {b['missed_with_room_pct']}%")
        print(f"server CPU per step (all threads, the gets included): full detail "
              f"{b['server_cpu_ms_full']} ms, with the budget {b['server_cpu_ms_budget']} ms")
        print(f"capes degraded per step, by level: {b['degraded_per_step']}")
        print(f"strain (max per cape, mean over samples): full detail {b['strain_full_detail_mean']}, "
              f"by level under the budget {b['strain_by_level_mean']} (max {b['strain_by_level_max']})")
        print(f"budget raised: every cape back at full detail: {b['back_to_full_detail']}")
    print()
    for r in levels + ([budget] if budget else []):
        print("BENCH " + json.dumps(r, separators=(",", ":")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=300, help="steps per budget phase")
    ap.add_argument("--step-cost-ps", type=int,
                    help="a fixed rate for the budget scene (default: clothd's measured rate)")
    ap.add_argument("--calibrate", action="store_true",
                    help="a fixed rate from a first server's full-detail steps (their p90)")
    ap.add_argument("--no-levels", action="store_true")
    ap.add_argument("--no-budget", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    try:
        levels = [] if args.no_levels else run_levels(args.build, log)
        budget = None if args.no_budget else run_budget(args.build, args.steps, args.step_cost_ps,
                                                        args.calibrate, log)
    except BenchError as e:
        print(f"bench_lod: {e}", file=sys.stderr)
        return 1
    print_tables(levels, budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
