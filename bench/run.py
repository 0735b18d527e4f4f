#!/usr/bin/env python3
"""Runs clothd's benchmarks against the Bullet peer and prints the results.

Starts build/bench_clothd and two build/bench_bullet (Bullet's own curtain,
and Bullet given clothd's constraint list) in --serve mode and drives them
from here, so that their timed samples interleave in a rotating order
(A B C, B C A, C A B, ...) and the drift of a shared, noisy machine hits every
engine alike. Prints one
human table per section, then one machine-readable line per case:

    BENCH {"case":"curtain","n":64,...}
    BENCH {"case":"workers",...}
    BENCH {"case":"memory",...}
    BENCH {"case":"substeps",...}   (the solver's depth: one line per row
    BENCH {"case":"xpbd",...}        of section 4's tables)
    BENCH {"case":"defaults",...}
    BENCH {"case":"sleep",...}
    BENCH {"case":"self",...}       (section 5: one line per sheet size)
    BENCH {"case":"softbody",...}   (section 5: one line per volume stiffness)
    BENCH {"case":"smallsteps",...} (section 7b; section 7's figures are in the
                                     curtain lines: simd_*, scalar_*)
    BENCH {"case":"aero",...}       (section 8: the aerodynamic stage alone, one
                                     line per grid size)

Timing targets are reported as PASS/MISS and never change the exit code. The
exit code is non-zero only when an executable fails or crashes, or when the
1-worker and 2-worker runs do not produce bit-identical positions.

See bench/README.md for what each number means.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ITERS = 8
SIZES = (32, 64, 128)
WARMUP_STEPS = 120          # a curtain falls and hangs within ~2 s of sim time
STRAIN_STEPS = 300          # "after settling": 5 s of simulated time
SAMPLE_SECONDS = 0.25       # each timed sample of the slower engine
CURTAIN_TARGET_N = 64       # the target: 64^2 clothd >= 2x Bullet
CURTAIN_TARGET_RATIO = 2.0
WORKER_INSTANCES = 64
WORKER_N = 32
WORKER_WARMUP = 60
WORKER_TARGET = 1.7
WORKER_ATTEMPTS = 3         # retry while the 2-worker pool gets < 1.8 cores
WORKER_MIN_CORES = 1.8
SPLIT_N = 128               # issue 8: one large curtain stepped by every worker
SPLIT_STEPS = 60
SPLIT_TARGET = 1.7
MEMORY_W = MEMORY_H = 20
SEED_BYTES_PER_PARTICLE, SEED_BYTES_PER_CONSTRAINT = 64, 16   # its table's rates
DEPTH_N = 64                # the solver's depth: a 64² curtain
DEPTH_STEPS = 300           # 5 s; µs/step over the last 150
EQUAL_COST = ((1, 8), (2, 4), (4, 2), (8, 1))   # substeps x iterations = 8
DEFAULT_SUBSTEPS, DEFAULT_ITERS = 0, 1          # clothd's defaults: automatic substeps (6 at 60 Hz)
OLD_SUBSTEPS, OLD_ITERS = 1, 4                  # the defaults before issue 10 (the seed's)
XPBD_CASES = ((4, 60), (32, 60), (8, 30), (8, 120))  # (iterations, Hz)
XPBD_TARGET_PCT = 2.0
RELEASE_STEPS = 1200        # a curtain released from horizontal: 20 s
SWING_STEPS = 600           # 4a: its peak strain over the first 10 s
STRAIN_TARGET = 0.01        # the issue: < 1% after settling, defaults, 64²
SLEEP_TARGET = 0.01         # the issue: a sleeping step < 1% of an awake one
SELF_SIZES = (32, 64, 128)  # section 5a: the folded sheet, scaled to n x n
SELF_WIDE = (32, 128, 512)  # section 5a, scaling: w x 32 sheets (the same fall, more cloth)
SELF_WIDE_H = 32
SELF_START, SELF_END, SELF_CHUNK = 20, 180, 10   # timed window: 16 interleaved samples
SELF_FINAL = 240            # 4 s, as tests/test_solver_self.c; then the closest pair
SELF_TARGET_RATIO = 3.0     # the issue: self-collision costs at most 3x the step without
SELF_TARGET_N = 64          # the issue: 64² ends with no pair closer than 0.9 selfDistance
SELF_TARGET_CLOSEST = 0.9
SOFTBODY_STIFFNESS = (1.0, 0.02)   # volumeStiffness of the dropped ball
SOFTBODY_STEPS = 240        # 4 s
SIMD_TARGET_MPS = 350       # issue 8: 64², 8 iterations, M projections/s/core on AVX2
SIMD_TARGET_BULLET = 10.0   # issue 8: and >= 10x Bullet in the same run
SMALLSTEPS = (64, 8, 1, 300)  # issue 8: XPBD + tethers, N, substeps, iterations, steps
SMALLSTEPS_RUNS = 3
SMALLSTEPS_TARGET_MPS = 300
AERO_SIZES = (32, 64, 128)  # section 8: the aerodynamic stage alone
AERO_WARMUP = 120
AERO_SAMPLE_SECONDS = 0.1   # each timed sample of the slowest case


class BenchError(Exception):
    pass


class Engine:
    """One bench executable in --serve mode: a line in, one `TAG {json}` out."""

    def __init__(self, name, path, env=None):
        self.name = name
        if not os.access(path, os.X_OK):
            raise BenchError(f"{name}: {path} is missing; run `make bench`")
        self.proc = subprocess.Popen([path, "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1,
                                     env=None if env is None else {**os.environ, **env})

    def ask(self, command, tag):
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        while True:
            line = self.proc.stdout.readline()
            if not line:
                rc = self.proc.wait()
                raise BenchError(f"{self.name}: exited with code {rc} during `{command}`")
            head, _, body = line.strip().partition(" ")
            if head == "ERROR":
                raise BenchError(f"{self.name}: `{command}`: {body}")
            if head == tag:
                return json.loads(body)
            # anything else is chatter; ignore it

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


LOAD_BEFORE = "?"


def cpu_has_avx512():
    """The CPU has what clothd's "avx512" path needs (AVX-512 F, VL, BW, DQ)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return False
    return all(f in flags for f in ("avx512f", "avx512vl", "avx512bw", "avx512dq"))


def load_average():
    """The 1-minute load average, as text ("?" where /proc is missing)."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


class CpuMeter:
    """How busy the whole machine was over a stretch, and how much of that was
    not the bench itself: other processes (or, in /proc/stat's "steal",
    other virtual machines) competing for the cores."""

    def __init__(self, engines):
        self.pids = [e.proc.pid for e in engines]
        self.start = self._read()

    @staticmethod
    def _proc_ticks(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError, ValueError):
            return 0

    def _read(self):
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        # user nice system idle iowait irq softirq steal (guest is inside user)
        busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
        total = busy + v[3] + v[4]
        ours = sum(self._proc_ticks(p) for p in self.pids)
        return busy, total, ours

    def others(self):
        """Average number of cores used by everything but the bench, or None."""
        end = self._read()
        if self.start is None or end is None or end[1] <= self.start[1]:
            return None
        cores = os.cpu_count() or 1
        wall_ticks = (end[1] - self.start[1]) / cores  # per-core ticks elapsed
        busy = (end[0] - self.start[0]) / wall_ticks
        ours = (end[2] - self.start[2]) / wall_ticks
        return max(0.0, busy - ours)


def spread(values):
    """(max - min) / median, as a percentage."""
    m = statistics.median(values)
    return 100.0 * (max(values) - min(values)) / m if m > 0 else 0.0


def run_curtain(clothd, bullet, matched, n, samples, log, scalar=None, narrow=None):
    """clothd vs Bullet's idiomatic curtain (`bullet`) and, for information,
    Bullet given clothd's own constraint list (`matched`, may be None); with
    `scalar` (a bench_clothd forced to the scalar kernel), section 7's
    scalar-vs-SIMD comparison from the same interleaved samples, and with
    `narrow` (one forced to "avx2" where clothd runs "avx512") the AVX2
    kernel beside the AVX-512 one."""
    engines = [("clothd", clothd, ""), ("bullet", bullet, " patch")]
    if matched is not None:
        engines.append(("matched", matched, " matched"))
    if scalar is not None:
        engines.append(("scalar", scalar, ""))
    if narrow is not None:
        engines.append(("avx2", narrow, ""))
    log(f"  curtain {n}x{n}: warm-up ...")
    ready = {key: eng.ask(f"curtain {n} {ITERS} {WARMUP_STEPS}{arg}", "READY")
             for key, eng, arg in engines}
    slower_us = max(max(r["warmup_us"] for r in ready.values()), 1.0)
    steps = max(5, min(2000, round(SAMPLE_SECONDS / (slower_us * 1e-6))))
    log(f"  curtain {n}x{n}: {samples} samples of {steps} steps each, interleaved ...")
    us = {key: [] for key, _, _ in engines}
    cpu = {key: [] for key, _, _ in engines}
    for i in range(samples):
        k = i % len(engines)  # rotate who goes first: A B C, B C A, C A B, ...
        for key, eng, _ in engines[k:] + engines[:k]:
            sample = eng.ask(f"sample {steps}", "SAMPLE")
            us[key].append(sample["us"])
            cpu[key].append(sample["cpu_us"])
    for _, eng, _ in engines:
        eng.ask("free", "FREED")
    log(f"  curtain {n}x{n}: strain after {STRAIN_STEPS} steps ...")
    strain = {key: eng.ask(f"strain {n} {ITERS} {STRAIN_STEPS}{arg}", "STRAIN")["strain"]
              for key, eng, arg in engines}

    med = {key: statistics.median(v) for key, v in us.items()}
    med_cpu = {key: statistics.median(v) for key, v in cpu.items()}
    count = {"clothd": ready["clothd"]["constraints"], "bullet": ready["bullet"]["links"]}
    ratio = med["bullet"] / med["clothd"]
    row = {
        "case": "curtain", "n": n, "iters": ITERS, "dt": round(1 / 60, 6),
        "clothd_us": round(med["clothd"], 2), "bullet_us": round(med["bullet"], 2),
        "ratio": round(ratio, 3),
        "ratio_paired": round(statistics.median(b / c for b, c in zip(us["bullet"], us["clothd"])), 3),
        "clothd_cpu_us": round(med_cpu["clothd"], 2), "bullet_cpu_us": round(med_cpu["bullet"], 2),
        "ratio_cpu": round(med_cpu["bullet"] / med_cpu["clothd"], 3),
        "clothd_strain": round(strain["clothd"], 5), "bullet_strain": round(strain["bullet"], 5),
        "clothd_constraints": count["clothd"], "bullet_links": count["bullet"],
        "clothd_projections_per_s": round(count["clothd"] * ITERS / (med["clothd"] * 1e-6)),
        "bullet_projections_per_s": round(count["bullet"] * ITERS / (med["bullet"] * 1e-6)),
    }
    if matched is not None:
        links = ready["matched"]["links"]
        row.update({
            "bullet_matched_us": round(med["matched"], 2),
            "ratio_matched": round(med["matched"] / med["clothd"], 3),
            "bullet_matched_cpu_us": round(med_cpu["matched"], 2),
            "ratio_matched_cpu": round(med_cpu["matched"] / med_cpu["clothd"], 3),
            "bullet_matched_strain": round(strain["matched"], 5),
            "bullet_matched_links": links,
            "bullet_matched_projections_per_s": round(links * ITERS / (med["matched"] * 1e-6)),
        })
    row.update({
        "samples": samples, "steps_per_sample": steps, "warmup_steps": WARMUP_STEPS,
        "strain_steps": STRAIN_STEPS,
    })
    names = {"matched": "bullet_matched", "scalar": "clothd_scalar", "avx2": "clothd_avx2"}
    for key, _, _ in engines:
        row[f"{names.get(key, key)}_spread_pct"] = round(spread(us[key]), 1)
    for key, _, _ in engines:
        row[f"{names.get(key, key)}_us_samples"] = [round(v, 2) for v in us[key]]
    if scalar is not None:
        # Per core: thread CPU time of the single-threaded step.
        per_cpu = lambda key, links: links * ITERS / (med_cpu[key] * 1e-6)
        row.update({
            "simd": ready["clothd"].get("simd", "?"), "scalar_simd": ready["scalar"].get("simd", "?"),
            "clothd_scalar_us": round(med["scalar"], 2),
            "clothd_scalar_cpu_us": round(med_cpu["scalar"], 2),
            "clothd_scalar_strain": round(strain["scalar"], 5),
            "simd_projections_per_cpu_s": round(per_cpu("clothd", count["clothd"])),
            "scalar_projections_per_cpu_s": round(per_cpu("scalar", count["clothd"])),
            "bullet_projections_per_cpu_s": round(per_cpu("bullet", count["bullet"])),
            "simd_over_scalar_cpu": round(med_cpu["scalar"] / med_cpu["clothd"], 3),
            "simd_over_bullet_cpu": round(med_cpu["bullet"] / med_cpu["clothd"], 3),
            "scalar_over_bullet_cpu": round(med_cpu["bullet"] / med_cpu["scalar"], 3),
        })
        if narrow is not None:
            row.update({
                "avx2_simd": ready["avx2"].get("simd", "?"),
                "clothd_avx2_cpu_us": round(med_cpu["avx2"], 2),
                "clothd_avx2_strain": round(strain["avx2"], 5),
                "avx2_projections_per_cpu_s": round(per_cpu("avx2", count["clothd"])),
                "simd_over_avx2_cpu": round(med_cpu["avx2"] / med_cpu["clothd"], 3),
            })
        if n == CURTAIN_TARGET_N:
            row["simd_target_projections_per_s"] = SIMD_TARGET_MPS * 1e6
            row["simd_target_bullet_ratio"] = SIMD_TARGET_BULLET
    if n == CURTAIN_TARGET_N:
        row["target_ratio"] = CURTAIN_TARGET_RATIO
        row["verdict"] = "PASS" if ratio >= CURTAIN_TARGET_RATIO else "MISS"
    return row


def run_smallsteps(clothd, scalar, log, narrow=None):
    """Section 7b: XPBD with tethers, 8 substeps x 1 iteration, constant wind,
    on each kernel, SMALLSTEPS_RUNS alternating runs each (median)."""
    log(f"  simd: XPBD + tethers {SMALLSTEPS[1]} substeps x {SMALLSTEPS[2]} iteration, "
        f"{SMALLSTEPS[0]}² ...")
    order = [("simd", clothd), ("scalar", scalar)] + ([("avx2", narrow)] if narrow else [])
    got = {key: [] for key, _ in order}
    first = None
    for k in range(SMALLSTEPS_RUNS):
        for key, eng in (order if k % 2 == 0 else order[::-1]):
            r = eng.ask("smallsteps %d %d %d %d" % SMALLSTEPS, "SMALLSTEPS")
            got[key].append(r)
            first = first or r
    med = {key: statistics.median(r["cpu_us"] for r in v) for key, v in got.items()}
    proj = first["constraints"] * SMALLSTEPS[1] * SMALLSTEPS[2]
    simd_mps = proj / (med["simd"] * 1e-6)
    narrow_row = {} if narrow is None else {
        "avx2_simd": got["avx2"][0]["simd"], "avx2_cpu_us": round(med["avx2"], 2),
        "avx2_projections_per_cpu_s": round(proj / (med["avx2"] * 1e-6)),
        "avx2_strain": got["avx2"][0]["strain"],
    }
    return narrow_row | {
        "case": "smallsteps", "n": SMALLSTEPS[0], "substeps": SMALLSTEPS[1],
        "iters": SMALLSTEPS[2], "steps": SMALLSTEPS[3], "runs": SMALLSTEPS_RUNS,
        "constraints": first["constraints"], "simd": got["simd"][0]["simd"],
        "scalar_simd": got["scalar"][0]["simd"],
        "simd_cpu_us": round(med["simd"], 2), "scalar_cpu_us": round(med["scalar"], 2),
        "simd_projections_per_cpu_s": round(simd_mps),
        "scalar_projections_per_cpu_s": round(proj / (med["scalar"] * 1e-6)),
        "simd_strain": got["simd"][0]["strain"], "scalar_strain": got["scalar"][0]["strain"],
        "target_projections_per_s": SMALLSTEPS_TARGET_MPS * 1e6,
        "verdict": "PASS" if simd_mps >= SMALLSTEPS_TARGET_MPS * 1e6 else "MISS",
    }


def print_simd(curtains, small):
    rows = [c for c in curtains if "simd_projections_per_cpu_s" in c]
    if rows:
        print(f"7. The distance kernels (issue 8): the curtains of section 1 ({ITERS} iterations, the "
              f"seed's solver), from the same interleaved samples: bench_clothd on the "
              f"\"{rows[0]['simd']}\" path and a second one forced to \"{rows[0]['scalar_simd']}\" "
              "(CLOTHD_SIMD=scalar); M projections per second per core (thread CPU time)")
        out = []
        for c in rows:
            target = "-"
            if "simd_target_projections_per_s" in c:
                ok = (c["simd_projections_per_cpu_s"] >= c["simd_target_projections_per_s"]
                      and c["simd_over_bullet_cpu"] >= c["simd_target_bullet_ratio"])
                target = (f"≥{SIMD_TARGET_MPS} M and ≥{SIMD_TARGET_BULLET:g}× Bullet: "
                          + ("PASS" if ok else "MISS"))
            out.append([f"{c['n']}²", f"{c['clothd_scalar_cpu_us']:.0f}", f"{c['clothd_cpu_us']:.0f}",
                        mps(c["scalar_projections_per_cpu_s"]), mps(c["simd_projections_per_cpu_s"]),
                        mps(c["bullet_projections_per_cpu_s"]), f"{c['simd_over_scalar_cpu']:.2f}×",
                        f"{c['scalar_over_bullet_cpu']:.2f}×", f"{c['simd_over_bullet_cpu']:.2f}×",
                        target])
        print(table(["grid", "scalar µs", "SIMD µs", "scalar proj/s", "SIMD proj/s", "Bullet proj/s",
                     "SIMD/scalar", "scalar vs Bullet", "SIMD vs Bullet", "target (64²)"], out))
        narrow = [c for c in rows if "avx2_projections_per_cpu_s" in c]
        if narrow:
            print(f"   beside it, a third bench_clothd forced to \"{narrow[0]['avx2_simd']}\" "
                  "(CLOTHD_SIMD=avx2), from the same samples:")
            print(table(["grid", "avx2 µs", f"{rows[0]['simd']} µs", "avx2 proj/s",
                         f"{rows[0]['simd']} proj/s", f"{rows[0]['simd']}/avx2"],
                        [[f"{c['n']}²", f"{c['clothd_avx2_cpu_us']:.0f}", f"{c['clothd_cpu_us']:.0f}",
                          mps(c["avx2_projections_per_cpu_s"]), mps(c["simd_projections_per_cpu_s"]),
                          f"{c['simd_over_avx2_cpu']:.2f}×"] for c in narrow]))
        print("   µs: thread CPU time per step (whole step). proj/s: constraints x iterations / CPU time.")
        print()
    if small:
        r = small
        print(f"7b. XPBD with tethers, {r['substeps']} substeps x {r['iters']} iteration, constant wind "
              f"(no aero stage), {r['n']}² curtain, whole step (median of {r['runs']} alternating runs, "
              f"second half of {r['steps']} steps each)")
        print(table(["path", "µs/step", "M proj/s", "target"],
                    [[r["scalar_simd"], f"{r['scalar_cpu_us']:.0f}",
                      mps(r["scalar_projections_per_cpu_s"]), "-"]]
                    + ([[r["avx2_simd"], f"{r['avx2_cpu_us']:.0f}",
                         mps(r["avx2_projections_per_cpu_s"]), "-"]] if "avx2_simd" in r else [])
                    + [[r["simd"], f"{r['simd_cpu_us']:.0f}", mps(r["simd_projections_per_cpu_s"]),
                        f"≥{SMALLSTEPS_TARGET_MPS} M: {r['verdict']}"]]))
        print("   projections: distance constraints x substeps x iterations (tethers, one per "
              "particle, are extra).")
        print()


def run_aero(build, before, samples, log):
    """Section 8: the aerodynamic stage alone (bench_clothd `aero`,
    `aerosample`): a default curtain in a 3 m/s wind, frozen (mass 1e9 kg)
    after its warm-up, the stage called over and over. Cases, interleaved
    sample by sample in a rotating order: the flat plate ("aero") on the
    scalar and the AVX2 kernel (one process, the path switched between
    samples), "dragLift" (the old model, scalar kernel) and, with
    --aero-before, an older tree's bench_clothd (its "aero")."""
    plate = Engine("bench_clothd (aero)", os.path.join(build, "bench_clothd"))
    engines = [plate]
    try:
        drag_lift = Engine("bench_clothd (dragLift)", os.path.join(build, "bench_clothd"))
        engines.append(drag_lift)
        old = None
        if before:
            old = Engine("bench_clothd (before)", before)
            engines.append(old)
        meter = CpuMeter(engines)
        rows = []
        for n in AERO_SIZES:
            log(f"  aero: the stage alone on a {n}² curtain, {samples} interleaved samples ...")
            cases = [("plate_scalar", plate, "scalar"), ("plate_avx2", plate, "avx2"),
                     ("drag_lift", drag_lift, "scalar")]
            simd = plate.ask(f"aero {n} aero {AERO_WARMUP}", "AERO_READY")
            drag_lift.ask(f"aero {n} dragLift {AERO_WARMUP}", "AERO_READY")
            if old is not None:
                old.ask(f"aero {n} aero {AERO_WARMUP}", "AERO_READY")
                cases.insert(0, ("before", old, "scalar"))
            triangles = simd["triangles"]
            # Calls per sample: the slowest case (before: ~25 ns a triangle)
            # lasts about AERO_SAMPLE_SECONDS.
            calls = max(5, round(AERO_SAMPLE_SECONDS / (triangles * 25e-9)))
            got = {key: [] for key, _, _ in cases}
            for k in range(samples):
                for j in range(len(cases)):
                    key, eng, path = cases[(k + j) % len(cases)]
                    if path == "avx2" and not simd["avx2"]:
                        continue
                    r = eng.ask(f"aerosample {path} {calls}", "AERO_SAMPLE")
                    got[key].append(r["cpu_ns_per_triangle"])
            med = {key: statistics.median(v) for key, v in got.items() if v}
            row = {"case": "aero", "n": n, "triangles": triangles, "calls_per_sample": calls,
                   "samples": samples, "wind": [3.0, 0.0, 1.5]}
            for key, v in med.items():
                row[f"{key}_cpu_ns_per_triangle"] = round(v, 3)
                row[f"{key}_spread_pct"] = round(spread(got[key]), 1)
            if "before" in med:
                for key in ("plate_scalar", "plate_avx2", "drag_lift"):
                    if key in med:
                        row[f"before_over_{key}"] = round(med["before"] / med[key], 2)
            if "plate_avx2" in med:
                row["plate_scalar_over_avx2"] = round(med["plate_scalar"] / med["plate_avx2"], 2)
            rows.append(row)
        others = meter.others()
        for row in rows:
            row["other_load_cores"] = round_or_none(others)
        return rows
    finally:
        for e in engines:
            e.close()


def print_aero(rows):
    if not rows:
        return
    has_before = any("before_cpu_ns_per_triangle" in r for r in rows)
    print("8. The aerodynamic stage alone (issue 8): a default curtain in a 3 m/s wind, top row pinned, "
          "frozen after 120 steps; thread-CPU ns per triangle, median of "
          f"{rows[0]['samples']} interleaved samples")
    out = []
    for r in rows:
        line = [f"{r['n']}²", f"{r['triangles']}"]
        if has_before:
            line.append(f"{r.get('before_cpu_ns_per_triangle', float('nan')):.2f}")
        line += [f"{r['drag_lift_cpu_ns_per_triangle']:.2f}", f"{r['plate_scalar_cpu_ns_per_triangle']:.2f}",
                 f"{r.get('plate_avx2_cpu_ns_per_triangle', float('nan')):.2f}",
                 f"{r.get('plate_scalar_over_avx2', float('nan')):.2f}×"]
        if has_before:
            line.append(f"{r.get('before_over_plate_avx2', float('nan')):.2f}×")
        out.append(line)
    header = ["grid", "triangles"]
    if has_before:
        header.append("before")
    header += ["dragLift", "aero scalar", "aero AVX2", "scalar/AVX2"]
    if has_before:
        header.append("before/AVX2")
    print(table(header, out))
    print("   before: the older tree given with --aero-before (its \"aero\": drag and lift, each triangle")
    print("   written at once in grid order). dragLift: that model in the new order (scalar kernel).")
    print("   aero: the flat plate, on the scalar reference and on the AVX2 kernel (bit-identical).")
    if rows[0].get("other_load_cores") is not None:
        print(other_load_text(rows[0]["other_load_cores"]))
    print()


def run_workers(clothd, us_32, samples, log):
    # Each 1-worker sample of the whole set lasts about SAMPLE_SECONDS.
    per_set_step = WORKER_INSTANCES * us_32 * 1e-6
    steps = max(3, min(200, round(SAMPLE_SECONDS / per_set_step)))
    log(f"  workers: {WORKER_INSTANCES} x {WORKER_N}^2, {samples} samples of {steps} steps "
        "per pool, interleaved ...")
    w = clothd.ask(f"workers {WORKER_INSTANCES} {WORKER_N} {ITERS} {WORKER_WARMUP} {steps} "
                   f"{samples}", "WORKERS")
    speedup = w["speedup"]
    return {
        "case": "workers", "instances": w["instances"], "n": w["n"], "iters": w["iters"],
        "w1_steps_per_s": w["w1_instance_steps_per_s"], "w2_steps_per_s": w["w2_instance_steps_per_s"],
        "w1_set_steps_per_s": w["w1_set_steps_per_s"], "w2_set_steps_per_s": w["w2_set_steps_per_s"],
        "speedup": round(speedup, 3), "speedup_paired": round(w["speedup_paired"], 3),
        "target_speedup": WORKER_TARGET, "verdict": "PASS" if speedup >= WORKER_TARGET else "MISS",
        "w1_cores_used": round(w["w1_cores_used"], 2), "w2_cores_used": round(w["w2_cores_used"], 2),
        "identical": w["identical"], "hash_w1": w["hash_w1"], "hash_w2": w["hash_w2"],
        "steps_each": w["steps_each"], "unstable": w["unstable"],
        "samples": samples, "steps_per_sample": steps, "cores": os.cpu_count(),
    }


def run_split(clothd, samples, log):
    """One SPLIT_N² curtain through a 1- and a 2-worker pool: its step's
    stages shared by the workers (solver/team.c), beside the same pools on
    64 independent 32² curtains (section 2) for what the machine allows."""
    log(f"  split: 1 x {SPLIT_N}^2 across workers, {samples} samples of {SPLIT_STEPS} steps ...")
    w = clothd.ask(f"workers 1 {SPLIT_N} {ITERS} 20 {SPLIT_STEPS} {samples}", "WORKERS")
    return {
        "case": "split", "n": w["n"], "iters": w["iters"],
        "w1_steps_per_s": w["w1_instance_steps_per_s"], "w2_steps_per_s": w["w2_instance_steps_per_s"],
        "speedup": round(w["speedup"], 3), "target_speedup": SPLIT_TARGET,
        "verdict": "PASS" if w["speedup"] >= SPLIT_TARGET else "MISS",
        "w2_cores_used": round(w["w2_cores_used"], 2), "identical": w["identical"],
        "hash_w1": w["hash_w1"], "hash_w2": w["hash_w2"], "samples": samples,
    }


def print_split(split, workers):
    r = split
    print(f"2b. One {r['n']}² curtain, {r['iters']} iterations, its step shared by the pool's "
          f"workers (median of {r['samples']} interleaved samples)")
    rows = [["1 worker", f"{r['w1_steps_per_s']:.0f}", "1.00×", ""],
            ["2 workers", f"{r['w2_steps_per_s']:.0f}", f"{r['speedup']:.2f}×",
             f"≥{SPLIT_TARGET:g}×: {r['verdict']}"]]
    print(table(["pool", "steps/s", "speed-up", "target"], rows))
    if workers:
        print(f"   the machine's own scaling in this run (section 2, independent instances): "
              f"{workers['speedup']:.2f}×; the split reaches "
              f"{100 * r['speedup'] / workers['speedup']:.0f}% of it.")
    same = "identical" if r["identical"] else "DIFFERENT"
    print(f"   positions: 1 worker {r['hash_w1']}, 2 workers {r['hash_w2']} -> {same}")
    print()


def run_memory(clothd):
    m = clothd.ask(f"memory {MEMORY_W} {MEMORY_H}", "MEMORY")
    # The seed's ~57 KB is ~64 bytes a particle and ~16 a constraint for its
    # "~2,000" constraints; at those rates for this cloth's own count.
    estimate = SEED_BYTES_PER_PARTICLE * m["particles"] + SEED_BYTES_PER_CONSTRAINT * m["constraints"]
    return {
        "case": "memory", "width": m["width"], "height": m["height"],
        "particles": m["particles"], "constraints": m["constraints"], "bytes": m["bytes"],
        "seed_estimate_bytes": estimate,
        "ratio": round(m["bytes"] / estimate, 3),
        "verdict": "PASS" if m["bytes"] <= estimate else "MISS",
    }


def run_depth(clothd, samples, log):
    """Section 4: the solver's depth (issue 3). Returns a dict of row lists."""
    out = {}
    log(f"  depth: equal-cost substeps x iterations on a {DEPTH_N}² curtain ...")
    rows = []
    cases = ([(s, i, 0) for s, i in EQUAL_COST] + [(OLD_SUBSTEPS, OLD_ITERS, 1),
                                                    (DEFAULT_SUBSTEPS, DEFAULT_ITERS, 1)]
             + [(s, i, 1) for s, i in EQUAL_COST])
    for sub, it, teth in cases:
        on = clothd.ask(f"depth {DEPTH_N} {sub} {it} {teth} 1 {DEPTH_STEPS}", "DEPTH")
        off = clothd.ask(f"depth {DEPTH_N} {sub} {it} {teth} 0 {DEPTH_STEPS}", "DEPTH")
        swing = clothd.ask(f"release {DEPTH_N} {sub} {it} {teth} {SWING_STEPS}", "RELEASE")
        rows.append({
            "case": "substeps", "n": DEPTH_N, "substeps": sub, "iters": it,
            "tethers": bool(teth), "default": (sub, it, teth) == (DEFAULT_SUBSTEPS, DEFAULT_ITERS, 1),
            "old_default": (sub, it, teth) == (OLD_SUBSTEPS, OLD_ITERS, 1),
            "steps": DEPTH_STEPS, "strain": round(on["strain"], 6),
            "strain_no_air": round(off["strain"], 6),
            "us": round(on["us"], 1), "cpu_us": round(on["cpu_us"], 1),
            "us_no_air": round(off["us"], 1), "cpu_us_no_air": round(off["cpu_us"], 1),
            "released_peak_strain": round(swing["peak_strain"], 6), "released_steps": SWING_STEPS,
        })
    out["substeps"] = rows

    log("  depth: XPBD compliance vs the seed's stiffness (16² sheet) ...")
    rows = []
    for mode, name in ((0, "xpbd"), (1, "seed")):
        got = {}
        for it, hz in XPBD_CASES:
            got[(it, hz)] = clothd.ask(f"stretch {mode} {it} {hz}", "STRETCH")["stretch_m"]
        a, b = got[XPBD_CASES[0]], got[XPBD_CASES[1]]
        c, d = got[XPBD_CASES[2]], got[XPBD_CASES[3]]
        rows.append({
            "case": "xpbd", "solver": name,
            "stretch_it4_mm": round(a * 1e3, 4), "stretch_it32_mm": round(b * 1e3, 4),
            "iters_change_pct": round(100 * abs(a - b) / abs(b), 2),
            "stretch_hz30_mm": round(c * 1e3, 4), "stretch_hz120_mm": round(d * 1e3, 4),
            "dt_change_pct": round(100 * abs(c - d) / abs(d), 2),
        })
    for r in rows:
        if r["solver"] == "xpbd":
            worst = max(r["iters_change_pct"], r["dt_change_pct"])
            r["target_pct"] = XPBD_TARGET_PCT
            r["verdict"] = "PASS" if worst < XPBD_TARGET_PCT else "MISS"
    out["xpbd"] = rows

    log(f"  depth: {DEPTH_N}² curtain, defaults vs no tethers vs the seed's solver ...")
    rows = []
    for mode, name in ((0, "defaults"), (1, "no tethers"), (2, "seed")):
        hang = clothd.ask(f"hang {DEPTH_N} {mode} 0 {DEPTH_STEPS}", "HANG")
        rel = clothd.ask(f"hang {DEPTH_N} {mode} 1 {RELEASE_STEPS}", "HANG")
        row = {
            "case": "defaults", "n": DEPTH_N, "solver": name,
            "hanging_strain": round(hang["strain"], 6), "hanging_steps": DEPTH_STEPS,
            "released_strain_5s": round(rel["strain_5s"], 6),
            "released_strain_20s": round(rel["strain"], 6), "released_steps": RELEASE_STEPS,
            "cpu_us": round(hang["cpu_us"], 1),
        }
        if mode == 0:
            row["target"] = STRAIN_TARGET
            row["verdict"] = "PASS" if hang["strain"] < STRAIN_TARGET else "MISS"
        rows.append(row)
    out["defaults"] = rows

    log(f"  depth: a sleeping {DEPTH_N}² curtain vs an awake one ...")
    z = clothd.ask(f"sleep {DEPTH_N} {samples}", "SLEEP")
    out["sleep"] = [{
        "case": "sleep", "n": DEPTH_N, "asleep_after_steps": z["asleep_after_steps"],
        "awake_cpu_us": round(z["awake_cpu_us"], 2), "asleep_cpu_us": round(z["asleep_cpu_us"], 5),
        "ratio": z["ratio"], "target_ratio": SLEEP_TARGET,
        "verdict": "PASS" if z["ratio"] < SLEEP_TARGET else "MISS", "samples": samples,
    }]
    return out


def self_row(clothd, log, w, h):
    """One folded sheet, self-collision on and off: cost, work and separation."""
    log(f"  self-collision: {w}×{h} folded sheet, on vs off, steps {SELF_START}-{SELF_END} "
        f"timed, then to {SELF_FINAL} ...")
    r = clothd.ask(f"self {w} {h} {SELF_START} {SELF_END} {SELF_CHUNK} {SELF_FINAL}", "SELF")
    d = r["self_distance"]
    ratios = [a / b for a, b in zip(r["on_cpu_us_samples"], r["off_cpu_us_samples"])]
    self_pp = r["on_us_per_particle"] - r["off_us_per_particle"]
    row = {
        "case": "self", "width": w, "height": h, "particles": int(r["particles"]),
        "spacing": r["spacing"], "self_distance": d, "substeps": r["substeps"],
        "iters": r["iters"], "window_steps": [r["start"], r["end"]], "samples": r["samples"],
        "steps_per_sample": r["chunk"],
        "on_cpu_us": round(r["on_cpu_us"], 1), "off_cpu_us": round(r["off_cpu_us"], 1),
        "ratio": round(r["ratio"], 3), "ratio_paired": round(r["ratio_paired"], 3),
        "ratio_worst_sample": round(max(ratios), 3),
        "on_us_per_particle": round(r["on_us_per_particle"], 4),
        "off_us_per_particle": round(r["off_us_per_particle"], 4),
        "self_us_per_particle": round(self_pp, 4),
        "searches_per_step": round(r["searches_per_step"], 3),
        "pairs_per_particle_per_search": round(r["pairs_per_particle_per_search"], 4),
        "self_ns_per_particle_per_search": round(1000 * self_pp / r["searches_per_step"], 1)
        if r["searches_per_step"] > 0 else None,
        "overflows": r["overflows"],
        "final_steps": r["final_steps"],
        "closest_on_m": r["closest_on"], "closest_off_m": r["closest_off"],
        "closest_on_over_d": round(r["closest_on"] / d, 4),
        "closest_off_over_d": round(r["closest_off"] / d, 4),
        "target_ratio": SELF_TARGET_RATIO,
        "verdict": "PASS" if r["ratio"] <= SELF_TARGET_RATIO else "MISS",
    }
    if w == h == SELF_TARGET_N:
        row["target_closest_over_d"] = SELF_TARGET_CLOSEST
        row["closest_verdict"] = "PASS" if r["closest_on"] >= SELF_TARGET_CLOSEST * d else "MISS"
    row["on_cpu_us_samples"] = r["on_cpu_us_samples"]
    row["off_cpu_us_samples"] = r["off_cpu_us_samples"]
    return row


def relative_to_first(rows):
    """Per-particle costs relative to the series' smallest sheet."""
    base = rows[0]
    for r in rows:
        for key in ("on_us_per_particle", "off_us_per_particle", "self_us_per_particle",
                    "self_ns_per_particle_per_search"):
            if base.get(key) and r.get(key) is not None:
                r[key + "_vs_smallest"] = round(r[key] / base[key], 3)


def run_self(clothd, log):
    """Section 5: self-collision cost, scaling and separation; soft bodies."""
    square = [self_row(clothd, log, n, n) for n in SELF_SIZES]
    wide = [next((r for r in square if r["width"] == w and r["height"] == SELF_WIDE_H), None)
            or self_row(clothd, log, w, SELF_WIDE_H) for w in SELF_WIDE]
    wide = [dict(r, series="wide") for r in wide]
    for r in square:
        r["series"] = "square"
    relative_to_first(square)
    relative_to_first(wide)
    soft = []
    for vs in SOFTBODY_STIFFNESS:
        log(f"  soft body: ball dropped on a plane, volumeStiffness {vs:g} ...")
        b = clothd.ask(f"softbody {round(vs * 1000)} {SOFTBODY_STEPS}", "SOFTBODY")
        soft.append({
            "case": "softbody", "shape": "ball", "radius": b["radius"],
            "resolution": b["resolution"], "volume_stiffness": b["volume_stiffness"],
            "particles": b["particles"], "tets": b["tets"], "constraints": b["constraints"],
            "substeps": b["substeps"], "iters": b["iters"], "steps": b["steps"],
            "seconds": round(b["steps"] / 60, 2), "awake_steps": b["awake_steps"],
            "asleep_after_steps": b["asleep_after_steps"] or None,
            "cpu_us": round(b["cpu_us"], 1), "volume_ratio": round(b["volume_ratio"], 4),
        })
    return {"self": square, "self_wide": wide, "softbody": soft}


def scaling_rows(wide, square):
    """The wide series, then the square sheets it does not already hold."""
    return wide + [r for r in square if r["width"] != r["height"] or r["width"] != wide[0]["width"]]


def self_table(rows, name):
    """Prints cost and separation, one row per sheet; name(row) labels it."""
    table_rows = []
    for r in rows:
        ctarget = (f"≥{SELF_TARGET_CLOSEST:g}: {r['closest_verdict']}"
                   if "closest_verdict" in r else "-")
        table_rows.append([
            name(r), f"{r['particles']}", f"{r['off_cpu_us']:.0f}",
            f"{r['on_cpu_us']:.0f}", f"{r['ratio']:.2f}×", f"{r['ratio_worst_sample']:.2f}×",
            f"≤{SELF_TARGET_RATIO:g}×: {r['verdict']}", f"{r['off_us_per_particle']:.3f}",
            f"{r['on_us_per_particle']:.3f}", f"{r['self_us_per_particle']:.3f}",
            f"{r['closest_on_over_d']:.3f}", f"{r['closest_off_over_d']:.3f}", ctarget])
    print(table(["sheet", "particles", "µs off", "µs on", "on/off", "worst sample", "target",
                 "µs/particle off", "on", "self only", "closest/d on", "off", "target"],
                table_rows))


def print_self(sec):
    rows = sec.get("self", [])
    if rows:
        r0 = rows[0]
        print(f"5a. Self-collision: the folded sheet of tests/test_solver_self.c scaled (spacing "
              f"{r0['spacing']:g} m, slanted, dropped on a frictionless plane,")
        print(f"    {r0['substeps']} substeps × {r0['iters']} iterations, selfDistance "
              f"{r0['self_distance']:g} m = 0.8 × spacing) vs the same sheet with selfDistance 0. "
              f"Thread-CPU µs/step: median of")
        print(f"    {r0['samples']} interleaved samples of {r0['steps_per_sample']} steps over steps "
              f"{r0['window_steps'][0]}-{r0['window_steps'][1]} (the collapse and the folds); "
              f"closest: after {r0['final_steps']} steps (4 s)")
        self_table(rows, lambda r: f"{r['width']}²")
        wide = sec.get("self_wide", [])
        if wide:
            print(f"   Scaling: sheets {SELF_WIDE_H} rows tall and wider (the same fall and the same "
                  f"folds per column, so the same work per particle")
            print("   if the cost is linear in the particle count):")
            self_table(wide, lambda r: f"{r['width']}×{r['height']}")
            print(table(["sheet", "particles", "searches/step", "pairs/particle/search",
                         "self ns/particle/search", "vs smallest", "on µs/particle vs smallest",
                         "self µs/particle vs smallest", "overflows"],
                        [[f"{r['width']}×{r['height']}", f"{r['particles']}",
                          f"{r['searches_per_step']:.2f}",
                          f"{r['pairs_per_particle_per_search']:.2f}",
                          f"{r['self_ns_per_particle_per_search']:.0f}",
                          f"{r.get('self_ns_per_particle_per_search_vs_smallest', 1):.2f}×",
                          f"{r.get('on_us_per_particle_vs_smallest', 1):.2f}×",
                          f"{r.get('self_us_per_particle_vs_smallest', 1):.2f}×",
                          f"{r['overflows']}"] for r in scaling_rows(wide, rows)]))
        print("   on/off: median on / median off; worst sample: the largest on/off of one pair of")
        print("   interleaved samples. self only: (on - off) per particle. closest/d: the smallest")
        print("   distance between two particles no constraint joins (brute force over all pairs;")
        print("   grid neighbours within one cell and skip-one partners exempt) / selfDistance.")
        print("   searches/step: candidate-pair searches per step (once per step for a slow sheet,")
        print("   up to every other substep while its fastest particle moves fast); pairs: kept per")
        print("   particle per search; self ns/particle/search: self only / searches per step;")
        print("   overflows: searches that stopped early (48 pairs per particle, or the bound on")
        print("   the hash entries one search looks at).")
        print()
    soft = sec.get("softbody", [])
    if soft:
        b0 = soft[0]
        print(f"5b. Soft body: a ball (radius {b0['radius']:g} m, resolution {b0['resolution']}) "
              f"dropped from 1 m onto a plane (friction 0.5), soft-body defaults")
        print(f"    ({b0['substeps']} substeps × {b0['iters']} iterations, mass 5 kg, sleeping "
              f"below 0.05 m/s), no air; {b0['seconds']:g} s")
        print(table(["volumeStiffness", "particles", "tets", "constraints", "CPU µs/step",
                     "awake steps", "volume / rest after 4 s"],
                    [[f"{b['volume_stiffness']:g}", f"{b['particles']}", f"{b['tets']}",
                      f"{b['constraints']}", f"{b['cpu_us']:.0f}",
                      f"{b['awake_steps']}/{b['steps']}", f"{b['volume_ratio']:.3f}"]
                     for b in soft]))
        print("   CPU µs/step: median thread-CPU time of the steps in which the ball was awake.")
        print()


def print_depth(depth):
    sub = depth.get("substeps", [])
    if sub:
        print(f"4a. Equal cost: substeps x iterations = 8 (and the defaults: automatic substeps × 1 "
              f"now, 1×4 before issue 10), {DEPTH_N}² curtain, clothd's defaults otherwise")
        print(f"    (stiffness 0.9, velocity retention 0.547/s, aero wind, still air), top row pinned. Hanging: "
              f"created hanging, strain after {DEPTH_STEPS} steps,")
        print(f"    thread-CPU µs/step over the last {DEPTH_STEPS // 2}. Swinging: created horizontal, "
              f"peak strain over {SWING_STEPS} steps (10 s)")
        rows = []
        for r in sub:
            label = (f"{r['substeps'] or 'auto'}×{r['iters']}" + (" (default)" if r["default"] else "")
                     + (" (old default)" if r.get("old_default") else ""))
            rows.append([label, "on" if r["tethers"] else "off", f"{100 * r['strain']:.3f}%",
                         f"{100 * r['released_peak_strain']:.2f}%", f"{r['cpu_us']:.0f}",
                         f"{r['cpu_us_no_air']:.0f}"])
        print(table(["substeps×iterations", "tethers", "hanging strain", "swinging peak",
                     "CPU µs/step", "CPU µs/step, air 0"], rows))
        new = next((r for r in sub if r["default"]), None)
        old = next((r for r in sub if r.get("old_default")), None)
        if new and old:
            print(f"   The default step (automatic: 6 substeps × 1 at 60 Hz) costs "
                  f"{new['cpu_us'] / old['cpu_us']:.2f}× the old default (1×4) in this run "
                  f"(issue 10 allows 2×).")
        print("   The difference between the two µs columns is the aerodynamics stage, which runs once")
        print("   per substep. Strain is the same with air 0: a curtain swinging in its own plane feels")
        print("   no drag.")
        print()
    xp = depth.get("xpbd", [])
    if xp:
        print("4b. XPBD compliance vs the seed's stiffness: settled stretch of the 16² sheet "
              "(tests/test_solver_xpbd.c: spacing 0.05 m, 1 kg, top row pinned, no tethers,")
        print("    8 substeps, 4 s); iterations at 1/60 s, time step at 8 iterations")
        rows = []
        for r in xp:
            name = ("XPBD, 0.005 m/N" if r["solver"] == "xpbd" else "seed, stiffness 0.5")
            verdict = f"<{XPBD_TARGET_PCT:g}%: {r['verdict']}" if "verdict" in r else "-"
            rows.append([name, f"{r['stretch_it4_mm']:.3f}", f"{r['stretch_it32_mm']:.3f}",
                         f"{r['iters_change_pct']:.2f}%", f"{r['stretch_hz30_mm']:.3f}",
                         f"{r['stretch_hz120_mm']:.3f}", f"{r['dt_change_pct']:.2f}%", verdict])
        print(table(["solver", "4 it mm", "32 it mm", "change", "1/30 s mm", "1/120 s mm",
                     "change", "target"], rows))
        print()
    de = depth.get("defaults", [])
    if de:
        print(f"4c. {DEPTH_N}² curtain, top row pinned: max structural strain (clothd's default stepping; "
              f"the seed's solver at its 1 substep × 4)")
        rows = []
        for r in de:
            name = {"defaults": "defaults (tethers)", "no tethers": "defaults, tethers off",
                    "seed": "the seed's solver"}[r["solver"]]
            verdict = f"<1%: {r['verdict']}" if "verdict" in r else "-"
            rows.append([name, f"{100 * r['hanging_strain']:.3f}%", verdict,
                         f"{100 * r['released_strain_5s']:.2f}%",
                         f"{100 * r['released_strain_20s']:.3f}%", f"{r['cpu_us']:.0f}"])
        print(table(["solver", f"hanging, {DEPTH_STEPS} steps", "target",
                     "released flat: 5 s", "20 s", "CPU µs/step"], rows))
        print("   hanging: created hanging (the issue's case); released flat: created horizontal and")
        print("   swinging down (strain counts compression too, so a folding sheet shows some).")
        print("   the seed's solver: no tethers, constant wind (no aero stage), per-step damping.")
        print()
    sl = depth.get("sleep", [])
    if sl:
        r = sl[0]
        print(f"4d. Sleeping: a default {DEPTH_N}² curtain asleep (after {r['asleep_after_steps']} "
              f"steps) vs an awake twin (thread CPU time, median of {r['samples']} samples)")
        print(table(["awake µs/step", "asleep µs/step", "ratio", "target"],
                    [[f"{r['awake_cpu_us']:.1f}", f"{r['asleep_cpu_us']:.4f}",
                      f"{100 * r['ratio']:.4f}%", f"<1%: {r['verdict']}"]]))
        print()


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths)))
    out = [line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def mps(x):
    return f"{x / 1e6:.1f} M"


def round_or_none(x, digits=2):
    return None if x is None else round(x, digits)


def other_load_text(cores):
    if cores is None:
        return ""
    return f"   other processes used {cores:.2f} of {os.cpu_count()} cores on average meanwhile."


def print_report(curtains, workers, memory, others, elapsed, depth=None, selfsec=None, small=None,
                 split=None, aero=None):
    print()
    print(f"clothd bench — {time.strftime('%Y-%m-%d %H:%M')} — {os.cpu_count()} cores, "
          f"{platform.machine()}, {elapsed:.0f} s, load average before the run {LOAD_BEFORE}")
    print()
    if curtains:
        print(f"1. Curtain, {ITERS} iterations, dt 1/60, top row pinned "
              f"(µs/step: median of {curtains[0]['samples'] if curtains else 0} interleaved samples "
              f"after {WARMUP_STEPS} warm-up steps; strain after {STRAIN_STEPS} steps)")
        has_matched = any("bullet_matched_us" in c for c in curtains)
        rows = []
        for c in curtains:
            target = (f"≥{CURTAIN_TARGET_RATIO:g}×: {c['verdict']}" if "verdict" in c else "-")
            row = [f"{c['n']}²", f"{c['clothd_us']:.0f} ±{c['clothd_spread_pct']:.0f}%",
                   f"{c['bullet_us']:.0f} ±{c['bullet_spread_pct']:.0f}%", f"{c['ratio']:.2f}×",
                   f"{c['ratio_cpu']:.2f}×", target]
            if has_matched:
                row += [f"{c['bullet_matched_us']:.0f} ±{c['bullet_matched_spread_pct']:.0f}%",
                        f"{c['ratio_matched']:.2f}×", f"{c['ratio_matched_cpu']:.2f}×"]
            rows.append(row)
        header = ["grid", "clothd µs", "Bullet µs", "Bullet/clothd", "(CPU time)", "target"]
        if has_matched:
            header += ["Bullet µs, clothd's list", "ratio", "(CPU time)"]
        print(table(header, rows))
        print()
        rows = []
        for c in curtains:
            row = [f"{c['n']}²", f"{c['clothd_constraints']}", f"{c['bullet_links']}",
                   mps(c["clothd_projections_per_s"]), mps(c["bullet_projections_per_s"])]
            if has_matched:
                row.append(mps(c["bullet_matched_projections_per_s"]))
            row += [f"{c['clothd_strain']:.4f}", f"{c['bullet_strain']:.4f}"]
            if has_matched:
                row.append(f"{c['bullet_matched_strain']:.4f}")
            rows.append(row)
        header = ["grid", "clothd constraints", "Bullet links", "clothd proj/s", "Bullet proj/s"]
        if has_matched:
            header.append("Bullet proj/s, clothd's list")
        header += ["strain clothd", "strain Bullet"]
        if has_matched:
            header.append("strain Bullet, clothd's list")
        print(table(header, rows))
        print("   ±: (max-min)/median of the samples. (CPU time): the same ratio from thread CPU time,")
        print("   which ignores time the core spent on other processes. proj/s: constraints (links) x")
        print("   iterations / step time.")
        print("   strain: max |d-rest|/rest over the structural (grid-neighbour) constraints.")
        if others.get("curtains") is not None:
            print(other_load_text(others["curtains"]))
        if has_matched:
            print("   \"clothd's list\": Bullet given clothd's exact constraint list (information only).")
        print()
    if workers:
        w = workers
        print(f"2. Worker scaling: {w['instances']} instances of {w['n']}², {w['iters']} iterations, "
              f"through the worker pool (median of {w['samples']} interleaved samples, "
              f"{os.cpu_count()} cores)")
        rows = [["1 worker", f"{w['w1_steps_per_s']:.0f}", f"{w['w1_set_steps_per_s']:.1f}",
                 f"{w['w1_cores_used']:.2f}", "1.00×", ""],
                ["2 workers", f"{w['w2_steps_per_s']:.0f}", f"{w['w2_set_steps_per_s']:.1f}",
                 f"{w['w2_cores_used']:.2f}", f"{w['speedup']:.2f}×",
                 f"≥{WORKER_TARGET:g}×: {w['verdict']}"]]
        print(table(["pool", "instance steps/s", "set steps/s", "cores used", "speed-up", "target"],
                    rows))
        print("   cores used: CPU seconds of the bench process per wall second during the samples.")
        if others.get("workers") is not None:
            print(other_load_text(others["workers"]))
        if len(w["attempts"]) > 1:
            print(f"   attempt {w['attempt']} of {len(w['attempts'])} (2-worker cores used per attempt: "
                  + ", ".join(f"{a['w2_cores_used']:.2f}" for a in w["attempts"]) + ")")
        if w["w2_cores_used"] < 1.8:
            print(f"   NOTE: the 2-worker pool got only {w['w2_cores_used']:.2f} cores; if other processes "
                  "held a core, this speed-up understates the pool.")
        same = "identical" if w["identical"] else "DIFFERENT"
        print(f"   positions after {w['steps_each']} steps: 1 worker {w['hash_w1']}, "
              f"2 workers {w['hash_w2']} (FNV-1a) -> {same}"
              + ("" if not w["unstable"] else "; WARNING: the instability guard fired"))
        print()
    if split:
        print_split(split, workers)
    if memory:
        m = memory
        print(f"3. Memory of a {m['width']}x{m['height']} cloth ({m['particles']} particles, "
              f"{m['constraints']} constraints)")
        rows = [["cd_instance_memory", f"{m['bytes']}", f"{m['seed_estimate_bytes']}",
                 f"{m['ratio']:.2f}", f"≤ seed: {m['verdict']}"]]
        print(table(["measure", "bytes", "seed estimate", "ratio", "target"], rows))
        print()
    if depth:
        print_depth(depth)
    if selfsec:
        print_self(selfsec)
    print_simd(curtains, small)
    print_aero(aero)
    depth_rows = [r for key in ("substeps", "xpbd", "defaults", "sleep")
                  for r in (depth or {}).get(key, [])]
    self_rows = [r for key in ("self", "self_wide", "softbody") for r in (selfsec or {}).get(key, [])]
    for row in (curtains + ([workers] if workers else []) + ([split] if split else [])
                + ([memory] if memory else [])
                + depth_rows + self_rows + ([small] if small else []) + (aero or [])):
        print("BENCH " + json.dumps(row, separators=(",", ":")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="directory holding the bench executables")
    ap.add_argument("--samples", type=int, default=7, help="timed samples per case (default 7)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="curtain sizes, comma separated (default 32,64,128)")
    ap.add_argument("--no-matched", action="store_true",
                    help="skip Bullet with clothd's constraint list (the information-only column)")
    ap.add_argument("--no-depth", action="store_true",
                    help="skip section 4, the solver's depth (substeps, XPBD, tethers, sleeping)")
    ap.add_argument("--no-self", action="store_true",
                    help="skip section 5, self-collision and soft bodies")
    ap.add_argument("--no-simd", action="store_true",
                    help="skip section 7, the scalar kernel beside the SIMD one")
    ap.add_argument("--no-aero", action="store_true",
                    help="skip section 8, the aerodynamic stage alone")
    ap.add_argument("--aero-before", metavar="PATH",
                    help="a bench_clothd built from an older tree, timed in section 8 beside this one")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args()
    if not 1 <= args.samples <= 64:
        ap.error("--samples must be in [1, 64]")
    sizes = [int(s) for s in args.sizes.split(",") if s]

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    global LOAD_BEFORE
    LOAD_BEFORE = load_average()
    start = time.monotonic()
    engines = []
    curtains, workers, memory, depth, selfsec, small, split = [], None, None, {}, {}, None, None
    aero = []
    others = {}  # section -> cores used by other processes meanwhile
    status = 0
    try:
        clothd = Engine("bench_clothd", os.path.join(args.build, "bench_clothd"))
        engines.append(clothd)
        bullet = Engine("bench_bullet", os.path.join(args.build, "bench_bullet"))
        engines.append(bullet)
        matched = None
        if not args.no_matched:
            matched = Engine("bench_bullet (clothd's list)", os.path.join(args.build, "bench_bullet"))
            engines.append(matched)
        scalar = narrow = None
        if not args.no_simd:
            scalar = Engine("bench_clothd (scalar)", os.path.join(args.build, "bench_clothd"),
                            env={"CLOTHD_SIMD": "scalar"})
            engines.append(scalar)
            if cpu_has_avx512():  # clothd runs "avx512": the AVX2 kernel beside it
                narrow = Engine("bench_clothd (avx2)", os.path.join(args.build, "bench_clothd"),
                                env={"CLOTHD_SIMD": "avx2"})
                engines.append(narrow)
        log("clothd bench: curtains (clothd vs Bullet) ...")
        meter = CpuMeter(engines)
        for n in sizes:
            curtains.append(run_curtain(clothd, bullet, matched, n, args.samples, log, scalar,
                                        narrow))
        others["curtains"] = meter.others()
        bullet.close()
        if matched is not None:
            matched.close()
        us_32 = next((c["clothd_us"] for c in curtains if c["n"] == WORKER_N), None)
        if us_32 is None:  # not measured above: time a short run
            clothd.ask(f"curtain {WORKER_N} {ITERS} {WARMUP_STEPS}", "READY")
            us_32 = clothd.ask("sample 50", "SAMPLE")["us"]
            clothd.ask("free", "FREED")
        # Another process holding a core leaves the 2-worker pool one core and
        # says nothing about the pool: measure again (up to WORKER_ATTEMPTS in
        # all) and keep the attempt in which the pool got the most CPU.
        attempts = []
        for attempt in range(WORKER_ATTEMPTS):
            meter = CpuMeter([clothd])
            w = run_workers(clothd, us_32, args.samples, log)
            w["other_load_cores"] = round_or_none(meter.others())
            attempts.append(w)
            if not w["identical"] or w["w2_cores_used"] >= WORKER_MIN_CORES:
                break
            log(f"  workers: the 2-worker pool got {w['w2_cores_used']:.2f} cores; measuring again")
        workers = max(attempts, key=lambda a: (not a["identical"], a["w2_cores_used"]))
        workers["identical"] = all(a["identical"] for a in attempts)
        workers["attempt"] = attempts.index(workers) + 1
        workers["attempts"] = [{k: a[k] for k in ("speedup", "w2_cores_used", "other_load_cores")}
                               for a in attempts]
        others["workers"] = workers["other_load_cores"]
        split = run_split(clothd, args.samples, log)
        if scalar is not None:
            small = run_smallsteps(clothd, scalar, log, narrow)
            scalar.close()
            if narrow is not None:
                narrow.close()
        memory = run_memory(clothd)
        if not args.no_aero:
            log("clothd bench: the aerodynamic stage ...")
            aero = run_aero(args.build, args.aero_before, args.samples, log)
        if not args.no_depth:
            log("clothd bench: the solver's depth ...")
            depth = run_depth(clothd, args.samples, log)
        if not args.no_self:
            log("clothd bench: self-collision and soft bodies ...")
            section_start = time.monotonic()
            selfsec = run_self(clothd, log)
            log(f"  section 5 took {time.monotonic() - section_start:.0f} s")
        if not workers["identical"]:
            status = 1
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        status = 1
    finally:
        for e in engines:
            e.close()
    for c in curtains:
        c["other_load_cores"] = round_or_none(others.get("curtains"))
    print_report(curtains, workers, memory, others, time.monotonic() - start, depth, selfsec, small,
                 split, aero)
    if workers and not workers["identical"]:
        print("bench: FAIL: positions differ between 1 and 2 workers", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
