"""SIGTERM at awkward moments: the moment clothd says it listens (the
banner was printed before the signal watchers started: exit -15), and in
the middle of the largest steps an instance may ask for."""

import subprocess
import time
import unittest

from server import Server, assert_error, clothd_bin


class SignalAtStartTest(unittest.TestCase):
    def test_sigterm_right_after_the_banner_exits_cleanly(self):
        codes = []
        for _ in range(50):
            p = subprocess.Popen([clothd_bin(), "--port", "0", "--workers", "2"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.assertIn(b"listening on", p.stdout.readline())
            p.terminate()
            codes.append(p.wait(10))
            p.stdout.close()
        self.assertEqual(codes, [0] * 50)


if __name__ == "__main__":
    unittest.main()


class SignalDuringStepTest(unittest.TestCase):
    def test_sigterm_during_the_largest_allowed_steps_waits_for_one_step_only(self):
        """Issue 9, item 5: 128x128 at 256 iterations x 16 substeps made a
        shutdown take 5.3 s; that step is now refused at create, and a
        SIGTERM waits for at most the step each worker is running (the
        harness's stop() requires a clean exit within 5 s)."""
        srv = Server(workers=2).start()
        try:
            c = srv.client()
            refused = c.exchange({"cmd": "create", "width": 128, "height": 128, "substeps": 16,
                                  "iterations": 256})
            assert_error(self, refused, "limit_exceeded", "substeps, iterations")
            ids = [c.create_cloth(width=128, height=128, spacing=0.01, substeps=16, iterations=32,
                                  sleepThreshold=0) for _ in range(4)]
            for _ in range(3):  # three batches of four of the largest steps queued back to back
                c.send_json({"cmd": "step", "instances": ids})
            time.sleep(0.2)
        finally:
            self.assertEqual(srv.stop(), 0)
