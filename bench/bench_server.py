#!/usr/bin/env python3
"""Through-the-server bench: clothd driven over TCP as a game server would.

Starts one or more clothd binaries (--clothd, repeatable, e.g. a "before" and
an "after" build) and, for each, measures in one interleaved run:

1. capes: 64 awake capes of 32x32 (8 solver iterations, sleepThreshold 0,
   top row pinned, a global aero wind blowing), 2 workers. A stepping
   client sends `{"cmd":"step"}` (every instance) and waits for the reply,
   back to back; the time from the request's send to the reply's last byte
   is one sample. Measured with 0 subscribers and with 4 subscribers: each
   a separate process that subscribes to every instance and reads frames as
   fast as it can (counting them, and the frames it missed: a subscriber
   that keeps up misses none), over TCP, then (a binary with `--unix`) the
   same 4 over the server's Unix socket: a game server's subscribers on the
   same host, then the same 4 over TCP asking for quantized frames (about
   half the bytes), then the same 4 over TCP asking for shared-memory
   frames (`"shm":true`: the socket carries 56-byte references, each
   subscriber copies every frame out of the server's ring and checks that
   it was not overwritten meanwhile); then 4 subscribers written in C
   (bench/bench_subscriber.c, a game server's reader) over TCP and with
   shared memory, so that the server's cost of its subscribers shows
   apart from the Python readers' own interpreter. The stepping client
   stays on TCP. The rounds alternate the
   cases and the binaries, so that a drifting machine hits every case alike.
   Also the server's CPU per step, split into the loop thread and the rest
   (the workers), from /proc/PID/task/*/schedstat (nanoseconds).
2. tiny: a `step` of one 2x2 instance, and a `step` with `"instances":[]`
   (no instance), N times one after the other on one connection; the
   server's CPU per request (all its threads, from schedstat) and the round
   trip's p50 as the client sees it.

Prints a table, then one machine-readable line per case and binary:

    BENCH {"case":"server_capes","label":"after",...}
    BENCH {"case":"server_tiny","label":"after",...}

Benchmarks report figures; nothing here fails on a slow machine. The exit
code is non-zero only when a server cannot be started or misbehaves.
"""

import argparse
import json
import os
import re
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from run import load_average  # bench/run.py, beside this file

BANNER = re.compile(rb"listening on ([0-9.]+):(\d+) \((\d+) workers\)")

CAPES = 64
CAPE_N = 32
CAPE_ITERS = 8
CAPE_SPACING = 0.03
WIND = [3.0, 0.0, 1.5]
WORKERS = 2
SUBSCRIBERS = 4
WARMUP_STEPS = 30
TINY_REQUESTS = 4000
TARGET_P99_MS = 8.0
TARGET_SUB_PCT = 10.0
TARGET_TINY_US = 50.0


class BenchError(Exception):
    pass




LOAD_BEFORE = load_average()


# ---- a minimal line client ------------------------------------------------

class Line:
    """One connection: JSON lines out, replies in (frames are not expected
    on it: the stepping client never subscribes)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 1

    def send(self, obj):
        obj = dict(obj, id=self.next_id)
        self.next_id += 1
        self.sock.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def reply(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise BenchError("server closed the connection")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        msg = json.loads(line)
        if not msg.get("ok"):
            raise BenchError(f"request failed: {line.decode()}")
        return msg

    def ask(self, obj):
        self.send(obj)
        return self.reply()

    def close(self):
        self.sock.close()


class Server:
    def __init__(self, label, path, workers=WORKERS):
        self.label = label
        if not os.access(path, os.X_OK):
            raise BenchError(f"{label}: {path} is missing; run `make BUILD=... all`")
        # A binary from before --unix has no Unix-socket case.
        helps = subprocess.run([path, "--help"], capture_output=True, text=True).stdout
        self.unix = None
        # A binary from before subscribe's "shm" has no shared-memory case.
        self.shm = "--shm-mb" in helps
        args = [path, "--port", "0", "--workers", str(workers)]
        if "--unix " in helps:
            self.unix_dir = tempfile.mkdtemp(prefix="clothd-bench-")
            self.unix = os.path.join(self.unix_dir, "clothd.sock")
            args += ["--unix", self.unix]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        m = BANNER.search(line)
        if not m:
            self.proc.kill()
            raise BenchError(f"{label}: unexpected banner {line!r}")
        self.port = int(m.group(2))
        if self.unix is not None and not self.proc.stdout.readline().startswith(b"clothd listening on unix:"):
            self.proc.kill()
            raise BenchError(f"{label}: no Unix socket banner")

    def address(self, over_unix):
        """What a subscriber connects to: "unix:PATH" or the TCP port."""
        return f"unix:{self.unix}" if over_unix else str(self.port)

    def thread_ns(self):
        """(loop thread ns, all threads ns) on CPU so far."""
        pid = self.proc.pid
        loop = total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    ns = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            total += ns
            if int(tid) == pid:
                loop = ns
        return loop, total

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise BenchError(f"{self.label}: did not exit on SIGTERM")
            if rc != 0:
                raise BenchError(f"{self.label}: exited with {rc}")
        if self.unix is not None:
            if os.path.exists(self.unix):
                raise BenchError(f"{self.label}: left its socket file behind")
            os.rmdir(self.unix_dir)


def machine_ticks():
    """(busy, total) clock ticks of the whole machine (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
    return busy, busy + v[3] + v[4]


def own_ticks(pids):
    """utime + stime of these processes and their reaped children."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
        except (OSError, ValueError, IndexError):
            pass
    return total


class OthersMeter:
    """How many cores everything but this bench (servers, subscribers,
    stepping client) used over a stretch: other processes compete for the
    two cores and show up in the latencies."""

    def __init__(self, servers):
        self.pids = [os.getpid()] + [s.proc.pid for s in servers]
        self.start = (machine_ticks(), own_ticks(self.pids))

    def cores(self):
        (b0, t0), o0 = self.start
        (b1, t1), o1 = machine_ticks(), own_ticks(self.pids)
        cores = os.cpu_count() or 1
        elapsed = (t1 - t0) / cores
        return max(0.0, ((b1 - b0) - (o1 - o0)) / elapsed) if elapsed > 0 else 0.0


# ---- subscribers: separate processes ---------------------------------------

def open_ring(reply_line):
    """The shared-memory ring a `"shm":true` subscribe reply names:
    (mapping, data size)."""
    import mmap
    ring = json.loads(reply_line)["shm"]
    fd = os.open("/dev/shm" + ring["name"], os.O_RDONLY)
    try:
        return mmap.mmap(fd, 0, prot=mmap.PROT_READ), ring["size"]
    finally:
        os.close(fd)


def subscriber_main(address, mode="plain"):
    """Subscribes to every instance (address: a TCP port on 127.0.0.1 or
    "unix:PATH"; mode "plain", "quantize" or "shm") and reads every frame as
    fast as it can until stdin closes; then prints `frames missed bytes
    cpu_seconds` and exits. A shared-memory frame is copied out of the ring
    and counted only when it was whole (else it is missed)."""
    if address.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(address[len("unix:"):])
    else:
        sock = socket.create_connection(("127.0.0.1", int(address)))
    options = {"plain": "", "quantize": ',"quantize":true', "shm": ',"shm":true'}[mode]
    sock.sendall(b'{"id":1,"cmd":"subscribe"%s}\n' % options.encode())
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    cpu0 = sum(os.times()[:2])
    buf = bytearray(1 << 22)
    view = memoryview(buf)
    have = 0
    frames = missed = total = 0
    last = {}
    ring = size = None
    stdin = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([sock, stdin], [], [])
        if stdin in ready:
            break
        n = sock.recv_into(view[have:])
        if n == 0:
            break
        total += n
        have += n
        pos = 0
        while pos < have:
            if buf[pos] == 0x89:
                if have - pos < 40:
                    break
                flags, length, inst = struct.unpack_from("<HII", buf, pos + 6)
                if have - pos < length:
                    break
                frame = struct.unpack_from("<Q", buf, pos + 16)[0]
                pos += length
                if flags & 8:  # a reference: the frame is in the ring
                    at, flen = struct.unpack_from("<QI", buf, pos - length + 40)
                    start = 4096 + at % size
                    data = ring[start:start + flen]
                    total += len(data)
                    if struct.unpack_from("<Q", ring, 24)[0] > at + size:
                        continue  # overwritten while it was copied: missed
                prev = last.get(inst)
                if prev is not None and frame > prev + 1:
                    missed += frame - prev - 1
                last[inst] = frame
                frames += 1
            else:
                nl = buf.find(b"\n", pos, have)
                if nl < 0:
                    break
                if mode == "shm" and ring is None:
                    ring, size = open_ring(bytes(buf[pos:nl]))
                pos = nl + 1
        if pos:
            buf[:have - pos] = buf[pos:have]
            have -= pos
        if have == len(buf):
            raise SystemExit("subscriber: message larger than the buffer")
    sock.close()
    cpu = sum(os.times()[:2]) - cpu0
    sys.stdout.write(f"{frames} {missed} {total} {cpu:.6f}\n")
    sys.stdout.flush()


class Subscribers:
    def __init__(self, address, count, mode="plain", program=None):
        command = ([program] if program else
                   [sys.executable, os.path.abspath(__file__), "--subscriber"])
        self.procs = [subprocess.Popen(command + [address, mode],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                      for _ in range(count)]
        for p in self.procs:
            if p.stdout.readline().strip() != "ready":
                raise BenchError("a subscriber did not start")

    def stop(self):
        frames = missed = 0
        cpu = 0.0
        for p in self.procs:
            p.stdin.close()
        for p in self.procs:
            out = p.stdout.readline().split()
            p.wait(timeout=30)
            if len(out) == 4:
                frames += int(out[0])
                missed += int(out[1])
                cpu += float(out[3])
        return frames, missed, cpu


# ---- the cases ---------------------------------------------------------------

def setup_capes(server):
    c = Line(server.port)
    ids = []
    for i in range(CAPES):
        x, z = (i % 8) * 1.2, (i // 8) * 1.2
        r = c.ask({"cmd": "create", "width": CAPE_N, "height": CAPE_N, "spacing": CAPE_SPACING,
                   "origin": [x, 2.0, z], "solverIterations": CAPE_ITERS, "sleepThreshold": 0})
        ids.append(r["instance"])
        c.ask({"cmd": "pin", "instance": r["instance"], "particles": list(range(CAPE_N))})
    c.ask({"cmd": "wind", "wind": WIND})
    for _ in range(WARMUP_STEPS):
        c.ask({"cmd": "step"})
    return c


def percentile(values, p):
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def run_steps(server, client, steps):
    """`steps` back-to-back steps; their round trips (s) and the server's CPU."""
    loop0, all0 = server.thread_ns()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        r = client.ask({"cmd": "step"})
        times.append(time.perf_counter() - t0)
        if r.get("stepped") != CAPES or r.get("sleeping"):
            raise BenchError(f"{server.label}: step reply {r}")
    loop1, all1 = server.thread_ns()
    return times, loop1 - loop0, all1 - all0


# The cases: (key, subscribers, over the Unix socket, the subscribers' mode,
# their language: "py" this file's subscriber_main, "c" build/bench_subscriber).
CASES = (("subs0", 0, False, "plain", "py"),
         (f"subs{SUBSCRIBERS}", SUBSCRIBERS, False, "plain", "py"),
         (f"unix{SUBSCRIBERS}", SUBSCRIBERS, True, "plain", "py"),
         (f"quant{SUBSCRIBERS}", SUBSCRIBERS, False, "quantize", "py"),
         (f"shm{SUBSCRIBERS}", SUBSCRIBERS, False, "shm", "py"),
         (f"subs{SUBSCRIBERS}c", SUBSCRIBERS, False, "plain", "c"),
         (f"shm{SUBSCRIBERS}c", SUBSCRIBERS, False, "shm", "c"))


def run_capes(servers, rounds, steps, log, c_subscriber):
    clients = {s.label: setup_capes(s) for s in servers}
    meter = OthersMeter(servers)
    res = {s.label: {key: {"t": [], "loop_ns": 0, "all_ns": 0, "frames": 0, "missed": 0, "sub_cpu": 0.0}
                     for key, *_ in CASES} for s in servers}
    for rnd in range(rounds):
        order = servers if rnd % 2 == 0 else servers[::-1]
        cases = CASES if rnd % 2 == 0 else CASES[::-1]
        for s in order:
            for key, n, over_unix, mode, impl in cases:
                if (over_unix and s.unix is None) or (impl == "c" and c_subscriber is None):
                    continue
                log(f"  capes: round {rnd + 1}/{rounds}, {s.label}, {n} subscribers"
                    f"{' (Unix socket)' if over_unix else ''}{'' if mode == 'plain' else f' ({mode})'}{' (C)' if impl == 'c' else ''} ...")
                if mode == "shm" and not s.shm:
                    continue
                subs = Subscribers(s.address(over_unix), n, mode,
                                   c_subscriber if impl == "c" else None) if n else None
                # let the subscribers' current frames go out before timing
                run_steps(s, clients[s.label], 3)
                t, loop_ns, all_ns = run_steps(s, clients[s.label], steps)
                r = res[s.label][key]
                r["t"] += t
                r["loop_ns"] += loop_ns
                r["all_ns"] += all_ns
                if subs:
                    f, m, cpu = subs.stop()
                    r["frames"] += f
                    r["missed"] += m
                    r["sub_cpu"] += cpu
    for c in clients.values():
        c.close()
    others = round(meter.cores(), 2)
    rows = []
    for s in servers:
        row = {"case": "server_capes", "label": s.label, "capes": CAPES, "n": CAPE_N,
               "iters": CAPE_ITERS, "workers": WORKERS, "rounds": rounds,
               "steps_per_round": steps, "other_processes_cores": others,
               "load_before": LOAD_BEFORE}
        for key, n, *_ in CASES:
            r = res[s.label][key]
            count = len(r["t"])
            if count == 0:
                continue
            row[f"{key}_p50_ms"] = round(1e3 * percentile(r["t"], 50), 3)
            row[f"{key}_p99_ms"] = round(1e3 * percentile(r["t"], 99), 3)
            row[f"{key}_mean_ms"] = round(1e3 * statistics.mean(r["t"]), 3)
            row[f"{key}_loop_cpu_us_per_step"] = round(r["loop_ns"] / count / 1e3, 1)
            row[f"{key}_server_cpu_us_per_step"] = round(r["all_ns"] / count / 1e3, 1)
            if n:
                row[f"{key}_frames_read"] = r["frames"]
                row[f"{key}_frames_missed"] = r["missed"]
                # over the timed steps and the 3 before them
                row[f"{key}_subscribers_cpu_us_per_step"] = round(
                    1e6 * r["sub_cpu"] / (count + 3 * rounds), 1)
                added = 100.0 * (row[f"{key}_p50_ms"] / row["subs0_p50_ms"] - 1.0)
                row[f"{key}_added_p50_pct"] = round(added, 1)
                row[f"{key}_verdict_p99"] = "PASS" if row[f"{key}_p99_ms"] <= TARGET_P99_MS else "MISS"
                row[f"{key}_verdict_added"] = "PASS" if added <= TARGET_SUB_PCT else "MISS"
        rows.append(row)
    return rows


def tiny_pass(server, client, request, count):
    loop0, all0 = server.thread_ns()
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        client.ask(request)
        times.append(time.perf_counter() - t0)
    loop1, all1 = server.thread_ns()
    return times, all1 - all0, loop1 - loop0


def run_tiny(servers, rounds, count, log):
    state = {}
    for s in servers:
        c = Line(s.port)
        inst = c.ask({"cmd": "create", "width": 2, "height": 2, "spacing": 0.5,
                      "origin": [0, 2, 0], "sleepThreshold": 0})["instance"]
        state[s.label] = (c, inst)
    cases = (("tiny", lambda inst: {"cmd": "step", "instance": inst}),
             ("none", lambda inst: {"cmd": "step", "instances": []}))
    res = {s.label: {k: {"t": [], "ns": 0, "loop_ns": 0} for k, _ in cases} for s in servers}
    for rnd in range(rounds):
        order = servers if rnd % 2 == 0 else servers[::-1]
        for s in order:
            c, inst = state[s.label]
            for key, make in cases:
                log(f"  tiny: round {rnd + 1}/{rounds}, {s.label}, {key} ...")
                tiny_pass(s, c, make(inst), 200)  # warm
                t, ns, loop_ns = tiny_pass(s, c, make(inst), count)
                r = res[s.label][key]
                r["t"] += t
                r["ns"] += ns
                r["loop_ns"] += loop_ns
    rows = []
    for s in servers:
        c, inst = state[s.label]
        c.ask({"cmd": "destroy", "instance": inst})
        c.close()
        row = {"case": "server_tiny", "label": s.label, "requests": rounds * count}
        for key, _ in cases:
            r = res[s.label][key]
            n = len(r["t"])
            row[f"{key}_cpu_us"] = round(r["ns"] / n / 1e3, 2)
            row[f"{key}_loop_cpu_us"] = round(r["loop_ns"] / n / 1e3, 2)
            row[f"{key}_rtt_p50_us"] = round(1e6 * percentile(r["t"], 50), 1)
            row[f"{key}_rtt_p99_us"] = round(1e6 * percentile(r["t"], 99), 1)
        row["verdict_tiny"] = "PASS" if row["tiny_cpu_us"] < TARGET_TINY_US else "MISS"
        rows.append(row)
    return rows


def print_tables(capes, tiny):
    n = SUBSCRIBERS
    print()
    print(f"load average before: {LOAD_BEFORE}; other processes used "
          f"{capes[0]['other_processes_cores']} of {os.cpu_count()} cores during the capes")
    print(f"Through the server: {CAPES} capes of {CAPE_N}² at {CAPE_ITERS} iterations, awake, wind "
          f"{WIND}, {WORKERS} workers; step reply round trip as the stepping client sees it")
    head = (f"{'build':<10} {'subscribers':<14} {'p50 ms':>7} {'p99':>7} {'added':>7} "
            f"{'loop µs/step':>12} {'server µs/step':>14} {'frames read':>11} {'missed':>7} "
            f"{'subs µs/step':>12}")
    print(head)
    print("-" * len(head))
    names = {"subs0": "none", f"subs{n}": f"{n} over TCP", f"unix{n}": f"{n} over Unix",
             f"quant{n}": f"{n} quantized", f"shm{n}": f"{n} shm",
             f"subs{n}c": f"{n} TCP, C", f"shm{n}c": f"{n} shm, C"}
    for r in capes:
        for key, count, *_ in CASES:
            if f"{key}_p50_ms" not in r:
                continue
            added = f"{r[f'{key}_added_p50_pct']:>6.1f}%" if count else f"{'':>7}"
            tail = (f" {r[f'{key}_frames_read']:>11} {r[f'{key}_frames_missed']:>7} "
                    f"{r[f'{key}_subscribers_cpu_us_per_step']:>12}") if count else ""
            print(f"{r['label']:<10} {names[key]:<14} {r[f'{key}_p50_ms']:>7.2f} "
                  f"{r[f'{key}_p99_ms']:>7.2f} {added} {r[f'{key}_loop_cpu_us_per_step']:>12} "
                  f"{r[f'{key}_server_cpu_us_per_step']:>14}{tail}")
    print(f"   targets: p99 with {n} subscribers <= {TARGET_P99_MS} ms; {n} subscribers add "
          f"<= {TARGET_SUB_PCT}% to the p50")
    print()
    print("A `step` through the socket, one request at a time: server CPU per request "
          "(all threads / loop thread) and round trip")
    head = (f"{'build':<10} {'1 tiny: CPU µs':>14} {'loop':>7} {'rtt p50 µs':>10} "
            f"{'none: CPU µs':>12} {'loop':>7} {'rtt p50 µs':>10}")
    print(head)
    print("-" * len(head))
    for r in tiny:
        print(f"{r['label']:<10} {r['tiny_cpu_us']:>14.1f} {r['tiny_loop_cpu_us']:>7.1f} "
              f"{r['tiny_rtt_p50_us']:>10.1f} {r['none_cpu_us']:>12.1f} {r['none_loop_cpu_us']:>7.1f} "
              f"{r['none_rtt_p50_us']:>10.1f}")
    print(f"   target: a tiny step < {TARGET_TINY_US} µs of server CPU")
    print()
    for r in capes + tiny:
        print("BENCH " + json.dumps(r, separators=(",", ":")))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--subscriber":
        subscriber_main(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clothd", action="append", metavar="[LABEL=]PATH",
                    help="a clothd binary (repeatable; default build/clothd)")
    ap.add_argument("--build", default="build", help="build folder for the default binary")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100, help="timed steps per round and case")
    ap.add_argument("--tiny", type=int, default=TINY_REQUESTS, help="requests per tiny round")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    specs = args.clothd or [f"{args.build}/clothd"]
    servers = []

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    try:
        for spec in specs:
            label, _, path = spec.rpartition("=")
            servers.append(Server(label or os.path.basename(os.path.dirname(path)) or path, path))
        tiny = run_tiny(servers, args.rounds, args.tiny, log)
        c_subscriber = os.path.join(args.build, "bench_subscriber")
        if not os.access(c_subscriber, os.X_OK):
            log(f"no {c_subscriber} (make {c_subscriber}): no C subscriber cases")
            c_subscriber = None
        capes = run_capes(servers, args.rounds, args.steps, log, c_subscriber)
        print_tables(capes, tiny)
        for s in servers:
            s.stop()
    except BenchError as e:
        print(f"bench_server: {e}", file=sys.stderr)
        for s in servers:
            if s.proc.poll() is None:
                s.proc.kill()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
