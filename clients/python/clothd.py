"""clothd — the Python client of the clothd cloth-simulation server.

One module, standard library only; numpy is optional (``Frame.array`` and
``InstanceState.array`` need it). Install with ``pip install ./clients/python``
(works offline) or put ``clients/python`` on ``sys.path``.

The server speaks two kinds of message over one connection (TCP, or a
Unix-domain stream socket on the same host: ``Client(unix_socket=PATH)``
for a clothd started with ``--unix PATH``; the same bytes either way):

* JSON lines: requests go client -> server, replies come back in request
  order, each one JSON object terminated by ``'\\n'`` (always starting with
  ``'{'``); events (``{"event": ...}``) are JSON lines without ``"ok"``;
* binary frames: after ``subscribe`` the server streams the positions of the
  subscribed instances, each message a 40-byte little-endian header starting
  with byte ``0x89`` followed by ``3 * count`` float32 positions, or (flag
  bit 0, ``subscribe(..., quantize=True)``) a bounding box and ``3 * count``
  uint16 values; with ``subscribe(..., channels=[...])`` each particle's
  velocity (flag bit 1) and unit normal (flag bit 2) follow the positions;
  with ``subscribe(..., shm=True)`` (on clothd's host) a 56-byte reference
  (flag bit 3) to the frame in the server's shared-memory ring, which the
  client reads and hands out as the same Frame (``frames_missed`` counts
  the ones overwritten before they were read).

The reader tells them apart by their first byte. While a request waits for
its reply, frames that arrive meanwhile are kept in a bounded queue (the
newest are kept) which :meth:`Client.frames` drains first.

Example::

    from clothd import Client

    with Client() as c:
        # ephemeral: destroyed when this connection closes (nothing left behind)
        cloth = c.create_cloth(width=20, height=20, spacing=0.05, scene="demo", ephemeral=True)
        c.pin(cloth, list(range(20)))           # the top row, in place
        for _ in range(60):
            c.step(1 / 60, scene="demo")        # this scene only, not other clients'
        state = c.get(cloth)
        print(state.frame, state.positions[-1])

Every connection starts with ``hello``: ``client.server_info``,
``client.features`` and ``client.limits`` hold its reply;
``Client(require=["scenes"])`` refuses at connect a server that lacks a
feature, and a call that needs one the server lacks raises
:class:`FeatureMissing` (naming host:port, or unix:PATH, and the feature) before
anything is sent. A clothd from before ``hello`` serves the plain
protocol 1 commands with no feature known.

For a viewer, :class:`Subscriber` opens its own connection and receives
frames in a loop or on a background thread, reconnecting when the server
goes away for a moment.

Errors from the server raise :class:`ClothdError` with the wire's stable
``code`` (``invalid_argument``, ``not_found``, ...) and its ``message``;
each code has its subclass (:class:`NotFound`, :class:`InvalidArgument`,
... :class:`Unauthorized`), so ``except clothd.NotFound`` catches one
code and ``except clothd.ClothdError`` every one, as redis-py's
exceptions do. A connection that cannot be opened raises the
:class:`OSError` it got (``ConnectionRefusedError``, ...) with the
address in its message: ``cannot connect to clothd at 127.0.0.1:7878:
Connection refused`` (``... at unix:/run/clothd.sock: No such file or
directory`` for a Unix socket).

Warnings: a member the server does not read (a misspelt option, a field
newer than the server) is not refused; the reply names it in
``"warnings"``, which the client hands to :func:`warnings.warn` as a
:class:`ClothdWarning` (``warnings.simplefilter("error", ClothdWarning)``
makes them errors; ``Client(strict=True)`` asks the server to refuse such
requests instead, as ``InvalidArgument``). ``client.last_warnings`` holds
the last reply's.

Tokens: a server started with ``--token-file`` answers nothing but ``auth``
until a connection presents its token. ``Client(token=...)`` (or, when
``token`` is None, the environment variable ``CLOTHD_TOKEN``) sends
``{"cmd":"auth","token":...}`` first on every connection, reconnections
included, and keeps the granted access in ``client.access`` (``"full"`` or
``"readonly"``)::

    with Client("game-host", 7878, token=open("token").readline().strip()) as c:
        print(c.access, c.ping())

Names: every keyword argument is the PROTOCOL.md field in snake_case
(``bendStiffness`` -> ``bend_stiffness``, ``solverIterations`` ->
``solver_iterations``); :meth:`Client.request` turns snake_case into
camelCase for any command, so fields this module does not know yet can be
sent too.
"""

from __future__ import annotations

import collections
import json
import math
import mmap
import os
import select
import socket
import struct
import sys
import threading
import time as _time
import warnings as _warnings
from array import array
from dataclasses import dataclass, field
from functools import cached_property
from typing import (Any, Callable, Deque, Dict, FrozenSet, Iterator, List, Optional, Sequence,
                    Tuple, Union)

try:  # optional: Frame.array / InstanceState.array
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the environment
    _np = None

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Subscriber",
    "ClothdError",
    "ClothdWarning",
    "ParseError",
    "UnknownCommand",
    "InvalidArgument",
    "NotFound",
    "LimitExceeded",
    "LineTooLong",
    "InternalError",
    "Unauthorized",
    "ERROR_CLASSES",
    "ProtocolError",
    "ConnectionClosed",
    "Frame",
    "InstanceState",
    "decode_frame",
    "ERROR_CODES",
    "FRAME_MAGIC",
    "FRAME_HEADER",
    "FRAME_HEADER_SIZE",
    "FRAME_VERSION",
    "FRAME_FLAG_QUANTIZED",
    "FRAME_FLAG_SHARED",
    "SHM_REFERENCE_SIZE",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "TOKEN_ENV",
    "UNIX_PREFIX",
    "UNIX_PATH_MAX",
    "__version__",
    "Scene",
    "ShardedClient",
    "EndpointUnavailable",
    "IncompatibleServer",
    "FeatureMissing",
    "ShmUnavailable",
    "SCENE_COMMANDS",
    "parse_endpoint",
    "unix_endpoint_path",
    "rendezvous_weight",
    "place_scene",
]

Vec3 = Tuple[float, float, float]
VecLike = Sequence[float]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7878
#: The environment variable a Client takes its token from when given none.
TOKEN_ENV = "CLOTHD_TOKEN"
#: How an endpoint names a Unix-domain socket: ``"unix:/run/clothd.sock"``.
UNIX_PREFIX = "unix:"
#: The longest Unix socket path every client accepts (bytes): sun_path holds
#: 108 on Linux, one of them the terminating zero the C client keeps.
UNIX_PATH_MAX = 107


#: First four bytes of every frame.
FRAME_MAGIC = b"\x89CLF"
#: Frame format version this client understands.
FRAME_VERSION = 1
#: Flags bit 0: the payload is quantized (bounding box + uint16 per axis).
FRAME_FLAG_QUANTIZED = 0x0001
#: Flags bit 1: velocities follow the positions (channel "velocities").
FRAME_FLAG_VELOCITIES = 0x0002
#: Flags bit 2: unit normals follow (channel "normals"; octahedral when quantized).
FRAME_FLAG_NORMALS = 0x0004
#: Every flag a frame may carry.
FRAME_FLAGS_KNOWN = FRAME_FLAG_QUANTIZED | FRAME_FLAG_VELOCITIES | FRAME_FLAG_NORMALS
#: Flags bit 3: the message is a 56-byte reference to a frame in the
#: server's shared-memory ring (``subscribe(..., shm=True)``), never a frame.
FRAME_FLAG_SHARED = 0x0008
#: The length of a shared-memory reference: the frame's header, then its
#: position (u64), its length (u32) and a reserved u32.
SHM_REFERENCE_SIZE = 56
#: What subscribe's ``channels`` may name ("positions" is always sent).
CHANNELS = ("positions", "velocities", "normals")
#: magic, version, flags, total length, instance, frame, time, count, reserved.
FRAME_HEADER = struct.Struct("<4sHHIIQdII")
FRAME_HEADER_SIZE = FRAME_HEADER.size  # 40
assert FRAME_HEADER_SIZE == 40
#: A quantized payload starts with the bounding box: min x, y, z, max x, y, z.
_QUANT_BOX = struct.Struct("<6f")
_QUANT_STEPS = 65535.0

#: Default number of frames kept while waiting for a reply (newest kept).
DEFAULT_FRAME_BACKLOG = 1024

_RECV_CHUNK = 1 << 16


# ---- errors -----------------------------------------------------------------


class ClothdError(Exception):
    """An error reply from the server (``{"ok":false,"error":{...}}``).

    ``code`` is one of the wire's stable codes (:data:`ERROR_CODES`), and
    the exception raised is that code's subclass (:data:`ERROR_CLASSES`):
    ``parse_error`` :class:`ParseError`, ``unknown_command``
    :class:`UnknownCommand`, ``invalid_argument`` :class:`InvalidArgument`,
    ``not_found`` :class:`NotFound`, ``limit_exceeded``
    :class:`LimitExceeded`, ``line_too_long`` :class:`LineTooLong`,
    ``internal`` :class:`InternalError`, ``unauthorized``
    :class:`Unauthorized`; a code this client does not know (a newer
    server's) raises ClothdError itself.
    ``message`` names the offending field first (``"width: must be ..."``).
    ``reply`` is the whole decoded reply, when there was one.
    """

    #: The wire code of the subclass (None: any).
    code_name: Optional[str] = None

    def __init__(self, code: str, message: str, reply: Optional[Dict[str, Any]] = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reply = reply


# One subclass per stable code (PROTOCOL.md, Errors; solver/errors.h): the
# one list of them, which ERROR_CODES and ERROR_CLASSES are read from.


class ParseError(ClothdError):
    """``parse_error``: the line was not a JSON object (or broke strict input)."""
    code_name = "parse_error"


class UnknownCommand(ClothdError):
    """``unknown_command``: ``cmd`` names no command of this server."""
    code_name = "unknown_command"


class InvalidArgument(ClothdError):
    """``invalid_argument``: a field is missing, of the wrong type, out of
    range, not one of its names; on a strict connection, an unknown member."""
    code_name = "invalid_argument"


class NotFound(ClothdError):
    """``not_found``: no such instance, collider or transform."""
    code_name = "not_found"


class LimitExceeded(ClothdError):
    """``limit_exceeded``: a configured limit (particles, instances, step
    work, colliders, list entries, connections)."""
    code_name = "limit_exceeded"


class LineTooLong(ClothdError):
    """``line_too_long``: a request over ``--max-line``; the server closes."""
    code_name = "line_too_long"


class InternalError(ClothdError):
    """``internal``: out of memory or a file the server could not write;
    the request had no effect."""
    code_name = "internal"


class Unauthorized(ClothdError):
    """The server refused for want of access (code ``unauthorized``): a
    wrong or missing token (``"token: wrong token"``, ``"token:
    required"``), a command before ``auth`` (``'cmd: "status" needs auth
    first'``) or a command beyond the read-only token (``'cmd: "wind" is
    not allowed with the read-only token'``). A subclass of
    :class:`ClothdError`, so code that catches that still catches this.
    """
    code_name = "unauthorized"


#: The wire's stable error codes (PROTOCOL.md, Errors) -> their exception.
ERROR_CLASSES: Dict[str, type] = {cls.code_name: cls for cls in (
    ParseError, UnknownCommand, InvalidArgument, NotFound, LimitExceeded, LineTooLong,
    InternalError, Unauthorized)}
#: The wire's stable error codes, in PROTOCOL.md's order.
ERROR_CODES = tuple(ERROR_CLASSES)


def _error(code: str, message: str, reply: Optional[Dict[str, Any]] = None) -> ClothdError:
    """The exception for an error reply: its code's class, or
    :class:`ClothdError` for a code this client does not know."""
    cls = ERROR_CLASSES.get(code, ClothdError)
    return cls(code, message, reply)


class ClothdWarning(UserWarning):
    """A reply's warning: a member the server did not read (PROTOCOL.md,
    "Unknown members"), such as ``unknown member "widht" (did you mean
    "width"?)``. Issued with :func:`warnings.warn`."""


class IncompatibleServer(ClothdError):
    """A server that lacks what the client needs: one whose ``hello``
    does not list a feature the client requires (:class:`FeatureMissing`),
    such as a :class:`ShardedClient`'s endpoint without scenes (a clothd
    from before scenes would take ``"scene"`` as an unknown member, warn,
    and mix every scene's instances). ``endpoint`` names it
    (``"host:port"`` or ``"unix:PATH"``). Code ``"incompatible_server"``, which the server
    never sends: the client raises it before sending anything."""

    code_name = "incompatible_server"

    def __init__(self, endpoint: str, message: str):
        super().__init__("incompatible_server", f"clothd endpoint {endpoint}: {message}")
        self.endpoint = endpoint


#: The features a server lists only when started with --data-dir.
_DATA_DIR_FEATURES = ("snapshots", "recording")


class FeatureMissing(IncompatibleServer):
    """The server's ``hello`` does not list a feature (PROTOCOL.md
    "hello"): raised by :meth:`Client.connect` for a feature given in
    ``require=``, and before sending a request that needs one (``scene()``
    and requests with a ``scene`` need ``"scenes"``, ``create_softbody``
    ``"softbody"``, ``save``/``load`` of files ``"snapshots"``, ...).
    ``features`` names the missing ones, ``endpoint`` the server,
    ``needed_by`` what needed them. A server without ``hello`` (a clothd
    from before the handshake) has no feature known: only protocol 1's
    first commands are sent to it."""

    def __init__(self, endpoint: str, features: Sequence[str], needed_by: str,
                 listed: Optional[Sequence[str]]):
        names = ", ".join(f'"{f}"' for f in features)
        plural = "s" if len(features) > 1 else ""
        hint = ("; clothd lists it only when started with --data-dir"
                if any(f in _DATA_DIR_FEATURES for f in features) else "")
        if listed is None:
            known = "; it answers no hello (a clothd from before the handshake), so no feature is known"
        else:
            known = f"; its hello lists {', '.join(listed) or 'none'}"
        super().__init__(endpoint, f"lacks the feature{plural} {names} ({needed_by}{hint}){known}")
        self.features = tuple(features)
        self.needed_by = needed_by


class ShmUnavailable(ClothdError):
    """``subscribe(..., shm=True)`` was granted, but this process cannot
    map the ring the reply names: it is not on clothd's host, runs as
    another user, or does not see clothd's ``/dev/shm`` (the systemd unit's
    private ``/dev``). ``path`` is the object's path, ``__cause__`` the
    OSError. The server has subscribed: until a ``subscribe`` without
    ``shm`` replaces the subscription, its frames are not delivered
    (counted in ``Client.frames_missed``). Code ``"shm_unavailable"``,
    which the server never sends."""

    code_name = "shm_unavailable"

    def __init__(self, endpoint: str, name: str, cause: OSError):
        self.path = "/dev/shm" + name
        self.endpoint = endpoint
        super().__init__("shm_unavailable", f"{cause.strerror or cause} (clothd at {endpoint})")


def _features_needed(cmd: str, msg: Dict[str, Any]) -> List[Tuple[str, str]]:
    """The features (hello's ``features``) a request needs beyond protocol
    1's first commands, each with what needs it: the one table of them."""
    out: List[Tuple[str, str]] = []
    if cmd in ("scene", "scenes"):
        out.append(("scenes", f"needed by the {cmd} command"))
    elif "scene" in msg:
        out.append(("scenes", f'needed by {cmd} with "scene"'))
    if msg.get("ephemeral") is True or (cmd == "scene" and msg.get("ephemeral") is not None):
        out.append(("ephemeral", f'needed by {cmd} with "ephemeral"'))
    if cmd == "create" and msg.get("type") == "softbody":
        out.append(("softbody", 'needed by create with "type":"softbody"'))
    elif cmd == "create" and ("vertices" in msg or "triangles" in msg):
        out.append(("mesh", "needed by create of a mesh cloth"))
    if cmd == "skin":
        out.append(("skin", "needed by skin"))
    if ((cmd == "step" and msg.get("budgetMs") is not None)
            or (cmd in ("create", "set") and ("lod" in msg or "priority" in msg))):
        out.append(("budget", f'needed by {cmd} with "budgetMs", "lod" or "priority"'))
    if cmd in ("save", "load") and not msg.get("memory"):
        out.append(("snapshots", f"needed by {cmd} of a snapshot file"))
    if cmd in ("record", "replay", "journals"):
        out.append(("recording", f"needed by the {cmd} command"))
    if cmd == "subscribe" and msg.get("shm") is True:
        out.append(("shm", 'needed by subscribe with "shm"'))
    return out


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _check_unix_path(path: str) -> str:
    """``path`` when it can name a Unix socket, else ValueError/TypeError
    naming ``unix_socket`` (a longer path would not fit in sun_path)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"unix_socket: expected a path, got {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError("unix_socket: expected a str path, not bytes")
    size = len(path.encode())
    if size == 0 or "\0" in path:
        raise ValueError(f"unix_socket: {path!r} is not a path (empty, or holds a zero byte)")
    if size > UNIX_PATH_MAX:
        raise ValueError(f"unix_socket: the path is {size} bytes; a Unix socket path holds at most "
                         f"{UNIX_PATH_MAX} (sun_path): {path[:60]!r}...")
    return path


def _connect_error(e: OSError, endpoint: str) -> OSError:
    """The same kind of error (ConnectionRefusedError, TimeoutError, ...)
    with the address (``host:port`` or ``unix:PATH``) in its message."""
    what = e.strerror or str(e) or type(e).__name__
    message = f"cannot connect to clothd at {endpoint}: {what}"
    try:
        err = type(e)(e.errno, message) if e.errno is not None else type(e)(message)
    except TypeError:  # an OSError subclass with another constructor
        err = OSError(e.errno, message)
    return err


def _warn(texts: List[str]) -> None:
    """warnings.warn each text, attributed to the first caller outside this
    module (the user's line that made the request)."""
    frame = sys._getframe(1)
    level = 2
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    for text in texts:
        _warnings.warn(f"clothd: {text}", ClothdWarning, stacklevel=level)


class ProtocolError(ClothdError):
    """The byte stream broke the wire contract (client-side check)."""

    def __init__(self, message: str):
        super().__init__("protocol_error", message)


class ConnectionClosed(ConnectionError):
    """The server closed the connection (or it broke).

    ``reconnected`` is true when a client with ``reconnect=True`` has
    already connected again (and re-subscribed): the request that was in
    flight may or may not have run on the server, and it was not resent;
    the next call works on the new connection.
    """

    def __init__(self, message: str = "clothd closed the connection", *, reconnected: bool = False):
        super().__init__(message)
        self.reconnected = reconnected


def _need_numpy(what: str) -> Any:
    if _np is None:
        raise ImportError(f"{what} needs numpy, which is not installed (pip install numpy, or "
                          f"install this package with the [numpy] extra); .flat and .positions "
                          f"work without it")
    return _np


# ---- frames -----------------------------------------------------------------


@dataclass(eq=False)
class Frame:
    """One decoded binary frame: the state of one instance after a step.

    The same API for plain and quantized frames:

    * ``flat``: the ``3 * count`` coordinates (x0, y0, z0, x1, ...) as an
      ``array('f')`` (float32; for a quantized frame, the decoded values);
    * ``positions``: the same as a list of (x, y, z) tuples;
    * ``array``: an (N, 3) float32 numpy array; for a plain frame a
      read-only view on ``payload`` without a copy (needs numpy).

    With the channels (``subscribe(..., channels=["velocities",
    "normals"])``), ``velocities_flat``/``velocities``/``velocity_array``
    and ``normals_flat``/``normals``/``normal_array`` give them the same
    way (None when the frame does not carry them; ``has_velocities`` and
    ``has_normals`` tell). Normals are unit, or (0, 0, 0) for a particle
    that no triangle touches; quantized ones come back within 0.005
    degrees.

    ``payload`` is the raw bytes after the 40-byte header, as sent
    (little-endian float32, or for a quantized frame the bounding box and
    uint16 values; then the channels). ``quantized`` tells which;
    ``bbox_min``/``bbox_max`` hold a quantized frame's bounding box (None
    for a plain one), ``velocity_min``/``velocity_max`` its velocities'.
    Frames compare equal when their header fields and payload do.
    """

    instance: int
    frame: int
    time: float
    count: int
    payload: bytes = field(repr=False)
    version: int = FRAME_VERSION
    flags: int = 0
    bbox_min: Optional[Vec3] = None
    bbox_max: Optional[Vec3] = None
    velocity_min: Optional[Vec3] = None
    velocity_max: Optional[Vec3] = None

    @property
    def quantized(self) -> bool:
        """True for a quantized frame (flags bit 0)."""
        return bool(self.flags & FRAME_FLAG_QUANTIZED)

    @property
    def has_velocities(self) -> bool:
        """True when the frame carries velocities (flags bit 1)."""
        return bool(self.flags & FRAME_FLAG_VELOCITIES)

    @property
    def has_normals(self) -> bool:
        """True when the frame carries normals (flags bit 2)."""
        return bool(self.flags & FRAME_FLAG_NORMALS)

    def _section(self, which: str) -> bytes:
        """The payload bytes of "positions", "velocities" or "normals"."""
        start, end = _sections(self.flags, self.count)[which]
        return self.payload[start:end]

    @cached_property
    def velocities_flat(self) -> Optional[array]:
        """The velocities (m/s) as float32 ``array('f')``, or None."""
        if not self.has_velocities:
            return None
        return _decode_xyz(self._section("velocities"), self.quantized)

    @cached_property
    def velocities(self) -> Optional[List[Vec3]]:
        """The velocities as (x, y, z) tuples, or None."""
        f = self.velocities_flat
        return None if f is None else [(f[i], f[i + 1], f[i + 2]) for i in range(0, len(f), 3)]

    @cached_property
    def normals_flat(self) -> Optional[array]:
        """The unit normals as float32 ``array('f')``, or None."""
        if not self.has_normals:
            return None
        data = self._section("normals")
        if not self.quantized:
            return _decode_xyz(data, False)
        q = array("H")
        q.frombytes(data)
        if sys.byteorder != "little":
            q.byteswap()
        out = array("f")
        for i in range(0, len(q), 2):
            out.extend(octahedral_decode(q[i], q[i + 1]))
        return out

    @cached_property
    def normals(self) -> Optional[List[Vec3]]:
        """The normals as (x, y, z) tuples, or None."""
        f = self.normals_flat
        return None if f is None else [(f[i], f[i + 1], f[i + 2]) for i in range(0, len(f), 3)]

    @cached_property
    def velocity_array(self) -> Any:
        """The velocities as an (N, 3) float32 numpy array, or None."""
        np = _need_numpy("Frame.velocity_array")
        f = self.velocities_flat
        return None if f is None else np.array(f, dtype=np.float32).reshape(-1, 3)

    @cached_property
    def normal_array(self) -> Any:
        """The normals as an (N, 3) float32 numpy array, or None."""
        np = _need_numpy("Frame.normal_array")
        f = self.normals_flat
        return None if f is None else np.array(f, dtype=np.float32).reshape(-1, 3)

    @property
    def size(self) -> int:
        """The frame's size on the wire in bytes, header included."""
        return FRAME_HEADER_SIZE + len(self.payload)

    @cached_property
    def flat(self) -> array:
        """The coordinates as float32 ``array('f')`` (computed once)."""
        return _decode_xyz(self._section("positions"), self.quantized)

    @cached_property
    def positions(self) -> List[Vec3]:
        """The positions as a list of (x, y, z) tuples (computed once)."""
        f = self.flat
        return [(f[i], f[i + 1], f[i + 2]) for i in range(0, len(f), 3)]

    @cached_property
    def array(self) -> Any:
        """The positions as an (N, 3) float32 numpy array.

        A plain frame gives a read-only view on ``payload`` (no copy); a
        quantized one is decoded in float64 and rounded to float32, as
        PROTOCOL.md says. Raises ImportError when numpy is missing.
        """
        np = _need_numpy("Frame.array")
        if not self.quantized:
            return np.frombuffer(self.payload, dtype="<f4", count=3 * self.count).reshape(self.count, 3)
        q = np.frombuffer(self.payload, dtype="<u2", offset=_QUANT_BOX.size,
                          count=3 * self.count).reshape(self.count, 3)
        lo = np.array(self.bbox_min, dtype=np.float64)
        span = np.array(self.bbox_max, dtype=np.float64) - lo
        out = (lo + (q / _QUANT_STEPS) * span).astype(np.float32)
        out.flags.writeable = False
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frame):
            return NotImplemented
        return (self.instance, self.frame, self.time, self.count, self.flags, self.payload) == \
            (other.instance, other.frame, other.time, other.count, other.flags, other.payload)

    __hash__ = None  # type: ignore[assignment]


def _sections(flags: int, count: int) -> Dict[str, Tuple[int, int]]:
    """Where each part of the payload lies (offsets after the header):
    positions, then velocities (bit 1), then normals (bit 2)."""
    quantized = bool(flags & FRAME_FLAG_QUANTIZED)
    xyz = _QUANT_BOX.size + 6 * count if quantized else 12 * count
    out = {"positions": (0, xyz)}
    at = xyz
    if flags & FRAME_FLAG_VELOCITIES:
        out["velocities"] = (at, at + xyz)
        at += xyz
    if flags & FRAME_FLAG_NORMALS:
        n = (4 if quantized else 12) * count
        out["normals"] = (at, at + n)
        at += n
    out["end"] = (at, at)
    return out


def _expected_length(flags: int, count: int) -> int:
    return FRAME_HEADER_SIZE + _sections(flags, count)["end"][0]


def _decode_xyz(data: bytes, quantized: bool) -> array:
    """float32 x, y, z triplets, or a box and uint16 triplets (PROTOCOL.md:
    v = min + (q / 65535) * (max - min), in float64, rounded to float32)."""
    if not quantized:
        out = array("f")
        out.frombytes(data)
        if sys.byteorder != "little":
            out.byteswap()
        return out
    box = _QUANT_BOX.unpack_from(data, 0)
    q = array("H")
    q.frombytes(data[_QUANT_BOX.size:])
    if sys.byteorder != "little":
        q.byteswap()
    values = [0.0] * len(q)
    for k in range(3):
        lo = box[k]
        span = box[3 + k] - lo
        values[k::3] = [lo + (v / _QUANT_STEPS) * span for v in q[k::3]]
    return array("f", values)  # rounded to float32


def octahedral_decode(u: int, v: int) -> Vec3:
    """A quantized normal (two uint16, octahedral) as a unit (x, y, z) in
    float64, as PROTOCOL.md says; (0, 0) is no normal: (0, 0, 0)."""
    if u == 0 and v == 0:
        return (0.0, 0.0, 0.0)
    x = u / _QUANT_STEPS * 2.0 - 1.0
    y = v / _QUANT_STEPS * 2.0 - 1.0
    z = 1.0 - abs(x) - abs(y)
    if z < 0:
        x, y = (1.0 - abs(y)) * (1.0 if x >= 0 else -1.0), (1.0 - abs(x)) * (1.0 if y >= 0 else -1.0)
    length = math.sqrt(x * x + y * y + z * z)
    return (x / length, y / length, z / length)


def decode_frame(buf: Union[bytes, bytearray, memoryview]) -> Frame:
    """Decodes one complete frame (header + payload), plain or quantized.

    Raises :class:`ProtocolError` when the magic, the version, the flags
    (bits 0-2 are known) or the length is wrong (the header's total length
    must equal ``len(buf)`` and what the flags imply: ``40 + 12 * count``,
    ``64 + 6 * count`` for a quantized frame, plus each channel's part).
    A shared-memory reference (flags bit 3) is not a frame: only a
    :class:`Client` that subscribed with ``shm=True`` can resolve it (it
    holds the ring), so it raises ProtocolError here too.
    """
    if len(buf) < FRAME_HEADER_SIZE:
        raise ProtocolError(f"frame: {len(buf)} bytes is shorter than the {FRAME_HEADER_SIZE}-byte header")
    magic, version, flags, length, instance, frame, time, count, _reserved = FRAME_HEADER.unpack_from(buf, 0)
    if magic != FRAME_MAGIC:
        raise ProtocolError(f"frame: bad magic {magic!r}")
    if version != FRAME_VERSION:
        raise ProtocolError(f"frame: unsupported version {version}")
    if flags & FRAME_FLAG_SHARED:
        raise ProtocolError(f"frame: a shared-memory reference (flags bit 3) to frame {frame} of instance "
                            f"{instance}, not a frame: the frame is in the server's ring, which a Client "
                            f"subscribed with shm=True reads")
    if flags & ~FRAME_FLAGS_KNOWN:
        raise ProtocolError(f"frame: unknown flags 0x{flags & ~FRAME_FLAGS_KNOWN:04x}")
    if length != len(buf):
        raise ProtocolError(f"frame: header says {length} bytes, got {len(buf)}")
    if length != _expected_length(flags, count):
        raise ProtocolError(f"frame: length {length} does not match {count} particles")
    payload = bytes(buf[FRAME_HEADER_SIZE:])
    bbox_min = bbox_max = velocity_min = velocity_max = None
    if flags & FRAME_FLAG_QUANTIZED:
        box = _QUANT_BOX.unpack_from(payload, 0)
        bbox_min, bbox_max = box[:3], box[3:]
        if flags & FRAME_FLAG_VELOCITIES:
            box = _QUANT_BOX.unpack_from(payload, _sections(flags, count)["velocities"][0])
            velocity_min, velocity_max = box[:3], box[3:]
    return Frame(instance=instance, frame=frame, time=time, count=count, payload=payload,
                 version=version, flags=flags, bbox_min=bbox_min, bbox_max=bbox_max,
                 velocity_min=velocity_min, velocity_max=velocity_max)


# ---- shared-memory frames -----------------------------------------------------
#
# subscribe(shm=True) (PROTOCOL.md, "Shared-memory frames"): the server puts
# each frame once into one ring per server, a POSIX shared-memory object,
# and the socket carries 56-byte references to it. The client maps the ring
# read-only (never through multiprocessing.shared_memory, whose resource
# tracker would unlink the server's object when this process ends), copies
# each referenced frame out and keeps it only when the server's "claimed"
# counter shows that nothing overwrote it during the copy.

#: The ring's header: magic, version, data offset, data size, claimed,
#: published, the server's pid.
_SHM_HEADER = struct.Struct("<4sIQQQQI")
_SHM_MAGIC = b"CLSM"
_SHM_VERSION = 1
_SHM_DATA = 4096
_SHM_CLAIMED = 24
_SHM_PUBLISHED = 32
# The counters are native u64s written atomically; "Q" without a byte-order
# prefix reads one with a single aligned 8-byte load (a "<Q" is read a byte
# at a time and could mix two values).
_SHM_COUNTER = struct.Struct("Q")
#: A reference after its 40-byte header: the frame's position and length.
_SHM_REFERENCE = struct.Struct("<QII")
# Between the copy and the read of "claimed" the reader needs an acquire
# fence, which Python lacks. A lock's acquire and release are atomic
# read-modify-writes with acquire and release order (CPython builds its
# locks on them), so a round trip keeps the copy's loads ahead of the read
# of "claimed" on CPUs that reorder loads; x86-64 keeps them in order anyway.
_FENCE = threading.Lock()


def _acquire_fence() -> None:
    with _FENCE:
        pass


class _Ring:
    """The server's shared-memory ring, mapped read-only (one per
    connection: a server has one ring)."""

    def __init__(self, name: Any, size: Any):
        if (not isinstance(name, str) or not name.startswith("/") or "/" in name[1:]
                or not isinstance(size, int) or isinstance(size, bool) or size <= 0):
            raise ProtocolError(f"subscribe: the reply's shm names no ring: {name!r}, size {size!r}")
        self.name: str = name
        self.size: int = size
        self.path = "/dev/shm" + name
        prot = getattr(mmap, "PROT_READ", None)
        if prot is None:
            raise OSError(f"shm: this Python has no mmap PROT_READ ({sys.platform}): no shared-memory frames")
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as e:
            raise type(e)(e.errno, f"shm: cannot open the server's ring {self.path}: {e.strerror} (a "
                                   f"shared-memory subscriber runs on clothd's host as clothd's user, "
                                   f"and sees its /dev/shm)") from None
        try:
            self.map = mmap.mmap(fd, 0, prot=prot)
        finally:
            os.close(fd)
        try:
            self._check()
        except BaseException:
            self.map.close()
            raise

    def _check(self) -> None:
        if len(self.map) < _SHM_HEADER.size:
            raise ProtocolError(f"shm: {self.path} is {len(self.map)} bytes, shorter than the ring's header")
        magic, version, data, size, _, _, _ = _SHM_HEADER.unpack_from(self.map, 0)
        if magic != _SHM_MAGIC or version != _SHM_VERSION or data != _SHM_DATA:
            raise ProtocolError(f"shm: {self.path} is not a version {_SHM_VERSION} ring (magic {magic!r}, "
                                f"version {version}, data at {data})")
        if size != self.size or size == 0 or len(self.map) < _SHM_DATA + size:
            raise ProtocolError(f"shm: {self.path} holds {size} bytes of data in {len(self.map)} bytes; "
                                f"the subscribe reply said {self.size}")

    def resolve(self, ref: bytes) -> Optional[bytes]:
        """The frame a reference names, copied out of the ring, or None
        when the server overwrote it before the copy was done (missed).
        Raises ProtocolError for a reference that names no frame."""
        position, length, reserved = _SHM_REFERENCE.unpack_from(ref, FRAME_HEADER_SIZE)
        flags, _, _, _, _, count = struct.unpack_from("<HIIQdI", ref, 6)
        flags &= ~FRAME_FLAG_SHARED
        if reserved != 0 or flags & ~FRAME_FLAGS_KNOWN or length != _expected_length(flags, count):
            raise ProtocolError(f"frame: a shared-memory reference to {length} bytes (reserved {reserved}) "
                                f"does not match {count} particles with flags 0x{flags:04x}")
        start = position % self.size
        if start + length > self.size:
            raise ProtocolError(f"frame: a shared-memory reference to {length} bytes at {start} crosses "
                                f"the end of the {self.size}-byte ring")
        if _SHM_COUNTER.unpack_from(self.map, _SHM_PUBLISHED)[0] < position + length:
            raise ProtocolError(f"frame: a shared-memory reference to bytes {position}..{position + length} "
                                f"that the ring has not published")
        frame = self.map[_SHM_DATA + start:_SHM_DATA + start + length]
        _acquire_fence()
        claimed = _SHM_COUNTER.unpack_from(self.map, _SHM_CLAIMED)[0]
        if claimed > position + self.size:
            return None
        if (frame[12:FRAME_HEADER_SIZE] != ref[12:FRAME_HEADER_SIZE]
                or struct.unpack_from("<HI", frame, 6) != (flags, length)):
            raise ProtocolError(f"frame: the ring's frame at {position} is not the one its reference names")
        return frame

    def close(self) -> None:
        self.map.close()


# ---- get ----------------------------------------------------------------------


def _triplets(raw: Optional[List[float]]) -> Optional[List[Vec3]]:
    if raw is None:
        return None
    return [(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, len(raw) - 2, 3)]


@dataclass
class InstanceState:
    """The reply of ``get``: one instance's full state (``type`` "cloth" or
    "softbody"; a soft body's ``width`` is its particle count, ``height`` 1).

    ``positions`` are (x, y, z) tuples of the server's float32 values (as
    printed with 9 digits); ``flat`` the same as ``array('f')``;
    ``colliders`` the reply's collider list (dicts with ``collider``,
    ``type``, ``position``, ``normal``, ``radius``, ``height``).
    """

    instance: int
    type: str
    width: int
    height: int
    frame: int
    time: float
    enabled: bool
    unstable: bool
    positions: List[Vec3]
    pinned: List[int]
    colliders: List[Dict[str, Any]]
    flat: array = field(repr=False)
    reply: Dict[str, Any] = field(repr=False)

    @property
    def count(self) -> int:
        """Number of particles."""
        return len(self.flat) // 3

    @property
    def scene(self) -> str:
        """The scene it belongs to ("default" when created without one)."""
        return str(self.reply.get("scene", "default"))

    @property
    def ephemeral(self) -> bool:
        """True when it goes with a connection: created ``ephemeral`` or in
        a scene some connection holds."""
        return bool(self.reply.get("ephemeral", False))

    @property
    def sleeping(self) -> bool:
        """True while the instance sleeps (at rest: steps move nothing)."""
        return bool(self.reply.get("sleeping", False))

    @property
    def wind(self) -> Optional[List[float]]:
        """The instance's own wind (the global wind comes on top)."""
        return self.reply.get("wind")

    @property
    def gravity(self) -> Optional[List[float]]:
        """The instance's gravity."""
        return self.reply.get("gravity")

    @property
    def wind_model(self) -> Optional[str]:
        """"aero" (wind is an air velocity, a flat plate), "constant" (an
        acceleration) or "dragLift" (an air velocity, drag and lift)."""
        return self.reply.get("windModel")

    @property
    def lod(self) -> int:
        """Its own level of detail (the ``lod`` option)."""
        return int(self.reply.get("lod", 0))

    @property
    def current_lod(self) -> int:
        """The level of detail its last step ran at (its own before the
        first step)."""
        return int(self.reply.get("currentLod", self.lod))

    @property
    def degraded(self) -> bool:
        """True when that level was a step budget's lowering (or the way
        back from it, one level a step), not its own ``lod``."""
        return bool(self.reply.get("degraded", False))

    @property
    def priority(self) -> float:
        """Its ``priority`` option: a budget lowers the lowest first."""
        return float(self.reply.get("priority", 0))

    @property
    def velocities(self) -> Optional[List[Vec3]]:
        """Each particle's velocity (m/s, over the last substep; zero before
        the first step and while asleep) as (x, y, z) tuples, when ``get``
        asked for them (``velocities=True``); None otherwise."""
        return _triplets(self.reply.get("velocities"))

    @property
    def normals(self) -> Optional[List[Vec3]]:
        """Each particle's unit normal (area-weighted over the topology's
        triangles; cloth: the side of down x right, soft body: outwards;
        (0, 0, 0) for a particle no triangle touches), when ``get`` asked for
        them (``normals=True``); None otherwise."""
        return _triplets(self.reply.get("normals"))

    @property
    def self_collision(self) -> Optional[Dict[str, int]]:
        """While selfDistance > 0: ``searches``, ``pairs`` and ``overflows``
        since creation (see PROTOCOL.md, ``get``); None otherwise."""
        return self.reply.get("selfCollision")

    @property
    def array(self) -> Any:
        """The positions as an (N, 3) float32 numpy array: a view on
        ``flat`` without a copy. Raises ImportError without numpy."""
        np = _need_numpy("InstanceState.array")
        return np.frombuffer(self.flat, dtype=np.float32).reshape(-1, 3)

    @classmethod
    def from_reply(cls, reply: Dict[str, Any]) -> "InstanceState":
        """Builds the state from a decoded ``get`` reply."""
        raw = reply.get("positions") or []
        flat = array("f", (float(v) for v in raw if v is not None))
        positions = [(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, len(raw) - 2, 3)]
        return cls(
            instance=reply.get("instance"),
            type=reply.get("type"),
            width=reply.get("width"),
            height=reply.get("height"),
            frame=reply.get("frame"),
            time=reply.get("time"),
            enabled=reply.get("enabled"),
            unstable=reply.get("unstable"),
            positions=positions,
            pinned=list(reply.get("pinned") or []),
            colliders=list(reply.get("colliders") or []),
            flat=flat,
            reply=reply,
        )


# ---- client -------------------------------------------------------------------


def _camel(name: str) -> str:
    """snake_case -> camelCase (``bend_stiffness`` -> ``bendStiffness``)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _parse_int(text: str) -> Union[int, float]:
    # "-0" is how the server prints a float32 negative zero; keep its sign.
    return -0.0 if text == "-0" else int(text)


def _loads(line: bytes) -> Any:
    return json.loads(line, parse_int=_parse_int)


def _flat_floats(points: Any) -> List[float]:
    """x, y, z of every point, from vec3s, a flat sequence or a numpy array."""
    if hasattr(points, "ravel"):
        return [float(x) for x in points.ravel().tolist()]
    seq = list(points)
    if seq and not isinstance(seq[0], (int, float)):
        return [float(c) for p in seq for c in p]
    return [float(x) for x in seq]

def _vec(v: Optional[VecLike]) -> Optional[List[float]]:
    return None if v is None else [float(x) for x in v]


def _ids(v: Optional[Sequence[int]]) -> Optional[List[int]]:
    return None if v is None else [int(x) for x in v]


Message = Union[Dict[str, Any], Frame]

# The subscription key of "every instance".
_ALL = None


class Client:
    """A connection to one clothd server (not thread-safe: one thread per
    client; use a :class:`Subscriber` for frames on another thread).

    ``host``/``port``: the server's TCP address. ``unix_socket``: the
    path of its Unix-domain socket (``clothd --unix PATH``) instead, for a
    client on the same host: the same protocol with less CPU per byte than
    TCP loopback; when given, host and port are not used. Errors and
    :attr:`endpoint` then name ``unix:PATH``.

    ``timeout`` bounds every blocking socket operation (seconds; ``None``
    blocks forever). ``rcvbuf``, when given, sets ``SO_RCVBUF`` before
    connecting (tests use a tiny one to play a slow subscriber).
    ``frame_backlog`` bounds the frames kept while waiting for replies.

    ``reconnect=True``: when the connection drops, the client connects
    again (retrying for up to ``reconnect_timeout`` seconds) and renews
    its subscriptions with the same options. A request that could not be
    sent is sent on the new connection; one whose reply was lost raises
    :class:`ConnectionClosed` with ``reconnected=True`` (it may or may not
    have run, so it is not resent). Frame calls just continue: after the
    re-subscription the server sends each instance's current frame.
    Instances live in the server, not in the connection: their ids stay
    valid across a reconnect (unless the server itself restarted; then
    a renewed subscription to a lost id is dropped and reported in
    ``events`` as ``{"event": "resubscribe_failed", ...}``).

    ``token``: the server's token (``--token-file``). When it is None the
    environment variable ``CLOTHD_TOKEN`` is used if set; ``""`` means no
    token even then. With a token, every connection (the first and each
    reconnection, before its subscriptions are renewed) starts with
    ``auth``; a refused token raises :class:`Unauthorized` from
    :meth:`connect` and leaves the client closed. ``access`` holds what
    the server granted: ``"full"``, ``"readonly"``, or None before any
    ``auth`` (a client without a token never sends one).

    The handshake: every connection (after ``auth``) sends ``hello`` and
    keeps the reply in ``server_info``, its ``features`` and ``limits``
    (PROTOCOL.md "hello"). ``require``: features the client cannot do
    without (``require=["scenes", "ephemeral"]``); a server whose hello
    lacks one is refused at :meth:`connect` with :class:`FeatureMissing`
    naming host:port and the feature. Without ``require``, a method that
    needs a feature the server lacks raises :class:`FeatureMissing` before
    anything is sent (``scenes()``, a ``scene=``, ``create_softbody``,
    ``save`` of a file, ``record``, ...). A server from before ``hello``
    (it answers ``unknown_command``) has ``server_info`` None and no
    feature known: the plain protocol 1 commands work, the others raise
    FeatureMissing. A server that wants a token the client did not give
    answers ``hello`` only after :meth:`auth`, which then asks it.
    ``handshake=False`` sends no ``hello`` (a raw protocol session, whose
    every line is the caller's): nothing is then checked.
    """

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 timeout: Optional[float] = 10.0, *, rcvbuf: Optional[int] = None,
                 frame_backlog: int = DEFAULT_FRAME_BACKLOG, reconnect: bool = False,
                 reconnect_timeout: float = 10.0, token: Optional[str] = None,
                 strict: bool = False, require: Optional[Sequence[str]] = None,
                 handshake: bool = True, unix_socket: Optional[str] = None):
        #: The Unix socket path connected to instead of host:port (None: TCP).
        self.unix_socket: Optional[str] = None if unix_socket is None else _check_unix_path(unix_socket)
        #: Ask the server to refuse requests with unknown members
        #: (``hello {"strict":true}`` on every connection).
        self.strict = strict
        if isinstance(require, str):
            raise TypeError('require: a list of feature names (require=["scenes"]), not one string')
        #: The features every connection's hello must list (else FeatureMissing).
        self.require: Tuple[str, ...] = tuple(require or ())
        if not handshake and (strict or self.require):
            raise ValueError("handshake=False sends no hello, so it cannot ask for strict or check require")
        #: Send ``hello`` on every connection (False: none, for a raw
        #: session whose every line is the caller's; no feature is checked).
        self.handshake = handshake
        #: This connection's hello reply: ``server``, ``version``,
        #: ``protocol``, ``commands``, ``features``, ``limits``; None for a
        #: server without hello, or before the connection's ``auth``.
        self.server_info: Optional[Dict[str, Any]] = None
        # What the hello of this connection gave: "ok" (server_info holds
        # it), "absent" (no hello: no feature known), "deferred" (the
        # server wants auth first; asked again after auth()), None: not
        # connected. Requests are checked against the features only when
        # "ok" or "absent".
        self._hello: Optional[str] = None
        #: The "warnings" of the last reply (empty when it had none).
        self.last_warnings: List[str] = []
        if token is None:
            token = os.environ.get(TOKEN_ENV) or None
        #: The token sent with ``auth`` on every connection (None: none sent).
        self.token: Optional[str] = token or None
        #: The access the server granted: "full", "readonly", or None
        #: before any ``auth`` on this connection.
        self.access: Optional[str] = None
        self.host = host
        self.port = port
        self.timeout = timeout
        self.rcvbuf = rcvbuf
        self.auto_reconnect = reconnect
        self.reconnect_timeout = reconnect_timeout
        #: How many times the connection was re-established.
        self.reconnects = 0
        #: Shared-memory frames (``subscribe(..., shm=True)``) that the
        #: server overwrote in its ring before this client copied them out:
        #: not delivered, as a slow reader's skipped frames are not.
        self.frames_missed = 0
        # The server's shared-memory ring, mapped while this connection has
        # a subscription with shm (one ring per server).
        self._ring: Optional[_Ring] = None
        #: The raw bytes of the last JSON line received (reply or event).
        self.last_line: bytes = b""
        self._sock: Optional[socket.socket] = None
        self._buf = bytearray()
        self._next_id = 1
        self._frames: Deque[Frame] = collections.deque(maxlen=frame_backlog)
        # Server events ({"event": ...}, e.g. the debug overlay toggled).
        self.events: Deque[Dict[str, Any]] = collections.deque(maxlen=256)
        self._replies: Deque[Dict[str, Any]] = collections.deque()
        # instance id (or _ALL) -> subscribe options, to renew them.
        self._subs: Dict[Optional[int], Dict[str, Any]] = {}
        # The scene a Scene handle is calling in: stamped on the requests
        # of SCENE_COMMANDS while set (see Scene).
        self._scene: Optional[str] = None

    def __repr__(self) -> str:
        state = "connected" if self._sock is not None else "closed"
        return f"<clothd.Client {self.endpoint} {state}>"

    # -- connection ---------------------------------------------------------

    def connect(self) -> "Client":
        """Opens the connection (idempotent) and, with a token, sends
        ``auth`` first. Returns self.

        Raises :class:`Unauthorized` (and closes the connection) when the
        server refuses the token."""
        if self._sock is not None:
            return self
        unix = self.unix_socket
        family = getattr(socket, "AF_UNIX", None) if unix is not None else socket.AF_INET
        try:
            if family is None:
                raise OSError(f"this Python has no AF_UNIX sockets ({sys.platform})")
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError as e:
            raise _connect_error(e, self.endpoint) from e
        try:
            if self.rcvbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
            sock.settimeout(self.timeout)
            if unix is not None:
                sock.connect(unix)
            else:
                sock.connect((self.host, self.port))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as e:
            sock.close()
            raise _connect_error(e, self.endpoint) from e
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self.access = None
        try:
            if self.token is not None:
                self.access = str(self._request_once("auth", token=self.token).get("access"))
            if self.handshake or self.strict:  # strict: asked for since, by hello(strict=True)
                self._handshake()
        except BaseException:
            self._drop()
            raise
        return self

    def _handshake(self) -> None:
        """Sends ``hello`` (with ``strict`` when asked for), keeps the reply
        and checks ``require`` against its features."""
        self.server_info, self._hello = None, None
        try:
            reply = self._request_once("hello", strict=True if self.strict else None)
        except UnknownCommand:
            self._hello = "absent"  # a clothd from before hello: no feature known
        except Unauthorized:
            if self.strict or self.require:
                raise  # cannot check what must be checked before any other request
            self._hello = "deferred"
            return
        else:
            self.server_info, self._hello = reply, "ok"
        if self.strict and (self.server_info is None or self.server_info.get("strict") is not True):
            raise FeatureMissing(self.endpoint, ["strict"], "needed by Client(strict=True)",
                                 self._listed())
        missing = [f for f in self.require if f not in self.features]
        if missing:
            raise FeatureMissing(self.endpoint, missing,
                                 f"required by this client: require={list(self.require)}", self._listed())

    def _listed(self) -> Optional[List[str]]:
        """The features the server's hello listed; None when it has no hello."""
        return None if self.server_info is None else sorted(self.features)

    def _check_features(self, cmd: str, msg: Dict[str, Any]) -> None:
        """FeatureMissing when the request needs a feature this
        connection's hello did not list (nothing is checked before the
        hello could be asked)."""
        if self._hello not in ("ok", "absent"):
            return
        needed = [(f, why) for f, why in _features_needed(cmd, msg) if f not in self.features]
        if needed:
            whys = list(dict.fromkeys(why for _, why in needed))
            raise FeatureMissing(self.endpoint, [f for f, _ in needed], "; ".join(whys), self._listed())

    @property
    def endpoint(self) -> str:
        """``"host:port"`` (``"[::1]:7878"`` for an IPv6 address), or
        ``"unix:PATH"`` for a Unix socket: the form a
        :class:`ShardedClient` endpoint takes."""
        if self.unix_socket is not None:
            return UNIX_PREFIX + self.unix_socket
        return _endpoint(self.host, self.port)

    @property
    def features(self) -> FrozenSet[str]:
        """The features this connection's hello listed (empty for a server
        without hello, or before the hello could be asked)."""
        info = self.server_info or {}
        return frozenset(str(f) for f in info.get("features") or ())

    @property
    def limits(self) -> Dict[str, int]:
        """The server's bounds from hello (``lineBytes``, ``outputBytes``,
        ``frameBytes``, ``connections``, ``instances``,
        ``particlesPerInstance``, ``particles``, ``stepWork``); empty when
        unknown."""
        return dict((self.server_info or {}).get("limits") or {})

    def has_feature(self, name: str) -> bool:
        """True when this connection's hello lists the feature ``name``."""
        return name in self.features

    def close(self) -> None:
        """Closes the connection; safe to call twice. Subscriptions are
        forgotten by the server (and by :meth:`reconnect`)."""
        self._drop()
        self._subs.clear()

    def _drop(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
        self._buf.clear()
        self._replies.clear()
        self._hello = None
        if self._ring is not None:
            ring, self._ring = self._ring, None
            ring.close()

    def reconnect(self) -> "Client":
        """Closes the connection, connects again and renews the
        subscriptions (with their options).

        Retries for up to ``reconnect_timeout`` seconds (the server may be
        restarting); raises the last connection error after that. With a
        token, each new connection authenticates before the subscriptions
        are renewed; a refused token raises :class:`Unauthorized` at once
        (no retry). Queued frames are kept.
        """
        self._drop()
        deadline = _time.monotonic() + self.reconnect_timeout
        delay = 0.05
        while True:
            try:
                self.connect()
                break
            except OSError:
                if _time.monotonic() + delay > deadline:
                    raise
                _time.sleep(delay)
                delay = min(delay * 2, 1.0)
        self.reconnects += 1
        subs, self._subs = self._subs, {}
        scene, self._scene = self._scene, None  # renewals name their instance, not the caller's scene
        try:
            for key, options in subs.items():
                try:
                    if key is _ALL:
                        self._request_once("subscribe", **options)
                    elif isinstance(key, str):
                        self._request_once("subscribe", scene=key, **options)
                    else:
                        self._request_once("subscribe", instance=key, **options)
                    self._subs[key] = options
                except ClothdError as e:
                    self.events.append({"event": "resubscribe_failed", "instance": key,
                                        "error": {"code": e.code, "message": e.message}})
        finally:
            self._scene = scene
        return self

    def __enter__(self) -> "Client":
        return self.connect()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        """True while a connection is open (it may still turn out broken)."""
        return self._sock is not None

    @property
    def sock(self) -> socket.socket:
        """The underlying socket (connects first if needed)."""
        if self._sock is None:
            self.connect()
        assert self._sock is not None
        return self._sock

    @property
    def subscriptions(self) -> Dict[Union[int, str, None], Dict[str, Any]]:
        """What this client subscribed to: instance id (None for "all", a
        scene's name for a scene) -> its options (``quantize``, ``every``
        as sent). A copy."""
        return {k: dict(v) for k, v in self._subs.items()}

    # -- raw I/O ------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        """Sends bytes as they are (for tests of malformed input)."""
        self.sock.sendall(data)

    def send_json(self, obj: Dict[str, Any]) -> None:
        """Sends one JSON object as a line, without waiting for the reply."""
        line = json.dumps(obj, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        self.sock.sendall(line)

    def _fill(self) -> None:
        chunk = self.sock.recv(_RECV_CHUNK)
        if not chunk:
            raise ConnectionClosed("clothd closed the connection")
        self._buf += chunk

    def _take(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._fill()
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _take_line(self) -> bytes:
        start = 0
        while True:
            nl = self._buf.find(b"\n", start)
            if nl >= 0:
                out = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                return out
            start = len(self._buf)
            self._fill()

    def read_message(self) -> Message:
        """Reads the next message from the socket: a reply dict or a Frame.

        Events ({"event": ...}) are not returned: they go to ``self.events``;
        nor are shared-memory frames the server overwrote before they were
        copied (counted in ``frames_missed``). Does not look at the queued
        frames or replies.
        """
        while True:
            msg = self._read_one()
            if msg is not None:
                return msg

    def _read_one(self) -> Optional[Message]:
        """The next message, or None for one that is not handed out (an
        event, kept in ``events``; a missed shared-memory frame)."""
        msg = self._read_any()
        if isinstance(msg, dict) and "event" in msg and "ok" not in msg:
            self.events.append(msg)
            return None
        return msg

    def _read_any(self) -> Optional[Message]:
        while not self._buf:
            self._fill()
        first = self._buf[0]
        if first == ord("{"):
            line = self._take_line()
            self.last_line = line
            try:
                obj = _loads(line)
            except ValueError as e:
                raise ProtocolError(f"reply: not JSON ({e}): {line[:200]!r}") from None
            if not isinstance(obj, dict):
                raise ProtocolError(f"reply: not a JSON object: {line[:200]!r}")
            return obj
        if first == FRAME_MAGIC[0]:
            header = self._take(FRAME_HEADER_SIZE)
            _, _, flags, length, *_ = FRAME_HEADER.unpack_from(header, 0)
            if length < FRAME_HEADER_SIZE:
                raise ProtocolError(f"frame: total length {length} is shorter than the header")
            if flags & FRAME_FLAG_SHARED:
                if length != SHM_REFERENCE_SIZE:
                    raise ProtocolError(f"frame: flags bit 3 (a shared-memory reference) on a message of "
                                        f"{length} bytes; a reference is {SHM_REFERENCE_SIZE}")
                return self._resolve(header + self._take(SHM_REFERENCE_SIZE - FRAME_HEADER_SIZE))
            return decode_frame(header + self._take(length - FRAME_HEADER_SIZE))
        raise ProtocolError(f"stream: unexpected first byte 0x{first:02x}")

    def _resolve(self, ref: bytes) -> Optional[Frame]:
        """The frame a shared-memory reference names, decoded from the
        ring; None (counted in ``frames_missed``) when the server overwrote
        it before the copy, or when this connection has no ring (a
        subscribe whose ring could not be mapped raised ShmUnavailable)."""
        frame = None if self._ring is None else self._ring.resolve(ref)
        if frame is None:
            self.frames_missed += 1
            return None
        return decode_frame(frame)

    def read_reply(self) -> Dict[str, Any]:
        """Returns the next JSON reply, queueing frames that come first.

        Never raises for ``ok: false`` (see :meth:`request` for that).
        """
        if self._replies:
            return self._replies.popleft()
        while True:
            msg = self.read_message()
            if isinstance(msg, Frame):
                self._frames.append(msg)
            else:
                return msg

    def exchange(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        """Sends ``obj`` as is and returns the next reply, ok or not."""
        self.send_json(obj)
        return self.read_reply()

    # -- requests -----------------------------------------------------------

    def _message(self, cmd: str, fields: Dict[str, Any]) -> Tuple[int, bytes]:
        rid = self._next_id
        self._next_id += 1
        msg: Dict[str, Any] = {"id": rid, "cmd": cmd}
        for key, value in fields.items():
            if value is not None:
                msg[_camel(key)] = value
        if self._scene is not None and _takes_scene(cmd, msg):
            msg.setdefault("scene", self._scene)
        self._check_features(cmd, msg)
        return rid, json.dumps(msg, separators=(",", ":"), allow_nan=False).encode() + b"\n"

    def _check(self, rid: int, reply: Dict[str, Any], cmd: Optional[str] = None) -> Dict[str, Any]:
        if "id" not in reply and reply.get("ok") is False:
            # A refusal of the connection itself (over --max-connections,
            # a line that timed out): the server answers with no id.
            err = reply.get("error") or {}
            raise _error(str(err.get("code", "internal")), str(err.get("message", "")), reply)
        if reply.get("id") != rid:
            raise ProtocolError(f"reply: expected id {rid}, got {reply.get('id')!r}: {reply!r}")
        found = reply.get("warnings")
        self.last_warnings = [str(w) for w in found] if isinstance(found, list) else []
        if self.last_warnings:
            _warn(self.last_warnings)
        if reply.get("ok") is not True:
            err = reply.get("error") or {}
            raise _error(str(err.get("code", "internal")), str(err.get("message", "")), reply)
        if cmd == "subscribe" and "shm" in reply:
            self._map_ring(reply["shm"])
        return reply

    def _map_ring(self, shm: Any) -> None:
        """Maps the ring a ``"shm":true`` subscribe reply names, once per
        connection (the server has one). Raises ShmUnavailable when it
        cannot be opened, ProtocolError when it is not a ring."""
        if not isinstance(shm, dict):
            raise ProtocolError(f"subscribe: the reply's shm is not an object: {shm!r}")
        name, size = shm.get("name"), shm.get("size")
        ring = self._ring
        if ring is not None and (ring.name, ring.size) == (name, size):
            return
        self._ring = None
        if ring is not None:
            ring.close()
        try:
            self._ring = _Ring(name, size)
        except OSError as e:
            raise ShmUnavailable(self.endpoint, str(name), e) from e

    @property
    def shm(self) -> Optional[Dict[str, Any]]:
        """The shared-memory ring this connection reads (``name``,
        ``size``: what the subscribe reply named), or None."""
        ring = self._ring
        return None if ring is None else {"name": ring.name, "size": ring.size}

    def _peer_closed(self) -> bool:
        """True when the server has already closed the connection; never
        blocks. What is readable is read first (an EOF may wait behind
        frames): complete frames are queued, as while waiting for a reply."""
        sock = self._sock
        if sock is None:
            return False
        try:
            while select.select([sock], [], [], 0)[0]:
                chunk = sock.recv(_RECV_CHUNK)
                if not chunk:
                    break
                self._buf += chunk
            else:
                return False
        except (ConnectionError, ValueError):
            pass
        except OSError:
            return False
        # Closed: keep the complete frames that came before the end.
        try:
            while self._buf:
                msg = self.read_message()
                if isinstance(msg, Frame):
                    self._frames.append(msg)
        except (ConnectionError, ProtocolError, OSError):
            pass
        return True

    def _request_once(self, cmd: str, **fields: Any) -> Dict[str, Any]:
        rid, line = self._message(cmd, fields)
        self.sock.sendall(line)
        return self._check(rid, self.read_reply(), cmd)

    def request(self, cmd: str, **fields: Any) -> Dict[str, Any]:
        """Sends ``{"id": n, "cmd": cmd, ...fields}`` and returns the reply.

        snake_case field names become camelCase; ``None`` values are left
        out. Raises :class:`ClothdError` on an error reply
        (:class:`Unauthorized` for ``unauthorized``),
        :class:`ConnectionClosed` when the connection drops (see
        ``reconnect`` in the class docs).
        """
        if self._sock is None:
            self.connect()  # the features are known once connected
        elif self.auto_reconnect and self._peer_closed():
            self.reconnect()  # gone while idle: nothing was lost, send on the new one
        rid, line = self._message(cmd, fields)
        try:
            self.sock.sendall(line)
        except ConnectionError:
            if not self.auto_reconnect:
                self._drop()
                raise
            self.reconnect()  # the line never reached the server: send it again
            self.sock.sendall(line)
        try:
            reply = self.read_reply()
        except ConnectionError as e:
            if not self.auto_reconnect:
                self._drop()
                raise
            self.reconnect()
            raise ConnectionClosed(f"{cmd}: the connection dropped before the reply (it may or may "
                                   f"not have run); reconnected", reconnected=True) from e
        return self._check(rid, reply, cmd)

    def request_as_is(self, cmd: str, fields: Dict[str, Any]) -> Dict[str, Any]:
        """Like :meth:`request`, with the member names as given (no
        camelCase) and ``None`` sent as ``null`` (a painted property's
        "unpainted"): for consoles that take names from a person."""
        sock = self.sock
        rid = self._next_id
        self._next_id += 1
        msg: Dict[str, Any] = {"id": rid, "cmd": cmd, **fields}
        if self._scene is not None and _takes_scene(cmd, msg):
            msg.setdefault("scene", self._scene)
        self._check_features(cmd, msg)
        sock.sendall(json.dumps(msg, separators=(",", ":"), allow_nan=False).encode() + b"\n")
        return self._check(rid, self.read_reply(), cmd)

    def create(self, type: str = "cloth", *, scene: Optional[str] = None,
               ephemeral: Optional[bool] = None, **fields: Any) -> int:
        """Creates an instance of ``type`` ("cloth" or "softbody") with the
        given fields (snake_case); returns its id. ``scene``: the scene it
        belongs to ("default" when unset); ``ephemeral=True``: it is
        destroyed when this connection closes (a script that ends, well or
        not, leaves nothing behind). See :meth:`create_cloth`."""
        return int(self.request("create", type=type, scene=scene, ephemeral=ephemeral or None,
                                **fields)["instance"])

    def create_cloth(self, width: Optional[int] = None, height: Optional[int] = None, *,
                     spacing: Optional[float] = None, mass: Optional[float] = None,
                     stiffness: Optional[float] = None, bend_stiffness: Optional[float] = None,
                     damping: Optional[float] = None, origin: Optional[VecLike] = None,
                     solver_iterations: Optional[int] = None, right: Optional[VecLike] = None,
                     down: Optional[VecLike] = None, gravity: Optional[VecLike] = None,
                     stretch_compliance: Optional[float] = None,
                     bend_compliance: Optional[float] = None, iterations: Optional[int] = None,
                     substeps: Optional[int] = None, velocity_retention: Optional[float] = None,
                     solver_frequency: Optional[float] = None,
                     thickness: Optional[float] = None, particle_mass: Optional[float] = None,
                     wind_model: Optional[str] = None, air_density: Optional[float] = None,
                     drag: Optional[float] = None, lift: Optional[float] = None,
                     tethers: Optional[bool] = None, tether_scale: Optional[float] = None,
                     sleep_threshold: Optional[float] = None, self_distance: Optional[float] = None,
                     lod: Optional[int] = None, priority: Optional[float] = None,
                     scene: Optional[str] = None, ephemeral: Optional[bool] = None,
                     **extra: Any) -> int:
        """Creates a cloth and returns its instance id.

        Every field is optional; the names are PROTOCOL.md's in snake_case.
        Layout (fixed at creation): ``width``, ``height`` (particles, >= 2;
        default 10 x 10), ``spacing`` (0.1 m), ``origin`` ([0,0,0]),
        ``right`` ([1,0,0]), ``down`` ([0,-1,0]): particle ``y * width + x``
        starts at ``origin + x*spacing*right + y*spacing*down``.
        Material (changeable later with :meth:`set`): ``mass`` (1 kg total),
        ``stiffness`` (0.9) or ``stretch_compliance`` (m/N, XPBD),
        ``bend_stiffness`` (0.5) or ``bend_compliance``,
        ``velocity_retention`` (0.547 kept per second, the default) or the
        seed's ``damping`` (a fraction removed per step),
        ``solver_iterations``/``iterations`` (4), ``substeps`` (1; 0:
        automatic, ``ceil(dt * solver_frequency)``, 360 Hz),
        ``gravity`` ([0,-9.81,0]), ``thickness`` (0 m),
        ``particle_mass`` (two-way coupling; unset: each particle's own
        mass, ``mass`` lumped by area), ``wind_model``
        ("aero": wind is air velocity on flat plates; "constant": an
        acceleration; "dragLift": air velocity, drag and lift coefficients),
        ``air_density``, ``drag``, ``lift``, ``tethers``, ``tether_scale``,
        ``sleep_threshold`` (m/s; 0 never sleeps), ``self_distance`` (m;
        self-collision, 0 off). Level of detail: ``lod`` (0 full .. 3,
        each level about half the work of the one before) and ``priority``
        (a step's ``budget_ms`` lowers the lowest first). ``scene`` and
        ``ephemeral`` as for :meth:`create`. ``extra`` fields
        are sent as they are (camelCased), for fields newer than this client.
        """
        return self.create("cloth", width=width, height=height, spacing=spacing, mass=mass,
                           stiffness=stiffness, bend_stiffness=bend_stiffness, damping=damping,
                           origin=_vec(origin), solver_iterations=solver_iterations,
                           right=_vec(right), down=_vec(down), gravity=_vec(gravity),
                           stretch_compliance=stretch_compliance, bend_compliance=bend_compliance,
                           iterations=iterations, substeps=substeps,
                           solver_frequency=solver_frequency,
                           velocity_retention=velocity_retention, thickness=thickness,
                           particle_mass=particle_mass, wind_model=wind_model,
                           air_density=air_density, drag=drag, lift=lift, tethers=tethers,
                           tether_scale=tether_scale, sleep_threshold=sleep_threshold,
                           self_distance=self_distance, lod=lod, priority=priority, scene=scene,
                           ephemeral=ephemeral, **extra)

    def create_softbody(self, *, shape: Optional[str] = None, radius: Optional[float] = None,
                        resolution: Optional[int] = None, center: Optional[VecLike] = None,
                        size: Optional[VecLike] = None, cells: Optional[Sequence[int]] = None,
                        origin: Optional[VecLike] = None,
                        vertices: Optional[Sequence[VecLike]] = None,
                        tetrahedra: Optional[Sequence[int]] = None, mass: Optional[float] = None,
                        stiffness: Optional[float] = None, volume_stiffness: Optional[float] = None,
                        volume_compliance: Optional[float] = None,
                        stretch_compliance: Optional[float] = None, damping: Optional[float] = None,
                        velocity_retention: Optional[float] = None,
                        solver_iterations: Optional[int] = None, substeps: Optional[int] = None,
                        gravity: Optional[VecLike] = None, thickness: Optional[float] = None,
                        sleep_threshold: Optional[float] = None, lod: Optional[int] = None,
                        priority: Optional[float] = None, scene: Optional[str] = None,
                        ephemeral: Optional[bool] = None, **extra: Any) -> int:
        """Creates a soft body (a tetrahedral mesh) and returns its id.

        Either a generated ``shape``: ``"ball"`` (``radius`` 0.5,
        ``resolution`` 6, ``center``) or ``"box"`` (``size``, ``cells``,
        ``origin``), or a mesh: ``vertices`` (vec3s) and ``tetrahedra``
        (4 indices each, positively oriented). Material as for cloth, with
        the seed's soft-body defaults (``mass`` 5, ``stiffness`` 0.8,
        ``volume_stiffness`` 0.9 or ``volume_compliance``, ``damping`` 0.02,
        ``solver_iterations`` 8, ``substeps`` 2). :meth:`topology` gives
        its surface triangles. ``scene`` and ``ephemeral`` as for
        :meth:`create`.
        """
        return self.create("softbody", shape=shape, radius=radius, resolution=resolution,
                           center=_vec(center), size=_vec(size), cells=_ids(cells),
                           origin=_vec(origin),
                           vertices=None if vertices is None else [_vec(v) for v in vertices],
                           tetrahedra=_ids(tetrahedra), mass=mass, stiffness=stiffness,
                           volume_stiffness=volume_stiffness, volume_compliance=volume_compliance,
                           stretch_compliance=stretch_compliance, damping=damping,
                           velocity_retention=velocity_retention,
                           solver_iterations=solver_iterations, substeps=substeps,
                           gravity=_vec(gravity), thickness=thickness,
                           sleep_threshold=sleep_threshold, lod=lod, priority=priority, scene=scene,
                           ephemeral=ephemeral, **extra)

    def create_mesh_cloth(self, vertices: Sequence[Any], triangles: Sequence[int], *,
                          uvs: Optional[Sequence[float]] = None, **options: Any) -> int:
        """Creates a cloth cut as a triangle mesh (a cape, a skirt, a flag
        with a hole) and returns its id. ``vertices``: vec3s or a flat list
        (x, y, z per vertex; a numpy array works via ``tolist()``),
        ``triangles``: 3 indices each, ``uvs``: 2 per vertex. ``options``
        are the cloth options and the painted properties
        (``max_distance=``, ``backstop_radius=``, ... a number or one per
        vertex)."""
        verts = vertices.tolist() if hasattr(vertices, "tolist") else list(vertices)
        return self.create("cloth", vertices=verts, triangles=_ids(triangles),
                           uvs=None if uvs is None else [float(u) for u in uvs], **options)

    def skin(self, instance: int, positions: Any, normals: Any = None, *,
             binary: bool = True) -> None:
        """The garment's animated pose for the next step: one skinned
        position per vertex (and optionally the skin's normals, pointing
        away from the body), as sequences of vec3s, flat sequences or numpy
        arrays. Sent as a binary request (PROTOCOL.md "Binary requests":
        48 bytes per vertex with normals, no JSON to print or parse) unless
        ``binary`` is False."""
        pos = _flat_floats(positions)
        nrm = None if normals is None else _flat_floats(normals)
        if not binary:
            self.request("skin", instance=instance, positions=pos, normals=nrm)
            return
        if len(pos) % 3 or (nrm is not None and len(nrm) != len(pos)):
            raise ValueError("skin: 3 floats per vertex, as many normals as positions")
        count = len(pos) // 3
        body = struct.pack(f"<{len(pos)}f", *pos)
        if nrm is not None:
            body += struct.pack(f"<{len(nrm)}f", *nrm)
        self._binary_request(1, instance, count, 1 if nrm is not None else 0, body)

    def pin_bulk(self, instance: int, particles: Sequence[int], positions: Any) -> None:
        """Pins many particles at positions in one binary request (the
        binary twin of :meth:`pin` with ``positions``)."""
        ids = _ids(particles)
        pos = _flat_floats(positions)
        if len(pos) != 3 * len(ids):
            raise ValueError("pin_bulk: one position per particle")
        body = struct.pack(f"<{len(ids)}I", *ids) + struct.pack(f"<{len(pos)}f", *pos)
        self._binary_request(2, instance, len(ids), 0, body)

    def _binary_request(self, kind: int, instance: int, count: int, flags: int,
                        body: bytes) -> Dict[str, Any]:
        sock = self.sock
        if kind == 1:
            self._check_features("skin", {})
        rid = self._next_id
        self._next_id += 1
        header = struct.pack("<4sHHIIIIII", b"\x89CLR", 1, flags, 32 + len(body), instance, kind,
                             rid, count, 0)
        sock.sendall(header + body)
        return self._check(rid, self.read_reply())

    def topology(self, instance: int) -> Dict[str, Any]:
        """What a renderer needs once: the reply's ``triangles`` (3 particle
        indices each, counter-clockwise from outside) and, for cloth,
        ``uvs`` (u, v per particle)."""
        return self.request("topology", instance=instance)

    def set(self, instance: int, *, mass: Optional[float] = None, stiffness: Optional[float] = None,
            bend_stiffness: Optional[float] = None, damping: Optional[float] = None,
            solver_iterations: Optional[int] = None, gravity: Optional[VecLike] = None,
            stretch_compliance: Optional[float] = None, bend_compliance: Optional[float] = None,
            iterations: Optional[int] = None, substeps: Optional[int] = None,
            solver_frequency: Optional[float] = None,
            velocity_retention: Optional[float] = None, thickness: Optional[float] = None,
            particle_mass: Optional[float] = None, wind_model: Optional[str] = None,
            air_density: Optional[float] = None, drag: Optional[float] = None,
            lift: Optional[float] = None, tethers: Optional[bool] = None,
            tether_scale: Optional[float] = None, sleep_threshold: Optional[float] = None,
            self_distance: Optional[float] = None, volume_stiffness: Optional[float] = None,
            volume_compliance: Optional[float] = None, lod: Optional[int] = None,
            priority: Optional[float] = None, **extra: Any) -> None:
        """Changes a live instance's options (any :meth:`create_cloth`
        option but the layout); only the ones given change. Giving the
        seed's form of a setting (``stiffness``) switches its XPBD twin
        (``stretch_compliance``) off, and back. Wakes a sleeping instance,
        unless only ``lod`` and ``priority`` change (a game server sets
        them from its camera every frame)."""
        self.request("set", instance=instance, mass=mass, stiffness=stiffness,
                     bend_stiffness=bend_stiffness, damping=damping,
                     solver_iterations=solver_iterations, gravity=_vec(gravity),
                     stretch_compliance=stretch_compliance, bend_compliance=bend_compliance,
                     iterations=iterations, substeps=substeps, solver_frequency=solver_frequency,
                     velocity_retention=velocity_retention,
                     thickness=thickness, particle_mass=particle_mass, wind_model=wind_model,
                     air_density=air_density, drag=drag, lift=lift, tethers=tethers,
                     tether_scale=tether_scale, sleep_threshold=sleep_threshold,
                     self_distance=self_distance, volume_stiffness=volume_stiffness,
                     volume_compliance=volume_compliance, lod=lod, priority=priority, **extra)

    def transform(self, instance: int, name: str, position: VecLike,
                  rotation: Optional[Sequence[float]] = None, *,
                  inertia_frame: Optional[bool] = None) -> None:
        """Creates or moves the instance's named transform (at most 16):
        ``position`` and ``rotation`` (a quaternion [x, y, z, w], default
        identity). Attached particles and colliders follow it; pins move
        smoothly over the next step. ``inertia_frame=True`` makes it the
        frame whose motion the ``linear_inertia`` / ``angular_inertia``
        options scale."""
        self.request("transform", instance=instance, name=name, position=_vec(position),
                     rotation=None if rotation is None else [float(x) for x in rotation],
                     inertia_frame=inertia_frame)

    def teleport(self, instance: int, translation: Optional[VecLike] = None,
                 rotation: Optional[Sequence[float]] = None,
                 pivot: Optional[VecLike] = None) -> None:
        """Moves the whole instance rigidly (p -> pivot + rotation (p - pivot)
        + translation): particles with their velocities, pins, skin,
        transforms and attached colliders, with no velocity spike."""
        self.request("teleport", instance=instance, translation=_vec(translation),
                     rotation=None if rotation is None else [float(x) for x in rotation],
                     pivot=_vec(pivot))

    def attach(self, instance: int, name: str, particles: Union[int, Sequence[int], None] = None,
               offset: Optional[VecLike] = None, offsets: Optional[Sequence[VecLike]] = None, *,
               particle: Optional[int] = None) -> int:
        """Pins particles and attaches them to the transform ``name``, at
        ``offset``/``offsets`` local to it (default: where they are now).
        ``unpin`` releases them. Returns the ``attached`` count."""
        if particle is not None:
            particles = particle
        if particles is None:
            raise TypeError("attach: particle or particles required")
        if isinstance(particles, int):
            reply = self.request("attach", instance=instance, name=name, particle=particles,
                                 offset=_vec(offset))
        else:
            offs = None if offsets is None else [_vec(o) for o in offsets]
            reply = self.request("attach", instance=instance, name=name, particles=_ids(particles),
                                 offsets=offs)
        return int(reply.get("attached", 0))

    def destroy(self, instance: Optional[int] = None, *, instances: Optional[Sequence[int]] = None,
                scene: Optional[str] = None) -> List[int]:
        """Destroys an instance, a list of them, or (``scene`` alone) every
        instance of a scene; their ids never work again. With ids and a
        ``scene``, each must be in it (``not_found``). Returns the
        destroyed ids (a scene with none: ``[]``, not an error)."""
        reply = self.request("destroy", instance=instance, instances=_ids(instances), scene=scene)
        gone = [int(i) for i in reply.get("destroyed", [instance] if instance is not None else [])]
        for iid in gone:
            self._subs.pop(iid, None)
        return gone

    def pin(self, instance: int, particles: Union[int, Sequence[int], None] = None,
            position: Optional[VecLike] = None, positions: Optional[Sequence[VecLike]] = None, *,
            particle: Optional[int] = None) -> int:
        """Pins one particle (an int, or ``particle=``) or several (a
        sequence). A pinned particle moves only when pinned again.

        ``position`` goes with one particle, ``positions`` (one per
        particle) with several; without them the particles are pinned where
        they are. Returns the server's ``pinned`` count.
        """
        if particle is not None:
            if particles is not None:
                raise TypeError("pin: give particles or particle, not both")
            particles = particle
        if particles is None:
            raise TypeError("pin: particle or particles required")
        if isinstance(particles, int):
            reply = self.request("pin", instance=instance, particle=particles, position=_vec(position))
        else:
            pos = None if positions is None else [_vec(p) for p in positions]
            reply = self.request("pin", instance=instance, particles=_ids(particles), positions=pos)
        return int(reply.get("pinned", 0))

    def unpin(self, instance: int, particles: Union[int, Sequence[int], None] = None, *,
              particle: Optional[int] = None) -> int:
        """Unpins one particle or several; returns the ``unpinned`` count."""
        if particle is not None:
            particles = particle
        if particles is None:
            raise TypeError("unpin: particle or particles required")
        if isinstance(particles, int):
            reply = self.request("unpin", instance=instance, particle=particles)
        else:
            reply = self.request("unpin", instance=instance, particles=_ids(particles))
        return int(reply.get("unpinned", 0))

    def wind(self, wind: VecLike, instance: Optional[int] = None) -> List[float]:
        """Sets an instance's wind, or the global wind when instance is None
        (added to every instance's own). Returns the wind as stored."""
        return self.request("wind", instance=instance, wind=_vec(wind)).get("wind")

    def global_wind(self) -> List[float]:
        """The server-wide global wind (from ``status``)."""
        return list(self.status().get("globalWind") or [0.0, 0.0, 0.0])

    def gravity(self, instance: int, gravity: VecLike) -> None:
        """Sets an instance's gravity (m/s^2)."""
        self.request("gravity", instance=instance, gravity=_vec(gravity))

    def add_collider(self, instance: int, type: str, position: Optional[VecLike] = None,
                     normal: Optional[VecLike] = None, radius: Optional[float] = None,
                     height: Optional[float] = None, *, radius2: Optional[float] = None,
                     half_extents: Optional[VecLike] = None, rotation: Optional[Sequence[float]] = None,
                     friction: Optional[float] = None, static_friction: Optional[float] = None,
                     coupling: Optional[float] = None, attachment: Optional[str] = None,
                     **extra: Any) -> int:
        """Adds a "sphere", "capsule", "plane", "taperedCapsule" or "box"
        collider; returns its id.

        ``position``: centre (or a point of the plane; a tapered capsule's
        midpoint between its end spheres; default origin); ``normal``:
        plane normal or capsule axis ([0,1,0]; a tapered capsule's points
        from its ``radius`` end to its ``radius2`` end; not for boxes);
        ``radius`` (0.5); ``height``: capsule length including both caps
        (1); ``radius2``: a tapered capsule's +normal end (default
        ``radius``); ``half_extents``: a box's half size ([0.5]*3);
        ``rotation``: a box's unit quaternion [x, y, z, w] ([0,0,0,1]);
        ``friction``/``static_friction`` (0); ``coupling`` (0..1, two-way
        coupling: impulses reported in step replies); ``attachment``: a
        transform name the collider follows (position/normal/rotation
        local to it).
        """
        reply = self.request("addCollider", instance=instance, type=type, position=_vec(position),
                             normal=_vec(normal), radius=radius, height=height, radius2=radius2,
                             half_extents=_vec(half_extents), rotation=_vec(rotation),
                             friction=friction, static_friction=static_friction,
                             coupling=coupling, attachment=attachment, **extra)
        return int(reply["collider"])

    def add_tapered_capsule(self, instance: int, start: VecLike, end: VecLike, radius: float,
                            radius2: float, **options: Any) -> int:
        """A limb from joint ``start`` (``radius``) to joint ``end``
        (``radius2``): a "taperedCapsule" whose end spheres sit on the two
        joints (``position``, ``normal`` and ``height`` are derived; other
        ``add_collider`` options pass through). Returns its id."""
        a, b = _vec(start), _vec(end)
        assert a is not None and b is not None
        axis = [b[i] - a[i] for i in range(3)]
        length = math.sqrt(sum(x * x for x in axis))
        return self.add_collider(instance, "taperedCapsule",
                                 position=[(a[i] + b[i]) / 2 for i in range(3)],
                                 normal=axis if length > 0 else None, radius=radius,
                                 radius2=radius2, height=length + radius + radius2, **options)

    def move_collider(self, instance: int, collider: int, position: Optional[VecLike] = None,
                      normal: Optional[VecLike] = None,
                      rotation: Optional[Sequence[float]] = None) -> None:
        """Moves and/or turns a collider (at least one of the three; a box
        turns by ``rotation``, the others by ``normal``)."""
        self.request("moveCollider", instance=instance, collider=collider, position=_vec(position),
                     normal=_vec(normal), rotation=_vec(rotation))

    def remove_collider(self, instance: int, collider: int) -> None:
        """Removes a collider; its id never works again."""
        self.request("removeCollider", instance=instance, collider=collider)

    def enable(self, instance: int, enabled: bool = True) -> bool:
        """Enables or disables stepping; enabling clears the unstable flag."""
        return bool(self.request("enable", instance=instance, enabled=enabled).get("enabled"))

    def step(self, dt: float = 1 / 60, instances: Optional[Sequence[int]] = None, *,
             instance: Optional[int] = None, budget_ms: Optional[float] = None,
             scene: Optional[str] = None) -> Dict[str, Any]:
        """Steps every enabled instance (or just ``instances``/``instance``,
        or every instance of ``scene``) once by ``dt`` seconds, in
        parallel on the server's workers. With neither ids nor a scene it
        steps every instance of every scene (another client's too): name
        your scene on a shared server.

        ``budget_ms``: a soft time budget (0: none; unset: the server's
        ``--step-budget-ms``): when the step would overrun it, the
        instances of lowest ``priority`` step at a coarser level of detail.

        Returns the reply: ``stepped`` (count), ``unstable`` (ids caught
        by the instability guard), ``sleeping`` (ids asleep: they advance
        but send no frame) and ``impulses`` (two-way coupling); with a
        budget also ``budgetMs``, ``predictedMs``, ``actualMs`` and
        ``degraded`` (``[{"instance": id, "lod": level}]``: the instances
        stepped below their own level).
        """
        return self.request("step", dt=dt, instance=instance, instances=_ids(instances),
                            budget_ms=budget_ms, scene=scene)

    def get(self, instance: int, *, velocities: bool = False, normals: bool = False) -> InstanceState:
        """The full state of one instance; ``velocities=True`` and
        ``normals=True`` add each particle's velocity and unit normal
        (``InstanceState.velocities`` / ``.normals``)."""
        return InstanceState.from_reply(self.request("get", instance=instance,
                                                     velocities=velocities or None,
                                                     normals=normals or None))

    def subscribe(self, instance: Optional[int] = None, instances: Optional[Sequence[int]] = None, *,
                  quantize: Optional[bool] = None, every: Optional[int] = None,
                  channels: Optional[Sequence[str]] = None,
                  scene: Optional[str] = None, shm: Optional[bool] = None) -> Dict[str, Any]:
        """Subscribes to frames of one instance, several, (``scene`` alone)
        every instance of a scene, or (none of them) all; the scene's and
        "all" include instances created later.

        ``quantize=True``: 16-bit frames (about half the bytes; decoded
        positions within half a quantization step of the server's).
        ``every=k``: only frames whose number is a multiple of k (1..1000).
        ``channels``: what the frames carry besides the positions, from
        :data:`CHANNELS` (``["positions"]`` by default; add "velocities"
        and/or "normals": :attr:`Frame.velocities`, :attr:`Frame.normals`).
        ``shm=True`` (a process on clothd's host, as clothd's user; the
        server lists the feature "shm"): the frames come through the
        server's shared-memory ring, mapped read-only here, and arrive as
        the same :class:`Frame`; one the server overwrote before it was
        read is not delivered and counts in :attr:`frames_missed`. Raises
        :class:`ShmUnavailable` when the ring cannot be mapped.
        Subscribing again to an instance replaces its options. The current
        frame of each instance follows the reply. Returns the reply
        (``instances`` or ``all``; with shm, ``shm``: the ring's name and
        size).
        """
        chans = None if channels is None else list(channels)
        reply = self.request("subscribe", instance=instance, instances=_ids(instances),
                             quantize=quantize, every=every, channels=chans, scene=scene, shm=shm)
        options = {k: v for k, v in (("quantize", quantize), ("every", every), ("channels", chans),
                                     ("shm", shm)) if v is not None}
        if reply.get("all"):
            self._subs[_ALL] = options
        elif "scene" in reply:
            self._subs[str(reply["scene"])] = options  # a scene's: renewed by name
        else:
            for iid in reply.get("instances") or []:
                self._subs[int(iid)] = options
        return reply

    def unsubscribe(self, instance: Optional[int] = None, instances: Optional[Sequence[int]] = None,
                    *, scene: Optional[str] = None) -> None:
        """Drops subscriptions; with no argument, all of them; with
        ``scene`` alone, the scene's (and those of its instances)."""
        self.request("unsubscribe", instance=instance, instances=_ids(instances), scene=scene)
        if scene is None:
            scene = self._scene  # a Scene handle's: only that scene's went
        if instance is None and instances is None and scene is None:
            self._subs.clear()
        if instance is None and instances is None and scene is not None:
            self._subs.pop(scene, None)
            if any(isinstance(key, int) for key in self._subs):
                # The server dropped the scene's instances' subscriptions
                # too: forget them, so that a reconnect does not renew them.
                for iid in self.request("scene", scene=scene).get("instances") or []:
                    self._subs.pop(int(iid), None)
        for iid in ([instance] if instance is not None else []) + list(instances or []):
            self._subs.pop(iid, None)

    def save(self, name: str, instances: Optional[Sequence[int]] = None, *,
             instance: Optional[int] = None, scene: Optional[str] = None) -> Dict[str, Any]:
        """Writes a snapshot ``name`` (1-64 of ``A-Z a-z 0-9 . _ -``, not
        starting with ``.``) of every instance, or of ``instances`` /
        ``instance``, to the server's ``--data-dir``. Returns the reply:
        ``name``, ``instances`` (how many), ``bytes``. ``scene``: every
        instance of that scene. Raises
        :class:`ClothdError` ``internal`` when the disk refuses (nothing is
        then damaged), ``invalid_argument`` without ``--data-dir``."""
        return self.request("save", name=name, instance=instance, instances=_ids(instances),
                            scene=scene)

    def load(self, name: str, *, replace: bool = False) -> List[int]:
        """Loads the snapshot ``name``: its instances come back under their
        saved ids (refused with ``invalid_argument`` if one is in use), or,
        with ``replace=True``, they become the whole world. A damaged file
        is refused naming its section and changes nothing. Returns the
        loaded ids."""
        reply = self.request("load", name=name, replace=True if replace else None)
        return [int(i) for i in reply["instances"]]

    def record(self, name: str, instances: Optional[Sequence[int]] = None, *,
               instance: Optional[int] = None, scene: Optional[str] = None) -> Dict[str, Any]:
        """Starts the journal ``name`` (``.cdj`` in the server's
        ``--data-dir``) of every instance, or of ``instances`` /
        ``instance``: a snapshot of them, then every request that changes
        one and every step. Returns the reply (``name``, ``instances``,
        ``bytes``)."""
        return self.request("record", name=name, instance=instance, instances=_ids(instances),
                            scene=scene)

    def stop_recording(self) -> Dict[str, Any]:
        """Ends the journal; returns the reply (``name``, ``frames``,
        ``records``, ``bytes``)."""
        return self.request("record", stop=True)

    def replay(self, name: str, to: Optional[int] = None, *, enabled: bool = True) -> Dict[str, Any]:
        """Rebuilds the journal's instances under new ids at frame ``to``
        (all of it without), bit for bit; ``enabled=False`` leaves them
        disabled (held at that frame while others step). Returns the reply: ``instances``
        (new ids), ``recorded`` (their recorded ids, same order),
        ``frames``, ``journalFrames``, ``complete``, and ``warning`` when it
        was recorded by another build or SIMD path."""
        return self.request("replay", name=name, to=to, enabled=None if enabled else False)

    def journals(self) -> Dict[str, Any]:
        """The journals of the server's ``--data-dir``: ``journals`` (names,
        newest first) and ``recording`` (``name``, ``frames``, ``bytes`` of
        the recording in progress, or None)."""
        return self.request("journals")

    def status(self, scene: Optional[str] = None) -> Dict[str, Any]:
        """The server's status reply: ``instances`` (summaries, each with
        its ``scene``; only ``scene``'s when given), ``workers``,
        ``globalWind``, ``version``, ``debug``, ``scenes`` and ``text`` (the seed's
        ``=== Cloth Simulation ===`` block)."""
        return self.request("status", scene=scene)

    def scene(self, name: str, ephemeral: Optional[bool] = None) -> Dict[str, Any]:
        """Ties the scene ``name`` to this connection (``ephemeral=True``:
        when it closes, every instance of the scene is destroyed, whoever
        created it), lets go of it (``False``), or only asks (``None``).
        Returns the reply: ``scene``, ``instances``, ``ephemeral`` (held by
        some connection), ``owned`` (by this one)."""
        return self.request("scene", scene=name, ephemeral=ephemeral)

    def scenes(self, scene: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every scene (or ``scene``'s entry), sorted by name: ``scene``,
        ``instances`` (how many), ``ephemeral`` (a connection holds it)."""
        return list(self.request("scenes", scene=scene)["scenes"])

    def ping(self) -> float:
        """Sends ``ping`` and returns the round trip in seconds (the reply
        is ``{"ok": true, "pong": true}``). Allowed with the read-only
        token; before ``auth`` on a server with a token it raises
        :class:`Unauthorized`."""
        t0 = _time.monotonic()
        reply = self.request("ping")
        if reply.get("pong") is not True:
            raise ProtocolError(f"ping: expected \"pong\": true, got {reply!r}")
        return _time.monotonic() - t0

    def hello(self, strict: Optional[bool] = None) -> Dict[str, Any]:
        """The handshake again (the client sends it on every connection and
        keeps it in :attr:`server_info`): ``server``, ``version``,
        ``protocol`` (1), ``commands`` (every command the server knows),
        ``strict``, ``features`` and ``limits``. ``strict=True`` makes the
        server refuse, on this connection, a request with a member it does
        not read (:class:`InvalidArgument`) instead of warning; the client
        then asks again on every reconnection. ``False`` turns it back."""
        reply = self.request("hello", strict=strict)
        if strict is not None:
            self.strict = bool(strict)
        self.server_info, self._hello = reply, "ok"
        return reply

    def stats(self) -> Dict[str, Any]:
        """The server's counters since it started (the ``stats`` reply):
        ``connections`` (current, total, refused, limit), ``instances`` by
        state (awake, sleeping, disabled, unstable), ``particles``,
        ``steps`` (total, instanceSteps, slow, ``budget``: steps,
        overruns, degradedInstances; perSecond and the
        ``durationSeconds`` histogram), ``sent`` (bytes by kind, frames,
        framesSkipped), ``requests`` by command and ``errors`` by code,
        plus ``version``, ``simd``, ``workers`` and ``uptimeSeconds``.
        Answered at once even mid-step; allowed with the read-only token."""
        return self.request("stats")

    def auth(self, token: str) -> str:
        """Presents ``token`` on this connection and returns the access it
        grants (``"full"`` or ``"readonly"``; a server without tokens grants
        ``"full"`` to any). On success the client keeps the token and sends
        it again on every reconnection. A wrong token raises
        :class:`Unauthorized` ("token: wrong token") and leaves the access
        as it was; the server then pauses the connection (100 ms, doubling
        with each bad token up to 2 s) and closes it at the 10th."""
        reply = self.request("auth", token=token)
        self.token = token
        self.access = str(reply.get("access"))
        if self._hello == "deferred":
            self._handshake()  # the server answers hello now
        return self.access

    def debug(self, enabled: Optional[bool] = None) -> bool:
        """Shows (no argument) or sets the viewers' debug overlay flag.

        Subscribed connections receive {"event": "debug", "enabled": b}
        when it changes; they appear in ``Client.events``."""
        if enabled is None:
            return bool(self.request("debug")["enabled"])
        return bool(self.request("debug", enabled=bool(enabled))["enabled"])

    # -- frames -------------------------------------------------------------

    @property
    def queued_frames(self) -> int:
        """Frames received and not yet handed out."""
        return len(self._frames)

    def _next_frame_blocking(self) -> Frame:
        while True:
            msg = self.read_message()
            if isinstance(msg, Frame):
                return msg
            # A reply nobody asked for yet (pipelined requests): keep it.
            self._replies.append(msg)

    def next_frame(self, timeout: Optional[float] = None) -> Frame:
        """The next frame: a queued one first, else waits up to ``timeout``
        seconds (default: the client's timeout). Raises TimeoutError.

        With ``reconnect=True`` a dropped connection is re-established (and
        the subscriptions renewed) while waiting."""
        if self._frames:
            return self._frames.popleft()
        while True:
            try:
                return self._next_frame_waiting(timeout)
            except ConnectionError:
                if not self.auto_reconnect:
                    self._drop()
                    raise
                self.reconnect()

    def _next_frame_waiting(self, timeout: Optional[float]) -> Frame:
        if timeout is None:
            return self._next_frame_blocking()
        old = self.sock.gettimeout()
        self.sock.settimeout(timeout)
        try:
            return self._next_frame_blocking()
        finally:
            if self._sock is not None:
                self._sock.settimeout(old)

    def poll_frames(self) -> List[Frame]:
        """Every queued frame plus whatever frames are already readable,
        without waiting for new ones."""
        out = list(self._frames)
        self._frames.clear()
        while self._buf or select.select([self.sock], [], [], 0)[0]:
            msg = self._read_one()  # an event or a missed frame: look again, never wait
            if msg is None:
                continue
            if isinstance(msg, Frame):
                out.append(msg)
            else:
                self._replies.append(msg)
        return out

    def frames(self) -> Iterator[Frame]:
        """Yields frames forever: queued ones first, then from the socket.

        Each wait is bounded by the client's timeout (TimeoutError).
        """
        while True:
            yield self.next_frame()


# ---- subscriber -----------------------------------------------------------------


class Subscriber:
    """A connection of its own that receives frames: for viewers, and for
    reading frames while another thread (or a :class:`Client`) commands.

    Iterate it (``for frame in sub``) in the calling thread, or call
    :meth:`start` to read on a background thread that keeps the newest
    frame of each instance (:meth:`latest`, :meth:`wait_for`) and calls
    ``callback(frame)`` for each frame (on that thread).

    ``instances``: an id, a list of ids, or None for every instance
    (including ones created later); ``scene``: with no ``instances``,
    every instance of that scene (later ones too), with them, each must be
    in it. ``quantize``/``every``/``channels``/``shm``:
    the subscribe options (``shm=True``: frames through the server's
    shared memory; :attr:`frames_missed` counts the ones overwritten
    before they were read). ``reconnect`` (default on): when the server goes away, connect
    again (for up to ``reconnect_timeout`` seconds per outage), subscribe
    again and go on; each instance's current frame arrives first. Frames
    of the outage are missed, as any slow subscriber's are. ``token``: as
    for :class:`Client` (None: ``CLOTHD_TOKEN`` if set); the read-only
    token is enough for a subscriber. Each connection authenticates before
    it subscribes. ``unix_socket``: the server's Unix socket path instead
    of host:port (as for :class:`Client`).
    """

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 instances: Union[int, Sequence[int], None] = None, *, quantize: bool = False,
                 every: int = 1, channels: Optional[Sequence[str]] = None,
                 timeout: Optional[float] = 10.0, reconnect: bool = True,
                 reconnect_timeout: float = 30.0, rcvbuf: Optional[int] = None,
                 token: Optional[str] = None, scene: Optional[str] = None,
                 unix_socket: Optional[str] = None, shm: bool = False):
        self.client = Client(host, port, timeout, rcvbuf=rcvbuf, reconnect=False,
                             reconnect_timeout=reconnect_timeout, token=token, unix_socket=unix_socket)
        #: The scene subscribed to (None: not one).
        self.scene = scene
        if isinstance(instances, int):
            instances = [instances]
        self.instances: Optional[List[int]] = None if instances is None else list(instances)
        self.quantize = quantize
        self.every = every
        self.channels: Optional[List[str]] = None if channels is None else list(channels)
        self.shm = shm
        self.reconnect = reconnect
        self.callback: Optional[Callable[[Frame], None]] = None
        #: The exception that ended the background thread, if any.
        self.error: Optional[BaseException] = None
        #: Frames received so far.
        self.received = 0
        self._latest: Dict[int, Frame] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._subscribed = False

    # -- lifecycle ----------------------------------------------------------

    def connect(self) -> "Subscriber":
        """Connects and subscribes (idempotent); returns self."""
        if not self._subscribed:
            self.client.connect()
            self.client.subscribe(instances=self.instances, quantize=self.quantize or None,
                                  every=None if self.every == 1 else self.every,
                                  channels=self.channels, scene=self.scene, shm=self.shm or None)
            self._subscribed = True
        return self

    def start(self, callback: Optional[Callable[[Frame], None]] = None) -> "Subscriber":
        """Connects, subscribes and reads frames on a daemon thread."""
        if self._thread is not None:
            return self
        self.callback = callback
        self.connect()
        self._thread = threading.Thread(target=self._run, name="clothd-subscriber", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stops the thread (within ~0.2 s) and closes the connection."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None
        self.client.close()
        self._subscribed = False
        with self._cond:
            self._cond.notify_all()

    stop = close

    def __enter__(self) -> "Subscriber":
        return self.connect()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def events(self) -> Deque[Dict[str, Any]]:
        """Events the server sent (e.g. ``{"event": "debug", ...}``)."""
        return self.client.events

    @property
    def access(self) -> Optional[str]:
        """The access the server granted ("full", "readonly"), or None."""
        return self.client.access

    @property
    def frames_missed(self) -> int:
        """Shared-memory frames (``shm=True``) overwritten in the server's
        ring before they were read, so not delivered."""
        return self.client.frames_missed

    # -- reading ------------------------------------------------------------

    def frames(self, timeout: Optional[float] = None) -> Iterator[Frame]:
        """Yields frames as they come. ``timeout``: seconds without any
        frame before TimeoutError (None: wait forever). Ends when
        :meth:`close` is called."""
        self.connect()
        idle_since = _time.monotonic()
        while not self._stop.is_set():
            try:
                frame = self.client.next_frame(timeout=0.2)
            except socket.timeout:  # TimeoutError (an alias since Python 3.10)
                if timeout is not None and _time.monotonic() - idle_since > timeout:
                    raise
                continue
            except ConnectionError:
                if self._stop.is_set() or not self.reconnect:
                    raise
                self.client.reconnect()
                continue
            idle_since = _time.monotonic()
            self._keep(frame)
            yield frame

    __iter__ = frames

    def _keep(self, frame: Frame) -> None:
        with self._cond:
            self._latest[frame.instance] = frame
            self.received += 1
            self._cond.notify_all()

    def _run(self) -> None:
        try:
            for frame in self.frames():
                if self.callback is not None:
                    self.callback(frame)
        except BaseException as e:  # noqa: BLE001 - reported through .error
            if not self._stop.is_set():
                self.error = e
        finally:
            with self._cond:
                self._cond.notify_all()

    def latest(self, instance: Optional[int] = None) -> Optional[Frame]:
        """The newest frame of ``instance`` (or of any instance when None),
        or None when none has arrived yet."""
        with self._cond:
            if instance is not None:
                return self._latest.get(instance)
            if not self._latest:
                return None
            return max(self._latest.values(), key=lambda f: (f.time, f.frame))

    def wait_for(self, instance: int, frame: int = 0, timeout: Optional[float] = 10.0) -> Frame:
        """Blocks until a frame of ``instance`` numbered ``frame`` or later
        has arrived (background mode); returns the newest. TimeoutError
        after ``timeout`` seconds; the thread's error if it died."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        with self._cond:
            while True:
                f = self._latest.get(instance)
                if f is not None and f.frame >= frame:
                    return f
                if self.error is not None:
                    raise self.error
                if self._thread is None or self._stop.is_set():
                    raise RuntimeError("Subscriber.wait_for needs start() (the background thread)")
                left = None if deadline is None else deadline - _time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"no frame >= {frame} of instance {instance} within {timeout} s")
                self._cond.wait(left if left is not None else 1.0)


# ---- scenes and sharding --------------------------------------------------------
#
# A scene is a named group of instances on one server (PROTOCOL.md, Scenes).
# Scene stamps its name on every request that accepts one, so the server
# checks that each instance it names belongs to the scene, and step, status,
# destroy and subscribe without instances act on the whole scene.
#
# ShardedClient spreads scenes over several servers with no coordinator:
# every client computes a scene's server from the endpoint list alone, by
# rendezvous (highest random weight) hashing (PROTOCOL.md, "Sharding"), and
# sends all of that scene's requests there. A scene never spans two servers.

#: The commands that accept ``"scene"`` (``wind`` only with an instance: the
#: global wind belongs to no scene).
SCENE_COMMANDS = frozenset({
    "create", "destroy", "pin", "unpin", "wind", "gravity", "addCollider", "moveCollider",
    "removeCollider", "enable", "step", "get", "subscribe", "unsubscribe", "status", "set",
    "transform", "attach", "topology", "skin", "teleport", "save", "record",
})

_SCENE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")

_FNV64_OFFSET = 0xCBF29CE484222325
_FNV64_PRIME = 0x100000001B3
_MASK64 = (1 << 64) - 1


def _takes_scene(cmd: str, msg: Dict[str, Any]) -> bool:
    return cmd in SCENE_COMMANDS and (cmd != "wind" or "instance" in msg)


def check_scene_name(name: str) -> str:
    """Returns ``name`` when it is a valid scene name (1 to 64 bytes of
    ``A-Z a-z 0-9 . _ : -``), else raises ValueError saying why."""
    if not isinstance(name, str):
        raise TypeError(f"scene: expected a string, got {type(name).__name__}")
    if not 1 <= len(name) <= 64:
        raise ValueError(f"scene: {len(name)} bytes; a scene name has 1 to 64")
    bad = next((ch for ch in name if ch not in _SCENE_CHARS), None)
    if bad is not None:
        raise ValueError(f"scene: {name!r} holds {bad!r}; a scene name is made of A-Z a-z 0-9 . _ : -")
    return name


def unix_endpoint_path(endpoint: str) -> Optional[str]:
    """The socket path of a Unix-socket endpoint (``"unix:/run/clothd.sock"``
    -> ``"/run/clothd.sock"``); None for any other text. ``unix:`` followed
    by digits only stays a TCP endpoint (a host named ``unix``): write
    ``unix:./7878`` for a socket file of that name. ValueError when the
    path cannot name a Unix socket (longer than :data:`UNIX_PATH_MAX`)."""
    if not isinstance(endpoint, str) or not endpoint.startswith(UNIX_PREFIX):
        return None
    path = endpoint[len(UNIX_PREFIX):]
    if path.isdigit():
        return None
    try:
        return _check_unix_path(path)
    except ValueError as e:
        raise ValueError(f"endpoint {endpoint[:80]!r}: {e}") from None


def parse_endpoint(endpoint: str) -> Tuple[str, int]:
    """``"host:port"`` (``"[::1]:7878"`` for an IPv6 address) as
    ``(host, port)``; ValueError naming the endpoint when it is not one
    (a ``"unix:PATH"`` endpoint is read by :func:`unix_endpoint_path`)."""
    if not isinstance(endpoint, str):
        raise TypeError(f"endpoint: expected a \"host:port\" string, got {type(endpoint).__name__}")
    host, sep, port = endpoint.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535 or "\0" in host:
        raise ValueError(f"endpoint {endpoint!r}: expected \"host:port\" with a port from 1 to 65535, "
                         f"or \"unix:PATH\"")
    return host, int(port)


def _fnv1a64(data: bytes) -> int:
    h = _FNV64_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV64_PRIME) & _MASK64
    return h


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK64
    return h ^ (h >> 33)


def rendezvous_weight(endpoint: str, scene: str) -> int:
    """The weight of ``scene`` on ``endpoint``, an unsigned 64-bit integer:
    64-bit FNV-1a of the UTF-8 bytes of endpoint, one zero byte and scene,
    then MurmurHash3's 64-bit finaliser (fmix64). PROTOCOL.md ("Sharding")
    gives the exact function and protocol/placement_vectors.json its test
    vectors; the Node and C clients compute the same numbers."""
    return _fmix64(_fnv1a64(endpoint.encode() + b"\0" + scene.encode()))


def place_scene(endpoints: Sequence[str], scene: str) -> str:
    """The endpoint of ``endpoints`` that serves ``scene``: the one of the
    highest :func:`rendezvous_weight` (on a tie, the one whose UTF-8 bytes
    sort first). The order of the list does not matter. Adding an endpoint
    moves only the scenes it now wins (about 1/N of them) and only onto
    itself; removing one moves only its own scenes."""
    best: Optional[str] = None
    best_weight = -1
    for endpoint in endpoints:
        weight = rendezvous_weight(endpoint, scene)
        if weight > best_weight or (weight == best_weight and best is not None
                                    and endpoint.encode() < best.encode()):
            best, best_weight = endpoint, weight
    if best is None:
        raise ValueError("place_scene: no endpoints")
    return best


class EndpointUnavailable(ConnectionError):
    """The server that serves a scene cannot be reached (refused, reset,
    timed out, closed). ``endpoint`` names it (``"10.0.0.7:7878"``, or
    ``"unix:/run/clothd.sock"``),
    ``scene`` the scene asked for (None when none was).

    A :class:`ShardedClient` never sends the scene elsewhere instead: its
    instances live on that server, and a copy started on another would
    split the scene in two that never meet again once the server is back.
    The next call tries that endpoint again."""

    def __init__(self, endpoint: str, scene: Optional[str], cause: BaseException):
        where = f" (scene {scene!r} lives there)" if scene is not None else ""
        super().__init__(f"clothd endpoint {endpoint} is unavailable{where}: {cause}; "
                         f"its scenes are not moved to another endpoint")
        self.endpoint = endpoint
        self.scene = scene
        self.cause = cause


class Scene:
    """A scene on one server: every :class:`Client` method, with the
    scene's name sent as ``"scene"`` in each request that accepts one
    (:data:`SCENE_COMMANDS`).

    ``Scene(client, "npc-capes")`` works on one server;
    :meth:`ShardedClient.scene` gives one bound to the scene's server.
    Instances made through it belong to the scene; ids of other scenes
    are refused (``not_found``). Without instances, :meth:`step`,
    :meth:`status`, :meth:`subscribe` and :meth:`destroy` act on the whole
    scene::

        capes = Scene(client, "npc-capes")
        cape = capes.create_cloth(width=16, height=24)
        capes.step(1 / 60)          # every instance of npc-capes, no other
        capes.destroy()             # the whole scene

    Like the client it wraps, a Scene belongs to one thread at a time.
    """

    def __init__(self, client: Optional[Client], name: str, *, endpoint: Optional[str] = None,
                 shards: Optional["ShardedClient"] = None):
        if endpoint is None:
            if client is None:
                raise TypeError("Scene: needs a client (or a ShardedClient and the endpoint)")
            endpoint = client.endpoint
        if client is None and shards is None:
            raise TypeError("Scene: needs a client (or a ShardedClient)")
        self.name = check_scene_name(name)
        #: "host:port" (or "unix:PATH") of the server the scene lives on.
        self.endpoint: str = endpoint
        self._fixed = client
        self._shards = shards

    def __repr__(self) -> str:
        return f"<clothd.Scene {self.name!r} on {self.endpoint}>"

    @property
    def client(self) -> Client:
        """The connection this scene's requests go through (a sharded
        scene's is opened on first use)."""
        if self._fixed is not None:
            return self._fixed
        assert self._shards is not None
        return self._shards.client(self.endpoint, scene=self.name)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        other = kwargs.get("scene")
        if other is not None and other != self.name:
            raise ValueError(f"scene {self.name!r}: a request for scene {other!r} does not go through "
                             f"this handle (a sharded scene may live on another server); use a handle "
                             f"on {other!r}")
        client = self.client
        previous, client._scene = client._scene, self.name
        try:
            return getattr(client, method)(*args, **kwargs)
        except OSError as e:
            if self._shards is None or isinstance(e, EndpointUnavailable):
                raise
            self._shards._forget(self.endpoint, client)
            raise EndpointUnavailable(self.endpoint, self.name, e) from e
        finally:
            client._scene = previous

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_") or not callable(getattr(Client, attr, None)):
            raise AttributeError(f"Scene has no attribute {attr!r}")
        def method(*args: Any, **kwargs: Any) -> Any:
            return self._call(attr, *args, **kwargs)
        method.__name__ = attr
        method.__doc__ = getattr(Client, attr).__doc__
        return method

    def request(self, cmd: str, **fields: Any) -> Dict[str, Any]:
        """:meth:`Client.request` in this scene (``"scene"`` is added when
        ``cmd`` takes one and ``fields`` do not name another)."""
        return self._call("request", cmd, **fields)

    def step(self, dt: float = 1 / 60, instances: Optional[Sequence[int]] = None, **kwargs: Any) -> Dict[str, Any]:
        """Steps every enabled instance of the scene (or the ``instances``
        of it listed) once by ``dt``; the reply as :meth:`Client.step`."""
        return self._call("step", dt, instances, **kwargs)

    def status(self) -> Dict[str, Any]:
        """The status reply with only this scene's instances."""
        return self._call("status")

    def destroy(self, instance: Optional[int] = None, **kwargs: Any) -> List[int]:
        """Destroys one instance of the scene (or ``instances=[...]``), or
        with none every instance of the scene; returns the destroyed ids."""
        return self._call("destroy", instance, **kwargs)

    def scene(self, *, ephemeral: Optional[bool] = None) -> Dict[str, Any]:
        """The ``scene`` command about this scene, on its server:
        ``ephemeral=True`` ties the scene to the connection this handle
        goes through (for a :class:`ShardedClient`, the one shared with
        the endpoint's other scenes: the scene goes when it closes or
        breaks), ``False`` lets go, None only asks. Returns the reply
        (``scene``, ``instances``, ``ephemeral``, ``owned``)."""
        return self._call("scene", self.name, ephemeral)

    def scenes(self) -> List[Dict[str, Any]]:
        """This scene's entry of its server's ``scenes`` (``[]`` when it
        does not exist there)."""
        return self._call("scenes", self.name)

    def instances(self) -> List[int]:
        """The ids of the scene's instances (from :meth:`status`)."""
        return [int(s["instance"]) for s in self.status().get("instances") or []]


class ShardedClient:
    """Scenes spread over several clothd servers, placed by rendezvous
    hashing with no coordinator (PROTOCOL.md, "Sharding").

    ``endpoints``: ``"host:port"`` strings, or ``"unix:PATH"`` for a server
    on this host listening on a Unix socket (``clothd --unix PATH``), spelt
    the same way by every client (the hash reads the text:
    ``"clothd-0.clothd:7878"`` and ``"10.0.0.7:7878"`` are two endpoints). Every process given the same
    list sends a scene to the same server, so game servers need not talk
    to each other or to a coordinator. Other keyword arguments go to each
    :class:`Client` (``timeout``, ``token``, ...)::

        with ShardedClient(["10.0.0.5:7878", "10.0.0.6:7878", "10.0.0.7:7878"]) as shards:
            capes = shards.scene("npc-capes")    # bound to its server
            cape = capes.create_cloth(width=16, height=24)
            capes.step(1 / 60)

    One connection per endpoint, opened when a scene there is first used
    and shared by its scenes. A scene never spans two servers. When its
    server is down, calls on the scene raise :class:`EndpointUnavailable`
    naming the endpoint; nothing fails over (a scene started again
    elsewhere would split it), and the next call connects again. The
    endpoint list is fixed for the client's life: a client built with
    another list (a server added or removed) places about 1/N of the
    scenes elsewhere, whose instances stay where they were made until the
    application moves them (save/load, or create them again).
    """

    def __init__(self, endpoints: Sequence[str], **client_options: Any):
        if isinstance(endpoints, str):
            raise TypeError("ShardedClient: endpoints is a list of \"host:port\" (or \"unix:PATH\") strings, "
                            "not one string")
        self.endpoints: Tuple[str, ...] = tuple(endpoints)
        if not self.endpoints:
            raise ValueError("ShardedClient: no endpoints")
        seen = set()
        for endpoint in self.endpoints:
            if unix_endpoint_path(endpoint) is None:
                parse_endpoint(endpoint)
            if endpoint in seen:
                raise ValueError(f"ShardedClient: endpoint {endpoint!r} is listed twice")
            seen.add(endpoint)
        self._options = client_options
        self._clients: Dict[str, Client] = {}

    def __repr__(self) -> str:
        return f"<clothd.ShardedClient {len(self.endpoints)} endpoints, {len(self._clients)} connected>"

    def __enter__(self) -> "ShardedClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def endpoint(self, scene: str) -> str:
        """The endpoint that serves ``scene`` (no connection is made)."""
        return place_scene(self.endpoints, check_scene_name(scene))

    def scene(self, name: str) -> Scene:
        """A handle on scene ``name`` bound to its server's connection
        (opened on first use)."""
        return Scene(None, name, endpoint=self.endpoint(name), shards=self)

    def client(self, endpoint: str, *, scene: Optional[str] = None) -> Client:
        """The connection to ``endpoint`` (one of :attr:`endpoints`),
        connected now if it is not yet (then its ``hello`` must list the
        ``scenes`` feature, and those of ``require=``, else
        :class:`FeatureMissing`, an :class:`IncompatibleServer`). Raises
        :class:`EndpointUnavailable` when it cannot be reached (``scene``
        is named in the error)."""
        if endpoint not in self.endpoints:
            raise ValueError(f"endpoint {endpoint!r} is not one of this client's {list(self.endpoints)}")
        client = self._clients.get(endpoint)
        if client is not None and client.connected:
            return client
        options = dict(self._options)
        options["require"] = ("scenes",) + tuple(f for f in options.get("require") or () if f != "scenes")
        path = unix_endpoint_path(endpoint)
        if path is not None:
            options["unix_socket"] = path
            client = Client(**options)
        else:
            host, port = parse_endpoint(endpoint)
            options.pop("unix_socket", None)
            client = Client(host, port, **options)
        try:
            client.connect()
        except OSError as e:
            client.close()
            self._clients.pop(endpoint, None)
            raise EndpointUnavailable(endpoint, scene, e) from e
        except FeatureMissing as e:
            client.close()
            if "scenes" not in e.features:
                raise
            raise FeatureMissing(endpoint, e.features,
                                 "needed by ShardedClient (a clothd without scenes would take \"scene\" "
                                 "as an unknown member and mix every scene's instances)",
                                 client._listed()) from None
        except BaseException:
            client.close()
            raise
        self._clients[endpoint] = client
        return client

    def scenes(self) -> List[Dict[str, Any]]:
        """Every scene of every endpoint (each server's ``scenes``),
        merged: each entry ``{"scene", "instances", "ephemeral",
        "endpoint"}``, sorted by scene, then endpoint (a scene found on
        two servers, left behind by a changed endpoint list, shows twice).
        Connects to every endpoint; one that cannot be reached raises
        :class:`EndpointUnavailable` naming it."""
        merged: List[Dict[str, Any]] = []
        for endpoint in self.endpoints:
            client = self.client(endpoint)
            try:
                entries = client.scenes()
            except OSError as e:
                self._forget(endpoint, client)
                raise EndpointUnavailable(endpoint, None, e) from e
            merged += [dict(entry, endpoint=endpoint) for entry in entries]
        return sorted(merged, key=lambda e: (str(e.get("scene")), e["endpoint"]))

    def connected(self) -> List[str]:
        """The endpoints with an open connection."""
        return [e for e, c in self._clients.items() if c.connected]

    def _forget(self, endpoint: str, client: Client) -> None:
        if self._clients.get(endpoint) is client:
            del self._clients[endpoint]
        client.close()

    def close(self) -> None:
        """Closes every connection; safe to call twice."""
        clients, self._clients = self._clients, {}
        for client in clients.values():
            client.close()
