"""The health port (issue 11, item 5): /healthz while the loop runs,
/readyz 503 with its reason at the server's limits, and a bounded HTTP
reader (unknown paths, other methods, oversized or slow requests)."""

import socket
import subprocess
import time
import unittest

from clothd import Client
from ops import http, http_ports, http_status, wait_for
from server import clothd_bin, fresh_server


class HealthTest(unittest.TestCase):
    def test_healthz_and_readyz_answer_while_a_step_runs(self):
        srv = fresh_server(self, "--health-port", "0")
        port = http_ports(srv)["health"]
        status, headers, body = http(port, "/healthz")
        self.assertEqual((status, body), (200, b"ok\n"))
        self.assertEqual(headers["connection"], "close")
        self.assertEqual(headers["content-length"], "3")
        self.assertEqual(http(port, "/readyz?verbose=1")[:3:2], (200, b"ready\n"))
        self.assertEqual(http(port, "/healthz", method="HEAD")[::2], (200, b""))
        self.assertEqual(http(port, "/metrics")[0], 404, "no --metrics-port: not served")
        with srv.client() as c:
            cid = c.create_cloth(width=128, height=128, spacing=0.01, iterations=32, sleep_threshold=0)
            c.send_json({"id": 1, "cmd": "step", "instances": [cid]})
            self.assertEqual(http(port, "/healthz")[0], 200)  # the loop is not blocked by the step
            self.assertEqual(c.read_reply()["stepped"], 1)

    def test_readyz_is_503_with_the_reason_at_max_connections(self):
        srv = fresh_server(self, "--health-port", "0", "--max-connections", "2")
        port = http_ports(srv)["health"]
        a, b = srv.client(), srv.client()
        self.addCleanup(a.close)
        status, _, body = http(port, "/readyz")
        self.assertEqual((status, body), (503, b"not ready: connections: 2 of 2 (--max-connections)\n"))
        self.assertEqual(http(port, "/healthz")[0], 200, "alive though not ready")
        b.close()
        wait_for(lambda: http_status(port, "/readyz") == 200, what="/readyz 200 after a client left")

    def test_readyz_is_503_at_the_particle_limit(self):
        srv = fresh_server(self, "--health-port", "0", "--max-total-particles", "200")
        port = http_ports(srv)["health"]
        with srv.client() as c:
            cid = c.create_cloth(width=10, height=20)
            self.assertEqual(http(port, "/readyz")[::2],
                             (503, b"not ready: particles: 200 of 200 (--max-total-particles)\n"))
            c.destroy(cid)
            self.assertEqual(http(port, "/readyz")[0], 200)

    def test_unknown_paths_methods_and_malformed_requests(self):
        srv = fresh_server(self, "--health-port", "0")
        port = http_ports(srv)["health"]
        self.assertEqual(http(port, "/")[::2], (404, b"not found\n"))
        self.assertEqual(http(port, "/healthz/x")[0], 404)
        status, headers, _ = http(port, "/healthz", method="POST")
        self.assertEqual((status, headers.get("allow")), (405, "GET, HEAD"))
        self.assertEqual(http(port, raw=b"GARBAGE\r\n\r\n")[0], 400)
        self.assertEqual(http(port, raw=b"GET /healthz HTTP/2.0\r\n\r\n")[0], 400)
        self.assertEqual(http(port, raw=b"GET /healthz HTTP/1.0\n\n")[::2], (200, b"ok\n"))

    def test_oversized_and_slow_requests_are_refused(self):
        srv = fresh_server(self, "--health-port", "0", "--line-timeout", "1")
        port = http_ports(srv)["health"]
        big = b"GET /healthz HTTP/1.1\r\nX-Filler: " + b"a" * 8000 + b"\r\n\r\n"
        self.assertEqual(http(port, raw=big)[0], 431)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\n")  # never finished
            started = time.monotonic()
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            waited = time.monotonic() - started
        self.assertTrue(data.startswith(b"HTTP/1.1 408 "), data)
        self.assertGreater(waited, 0.8)
        self.assertLess(waited, 4)
        self.assertEqual(http(port, "/healthz")[0], 200)

    def test_at_most_32_http_connections_at_once(self):
        srv = fresh_server(self, "--health-port", "0")
        port = http_ports(srv)["health"]
        idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(32)]
        try:
            time.sleep(0.2)
            with socket.create_connection(("127.0.0.1", port), timeout=5) as extra:
                self.assertEqual(extra.recv(100), b"", "the 33rd is closed unanswered")
        finally:
            for s in idle:
                s.close()
        wait_for(lambda: http_status(port) == 200, what="/healthz after the idle ones left")
        with Client(srv.host, srv.port, timeout=5) as c:
            self.assertIs(c.status()["ok"], True)

    def test_a_health_port_in_use_stops_the_start(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            out = subprocess.run([clothd_bin(), "--port", "0", "--health-port", str(port)],
                                 capture_output=True, text=True, timeout=10)
        self.assertEqual(out.returncode, 1)
        self.assertIn(f"cannot listen on 127.0.0.1:{port} (--health-port)", out.stderr)
        self.assertNotIn("listening", out.stdout)


if __name__ == "__main__":
    unittest.main()
