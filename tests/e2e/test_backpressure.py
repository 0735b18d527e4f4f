"""A subscriber that never reads must not stall the server or grow it."""

import socket
import time
import unittest

from clothd import Client
from server import fresh_server

DT = 1 / 60
STEPS = 500
REPLY_BOUND = 2.0          # seconds; generous liveness bound, not a benchmark
RSS_BOUND_KIB = 200 * 1024


class BackpressureTest(unittest.TestCase):
    def test_slow_subscriber_should_skip_frames_without_stalling_others(self):
        srv = fresh_server(self)
        stepper = srv.client()
        self.addCleanup(stepper.close)
        # Never asleep: a sleeping instance sends no frames.
        cid = stepper.create_cloth(width=64, height=64, spacing=0.02, sleep_threshold=0)
        stepper.pin(cid, list(range(64)))

        slow = Client(srv.host, srv.port, timeout=10.0, rcvbuf=1024).connect()
        self.addCleanup(slow.close)
        slow.subscribe(cid)

        worst = 0.0
        peak_rss = srv.rss_kib()
        for i in range(STEPS):
            t0 = time.monotonic()
            reply = stepper.step(DT, instances=[cid])
            took = time.monotonic() - t0
            worst = max(worst, took)
            self.assertLess(took, REPLY_BOUND, f"step {i + 1} took {took:.2f}s while a subscriber was stalled")
            self.assertEqual(reply["stepped"], 1)
            if i % 50 == 49:
                peak_rss = max(peak_rss, srv.rss_kib())
        self.assertTrue(srv.alive())
        self.assertEqual(stepper.status()["ok"], True)
        peak_rss = max(peak_rss, srv.rss_kib())
        self.assertLess(peak_rss, RSS_BOUND_KIB, f"server RSS reached {peak_rss} KiB")

        # The slow client finally reads: it still gets its reply, and frames
        # that skipped ahead to the newest one.
        slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.assertEqual(slow.status()["ok"], True)
        frames = slow.poll_frames()
        deadline = time.monotonic() + 10
        while (not frames or frames[-1].frame != STEPS) and time.monotonic() < deadline:
            try:
                frames.append(slow.next_frame(timeout=max(0.05, deadline - time.monotonic())))
            except TimeoutError:
                break
        numbers = [f.frame for f in frames]
        self.assertTrue(numbers, "the slow subscriber got no frames at all")
        self.assertTrue(all(f.instance == cid and f.count == 64 * 64 for f in frames))
        self.assertEqual(numbers, sorted(set(numbers)), f"frame numbers must strictly increase: {numbers}")
        self.assertEqual(numbers[-1], STEPS, f"the newest frame should arrive last; got {numbers[-10:]}")
        self.assertTrue(any(b - a > 1 for a, b in zip(numbers, numbers[1:])) or numbers[0] > 1,
                        f"frames should skip, got all of {numbers}")
        self.assertLess(len(numbers), STEPS, "a stalled subscriber should not get every frame")
        self.assertEqual(slow.status()["ok"], True)


if __name__ == "__main__":
    unittest.main()
