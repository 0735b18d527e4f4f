"""clothd — a stdlib-only Python client for the clothd cloth-simulation server.

The server speaks two kinds of message over one TCP connection:

* JSON lines: requests go client -> server, replies come back in request
  order, each one JSON object terminated by ``'\\n'`` (always starting with
  ``'{'``);
* binary frames: after ``subscribe`` the server streams the positions of the
  subscribed instances, each message a 40-byte little-endian header starting
  with byte ``0x89`` followed by ``3 * count`` float32 positions.

The reader tells them apart by their first byte. While a request waits for
its reply, frames that arrive meanwhile are kept in a bounded queue (the
newest are kept) which :meth:`Client.frames` drains first.

Example::

    from clothd import Client

    with Client() as c:
        cloth = c.create_cloth(width=20, height=20, spacing=0.05)
        c.pin(cloth, list(range(20)))           # the top row, in place
        for _ in range(60):
            c.step(1 / 60)
        state = c.get(cloth)
        print(state.frame, state.positions[-1])

Errors from the server raise :class:`ClothdError` with the wire's stable
``code`` (``invalid_argument``, ``not_found``, ...) and its ``message``.
"""

from __future__ import annotations

import collections
import json
import select
import socket
import struct
import sys
from array import array
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Deque, Dict, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = [
    "Client",
    "ClothdError",
    "ProtocolError",
    "ConnectionClosed",
    "Frame",
    "InstanceState",
    "decode_frame",
    "FRAME_MAGIC",
    "FRAME_HEADER",
    "FRAME_HEADER_SIZE",
    "FRAME_VERSION",
]

Vec3 = Tuple[float, float, float]
VecLike = Sequence[float]

#: First four bytes of every frame.
FRAME_MAGIC = b"\x89CLF"
#: Frame format version this client understands.
FRAME_VERSION = 1
#: magic, version, flags, total length, instance, frame, time, count, reserved.
FRAME_HEADER = struct.Struct("<4sHHIIQdII")
FRAME_HEADER_SIZE = FRAME_HEADER.size  # 40
assert FRAME_HEADER_SIZE == 40

#: Default number of frames kept while waiting for a reply (newest kept).
DEFAULT_FRAME_BACKLOG = 1024

_RECV_CHUNK = 1 << 16


# ---- errors -----------------------------------------------------------------


class ClothdError(Exception):
    """An error reply from the server (``{"ok":false,"error":{...}}``).

    ``code`` is one of the wire's stable codes: ``parse_error``,
    ``unknown_command``, ``invalid_argument``, ``not_found``,
    ``limit_exceeded``, ``line_too_long``, ``internal``.
    ``message`` names the offending field first (``"width: must be ..."``).
    ``reply`` is the whole decoded reply, when there was one.
    """

    def __init__(self, code: str, message: str, reply: Optional[Dict[str, Any]] = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reply = reply


class ProtocolError(ClothdError):
    """The byte stream broke the wire contract (client-side check)."""

    def __init__(self, message: str):
        super().__init__("protocol_error", message)


class ConnectionClosed(ConnectionError):
    """The server closed the connection."""


# ---- frames -----------------------------------------------------------------


@dataclass
class Frame:
    """One decoded binary frame: the state of one instance after a step.

    ``flat`` holds the ``3 * count`` float32 coordinates (x0, y0, z0, x1, ...)
    exactly as sent; ``positions`` is the same data as (x, y, z) tuples.
    ``payload`` is the raw little-endian float32 bytes, handy for bit-exact
    comparisons.
    """

    instance: int
    frame: int
    time: float
    count: int
    flat: array
    payload: bytes = field(repr=False)
    version: int = FRAME_VERSION
    flags: int = 0

    @cached_property
    def positions(self) -> List[Vec3]:
        """The positions as a list of (x, y, z) tuples (computed once)."""
        f = self.flat
        return [(f[i], f[i + 1], f[i + 2]) for i in range(0, len(f), 3)]


def decode_frame(buf: bytes) -> Frame:
    """Decodes one complete frame (header + payload).

    Raises :class:`ProtocolError` when the magic, the version or the length
    is wrong (the header's total length must equal ``len(buf)`` and
    ``40 + 12 * count``).
    """
    if len(buf) < FRAME_HEADER_SIZE:
        raise ProtocolError(f"frame: {len(buf)} bytes is shorter than the {FRAME_HEADER_SIZE}-byte header")
    magic, version, flags, length, instance, frame, time, count, _reserved = FRAME_HEADER.unpack_from(buf, 0)
    if magic != FRAME_MAGIC:
        raise ProtocolError(f"frame: bad magic {magic!r}")
    if version != FRAME_VERSION:
        raise ProtocolError(f"frame: unsupported version {version}")
    if length != len(buf):
        raise ProtocolError(f"frame: header says {length} bytes, got {len(buf)}")
    if length != FRAME_HEADER_SIZE + 12 * count:
        raise ProtocolError(f"frame: length {length} does not match {count} particles")
    payload = bytes(buf[FRAME_HEADER_SIZE:])
    flat = array("f")
    flat.frombytes(payload)
    if sys.byteorder != "little":
        flat.byteswap()
    return Frame(instance=instance, frame=frame, time=time, count=count, flat=flat,
                 payload=payload, version=version, flags=flags)


# ---- get ----------------------------------------------------------------------


@dataclass
class InstanceState:
    """The reply of ``get``: one instance's full state."""

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
    flat: array = field(repr=False)
    reply: Dict[str, Any] = field(repr=False)

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


def _vec(v: Optional[VecLike]) -> Optional[List[float]]:
    return None if v is None else [float(x) for x in v]


Message = Union[Dict[str, Any], Frame]


class Client:
    """A connection to one clothd server.

    ``timeout`` bounds every blocking socket operation (seconds; ``None``
    blocks forever). ``rcvbuf``, when given, sets ``SO_RCVBUF`` before
    connecting (tests use a tiny one to play a slow subscriber).
    ``frame_backlog`` bounds the frames kept while waiting for replies.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 7878, timeout: Optional[float] = 10.0,
                 *, rcvbuf: Optional[int] = None, frame_backlog: int = DEFAULT_FRAME_BACKLOG):
        self.host = host
        self.port = port
        self.timeout = timeout
        self.rcvbuf = rcvbuf
        self._sock: Optional[socket.socket] = None
        self._buf = bytearray()
        self._next_id = 1
        self._frames: Deque[Frame] = collections.deque(maxlen=frame_backlog)
        # Server events ({"event": ...}, e.g. the debug overlay toggled).
        self.events: Deque[Dict[str, Any]] = collections.deque(maxlen=256)
        self._replies: Deque[Dict[str, Any]] = collections.deque()

    # -- connection ---------------------------------------------------------

    def connect(self) -> "Client":
        """Opens the connection (idempotent). Returns self."""
        if self._sock is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if self.rcvbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
            sock.settimeout(self.timeout)
            sock.connect((self.host, self.port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        return self

    def close(self) -> None:
        """Closes the connection; safe to call twice."""
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
                self._buf.clear()

    def __enter__(self) -> "Client":
        return self.connect()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def sock(self) -> socket.socket:
        """The underlying socket (connects first if needed)."""
        if self._sock is None:
            self.connect()
        assert self._sock is not None
        return self._sock

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

        Events ({"event": ...}) are not returned: they go to ``self.events``.
        Does not look at the queued frames or replies.
        """
        while True:
            msg = self._read_any()
            if isinstance(msg, dict) and "event" in msg and "ok" not in msg:
                self.events.append(msg)
                continue
            return msg

    def _read_any(self) -> Message:
        while not self._buf:
            self._fill()
        first = self._buf[0]
        if first == ord("{"):
            line = self._take_line()
            try:
                obj = _loads(line)
            except ValueError as e:
                raise ProtocolError(f"reply: not JSON ({e}): {line[:200]!r}") from None
            if not isinstance(obj, dict):
                raise ProtocolError(f"reply: not a JSON object: {line[:200]!r}")
            return obj
        if first == FRAME_MAGIC[0]:
            header = self._take(FRAME_HEADER_SIZE)
            length = FRAME_HEADER.unpack_from(header, 0)[3]
            if length < FRAME_HEADER_SIZE:
                raise ProtocolError(f"frame: total length {length} is shorter than the header")
            return decode_frame(header + self._take(length - FRAME_HEADER_SIZE))
        raise ProtocolError(f"stream: unexpected first byte 0x{first:02x}")

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

    def request(self, cmd: str, **fields: Any) -> Dict[str, Any]:
        """Sends ``{"id": n, "cmd": cmd, ...fields}`` and returns the reply.

        snake_case field names become camelCase; ``None`` values are left
        out. Raises :class:`ClothdError` on an error reply.
        """
        rid = self._next_id
        self._next_id += 1
        msg: Dict[str, Any] = {"id": rid, "cmd": cmd}
        for key, value in fields.items():
            if value is not None:
                msg[_camel(key)] = value
        reply = self.exchange(msg)
        if reply.get("id") != rid:
            raise ProtocolError(f"reply: expected id {rid}, got {reply.get('id')!r}: {reply!r}")
        if reply.get("ok") is not True:
            err = reply.get("error") or {}
            raise ClothdError(str(err.get("code", "internal")), str(err.get("message", "")), reply)
        return reply

    def create_cloth(self, **fields: Any) -> int:
        """Creates a cloth and returns its instance id.

        Keyword fields (all optional): width, height, spacing, mass,
        stiffness, bend_stiffness, damping, origin, solver_iterations, right,
        down, gravity.
        """
        fields.setdefault("type", "cloth")
        return int(self.request("create", **fields)["instance"])

    def destroy(self, instance: int) -> None:
        """Destroys an instance; its id never works again."""
        self.request("destroy", instance=instance)

    def pin(self, instance: int, particles: Union[int, Sequence[int]], position: Optional[VecLike] = None,
            positions: Optional[Sequence[VecLike]] = None) -> int:
        """Pins one particle (an int) or several (a sequence).

        Without ``position``/``positions`` the particles are pinned where
        they are. Returns the server's ``pinned`` count.
        """
        if isinstance(particles, int):
            reply = self.request("pin", instance=instance, particle=particles, position=_vec(position))
        else:
            pos = None if positions is None else [_vec(p) for p in positions]
            reply = self.request("pin", instance=instance, particles=list(particles), positions=pos)
        return int(reply.get("pinned", 0))

    def unpin(self, instance: int, particles: Union[int, Sequence[int]]) -> int:
        """Unpins one particle or several; returns the ``unpinned`` count."""
        if isinstance(particles, int):
            reply = self.request("unpin", instance=instance, particle=particles)
        else:
            reply = self.request("unpin", instance=instance, particles=list(particles))
        return int(reply.get("unpinned", 0))

    def wind(self, wind: VecLike, instance: Optional[int] = None) -> List[float]:
        """Sets an instance's wind, or the global wind when instance is None."""
        return self.request("wind", instance=instance, wind=_vec(wind)).get("wind")

    def gravity(self, instance: int, gravity: VecLike) -> None:
        """Sets an instance's gravity (m/s^2)."""
        self.request("gravity", instance=instance, gravity=_vec(gravity))

    def add_collider(self, instance: int, type: str, position: Optional[VecLike] = None,
                     normal: Optional[VecLike] = None, radius: Optional[float] = None,
                     height: Optional[float] = None) -> int:
        """Adds a "sphere", "capsule" or "plane" collider; returns its id."""
        reply = self.request("addCollider", instance=instance, type=type, position=_vec(position),
                             normal=_vec(normal), radius=radius, height=height)
        return int(reply["collider"])

    def move_collider(self, instance: int, collider: int, position: Optional[VecLike] = None,
                      normal: Optional[VecLike] = None) -> None:
        """Moves and/or turns a collider (at least one of the two)."""
        self.request("moveCollider", instance=instance, collider=collider, position=_vec(position),
                     normal=_vec(normal))

    def remove_collider(self, instance: int, collider: int) -> None:
        """Removes a collider; its id never works again."""
        self.request("removeCollider", instance=instance, collider=collider)

    def enable(self, instance: int, enabled: bool = True) -> bool:
        """Enables or disables stepping; enabling clears the unstable flag."""
        return bool(self.request("enable", instance=instance, enabled=enabled).get("enabled"))

    def step(self, dt: float = 1 / 60, instances: Optional[Sequence[int]] = None) -> Dict[str, Any]:
        """Steps every enabled instance (or just ``instances``) once by dt.

        Returns the reply: ``{"stepped": n, "unstable": [ids], ...}``.
        """
        return self.request("step", dt=dt, instances=None if instances is None else list(instances))

    def get(self, instance: int) -> InstanceState:
        """The full state of one instance."""
        return InstanceState.from_reply(self.request("get", instance=instance))

    def subscribe(self, instance: Optional[int] = None, instances: Optional[Sequence[int]] = None) -> None:
        """Subscribes to frames of one instance, several, or (neither) all."""
        self.request("subscribe", instance=instance, instances=None if instances is None else list(instances))

    def unsubscribe(self, instance: Optional[int] = None, instances: Optional[Sequence[int]] = None) -> None:
        """Drops subscriptions; with neither argument, all of them."""
        self.request("unsubscribe", instance=instance, instances=None if instances is None else list(instances))

    def status(self) -> Dict[str, Any]:
        """The server's status reply (instances, workers, text, ...)."""
        return self.request("status")

    def debug(self, enabled: Optional[bool] = None) -> bool:
        """Shows (no argument) or sets the viewers' debug overlay flag.

        Subscribed connections receive {"event": "debug", "enabled": b}
        when it changes; they appear in ``Client.events``."""
        if enabled is None:
            return bool(self.request("debug")["enabled"])
        return bool(self.request("debug", enabled=enabled)["enabled"])

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
        seconds (default: the client's timeout). Raises TimeoutError."""
        if self._frames:
            return self._frames.popleft()
        if timeout is None:
            return self._next_frame_blocking()
        old = self.sock.gettimeout()
        self.sock.settimeout(timeout)
        try:
            return self._next_frame_blocking()
        finally:
            self.sock.settimeout(old)

    def poll_frames(self) -> List[Frame]:
        """Every queued frame plus whatever frames are already readable,
        without waiting for new ones."""
        out = list(self._frames)
        self._frames.clear()
        while self._buf or select.select([self.sock], [], [], 0)[0]:
            msg = self.read_message()
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

