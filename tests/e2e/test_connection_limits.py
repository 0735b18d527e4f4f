"""Server-wide limits on connections (issue 9, item 4): a cap on connections
at once, and a deadline for a request line that never completes."""

import json
import socket
import time
import unittest

from server import assert_error, fresh_server


def read_line(sock, timeout=10.0):
    sock.settimeout(timeout)
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def closed_by_peer(sock, timeout=5.0):
    sock.settimeout(timeout)
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


class ConnectionCapTest(unittest.TestCase):
    def test_one_connection_over_the_cap_is_answered_and_closed_the_others_go_on(self):
        srv = fresh_server(self, "--max-connections", "3")
        clients = [srv.client() for _ in range(3)]
        for c in clients:
            self.addCleanup(c.close)
        with socket.create_connection((srv.host, srv.port)) as extra:
            reply = json.loads(read_line(extra))
            assert_error(self, reply, "limit_exceeded",
                         message="connections: at most 3 at once (--max-connections)")
            self.assertNotIn("id", reply)
            self.assertTrue(closed_by_peer(extra))
        for c in clients:
            self.assertIs(c.status()["ok"], True)
        clients[0].close()
        time.sleep(0.2)  # the close reaches the server
        again = srv.client()
        self.addCleanup(again.close)
        self.assertIs(again.status()["ok"], True)


class LineTimeoutTest(unittest.TestCase):
    def test_a_line_that_never_completes_is_refused_after_the_timeout(self):
        srv = fresh_server(self, "--line-timeout", "1")
        idle = srv.client()  # holds no partial line: never timed out
        self.addCleanup(idle.close)
        with socket.create_connection((srv.host, srv.port)) as slow:
            slow.sendall(b'{"cmd":"sta')
            started = time.monotonic()
            # Trickling bytes does not extend the deadline of the line.
            for _ in range(3):
                time.sleep(0.3)
                try:
                    slow.sendall(b" ")
                except OSError:
                    break
            reply = json.loads(read_line(slow, timeout=5))
            waited = time.monotonic() - started
            assert_error(self, reply, "limit_exceeded",
                         message="line: incomplete 1 s after its first byte (--line-timeout)")
            self.assertGreaterEqual(waited, 0.9)
            self.assertLess(waited, 3.5)
            self.assertTrue(closed_by_peer(slow))
        time.sleep(1.5)
        self.assertIs(idle.status()["ok"], True)

    def test_complete_lines_sent_slowly_are_never_timed_out(self):
        srv = fresh_server(self, "--line-timeout", "1")
        with socket.create_connection((srv.host, srv.port)) as s:
            for i in range(4):
                s.sendall(b'{"id":%d,"cmd":"status"}\n' % i)
                self.assertEqual(json.loads(read_line(s))["id"], i)
                time.sleep(0.6)  # 2.4 s in all, each line complete at once
        # A line split over two sends within the deadline is fine too.
        with socket.create_connection((srv.host, srv.port)) as s:
            s.sendall(b'{"id":9,"cmd":')
            time.sleep(0.5)
            s.sendall(b'"status"}\n')
            self.assertIs(json.loads(read_line(s))["ok"], True)


if __name__ == "__main__":
    unittest.main()
