"""Hostile or careless clients must not disturb anyone else."""

import random
import socket
import struct
import threading
import unittest

from server import fresh_server

DT = 1 / 60


def rst_close(sock):
    """Closes with a TCP reset instead of a FIN (SO_LINGER 0)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class RobustnessTest(unittest.TestCase):
    def test_garbage_and_churn_should_not_disturb_a_session(self):
        srv = fresh_server(self)
        good = srv.client()
        self.addCleanup(good.close)
        cid = good.create_cloth(width=12, height=12)
        good.subscribe(cid)
        self.assertEqual(good.next_frame(timeout=5).frame, 0)
        steps = 0

        def step():
            nonlocal steps
            self.assertEqual(good.step(DT, instances=[cid])["stepped"], 1)
            steps += 1

        for _ in range(5):
            step()

        # 10 KB of random bytes, NULs included, cut off mid-line; twice,
        # once closed with FIN and once with a reset.
        rng = random.Random(1234)
        for close in (socket.socket.close, rst_close):
            junk = b"\x00" + rng.randbytes(10 * 1024) + b'{"cmd":"sta'
            with socket.create_connection((srv.host, srv.port), timeout=5) as s:
                s.sendall(junk)
                close(s)
            step()

        # A client that subscribes, requests a big step and vanishes at once.
        big = srv.client()
        big_id = big.create_cloth(width=64, height=64)
        big.subscribe(big_id)
        big.send_json({"cmd": "step", "dt": DT, "instances": [big_id]})
        rst_close(big.sock)
        step()

        # 50 connect/disconnect cycles in a thread while this client steps.
        errors = []

        def churn():
            try:
                for i in range(50):
                    s = socket.create_connection((srv.host, srv.port), timeout=5)
                    if i % 3 == 0:
                        s.sendall(b'{"cmd":"status"}\n{"cmd":"subscribe"}\n')
                    elif i % 3 == 1:
                        s.sendall(b'{"cmd":"get","instance":')
                    if i % 2:
                        rst_close(s)
                    else:
                        s.close()
            except Exception as e:  # reported below
                errors.append(e)

        t = threading.Thread(target=churn)
        t.start()
        while t.is_alive() or steps < 60:
            step()
        t.join()
        self.assertEqual(errors, [])

        state = good.get(cid)
        self.assertEqual(state.frame, steps, "every step of the good client counted")
        frames = good.poll_frames()
        numbers = [f.frame for f in frames if f.instance == cid]
        self.assertEqual(numbers, list(range(1, steps + 1)), "the good client's frames, in order")
        self.assertEqual(list(frames[-1].flat), list(state.flat))
        self.assertTrue(srv.alive())
        self.assertIs(good.status()["ok"], True)
        # fresh_server asserts exit code 0 on SIGTERM after the test.


if __name__ == "__main__":
    unittest.main()
