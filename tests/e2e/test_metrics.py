"""The stats command and the Prometheus endpoint (issue 11, item 7):
counters that move with what clients do, instances by state, the
step-latency histogram, and the exposition format's rules."""

import re
import unittest

from clothd import ClothdError
from ops import http, http_ports, parse_prometheus
from server import fresh_server

COMMANDS = ["create", "destroy", "pin", "unpin", "wind", "gravity", "addCollider", "moveCollider",
            "removeCollider", "enable", "step", "get", "subscribe", "unsubscribe", "status", "debug",
            "set", "transform", "attach", "topology", "ping", "auth", "stats", "skin", "teleport",
            "save", "load", "record", "replay", "journals", "hello", "scene", "scenes"]
CODES = ["parse_error", "unknown_command", "invalid_argument", "not_found", "limit_exceeded",
         "line_too_long", "internal", "unauthorized"]


def sample(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


class StatsCommandTest(unittest.TestCase):
    def test_stats_counts_steps_requests_errors_and_instances_by_state(self):
        srv = fresh_server(self, "--max-connections", "9")
        c = srv.client()
        self.addCleanup(c.close)
        before = c.request("stats")
        self.assertEqual(before["version"], srv.version)
        self.assertIn(before["simd"], ("scalar", "avx2", "avx512"))
        self.assertEqual(before["workers"], 2)
        self.assertEqual(before["connections"], {"current": 1, "total": 1, "refused": 0, "limit": 9})
        self.assertEqual(before["steps"]["total"], 0)
        self.assertEqual(sorted(before["requests"]), sorted(COMMANDS))
        self.assertEqual(before["requests"]["stats"], 1, "stats counts itself")
        self.assertEqual(sorted(before["errors"]), sorted(CODES))

        awake = c.create_cloth(width=8, height=8, sleep_threshold=0)
        resting = c.create_cloth(width=4, height=4, gravity=[0, 0, 0])  # nothing moves it: it sleeps
        off = c.create_cloth(width=5, height=5)
        c.enable(off, False)
        for _ in range(70):  # more than one simulated second at 1/60
            c.step(1 / 60)
        with self.assertRaises(ClothdError):
            c.get(12345)
        other = srv.client()
        other.ping()  # accepted before the stats below
        other.close()

        after = c.request("stats")
        self.assertEqual(after["instances"], {"awake": 1, "sleeping": 1, "disabled": 1, "unstable": 0,
                                              "limit": 1024})
        self.assertEqual(after["particles"], {"current": 64 + 16 + 25, "limit": 4194304})
        self.assertEqual(after["steps"]["total"], 70)
        self.assertEqual(after["steps"]["instanceSteps"], 140, "the disabled one is not stepped")
        self.assertEqual(after["requests"]["step"], 70)
        self.assertEqual(after["requests"]["create"], 3)
        self.assertEqual(after["requests"]["stats"], 2)
        self.assertEqual(after["errors"]["not_found"], 1)
        self.assertEqual(sum(after["errors"].values()), 1)
        self.assertEqual(after["connections"]["total"], 2)
        dur = after["steps"]["durationSeconds"]
        self.assertEqual(dur["count"], 70)
        self.assertEqual(len(dur["counts"]), len(dur["bounds"]) + 1)
        self.assertEqual(sum(dur["counts"]), 70)
        self.assertGreater(dur["sum"], 0)
        self.assertEqual(dur["bounds"], sorted(dur["bounds"]))
        self.assertGreater(after["sent"]["replyBytes"], before["sent"]["replyBytes"] + 70 * 60)
        self.assertGreaterEqual(after["uptimeSeconds"], before["uptimeSeconds"])
        self.assertEqual(after["steps"]["slow"], 0)
        del awake, resting

    def test_stats_is_allowed_with_the_readonly_token_and_needs_auth_first(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            full, ro = f"{d}/full", f"{d}/ro"
            open(full, "w").write("full-token-0123456789\n")
            open(ro, "w").write("readonly-token-0123456789\n")
            srv = fresh_server(self, "--token-file", full, "--readonly-token-file", ro)
            c = srv.client(handshake=False)  # no hello before auth: the one refused request is stats
            self.addCleanup(c.close)
            c.send_json({"cmd": "stats"})
            self.assertEqual(c.read_reply()["error"]["code"], "unauthorized")
            c.auth("readonly-token-0123456789")
            reply = c.request("stats")
            self.assertEqual(reply["errors"]["unauthorized"], 1)


class PrometheusTest(unittest.TestCase):
    def test_metrics_follow_the_text_format_and_move_with_the_work(self):
        srv = fresh_server(self, "--metrics-port", "0")
        port = http_ports(srv)["metrics"]
        status, headers, body = http(port, "/metrics")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        families, before = parse_prometheus(body.decode())
        for name, (kind, help_text) in families.items():
            self.assertRegex(name, r"^clothd_[a-z_]+$")
            self.assertTrue(help_text, name)
            if kind == "counter":
                self.assertTrue(name.endswith("_total"), f"counter {name} must end in _total")
            else:
                self.assertFalse(name.endswith("_total"), f"{kind} {name} must not end in _total")
        for name in ("clothd_info", "clothd_instances", "clothd_particles", "clothd_steps_total",
                     "clothd_step_duration_seconds", "clothd_sent_bytes_total", "clothd_frames_sent_total",
                     "clothd_frames_skipped_total", "clothd_connections", "clothd_connections_total",
                     "clothd_errors_total", "clothd_requests_total", "clothd_start_time_seconds"):
            self.assertIn(name, families)
        self.assertEqual(families["clothd_step_duration_seconds"][0], "histogram")
        info = [k for k in before if k[0] == "clothd_info"]
        self.assertEqual(len(info), 1)
        labels = dict(info[0][1])
        self.assertEqual(labels["version"], srv.version)
        self.assertIn(labels["simd"], ("scalar", "avx2", "avx512"))
        for code in CODES:
            self.assertEqual(sample(before, "clothd_errors_total", code=code), 0)
        for cmd in COMMANDS:
            self.assertEqual(sample(before, "clothd_requests_total", command=cmd), 0)
        self.assertEqual(sample(before, "clothd_connections"), 0)

        with srv.client() as c:
            cid = c.create_cloth(width=10, height=10, sleep_threshold=0)
            c.subscribe(cid)
            for _ in range(25):
                c.step()
            for _ in range(26):  # the current frame on subscribe, then one per step
                c.next_frame(timeout=5)
            c.send_raw(b"{oops\n")
            self.assertEqual(c.read_reply()["error"]["code"], "parse_error")
            _, _, body = http(port, "/metrics")
            _, during = parse_prometheus(body.decode())
        self.assertEqual(sample(during, "clothd_steps_total"), 25)
        self.assertEqual(sample(during, "clothd_instance_steps_total"), 25)
        self.assertEqual(sample(during, "clothd_requests_total", command="step"), 25)
        self.assertEqual(sample(during, "clothd_requests_total", command="subscribe"), 1)
        self.assertEqual(sample(during, "clothd_errors_total", code="parse_error"), 1)
        self.assertEqual(sample(during, "clothd_connections"), 1)
        self.assertEqual(sample(during, "clothd_connections_total"), 1)
        self.assertEqual(sample(during, "clothd_particles"), 100)
        self.assertEqual(sample(during, "clothd_instances", state="awake"), 1)
        self.assertEqual(sample(during, "clothd_frames_sent_total"), 26)
        self.assertEqual(sample(during, "clothd_sent_bytes_total", kind="frame"), 26 * (40 + 100 * 12))
        self.assertGreater(sample(during, "clothd_sent_bytes_total", kind="reply"), 25 * 60)
        # The histogram: cumulative buckets, +Inf equals the count, a sum.
        buckets = sorted(((float(dict(k[1])["le"]), v) for k, v in during.items()
                          if k[0] == "clothd_step_duration_seconds_bucket"))
        counts = [v for _, v in buckets]
        self.assertEqual(counts, sorted(counts), "buckets must be cumulative")
        self.assertEqual(buckets[-1], (float("inf"), 25))
        self.assertEqual(sample(during, "clothd_step_duration_seconds_count"), 25)
        self.assertGreater(sample(during, "clothd_step_duration_seconds_sum"), 0)
        self.assertGreaterEqual(len(buckets), 10)

    def test_the_metrics_port_serves_only_metrics_unless_shared(self):
        srv = fresh_server(self, "--metrics-port", "0", "--health-port", "0")
        port = http_ports(srv)["metrics"]
        self.assertEqual(http(port, "/metrics")[0], 200)
        self.assertEqual(http(port, "/healthz")[0], 200, "the same number (0 too) shares one port")
        srv2 = fresh_server(self, "--metrics-port", str(free_port()))
        port2 = http_ports(srv2)["metrics"]
        self.assertEqual(http(port2, "/healthz")[0], 404)
        self.assertEqual(http(port2, "/metrics")[0], 200)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    unittest.main()
