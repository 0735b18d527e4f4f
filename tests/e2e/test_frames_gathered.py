"""Frames encoded on the workers and written with one gathered write per
wake-up (issue 8, item 5), through the real server:

- a frame a worker encoded right after its step is byte for byte the frame
  the loop thread encodes for the same state (the current frame a new
  subscriber gets), plain and quantized, and both are what the protocol's
  encoding (checked here against protocol/test_vectors.json) gives for the
  positions `get` reports;
- the messages on a connection keep their order across many instances:
  each step's reply, then its frames, then the next reply; every subscriber
  sees every instance's frames in frame order;
- the step reply printed without cJSON has the members, ids and impulses
  the protocol documents.

No timing is asserted anywhere."""

import json
import math
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

from server import REPO, fresh_server

VECTORS = os.path.join(REPO, "protocol", "test_vectors.json")
MAGIC = b"\x89CLF"


# ---- the protocol's encoding, written from PROTOCOL.md ("Frames") ----------

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def c_round(s):
    """C's round(): halves away from zero (s >= 0 here)."""
    lo = math.floor(s)
    return lo + 1 if s - lo >= 0.5 else lo


def encode_frame(instance, frame, time, positions, quantize=False):
    """positions: (x, y, z) float32 values. The exact frame bytes."""
    n = len(positions)
    if not quantize:
        head = MAGIC + struct.pack("<HHIIQdII", 1, 0, 40 + 12 * n, instance, frame, time, n, 0)
        return head + b"".join(struct.pack("<3f", *p) for p in positions)
    head = MAGIC + struct.pack("<HHIIQdII", 1, 1, 64 + 6 * n, instance, frame, time, n, 0)
    if n == 0:
        return head + struct.pack("<6f", 0, 0, 0, 0, 0, 0)
    lo = [min(p[k] for p in positions) for k in range(3)]
    hi = [max(p[k] for p in positions) for k in range(3)]
    out = [head, struct.pack("<3f", *lo), struct.pack("<3f", *hi)]
    for p in positions:
        q = []
        for k in range(3):
            rng = hi[k] - lo[k]  # float32 values, exact in float64
            if not rng > 0:
                q.append(0)
                continue
            s = (p[k] - lo[k]) / rng * 65535.0
            q.append(0 if not s > 0 else 65535 if s >= 65535.0 else c_round(s))
        out.append(struct.pack("<3H", *q))
    return b"".join(out)


# ---- a raw connection: the exact messages, in order --------------------------

class Raw:
    def __init__(self, srv):
        self.sock = socket.create_connection((srv.host, srv.port))
        self.sock.settimeout(20)
        self.buf = b""
        self.next_id = 1

    def close(self):
        self.sock.close()

    def send(self, obj):
        if "id" not in obj:
            obj = dict(obj, id=self.next_id)
            self.next_id += 1
        self.sock.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise AssertionError("the server closed the connection")
        self.buf += chunk

    def message(self):
        """('frame', bytes) or ('json', dict, raw line)."""
        while not self.buf:
            self._fill()
        if self.buf[:1] == b"\x89":
            while len(self.buf) < 12:
                self._fill()
            length = struct.unpack_from("<I", self.buf, 8)[0]
            while len(self.buf) < length:
                self._fill()
            frame, self.buf = self.buf[:length], self.buf[length:]
            return ("frame", frame)
        while b"\n" not in self.buf:
            self._fill()
        line, _, self.buf = self.buf.partition(b"\n")
        return ("json", json.loads(line), line)

    def reply(self):
        kind, *rest = self.message()
        assert kind == "json", f"expected a reply, got a frame of {len(rest[0])} bytes"
        return rest[0]

    def ask(self, obj):
        self.send(obj)
        r = self.reply()
        assert r.get("ok") is True, r
        return r

    def frame(self):
        kind, *rest = self.message()
        assert kind == "frame", f"expected a frame, got {rest}"
        return rest[0]


def header(frame):
    """(instance, frame number, time, count, flags)"""
    _, _, flags, _, inst, num, time, count, _ = struct.unpack_from("<4sHHIIQdII", frame)
    return inst, num, time, count, flags


class EncoderSelfCheck(unittest.TestCase):
    def test_the_reference_encoder_should_reproduce_every_test_vector(self):
        with open(VECTORS) as f:
            vectors = json.load(f)["frames"]
        for v in vectors:
            if "flags" in v:  # channel vectors: the next test
                continue
            with self.subTest(note=v.get("note")):
                d = v["decoded"]
                quantized = bool(v.get("quantized"))
                pos = v["original"] if quantized else d["positions"]
                pos = [tuple(f32(c) for c in p) for p in pos]
                got = encode_frame(d["instance"], d["frame"], d["time"], pos, quantize=quantized)
                self.assertEqual(got.hex(), v["hex"])


    def test_the_channel_vectors_should_be_what_their_reference_encoder_writes(self):
        # protocol/channel_vectors.py encodes velocities and normals from
        # PROTOCOL.md alone; the C unit tests check frame.c against them.
        out = subprocess.run([sys.executable, "protocol/channel_vectors.py", "--check"], cwd=REPO,
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(VECTORS) as f:
            flags = {v.get("flags") for v in json.load(f)["frames"]}
        self.assertTrue({2, 3, 4, 5, 6, 7} <= flags)


class WorkerEncodedFramesTest(unittest.TestCase):
    """20 x 20 cloths at 4 iterations: 1,600 units of work each, above the
    inline threshold, so their steps (and frames) run on the workers."""

    def setUp(self):
        self.srv = fresh_server(self)
        self.c = Raw(self.srv)
        self.addCleanup(self.c.close)

    def make(self, n=20, x=0.0):
        r = self.c.ask({"cmd": "create", "width": n, "height": n, "spacing": 0.05,
                        "origin": [x, 2, 0], "sleepThreshold": 0})
        inst = r["instance"]
        self.c.ask({"cmd": "pin", "instance": inst, "particles": [0, n - 1]})
        self.c.ask({"cmd": "wind", "instance": inst, "wind": [2, 0, 1.5]})
        return inst

    def test_worker_frames_should_equal_the_loop_threads_and_the_protocols_bytes(self):
        ids = [self.make(x=1.5 * k) for k in range(3)]
        plain, quant = Raw(self.srv), Raw(self.srv)
        self.addCleanup(plain.close)
        self.addCleanup(quant.close)
        plain.ask({"cmd": "subscribe"})
        quant.ask({"cmd": "subscribe", "quantize": True})
        for _ in ids:  # the current frames, encoded on the loop thread
            plain.frame()
            quant.frame()
        for step in range(1, 6):
            self.c.ask({"cmd": "step"})
            got_plain = {header(f)[0]: f for f in (plain.frame() for _ in ids)}
            got_quant = {header(f)[0]: f for f in (quant.frame() for _ in ids)}
            self.assertEqual(sorted(got_plain), ids)
            self.assertEqual(sorted(got_quant), ids)
        # The state after the last step, three ways: the workers' frames
        # (above), the loop thread's (a new subscriber's current frames) and
        # the protocol's encoding of what `get` reports.
        late_plain, late_quant = Raw(self.srv), Raw(self.srv)
        self.addCleanup(late_plain.close)
        self.addCleanup(late_quant.close)
        late_plain.ask({"cmd": "subscribe", "instances": ids})
        late_quant.ask({"cmd": "subscribe", "instances": ids, "quantize": True})
        for inst in ids:
            st = self.c.ask({"cmd": "get", "instance": inst})
            self.assertEqual(st["frame"], 5)
            flat = [f32(c) for c in st["positions"]]
            pos = [tuple(flat[3 * i:3 * i + 3]) for i in range(len(flat) // 3)]
            want_plain = encode_frame(inst, 5, st["time"], pos)
            want_quant = encode_frame(inst, 5, st["time"], pos, quantize=True)
            loop_plain, loop_quant = late_plain.frame(), late_quant.frame()
            self.assertEqual(header(loop_plain)[0], inst)
            self.assertEqual(len(got_plain[inst]), 40 + 12 * 400)
            self.assertEqual(len(got_quant[inst]), 64 + 6 * 400)
            self.assertEqual(got_plain[inst], loop_plain)
            self.assertEqual(got_quant[inst], loop_quant)
            self.assertEqual(got_plain[inst], want_plain)
            self.assertEqual(got_quant[inst], want_quant)
            self.assertEqual(header(got_quant[inst])[4], 1)  # flags: quantized

    def test_every_should_still_pick_the_frames_when_they_are_encoded_ahead(self):
        inst = self.make()
        sub = Raw(self.srv)
        self.addCleanup(sub.close)
        sub.ask({"cmd": "subscribe", "instance": inst, "every": 3, "quantize": True})
        self.assertEqual(header(sub.frame())[1], 0)
        for _ in range(7):
            self.c.ask({"cmd": "step", "instance": inst})
        self.c.ask({"cmd": "destroy", "instance": inst})
        sub.send({"cmd": "ping"})  # after frames 3 and 6, nothing but this reply
        got = []
        while True:
            m = sub.message()
            if m[0] == "json":
                break
            got.append(header(m[1])[1])
        self.assertEqual(got, [3, 6])


class InlineStepTest(unittest.TestCase):
    def test_a_small_instance_stepped_inline_should_match_its_twin_stepped_on_the_pool(self):
        srv = fresh_server(self)
        c = Raw(srv)
        self.addCleanup(c.close)
        cloth = {"cmd": "create", "width": 4, "height": 4, "spacing": 0.1, "origin": [0, 2, 0],
                 "sleepThreshold": 0}
        alone = c.ask(cloth)["instance"]  # 64 work units: inline
        twin = c.ask(cloth)["instance"]
        big = c.ask(dict(cloth, width=24, height=24))["instance"]  # with it: the pool
        for inst in (alone, twin):
            c.ask({"cmd": "pin", "instance": inst, "particles": [0, 3]})
            c.ask({"cmd": "wind", "instance": inst, "wind": [3, 0, 2]})
        for _ in range(40):
            self.assertEqual(c.ask({"cmd": "step", "instance": alone})["stepped"], 1)
            self.assertEqual(c.ask({"cmd": "step", "instances": [twin, big]})["stepped"], 2)
        a = c.ask({"cmd": "get", "instance": alone})
        b = c.ask({"cmd": "get", "instance": twin})
        self.assertEqual(a["frame"], 40)
        self.assertNotEqual(a["positions"][3 * 15 + 1], 2.0 - 0.3)  # it moved
        self.assertEqual(a["positions"], b["positions"])  # printed with 9 digits: bit-exact


class ConcurrentBatchesTest(unittest.TestCase):
    def test_batches_of_several_clients_should_each_get_their_reply_and_frames(self):
        """Only the job that completes a batch wakes the loop; a batch that
        the loop drains while another batch's wake-up is being handled must
        still finish, and none may wait for another's."""
        srv = fresh_server(self)
        clients, sets = [], []
        for k in range(3):
            c = Raw(srv)
            self.addCleanup(c.close)
            ids = [c.ask({"cmd": "create", "width": 24, "height": 24, "spacing": 0.05,
                          "origin": [2.0 * k, 2, 0.5 * j], "sleepThreshold": 0})["instance"]
                   for j in range(4)]
            clients.append(c)
            sets.append(ids)
        viewer = Raw(srv)
        self.addCleanup(viewer.close)
        viewer.ask({"cmd": "subscribe"})
        for _ in range(12):
            viewer.frame()
        errors = []

        def run(c, ids):
            try:
                for _ in range(25):
                    r = c.ask({"cmd": "step", "instances": ids})
                    if r["stepped"] != len(ids):
                        errors.append(r)
            except Exception as e:  # reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=run, args=(c, ids)) for c, ids in zip(clients, sets)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertFalse(any(t.is_alive() for t in threads))
        last = {}
        for _ in range(25 * 12):
            inst, num, *_ = header(viewer.frame())
            self.assertEqual(num, last.get(inst, 0) + 1)
            last[inst] = num
        self.assertEqual(sorted(last), sorted(i for ids in sets for i in ids))
        self.assertEqual(set(last.values()), {25})


class FlushBeforePollTest(unittest.TestCase):
    def test_a_frame_gathered_in_a_timer_should_go_out_without_another_event(self):
        """The current frame of a `subscribe` that runs when a paused
        connection resumes (a timer, before libuv's poll) goes out at once:
        the poll must not block with a frame waiting."""
        fd, path = tempfile.mkstemp(prefix="clothd-token-")
        with os.fdopen(fd, "w") as f:
            f.write("gathered-token-0123456789\n")
        self.addCleanup(os.unlink, path)
        srv = fresh_server(self, "--token-file", path)
        maker = Raw(srv)
        self.addCleanup(maker.close)
        maker.ask({"cmd": "auth", "token": "gathered-token-0123456789"})
        inst = maker.ask({"cmd": "create", "width": 4, "height": 4})["instance"]
        c = Raw(srv)
        self.addCleanup(c.close)
        # A bad token pauses the connection for 100 ms; the good one and the
        # subscribe wait in its input and run from the pause timer.
        c.sock.sendall(b'{"id":1,"cmd":"auth","token":"wrong-token-0123456789xx"}\n'
                       b'{"id":2,"cmd":"auth","token":"gathered-token-0123456789"}\n'
                       b'{"id":3,"cmd":"subscribe","instance":%d}\n' % inst)
        self.assertEqual(c.reply()["error"]["code"], "unauthorized")
        self.assertEqual(c.reply()["id"], 2)
        self.assertEqual(c.reply()["instances"], [inst])
        c.sock.settimeout(3)  # nothing else happens on the server meanwhile
        inst_got, num, _, count, _ = header(c.frame())
        self.assertEqual((inst_got, num, count), (inst, 0, 16))


class GatheredOrderTest(unittest.TestCase):
    def setUp(self):
        self.srv = fresh_server(self)

    def run_pipelined(self, n, count, steps):
        """`count` n x n cloths; a connection subscribed to all of them sends
        `steps` steps pipelined in one write; returns its messages."""
        c = Raw(self.srv)
        self.addCleanup(c.close)
        ids = [c.ask({"cmd": "create", "width": n, "height": n, "spacing": 0.05,
                      "origin": [0.5 * (k % 10), 2, 0.5 * (k // 10)],
                      "sleepThreshold": 0})["instance"] for k in range(count)]
        other = Raw(self.srv)
        self.addCleanup(other.close)
        other.ask({"cmd": "subscribe"})
        c.ask({"cmd": "subscribe"})
        for _ in ids:
            c.frame()
            other.frame()
        lines = b"".join(b'{"id":%d,"cmd":"step"}\n' % (100 + k) for k in range(steps))
        c.sock.sendall(lines)
        return ids, c, other

    def check(self, ids, c, other, steps):
        for k in range(steps):
            r = c.reply()
            self.assertEqual(r["id"], 100 + k)
            self.assertEqual(r["stepped"], len(ids))
            frames = [header(c.frame()) for _ in ids]
            self.assertEqual(sorted(h[0] for h in frames), ids)
            self.assertEqual({h[1] for h in frames}, {k + 1})
        c.ask({"cmd": "ping"})  # and nothing else was sent
        last = {}
        for _ in range(steps * len(ids)):
            inst, num, *_ = header(other.frame())
            self.assertEqual(num, last.get(inst, 0) + 1, f"instance {inst}")
            last[inst] = num
        self.assertEqual(last, {i: steps for i in ids})

    def test_frames_of_many_pool_stepped_instances_should_follow_their_reply_in_order(self):
        # 24 x 24 at 4 iterations: 2,304 work units each, stepped on the pool.
        ids, c, other = self.run_pipelined(24, 40, 6)
        self.check(ids, c, other, 6)

    def test_frames_of_many_inline_stepped_instances_should_follow_their_reply_in_order(self):
        # 2 x 2 cloths, 16 units each: the whole batch of 40 runs inline.
        ids, c, other = self.run_pipelined(2, 40, 6)
        self.check(ids, c, other, 6)


class StepReplyTest(unittest.TestCase):
    def test_the_step_reply_should_carry_every_member_in_order(self):
        srv = fresh_server(self)
        c = Raw(srv)
        self.addCleanup(c.close)
        small = c.ask({"cmd": "create", "width": 3, "height": 3, "origin": [0, 2, 0]})["instance"]
        big = c.ask({"cmd": "create", "width": 24, "height": 24, "spacing": 0.05,
                     "origin": [0, 3, 0]})["instance"]
        c.ask({"cmd": "pin", "instance": big, "particles": list(range(24))})
        c.ask({"cmd": "addCollider", "instance": big, "type": "sphere", "position": [0.6, 2.7, 0],
               "radius": 0.2, "coupling": 1})
        for rid in (7, "a\"b", -3, 12345678901, 0.5):
            with self.subTest(id=rid):
                c.send({"id": rid, "cmd": "step", "instances": [small, big]})
                kind, reply, line = c.message()
                self.assertEqual(list(reply), ["id", "ok", "unstable", "sleeping", "stepped",
                                               "impulses"])
                self.assertEqual(reply["id"], rid)
                self.assertEqual(reply["stepped"], 2)
                self.assertEqual(reply["unstable"], [])
        for _ in range(30):
            reply = c.ask({"cmd": "step", "instances": [small, big]})
        self.assertEqual(len(reply["impulses"]), 1)
        imp = reply["impulses"][0]
        self.assertEqual(list(imp), ["instance", "collider", "linear", "angular"])
        self.assertEqual(imp["instance"], big)
        self.assertEqual(len(imp["linear"]), 3)
        self.assertLess(imp["linear"][1], 0)  # the cloth lies on the sphere: pushed down
        c.sock.sendall(b'{"cmd":"step","instance":%d}\n' % small)
        kind, reply, line = c.message()
        self.assertTrue(line.startswith(b'{"ok":true,"unstable":[],"sleeping":['), line)


if __name__ == "__main__":
    unittest.main()
