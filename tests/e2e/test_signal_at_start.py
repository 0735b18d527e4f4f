"""SIGTERM the moment clothd says it listens must still be a clean stop
(the banner was printed before the signal watchers started: exit -15)."""

import subprocess
import unittest

from server import clothd_bin


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
