"""What the server queues for a client is bounded, and nothing a client asked
for is lost when it half-closes (issue 9, items 3 and 6)."""

import json
import socket
import time
import unittest

from server import fresh_server


def read_until_eof(sock, timeout=20.0):
    sock.settimeout(timeout)
    data = bytearray()
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return bytes(data)
        data += chunk


class StalledSubscribersTest(unittest.TestCase):
    def test_events_to_subscribers_that_never_read_stay_bounded_and_the_newest_arrives(self):
        srv = fresh_server(self)
        maker = srv.client()
        self.addCleanup(maker.close)
        cid = maker.create_cloth(width=4, height=4)
        stalled = []
        for _ in range(20):
            s = socket.create_connection((srv.host, srv.port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b'{"id":1,"cmd":"subscribe","instance":%d}\n' % cid)
            self.addCleanup(s.close)
            stalled.append(s)
        time.sleep(0.3)
        before = srv.rss_kib()
        # 150,000 wind changes (global and per instance), pipelined in chunks.
        changes = 150000
        sent = 0
        while sent < changes:
            n = min(500, changes - sent)
            lines = []
            for k in range(sent, sent + n):
                if k % 2:
                    lines.append(json.dumps({"cmd": "wind", "wind": [k % 7 + 1, 0, k % 3]}))
                else:
                    lines.append(json.dumps({"cmd": "wind", "instance": cid, "wind": [0, k % 5, 1]}))
            maker.send_raw(("\n".join(lines) + "\n").encode())
            for _ in range(n):
                self.assertIs(maker.read_reply()["ok"], True)
            sent += n
        maker.wind([9, 0, 0])
        maker.wind([0, 0, 9], instance=cid)
        grown_mib = (srv.rss_kib() - before) / 1024
        # Old behaviour: every event queued per subscriber once the kernel's
        # socket buffers (~4 MiB) are full: 20 x ~100,000 events x ~280 B.
        # Bounded: a 64 KiB budget and one slot per kind per subscriber.
        self.assertLess(grown_mib, 24, f"RSS grew by {grown_mib:.1f} MiB")
        # A stalled subscriber that finally reads gets the newest of each kind.
        s = stalled[0]
        s.sendall(b'{"id":"last","cmd":"status"}\n')
        s.settimeout(10)
        buf = bytearray()
        last_global = last_instance = None
        while True:
            chunk = s.recv(1 << 20)
            self.assertTrue(chunk, "closed")
            buf += chunk
            done = False
            while b"\n" in buf:
                if buf[0] != ord("{"):  # a binary frame: skip its length
                    length = int.from_bytes(buf[8:12], "little")
                    if len(buf) < length:
                        break
                    del buf[:length]
                    continue
                line, _, rest = bytes(buf).partition(b"\n")
                buf = bytearray(rest)
                msg = json.loads(line)
                if msg.get("event") == "wind":
                    if "instance" in msg:
                        last_instance = msg["wind"]
                    else:
                        last_global = msg["wind"]
                if msg.get("id") == "last":
                    done = True
            if done:
                break
        # Events are written before the status reply only once they fit the
        # budget; drain a little longer for the newest ones.
        s.settimeout(1)
        try:
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf and buf[0] == ord("{"):
                    line, _, rest = bytes(buf).partition(b"\n")
                    buf = bytearray(rest)
                    msg = json.loads(line)
                    if msg.get("event") == "wind":
                        if "instance" in msg:
                            last_instance = msg["wind"]
                        else:
                            last_global = msg["wind"]
        except (TimeoutError, OSError):
            pass
        self.assertEqual(last_global, [9, 0, 0])
        self.assertEqual(last_instance, [0, 0, 9])
        self.assertTrue(srv.alive())


class HalfCloseTest(unittest.TestCase):
    def test_a_half_closed_client_gets_every_reply_of_its_complete_lines(self):
        srv = fresh_server(self)
        maker = srv.client()
        self.addCleanup(maker.close)
        big = maker.create_cloth(width=512, height=512, spacing=0.005)
        with socket.create_connection((srv.host, srv.port)) as s:
            s.sendall(b"".join(b'{"id":%d,"cmd":"get","instance":%d}\n' % (i, big) for i in range(4)))
            s.sendall(b'{"id":4,"cmd":"step","instances":[%d]}\n' % big)
            s.sendall(b'{"id":5,"cmd":"get","instance":%d}\n' % big)
            s.sendall(b'{"id":6,"cmd":"sta')  # a partial line: dropped
            s.shutdown(socket.SHUT_WR)
            time.sleep(0.5)  # the server sees the EOF long before the replies are out
            data = read_until_eof(s)
        lines = data.split(b"\n")
        self.assertEqual(lines[-1], b"", "the stream ends with a complete line")
        replies = [json.loads(line) for line in lines[:-1]]
        self.assertEqual([r["id"] for r in replies], [0, 1, 2, 3, 4, 5])
        self.assertTrue(all(r["ok"] for r in replies))
        for r in replies[:4]:
            self.assertEqual(len(r["positions"]), 3 * 512 * 512)
        self.assertEqual(replies[4]["stepped"], 1)
        self.assertEqual(replies[5]["frame"], 1)
        self.assertTrue(srv.alive())


if __name__ == "__main__":
    unittest.main()
