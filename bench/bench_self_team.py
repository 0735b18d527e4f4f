#!/usr/bin/env python3
"""One large cloth with self-collision, through the real server, on 1 and
on 2 workers (bench/README.md, section 5c).

The folded sheet of section 5a at 128 x 128 (16,384 particles: a large
instance, whose step the pool's workers share): spacing 0.02 m, slanted,
dropped onto a frictionless plane, selfDistance 0.016 m, 8 substeps x 4
iterations. A client sends `step` and waits for the reply, back to back;
WARMUP steps untimed, then STEPS timed, in ROUNDS rounds that alternate
1 and 2 workers (a fresh server and sheet each round, so both see the
same fall). Reports the median ms per step of each and the speedup: the
self-collision search runs in blocks on every worker of the team, the
separation of its pairs on one.

Prints a table and one machine-readable line:

    BENCH {"case":"self_team",...}

Benchmarks report figures; nothing here fails on a slow machine.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients", "python"))

from clothd import Client  # noqa: E402  (the Python client, beside the server)
from run import load_average  # noqa: E402  (bench/run.py)

BANNER = re.compile(r"listening on ([0-9.]+):(\d+) \((\d+) workers\)")
SIDE = 128
WARMUP, STEPS, ROUNDS = 20, 100, 3


def one_round(clothd: str, workers: int) -> float:
    """ms per step of the timed steps, on a fresh server and sheet."""
    proc = subprocess.Popen([clothd, "--port", "0", "--workers", str(workers)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        m = BANNER.search(proc.stdout.readline())
        if not m:
            raise SystemExit("clothd printed no banner")
        client = Client(m.group(1), int(m.group(2)))
        cid = client.create_cloth(width=SIDE, height=SIDE, spacing=0.02,
                                  origin=[0, 0.05 + (SIDE - 1) * 0.02, 0], down=[0, -1, 0.15],
                                  selfDistance=0.016, substeps=8, iterations=4,
                                  sleepThreshold=0)
        client.add_collider(cid, type="plane")
        for _ in range(WARMUP):
            client.step(instances=[cid])
        start = time.perf_counter()
        for _ in range(STEPS):
            client.step(instances=[cid])
        elapsed = time.perf_counter() - start
        client.close()
        return elapsed * 1e3 / STEPS
    finally:
        proc.terminate()
        proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="the build directory (its clothd)")
    args = ap.parse_args()
    clothd = os.path.join(args.build, "clothd")
    load = load_average()
    times = {1: [], 2: []}
    for r in range(ROUNDS):
        for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
            times[workers].append(one_round(clothd, workers))
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(f"\nload average before: {load}")
    print(f"5c. A folding {SIDE}² sheet with self-collision through clothd (8 substeps x 4 "
          f"iterations), step round trip, median of {ROUNDS} rounds of {STEPS} steps")
    print("workers  ms/step  speedup")
    print(f"1        {one:7.2f}    1.00×")
    print(f"2        {two:7.2f}    {one / two:.2f}×")
    print("BENCH " + json.dumps({"case": "self_team", "n": SIDE, "substeps": 8, "iters": 4,
                                 "warmup_steps": WARMUP, "steps": STEPS, "rounds": ROUNDS,
                                 "w1_ms": round(one, 3), "w2_ms": round(two, 3),
                                 "speedup": round(one / two, 3),
                                 "w1_samples": [round(t, 3) for t in times[1]],
                                 "w2_samples": [round(t, 3) for t in times[2]],
                                 "load_before": load}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
