"""The cost of one `step` round trip: the C client (roundtrip.c) beside the
Python client, against one clothd started here, in the same run.

One tiny instance (2 x 2) per client; N blocking steps (each waits for its
reply), and N pipelined (all sent, then all replies read); and the client
process's own CPU time per blocking step. The two clients
take turns for a few rounds so that both see the same machine; the median
of the rounds is printed.

    python3 clients/c/bench/roundtrip.py --clothd build/clothd --c-bench build/clients/c/bench/roundtrip
"""

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from clothd import Client  # noqa: E402


def cpu_s() -> float:
    """This process's CPU time (user + system), seconds."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def python_round(port: int, steps: int):
    with Client("127.0.0.1", port) as c:
        inst = c.create_cloth(width=2, height=2)
        for _ in range(50):  # warm-up
            c.step(instance=inst)
        t0, c0 = time.perf_counter(), cpu_s()
        for _ in range(steps):
            c.step(instance=inst)
        blocking = (time.perf_counter() - t0) / steps * 1e6
        cpu = (cpu_s() - c0) / steps * 1e6
        t0 = time.perf_counter()
        for i in range(steps):
            c.send_json({"id": i, "cmd": "step", "instance": inst})
        for i in range(steps):
            reply = c.read_reply()
            assert reply.get("id") == i and reply.get("ok"), reply
        pipelined = (time.perf_counter() - t0) / steps * 1e6
        c.destroy(inst)
    return blocking, pipelined, cpu


def c_round(binary: str, port: int, steps: int):
    out = subprocess.run([binary, "--port", str(port), "--steps", str(steps)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    m = re.search(r"c blocking ([0-9.]+) us/step, client cpu ([0-9.]+)", out)
    pipelined = float(re.search(r"c pipelined ([0-9.]+)", out).group(1))
    return float(m.group(1)), pipelined, float(m.group(2))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clothd", required=True)
    ap.add_argument("--c-bench", required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    proc = subprocess.Popen([args.clothd, "--port", "0", "--workers", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        banner = proc.stdout.readline().decode()
        port = int(re.search(r":(\d+) \(", banner).group(1))
        results = {"c": [], "python": []}
        for _ in range(args.rounds):
            results["c"].append(c_round(args.c_bench, port, args.steps))
            results["python"].append(python_round(port, args.steps))
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = float("nan")
        print(f"step round trip, one 2x2 instance, {args.steps} steps x {args.rounds} rounds "
              f"(median; load average {load:.2f}):")
        print(f"{'client':<8} {'blocking':>16} {'pipelined':>16} {'client CPU (blocking)':>24}")
        for name in ("c", "python"):
            b = statistics.median(r[0] for r in results[name])
            p = statistics.median(r[1] for r in results[name])
            u = statistics.median(r[2] for r in results[name])
            print(f"{name:<8} {b:>11.1f} us/step {p:>11.1f} us/step {u:>19.1f} us/step")
        cb = statistics.median(r[0] for r in results["c"])
        pb = statistics.median(r[0] for r in results["python"])
        print(f"python / c (blocking): {pb / cb:.2f}x")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
