"""Scenes and connection-owned lifetimes (issue 12, part 1) against the real
clothd: a step of one scene leaves another's bits alone, destroy and status
by scene, the scene checks' error codes, the v1 meaning of a bare step,
ephemeral instances and scenes destroyed when (and only when) their
connection closes, a connection closed in the middle of a multi-instance
step (run under ASan by `make check`), subscriptions that follow a scene,
and scenes kept by snapshots, restarts and replays."""

import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from clothd import ClothdError
from server import REPO, Server, ServerTestCase, assert_error, fresh_server, send_line

CLOTHCTL = os.path.join(REPO, "clients", "python", "clothctl.py")


def positions(c, instance):
    return c.request("get", instance=instance)["positions"]


def wait_until(predicate, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"{what}: not within {timeout} s")


def live_ids(c):
    return {e["instance"] for e in c.request("status")["instances"]}


def scenes_of(c):
    return {s["scene"]: s for s in c.request("scenes")["scenes"]}


class SceneTest(ServerTestCase):
    def make(self, c, scene=None, **fields):
        fields.setdefault("width", 6)
        fields.setdefault("height", 6)
        fields.setdefault("sleep_threshold", 0)
        if scene is not None:
            fields["scene"] = scene
        reply = c.request("create", **fields)
        self.addCleanup(self.destroy_quietly, reply["instance"])
        return reply

    def destroy_quietly(self, instance):
        c = self.server.client()
        try:
            c.request("destroy", instance=instance)
        except ClothdError:
            pass
        finally:
            c.close()

    def test_create_puts_an_instance_in_its_scene_or_in_default(self):
        a = self.make(self.c, "npc-capes")
        d = self.make(self.c)
        self.assertEqual((a["scene"], a["ephemeral"]), ("npc-capes", False))
        self.assertEqual(d["scene"], "default")
        self.assertEqual(self.c.request("get", instance=a["instance"])["scene"], "npc-capes")
        entries = {e["instance"]: e for e in self.c.request("status")["instances"]}
        self.assertEqual(entries[a["instance"]]["scene"], "npc-capes")
        self.assertEqual(entries[d["instance"]]["scene"], "default")
        self.assertIs(entries[d["instance"]]["ephemeral"], False)

    def test_a_step_of_one_scene_leaves_another_unchanged_bit_for_bit(self):
        a1 = self.make(self.c, "iso-a")["instance"]
        a2 = self.make(self.c, "iso-a", width=20, height=20)["instance"]  # a pooled batch too
        b = self.make(self.c, "iso-b")["instance"]
        before_b = self.c.request("get", instance=b)
        before_a = positions(self.c, a1)
        for _ in range(5):
            reply = self.c.request("step", scene="iso-a", dt=1 / 60)
            self.assertEqual(reply["stepped"], 2)
        after_b = self.c.request("get", instance=b)
        self.assertEqual(after_b["positions"], before_b["positions"], "scene B did not move")
        self.assertEqual((after_b["frame"], after_b["time"]), (0, 0))
        self.assertNotEqual(positions(self.c, a1), before_a, "scene A fell")
        self.assertEqual(self.c.request("get", instance=a2)["frame"], 5)
        # and the other way round
        self.c.request("step", scene="iso-b")
        self.assertEqual(self.c.request("get", instance=b)["frame"], 1)
        self.assertEqual(self.c.request("get", instance=a1)["frame"], 5)

    def test_a_bare_step_keeps_its_v1_meaning_every_instance_of_every_scene(self):
        ids = [self.make(self.c, s)["instance"] for s in ("v1-a", "v1-b", None)]
        frames = {i: self.c.request("get", instance=i)["frame"] for i in ids}
        reply = self.c.request("step")
        self.assertGreaterEqual(reply["stepped"], 3)
        for i in ids:
            self.assertEqual(self.c.request("get", instance=i)["frame"], frames[i] + 1)

    def test_step_of_listed_instances_with_a_scene_checks_each_belongs(self):
        a = self.make(self.c, "chk-a")["instance"]
        b = self.make(self.c, "chk-b")["instance"]
        reply = send_line(self.c, f'{{"cmd":"step","scene":"chk-a","instances":[{a},{b}]}}')
        assert_error(self, reply, "not_found",
                     message=f'instances[1]: instance {b} is not in scene "chk-a"')
        self.assertEqual(self.c.request("get", instance=a)["frame"], 0, "nothing stepped")
        self.assertEqual(self.c.request("step", scene="chk-a", instances=[a])["stepped"], 1)
        reply = send_line(self.c, f'{{"cmd":"step","scene":"chk-b","instance":{a}}}')
        assert_error(self, reply, "not_found", message=f'instance: instance {a} is not in scene "chk-b"')

    def test_every_command_naming_an_instance_checks_its_scene(self):
        i = self.make(self.c, "own")["instance"]
        msg = f'instance: instance {i} is not in scene "other"'
        lines = [
            f'{{"cmd":"get","instance":{i},"scene":"other"}}',
            f'{{"cmd":"set","instance":{i},"scene":"other","mass":2}}',
            f'{{"cmd":"pin","instance":{i},"scene":"other","particle":0}}',
            f'{{"cmd":"addCollider","instance":{i},"scene":"other","type":"sphere","position":[0,0,0],"radius":0.1}}',
            f'{{"cmd":"topology","instance":{i},"scene":"other"}}',
            f'{{"cmd":"enable","instance":{i},"scene":"other","enabled":false}}',
            f'{{"cmd":"wind","instance":{i},"scene":"other","wind":[1,0,0]}}',
            f'{{"cmd":"destroy","instance":{i},"scene":"other"}}',
            f'{{"cmd":"subscribe","instance":{i},"scene":"other"}}',
        ]
        for line in lines:
            assert_error(self, send_line(self.c, line), "not_found", message=msg)
        # nothing happened: it is enabled, unpinned, still there
        state = self.c.request("get", instance=i, scene="own")
        self.assertEqual((state["enabled"], state["pinned"], state["colliders"]), (True, [], []))
        # a name that is not a scene name is invalid_argument naming scene
        for bad in ('""', '"two words"', '7', '"' + "x" * 65 + '"'):
            reply = send_line(self.c, f'{{"cmd":"get","instance":{i},"scene":{bad}}}')
            assert_error(self, reply, "invalid_argument",
                         message="scene: must be 1 to 64 of A-Z a-z 0-9 . _ : -")
        reply = send_line(self.c, '{"cmd":"wind","wind":[1,0,0],"scene":"own"}')
        assert_error(self, reply, "invalid_argument", field="scene")

    def test_destroy_by_scene_destroys_exactly_that_scene_and_lists_the_ids(self):
        doomed = sorted(self.make(self.c, "trash")["instance"] for _ in range(3))
        keep = self.make(self.c, "keep")["instance"]
        reply = self.c.request("destroy", scene="trash")
        self.assertEqual(sorted(reply["destroyed"]), doomed)
        live = live_ids(self.c)
        self.assertTrue(live.isdisjoint(doomed))
        self.assertIn(keep, live)
        self.assertNotIn("trash", scenes_of(self.c), "an empty scene nobody holds is gone")
        # again: nothing left, not an error (a script cleans up at its start)
        self.assertEqual(self.c.request("destroy", scene="trash")["destroyed"], [])
        # a list, and the one-instance form's reply
        x, y = self.make(self.c)["instance"], self.make(self.c)["instance"]
        self.assertEqual(self.c.request("destroy", instances=[x, y])["destroyed"], [x, y])
        z = self.make(self.c)["instance"]
        self.assertEqual(self.c.request("destroy", instance=z)["destroyed"], [z])
        assert_error(self, send_line(self.c, '{"cmd":"destroy"}'), "invalid_argument", field="instance")

    def test_status_and_scenes_list_one_scene_or_every_scene_with_counts(self):
        for _ in range(2):
            self.make(self.c, "count-a")
        self.make(self.c, "count-b")
        st = self.c.request("status", scene="count-a")
        self.assertEqual(len(st["instances"]), 2)
        self.assertTrue(all(e["scene"] == "count-a" for e in st["instances"]))
        self.assertEqual(st["scenes"], [{"scene": "count-a", "instances": 2, "ephemeral": False}])
        self.assertIn("Instances: 2", st["text"])
        every = self.c.request("status")["scenes"]
        names = [s["scene"] for s in every]
        self.assertEqual(names, sorted(names), "sorted by name")
        self.assertEqual(scenes_of(self.c)["count-b"]["instances"], 1)
        self.assertEqual(self.c.request("status", scene="nothing-here")["instances"], [])
        self.assertEqual(self.c.request("scenes", scene="count-b")["scenes"],
                         [{"scene": "count-b", "instances": 1, "ephemeral": False}])

    def test_a_scene_subscription_follows_the_scene_later_instances_included(self):
        viewer = self.client()
        sub = viewer.request("subscribe", scene="watched")
        self.assertEqual((sub["scene"], sub["instances"]), ("watched", []))
        seen = self.make(self.c, "watched")["instance"]
        unseen = self.make(self.c, "not-watched")["instance"]
        self.c.request("step", instances=[seen, unseen])
        self.c.request("step", instances=[seen, unseen])
        frames = []
        viewer.sock.settimeout(2.0)
        while len(frames) < 3:  # the first state at creation, then two steps
            msg = viewer.read_message()
            if isinstance(msg, dict):
                continue
            frames.append((msg.instance, msg.frame))
        self.assertEqual(frames, [(seen, 0), (seen, 1), (seen, 2)])
        viewer.request("unsubscribe", scene="watched")
        self.c.request("step", instance=seen)
        self.assertEqual(viewer.request("ping")["pong"], True)
        self.assertEqual(len(viewer._frames), 0, "no frame after the unsubscribe")


class LifetimeTest(ServerTestCase):
    """Instances and scenes tied to a connection."""

    def status_ids(self, c):
        return live_ids(c)

    def test_an_ephemeral_instance_goes_with_its_connection_and_not_before(self):
        owner, other = self.client(), self.client()
        mine = owner.request("create", width=4, height=4, ephemeral=True)
        self.assertIs(mine["ephemeral"], True)
        kept = owner.request("create", width=4, height=4)["instance"]
        theirs = other.request("create", width=4, height=4, ephemeral=True)["instance"]
        e = mine["instance"]
        self.addCleanup(lambda: self.c.request("destroy", instance=kept))
        time.sleep(0.3)  # not before the close
        self.assertIs(self.c.request("get", instance=e)["ephemeral"], True)
        self.assertTrue({e, kept, theirs} <= self.status_ids(self.c))
        owner.close()
        wait_until(lambda: e not in self.status_ids(self.c), what="the ephemeral instance destroyed")
        ids = self.status_ids(self.c)
        self.assertIn(kept, ids, "a plain instance of that connection stays")
        self.assertIn(theirs, ids, "another connection's ephemeral instance stays")
        assert_error(self, send_line(self.c, f'{{"cmd":"get","instance":{e}}}'), "not_found")
        other.close()
        wait_until(lambda: theirs not in self.status_ids(self.c), what="the second one destroyed")
        self.assertIn("ephemeral-released", self.server.stderr(limit=None))

    def test_a_held_scene_takes_everyone_s_instances_with_it(self):
        host, guest, rival = self.client(), self.client(), self.client()
        held = host.request("scene", scene="match-1", ephemeral=True)
        self.assertEqual(held, {**held, "scene": "match-1", "instances": [], "ephemeral": True,
                                "owned": True})
        self.assertEqual(scenes_of(self.c)["match-1"], {"scene": "match-1", "instances": 0,
                                                       "ephemeral": True})
        a = guest.request("create", width=4, height=4, scene="match-1")["instance"]
        b = host.request("create", width=4, height=4, scene="match-1")["instance"]
        self.assertIs(self.c.request("get", instance=a)["ephemeral"], True, "its scene's tie")
        seen = rival.request("scene", scene="match-1")
        self.assertEqual((sorted(seen["instances"]), seen["ephemeral"], seen["owned"]),
                         (sorted([a, b]), True, False))
        reply = send_line(rival, '{"cmd":"scene","scene":"match-1","ephemeral":true}')
        assert_error(self, reply, "invalid_argument",
                     message='scene: "match-1" is tied to another connection')
        reply = send_line(rival, '{"cmd":"scene","scene":"match-1","ephemeral":false}')
        assert_error(self, reply, "invalid_argument", field="scene")
        host.close()
        wait_until(lambda: not ({a, b} & self.status_ids(self.c)), what="the scene's instances destroyed")
        self.assertNotIn("match-1", scenes_of(self.c))
        self.assertTrue(guest.request("ping")["pong"], "the guest's connection is untouched")

    def test_letting_go_of_a_scene_keeps_its_instances(self):
        host = self.client()
        host.request("scene", scene="loose", ephemeral=True)
        i = host.request("create", width=4, height=4, scene="loose")["instance"]
        self.addCleanup(lambda: self.c.request("destroy", scene="loose"))
        reply = host.request("scene", scene="loose", ephemeral=False)
        self.assertEqual((reply["ephemeral"], reply["owned"], reply["instances"]), (False, False, [i]))
        host.close()
        time.sleep(0.3)
        self.assertIn(i, self.status_ids(self.c))
        # an empty held scene goes when let go of
        self.c.request("scene", scene="empty-held", ephemeral=True)
        self.assertIn("empty-held", scenes_of(self.c))
        self.c.request("scene", scene="empty-held", ephemeral=False)
        self.assertNotIn("empty-held", scenes_of(self.c))

    def test_a_restore_in_place_keeps_the_scene_and_the_tie(self):
        owner, viewer = self.client(), self.client()
        i = owner.request("create", width=4, height=4, scene="reset", ephemeral=True,
                          sleep_threshold=0)["instance"]
        viewer.request("save", name="start", memory=True, scene="reset")
        self.c.request("step", scene="reset")
        loaded = viewer.request("load", name="start", memory=True, restore=True)
        self.assertEqual(loaded["instances"], [i])
        got = self.c.request("get", instance=i)
        self.assertEqual((got["frame"], got["scene"], got["ephemeral"]), (0, "reset", True))
        self.assertEqual(scenes_of(self.c)["reset"]["instances"], 1, "counted once")
        viewer.close()  # the viewer restored it; it is still the owner's
        time.sleep(0.3)
        self.assertIn(i, self.status_ids(self.c))
        owner.close()
        wait_until(lambda: i not in self.status_ids(self.c), what="gone with its owner")
        self.assertNotIn("reset", scenes_of(self.c))

    def test_closing_in_the_middle_of_multi_instance_steps_destroys_after_the_step(self):
        """The owner closes while its instances are being stepped (by its own
        batch and by another client's): they are destroyed once the batch is
        back, never under a worker. Under ASan (make check) a use after free
        here would fail the run."""
        stepper = self.client(timeout=120)  # status waits for the batches (slow under TSan)
        deferred_seen = 0
        for attempt in range(4):
            owner = socket.create_connection((self.server.host, self.server.port))
            f = owner.makefile("rwb")
            ids = []
            for k in range(6):
                f.write(b'{"cmd":"create","width":40,"height":40,"iterations":8,"ephemeral":true,'
                        b'"sleepThreshold":0,"scene":"churn"}\n')
            f.flush()
            for k in range(6):
                ids.append(json.loads(f.readline())["instance"])
            stop = threading.Event()

            def churn():  # another client's batches hold them too
                c = self.server.client(timeout=120)
                try:
                    while not stop.is_set():
                        c.request("step", scene="churn")
                except (ClothdError, OSError):
                    pass
                finally:
                    c.close()

            t = threading.Thread(target=churn)
            t.start()
            time.sleep(0.05)
            f.write(b'{"cmd":"step","scene":"churn"}\n{"cmd":"step"}\n')
            f.flush()
            owner.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            owner.close()  # a reset, mid-step
            f.close()
            stop.set()  # the batch in flight holds them still; no new one after it
            t.join(120)
            wait_until(lambda: not (set(ids) & self.status_ids(stepper)), timeout=60,
                       what=f"attempt {attempt}")
            self.assertServerAlive()
        for m in re.finditer(r"ephemeral-released .*after_step=(\d+)", self.server.stderr(limit=None)):
            deferred_seen += int(m.group(1))
        self.assertGreater(deferred_seen, 0, "some instance was held by a step when its owner closed")
        self.assertEqual(stepper.request("status", scene="churn")["instances"], [])


class PythonClientSceneTest(ServerTestCase):
    """clothd.py's scene and ephemeral parameters, and clothctl's --scene."""

    def test_the_client_creates_steps_lists_subscribes_and_destroys_by_scene(self):
        c = self.client()
        a = c.create_cloth(width=4, height=4, scene="py-a", sleep_threshold=0)
        b = c.create_softbody(shape="box", scene="py-b", ephemeral=True)
        m = c.create_mesh_cloth([[0, 0, 0], [1, 0, 0], [0, -1, 0]], [0, 1, 2], scene="py-a")
        self.assertEqual(c.step(scene="py-a")["stepped"], 2)
        self.assertEqual(c.get(a).frame, 1)
        self.assertEqual(c.get(b).frame, 0)
        self.assertEqual(sorted(e["instance"] for e in c.status(scene="py-a")["instances"]), sorted([a, m]))
        self.assertEqual(c.scenes("py-b"), [{"scene": "py-b", "instances": 1, "ephemeral": False}])
        self.assertEqual(c.scene("py-b")["instances"], [b])
        self.assertEqual(c.scene("py-hold", ephemeral=True)["owned"], True)
        reply = c.subscribe(scene="py-a")
        self.assertEqual(sorted(reply["instances"]), sorted([a, m]))
        self.assertIn("py-a", c.subscriptions)
        c.reconnect()  # a scene subscription is renewed by name; the ephemeral b went with the old connection
        self.assertIn("py-a", c.subscriptions)
        wait_until(lambda: b not in live_ids(c), what="b destroyed with the first connection")
        self.assertNotIn("py-hold", {s["scene"] for s in c.scenes()})
        c.unsubscribe(scene="py-a")
        self.assertNotIn("py-a", c.subscriptions)
        self.assertEqual(sorted(c.destroy(scene="py-a")), sorted([a, m]))
        self.assertEqual(c.destroy(scene="py-a"), [])
        with self.assertRaises(ClothdError) as e:
            c.step(scene="no spaces")
        self.assertEqual(e.exception.code, "invalid_argument")

    def test_the_readme_python_snippet_leaves_nothing_behind_run_twice(self):
        readme = open(os.path.join(REPO, "README.md")).read()
        code = re.search(r"## Drive it from Python.*?```python\n(.*?)```", readme, re.S).group(1)
        code = code.replace('Client("127.0.0.1", 7878)', f'Client("127.0.0.1", {self.server.port})')
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, r"^bottom row height: -0\.9\d*")
            wait_until(lambda: "readme-py" not in scenes_of(self.c), what="the snippet's curtain gone")

    def test_the_python_client_readme_snippet_leaves_nothing_behind_run_twice(self):
        readme = open(os.path.join(REPO, "clients", "python", "README.md")).read()
        code = re.search(r"## Scripting.*?```python\n(.*?)```", readme, re.S).group(1)
        self.assertIn('Client("127.0.0.1", 7878', code)
        code = code.replace('Client("127.0.0.1", 7878', f'Client("127.0.0.1", {self.server.port}')
        before = live_ids(self.c)
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(REPO, "clients", "python"),
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual([int(ln.split()[0]) for ln in lines[:-1]], [0, 10, 20, 30, 40, 50, 60])
            self.assertEqual(lines[-1], "not_found instance: no instance 12345")
            wait_until(lambda: "readme-client" not in scenes_of(self.c), what="the snippet's scene gone")
            self.assertEqual(live_ids(self.c), before, "no instance left behind")

    def ctl(self, *args):
        out = subprocess.run([sys.executable, CLOTHCTL, "--port", str(self.server.port), *args],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, f"clothctl {args}: {out.stderr}")
        return out.stdout

    def test_clothctl_creates_steps_shows_and_destroys_a_scene(self):
        out = self.ctl("create", "--width", "3", "--height", "3", "--scene", "ctl")
        i = int(re.match(r"instance (\d+): 9 particles, 26 constraints, scene ctl\n$", out).group(1))
        j = self.c.create_cloth(width=3, height=3, scene="ctl-other")
        self.addCleanup(lambda: self.c.destroy(j))
        self.assertEqual(self.ctl("step", "--scene", "ctl", "--count", "3"),
                         "3 steps of 0.016666668 s: 1 instance stepped\n")
        self.assertEqual((self.c.get(i).frame, self.c.get(j).frame), (3, 0))
        status = self.ctl("status", "--scene", "ctl")
        self.assertEqual(status, self.c.status(scene="ctl")["text"])
        self.assertIn("Instances: 1\n", status)
        self.assertEqual(self.ctl("destroy", "--scene", "ctl"), f"destroyed 1 instance of scene ctl: {i}\n")
        self.assertEqual(self.ctl("destroy", "--scene", "ctl"), "destroyed 0 instances of scene ctl\n")
        self.assertIn(j, live_ids(self.c))


class SceneSnapshotTest(unittest.TestCase):
    def test_snapshots_and_restarts_keep_scenes_and_drop_ephemeral_instances(self):
        data = tempfile.mkdtemp(prefix="clothd-scenes-")
        self.addCleanup(shutil.rmtree, data, True)
        srv = Server("--data-dir", data).start()
        try:
            c, owner = srv.client(), srv.client()
            kept = c.request("create", width=4, height=4, scene="level-2")["instance"]
            plain = c.request("create", width=4, height=4)["instance"]
            eph = owner.request("create", width=4, height=4, scene="level-2", ephemeral=True)["instance"]
            c.request("step", scene="level-2")
            before = c.request("get", instance=kept)
            c.request("save", name="world")
            c.close()
            owner.close()
            srv.stop()
            srv = Server("--data-dir", data).start()
            c = srv.client()
            entries = {e["instance"]: e for e in c.request("status")["instances"]}
            self.assertEqual(set(entries), {kept, plain}, "the ephemeral instance is not restored")
            self.assertEqual((entries[kept]["scene"], entries[plain]["scene"]), ("level-2", "default"))
            self.assertEqual(c.request("get", instance=kept)["positions"], before["positions"])
            self.assertIn("snapshot-ephemeral-dropped", srv.stderr(limit=None))
            # a load by a connection: the ephemeral one comes back tied to it
            loader = srv.client()
            loaded = loader.request("load", name="world", replace=True)
            self.assertEqual(sorted(loaded["instances"]), sorted([kept, plain, eph]))
            got = c.request("get", instance=eph)
            self.assertEqual((got["scene"], got["ephemeral"]), ("level-2", True))
            self.assertEqual(c.request("scenes", scene="level-2")["scenes"][0]["instances"], 2)
            loader.close()
            wait_until(lambda: eph not in live_ids(c), what="the loaded ephemeral instance destroyed")
            self.assertIn(kept, live_ids(c))
            self.assertEqual(c.request("save", name="lvl", scene="level-2")["instances"], 1)
            c.close()
        finally:
            srv.stop()

    def test_a_replay_keeps_the_recorded_scene_and_a_scene_destroy_is_journaled(self):
        data = tempfile.mkdtemp(prefix="clothd-scenes-")
        self.addCleanup(shutil.rmtree, data, True)
        srv = fresh_server(self, "--data-dir", data)
        c = srv.client()
        self.addCleanup(c.close)
        i = c.request("create", width=5, height=5, scene="rec")["instance"]
        j = c.request("create", width=5, height=5, scene="rec")["instance"]
        c.request("record", name="j1", scene="rec")
        for _ in range(3):
            c.request("step", scene="rec")
        c.request("destroy", instances=[j])  # a list: journaled as a destroy of j
        c.request("step", scene="rec")
        c.request("record", stop=True)
        final = c.request("get", instance=i)["positions"]
        replay = c.request("replay", name="j1")
        self.assertEqual(replay["recorded"], [i, j])
        ri, rj = replay["instances"]
        got = c.request("get", instance=ri, scene="rec")
        self.assertEqual(got["positions"], final, "replayed bit for bit, in its scene")
        assert_error(self, send_line(c, f'{{"cmd":"get","instance":{rj}}}'), "not_found")


if __name__ == "__main__":
    unittest.main()
