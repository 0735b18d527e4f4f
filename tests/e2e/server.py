"""Starts and stops the real clothd binary for the end-to-end tests.

The binary comes from the CLOTHD_BIN environment variable (run_all.py sets
it). Each server listens on an ephemeral port (--port 0); the port is read
from the one line clothd prints on start:

    clothd 0.1.0 listening on 127.0.0.1:PORT (N workers)

Server(unix=True) also passes `--unix PATH` (a fresh temporary folder's
clothd.sock) and waits for the second line,

    clothd listening on unix:PATH

after which `unix_path` holds PATH (Client(unix_socket=server.unix_path)).

stop() sends SIGTERM and requires exit code 0 within 5 seconds.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import List, Optional, Sequence, Union

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "clients", "python"))

from clothd import Client  # noqa: E402

BANNER = re.compile(r"^clothd (\d+\.\d+\.\d+) listening on ([0-9.]+):(\d+) \((\d+) workers\)$")
UNIX_BANNER = re.compile(r"^clothd listening on unix:(.+)$")
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0


def clothd_bin() -> str:
    """Path of the binary under test (CLOTHD_BIN, default build/clothd)."""
    return os.environ.get("CLOTHD_BIN") or os.path.join(REPO, "build", "clothd")


class Server:
    """One running clothd process. Use as a context manager or call
    start()/stop(); stop() raises AssertionError unless the process exits
    with code 0 within 5 s of SIGTERM."""

    def __init__(self, *args: str, workers: Optional[int] = 2, wrapper: Sequence[str] = (),
                 unix: Union[bool, str] = False):
        self.args: List[str] = list(args)
        # --unix: True, a socket in a folder of its own (removed when the
        # server stops); a str, that path (a restarted server's, say).
        self.unix_dir: Optional[str] = tempfile.mkdtemp(prefix="clothd-e2e-") if unix is True else None
        self.unix_path = os.path.join(self.unix_dir, "clothd.sock") if self.unix_dir else (unix or "")
        if self.unix_path:
            self.args += ["--unix", self.unix_path]
        self.wrapper: List[str] = list(wrapper)  # e.g. valgrind and its flags
        self.stop_timeout = STOP_TIMEOUT
        if workers is not None and "--workers" not in self.args:
            self.args += ["--workers", str(workers)]
        self.proc: Optional[subprocess.Popen] = None
        self.host = "127.0.0.1"
        self.port = 0
        self.workers = 0
        self.version = ""
        self.banner = ""
        self.extra_stdout: List[str] = []
        self._stderr = tempfile.TemporaryFile()
        self._drain: Optional[threading.Thread] = None
        self._pending = b""  # stdout read past the lines taken so far

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> "Server":
        cmd = [*self.wrapper, clothd_bin(), "--port", "0", *self.args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr)
        line = self._read_banner()
        m = BANNER.match(line)
        if not m:
            self.kill()
            raise AssertionError(f"unexpected first stdout line {line!r}; stderr: {self.stderr()!r}")
        self.banner = line
        self.version, self.host, self.port, self.workers = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        if self.unix_path:
            line = self._read_banner()
            u = UNIX_BANNER.match(line)
            if not u or u.group(1) != self.unix_path:
                self.kill()
                raise AssertionError(f"expected 'clothd listening on unix:{self.unix_path}' after the "
                                     f"banner, got {line!r}; stderr: {self.stderr()!r}")
        if self._pending:
            self.extra_stdout.append(self._pending.decode(errors="replace"))
            self._pending = b""
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()
        return self

    def _read_banner(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        data = self._pending
        deadline = time.monotonic() + START_TIMEOUT
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise AssertionError(f"clothd printed no banner within {START_TIMEOUT}s: {data!r}; "
                                     f"stderr: {self.stderr()!r}")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                code = self.proc.wait(timeout=STOP_TIMEOUT)
                self._cleanup()  # its --unix folder too
                raise AssertionError(f"clothd exited ({code}) before its banner: {data!r}; "
                                     f"stderr: {self.stderr()!r}")
            data += chunk
        first, _, self._pending = data.partition(b"\n")
        return first.decode(errors="replace")

    def _drain_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.extra_stdout.append(chunk.decode(errors="replace"))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stderr(self, limit: Optional[int] = 4000) -> str:
        """What clothd wrote to stderr: the last `limit` characters (all of
        it with limit=None: its log)."""
        # pread, never seek+read: the child writes through the same open
        # file description, so moving its offset made clothd's next line
        # overwrite the start of the file (a torn log line in CI).
        fd, chunks, at = self._stderr.fileno(), [], 0
        while True:
            chunk = os.pread(fd, 1 << 16, at)
            if not chunk:
                break
            chunks.append(chunk)
            at += len(chunk)
        text = b"".join(chunks).decode(errors="replace")
        return text if limit is None else text[-limit:]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Sends `sig` and asserts a clean exit (code 0) within 5 s."""
        if self.proc is None:
            return 0
        proc = self.proc
        if proc.poll() is not None:
            code = proc.returncode
            self._cleanup()
            raise AssertionError(f"clothd had already exited with {code}; stderr: {self.stderr()!r}")
        proc.send_signal(sig)
        try:
            code = proc.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"clothd did not exit within {self.stop_timeout}s of signal {sig}; "
                                 f"stderr: {self.stderr()!r}") from None
        err = self.stderr()
        self._cleanup()
        if code != 0:
            raise AssertionError(f"clothd exited with {code} after signal {sig} (expected 0); stderr: {err!r}")
        return code

    def kill(self) -> None:
        """Kills the process without checks (for error paths)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        if self.proc is not None:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None
        if self._drain is not None:
            self._drain.join(timeout=1)
            self._drain = None
        if self.unix_dir is not None:
            shutil.rmtree(self.unix_dir, ignore_errors=True)
            self.unix_dir = None

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.stop()
        else:
            self.kill()

    # -- helpers --------------------------------------------------------------

    def client(self, timeout: Optional[float] = 10.0, **kwargs) -> Client:
        """A connected client."""
        return Client(self.host, self.port, timeout, **kwargs).connect()

    def rss_kib(self) -> int:
        """VmRSS of the server process in KiB (Linux /proc). Under a
        sanitizer build (run_all.py --sanitizer) the test is skipped here:
        ASan's quarantine and TSan's shadow memory make RSS bounds
        meaningless (the release run of the suite keeps them)."""
        if os.environ.get("CLOTHD_SANITIZER"):
            raise unittest.SkipTest(f"RSS is not measured under {os.environ['CLOTHD_SANITIZER']}")
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS line")


class ServerTestCase(unittest.TestCase):
    """A test case with one server per test class.

    SERVER_ARGS holds extra flags. The server is stopped (and its clean
    exit asserted) in tearDownClass. self.c is a fresh client per test.
    """

    SERVER_ARGS: Sequence[str] = ()
    WORKERS: Optional[int] = 2
    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(*cls.SERVER_ARGS, workers=cls.WORKERS).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def setUp(self) -> None:
        self.assertTrue(self.server.alive(), f"clothd died; stderr: {self.server.stderr()!r}")
        self.c = self.server.client()
        self.addCleanup(self.c.close)

    def client(self, **kwargs) -> Client:
        c = self.server.client(**kwargs)
        self.addCleanup(c.close)
        return c

    def assertServerAlive(self) -> None:
        self.assertTrue(self.server.alive(), f"clothd died; stderr: {self.server.stderr()!r}")


def fresh_server(test: unittest.TestCase, *args: str, workers: Optional[int] = 2) -> Server:
    """Starts a server for one test; a clean SIGTERM exit is asserted at the
    end of the test (only when the test itself passed)."""
    srv = Server(*args, workers=workers).start()

    def finish() -> None:
        if srv.proc is None:
            return
        outcome = getattr(test, "_outcome", None)
        failed = outcome is not None and not getattr(outcome, "success", True)
        if failed:
            srv.kill()
        else:
            srv.stop()

    test.addCleanup(finish)
    return srv


# ---- shared facts and assertions --------------------------------------------


def constraint_count(w: int, h: int) -> int:
    """The contract's constraint count for a W x H cloth (10x10 -> 502)."""
    return (w - 1) * h + w * (h - 1) + 2 * (w - 1) * (h - 1) + (w - 2) * h + w * (h - 2)


def normalised(v: Sequence[float]) -> List[float]:
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


def grid(width: int, height: int, spacing: float = 0.1, origin=(0.0, 0.0, 0.0), right=(1.0, 0.0, 0.0),
         down=(0.0, -1.0, 0.0)) -> List[List[float]]:
    """Expected rest positions: origin + x*spacing*right + y*spacing*down,
    particle index y*width + x."""
    r, d = normalised(right), normalised(down)
    return [[origin[k] + x * spacing * r[k] + y * spacing * d[k] for k in range(3)]
            for y in range(height) for x in range(width)]


def send_line(c: Client, line: str) -> dict:
    """Sends one raw request line (a '\\n' is added) and returns the reply."""
    c.send_raw(line.encode() + b"\n")
    return c.read_reply()


def assert_error(tc: unittest.TestCase, reply: dict, code: str, field: Optional[str] = None,
                 message: Optional[str] = None, prefix: Optional[str] = None) -> None:
    """An error reply with `code`, whose message starts with "field: ",
    equals `message` and starts with `prefix` (each when given)."""
    tc.assertIs(reply.get("ok"), False, f"expected an error reply, got {reply!r}")
    err = reply.get("error")
    tc.assertIsInstance(err, dict, f"error member missing: {reply!r}")
    tc.assertEqual(err.get("code"), code, f"wrong code in {reply!r}")
    msg = err.get("message")
    tc.assertIsInstance(msg, str, f"message missing: {reply!r}")
    if field is not None:
        tc.assertTrue(msg.startswith(field + ": "), f"message should start with {field + ': '!r}: {reply!r}")
    if message is not None:
        tc.assertEqual(msg, message, f"exact message in {reply!r}")
    if prefix is not None:
        tc.assertTrue(msg.startswith(prefix), f"message should start with {prefix!r}: {reply!r}")


def assert_still_works(tc: unittest.TestCase, c: Client) -> None:
    """The connection still answers: a status request succeeds."""
    reply = c.status()
    tc.assertIs(reply.get("ok"), True)
    tc.assertIn("text", reply)
