#!/usr/bin/env python3
"""clothctl — the console of a running clothd.

    clothctl [--host H] [--port P] [--token-file PATH] [--json] [--timeout S] COMMAND [ARGS]

    status                      the server's "=== Cloth Simulation ===" block
    ping                        check that clothd answers (prints the round trip)
    stats                       the server's counters: connections, instances, steps, errors
    wind [X Y Z] [--instance I] show the global wind, or set it (or instance I's)
    debug [on|off]              show or set the viewers' debug overlay
    create [--width W --height H --spacing S --mass M --stiffness K
            --bend-stiffness B --damping D --origin X Y Z --solver-iterations N
            --right X Y Z --down X Y Z --gravity X Y Z]
                                create a cloth; prints its id
    create --type softbody --shape ball [--radius R --resolution N --center X Y Z]
                                create a soft ball
    destroy INSTANCE            destroy an instance
    pin INSTANCE PARTICLE [X Y Z]   pin a particle where it is, or at X Y Z
    unpin INSTANCE PARTICLE     release a pinned particle
    gravity INSTANCE X Y Z      set an instance's gravity
    enable INSTANCE [on|off]    enable (default) or disable stepping
    step [--dt S] [--count N] [--instance I ...] [--budget-ms MS]
                                step every (or the listed) instance N times
    get INSTANCE [--positions]  an instance's state (all positions with --positions)
    watch [INSTANCE ...] [--count N] [--every K] [--quantize]
                                print one line per frame received

The address comes from --host/--port, else CLOTHD_HOST/CLOTHD_PORT, else
127.0.0.1:7878. --json prints the server's raw JSON reply lines instead of
text (one per request).

Token: a clothd started with --token-file answers nothing but `auth` until
the connection presents its token. --token-file PATH reads the token from
the file's first line (a trailing CR/LF dropped); without it the
environment variable CLOTHD_TOKEN is used if set. Every command
authenticates first; with the read-only token, commands that change the
simulation fail with `unauthorized` (exit 1).

Exit codes: 0 done; 1 the server answered with an error (its code and
message on stderr); 2 bad usage; 3 cannot connect to clothd (or the
connection was lost).

Runs as the `clothctl` console script of the clothd Python package, or
from a checkout as `python3 clients/python/clothctl.py ...`.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from typing import Any, List, Optional, Sequence

# Run as a script, Python puts this folder (where clothd.py is) on sys.path;
# installed, both modules sit side by side in site-packages.
from clothd import (DEFAULT_HOST, DEFAULT_PORT, TOKEN_ENV, Client, ClothdError, Frame, ProtocolError,
                    Subscriber, Unauthorized)

EXIT_OK = 0
EXIT_SERVER_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECT = 3


class UsageError(Exception):
    """Bad command-line arguments found after argparse (exit code 2)."""


class StdoutClosed(Exception):
    """Whoever read our output went away (`clothctl get 1 | head -3`)."""


def f32(x: float) -> str:
    """The shortest decimal that reads back as the same float32."""
    v = struct.unpack("<f", struct.pack("<f", float(x)))[0]
    if v == 0:
        return "-0" if str(v).startswith("-") else "0"
    for digits in range(1, 10):
        text = f"{v:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == v:
            return text
    return repr(v)


def vec(v: Sequence[float]) -> str:
    return "[" + ", ".join(f32(x) for x in v) + "]"


def on_off(text: str) -> bool:
    t = text.lower()
    if t in ("on", "true", "1", "yes"):
        return True
    if t in ("off", "false", "0", "no"):
        return False
    raise UsageError(f"expected on or off, not {text!r}")


# ---- commands -------------------------------------------------------------------


def snapshot_name(name: str) -> str:
    """`clothctl save world.cds` names the snapshot "world"."""
    return name[:-4] if name.endswith(".cds") else name


def journal_name(name: str) -> str:
    """`clothctl replay session.cdj` names the journal "session"."""
    return name[:-4] if name.endswith(".cdj") else name


class Console:
    def __init__(self, client: Client, as_json: bool):
        self.c = client
        self.as_json = as_json

    def out(self, text: str, end: str = "\n") -> None:
        try:
            sys.stdout.write(text + end)
            sys.stdout.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None

    def raw(self) -> None:
        """Prints the reply line just received, as the server sent it."""
        self.out(self.c.last_line.decode("utf-8", "replace"))

    def ping(self, args: argparse.Namespace) -> None:
        seconds = self.c.ping()
        if self.as_json:
            return self.raw()
        access = f" ({self.c.access} access)" if self.c.access else ""
        self.out(f"pong from {self.c.host}:{self.c.port} in {seconds * 1000:.1f} ms{access}")

    def stats(self, args: argparse.Namespace) -> None:
        r = self.c.stats()
        if self.as_json:
            return self.raw()
        conns, inst, steps, sent = r["connections"], r["instances"], r["steps"], r["sent"]

        def nonzero(counts: dict) -> str:
            return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "none"

        dur = steps["durationSeconds"]
        mean = f", mean {dur['sum'] / dur['count'] * 1000:.2f} ms" if dur["count"] else ""
        self.out(f"clothd {r['version']} ({r['simd']}, {r['workers']} workers), up {r['uptimeSeconds']:.1f} s\n"
                 f"connections: {conns['current']} now, {conns['total']} total, {conns['refused']} refused"
                 f" (limit {conns['limit']})\n"
                 f"instances: {inst['awake']} awake, {inst['sleeping']} sleeping, {inst['disabled']} disabled,"
                 f" {inst['unstable']} unstable (limit {inst['limit']});"
                 f" particles {r['particles']['current']} (limit {r['particles']['limit']})\n"
                 f"steps: {steps['total']} ({steps['instanceSteps']} instance steps, {steps['slow']} slow,"
                 f" {steps['perSecond']:g}/s{mean})\n"
                 f"sent: {sent['replyBytes']} reply, {sent['eventBytes']} event, {sent['frameBytes']} frame bytes;"
                 f" {sent['frames']} frames, {sent['framesSkipped']} skipped\n"
                 f"requests: {nonzero(r['requests'])}\n"
                 f"errors: {nonzero(r['errors'])}")

    def status(self, args: argparse.Namespace) -> None:
        reply = self.c.status()
        if self.as_json:
            return self.raw()
        self.out(reply.get("text", ""), end="")

    def wind(self, args: argparse.Namespace) -> None:
        if args.xyz is None:
            if args.instance is not None:
                raise UsageError("wind --instance needs X Y Z (only the global wind can be shown)")
            reply = self.c.status()
            if self.as_json:
                return self.raw()
            self.out(f"global wind: {vec(reply.get('globalWind') or [0, 0, 0])}")
            return
        stored = self.c.wind(args.xyz, instance=args.instance)
        if self.as_json:
            return self.raw()
        who = "global wind" if args.instance is None else f"wind of instance {args.instance}"
        self.out(f"{who}: {vec(stored)}")

    def debug(self, args: argparse.Namespace) -> None:
        enabled = None if args.state is None else on_off(args.state)
        now = self.c.debug(enabled)
        if self.as_json:
            return self.raw()
        self.out(f"debug overlay: {'on' if now else 'off'}")

    def create(self, args: argparse.Namespace) -> None:
        fields = {k: getattr(args, k) for k in (
            "width", "height", "spacing", "mass", "stiffness", "bend_stiffness", "damping", "origin",
            "solver_iterations", "right", "down", "gravity", "shape", "radius", "resolution", "center")}
        reply = self.c.request("create", type=args.type, **fields)
        if self.as_json:
            return self.raw()
        self.out(f"instance {reply['instance']}: {reply.get('particles')} particles, "
                 f"{reply.get('constraints')} constraints")

    def save(self, args: argparse.Namespace) -> None:
        r = self.c.save(snapshot_name(args.name), args.instance)
        if self.as_json:
            return self.raw()
        self.out(f"saved {r['instances']} instance(s) as {r['name']} ({r['bytes']} bytes)")

    def load(self, args: argparse.Namespace) -> None:
        ids = self.c.load(snapshot_name(args.name), replace=args.replace)
        if self.as_json:
            return self.raw()
        self.out(f"loaded {snapshot_name(args.name)}: instances {' '.join(map(str, ids)) or 'none'}")

    def record(self, args: argparse.Namespace) -> None:
        if args.stop:
            r = self.c.stop_recording()
            if self.as_json:
                return self.raw()
            return self.out(f"recorded {r['frames']} frame(s) to {r['name']} ({r['bytes']} bytes)")
        if args.name is None:
            raise UsageError("record: give a NAME (or --stop)")
        r = self.c.record(journal_name(args.name), args.instance)
        if self.as_json:
            return self.raw()
        self.out(f"recording instances {' '.join(map(str, r['instances'])) or 'none'} to {r['name']}")

    def replay(self, args: argparse.Namespace) -> None:
        r = self.c.replay(journal_name(args.name), args.to)
        if self.as_json:
            return self.raw()
        pairs = ", ".join(f"{old} -> {new}" for old, new in zip(r["recorded"], r["instances"]))
        self.out(f"replayed {r['frames']} of {r['journalFrames']} frame(s): {pairs or 'no instances'}")
        if "warning" in r:
            self.out(f"warning: {r['warning']}")

    def destroy(self, args: argparse.Namespace) -> None:
        self.c.destroy(args.instance)
        if self.as_json:
            return self.raw()
        self.out(f"destroyed instance {args.instance}")

    def pin(self, args: argparse.Namespace) -> None:
        self.c.pin(args.instance, args.particle, position=args.xyz)
        if self.as_json:
            return self.raw()
        where = "in place" if args.xyz is None else f"at {vec(args.xyz)}"
        self.out(f"pinned particle {args.particle} of instance {args.instance} {where}")

    def unpin(self, args: argparse.Namespace) -> None:
        self.c.unpin(args.instance, args.particle)
        if self.as_json:
            return self.raw()
        self.out(f"unpinned particle {args.particle} of instance {args.instance}")

    def gravity(self, args: argparse.Namespace) -> None:
        self.c.gravity(args.instance, args.xyz)
        if self.as_json:
            return self.raw()
        self.out(f"gravity of instance {args.instance}: {vec(args.xyz)}")

    def enable(self, args: argparse.Namespace) -> None:
        enabled = self.c.enable(args.instance, on_off(args.state))
        if self.as_json:
            return self.raw()
        self.out(f"instance {args.instance}: {'enabled' if enabled else 'disabled'}")

    def step(self, args: argparse.Namespace) -> None:
        if args.count < 1:
            raise UsageError("step --count must be at least 1")
        if not 0 < args.dt <= 1:
            raise UsageError("step --dt must be in (0, 1] seconds")
        stepped = 0
        unstable: List[int] = []
        degraded = over = 0
        for i in range(args.count):
            reply = self.c.step(args.dt, instances=args.instance, budget_ms=args.budget_ms)
            degraded += len(reply.get("degraded") or [])
            over += "actualMs" in reply and reply["actualMs"] > reply["budgetMs"]
            if self.as_json:
                self.raw()
            stepped = reply.get("stepped", 0)
            for iid in reply.get("unstable") or []:
                unstable.append(iid)
                print(f"clothctl: instance {iid} became unstable at step {i + 1} (now disabled)",
                      file=sys.stderr)
        if self.as_json:
            return
        self.out(f"{args.count} step{'s' if args.count != 1 else ''} of {f32(args.dt)} s: "
                 f"{stepped} instance{'s' if stepped != 1 else ''} stepped"
                 + (f", unstable: {sorted(set(unstable))}" if unstable else "")
                 + (f"; budget {f32(args.budget_ms)} ms: {over} over it, {degraded} instance "
                    f"step{'s' if degraded != 1 else ''} below their level of detail"
                    if args.budget_ms else ""))

    def get(self, args: argparse.Namespace) -> None:
        s = self.c.get(args.instance)
        if self.as_json:
            return self.raw()
        flags = "enabled" if s.enabled else "disabled"
        if s.unstable:
            flags += ", unstable"
        if s.sleeping:
            flags += ", sleeping"
        if s.type == "cloth":
            what = f"Cloth {s.instance}: {s.width}x{s.height}"
        else:
            what = f"Soft body {s.instance}: {s.count} particles" if s.type == "softbody" else \
                f"{s.type} {s.instance}: {s.count} particles"
        self.out(f"{what}, frame {s.frame}, time {s.time:g} s, {flags}")
        if s.positions:
            lo = [min(p[k] for p in s.positions) for k in range(3)]
            hi = [max(p[k] for p in s.positions) for k in range(3)]
            self.out(f"  bounding box: {vec(lo)} .. {vec(hi)}")
        pinned = ", ".join(str(i) for i in s.pinned[:20]) + (", ..." if len(s.pinned) > 20 else "")
        self.out(f"  pinned: {len(s.pinned)}" + (f" ({pinned})" if s.pinned else ""))
        for col in s.colliders:
            if col.get("type") == "box":
                shape = f"half extents {vec(col.get('halfExtents', []))}"
            elif col.get("type") == "taperedCapsule":
                shape = f"radius {f32(col.get('radius', 0))} .. {f32(col.get('radius2', 0))}"
            else:
                shape = f"radius {f32(col.get('radius', 0))}"
            self.out(f"  collider {col.get('collider')}: {col.get('type')} at {vec(col.get('position', []))}, {shape}")
        if args.positions:
            for i, p in enumerate(s.positions):
                self.out(f"  {i}: {vec(p)}")
        elif s.positions and s.type == "cloth":
            corners = sorted({0, s.width - 1, (s.height - 1) * s.width, s.width * s.height - 1})
            for i in corners:
                self.out(f"  particle {i}: {vec(s.positions[i])}")

    def watch(self, args: argparse.Namespace) -> None:
        if args.count is not None and args.count < 1:
            raise UsageError("watch --count must be at least 1")
        sub = Subscriber(self.c.host, self.c.port, args.instances or None, quantize=args.quantize,
                         every=args.every, timeout=self.c.timeout, reconnect=False,
                         token=self.c.token or "")
        try:
            sub.connect()
            if self.as_json:
                self.out(sub.client.last_line.decode("utf-8", "replace"))
            seen = 0
            for frame in sub.frames(timeout=args.idle):
                self.frame_line(frame)
                seen += 1
                if args.count is not None and seen >= args.count:
                    break
        finally:
            sub.close()

    def frame_line(self, f: Frame) -> None:
        if self.as_json:
            self.out(json.dumps({"instance": f.instance, "frame": f.frame, "time": f.time,
                                 "count": f.count, "quantized": f.quantized, "bytes": f.size},
                                separators=(",", ":")))
            return
        if f.count:
            lo = [min(f.flat[k::3]) for k in range(3)]
            hi = [max(f.flat[k::3]) for k in range(3)]
            box = f"box {vec(lo)} .. {vec(hi)}"
        else:
            box = "no particles"
        form = "quantized" if f.quantized else "plain"
        self.out(f"instance {f.instance} frame {f.frame} time {f.time:.4f} s: {f.count} particles, "
                 f"{f.size} bytes {form}, {box}")


# ---- command line ---------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exit code 2, as argparse, with our prefix
        self.print_usage(sys.stderr)
        print(f"clothctl: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    env_port = os.environ.get("CLOTHD_PORT")
    p = _Parser(prog="clothctl", description="The console of a running clothd.",
                epilog="Exit codes: 0 ok, 1 server error reply (unauthorized too), 2 usage, 3 cannot "
                       "connect.")
    # The global options go before or after the command (`clothctl status --json`).
    # The sub-commands' copies default to SUPPRESS so that they only
    # override the main parser's values when given.
    common = argparse.ArgumentParser(add_help=False)
    for parser, after in ((p, False), (common, True)):
        def default(value: Any) -> Any:
            return argparse.SUPPRESS if after else value  # noqa: B023
        parser.add_argument("--host", default=default(os.environ.get("CLOTHD_HOST") or DEFAULT_HOST),
                            help="clothd address (default $CLOTHD_HOST or 127.0.0.1)")
        parser.add_argument("--port", type=int, default=default(None),
                            help=f"clothd port (default $CLOTHD_PORT or {DEFAULT_PORT})")
        parser.add_argument("--json", action="store_true", default=default(False),
                            help="print the raw JSON replies")
        parser.add_argument("--timeout", type=float, default=default(10.0),
                            help="seconds to wait for the server (default 10)")
        parser.add_argument("--token-file", dest="token_file", metavar="PATH", default=default(None),
                            help=f"authenticate with the token on this file's first line "
                                 f"(default ${TOKEN_ENV}, if set)")
    p.set_defaults(env_port=env_port)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    add = sub.add_parser

    def add_parser(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return add(name, parents=[common], **kwargs)

    sub.add_parser = add_parser  # type: ignore[method-assign]

    sub.add_parser("status", help='print the "=== Cloth Simulation ===" block')
    sub.add_parser("ping", help="check that clothd answers; prints the round trip")
    sub.add_parser("stats", help="the server's counters: connections, instances, steps, errors")

    w = sub.add_parser("wind", help="show or set the global wind (or an instance's)")
    w.add_argument("xyz", nargs="*", type=float, metavar="X Y Z")
    w.add_argument("--instance", type=int, help="set this instance's own wind instead")

    d = sub.add_parser("debug", help="show or set the viewers' debug overlay")
    d.add_argument("state", nargs="?", choices=["on", "off"])

    c = sub.add_parser("create", help="create a cloth (or a soft body)")
    c.add_argument("--type", default="cloth", choices=["cloth", "softbody"])
    c.add_argument("--width", type=int)
    c.add_argument("--height", type=int)
    c.add_argument("--spacing", type=float)
    c.add_argument("--mass", type=float)
    c.add_argument("--stiffness", type=float)
    c.add_argument("--bend-stiffness", dest="bend_stiffness", type=float)
    c.add_argument("--damping", type=float)
    c.add_argument("--origin", type=float, nargs=3, metavar=("X", "Y", "Z"))
    c.add_argument("--solver-iterations", dest="solver_iterations", type=int)
    c.add_argument("--right", type=float, nargs=3, metavar=("X", "Y", "Z"))
    c.add_argument("--down", type=float, nargs=3, metavar=("X", "Y", "Z"))
    c.add_argument("--gravity", type=float, nargs=3, metavar=("X", "Y", "Z"))
    c.add_argument("--shape", choices=["ball", "box"], help="soft body: a generated shape")
    c.add_argument("--radius", type=float, help="soft ball radius")
    c.add_argument("--resolution", type=int, help="soft ball resolution")
    c.add_argument("--center", type=float, nargs=3, metavar=("X", "Y", "Z"), help="soft ball centre")

    x = sub.add_parser("destroy", help="destroy an instance")
    x.add_argument("instance", type=int)

    pn = sub.add_parser("pin", help="pin a particle in place or at X Y Z")
    pn.add_argument("instance", type=int)
    pn.add_argument("particle", type=int)
    pn.add_argument("xyz", nargs="*", type=float, metavar="X Y Z")

    up = sub.add_parser("unpin", help="release a particle")
    up.add_argument("instance", type=int)
    up.add_argument("particle", type=int)

    g = sub.add_parser("gravity", help="set an instance's gravity")
    g.add_argument("instance", type=int)
    g.add_argument("xyz", nargs=3, type=float, metavar="X Y Z")

    e = sub.add_parser("enable", help="enable or disable stepping of an instance")
    e.add_argument("instance", type=int)
    e.add_argument("state", nargs="?", default="on", choices=["on", "off"])

    s = sub.add_parser("step", help="step instances")
    s.add_argument("--dt", type=float, default=1 / 60, help="seconds per step (default 1/60)")
    s.add_argument("--count", type=int, default=1, help="how many steps (default 1)")
    s.add_argument("--instance", type=int, action="append", help="only this instance (repeatable)")
    s.add_argument("--budget-ms", type=float,
                   help="a soft time budget per step: the lowest priority steps coarser (0: none)")

    gt = sub.add_parser("get", help="an instance's state")
    gt.add_argument("instance", type=int)
    gt.add_argument("--positions", action="store_true", help="print every particle's position")

    sv = sub.add_parser("save", help="write a snapshot to the server's --data-dir")
    sv.add_argument("name", help="the snapshot's name (a trailing .cds is dropped)")
    sv.add_argument("--instance", type=int, action="append", help="only this instance (repeatable)")

    ld = sub.add_parser("load", help="load a snapshot from the server's --data-dir")
    ld.add_argument("name", help="the snapshot's name (a trailing .cds is dropped)")
    ld.add_argument("--replace", action="store_true", help="replace every instance (default: add)")

    rc = sub.add_parser("record", help="start (or --stop) a journal in the server's --data-dir")
    rc.add_argument("name", nargs="?", help="the journal's name (a trailing .cdj is dropped)")
    rc.add_argument("--instance", type=int, action="append", help="only this instance (repeatable)")
    rc.add_argument("--stop", action="store_true", help="end the journal being written")

    rp = sub.add_parser("replay", help="rebuild a journal's instances (under new ids) at a frame")
    rp.add_argument("name", help="the journal's name (a trailing .cdj is dropped)")
    rp.add_argument("--to", type=int, help="the frame to stop at (default: the whole journal)")

    wa = sub.add_parser("watch", help="print a line per frame received")
    wa.add_argument("instances", nargs="*", type=int, metavar="INSTANCE", help="default: every instance")
    wa.add_argument("--count", type=int, help="stop after N frames")
    wa.add_argument("--every", type=int, default=1, help="every k-th frame only (1..1000)")
    wa.add_argument("--quantize", action="store_true", help="ask for 16-bit frames")
    wa.add_argument("--idle", type=float, default=None,
                    help="give up after S seconds without a frame (default: wait)")
    return p


def _check_xyz(args: argparse.Namespace) -> None:
    xyz = getattr(args, "xyz", None)
    if xyz is not None:
        if len(xyz) == 0 and args.command in ("wind", "pin"):
            args.xyz = None
        elif len(xyz) != 3:
            raise UsageError(f"{args.command}: give X Y Z (3 numbers), not {len(xyz)}")


def read_token(path: str) -> str:
    """The token on the first line of ``path`` (a trailing CR/LF dropped)."""
    try:
        with open(path, "rb") as f:
            line = f.readline()
    except OSError as e:
        raise UsageError(f"--token-file {path}: cannot read it: {e.strerror or e}") from None
    token = line.rstrip(b"\r\n").decode("utf-8", "replace")
    if not token:
        raise UsageError(f"--token-file {path}: the first line is empty")
    return token


def token_source(args: argparse.Namespace) -> str:
    return f"the token from --token-file {args.token_file}" if args.token_file else f"${TOKEN_ENV}"


def unauthorized_hint(e: Unauthorized, args: argparse.Namespace, client: Client) -> str:
    """What to do about an `unauthorized` reply, for the error line."""
    if client.token is None:
        return f" (clothd wants a token: give --token-file PATH or set {TOKEN_ENV})"
    if e.message.startswith("token:"):
        return f" ({token_source(args)} was refused)"
    if client.access == "readonly":
        return f" ({token_source(args)} is the read-only one)"
    return ""


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    port = args.port
    if port is None:
        try:
            port = int(args.env_port) if args.env_port else DEFAULT_PORT
        except ValueError:
            print(f"clothctl: CLOTHD_PORT={args.env_port!r} is not a port number", file=sys.stderr)
            return EXIT_USAGE
    try:
        _check_xyz(args)
        # --token-file wins over $CLOTHD_TOKEN; "" sends no auth at all.
        token = read_token(args.token_file) if args.token_file else (os.environ.get(TOKEN_ENV) or "")
    except UsageError as e:
        parser.print_usage(sys.stderr)
        print(f"clothctl: {e}", file=sys.stderr)
        return EXIT_USAGE

    client = Client(args.host, port, args.timeout, token=token)
    console = Console(client, args.json)
    try:
        try:
            client.connect()
        except OSError as e:
            print(f"clothctl: cannot connect to clothd at {args.host}:{port}: {e.strerror or e}",
                  file=sys.stderr)
            return EXIT_CONNECT
        getattr(console, args.command)(args)
        return EXIT_OK
    except UsageError as e:
        parser.print_usage(sys.stderr)
        print(f"clothctl: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ProtocolError as e:
        print(f"clothctl: {e.message}", file=sys.stderr)
        return EXIT_CONNECT
    except Unauthorized as e:
        print(f"clothctl: {e.code}: {e.message}{unauthorized_hint(e, args, client)}", file=sys.stderr)
        return EXIT_SERVER_ERROR
    except ClothdError as e:
        print(f"clothctl: {e.code}: {e.message}", file=sys.stderr)
        return EXIT_SERVER_ERROR
    except (OSError, TimeoutError) as e:
        print(f"clothctl: connection to clothd at {args.host}:{port} lost: {e}", file=sys.stderr)
        return EXIT_CONNECT
    except StdoutClosed:
        # Keep Python from complaining again while flushing at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
