"""clothctl, the console: run as a subprocess against a real server, its
output and exit codes (0 ok, 1 server error, 2 usage, 3 cannot connect);
its interactive session driven through a pseudo-terminal (prompt, help,
readline history kept across sessions) and through standard input."""

import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from server import REPO, ServerTestCase, fresh_server

CLOTHCTL = os.path.join(REPO, "clients", "python", "clothctl.py")


def wait_until(check, what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.02)


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
        return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30, env=full_env,
                               stdin=subprocess.DEVNULL)

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
        self.assertRegex(out[0], r"^clothd 0\.1\.0 \((scalar|avx2|avx512), 2 workers\), up \d+\.\d s$")
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
        self.assertRegex(out, r"^instance \d+: 179 particles, 1504 constraints\n$")
        cid = int(out.split()[1].rstrip(":"))
        self.assertIn(f"  Soft body {cid}: 179 particles", self.ok("status"))
        self.assertTrue(self.ok("get", str(cid)).startswith(f"Soft body {cid}: 179 particles, frame 0"))
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
        for args in (["nosuchcommand"], ["wind", "1", "2"], ["pin"], ["step", "--count", "0"],
                     ["debug", "maybe"], ["get", "one"], ["set", "1", "stiffness"],
                     ["move-collider", "1", "1"], ["raw", ""], ["help", "nosuchcommand"]):
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
        self.assertIn("a frame comes after each step, and nothing steps by itself", err)
        self.assertIn("clothctl step", err, "says how to make steps")
        lines = [first] + rest.splitlines(keepends=True)
        self.assertEqual(len(lines), 3)
        self.assertTrue(lines[0].startswith(f"instance {cid} frame 0 time 0.0000 s: 100 particles, 664 bytes quantized"),
                        lines[0])
        self.assertIn("frame 2 ", lines[1])
        self.assertIn("frame 4 ", lines[2])
        self.c.destroy(cid)

    def test_version_names_the_console_and_the_server(self):
        self.assertEqual(self.ok("--version"),
                         f"clothctl 0.1.0\nserver: clothd {self.server.version} at "
                         f"127.0.0.1:{self.server.port}, protocol 1\n")
        port = free_port()
        out = self.ctl("--port", str(port), "--version", port=False)
        self.assertEqual(out.returncode, 0)
        self.assertEqual(out.stdout, f"clothctl 0.1.0\nserver: not reachable (cannot connect to clothd at "
                                     f"127.0.0.1:{port}: Connection refused)\n")

    def test_raw_prints_the_reply_line_as_it_came(self):
        self.assertEqual(self.ok("raw", '{"id":"r","cmd":"ping","x":1}'),
                         '{"id":"r","ok":true,"pong":true,"warnings":["unknown member \\"x\\""]}\n')
        out = self.ctl("raw", '{"cmd":"fly"}')
        self.assertEqual((out.returncode, out.stderr), (1, ""))
        self.assertEqual(json.loads(out.stdout)["error"]["code"], "unknown_command")
        self.assertEqual(json.loads(self.ctl("raw", "[1]").stdout)["error"]["code"], "parse_error")

    def test_set_changes_options_and_names_what_the_server_did_not_read(self):
        cid = self.c.create_cloth(width=3, height=3)
        out = self.ctl("set", str(cid), "stiffness=0.8", "wind_model=constant", "gravity=0,-1.62,0",
                       "sleepTreshold=0", "maxDistance=0.5")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, f"instance {cid}: set stiffness, windModel, gravity, maxDistance\n")
        self.assertEqual(out.stderr, 'clothctl: warning: unknown member "sleepTreshold" '
                                     '(did you mean "sleepThreshold"?)\n')
        state = self.c.get(cid)
        self.assertEqual((state.wind_model, state.gravity), ("constant", [0, -1.62000000, 0]))
        self.assertIn("maxDistance", self.c.topology(cid))
        self.ok("set", str(cid), "maxDistance=null")
        self.assertNotIn("maxDistance", self.c.topology(cid), "null: unpainted again")
        out = self.ctl("set", str(cid), "stiffness=2")
        self.assertEqual((out.returncode, out.stderr),
                         (1, "clothctl: invalid_argument: stiffness: must be a number in [0, 1]\n"))
        self.c.destroy(cid)

    def test_colliders_of_every_type_the_server_has(self):
        cid = self.c.create_cloth(width=3, height=3)
        # The server lists its collider types when given another: add each.
        out = self.ctl("add-collider", str(cid), "cube")
        self.assertEqual(out.returncode, 1)
        types = re.findall(r'"(\w+)"', out.stderr.split("(one of ", 1)[1])
        self.assertEqual(set(types), {"sphere", "capsule", "plane", "taperedCapsule", "box"})
        shape = {"sphere": ["--radius", "0.2"], "capsule": ["--radius", "0.1", "--height", "0.5"],
                 "plane": ["--normal", "0", "1", "0"],
                 "taperedCapsule": ["--radius", "0.1", "--radius2", "0.05", "--height", "0.6"],
                 "box": ["--half-extents", "0.1", "0.2", "0.3", "--rotation", "0", "0", "0", "1"]}
        ids = {}
        for t in types:
            out = self.ok("add-collider", str(cid), t, "--position", "0", "-1", "0", "--friction", "0.3",
                          *shape.get(t, []))
            m = re.fullmatch(rf"collider (\d+) on instance {cid}: {t}\n", out)
            self.assertIsNotNone(m, out)
            ids[t] = int(m.group(1))
        got = {col["collider"]: col for col in self.c.get(cid).colliders}
        self.assertEqual({got[i]["type"] for i in ids.values()}, set(types))
        self.assertEqual(got[ids["box"]]["halfExtents"], [0.100000001, 0.200000003, 0.300000012])
        self.assertAlmostEqual(got[ids["taperedCapsule"]]["radius2"], 0.05, places=7)
        # The protocol's names work too.
        self.assertEqual(self.ok("moveCollider", str(cid), str(ids["sphere"]), "--position", "0", "-2", "0"),
                         f"collider {ids['sphere']} on instance {cid}: position [0, -2, 0]\n")
        self.ok("move-collider", str(cid), str(ids["box"]), "--rotation", "0", "0.7071068", "0", "0.7071068")
        out = self.ctl("move-collider", str(cid), str(ids["box"]), "--normal", "1", "0", "0")
        self.assertEqual(out.returncode, 1)
        self.assertIn("turns by \"rotation\"", out.stderr)
        self.assertEqual(self.ok("remove-collider", str(cid), str(ids["plane"])),
                         f"removed collider {ids['plane']} from instance {cid}\n")
        self.assertEqual(len(self.c.get(cid).colliders), len(types) - 1)
        self.c.destroy(cid)

    def test_help_lists_every_command_from_the_one_table(self):
        out = self.ok("help")
        listed = re.findall(r"^  ([a-z-]+) ", out, re.M)
        for cmd in ("status", "set", "add-collider", "move-collider", "remove-collider", "raw", "watch",
                    "help", "quit"):
            self.assertIn(cmd, listed)
        usage = self.ctl("--help").stdout
        self.assertEqual(sorted(c for c in listed if c != "quit"),
                         sorted(set(re.findall(r"^    ([a-z-]+) ", usage, re.M))),
                         "help and --help read the same table")
        self.assertIn("usage: clothctl add-collider", self.ok("help", "add-collider"))

    def test_commands_on_standard_input_run_one_by_one(self):
        cid = self.c.create_cloth(width=3, height=3)
        out = subprocess.run([sys.executable, CLOTHCTL, "--port", str(self.server.port)],
                             input=f"ping\n# a comment\n\nget {cid}\nget 4000000\nstatus\n",
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 1, "a command failed")
        lines = out.stdout.splitlines()
        self.assertTrue(lines[0].startswith("pong from "), lines)
        self.assertTrue(lines[1].startswith(f"Cloth {cid}: 3x3"), lines)
        self.assertIn("=== Cloth Simulation ===", out.stdout, "went on after the error")
        self.assertEqual(out.stderr, "clothctl: not_found: instance: no instance 4000000\n")
        self.c.destroy(cid)


class ClothctlScenesTest(ServerTestCase):
    """scenes, scene NAME [--hold|--release], create --ephemeral, and
    --scene on create, get, watch, save, record, step, status, destroy."""

    ctl = ClothctlTest.ctl
    ok = ClothctlTest.ok

    def live(self) -> set:
        return {s["instance"] for s in self.c.status()["instances"]}

    def test_scenes_and_scene_show_what_the_server_holds(self):
        a = self.c.create_cloth(width=3, height=3, scene="ctl-a")
        b = self.c.create_cloth(width=3, height=3, scene="ctl-a")
        held = self.c.create_cloth(width=3, height=3, scene="ctl-held")
        self.addCleanup(lambda: self.c.destroy(instances=[a, b, held]))
        self.c.scene("ctl-held", ephemeral=True)  # this test's connection holds it
        lines = self.ok("scenes").splitlines()
        self.assertIn("ctl-a     2 instances", [ln.rstrip() for ln in lines])
        self.assertIn("ctl-held  1 instance  (held by a connection)", lines)
        self.assertEqual(json.loads(self.ok("--json", "scenes"))["scenes"], self.c.scenes())
        self.assertEqual(self.ok("scene", "ctl-a"), f"scene ctl-a: instances {a} {b} (not held)\n")
        self.assertEqual(self.ok("scene", "ctl-held"),
                         f"scene ctl-held: instances {held} (held by another connection)\n")
        self.assertEqual(self.ok("scene", "ctl-none"), "scene ctl-none: no instances (not held)\n")
        self.assertEqual(json.loads(self.ok("scene", "ctl-a", "--json"))["instances"], [a, b])
        out = self.ctl("scene", "ctl-held", "--release")
        self.assertEqual(out.returncode, 1)
        self.assertIn("tied to another connection", out.stderr)
        out = self.ctl("scene", "no spaces")
        self.assertEqual(out.returncode, 1)
        self.assertIn("invalid_argument: scene:", out.stderr)

    def test_a_one_shot_command_refuses_what_would_die_with_it(self):
        before = self.live()
        for args in (["create", "--ephemeral"], ["scene", "ctl-x", "--hold"], ["scene", "x", "--hold", "--release"]):
            out = self.ctl(*args)
            self.assertEqual(out.returncode, 2, args)
            self.assertEqual(out.stdout, "")
        self.assertIn("would be destroyed as soon as this command ends", self.ctl("create", "--ephemeral").stderr)
        self.assertEqual(self.live(), before, "nothing was created")
        self.assertEqual(self.c.scenes("ctl-x"), [])

    def test_a_session_holds_its_scene_and_ephemeral_instances_until_it_ends(self):
        out = subprocess.run([sys.executable, CLOTHCTL, "--port", str(self.server.port)],
                             input="scene ctl-s --hold\n"
                                   "create --width 3 --height 3 --scene ctl-s\n"
                                   "create --width 3 --height 3 --scene ctl-e --ephemeral\n"
                                   "scene ctl-r --hold\n"
                                   "create --width 3 --height 3 --scene ctl-r\n"
                                   "scene ctl-r --release\n"
                                   "scene ctl-s\n"
                                   "scenes\n",
                             capture_output=True, text=True, timeout=30)
        self.assertEqual((out.returncode, out.stderr), (0, ""))
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], "scene ctl-s: no instances (held by this session: its instances go when it ends)")
        s = int(re.fullmatch(r"instance (\d+): 9 particles, 26 constraints, scene ctl-s", lines[1]).group(1))
        e = int(re.fullmatch(r"instance (\d+): 9 particles, 26 constraints, scene ctl-e, ephemeral "
                             r"\(destroyed when this session ends\)", lines[2]).group(1))
        r = int(re.fullmatch(r"instance (\d+): .*, scene ctl-r", lines[4]).group(1))
        self.assertEqual(lines[5], f"scene ctl-r: instances {r} (not held)")
        self.assertEqual(lines[6], f"scene ctl-s: instances {s} (held by this session: its instances go when it ends)")
        self.assertIn("ctl-s  1 instance  (held by a connection)", lines[7:])
        # The session is over: what it held went with it; the released scene stays.
        wait_until(lambda: not ({s, e} & self.live()), "the session's instances destroyed with it")
        self.assertIn(r, self.live())
        self.assertEqual(self.c.scenes("ctl-s") + self.c.scenes("ctl-e"), [])
        self.assertEqual(self.c.destroy(scene="ctl-r"), [r])

    def test_get_step_status_and_destroy_take_a_scene(self):
        i = self.c.create_cloth(width=3, height=3, scene="ctl-g")
        j = self.c.create_cloth(width=3, height=3, scene="ctl-other")
        self.addCleanup(lambda: self.c.destroy(j))
        self.assertTrue(self.ok("get", str(i), "--scene", "ctl-g").startswith(f"Cloth {i}: 3x3, frame 0"))
        out = self.ctl("get", str(j), "--scene", "ctl-g")
        self.assertEqual((out.returncode, out.stderr),
                         (1, f'clothctl: not_found: instance: instance {j} is not in scene "ctl-g"\n'))
        self.assertEqual(self.ok("step", "--scene", "ctl-g"), "1 step of 0.016666668 s: 1 instance stepped\n")
        self.assertIn(f"  Cloth {i}: 9 particles", self.ok("status", "--scene", "ctl-g"))
        self.assertEqual(self.ok("destroy", "--scene", "ctl-g"), f"destroyed 1 instance of scene ctl-g: {i}\n")

    def test_watch_a_scene_sees_its_instances_only(self):
        i = self.c.create_cloth(width=3, height=3, scene="ctl-w")
        j = self.c.create_cloth(width=3, height=3, scene="ctl-other")
        self.addCleanup(lambda: self.c.destroy(instances=[i, j]))
        proc = subprocess.Popen([sys.executable, CLOTHCTL, "--port", str(self.server.port), "watch", "--scene",
                                 "ctl-w", "--count", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = proc.stdout.readline()  # the current frame: subscribed by now
        self.c.step(1 / 60, instances=[i, j])
        rest, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("watching every instance of scene ctl-w", err)
        self.assertTrue(first.startswith(f"instance {i} frame 0 "), first)
        self.assertTrue(rest.startswith(f"instance {i} frame 1 "), rest)
        out = self.ctl("watch", str(j), "--scene", "ctl-w", "--count", "1")
        self.assertEqual(out.returncode, 1)
        self.assertIn(f'instance {j} is not in scene "ctl-w"', out.stderr)

    def test_save_and_record_take_a_scene_and_need_a_data_dir(self):
        out = self.ctl("save", "snap", "--scene", "ctl-a")
        self.assertEqual(out.returncode, 1)
        self.assertIn(f'clothctl: incompatible_server: clothd endpoint 127.0.0.1:{self.server.port}: lacks the '
                      f'feature "snapshots"', out.stderr)
        self.assertIn("--data-dir", out.stderr)
        with tempfile.TemporaryDirectory() as data:
            srv = fresh_server(self, "--data-dir", data)
            c = srv.client()
            self.addCleanup(c.close)
            i = c.create_cloth(width=3, height=3, scene="ctl-d")
            c.create_cloth(width=3, height=3)
            port = ["--port", str(srv.port)]
            self.assertRegex(self.ok(*port, "save", "snap", "--scene", "ctl-d", port=False),
                             r"^saved 1 instance\(s\) as snap \(\d+ bytes\)\n$")
            self.assertEqual(sorted(os.listdir(data)), ["snap.cds"])
            self.assertEqual(self.ok(*port, "record", "j", "--scene", "ctl-d", port=False),
                             f"recording instances {i} to j\n")
            self.assertTrue(self.ok(*port, "record", "--stop", port=False).startswith("recorded 0 frame(s) to j"))


class PtySession:
    """clothctl on a pseudo-terminal, as a person at a terminal runs it."""

    def __init__(self, tc: unittest.TestCase, port: int, histfile: str, *args: str):
        import pty  # noqa: F401  (POSIX only; the module's import says so)
        self.master, slave = os.openpty()
        env = dict(os.environ, TERM="xterm", CLOTHCTL_HISTFILE=histfile, HOME=os.path.dirname(histfile))
        env.pop("CLOTHD_PORT", None)
        self.proc = subprocess.Popen([sys.executable, CLOTHCTL, "--port", str(port), *args], stdin=slave,
                                     stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.tc = tc
        self.seen = b""
        tc.addCleanup(self.close)

    def until(self, text: str, timeout: float = 10) -> str:
        """Reads until `text` shows; returns what came since the last call."""
        want = text.encode()
        start = len(self.seen)
        deadline = time.monotonic() + timeout
        while want not in self.seen[start:]:
            left = deadline - time.monotonic()
            self.tc.assertGreater(left, 0, f"no {text!r} in {self.seen[start:]!r}")
            if select.select([self.master], [], [], left)[0]:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    chunk = b""
                self.tc.assertTrue(chunk, f"clothctl ended before {text!r}: {self.seen[start:]!r}")
                self.seen += chunk
        out = self.seen[start:].decode("utf-8", "replace")
        self.seen = self.seen[:start] + self.seen[start:].split(want, 1)[0] + want
        return out

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self.master)


class InteractiveTest(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.home = tempfile.mkdtemp(prefix="clothctl-home-")
        self.addCleanup(shutil.rmtree, self.home, ignore_errors=True)
        self.histfile = os.path.join(self.home, ".clothctl_history")
        self.prompt = f"127.0.0.1:{self.server.port}> "

    def test_a_session_on_a_terminal_has_a_prompt_help_and_history(self):
        s = PtySession(self, self.server.port, self.histfile)
        banner = s.until(self.prompt)
        self.assertIn(f"connected to 127.0.0.1:{self.server.port}", banner)
        s.send("help\r")
        out = s.until(self.prompt)
        for cmd in ("add-collider", "set", "raw", "watch", "quit"):
            self.assertRegex(out, rf"\n  {cmd} +\S", f"help lists {cmd}")
        s.send("help add-collider\r")
        self.assertIn("usage: clothctl add-collider", s.until(self.prompt))
        s.send("create --width 3 --height 3\r")
        made = re.search(r"instance (\d+): 9 particles", s.until(self.prompt))
        self.assertIsNotNone(made)
        cid = int(made.group(1))
        s.send(f"set {cid} stifness=0.5\r")
        out = s.until(self.prompt)
        self.assertIn('warning: unknown member "stifness" (did you mean "stiffness"?)', out)
        s.send("get 4000000\r")  # an error does not end the session
        self.assertIn("not_found: instance: no instance 4000000", s.until(self.prompt))
        s.send("pin\r")  # nor does bad usage
        self.assertIn("clothctl: the following arguments are required", s.until(self.prompt))
        s.send("quit\r")
        self.assertEqual(s.proc.wait(timeout=10), 0)
        self.assertEqual(open(self.histfile).read().splitlines(),
                         ["help", "help add-collider", "create --width 3 --height 3", f"set {cid} stifness=0.5",
                          "get 4000000", "pin", "quit"])
        self.c.destroy(cid)

    def test_history_comes_back_in_the_next_session(self):
        with open(self.histfile, "w") as f:
            f.write("status\ncreate --width 4 --height 2\n")
        before = len(self.c.status()["instances"])
        s = PtySession(self, self.server.port, self.histfile)
        s.until(self.prompt)
        s.send("\x1b[A\r")  # up: the last line of the last session, run again
        out = s.until(self.prompt)
        made = re.search(r"instance (\d+): 8 particles", out)
        self.assertIsNotNone(made, out)
        s.send("\x04")  # Ctrl-D ends it too
        self.assertEqual(s.proc.wait(timeout=10), 0)
        self.assertEqual(len(self.c.status()["instances"]), before + 1)
        self.assertEqual(open(self.histfile).read().splitlines()[-1], "create --width 4 --height 2")
        self.c.destroy(int(made.group(1)))

    def test_dash_i_on_a_pipe_still_prompts_and_no_server_exits_3(self):
        out = subprocess.run([sys.executable, CLOTHCTL, "--port", str(self.server.port), "-i"],
                             input="ping\nquit\n", capture_output=True, text=True, timeout=30,
                             env=dict(os.environ, CLOTHCTL_HISTFILE=self.histfile))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(self.prompt + "pong from", out.stdout)
        port = free_port()
        out = subprocess.run([sys.executable, CLOTHCTL, "--port", str(port), "-i"], input="",
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 3)
        self.assertIn(f"cannot connect to clothd at 127.0.0.1:{port}", out.stderr)


if __name__ == "__main__":
    unittest.main()
