#!/usr/bin/env python3
"""Soak: 8 clients at once against the real clothd for a given time.

    python3 tests/soak/soak.py --clothd build/clothd --seconds 600 [--seed N]

Eight client threads, each on its own connection(s), for the whole run:

  churn (2)      create and destroy cloths and soft bodies (their own and
                 the others'), pin, add colliders, set options;
  steppers (2)   step one instance, a list of instances, or all of them,
                 sometimes several requests pipelined;
  viewers (2)    subscribe (all, or a list; quantized or not, `every` k),
                 read the frames, unsubscribe, get and topology;
  droppers (2)   connections that end badly: closed (FIN) or reset (RST)
                 in the middle of a request line, right after sending a
                 step, or while frames are flowing; the same mixed with
                 ordinary requests on a connection that lives longer.

Every reply must be one JSON object on one line, no NaN, with "ok" a
boolean, the exact "id" the request carried, and for errors a code among
the ones a racing client can expect (not_found, invalid_argument,
limit_exceeded); every frame's header must be consistent. Events are
checked and counted.

At the end: the server must still be alive and exit 0 on SIGTERM within
5 s, and its resident memory must not have drifted: VmRSS is sampled from
/proc every 0.25 s; warm-up is the first 20 % of the run; "RSS at warm-up"
is the highest sample in the second half of the warm-up (10-20 %), "RSS at
the end" the highest in the last 10 %; the drift between them must stay
under 5 MiB. Instances are kept small and few (--max-instances 24, at most
16 x 16 particles) so that the set of live instances moves RSS by much less.

One summary line ends the run:

    soak: 600 s, 8 clients: 1234567 requests (0 bad), 45678 frames, 2345 events, 3456 disconnects
    (FIN 1200, RST 1100, mid-line 1000, ...), RSS warm-up 9.8 MiB, end 10.1 MiB, drift +0.3 MiB: ok

Exit status 0 when every check held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import struct
import sys
import threading
import time
from collections import Counter
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

import server as e2e_server  # noqa: E402  (tests/e2e/server.py: starts and stops clothd)

MIB = 1024 * 1024
DRIFT_LIMIT = 5 * MIB
EXPECTED_CODES = {"not_found", "invalid_argument", "limit_exceeded"}
FRAME_MAGIC = b"\x89CLF"


class SoakFailure(Exception):
    pass


class Stats:
    """Counters shared by the client threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter = Counter()
        self.codes: Counter = Counter()
        self.examples: Dict[str, str] = {}  # the first message of each code
        self.failures: List[str] = []

    def add(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] += n

    def fail(self, message: str) -> None:
        with self.lock:
            if len(self.failures) < 20:
                self.failures.append(message)
            self.counts["bad"] += 1


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")


class Conn:
    """One raw connection: sends request lines with ids, reads replies in
    order, checks frames and events on the way."""

    def __init__(self, port: int, stats: Stats, owner: str):
        self.stats = stats
        self.owner = owner
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.next_id = 1
        self.pending: List[object] = []  # ids sent, replies not yet read

    # -- sending ---------------------------------------------------------

    def send(self, cmd: str, **fields) -> object:
        rid: object = self.next_id if self.next_id % 3 else f"{self.owner}-{self.next_id}"
        self.next_id += 1
        line = json.dumps({"id": rid, "cmd": cmd, **fields}, separators=(",", ":"))
        self.sock.sendall(line.encode() + b"\n")
        self.pending.append(rid)
        self.stats.add("requests")
        return rid

    def request(self, cmd: str, **fields) -> dict:
        self.send(cmd, **fields)
        return self.reply()

    # -- reading ---------------------------------------------------------

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise SoakFailure(f"{self.owner}: the server closed the connection "
                              f"with {len(self.pending)} replies pending")
        self.buf += chunk

    def _frame(self) -> None:
        while len(self.buf) < 40:
            self._fill()
        magic, version, flags, length = struct.unpack_from("<4sHHI", self.buf, 0)
        count = struct.unpack_from("<I", self.buf, 32)[0]
        want = 64 + 6 * count if flags & 1 else 40 + 12 * count
        if magic != FRAME_MAGIC or version != 1 or flags & ~1 or length != want:
            raise SoakFailure(f"{self.owner}: bad frame header {bytes(self.buf[:40]).hex()}")
        while len(self.buf) < length:
            self._fill()
        del self.buf[:length]
        self.stats.add("frames")

    def message(self) -> dict:
        """The next JSON line (an event or a reply), frames checked on the way."""
        while True:
            while not self.buf:
                self._fill()
            if self.buf[0] == 0x89:
                self._frame()
                continue
            if self.buf[0] != 0x7B:
                raise SoakFailure(f"{self.owner}: a message starting with byte {self.buf[0]:#x}")
            while (nl := self.buf.find(b"\n")) < 0:
                self._fill()
            raw = bytes(self.buf[:nl])
            del self.buf[:nl + 1]
            try:
                msg = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
            except ValueError as e:
                raise SoakFailure(f"{self.owner}: a line that is not JSON ({e}): {raw[:300]!r}") from None
            if not isinstance(msg, dict):
                raise SoakFailure(f"{self.owner}: a line that is not an object: {raw[:300]!r}")
            return msg

    def reply(self) -> dict:
        while True:
            msg = self.message()
            if "event" in msg:
                if "ok" in msg:
                    raise SoakFailure(f"{self.owner}: an event with ok: {msg!r}")
                self.stats.add("events")
                continue
            break
        if not self.pending:
            raise SoakFailure(f"{self.owner}: a reply to nothing: {msg!r}")
        rid = self.pending.pop(0)
        if msg.get("id") != rid or type(msg.get("id")) is not type(rid):
            raise SoakFailure(f"{self.owner}: reply id {msg.get('id')!r}, expected {rid!r}: {msg!r}"[:400])
        ok = msg.get("ok")
        if not isinstance(ok, bool):
            raise SoakFailure(f"{self.owner}: reply without a boolean ok: {msg!r}"[:400])
        if not ok:
            err = msg.get("error")
            code = err.get("code") if isinstance(err, dict) else None
            if not isinstance(err, dict) or not isinstance(err.get("message"), str) or code not in EXPECTED_CODES:
                raise SoakFailure(f"{self.owner}: unexpected error reply {msg!r}"[:400])
            with self.stats.lock:
                self.stats.codes[code] += 1
                self.stats.examples.setdefault(code, err["message"])
        return msg

    def drain(self) -> None:
        while self.pending:
            self.reply()

    def close(self, how: str = "fin") -> None:
        if how == "rst":
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        try:
            self.sock.close()
        except OSError:
            pass


class World:
    """The ids the clients believe live (others may destroy them any time)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ids: List[int] = []

    def add(self, i: int) -> None:
        with self.lock:
            if i not in self.ids:
                self.ids.append(i)

    def remove(self, i: int) -> None:
        with self.lock:
            if i in self.ids:
                self.ids.remove(i)

    def sample(self, rng: random.Random, k: int) -> List[int]:
        with self.lock:
            return rng.sample(self.ids, min(k, len(self.ids)))


def small_create(rng: random.Random) -> dict:
    if rng.random() < 0.25:
        if rng.random() < 0.5:
            n = rng.randint(1, 3)
            return {"type": "softbody", "shape": "box", "size": [0.3, 0.3, 0.3], "cells": [n, n, n]}
        return {"type": "softbody", "shape": "ball", "radius": 0.25, "resolution": rng.randint(2, 4)}
    return {"width": rng.randint(2, 16), "height": rng.randint(2, 16), "spacing": 0.05,
            "selfDistance": rng.choice([0, 0, 0.02])}


class Client(threading.Thread):
    def __init__(self, role: str, index: int, port: int, world: World, stats: Stats, stop: threading.Event,
                 seed: int):
        super().__init__(name=f"{role}{index}", daemon=True)
        self.role, self.port, self.world, self.stats, self.stop = role, port, world, stats, stop
        self.rng = random.Random(seed)
        self.error: Optional[str] = None

    def run(self) -> None:
        try:
            conn = Conn(self.port, self.stats, self.name)
            while not self.stop.is_set():
                conn = getattr(self, "act_" + self.role)(conn)
            conn.drain()
            conn.close()
        except (SoakFailure, OSError, ValueError) as e:
            if not self.stop.is_set() or isinstance(e, SoakFailure):
                self.error = f"{self.name}: {type(e).__name__}: {e}"
                self.stats.fail(self.error)
                self.stop.set()

    # -- roles -------------------------------------------------------------

    def act_churn(self, c: Conn) -> Conn:
        rng = self.rng
        r = rng.random()
        with self.world.lock:
            crowded = len(self.world.ids) >= 18  # of --max-instances 24
        if r < 0.45 and not crowded:
            rep = c.request("create", **small_create(rng))
            if not rep["ok"]:  # full: instances the others lost track of
                self.reconcile(c)
            else:
                iid = rep["instance"]
                self.world.add(iid)
                if rng.random() < 0.5:
                    c.request("pin", instance=iid, particles=[0, 1])
                if rng.random() < 0.4:
                    c.request("addCollider", instance=iid, type="sphere", position=[0, -0.3, 0], radius=0.1,
                              coupling=rng.choice([0, 0.5]))
                if rng.random() < 0.3:
                    c.request("set", instance=iid, substeps=rng.randint(1, 3), iterations=rng.randint(1, 8))
        elif r < 0.9 or crowded:
            for iid in self.world.sample(rng, 1):
                rep = c.request("destroy", instance=iid)
                self.world.remove(iid)
        elif r < 0.95:
            c.request("wind", wind=[rng.uniform(-2, 2), 0, rng.uniform(-2, 2)])
        else:
            self.reconcile(c)
        return c

    def reconcile(self, c: Conn) -> None:
        """The live ids as the server lists them (a connection that closed
        with a destroy pending may or may not have destroyed)."""
        rep = c.request("status")
        with self.world.lock:
            self.world.ids = [e["instance"] for e in rep["instances"]]

    def act_stepper(self, c: Conn) -> Conn:
        rng = self.rng
        r = rng.random()
        dt = rng.choice([1 / 60, 1 / 30, 0.005])
        if r < 0.35:
            for iid in self.world.sample(rng, 1):
                c.request("step", instance=iid, dt=dt)
        elif r < 0.7:
            ids = self.world.sample(rng, rng.randint(2, 6))
            if ids:
                c.request("step", instances=ids, dt=dt)
        elif r < 0.85:
            c.request("step", dt=dt)
        else:  # pipelined: several steps and a status, replies read after
            for _ in range(rng.randint(2, 4)):
                ids = self.world.sample(rng, rng.randint(1, 4))
                c.send("step", instances=ids, dt=dt) if ids else c.send("step", dt=dt)
            c.send("status")
            c.drain()
        return c

    def act_viewer(self, c: Conn) -> Conn:
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            opts = {"quantize": rng.random() < 0.5, "every": rng.choice([1, 1, 2, 3])}
            ids = self.world.sample(rng, rng.randint(1, 3))
            if rng.random() < 0.4 or not ids:
                c.request("subscribe", **opts)
            else:
                c.request("subscribe", instances=ids, **opts)
        elif r < 0.45:
            c.request("unsubscribe")
        elif r < 0.75:
            for iid in self.world.sample(rng, 1):
                c.request("get", instance=iid)
        elif r < 0.85:
            for iid in self.world.sample(rng, 1):
                c.request("topology", instance=iid)
        else:  # frames that came in meanwhile are read on the way
            c.request("ping") if rng.random() < 0.5 else c.request("status")
        return c

    def act_dropper(self, c: Conn) -> Conn:
        rng = self.rng
        r = rng.random()
        how = rng.choice(["fin", "rst"])
        if r < 0.25:  # a fresh connection ends in the middle of a line
            extra = Conn(self.port, self.stats, self.name + "-x")
            line = json.dumps({"id": 1, "cmd": "step", "instances": self.world.sample(rng, 3)}).encode()
            extra.sock.sendall(line[:rng.randint(1, len(line) - 1)])
            extra.close(how)
            self.stats.add("disconnects")
            self.stats.add("disconnect_midline")
            self.stats.add("disconnect_" + how)
        elif r < 0.45:  # sends a step (and more) and leaves without reading
            extra = Conn(self.port, self.stats, self.name + "-x")
            ids = self.world.sample(rng, rng.randint(1, 5))
            extra.send("step", instances=ids) if ids else extra.send("step")
            if rng.random() < 0.5:
                for iid in ids[:1]:
                    extra.send("destroy", instance=iid)
                    self.world.remove(iid)
            extra.close(how)
            self.stats.add("disconnects")
            self.stats.add("disconnect_pending")
            self.stats.add("disconnect_" + how)
        elif r < 0.6:  # a viewer that vanishes while frames flow
            extra = Conn(self.port, self.stats, self.name + "-x")
            extra.request("subscribe")
            for _ in range(rng.randint(0, 3)):
                extra.request("step", dt=1 / 60)
            extra.close(how)
            self.stats.add("disconnects")
            self.stats.add("disconnect_subscribed")
            self.stats.add("disconnect_" + how)
        elif r < 0.7:  # its own long-lived connection, dropped and replaced
            c.drain()
            c.close(how)
            self.stats.add("disconnects")
            self.stats.add("disconnect_" + how)
            return Conn(self.port, self.stats, self.name)
        else:  # ordinary traffic, some of it doomed
            ids = self.world.sample(rng, 2)
            choice = rng.random()
            if choice < 0.4 and ids:
                c.request("get", instance=ids[0])
            elif choice < 0.7:
                c.request("step", instances=ids, dt=1 / 60) if ids else c.request("ping")
            else:
                rep = c.request("create", **small_create(rng))
                if rep["ok"]:
                    self.world.add(rep["instance"])
        return c


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise SoakFailure("no VmRSS line")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clothd", default=os.path.join(REPO, "build", "clothd"), help="the server binary")
    parser.add_argument("--seconds", type=float, default=600.0, help="duration (default 600)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the time)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    os.environ["CLOTHD_BIN"] = os.path.abspath(args.clothd)

    srv = e2e_server.Server("--max-instances", "24", "--max-particles", "4096", workers=2)
    srv.start()
    stats, world, stop = Stats(), World(), threading.Event()
    roles = ["churn", "churn", "stepper", "stepper", "viewer", "viewer", "dropper", "dropper"]
    clients = [Client(role, i, srv.port, world, stats, stop, seed * 31 + i) for i, role in enumerate(roles)]
    samples: List[tuple] = []
    started = time.monotonic()
    for cl in clients:
        cl.start()
    crashed = None
    while True:
        t = time.monotonic() - started
        if t >= args.seconds or stop.is_set():
            break
        if not srv.alive():
            crashed = f"clothd died after {t:.1f} s (status {srv.proc.returncode}); stderr: {srv.stderr()!r}"
            break
        samples.append((t, rss_bytes(srv.pid)))
        time.sleep(0.25)
    stop.set()
    for cl in clients:
        cl.join(timeout=30)
    elapsed = time.monotonic() - started

    problems: List[str] = list(stats.failures)
    if crashed is None and not srv.alive():
        crashed = f"clothd died (status {srv.proc.returncode}); stderr: {srv.stderr()!r}"
    if crashed:
        problems.append(crashed)
        srv.kill()
    else:
        try:
            srv.stop()
        except AssertionError as e:
            problems.append(str(e))
    if [cl for cl in clients if cl.is_alive()]:
        problems.append("a client thread did not finish within 30 s of the end")

    duration = max(args.seconds, 1e-9)
    warm = [r for t, r in samples if 0.10 * duration <= t < 0.20 * duration]
    end = [r for t, r in samples if t >= 0.90 * duration]
    warm_rss = max(warm) if warm else 0
    end_rss = max(end) if end else 0
    drift = end_rss - warm_rss
    if crashed is None and not stats.failures:
        if not warm or not end:
            problems.append("too few RSS samples (run longer)")
        elif drift >= DRIFT_LIMIT:
            problems.append(f"RSS drifted by {drift / MIB:.2f} MiB after warm-up (limit {DRIFT_LIMIT / MIB:.0f} MiB)")

    n = stats.counts
    kinds = ", ".join(f"{k[len('disconnect_'):]} {v}" for k, v in sorted(n.items()) if k.startswith("disconnect_"))
    codes = ", ".join(f"{k} {v}" for k, v in sorted(stats.codes.items()))
    for code, message in sorted(stats.examples.items()):
        print(f"soak: e.g. {code}: {message}", file=sys.stderr)
    verdict = "ok" if not problems else "FAILED"
    for p in problems:
        print(f"soak: {p}"[:2000], file=sys.stderr)
    print(f"soak: {elapsed:.0f} s, 8 clients (seed {seed}): {n['requests']} requests ({n['bad']} bad; "
          f"expected errors: {codes or 'none'}), {n['frames']} frames, {n['events']} events, "
          f"{n['disconnects']} disconnects ({kinds}), RSS warm-up {warm_rss / MIB:.1f} MiB, "
          f"end {end_rss / MIB:.1f} MiB, drift {drift / MIB:+.2f} MiB: {verdict}", flush=True)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
