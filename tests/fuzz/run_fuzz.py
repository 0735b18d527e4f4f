#!/usr/bin/env python3
"""Runs the libFuzzer target for a while and prints one summary line:

    python3 tests/fuzz/run_fuzz.py --fuzzer build/fuzz_server --work build/fuzz --seconds 1800

    fuzz: 412345 executions in 1800 s (229/s), cov 3456, ft 12345, corpus 987 inputs, crashes 0

Before the run the seed corpus and the dictionary are generated from
protocol/PROTOCOL.md and protocol/test_vectors.json (make_corpus.py) into
WORK/seeds and WORK/clothd.dict. Inputs libFuzzer finds interesting are
kept in WORK/corpus (so a later run starts where this one stopped); a crash
is saved under WORK/artifacts/ and the line ends with its path and the
command that replays it. libFuzzer's own log is WORK/fuzz.log.

Exit status: 0 when the run ended without a crash, 1 on a crash (or a
timeout, an out-of-memory, a leak: whatever libFuzzer reports as a failing
input), 2 when the fuzzer could not run.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fuzzer", required=True, help="the fuzz_server binary")
    parser.add_argument("--work", required=True, help="folder for the corpus, the log and crash inputs")
    parser.add_argument("--seconds", type=int, default=1800, help="how long to fuzz (default 1800)")
    parser.add_argument("--max-len", type=int, default=8192, help="longest input, bytes (default 8192)")
    args = parser.parse_args(argv)

    work = os.path.abspath(args.work)
    corpus = os.path.join(work, "corpus")
    artifacts = os.path.join(work, "artifacts") + os.sep
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    made = subprocess.run([sys.executable, os.path.join(HERE, "make_corpus.py"), "--out", work])
    if made.returncode != 0:
        return 2
    before = set(glob.glob(artifacts + "*"))
    log_path = os.path.join(work, "fuzz.log")
    cmd = [os.path.abspath(args.fuzzer), corpus, os.path.join(work, "seeds"),
           f"-dict={os.path.join(work, 'clothd.dict')}", f"-max_total_time={args.seconds}",
           f"-max_len={args.max_len}", "-timeout=60", "-rss_limit_mb=4096", "-print_final_stats=1",
           f"-artifact_prefix={artifacts}"]
    print("fuzz: " + " ".join(cmd), flush=True)
    started = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
    elapsed = time.monotonic() - started
    text = open(log_path, encoding="utf-8", errors="replace").read()

    execs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text)
    progress = re.findall(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+)(?: corp: (\d+))?", text, flags=re.M)
    n_exec = int(execs[-1]) if execs else (int(progress[-1][0]) if progress else 0)
    cov, ft, corp = (progress[-1][1], progress[-1][2], progress[-1][3] or "?") if progress else ("?", "?", "?")
    crashes = sorted(set(glob.glob(artifacts + "*")) - before)
    failed = proc.returncode != 0 or crashes
    rate = n_exec / elapsed if elapsed > 0 else 0
    line = (f"fuzz: {n_exec} executions in {elapsed:.0f} s ({rate:.0f}/s), cov {cov}, ft {ft}, "
            f"corpus {corp} inputs, crashes {len(crashes) if crashes else (1 if failed else 0)}")
    if failed:
        tail = text[-6000:]
        print(tail, file=sys.stderr)
        if crashes:
            line += f"; input {crashes[0]}; replay: {os.path.abspath(args.fuzzer)} {crashes[0]}"
        else:
            line += f" (libFuzzer exited with {proc.returncode}; log {log_path})"
    print(line, flush=True)
    if not progress and not failed:
        print(f"fuzz: no progress lines in {log_path}", file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
