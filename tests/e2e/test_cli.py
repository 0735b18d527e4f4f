"""The binary's command line, banner and signals."""

import os
import signal
import subprocess
import time
import unittest

from server import Server, clothd_bin, fresh_server


class CliTest(unittest.TestCase):
    def test_banner_should_name_version_address_port_and_workers(self):
        srv = fresh_server(self, workers=3)
        self.assertEqual(srv.banner, f"clothd 0.1.0 listening on 127.0.0.1:{srv.port} (3 workers)")
        self.assertNotEqual(srv.port, 0)
        with srv.client() as c:
            self.assertEqual(c.status()["workers"], 3)

    def test_sigint_should_exit_cleanly_with_clients_connected(self):
        srv = Server().start()
        try:
            c = srv.client()
            cid = c.create_cloth()
            c.subscribe(cid)
            c.step()
        except BaseException:
            srv.kill()
            raise
        srv.stop(signal.SIGINT)
        c.close()

    def test_idle_server_should_use_no_cpu(self):
        srv = fresh_server(self, workers=2)
        with srv.client() as c:
            cid = c.create_cloth(width=32, height=32)
            c.subscribe(cid)
            c.step()
            c.next_frame(timeout=5)

            def cpu_ticks() -> int:
                with open(f"/proc/{srv.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return int(fields[11]) + int(fields[12])  # utime + stime

            before = cpu_ticks()
            time.sleep(1.0)
            used = cpu_ticks() - before
        # Idle with a client connected and subscribed: the loop blocks in
        # epoll and the workers on their semaphore. At most 2 ticks (20 ms
        # at the usual 100 Hz) over one second, for scheduler noise.
        self.assertLessEqual(used, 2, f"{used} clock ticks of CPU while idle")

    def test_version_and_help_should_exit_zero(self):
        out = subprocess.run([clothd_bin(), "--version"], capture_output=True, text=True, timeout=5)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("0.1.0", out.stdout)
        out = subprocess.run([clothd_bin(), "--help"], capture_output=True, text=True, timeout=5)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("--max-line", out.stdout + out.stderr)

    def test_unknown_flag_should_fail(self):
        out = subprocess.run([clothd_bin(), "--no-such-flag"], capture_output=True, text=True, timeout=5)
        self.assertNotEqual(out.returncode, 0)


if __name__ == "__main__":
    unittest.main()
