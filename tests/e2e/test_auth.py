"""Tokens and the read-only token (issue 9, item 7): the security model of
PROTOCOL.md ("Security"), checked against the real server."""

import json
import os
import socket
import subprocess
import tempfile
import time
import unittest

from server import assert_error, clothd_bin, fresh_server

FULL = "full-token-0123456789abcdef"
READONLY = "readonly-token-0123456789abcdef"


def token_file(test, text):
    fd, path = tempfile.mkstemp(prefix="clothd-token-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    test.addCleanup(os.unlink, path)
    return path


def raw(c, obj):
    return c.exchange(obj)


class TokenTest(unittest.TestCase):
    def setUp(self):
        self.full = token_file(self, FULL + "\n")
        self.readonly = token_file(self, READONLY + "\r\n")
        self.srv = fresh_server(self, "--token-file", self.full, "--readonly-token-file", self.readonly)

    def test_nothing_but_auth_before_a_token(self):
        c = self.srv.client()
        self.addCleanup(c.close)
        for cmd in ("status", "ping", "create", "step", "get", "subscribe"):
            assert_error(self, raw(c, {"id": 1, "cmd": cmd, "instance": 1}), "unauthorized",
                         message=f'cmd: "{cmd}" needs auth first')
        reply = raw(c, {"id": 2, "cmd": "auth", "token": FULL})
        self.assertEqual(reply, {"id": 2, "ok": True, "access": "full"})
        self.assertIs(raw(c, {"cmd": "status"})["ok"], True)
        cid = c.create_cloth(width=4, height=4)
        self.assertEqual(c.step(instances=[cid])["stepped"], 1)

    def test_the_read_only_token_allows_reading_and_subscribing_only(self):
        writer = self.srv.client()
        self.addCleanup(writer.close)
        self.assertEqual(raw(writer, {"cmd": "auth", "token": FULL})["access"], "full")
        cid = writer.create_cloth(width=4, height=4)

        viewer = self.srv.client()
        self.addCleanup(viewer.close)
        self.assertEqual(raw(viewer, {"cmd": "auth", "token": READONLY})["access"], "readonly")
        for obj in ({"cmd": "ping"}, {"cmd": "status"}, {"cmd": "get", "instance": cid},
                    {"cmd": "topology", "instance": cid}, {"cmd": "unsubscribe"}):
            self.assertIs(raw(viewer, obj)["ok"], True, obj)
        for obj in ({"cmd": "wind", "wind": [5, 0, 0]}, {"cmd": "step"},
                    {"cmd": "destroy", "instance": cid}, {"cmd": "create"},
                    {"cmd": "debug", "enabled": True}, {"cmd": "pin", "instance": cid, "particle": 0},
                    {"cmd": "set", "instance": cid, "mass": 2}):
            assert_error(self, raw(viewer, obj), "unauthorized",
                         message=f'cmd: "{obj["cmd"]}" is not allowed with the read-only token')
        self.assertEqual(writer.global_wind(), [0, 0, 0])
        viewer.subscribe(cid)
        self.assertEqual(viewer.next_frame(timeout=5).instance, cid)
        writer.step(instances=[cid])
        self.assertEqual(viewer.next_frame(timeout=5).frame, 1)

    def test_bad_tokens_are_refused_slowed_down_and_the_tenth_closes(self):
        c = self.srv.client()
        self.addCleanup(c.close)
        assert_error(self, raw(c, {"cmd": "auth"}), "invalid_argument", "token")
        times = []
        for i in range(9):
            t0 = time.monotonic()
            assert_error(self, raw(c, {"id": i, "cmd": "auth", "token": FULL[:-1] + "X"}), "unauthorized",
                         message="token: wrong token")
            times.append(time.monotonic() - t0)
        # The first reply is immediate; each later one waits for the pause
        # the previous failure started: 100, 200, 400 ms ... at most 2 s.
        # The pause starts when the server refuses, before the reply reaches
        # us, so a loaded machine shortens what we see by the reply's
        # delivery (0.374 s of 0.4 measured once under load): 15% margins.
        self.assertLess(times[0], 0.09)
        self.assertGreaterEqual(times[1], 0.085)
        self.assertGreaterEqual(times[3], 0.34)
        self.assertGreaterEqual(times[8], 1.9)
        self.assertLess(times[8], 3.0)
        # Still unauthenticated after the failures; the 10th bad token closes.
        time.sleep(2.1)
        c.send_json({"cmd": "auth", "token": "nope"})
        assert_error(self, c.read_reply(), "unauthorized", message="token: wrong token")
        c.sock.settimeout(5)
        self.assertEqual(c.sock.recv(100), b"")

    def test_a_wrong_token_leaves_an_authenticated_connection_as_it_was(self):
        c = self.srv.client()
        self.addCleanup(c.close)
        self.assertEqual(raw(c, {"cmd": "auth", "token": READONLY})["access"], "readonly")
        assert_error(self, raw(c, {"cmd": "auth", "token": "x" * 30}), "unauthorized")
        time.sleep(0.15)
        self.assertIs(raw(c, {"cmd": "status"})["ok"], True)
        assert_error(self, raw(c, {"cmd": "create"}), "unauthorized")
        self.assertEqual(raw(c, {"cmd": "auth", "token": FULL})["access"], "full")
        self.assertIs(raw(c, {"cmd": "create"})["ok"], True)

    def test_pipelined_guesses_wait_for_their_pause(self):
        with socket.create_connection((self.srv.host, self.srv.port)) as s:
            s.sendall(b"".join(b'{"id":%d,"cmd":"auth","token":"guess-%d-xxxxxxxxxxxx"}\n' % (i, i)
                               for i in range(4)))
            t0 = time.monotonic()
            s.settimeout(5)
            data = b""
            while data.count(b"\n") < 4:
                data += s.recv(4096)
            elapsed = time.monotonic() - t0
        self.assertEqual([json.loads(x)["id"] for x in data.splitlines()], [0, 1, 2, 3])
        self.assertGreaterEqual(elapsed, 0.1 + 0.2 + 0.4 - 0.05)


class NoTokenTest(unittest.TestCase):
    def test_without_a_token_every_connection_has_full_access(self):
        srv = fresh_server(self)
        c = srv.client()
        self.addCleanup(c.close)
        self.assertIs(raw(c, {"cmd": "create"})["ok"], True)
        self.assertEqual(raw(c, {"id": 7, "cmd": "auth", "token": "anything"}),
                         {"id": 7, "ok": True, "access": "full"})

    def test_the_environment_can_hold_the_token(self):
        os.environ["CLOTHD_TOKEN"] = FULL
        try:
            srv = fresh_server(self)
        finally:
            del os.environ["CLOTHD_TOKEN"]
        c = srv.client()
        self.addCleanup(c.close)
        assert_error(self, raw(c, {"cmd": "status"}), "unauthorized")
        self.assertEqual(raw(c, {"cmd": "auth", "token": FULL})["access"], "full")


class StartupTest(unittest.TestCase):
    def run_clothd(self, *args, env=None):
        return subprocess.run([clothd_bin(), "--port", "0", *args], capture_output=True, text=True,
                              timeout=10, env=env)

    def test_a_non_loopback_bind_needs_a_token_or_insecure(self):
        out = self.run_clothd("--bind", "0.0.0.0")
        self.assertEqual(out.returncode, 2)
        self.assertIn("--bind 0.0.0.0 is not a loopback address", out.stderr)
        self.assertIn("--insecure", out.stderr)

    def test_bad_token_files_stop_the_start_with_a_reason(self):
        short = token_file(self, "short\n")
        out = self.run_clothd("--token-file", short)
        self.assertEqual(out.returncode, 2)
        self.assertIn("a token must be 16 to 1024 bytes long", out.stderr)
        out = self.run_clothd("--token-file", "/nonexistent/token")
        self.assertEqual(out.returncode, 2)
        self.assertIn("cannot read the token file", out.stderr)
        spaced = token_file(self, "has a space in it, long enough\n")
        out = self.run_clothd("--token-file", spaced)
        self.assertEqual(out.returncode, 2)
        self.assertIn("no spaces or control characters", out.stderr)
        ro = token_file(self, READONLY)
        out = self.run_clothd("--readonly-token-file", ro)
        self.assertEqual(out.returncode, 2)
        self.assertIn("needs a full token too", out.stderr)

    def test_a_non_loopback_bind_starts_with_a_token_or_insecure(self):
        full = token_file(self, FULL)
        for args in (("--token-file", full), ("--insecure",)):
            srv = fresh_server(self, "--bind", "0.0.0.0", *args)
            self.assertTrue(srv.alive())


if __name__ == "__main__":
    unittest.main()
