"""clothd's log on stderr (issue 11, item 6): levels, text and JSON
formats, one line per connection at info, rejected requests at debug
without their payload, and the rate-limited warn lines (limits, slow steps,
subscribers skipping frames)."""

import datetime
import re
import subprocess
import tempfile
import time
import unittest

from clothd import Client, ClothdError
from ops import ISO_UTC, events, json_lines, text_lines, wait_for
from server import Server, clothd_bin, fresh_server


class TextLogTest(unittest.TestCase):
    def test_info_logs_start_one_line_per_connection_and_stop(self):
        srv = Server("--max-connections", "7", "--slow-step-ms", "80").start()
        try:
            c = srv.client(handshake=False)  # no hello: the requests counted are this test's
            local = "%s:%d" % c.sock.getsockname()[:2]
            cid = c.create_cloth(width=4, height=4)
            for _ in range(40):
                c.step(instances=[cid])
            with self.assertRaises(ClothdError):
                c.get(cid + 100)  # not_found: counted, not logged at info
            c.close()
            wait_for(lambda: events(text_lines(srv), "close"), what="the close line")
        except BaseException:
            srv.kill()
            raise
        srv.stop()
        lines = text_lines(srv)
        for e in lines:
            self.assertTrue(ISO_UTC.match(e["time"]), e)
            self.assertIn(e["level"], ("info",), f"only info lines by default: {e}")
        self.assertEqual([e["event"] for e in lines], ["start", "connect", "close", "stop"],
                         "one connect and one close line per connection, nothing per request")
        start, connect, close, stop = lines
        self.assertEqual(start["address"], "127.0.0.1")
        self.assertEqual(int(start["port"]), srv.port)
        self.assertEqual(int(start["workers"]), 2)
        self.assertEqual(int(start["max_connections"]), 7)
        self.assertEqual(int(start["slow_step_ms"]), 80)
        self.assertEqual(start["version"], srv.version)
        for key in ("max_instances", "max_particles", "max_total_particles", "max_step_work", "simd"):
            self.assertIn(key, start)
        self.assertEqual(connect["peer"], local)
        self.assertEqual(connect["connections"], "1")
        self.assertEqual(close["peer"], local)
        self.assertEqual(int(close["requests"]), 42)
        self.assertEqual(int(close["errors"]), 1)
        self.assertGreater(int(close["bytes_sent"]), 40 * 60)
        self.assertEqual(close["connections"], "0")
        self.assertEqual(stop["signal"], "SIGTERM")
        self.assertEqual(stop["connections_total"], "1")
        self.assertEqual(stop["steps"], "40")

    def test_error_level_is_silent_in_normal_operation(self):
        srv = fresh_server(self, "--log-level", "error")
        with srv.client() as c:
            c.create_cloth()
            with self.assertRaises(ClothdError):
                c.request("nope")
        srv.stop()
        self.assertEqual(srv.stderr(limit=None), "")

    def test_bad_log_flags_are_usage_errors(self):
        for args in (["--log-level", "verbose"], ["--log-format", "xml"], ["--log-level"]):
            out = subprocess.run([clothd_bin(), "--port", "0", *args], capture_output=True, text=True,
                                 timeout=5)
            self.assertEqual(out.returncode, 2, args)
            self.assertIn(args[0], out.stderr)


class JsonDebugLogTest(unittest.TestCase):
    def test_json_lines_and_rejected_requests_at_debug_without_payload(self):
        srv = fresh_server(self, "--log-format", "json", "--log-level", "debug")
        secret = "PAYLOAD-7f3a"
        with srv.client(handshake=False) as c:  # no hello: the requests counted are this test's
            c.send_json({"id": secret, "cmd": "get", "instance": 99, "note": secret})
            self.assertEqual(c.read_reply()["error"]["code"], "not_found")
            c.send_raw(('{"cmd":"create","width":"' + secret + '"}\n').encode())
            self.assertEqual(c.read_reply()["error"]["code"], "invalid_argument")
            c.send_raw(b'{"cmd":' + secret.encode() + b'\n')
            self.assertEqual(c.read_reply()["error"]["code"], "parse_error")
            c.send_raw(('{"cmd":"' + secret + '"}\n').encode())
            self.assertEqual(c.read_reply()["error"]["code"], "unknown_command")
            self.assertIs(c.ping() >= 0, True)
        lines = wait_for(lambda: (lambda ls: ls if events(ls, "close") else None)(json_lines(srv)),
                         what="the close line")
        self.assertNotIn(secret, srv.stderr(limit=None), "the log must never hold a request's payload")
        for e in lines:
            self.assertTrue(ISO_UTC.match(e["time"]), e)
            self.assertIn(e["level"], ("info", "debug"))
        rejects = [(e["command"], e["code"]) for e in events(lines, "reject")]
        self.assertEqual(rejects, [("get", "not_found"), ("create", "invalid_argument"),
                                   ("-", "parse_error"), ("-", "unknown_command")])
        self.assertTrue(all(e["level"] == "debug" for e in events(lines, "reject")))
        start = events(lines, "start")[0]
        self.assertEqual(start["port"], srv.port)  # a JSON number
        close = events(lines, "close")[0]
        # Requests are lines naming a known command (get, create, ping).
        self.assertEqual((close["requests"], close["errors"]), (3, 4))


class WarnLogTest(unittest.TestCase):
    def test_limits_are_warned_at_most_once_a_second_per_connection(self):
        srv = fresh_server(self, "--log-level", "warn", "--max-particles", "100")
        with srv.client() as c:
            for _ in range(5):
                with self.assertRaises(ClothdError):
                    c.create_cloth(width=20, height=20)
            first = wait_for(lambda: events(text_lines(srv), "limit"), what="a limit line")
            time.sleep(1.1)
            with self.assertRaises(ClothdError):
                c.create_cloth(width=20, height=20)
            lines = wait_for(lambda: (lambda ls: ls if len(events(ls, "limit")) == 2 else None)(text_lines(srv)),
                             what="the second limit line")
        self.assertEqual(len(first), 1)
        self.assertEqual([e["event"] for e in lines], ["limit", "limit"], "warn level: no info lines")
        a, b = lines
        self.assertEqual((a["level"], a["command"], a["code"], a["suppressed"]),
                         ("warn", "create", "limit_exceeded", "0"))
        self.assertIn("exceed the limit of 100", a["message"])
        self.assertEqual(b["suppressed"], "4")

    def test_the_connection_limit_and_unauthorized_requests_are_warned(self):
        with tempfile.NamedTemporaryFile("w", suffix=".token") as token:
            token.write("a-token-of-enough-length-0123\n")
            token.flush()
            srv = fresh_server(self, "--max-connections", "1", "--token-file", token.name)
            keep = srv.client(handshake=False)  # no hello: the one unauthorized request is the step
            self.addCleanup(keep.close)
            keep.send_json({"cmd": "step"})
            self.assertEqual(keep.read_reply()["error"]["code"], "unauthorized")
            extra = Client(srv.host, srv.port, timeout=5, handshake=False).connect()
            self.assertEqual(extra.read_reply()["error"]["code"], "limit_exceeded")
            extra.close()
            limit = wait_for(lambda: events(text_lines(srv), "limit"), what="the limit line")[0]
        self.assertEqual((limit["level"], limit["command"], limit["code"]), ("warn", "-", "limit_exceeded"))
        self.assertEqual(limit["message"], "connections: at most 1 at once (--max-connections)")
        unauthorized = events(text_lines(srv), "unauthorized")
        self.assertEqual([(e["level"], e["command"], e["code"], e["message"]) for e in unauthorized],
                         [("warn", "step", "unauthorized", 'cmd: "step" needs auth first')])
        self.assertNotIn("a-token-of-enough", srv.stderr(limit=None))

    def test_slow_steps_are_warned_with_their_duration(self):
        srv = fresh_server(self, "--slow-step-ms", "1")
        with srv.client() as c:
            cid = c.create_cloth(width=96, height=96, spacing=0.01, iterations=16, sleep_threshold=0)
            for _ in range(3):
                c.step(instances=[cid])
        slow = wait_for(lambda: events(text_lines(srv), "slow_step"), what="a slow_step line")
        self.assertEqual(len(slow), 1, "at most one slow_step line a second")
        e = slow[0]
        self.assertEqual((e["level"], e["threshold_ms"], e["instances"]), ("warn", "1", "1"))
        self.assertGreaterEqual(float(e["duration_ms"]), 1.0)

    def test_fast_steps_are_not_warned(self):
        srv = fresh_server(self)
        with srv.client() as c:
            cid = c.create_cloth(width=4, height=4)
            for _ in range(20):
                c.step(instances=[cid])
        srv.stop()
        self.assertEqual(events(text_lines(srv), "slow_step"), [])

    def test_a_subscriber_skipping_frames_is_warned_at_most_once_a_second(self):
        srv = fresh_server(self)
        stepper = srv.client()
        self.addCleanup(stepper.close)
        cid = stepper.create_cloth(width=64, height=64, spacing=0.02, sleep_threshold=0)
        slow = Client(srv.host, srv.port, timeout=10.0, rcvbuf=1024).connect()
        self.addCleanup(slow.close)
        slow.subscribe(cid)
        slow_peer = "%s:%d" % slow.sock.getsockname()[:2]
        for _ in range(300):
            stepper.step(instances=[cid])
        skips = wait_for(lambda: events(text_lines(srv), "frames_skipped"), what="a frames_skipped line")
        self.assertEqual((skips[0]["level"], skips[0]["peer"]), ("warn", slow_peer))
        self.assertEqual((skips[0]["skipped"], skips[0]["skipped_total"]), ("1", "1"))
        stats = stepper.request("stats")
        # One line a second at most (the steps took longer under a
        # sanitizer), each counting the skips since the one before.
        times = [datetime.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ") for e in skips]
        for a, b in zip(times, times[1:]):
            self.assertGreaterEqual((b - a).total_seconds(), 0.9, "at most one line a second")
        self.assertLessEqual(len(skips), 2 + int((times[-1] - times[0]).total_seconds()))
        self.assertEqual(sum(int(e["skipped"]) for e in skips), int(skips[-1]["skipped_total"]))
        self.assertGreaterEqual(stats["sent"]["framesSkipped"], int(skips[-1]["skipped_total"]))
        self.assertGreater(stats["sent"]["framesSkipped"], 10)


if __name__ == "__main__":
    unittest.main()
