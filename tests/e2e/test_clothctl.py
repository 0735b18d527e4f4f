"""clothctl, the console: run as a subprocess against a real server, its
output and exit codes (0 ok, 1 server error, 2 usage, 3 cannot connect)."""

import json
import os
import socket
import subprocess
import sys
import unittest

from server import REPO, ServerTestCase

CLOTHCTL = os.path.join(REPO, "clients", "python", "clothctl.py")


def free_port() -> int:
    """A port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClothctlTest(ServerTestCase):
    def ctl(self, *args: str, env=None, port=True) -> subprocess.CompletedProcess:
        cmd = [sys.executable, CLOTHCTL]
        if port:
            cmd += ["--port", str(self.server.port)]
        full_env = dict(os.environ)
        full_env.pop("CLOTHD_HOST", None)
        full_env.pop("CLOTHD_PORT", None)
        full_env.update(env or {})
        return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30, env=full_env)

    def ok(self, *args: str, **kw) -> str:
        out = self.ctl(*args, **kw)
        self.assertEqual(out.returncode, 0, f"clothctl {args}: {out.stderr}")
        self.assertEqual(out.stderr, "")
        return out.stdout

    def test_status_should_print_the_seed_block(self):
        cid = self.c.create_cloth()
        self.c.enable(cid, False)
        out = self.ok("status")
        self.assertEqual(out, self.c.status()["text"])
        self.assertTrue(out.startswith("=== Cloth Simulation ===\nInstances: "))
        self.assertIn(f"  Cloth {cid}: 100 particles, 502 constraints, 0 colliders [DISABLED]\n", out)
        self.c.destroy(cid)

    def test_stats_should_print_the_counters(self):
        cid = self.c.create_cloth(width=3, height=3)
        before = self.c.stats()
        for _ in range(3):
            self.c.step(instance=cid)
        out = self.ok("stats").splitlines()
        self.assertEqual(len(out), 7, out)
        self.assertRegex(out[0], r"^clothd 0\.1\.0 \((scalar|avx2), 2 workers\), up \d+\.\d s$")
        self.assertRegex(out[1], r"^connections: 2 now, \d+ total, 0 refused \(limit 128\)$")
        self.assertIn(f"steps: {before['steps']['total'] + 3} (", out[3])
        self.assertTrue(out[5].startswith("requests: ") and "stats " in out[5], out[5])
        line = self.ok("--json", "stats")
        self.assertIn('"ok":true', line)
        self.c.destroy(cid)

    def test_wind_should_show_and_set_the_global_wind(self):
        self.assertEqual(self.ok("wind", "0.1", "0", "-2"), "global wind: [0.1, 0, -2]\n")
        self.assertEqual(self.c.status()["globalWind"], [0.100000001, 0, -2])
        self.assertEqual(self.ok("wind"), "global wind: [0.1, 0, -2]\n")
        self.ok("wind", "0", "0", "0")
        self.assertEqual(self.ok("wind"), "global wind: [0, 0, 0]\n")

    def test_wind_of_an_instance(self):
        cid = self.c.create_cloth(width=3, height=3)
        self.assertEqual(self.ok("wind", "1", "2", "3", "--instance", str(cid)),
                         f"wind of instance {cid}: [1, 2, 3]\n")
        self.assertEqual(self.ok("wind"), "global wind: [0, 0, 0]\n")
        self.c.destroy(cid)

    def test_debug_should_show_and_toggle_the_overlay_and_reach_viewers(self):
        viewer = self.client()
        cid = self.c.create_cloth(width=3, height=3)
        viewer.subscribe(cid)
        self.assertEqual(self.ok("debug"), "debug overlay: off\n")
        self.assertEqual(self.ok("debug", "on"), "debug overlay: on\n")
        self.assertTrue(self.c.debug())
        viewer.status()  # events that came before this reply are in viewer.events
        self.assertIn({"event": "debug", "enabled": True}, list(viewer.events))
        self.assertEqual(self.ok("debug"), "debug overlay: on\n")
        self.assertEqual(self.ok("debug", "off"), "debug overlay: off\n")
        self.c.destroy(cid)

    def test_create_pin_step_get_should_drive_a_cloth(self):
        out = self.ok("create", "--width", "4", "--height", "3", "--spacing", "0.5", "--origin", "0", "2", "0",
                      "--bend-stiffness", "0.2", "--solver-iterations", "6")
        self.assertRegex(out, r"^instance \d+: 12 particles, 39 constraints\n$")
        cid = int(out.split()[1].rstrip(":"))
        self.assertEqual(self.ok("pin", str(cid), "0"), f"pinned particle 0 of instance {cid} in place\n")
        self.assertEqual(self.ok("pin", str(cid), "3", "1.5", "2", "0"),
                         f"pinned particle 3 of instance {cid} at [1.5, 2, 0]\n")
        out = self.ok("step", "--count", "30", "--dt", "0.02", "--instance", str(cid))
        self.assertEqual(out, "30 steps of 0.02 s: 1 instance stepped\n")
        state = self.c.get(cid)
        self.assertEqual(state.frame, 30)
        self.assertEqual(state.pinned, [0, 3])
        out = self.ok("get", str(cid))
        self.assertTrue(out.startswith(f"Cloth {cid}: 4x3, frame 30, time 0.6 s, enabled\n"), out)
        self.assertIn("  pinned: 2 (0, 3)\n", out)
        self.assertIn("  particle 0: [0, 2, 0]\n", out)
        out = self.ok("get", str(cid), "--positions")
        self.assertEqual(len([ln for ln in out.splitlines() if ln.startswith("  ") and ": [" in ln
                              and not ln.startswith("  bounding")]), 12)
        self.assertIn(f"unpinned particle 3 of instance {cid}\n", self.ok("unpin", str(cid), "3"))
        self.assertIn("disabled", self.ok("enable", str(cid), "off"))
        self.assertEqual(self.ok("step", "--instance", str(cid)), "1 step of 0.016666668 s: 0 instances stepped\n")
        self.assertIn(f"destroyed instance {cid}", self.ok("destroy", str(cid)))

    def test_create_should_make_a_soft_ball_too(self):
        out = self.ok("create", "--type", "softbody", "--shape", "ball", "--radius", "0.3", "--resolution", "6",
                      "--center", "0", "1", "0")
        self.assertRegex(out, r"^instance \d+: 215 particles, 1768 constraints\n$")
        cid = int(out.split()[1].rstrip(":"))
        self.assertIn(f"  Soft body {cid}: 215 particles", self.ok("status"))
        self.assertTrue(self.ok("get", str(cid)).startswith(f"Soft body {cid}: 215 particles, frame 0"))
        self.c.destroy(cid)

    def test_output_into_a_closed_pipe_should_not_be_an_error(self):
        cid = self.c.create_cloth(width=30, height=30)
        proc = subprocess.run(f"{sys.executable} {CLOTHCTL} --port {self.server.port} get {cid} --positions | head -2",
                              shell=True, capture_output=True, text=True, timeout=30,
                              executable="/bin/bash")
        self.assertEqual(len(proc.stdout.splitlines()), 2)
        self.assertEqual(proc.stderr, "")
        self.c.destroy(cid)

    def test_json_should_print_the_raw_replies(self):
        out = self.ok("--json", "status")
        reply = json.loads(out)
        self.assertIs(reply["ok"], True)
        self.assertIn("=== Cloth Simulation ===", reply["text"])
        out = self.ok("create", "--width", "3", "--height", "3", "--json")  # after the command too
        created = json.loads(out)
        self.assertEqual(created["particles"], 9)
        lines = self.ok("--json", "step", "--count", "3", "--instance", str(created["instance"])).splitlines()
        self.assertEqual(len(lines), 3)
        self.assertEqual([json.loads(ln)["stepped"] for ln in lines], [1, 1, 1])
        self.assertEqual(json.loads(self.ok("--json", "debug"))["enabled"], False)
        self.c.destroy(created["instance"])

    def test_a_server_error_should_exit_1_with_the_code_on_stderr(self):
        out = self.ctl("get", "4000000")
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stdout, "")
        self.assertEqual(out.stderr, "clothctl: not_found: instance: no instance 4000000\n")
        out = self.ctl("create", "--width", "1")
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stderr, "clothctl: invalid_argument: width: must be an integer >= 2\n")

    def test_bad_usage_should_exit_2(self):
        for args in (["nosuchcommand"], [], ["wind", "1", "2"], ["pin"], ["step", "--count", "0"],
                     ["debug", "maybe"], ["get", "one"]):
            with self.subTest(args=args):
                out = self.ctl(*args)
                self.assertEqual(out.returncode, 2, out.stderr)
                self.assertIn("clothctl", out.stderr)
                self.assertEqual(out.stdout, "")

    def test_no_server_should_exit_3(self):
        port = free_port()
        out = self.ctl("--port", str(port), "status", port=False)
        self.assertEqual(out.returncode, 3)
        self.assertIn(f"cannot connect to clothd at 127.0.0.1:{port}", out.stderr)

    def test_environment_should_give_the_address(self):
        out = self.ctl("status", port=False, env={"CLOTHD_HOST": "127.0.0.1", "CLOTHD_PORT": str(self.server.port)})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("=== Cloth Simulation ===", out.stdout)
        # --port wins over the environment.
        out = self.ctl("status", env={"CLOTHD_PORT": str(free_port())})
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_watch_should_print_a_line_per_frame(self):
        cid = self.c.create_cloth(width=10, height=10)
        proc = subprocess.Popen([sys.executable, CLOTHCTL, "--port", str(self.server.port), "watch", str(cid),
                                 "--count", "3", "--every", "2", "--quantize"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = proc.stdout.readline()  # the current frame: subscribed by now
        for _ in range(4):
            self.c.step(1 / 60, instances=[cid])
        rest, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 0, err)
        lines = [first] + rest.splitlines(keepends=True)
        self.assertEqual(len(lines), 3)
        self.assertTrue(lines[0].startswith(f"instance {cid} frame 0 time 0.0000 s: 100 particles, 664 bytes quantized"),
                        lines[0])
        self.assertIn("frame 2 ", lines[1])
        self.assertIn("frame 4 ", lines[2])
        self.c.destroy(cid)


if __name__ == "__main__":
    unittest.main()
