"""The Unix-socket listener (`clothd --unix PATH`, server/listen_unix.c),
through the real server and raw sockets:

- the same protocol as TCP: requests and replies, a subscription's binary
  frame, byte for byte what a TCP subscriber gets; both listeners serve one
  world;
- the socket file gets --unix-mode's permissions (0600 by default) and is
  removed when the server stops;
- a stale socket file (its server gone) is replaced; a live one, or a path
  that is not a socket, is refused at start (exit 1, the file untouched);
- a path too long for a socket address, or a mode that is not octal, is a
  usage error (exit 2);
- auth applies over the socket as over TCP."""

import json
import os
import socket
import stat
import struct
import subprocess
import tempfile
import time
import unittest

from server import Server, clothd_bin

MAGIC = b"\x89CLF"


class Conn:
    """A raw connection: JSON lines out, lines and binary frames in."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.sock.settimeout(10)
        self.buf = b""
        self.next_id = 1

    def _fill(self, n: int) -> None:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("clothd closed the connection")
            self.buf += chunk

    def message(self):
        """The next message: a dict (a JSON line) or bytes (a frame)."""
        self._fill(4)
        if self.buf[:4] == MAGIC:
            self._fill(12)
            (length,) = struct.unpack_from("<I", self.buf, 8)
            self._fill(length)
            frame, self.buf = self.buf[:length], self.buf[length:]
            return frame
        while b"\n" not in self.buf:
            self._fill(len(self.buf) + 1)
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def request(self, cmd: str, **fields) -> dict:
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall((json.dumps({"id": rid, "cmd": cmd, **fields}) + "\n").encode())
        while True:
            m = self.message()
            if isinstance(m, dict) and m.get("id") == rid:
                return m

    def frame(self) -> bytes:
        while True:
            m = self.message()
            if isinstance(m, bytes):
                return m

    def close(self) -> None:
        self.sock.close()


def unix_conn(path: str) -> Conn:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return Conn(s)


def tcp_conn(server: Server) -> Conn:
    return Conn(socket.create_connection((server.host, server.port)))


def start_failure(*args: str):
    """Runs clothd with `args`, expecting it to refuse: (exit code, stderr)."""
    p = subprocess.run([clothd_bin(), "--port", "0", "--workers", "1", *args],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    return p.returncode, p.stderr.decode(errors="replace")


class UnixSocketTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="clothd-unix-")
        self.path = os.path.join(self.dir, "clothd.sock")

    def tearDown(self):
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)

    def serve(self, *args: str) -> Server:
        server = Server("--unix", self.path, *args).start()
        self.addCleanup(lambda: server.alive() and server.stop())
        return server

    def test_the_socket_should_speak_the_tcp_protocol_on_the_same_world(self):
        server = self.serve()
        announced = f"clothd listening on unix:{self.path}\n"
        deadline = time.monotonic() + 5
        while announced not in "".join(server.extra_stdout) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertIn(announced, "".join(server.extra_stdout), "the line after the TCP banner")
        local, remote = unix_conn(self.path), tcp_conn(server)
        hello = local.request("hello")
        self.assertTrue(hello["ok"])
        self.assertEqual(hello["server"], "clothd")
        created = local.request("create", width=8, height=6)
        self.assertTrue(created["ok"], created)
        inst = created["instance"]
        self.assertEqual(created["particles"], 48)
        self.assertTrue(local.request("subscribe", instance=inst)["ok"])
        self.assertTrue(remote.request("subscribe", instance=inst)["ok"])
        local.frame()  # the current state, sent at once
        remote.frame()
        stepped = remote.request("step", dt=1 / 60)
        self.assertEqual(stepped["stepped"], 1, stepped)
        over_unix, over_tcp = local.frame(), remote.frame()
        self.assertEqual(len(over_unix), 40 + 12 * 48)
        self.assertEqual(struct.unpack_from("<IQ", over_unix, 12), (inst, 1), "instance, frame 1")
        self.assertEqual(over_unix, over_tcp, "the same frame's bytes on both listeners")
        got = local.request("get", instance=inst)
        self.assertEqual(got["frame"], 1)
        bad = local.request("step", dt=-1)
        self.assertFalse(bad["ok"])
        self.assertEqual(bad["error"]["code"], "invalid_argument")
        self.assertEqual(local.request("ping")["ok"], True, "the connection goes on after an error")
        local.close()
        remote.close()

    def test_the_file_should_take_the_mode_and_go_when_the_server_stops(self):
        server = self.serve()
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o600)
        self.assertTrue(stat.S_ISSOCK(os.stat(self.path).st_mode))
        self.assertEqual(server.stop(), 0)
        self.assertFalse(os.path.exists(self.path), "removed at SIGTERM")
        server = self.serve("--unix-mode", "660")
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o660)
        server.stop()

    def test_a_stale_socket_should_be_replaced_and_a_live_one_refused(self):
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(self.path)  # bound, never listening, then gone: a crashed server's file
        stale.close()
        server = self.serve()
        unix_conn(self.path).close()
        code, err = start_failure("--unix", self.path)
        self.assertEqual(code, 1)
        self.assertIn(f"--unix {self.path}: another server is listening there", err)
        c = unix_conn(self.path)
        self.assertTrue(c.request("ping")["ok"], "the first server still serves its socket")
        c.close()
        server.stop()

    def test_a_path_that_is_not_a_socket_should_be_refused_and_kept(self):
        with open(self.path, "w") as f:
            f.write("keep me\n")
        code, err = start_failure("--unix", self.path)
        self.assertEqual(code, 1)
        self.assertIn("the path exists and is not a socket", err)
        with open(self.path) as f:
            self.assertEqual(f.read(), "keep me\n")

    def test_bad_values_should_be_usage_errors(self):
        code, err = start_failure("--unix", os.path.join(self.dir, "x" * 120))
        self.assertEqual(code, 2)
        self.assertIn("--unix: invalid value", err)
        for mode in ("999", "1000", "rw", "-1", ""):
            code, err = start_failure("--unix", self.path, "--unix-mode", mode)
            self.assertEqual(code, 2, mode)
            self.assertIn("--unix-mode: invalid value", err)

    def test_auth_should_apply_over_the_socket(self):
        token = os.path.join(self.dir, "token")
        with open(token, "w") as f:
            f.write("s3cret-token-for-tests\n")
        self.serve("--token-file", token)
        c = unix_conn(self.path)
        refused = c.request("create", width=2, height=2)
        self.assertEqual(refused["error"]["code"], "unauthorized")
        self.assertTrue(c.request("auth", token="s3cret-token-for-tests")["ok"])
        self.assertTrue(c.request("create", width=2, height=2)["ok"])
        c.close()


if __name__ == "__main__":
    unittest.main()
