"""Snapshots through the real clothd (issue 13): save -> kill -9 -> restart
with --data-dir gives every instance back, stepping bit for bit like a
server that never stopped; a crash at each stage of a write never leaves a
snapshot that fails to load; a damaged file is refused naming its section;
a failing disk is `internal` and the server carries on; autosave at
SIGTERM."""

import glob
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

from server import Server, fresh_server
from clothd import ClothdError


def world_script(c):
    """A world with what a step reads: pins, an attachment on a moving
    transform, colliders (one coupled, one moved), own and global wind,
    self-collision, a soft body, a destroyed instance (slots and
    generations)."""
    gone = c.create_cloth(4, 4)
    cape = c.create_cloth(16, 12, stretch_compliance=1e-6, sleep_threshold=0)
    c.request("destroy", instance=gone)
    c.transform(cape, "shoulders", [0, 0, 0])
    c.attach(cape, "shoulders", list(range(16)))
    sphere = c.add_collider(cape, "sphere", position=[0.7, -0.6, 0.1], radius=0.3, coupling=0.5)
    c.add_collider(cape, "capsule", position=[0.2, -0.3, 0], radius=0.1, height=0.5, attachment="shoulders")
    c.wind([1, 0, 2], instance=cape)
    sheet = c.create_cloth(10, 10, self_distance=0.05, origin=[2, 1, 0], down=[0, 0, 1])
    c.pin(sheet, 5)
    c.add_collider(sheet, "plane", position=[0, 0.2, 0], normal=[0, 1, 0])
    ball = c.request("create", type="softbody", shape="ball", radius=0.4, resolution=3,
                     center=[-2, 1, 0])["instance"]
    c.add_collider(ball, "plane", position=[0, 0, 0], normal=[0, 1, 0])
    c.wind([0.5, 0, 0])
    return [cape, sheet, ball], sphere


def drive(c, ids, sphere, frames, start):
    """Steps `frames` times, swinging the transform and moving the sphere."""
    import math
    for k in range(start, start + frames):
        a = 0.02 * k
        c.transform(ids[0], "shoulders", [0.3 * math.sin(a), 0, 0],
                    rotation=[0, math.sin(a / 2), 0, math.cos(a / 2)])
        if k % 50 == 0:
            c.move_collider(ids[0], sphere, position=[0.7, -0.6 + 0.001 * k, 0.1])
        c.step()


def state(c, ids):
    out = {}
    for i in ids:
        g = c.request("get", instance=i)
        out[i] = (g["frame"], g["time"], g["positions"])
    return out


class MemorySnapshots(unittest.TestCase):
    """`save` with "memory":true and `load` with "restore":true (issue 12: a
    viewer's reset points): kept for the connection that saved them, no
    file and no --data-dir, one instance put back in place under its own
    id while the others keep their steps, bounded by --max-total-particles
    and freed with the connection."""

    def error(self, c, cmd, **fields):
        with self.assertRaises(ClothdError) as ctx:
            c.request(cmd, **fields)
        return ctx.exception.code, str(ctx.exception)

    def test_restore_should_put_the_saved_instance_back_in_place_and_tell_subscribers(self):
        srv = fresh_server(self)
        with srv.client() as c, srv.client() as watcher:
            a = c.create_cloth(8, 8)
            b = c.create_cloth(5, 5, origin=[2, 1, 0])
            c.pin(a, 0)
            for _ in range(3):
                c.step()
            saved = c.request("get", instance=a)
            reply = c.request("save", name="reset-a", instances=[a], memory=True)
            self.assertEqual(reply["instances"], 1)
            self.assertGreater(reply["bytes"], 64 * 12)
            for _ in range(20):
                c.step()
            self.assertNotEqual(c.request("get", instance=a)["positions"], saved["positions"])
            watcher.subscribe(instance=a)
            reply = c.request("load", name="reset-a", memory=True, restore=True)
            self.assertEqual(reply["instances"], [a], "the same id")
            back = c.request("get", instance=a)
            self.assertEqual((back["frame"], back["time"]), (3, saved["time"]))
            self.assertEqual(back["positions"], saved["positions"])
            self.assertEqual(back["pinned"], [0])
            self.assertEqual(c.request("get", instance=b)["frame"], 23, "the other instance keeps its steps")
            seen = []
            while not seen or seen[-1] != 3:
                seen.append(watcher.next_frame(timeout=5).frame)
            self.assertLessEqual(len(seen), 2, f"a subscriber sees the restored state at once: {seen}")
            c.step()
            self.assertEqual(c.request("get", instance=a)["frame"], 4)
            # Destroyed: restore brings it back under its id.
            c.request("destroy", instance=a)
            self.assertEqual(c.request("load", name="reset-a", memory=True, restore=True)["instances"], [a])
            self.assertEqual(c.request("get", instance=a)["frame"], 3)
            # Another connection has none of this one's memory snapshots.
            code, msg = self.error(watcher, "load", name="reset-a", memory=True, restore=True)
            self.assertEqual(code, "not_found")
            self.assertIn("no memory snapshot", msg)
            code, msg = self.error(c, "load", name="reset-a", memory=True, restore=True, replace=True)
            self.assertEqual(code, "invalid_argument")
            self.assertIn("restore:", msg)
            code, msg = self.error(c, "save", name="x", memory="yes")
            self.assertEqual(code, "invalid_argument")
            self.assertIn("memory:", msg)

    def test_memory_snapshots_should_be_bounded_and_freed_with_their_connection(self):
        srv = fresh_server(self, "--max-total-particles", "200")
        with srv.client() as owner:
            a = owner.create_cloth(8, 8)  # 64 particles
            with srv.client() as c:
                for name in ("one", "two", "three"):
                    c.request("save", name=name, instances=[a], memory=True)
                c.request("save", name="one", instances=[a], memory=True)  # replaced, not added
                code, msg = self.error(c, "save", name="four", instances=[a], memory=True)
                self.assertEqual(code, "limit_exceeded")
                self.assertIn("256 particles in the memory snapshots", msg)
            with srv.client() as c:  # the first connection's are gone with it
                for name in ("one", "two", "three"):
                    c.request("save", name=name, instances=[a], memory=True)

    def test_restoring_a_recorded_instance_should_end_the_recording(self):
        d = tempfile.mkdtemp(prefix="clothd-mem-")
        self.addCleanup(shutil.rmtree, d, True)
        srv = fresh_server(self, "--data-dir", d)
        with srv.client() as c:
            a = c.create_cloth(6, 6)
            c.request("save", name="r", instances=[a], memory=True)
            self.assertEqual(os.listdir(d), [], "a memory snapshot writes no file")
            c.request("record", name="j", instances=[a])
            c.step()
            self.assertEqual(c.request("journals")["recording"]["name"], "j")
            c.request("load", name="r", memory=True, restore=True)
            self.assertIsNone(c.request("journals")["recording"], "the journal ends at the restore")
            self.assertEqual(sorted(os.listdir(d)), ["j.cdj"])


class SnapshotRestart(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="clothd-snap-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_kill_9_then_restart_should_step_300_frames_bit_identically(self):
        ref = fresh_server(self)
        first = Server("--data-dir", self.dir).start()
        try:
            with ref.client() as r, first.client() as c:
                ids, sphere = world_script(c)
                self.assertEqual(world_script(r)[0], ids)
                drive(c, ids, sphere, 60, 0)
                drive(r, ids, sphere, 60, 0)
                reply = c.request("save", name="checkpoint-7")
                self.assertEqual(reply["instances"], 3)
                self.assertGreater(reply["bytes"], 1000)
                self.assertTrue(os.path.exists(os.path.join(self.dir, "checkpoint-7.cds")))
        finally:
            first.proc.send_signal(signal.SIGKILL)
            first.kill()
        second = fresh_server(self, "--data-dir", self.dir, "--workers", "1")
        self.assertIn("snapshot-loaded name=checkpoint-7", second.stderr())
        with ref.client() as r, second.client() as c:
            status = c.status()
            self.assertEqual(sorted(i["instance"] for i in status["instances"]), sorted(ids))
            self.assertEqual(state(c, ids), state(r, ids), "every instance back as it was")
            for block in range(6):
                drive(c, ids, sphere, 50, 60 + 50 * block)
                drive(r, ids, sphere, 50, 60 + 50 * block)
                self.assertEqual(state(c, ids), state(r, ids), f"bit-identical after {50 * block + 50} steps")
            # Ids keep coming from the same slot table.
            self.assertEqual(c.create_cloth(3, 3), r.create_cloth(3, 3))

    def test_a_crash_at_each_write_stage_should_leave_a_loadable_snapshot(self):
        for stage in ["mid-write", "write", "fsync", "rename"]:
            with self.subTest(stage=stage):
                d = tempfile.mkdtemp(prefix="clothd-crash-", dir=self.dir)
                with Server("--data-dir", d) as srv, srv.client() as c:
                    a = c.create_cloth(8, 8)
                    c.step()
                    c.request("save", name="world")
                crashing = Server("--data-dir", d, "--crash-at", stage).start()
                with crashing.client() as c:
                    c.step()
                    c.step()
                    with self.assertRaises(Exception):
                        c.request("save", name="world")
                code = crashing.proc.wait(timeout=5)
                crashing.kill()
                self.assertEqual(code, -signal.SIGABRT, f"aborted at {stage}")
                srv = fresh_server(self, "--data-dir", d)
                self.assertIn("snapshot-loaded name=world", srv.stderr())
                if stage in ("mid-write", "write", "fsync"):
                    self.assertIn("snapshot-temporaries-removed", srv.stderr())
                self.assertEqual(glob.glob(os.path.join(d, ".*")), [], "the crash's temporary is gone")
                with srv.client() as c:
                    frame = c.request("get", instance=a)["frame"]
                    # Before the rename the old file stands; after it, the new.
                    self.assertEqual(frame, 3 if stage == "rename" else 1, stage)
                    c.request("load", name="world", replace=True)
                srv.stop()

    def test_a_torn_newest_snapshot_should_be_skipped_at_start(self):
        with Server("--data-dir", self.dir) as srv, srv.client() as c:
            a = c.create_cloth(6, 6)
            c.step()
            c.request("save", name="good")
        good = os.path.join(self.dir, "good.cds")
        data = open(good, "rb").read()
        torn = os.path.join(self.dir, "torn.cds")
        with open(torn, "wb") as f:
            f.write(data[: len(data) // 2])
        os.utime(torn, (time.time() + 10, time.time() + 10))
        srv = fresh_server(self, "--data-dir", self.dir)
        log = srv.stderr()
        self.assertIn("snapshot-skipped name=torn", log)
        self.assertIn("truncated", log)
        self.assertIn("snapshot-loaded name=good", log)
        with srv.client() as c:
            self.assertEqual(c.request("get", instance=a)["frame"], 1)

    def test_sigterm_should_autosave_and_a_restart_carry_on(self):
        srv = Server("--data-dir", self.dir, "--autosave", "1").start()
        with srv.client() as c:
            a = c.create_cloth(6, 6)
            for _ in range(5):
                c.step()
            deadline = time.monotonic() + 5
            while not os.path.exists(os.path.join(self.dir, "autosave.cds")):
                self.assertLess(time.monotonic(), deadline, "an autosave within a second or two")
                time.sleep(0.05)
            for _ in range(7):
                c.step()
            before = c.request("get", instance=a)
        srv.stop()
        again = fresh_server(self, "--data-dir", self.dir)
        self.assertIn("snapshot-loaded name=autosave", again.stderr())
        with again.client() as c:
            after = c.request("get", instance=a)
            self.assertEqual(after["frame"], 12, "the SIGTERM autosave holds the last step")
            self.assertEqual(after["positions"], before["positions"])

    def test_autosave_without_a_data_dir_should_be_a_usage_error(self):
        srv = Server("--autosave", "5")
        with self.assertRaises(AssertionError) as ctx:
            srv.start()
        self.assertIn("--autosave needs --data-dir", str(ctx.exception))


class SnapshotCommands(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="clothd-snap-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def error(self, c, cmd, **fields):
        with self.assertRaises(ClothdError) as ctx:
            c.request(cmd, **fields)
        return ctx.exception.code, str(ctx.exception)

    def test_a_pipelined_save_should_hold_the_state_before_the_next_step(self):
        """The file is written off the loop, but the reply keeps its place
        and the snapshot is the state when `save` ran."""
        srv = fresh_server(self, "--data-dir", self.dir)
        with srv.client() as c:
            a = c.create_cloth(32, 32)
            c.step()
            lines = [{"id": 1, "cmd": "save", "name": "p"}, {"id": 2, "cmd": "step"},
                     {"id": 3, "cmd": "get", "instance": a}]
            c.send_raw(b"".join((json.dumps(m) + "\n").encode() for m in lines))
            replies = [c.read_reply() for _ in lines]
            self.assertEqual([r["id"] for r in replies], [1, 2, 3], "in order")
            self.assertTrue(all(r["ok"] for r in replies), replies)
            self.assertEqual(replies[2]["frame"], 2)
            c.request("load", name="p", replace=True)
            self.assertEqual(c.request("get", instance=a)["frame"], 1, "the state when save ran")

    def test_names_should_never_be_paths(self):
        srv = fresh_server(self, "--data-dir", self.dir)
        with srv.client() as c:
            c.create_cloth(3, 3)
            for bad in ["../escape", "a/b", ".hidden", "", "x" * 65, "sp ace", "/etc/passwd"]:
                code, msg = self.error(c, "save", name=bad)
                self.assertEqual(code, "invalid_argument", bad)
                self.assertIn("name:", msg)
            code, _ = self.error(c, "save")
            self.assertEqual(code, "invalid_argument")
            code, msg = self.error(c, "load", name="never-saved")
            self.assertEqual(code, "not_found", msg)
        self.assertEqual(os.listdir(self.dir), [])
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(self.dir), "escape.cds")))

    def test_without_a_data_dir_save_should_say_so(self):
        srv = fresh_server(self)
        with srv.client() as c:
            reply = c.exchange({"cmd": "save", "name": "x"})  # the server's own answer
            self.assertEqual(reply["error"]["code"], "invalid_argument")
            self.assertIn("--data-dir", reply["error"]["message"])
            code, msg = self.error(c, "save", name="x")  # the client's, before sending
            self.assertEqual(code, "incompatible_server")
            self.assertIn('lacks the feature "snapshots"', msg)
            self.assertIn("--data-dir", msg)

    def test_load_should_refuse_ids_in_use_unless_replace(self):
        srv = fresh_server(self, "--data-dir", self.dir)
        with srv.client() as c:
            a = c.create_cloth(5, 5)
            b = c.create_cloth(5, 5)
            c.pin(a, 0)
            c.step()
            c.request("save", name="two", instances=[a])
            code, msg = self.error(c, "load", name="two")
            self.assertEqual(code, "invalid_argument")
            self.assertIn("in use", msg)
            self.assertEqual(len(c.status()["instances"]), 2, "nothing changed")
            c.request("destroy", instance=a)
            reply = c.request("load", name="two")
            self.assertEqual(reply["instances"], [a])
            self.assertEqual(c.request("get", instance=a)["frame"], 1)
            reply = c.request("load", name="two", replace=True)
            self.assertEqual([i["instance"] for i in c.status()["instances"]], [a])
            with self.assertRaises(ClothdError):
                c.request("get", instance=b)

    def test_a_damaged_file_should_be_refused_naming_the_section_and_change_nothing(self):
        srv = fresh_server(self, "--data-dir", self.dir)
        with srv.client() as c:
            a = c.create_cloth(8, 8)
            c.step()
            c.request("save", name="w")
            path = os.path.join(self.dir, "w.cds")
            data = bytearray(open(path, "rb").read())
            c.step()
            before = c.request("get", instance=a)
            # A flipped byte deep in the instance's section.
            data[len(data) - 200] ^= 0x01
            open(path, "wb").write(data)
            code, msg = self.error(c, "load", name="w", replace=True)
            self.assertEqual(code, "invalid_argument")
            self.assertIn("section 2 (INST)", msg)
            self.assertIn("checksum mismatch", msg)
            data[len(data) - 200] ^= 0x01
            open(path, "wb").write(bytes(data[:-30]))
            code, msg = self.error(c, "load", name="w", replace=True)
            self.assertEqual(code, "invalid_argument")
            self.assertIn("truncated", msg)
            # A future format version.
            future = bytearray(data)
            future[8] = 9
            open(path, "wb").write(future)
            code, msg = self.error(c, "load", name="w", replace=True)
            self.assertIn("header", msg)
            after = c.request("get", instance=a)
            del after["id"], before["id"]
            self.assertEqual(after, before, "nothing changed")

    def test_a_failing_disk_should_be_internal_and_keep_what_was_saved(self):
        # Disk full, as RLIMIT_FSIZE makes it: writes past 64 KiB fail.
        limit = ("import os,signal,resource,sys;signal.signal(signal.SIGXFSZ,signal.SIG_IGN);"
                 "resource.setrlimit(resource.RLIMIT_FSIZE,(65536,65536));os.execv(sys.argv[1],sys.argv[1:])")
        srv = Server("--data-dir", self.dir, wrapper=[sys.executable, "-c", limit]).start()
        self.addCleanup(srv.kill)
        with srv.client() as c:
            small = c.create_cloth(4, 4)
            c.request("save", name="w")
            saved = open(os.path.join(self.dir, "w.cds"), "rb").read()
            c.create_cloth(64, 64)
            code, msg = self.error(c, "save", name="w")
            self.assertEqual(code, "internal")
            self.assertIn("File too large", msg)
            self.assertIn("nothing saved", msg)
            self.assertEqual(open(os.path.join(self.dir, "w.cds"), "rb").read(), saved, "the old file intact")
            self.assertEqual(glob.glob(os.path.join(self.dir, ".*")), [], "no temporary left")
            c.request("load", name="w", replace=True)
            self.assertEqual([i["instance"] for i in c.status()["instances"]], [small])
            c.step()
        srv.stop()

    def test_an_unusable_data_dir_should_be_internal_and_the_server_carry_on(self):
        not_a_dir = os.path.join(self.dir, "file")
        open(not_a_dir, "w").write("x")
        srv = fresh_server(self, "--data-dir", not_a_dir)
        with srv.client() as c:
            c.create_cloth(4, 4)
            code, msg = self.error(c, "save", name="w")
            self.assertEqual(code, "internal")
            self.assertIn("Not a directory", msg)
            c.step()
            c.ping()


class SnapshotClients(unittest.TestCase):
    """The Python client's save/load and clothctl's `save world.cds` /
    `load world --replace`."""

    def test_python_client_and_clothctl_should_save_and_load(self):
        import subprocess
        from server import REPO
        d = tempfile.mkdtemp(prefix="clothd-snap-")
        self.addCleanup(shutil.rmtree, d, True)
        srv = fresh_server(self, "--data-dir", d)
        ctl = [sys.executable, os.path.join(REPO, "clients", "python", "clothctl.py"), "--port", str(srv.port)]
        with srv.client() as c:
            a = c.create_cloth(5, 5)
            c.step()
            self.assertEqual(c.save("py", instances=[a])["instances"], 1)
            out = subprocess.run(ctl + ["save", "world.cds"], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("saved 1 instance(s) as world", out.stdout)
            self.assertTrue(os.path.exists(os.path.join(d, "world.cds")))
            c.step()
            out = subprocess.run(ctl + ["load", "world", "--replace"], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn(f"instances {a}", out.stdout)
            self.assertEqual(c.request("get", instance=a)["frame"], 1)
            out = subprocess.run(ctl + ["load", "world"], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 1, "a server error")
            self.assertIn("in use", out.stderr)
            self.assertEqual(c.load("py", replace=True), [a])
