#!/usr/bin/env python3
"""clothctl — the console of a running clothd.

    clothctl [--host H] [--port P | --unix PATH] [--token-file PATH] [--json] [--timeout S] COMMAND [ARGS]
    clothctl [-i]                   an interactive session (prompt, history, help)
    clothctl --version              this console's version and the server's

`clothctl help` lists the commands and `clothctl help COMMAND` tells one:
both read the one table of subcommands (build_parser), which the
one-shot command line and the interactive session share. Among them:
status, ping, stats, scenes, scene, create, set, destroy, pin, unpin,
gravity, wind, add-collider / move-collider / remove-collider (every
collider type), step, get, watch, save / load, record / replay, debug,
and `raw '{json}'`, which sends one request line as it is and prints the
reply line. `--scene NAME` goes on create, get, step, status, destroy,
watch, save and record.

What is tied to a connection (`create --ephemeral`, `scene NAME --hold`)
lives as long as a session's connection; a one-shot command refuses it
(exit 2), since its connection ends with it. A server whose hello lacks
a feature a command needs (snapshots without --data-dir, scenes on an old
clothd) is named with the feature: `incompatible_server`, exit 1.

Interactive: with no COMMAND on a terminal (or with -i), clothctl shows a
prompt naming the server (`127.0.0.1:7878> `) and runs one command a line
on one connection; `help`, `help COMMAND`, `quit` (or Ctrl-D). Lines are
kept with readline in ~/.clothctl_history ($CLOTHCTL_HISTFILE overrides
it). With no COMMAND and standard input not a terminal, the lines of the
input are run one by one without a prompt (`clothctl < script`).

The address comes from --host/--port, else CLOTHD_HOST/CLOTHD_PORT, else
127.0.0.1:7878. --unix PATH (else CLOTHD_UNIX, unless --host or --port
is given) connects to the Unix socket of a clothd started with
`--unix PATH` on this host instead; messages then name `unix:PATH`. --json prints the server's raw JSON reply lines instead of
text (one per request). A member the server did not read (a misspelt
`set` option) is run past and named on stderr as a warning.

Token: a clothd started with --token-file answers nothing but `auth`
until the connection presents its token. --token-file PATH reads the token from
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
import shlex
import struct
import sys
import warnings
from typing import Any, Dict, List, Optional, Sequence

# Run as a script, Python puts this folder (where clothd.py is) on sys.path;
# installed, both modules sit side by side in site-packages.
from clothd import (DEFAULT_HOST, DEFAULT_PORT, TOKEN_ENV, Client, ClothdError, ClothdWarning, Frame,
                    ProtocolError, Scene, Subscriber, Unauthorized, __version__)

#: The Unix socket path used when neither --unix nor --host/--port is given.
UNIX_ENV = "CLOTHD_UNIX"

EXIT_OK = 0
EXIT_SERVER_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECT = 3


#: Where the interactive session keeps its lines (readline's history).
HISTORY_ENV = "CLOTHCTL_HISTFILE"
HISTORY_FILE = "~/.clothctl_history"
HISTORY_LENGTH = 1000
#: Words of the interactive session that are not commands.
QUIT_WORDS = ("quit", "exit")


class UsageError(Exception):
    """Bad command-line arguments found after argparse (exit code 2)."""


class AnsweredError(Exception):
    """The server's error reply was printed as it came (`raw`): exit 1."""


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


def option_value(text: str) -> Any:
    """A `set` value as typed: JSON when it reads as JSON (0.5, true,
    [0,1,0], null, "x"), numbers separated by commas or spaces as a list
    (0,1,0), anything else as a string (aero)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    parts = text.replace(",", " ").split()
    if len(parts) > 1:
        try:
            return [float(x) for x in parts]
        except ValueError:
            pass
    return text


def camel(name: str) -> str:
    """bend_stiffness and bend-stiffness -> bendStiffness (camelCase stays)."""
    head, *rest = name.replace("-", "_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def collider_fields(args: argparse.Namespace, names: Sequence[str]) -> Dict[str, Any]:
    """The collider options given on the command line, by wire name."""
    return {camel(n): getattr(args, n) for n in names if getattr(args, n, None) is not None}


# add-collider's options (wire names in snake_case); move-collider takes the first three.
COLLIDER_OPTIONS = ("position", "normal", "rotation", "radius", "radius2", "height", "half_extents",
                    "friction", "static_friction", "coupling", "attachment")


class Console:
    def __init__(self, client: Client, as_json: bool, parser: Optional[argparse.ArgumentParser] = None):
        self.c = client
        self.as_json = as_json
        self.parser = parser
        # True in a session (a prompt, or lines on standard input): one
        # connection for many commands, so what is tied to it can live.
        self.session = False

    def in_scene(self, scene: Optional[str]) -> Any:
        """The client, or with a scene a handle that sends it with each
        request (the server then refuses another scene's instances)."""
        return self.c if scene is None else Scene(self.c, scene)

    def tied(self, what: str) -> None:
        """Refuses, in a one-shot command, to tie something to a
        connection that ends with the command."""
        if not self.session:
            raise UsageError(f"{what}: it would be destroyed as soon as this command ends (its connection "
                             f"closes); use it in a session (clothctl -i, or lines on standard input)")

    def out(self, text: str, end: str = "\n") -> None:
        try:
            sys.stdout.write(text + end)
            sys.stdout.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None

    def print_reply(self) -> None:
        """Prints the reply line just received, as the server sent it."""
        self.out(self.c.last_line.decode("utf-8", "replace"))

    def help(self, args: argparse.Namespace) -> None:
        """`help`: every command with its line; `help COMMAND`: its usage."""
        assert self.parser is not None
        self.out(command_help(self.parser, args.topic))

    def raw(self, args: argparse.Namespace) -> None:
        """`raw '{json}'`: the line as it is; the reply line as it came."""
        line = args.line.strip()
        if not line or "\n" in line:
            raise UsageError("raw: give one JSON request on one line")
        self.c.send_raw(line.encode() + b"\n")
        reply = self.c.read_reply()
        self.print_reply()
        if reply.get("ok") is False:
            raise AnsweredError()

    def set(self, args: argparse.Namespace) -> None:
        fields: Dict[str, Any] = {}
        for pair in args.pairs:
            name, sep, value = pair.partition("=")
            if not sep or not name:
                raise UsageError(f"set: give name=value, not {pair!r}")
            fields[camel(name)] = option_value(value)
        self.c.request_as_is("set", {"instance": args.instance, **fields})
        if self.as_json:
            return self.print_reply()
        # What the server did not read is on stderr (a warning), not "set".
        unread = {name for name in fields if any(f'"{name}"' in w for w in self.c.last_warnings)}
        done = [name for name in fields if name not in unread]
        self.out(f"instance {args.instance}: set {', '.join(done) or 'nothing'}")

    def add_collider(self, args: argparse.Namespace) -> None:
        fields = collider_fields(args, COLLIDER_OPTIONS)
        reply = self.c.request_as_is("addCollider", {"instance": args.instance, "type": args.type, **fields})
        if self.as_json:
            return self.print_reply()
        self.out(f"collider {reply['collider']} on instance {args.instance}: {args.type}")

    def move_collider(self, args: argparse.Namespace) -> None:
        fields = collider_fields(args, COLLIDER_OPTIONS[:3])
        if not fields:
            raise UsageError("move-collider: give --position, --normal or --rotation")
        self.c.request_as_is("moveCollider", {"instance": args.instance, "collider": args.collider, **fields})
        if self.as_json:
            return self.print_reply()
        what = ", ".join(f"{k} {vec(v)}" for k, v in fields.items())
        self.out(f"collider {args.collider} on instance {args.instance}: {what}")

    def remove_collider(self, args: argparse.Namespace) -> None:
        self.c.remove_collider(args.instance, args.collider)
        if self.as_json:
            return self.print_reply()
        self.out(f"removed collider {args.collider} from instance {args.instance}")

    def ping(self, args: argparse.Namespace) -> None:
        seconds = self.c.ping()
        if self.as_json:
            return self.print_reply()
        access = f" ({self.c.access} access)" if self.c.access else ""
        self.out(f"pong from {self.c.endpoint} in {seconds * 1000:.1f} ms{access}")

    def stats(self, args: argparse.Namespace) -> None:
        r = self.c.stats()
        if self.as_json:
            return self.print_reply()
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
        reply = self.c.status(scene=args.scene)
        if self.as_json:
            return self.print_reply()
        self.out(reply.get("text", ""), end="")

    def wind(self, args: argparse.Namespace) -> None:
        if args.xyz is None:
            if args.instance is not None:
                raise UsageError("wind --instance needs X Y Z (only the global wind can be shown)")
            reply = self.c.status()
            if self.as_json:
                return self.print_reply()
            self.out(f"global wind: {vec(reply.get('globalWind') or [0, 0, 0])}")
            return
        stored = self.c.wind(args.xyz, instance=args.instance)
        if self.as_json:
            return self.print_reply()
        who = "global wind" if args.instance is None else f"wind of instance {args.instance}"
        self.out(f"{who}: {vec(stored)}")

    def debug(self, args: argparse.Namespace) -> None:
        enabled = None if args.state is None else on_off(args.state)
        now = self.c.debug(enabled)
        if self.as_json:
            return self.print_reply()
        self.out(f"debug overlay: {'on' if now else 'off'}")

    def create(self, args: argparse.Namespace) -> None:
        if args.ephemeral:
            self.tied("create --ephemeral")
        fields = {k: getattr(args, k) for k in (
            "width", "height", "spacing", "mass", "stiffness", "bend_stiffness", "damping", "origin",
            "solver_iterations", "right", "down", "gravity", "shape", "radius", "resolution", "center")}
        reply = self.c.request("create", type=args.type, scene=args.scene, ephemeral=args.ephemeral or None,
                               **fields)
        if self.as_json:
            return self.print_reply()
        self.out(f"instance {reply['instance']}: {reply.get('particles')} particles, "
                 f"{reply.get('constraints')} constraints"
                 + (f", scene {reply['scene']}" if args.scene is not None else "")
                 + (", ephemeral (destroyed when this session ends)" if args.ephemeral else ""))

    def scenes(self, args: argparse.Namespace) -> None:
        entries = self.c.scenes()
        if self.as_json:
            return self.print_reply()
        if not entries:
            return self.out("no scenes")
        width = max(len(e["scene"]) for e in entries)
        for e in entries:
            n = e["instances"]
            self.out(f"{e['scene']:<{width}}  {n} instance{'s' if n != 1 else ''}"
                     + ("  (held by a connection)" if e.get("ephemeral") else ""))

    def scene(self, args: argparse.Namespace) -> None:
        ephemeral = True if args.hold else False if args.release else None
        if ephemeral:
            self.tied("scene --hold")
        r = self.c.scene(args.name, ephemeral=ephemeral)
        if self.as_json:
            return self.print_reply()
        ids = " ".join(map(str, r.get("instances") or []))
        held = ("held by this session: its instances go when it ends" if r.get("owned")
                else "held by another connection" if r.get("ephemeral") else "not held")
        self.out(f"scene {r['scene']}: " + (f"instances {ids}" if ids else "no instances") + f" ({held})")

    def save(self, args: argparse.Namespace) -> None:
        r = self.c.save(snapshot_name(args.name), args.instance, scene=args.scene)
        if self.as_json:
            return self.print_reply()
        self.out(f"saved {r['instances']} instance(s) as {r['name']} ({r['bytes']} bytes)")

    def load(self, args: argparse.Namespace) -> None:
        ids = self.c.load(snapshot_name(args.name), replace=args.replace)
        if self.as_json:
            return self.print_reply()
        self.out(f"loaded {snapshot_name(args.name)}: instances {' '.join(map(str, ids)) or 'none'}")

    def record(self, args: argparse.Namespace) -> None:
        if args.stop:
            r = self.c.stop_recording()
            if self.as_json:
                return self.print_reply()
            return self.out(f"recorded {r['frames']} frame(s) to {r['name']} ({r['bytes']} bytes)")
        if args.name is None:
            raise UsageError("record: give a NAME (or --stop)")
        r = self.c.record(journal_name(args.name), args.instance, scene=args.scene)
        if self.as_json:
            return self.print_reply()
        self.out(f"recording instances {' '.join(map(str, r['instances'])) or 'none'} to {r['name']}")

    def replay(self, args: argparse.Namespace) -> None:
        r = self.c.replay(journal_name(args.name), args.to)
        if self.as_json:
            return self.print_reply()
        pairs = ", ".join(f"{old} -> {new}" for old, new in zip(r["recorded"], r["instances"]))
        self.out(f"replayed {r['frames']} of {r['journalFrames']} frame(s): {pairs or 'no instances'}")
        if "warning" in r:
            self.out(f"warning: {r['warning']}")

    def destroy(self, args: argparse.Namespace) -> None:
        if args.instance is None and args.scene is None:
            raise UsageError("destroy: give an INSTANCE or --scene NAME")
        gone = self.c.destroy(args.instance, scene=args.scene)
        if self.as_json:
            return self.print_reply()
        if args.instance is not None:
            return self.out(f"destroyed instance {args.instance}")
        self.out(f"destroyed {len(gone)} instance{'s' if len(gone) != 1 else ''} of scene "
                 f"{args.scene}" + (f": {' '.join(map(str, gone))}" if gone else ""))

    def pin(self, args: argparse.Namespace) -> None:
        self.c.pin(args.instance, args.particle, position=args.xyz)
        if self.as_json:
            return self.print_reply()
        where = "in place" if args.xyz is None else f"at {vec(args.xyz)}"
        self.out(f"pinned particle {args.particle} of instance {args.instance} {where}")

    def unpin(self, args: argparse.Namespace) -> None:
        self.c.unpin(args.instance, args.particle)
        if self.as_json:
            return self.print_reply()
        self.out(f"unpinned particle {args.particle} of instance {args.instance}")

    def gravity(self, args: argparse.Namespace) -> None:
        self.c.gravity(args.instance, args.xyz)
        if self.as_json:
            return self.print_reply()
        self.out(f"gravity of instance {args.instance}: {vec(args.xyz)}")

    def enable(self, args: argparse.Namespace) -> None:
        enabled = self.c.enable(args.instance, on_off(args.state))
        if self.as_json:
            return self.print_reply()
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
            reply = self.c.step(args.dt, instances=args.instance, budget_ms=args.budget_ms,
                                scene=args.scene)
            degraded += len(reply.get("degraded") or [])
            over += "actualMs" in reply and reply["actualMs"] > reply["budgetMs"]
            if self.as_json:
                self.print_reply()
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
        s = self.in_scene(args.scene).get(args.instance)
        if self.as_json:
            return self.print_reply()
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
                         token=self.c.token or "", scene=args.scene, unix_socket=self.c.unix_socket,
                         shm=args.shm)
        try:
            sub.connect()
            which = ("instances " + ", ".join(map(str, args.instances))) if args.instances else "every instance"
            if args.scene is not None:
                which += f" of scene {args.scene}"
            print(f"clothctl: watching {which}: a frame comes after each step, and nothing steps "
                  f"by itself; step with `clothctl step` (or your game server's steps); Ctrl-C stops",
                  file=sys.stderr, flush=True)
            if self.as_json:
                self.out(sub.client.last_line.decode("utf-8", "replace"))
            seen = 0
            for frame in sub.frames(timeout=args.idle):
                self.frame_line(frame)
                seen += 1
                if args.count is not None and seen >= args.count:
                    break
        finally:
            if sub.frames_missed:
                print(f"clothctl: {sub.frames_missed} frames missed: overwritten in the server's shared "
                      f"memory before they were read", file=sys.stderr, flush=True)
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
        parser.add_argument("--host", default=default(None),
                            help="clothd address (default $CLOTHD_HOST or 127.0.0.1)")
        parser.add_argument("--port", type=int, default=default(None),
                            help=f"clothd port (default $CLOTHD_PORT or {DEFAULT_PORT})")
        parser.add_argument("--unix", metavar="PATH", default=default(None),
                            help=f"connect to clothd's Unix socket at PATH instead of host:port "
                                 f"(default ${UNIX_ENV} unless --host or --port is given)")
        parser.add_argument("--json", action="store_true", default=default(False),
                            help="print the raw JSON replies")
        parser.add_argument("--timeout", type=float, default=default(10.0),
                            help="seconds to wait for the server (default 10)")
        parser.add_argument("--token-file", dest="token_file", metavar="PATH", default=default(None),
                            help=f"authenticate with the token on this file's first line "
                                 f"(default ${TOKEN_ENV}, if set)")
    p.add_argument("-i", "--interactive", action="store_true",
                   help="an interactive session (the default with no COMMAND on a terminal)")
    p.add_argument("--version", action="store_true",
                   help="print this console's version and the server's (when it answers)")
    p.set_defaults(env_port=env_port, handler=None)
    # The one table of commands: the one-shot command line, the interactive
    # session and `help` all read it.
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add = sub.add_parser

    def add_parser(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser = add(name, parents=[common], **kwargs)
        parser.set_defaults(handler=name.replace("-", "_"))
        return parser

    sub.add_parser = add_parser  # type: ignore[method-assign]

    hp = sub.add_parser("help", help="list the commands, or tell one (help COMMAND)")
    hp.add_argument("topic", nargs="?", metavar="COMMAND")

    st = sub.add_parser("status", help='print the "=== Cloth Simulation ===" block')
    st.add_argument("--scene", help="only this scene's instances")
    sub.add_parser("ping", help="check that clothd answers; prints the round trip")
    sub.add_parser("stats", help="the server's counters: connections, instances, steps, errors")

    w = sub.add_parser("wind", help="show or set the global wind (or an instance's)")
    w.add_argument("xyz", nargs="*", type=float, metavar="X Y Z")
    w.add_argument("--instance", type=int, help="set this instance's own wind instead")

    d = sub.add_parser("debug", help="show or set the viewers' debug overlay")
    d.add_argument("state", nargs="?", choices=["on", "off"])

    sub.add_parser("scenes", help="every scene, with its instance count")
    sc = sub.add_parser("scene", help="one scene: its instances, whether a connection holds it",
                        description="Shows one scene: its instances and whether a connection holds it. "
                                    "In a session, --hold ties the scene to this session's connection "
                                    "(every instance of it, later ones too, is destroyed when the "
                                    "session ends) and --release lets go of it.")
    sc.add_argument("name", metavar="NAME", help="the scene (it need not exist)")
    hold = sc.add_mutually_exclusive_group()
    hold.add_argument("--hold", action="store_true",
                      help="tie the scene to this session (its instances go when it ends)")
    hold.add_argument("--release", action="store_true", help="let go of a scene this session holds")

    c = sub.add_parser("create", help="create a cloth (or a soft body)")
    c.add_argument("--type", default="cloth", choices=["cloth", "softbody"])
    c.add_argument("--scene", help='the scene it belongs to (default "default")')
    c.add_argument("--ephemeral", action="store_true",
                   help="destroyed when this session ends (in a session only)")
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

    st = sub.add_parser("set", help="change options of a live instance: set INSTANCE name=value ...",
                        description="Changes options of a live instance, each name=value (any create "
                                    "option but the layout, and the painted properties): "
                                    "stiffness=0.8, windModel=aero, gravity=0,-9.81,0 (or [0,-9.81,0]), "
                                    "maxDistance=null (unpainted). Values are JSON, a list of numbers, "
                                    "or else a string; names in camelCase or snake_case. A name the "
                                    "server does not read is named on stderr.")
    st.add_argument("instance", type=int)
    st.add_argument("pairs", nargs="+", metavar="name=value")

    ac = sub.add_parser("add-collider", aliases=["addCollider"],
                        help="add a sphere, capsule, plane, taperedCapsule or box to an instance",
                        description="Adds a collider; TYPE is sphere, capsule, plane, taperedCapsule "
                                    "or box (the server lists its types when given another). Prints "
                                    "the collider's id.")
    ac.add_argument("instance", type=int)
    ac.add_argument("type", metavar="TYPE")
    ac.add_argument("--position", type=float, nargs=3, metavar=("X", "Y", "Z"),
                    help="centre (a plane: a point on it)")
    ac.add_argument("--normal", type=float, nargs=3, metavar=("X", "Y", "Z"),
                    help="a plane's normal, a capsule's axis")
    ac.add_argument("--rotation", type=float, nargs=4, metavar=("X", "Y", "Z", "W"),
                    help="a box's orientation (a unit quaternion)")
    ac.add_argument("--radius", type=float, help="sphere, capsule; a tapered capsule's -normal end")
    ac.add_argument("--radius2", type=float, help="a tapered capsule's radius at its +normal end")
    ac.add_argument("--height", type=float, help="a capsule's length with both caps")
    ac.add_argument("--half-extents", dest="half_extents", type=float, nargs=3, metavar=("X", "Y", "Z"),
                    help="a box's half size along its axes")
    ac.add_argument("--friction", type=float)
    ac.add_argument("--static-friction", dest="static_friction", type=float)
    ac.add_argument("--coupling", type=float, help="two-way coupling, 0..1")
    ac.add_argument("--attachment", help="a transform of the instance the collider follows")

    mc = sub.add_parser("move-collider", aliases=["moveCollider"], help="move or turn a collider")
    mc.add_argument("instance", type=int)
    mc.add_argument("collider", type=int)
    mc.add_argument("--position", type=float, nargs=3, metavar=("X", "Y", "Z"))
    mc.add_argument("--normal", type=float, nargs=3, metavar=("X", "Y", "Z"), help="not for a box")
    mc.add_argument("--rotation", type=float, nargs=4, metavar=("X", "Y", "Z", "W"), help="a box only")

    rc_ = sub.add_parser("remove-collider", aliases=["removeCollider"], help="remove a collider")
    rc_.add_argument("instance", type=int)
    rc_.add_argument("collider", type=int)

    rw = sub.add_parser("raw", help="send one JSON request as it is and print the reply line",
                        description="Sends LINE (one JSON object) as it is and prints the server's "
                                    "reply line as it comes: raw '{\"cmd\":\"hello\"}'. Exit 1 when "
                                    "the reply is an error.")
    rw.add_argument("line", metavar="JSON")

    x = sub.add_parser("destroy", help="destroy an instance, or every instance of a scene")
    x.add_argument("instance", type=int, nargs="?")
    x.add_argument("--scene", help="every instance of this scene (with INSTANCE: it must be in it)")

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
    s.add_argument("--scene", help="every instance of this scene (default: every instance)")
    s.add_argument("--budget-ms", type=float,
                   help="a soft time budget per step: the lowest priority steps coarser (0: none)")

    gt = sub.add_parser("get", help="an instance's state")
    gt.add_argument("instance", type=int)
    gt.add_argument("--scene", help="the scene the instance must be in")
    gt.add_argument("--positions", action="store_true", help="print every particle's position")

    sv = sub.add_parser("save", help="write a snapshot to the server's --data-dir")
    sv.add_argument("name", help="the snapshot's name (a trailing .cds is dropped)")
    sv.add_argument("--instance", type=int, action="append", help="only this instance (repeatable)")
    sv.add_argument("--scene", help="every instance of this scene (with --instance: each must be in it)")

    ld = sub.add_parser("load", help="load a snapshot from the server's --data-dir")
    ld.add_argument("name", help="the snapshot's name (a trailing .cds is dropped)")
    ld.add_argument("--replace", action="store_true", help="replace every instance (default: add)")

    rc = sub.add_parser("record", help="start (or --stop) a journal in the server's --data-dir")
    rc.add_argument("name", nargs="?", help="the journal's name (a trailing .cdj is dropped)")
    rc.add_argument("--instance", type=int, action="append", help="only this instance (repeatable)")
    rc.add_argument("--scene", help="every instance of this scene (with --instance: each must be in it)")
    rc.add_argument("--stop", action="store_true", help="end the journal being written")

    rp = sub.add_parser("replay", help="rebuild a journal's instances (under new ids) at a frame")
    rp.add_argument("name", help="the journal's name (a trailing .cdj is dropped)")
    rp.add_argument("--to", type=int, help="the frame to stop at (default: the whole journal)")

    wa = sub.add_parser("watch", help="print a line per frame received")
    wa.add_argument("instances", nargs="*", type=int, metavar="INSTANCE", help="default: every instance")
    wa.add_argument("--scene", help="every instance of this scene, later ones too (with INSTANCE: each "
                                    "must be in it)")
    wa.add_argument("--count", type=int, help="stop after N frames")
    wa.add_argument("--every", type=int, default=1, help="every k-th frame only (1..1000)")
    wa.add_argument("--quantize", action="store_true", help="ask for 16-bit frames")
    wa.add_argument("--shm", action="store_true",
                    help="frames through the server's shared memory (on clothd's host, as its user)")
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


def subcommands(parser: argparse.ArgumentParser) -> Dict[str, argparse.ArgumentParser]:
    """The table of commands: name (and alias) -> its parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def command_help(parser: argparse.ArgumentParser, topic: Optional[str]) -> str:
    """`help`: one line per command (from the table); `help COMMAND`: its
    usage and options."""
    table = subcommands(parser)
    if topic:
        if topic not in table:
            raise UsageError(f"help: no command {topic!r} (help lists them)")
        return table[topic].format_help().rstrip("\n")
    lines = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                lines.append(f"  {choice.dest:<16} {choice.help}")
    return ("Commands (help COMMAND tells one):\n" + "\n".join(lines) +
            "\n  quit             end the session (or Ctrl-D)")


def print_version(client: Client) -> int:
    """This console's version, then the server's when it answers (its
    hello, or status on a server before hello)."""
    print(f"clothctl {__version__}")
    try:
        client.connect()  # sends hello, and keeps the reply
        reply = client.server_info
        if reply is not None:
            proto = f", protocol {reply.get('protocol')}"
        else:
            reply, proto = client.status(), ""
        print(f"server: clothd {reply.get('version')} at {client.endpoint}{proto}")
    except (OSError, ClothdError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        print(f"server: not reachable ({detail})")
    finally:
        client.close()
    return EXIT_OK


def run_command(console: Console, parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Runs one parsed command; prints what went wrong; returns the exit code."""
    client = console.c
    try:
        _check_xyz(args)
        console.as_json = args.json
        getattr(console, args.handler)(args)
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
    except AnsweredError:
        return EXIT_SERVER_ERROR
    except ClothdError as e:
        print(f"clothctl: {e.code}: {e.message}", file=sys.stderr)
        return EXIT_SERVER_ERROR
    except (OSError, TimeoutError) as e:
        if str(e.strerror or "").startswith("cannot connect"):
            print(f"clothctl: {e.strerror}", file=sys.stderr)
        else:
            print(f"clothctl: connection to clothd at {client.endpoint} lost: {e}",
                  file=sys.stderr)
            client.close()  # the next command connects again
        return EXIT_CONNECT


def show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                 line: Optional[str] = None) -> None:
    """The server's warnings (unknown members) on stderr, one line each."""
    text = str(message)
    if issubclass(category, ClothdWarning):
        text = "warning: " + (text[len("clothd: "):] if text.startswith("clothd: ") else text)
    print(f"clothctl: {text}", file=sys.stderr, flush=True)


def history_file() -> str:
    return os.path.expanduser(os.environ.get(HISTORY_ENV) or HISTORY_FILE)


def interactive(console: Console, parser: argparse.ArgumentParser, base: argparse.Namespace,
                prompt: bool) -> int:
    """One command a line on one connection, until quit or end of input.
    With `prompt` (a terminal, or -i): the prompt names the server, and
    readline keeps the lines in the history file."""
    readline = None
    if prompt:
        try:
            import readline as _readline  # not on every platform
            readline = _readline
        except ImportError:
            pass
    path = history_file()
    if readline is not None:
        readline.set_history_length(HISTORY_LENGTH)
        try:
            readline.read_history_file(path)
        except OSError:
            pass  # none yet
        words = sorted(subcommands(parser)) + ["help", *QUIT_WORDS]

        def complete(text: str, state: int) -> Optional[str]:
            matches = [w for w in words if w.startswith(text)] if readline.get_begidx() == 0 else []
            return matches[state] if state < len(matches) else None

        readline.set_completer(complete)
        readline.parse_and_bind("tab: complete")
    console.session = True
    where = console.c.endpoint
    if prompt:
        print(f"clothctl {__version__} connected to {where}; help lists the commands, quit ends",
              flush=True)
    status = EXIT_OK
    try:
        while True:
            try:
                line = input(f"{where}> ") if prompt else sys.stdin.readline()
            except EOFError:
                if prompt:
                    print()
                break
            except KeyboardInterrupt:
                print("^C")
                continue
            if not prompt and line == "":
                break
            try:
                words = shlex.split(line, comments=True)
            except ValueError as e:
                print(f"clothctl: {e}", file=sys.stderr)
                status = EXIT_USAGE
                continue
            if not words:
                continue
            if words[0] in QUIT_WORDS:
                break
            try:
                args = parser.parse_args(words, namespace=argparse.Namespace(**vars(base)))
            except SystemExit:  # argparse said what was wrong
                status = EXIT_USAGE
                continue
            if args.handler is None:
                continue
            try:
                code = run_command(console, parser, args)
            except KeyboardInterrupt:  # a long watch or step
                print("^C")
                code = EXIT_OK
            status = code if code != EXIT_OK else status
    finally:
        if readline is not None:
            try:
                readline.write_history_file(path)
            except OSError as e:
                print(f"clothctl: history not saved to {path}: {e.strerror or e}", file=sys.stderr)
    return EXIT_OK if prompt else status


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
        # --token-file wins over $CLOTHD_TOKEN; "" sends no auth at all.
        token = read_token(args.token_file) if args.token_file else (os.environ.get(TOKEN_ENV) or "")
    except UsageError as e:
        parser.print_usage(sys.stderr)
        print(f"clothctl: {e}", file=sys.stderr)
        return EXIT_USAGE

    # --unix wins; $CLOTHD_UNIX only when no TCP address is given on the line.
    unix = args.unix
    if unix is None and args.host is None and args.port is None:
        unix = os.environ.get(UNIX_ENV) or None
    host = args.host or os.environ.get("CLOTHD_HOST") or DEFAULT_HOST
    try:
        client = Client(host, port, args.timeout, token=token, unix_socket=unix)
    except ValueError as e:  # a path too long for a Unix socket
        print(f"clothctl: {'--unix' if args.unix is not None else UNIX_ENV}: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.version:
        return print_version(client)
    warnings.showwarning = show_warning
    warnings.simplefilter("always", ClothdWarning)
    console = Console(client, args.json, parser)
    if args.handler == "help":  # needs no server
        return run_command(console, parser, args)
    try:
        try:
            client.connect()
        except OSError as e:
            print(f"clothctl: {e.strerror or e}", file=sys.stderr)
            return EXIT_CONNECT
        except Unauthorized as e:
            print(f"clothctl: {e.code}: {e.message}{unauthorized_hint(e, args, client)}", file=sys.stderr)
            return EXIT_SERVER_ERROR
        except ClothdError as e:
            print(f"clothctl: {e.code}: {e.message}", file=sys.stderr)
            return EXIT_SERVER_ERROR
        if args.handler is None or args.interactive:
            prompt = args.interactive or sys.stdin.isatty()
            return interactive(console, parser, args, prompt)
        return run_command(console, parser, args)
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
