"""record and replay through the real clothd (issue 13, part 3): a journal
of 1,000 frames with pins, wind gusts, a moving collider, a moving
transform, unpins and an option change, recorded on 1 and on 4 workers,
replays into new instances with every frame's positions bit-identical to
the recorded ones; a torn journal replays up to its last whole record."""

import math
import os
import shutil
import struct
import tempfile
import time
import unittest

from clothd import ClothdError, FeatureMissing, Subscriber
from server import fresh_server

FRAMES = 1000


def collector(srv):
    """A Subscriber on its own thread keeping every frame's payload by
    (instance, frame)."""
    seen = {}
    sub = Subscriber(srv.host, srv.port).start(callback=lambda f: seen.__setitem__((f.instance, f.frame), f.payload))
    return sub, seen


def session(c, frames):
    """Records `frames` steps of two capes and a soft body; returns their
    ids and the stop reply."""
    cape = c.create_cloth(16, 12, stretch_compliance=1e-6, sleep_threshold=0)
    flag = c.create_cloth(12, 8, origin=[3, 2, 0], self_distance=0.05)
    ball = c.request("create", type="softbody", shape="ball", radius=0.4, resolution=3,
                     center=[-2, 1, 0])["instance"]
    c.add_collider(ball, "plane", position=[0, 0, 0], normal=[0, 1, 0])
    c.transform(cape, "shoulders", [0, 0, 0])
    c.attach(cape, "shoulders", list(range(16)))
    sphere = c.add_collider(cape, "sphere", position=[0.7, -0.6, 0.1], radius=0.3, coupling=0.5)
    c.pin(flag, [0, 12 * 7])
    ids = [cape, flag, ball]
    c.request("record", name="session", instances=ids)
    for k in range(frames):
        a = 0.02 * k
        c.transform(cape, "shoulders", [0.3 * math.sin(a), 0, 0], rotation=[0, math.sin(a / 2), 0, math.cos(a / 2)])
        c.move_collider(cape, sphere, position=[0.7, -0.6 + 0.2 * math.sin(a), 0.1])
        if k % 100 == 0:
            c.wind([2 + k / 100, 0, 1], instance=flag)      # gusts
            c.wind([0.5 * math.cos(a), 0, 0.3])            # the global wind, in each STEP
        if k == 400:
            c.unpin(flag, 12 * 7)
        if k == 600:
            c.request("set", instance=cape, substeps=2)
        c.step()
    return ids, c.request("record", stop=True)


def settle(seen, timeout=20.0):
    """Waits until no new frame came for a second."""
    deadline = time.monotonic() + timeout
    n = -1
    while len(seen) != n and time.monotonic() < deadline:
        n = len(seen)
        time.sleep(1.0)


def as_payload(positions):
    """`get` positions (x0 y0 z0 x1 ..., 9-digit decimals) as a plain frame's
    payload: each rounded to the float32 it prints."""
    return struct.pack(f"<{len(positions)}f", *positions)


class ReplayTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="clothd-replay-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def check_replay(self, workers):
        rec = fresh_server(self, "--data-dir", self.dir, workers=workers)
        sub, recorded = collector(rec)
        self.addCleanup(sub.close)
        with rec.client(timeout=120) as c:
            ids, stop = session(c, FRAMES)
            self.assertEqual(stop["frames"], FRAMES)
            final = {i: c.request("get", instance=i)["positions"] for i in ids}
        settle(recorded)
        play = fresh_server(self, "--data-dir", self.dir, workers=1)
        psub, replayed = collector(play)
        self.addCleanup(psub.close)
        with play.client(timeout=300) as c:  # a replay holds the loop: slow under a sanitizer
            reply = c.request("replay", name="session")
            self.assertEqual(reply["frames"], FRAMES)
            self.assertTrue(reply["complete"])
            self.assertEqual(reply["recorded"], ids)
            self.assertNotIn("warning", reply)
            new = dict(zip(reply["recorded"], reply["instances"]))
            settle(replayed)
            compared = 0
            for (iid, frame), payload in recorded.items():
                key = (new[iid], frame)
                if key in replayed:
                    self.assertEqual(replayed[key], payload, f"instance {iid} frame {frame}")
                    compared += 1
            # A subscriber that lags may skip frames (the server keeps the
            # newest); every frame both sides got is compared, and they get
            # most of them.
            self.assertGreaterEqual(compared, FRAMES, "most frames compared")
            for old, positions in final.items():
                self.assertEqual(c.request("get", instance=new[old])["positions"], positions)
            # Any frame: replayed again to frames 1, 250 and 777, the capes
            # hold those frames' bits.
            for to in (1, 250, 777):
                again = c.request("replay", name="session", to=to)
                self.assertEqual(again["frames"], to)
                self.assertEqual(again["journalFrames"], FRAMES)
                self.assertTrue(again["complete"])
                at = dict(zip(again["recorded"], again["instances"]))
                for iid in ids[:2]:
                    got = c.request("get", instance=at[iid])
                    frame = recorded_frame0(recorded, iid) + to
                    self.assertEqual(got["frame"], frame)
                    if (iid, frame) in recorded:
                        self.assertEqual(as_payload(got["positions"]), recorded[(iid, frame)],
                                         f"instance {iid} replayed to frame {frame}")

    def test_1000_frames_recorded_on_1_worker_should_replay_bit_identically(self):
        self.check_replay(1)

    def test_1000_frames_recorded_on_4_workers_should_replay_bit_identically(self):
        self.check_replay(4)

    def test_a_torn_journal_should_replay_up_to_its_last_whole_record(self):
        srv = fresh_server(self, "--data-dir", self.dir)
        with srv.client() as c:
            a = c.create_cloth(6, 6)
            c.request("record", name="t", instances=[a])
            for _ in range(20):
                c.step()
            c.request("record", stop=True)
            path = os.path.join(self.dir, "t.cdj")
            data = open(path, "rb").read()
            open(path, "wb").write(data[:-20])  # the STOP and part of the last STEP
            reply = c.request("replay", name="t")
            self.assertFalse(reply["complete"])
            self.assertIn("tornAt", reply)
            self.assertEqual(reply["frames"], 19)
            self.assertEqual(reply["journalFrames"], 19)
            with self.assertRaises(ClothdError) as ctx:
                c.request("replay", name="missing")
            self.assertEqual(ctx.exception.code, "not_found")
            with self.assertRaises(ClothdError) as ctx:
                c.request("record", stop=True)
            self.assertEqual(ctx.exception.code, "invalid_argument")
            c.request("record", name="u")
            with self.assertRaises(ClothdError) as ctx:
                c.request("record", name="v")
            self.assertIn("already recording", str(ctx.exception))
            c.request("record", stop=True)


class JournalsTest(unittest.TestCase):
    """`journals`: the journals of --data-dir, newest first, and the
    recording in progress with its frames so far."""

    def test_journals_should_list_the_files_and_the_recording_in_progress(self):
        d = tempfile.mkdtemp(prefix="clothd-journals-")
        self.addCleanup(shutil.rmtree, d, True)
        srv = fresh_server(self, "--data-dir", d)
        with srv.client() as c:
            empty = c.journals()
            self.assertEqual((empty["journals"], empty["recording"]), ([], None))
            a = c.create_cloth(5, 5)
            c.record("first", instances=[a])
            for _ in range(3):
                c.step()
            c.stop_recording()
            time.sleep(0.02)  # distinct modification times: newest first
            c.record("second", instances=[a])
            for _ in range(7):
                c.step()
            open(os.path.join(d, "not-a-journal.cds"), "wb").close()
            open(os.path.join(d, ".hidden.cdj"), "wb").close()  # not a valid name: not listed
            now = c.journals()
            self.assertEqual(now["journals"], ["second", "first"])
            self.assertEqual(now["recording"]["name"], "second")
            self.assertEqual(now["recording"]["frames"], 7)
            self.assertEqual(now["recording"]["bytes"], os.path.getsize(os.path.join(d, "second.cdj")))
            # The recording in progress replays as far as it goes.
            r = c.replay("second")
            self.assertEqual((r["frames"], r["complete"]), (7, False))
            c.stop_recording()
            self.assertIsNone(c.journals()["recording"])
            # "enabled": false holds the replayed instances at their frame:
            # a step of every instance leaves them where they are.
            held = c.request("replay", name="second", to=4, enabled=False)["instances"][0]
            before = c.request("get", instance=held)
            self.assertFalse(before["enabled"])
            c.step()
            after = c.request("get", instance=held)
            self.assertEqual((after["frame"], after["positions"]), (before["frame"], before["positions"]))
        bare = fresh_server(self)
        with bare.client() as c:
            reply = c.exchange({"cmd": "journals"})  # the server's own answer
            self.assertEqual(reply["error"]["code"], "invalid_argument")
            self.assertIn("without --data-dir", reply["error"]["message"])
            with self.assertRaises(FeatureMissing) as ctx:  # the client's, before sending
                c.journals()
            self.assertEqual(ctx.exception.features, ("recording",))
            self.assertIn("--data-dir", str(ctx.exception))


def recorded_frame0(recorded, iid):
    return min(f for (i, f) in recorded if i == iid)


class ReplayClientsTest(unittest.TestCase):
    """The Python client's record/replay and `clothctl record` /
    `clothctl replay session.cdj --to N`."""

    def test_python_client_and_clothctl_should_record_and_replay(self):
        import subprocess
        import sys
        from server import REPO
        d = tempfile.mkdtemp(prefix="clothd-replay-")
        self.addCleanup(shutil.rmtree, d, True)
        srv = fresh_server(self, "--data-dir", d)
        ctl = [sys.executable, os.path.join(REPO, "clients", "python", "clothctl.py"), "--port", str(srv.port)]
        with srv.client() as c:
            a = c.create_cloth(5, 5)
            out = subprocess.run(ctl + ["record", "session", "--instance", str(a)], capture_output=True,
                                 text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn(f"recording instances {a} to session", out.stdout)
            for _ in range(12):
                c.step()
            out = subprocess.run(ctl + ["record", "--stop"], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("recorded 12 frame(s) to session", out.stdout)
            out = subprocess.run(ctl + ["replay", "session.cdj", "--to", "5"], capture_output=True, text=True,
                                 timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("replayed 5 of 12 frame(s): ", out.stdout)
            r = c.replay("session")
            self.assertEqual((r["frames"], r["recorded"]), (12, [a]))
            self.assertEqual(c.request("get", instance=r["instances"][0])["positions"],
                             c.request("get", instance=a)["positions"])
            c.record("again", instances=[a])
            self.assertEqual(c.stop_recording()["frames"], 0)


class ReplaySkinTest(unittest.TestCase):
    """A painted mesh cloth driven by skin (binary requests and JSON), an
    inertia frame and a teleport: the journal keeps binary requests as
    their bytes, and the replay holds the same bits; a snapshot of it
    survives a restart the same way."""

    def test_a_skinned_mesh_cloth_should_replay_and_reload_bit_identically(self):
        d = tempfile.mkdtemp(prefix="clothd-replay-")
        self.addCleanup(shutil.rmtree, d, True)
        W, H = 8, 6
        verts = [[0.1 * x, 1.0 - 0.1 * y, 0.0] for y in range(H) for x in range(W)]
        tris = []
        for y in range(H - 1):
            for x in range(W - 1):
                i = y * W + x
                tris += [i, i + W, i + 1, i + 1, i + W, i + W + 1]
        paint = [0.0 if i < W else 0.05 * (i // W) for i in range(W * H)]
        srv = fresh_server(self, "--data-dir", d)
        with srv.client(timeout=120) as c:
            a = c.create_mesh_cloth(verts, tris, max_distance=paint, stretch_compliance=1e-5,
                                    sleep_threshold=0, linear_inertia=0.5)
            c.transform(a, "body", [0, 0, 0], inertia_frame=True)
            skin = [list(v) for v in verts]
            c.skin(a, skin)
            c.request("record", name="skinned", instances=[a])
            for k in range(150):
                dx = 0.01 * math.sin(0.1 * k)
                for v in skin:
                    v[0] += dx
                c.transform(a, "body", [skin[0][0], 0, 0])
                c.skin(a, skin, binary=(k % 2 == 0))
                if k == 75:
                    c.teleport(a, translation=[0.5, 0, 0])
                    for v in skin:
                        v[0] += 0.5
                c.step()
            c.request("save", name="skinned")
            for _ in range(20):
                c.step()
            c.request("record", stop=True)
            live = c.request("get", instance=a)
            r = c.replay("skinned")
            self.assertEqual(r["frames"], 170)
            self.assertEqual(c.request("get", instance=r["instances"][0])["positions"], live["positions"])
            c.request("load", name="skinned", replace=True)
            for _ in range(20):
                c.step()
            self.assertEqual(c.request("get", instance=a)["positions"], live["positions"],
                             "the snapshot of a skinned cloth steps to the same bits")


class ReplayTearTest(unittest.TestCase):
    """A sheet pulled until it tears (issue 14): the replay tears it the
    same way after the same steps, and a snapshot of the torn sheet comes
    back with its new particles."""

    def test_a_tearing_sheet_should_replay_its_tears(self):
        d = tempfile.mkdtemp(prefix="clothd-replay-")
        self.addCleanup(shutil.rmtree, d, True)
        W, H = 24, 12
        srv = fresh_server(self, "--data-dir", d)
        with srv.client(timeout=120) as c:
            a = c.create_cloth(W, H, spacing=0.05, gravity=[0, 0, 0], tear_strain=0.3, sleep_threshold=0)
            left = [y * W for y in range(H)]
            right = [y * W + W - 1 for y in range(H)]
            c.pin(a, left)
            c.pin(a, right)
            c.request("record", name="tear", instances=[a])
            torn = 0
            for f in range(1, 121):
                c.pin(a, right, positions=[[(W - 1) * 0.05 + f / 60, -0.05 * y, 0] for y in range(H)])
                torn += len(c.step().get("torn", []))
                if f == 100:
                    c.request("save", name="torn")
            c.request("record", stop=True)
            self.assertGreater(torn, 0, "the sheet tore")
            live = c.request("get", instance=a)
            self.assertGreater(len(live["positions"]), 3 * W * H)
            r = c.replay("tear")
            copy = c.request("get", instance=r["instances"][0])
            self.assertEqual(copy["positions"], live["positions"])
            self.assertEqual(c.request("topology", instance=r["instances"][0])["triangles"],
                             c.request("topology", instance=a)["triangles"])
