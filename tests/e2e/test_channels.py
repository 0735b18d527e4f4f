"""Velocities and normals (issue 15) through the real server: in `get`
and as frame channels, plain and quantized, on a swinging cloth.

Velocities are (x - x_prev) / dt over the last substep: with one substep,
the move between two `get`s over the step's dt. Normals are unit and point
to down x right of the grid (outwards for a soft body). Frames without
channels stay what they were; a frame's channels are the `get`'s values
exactly (plain) or within the quantization step (quantized)."""

import math
import struct
import unittest

from server import ServerTestCase, assert_error, send_line

W, H = 12, 9
N = W * H
DT = 1 / 60


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32s(triplets):
    """JSON's 9-digit decimals as the float32 values they print."""
    return [tuple(f32(c) for c in t) for t in triplets]


def encode_positions(positions) -> bytes:
    """The payload a positions-only frame had before issue 15: float32
    x, y, z of each particle."""
    return b"".join(struct.pack("<3f", *p) for p in positions)


def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def sub(a, b):
    return tuple(x - y for x, y in zip(a, b))


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


class ChannelsTest(ServerTestCase):
    def swinging_sheet(self, substeps: int = 1, width: int = W, height: int = H) -> int:
        """A sheet lying flat (down +z), its top edge pinned: it swings
        down through y. No air ("constant" wind model, no wind): a
        particle's previous position is where the last substep began."""
        cid = self.c.create_cloth(width=width, height=height, spacing=0.05, origin=[0, 2, 0],
                                  down=[0, 0, 1], substeps=substeps, wind_model="constant",
                                  sleep_threshold=0)
        self.c.pin(cid, list(range(width)))
        return cid

    def assert_normals_face_down_x_right(self, normals, positions, width, height):
        for i, n in enumerate(normals):
            self.assertAlmostEqual(math.sqrt(dot(n, n)), 1.0, delta=1e-6, msg=f"normal {i}")
            x, y = i % width, i // width
            down = sub(positions[i + width], positions[i]) if y + 1 < height else \
                sub(positions[i], positions[i - width])
            right = sub(positions[i + 1], positions[i]) if x + 1 < width else \
                sub(positions[i], positions[i - 1])
            self.assertGreater(dot(n, cross(down, right)), 0, f"normal {i} faces the wrong side")

    def test_get_velocities_should_equal_the_move_over_dt_and_normals_face_down_x_right(self):
        cid = self.swinging_sheet()
        still = self.c.get(cid, velocities=True, normals=True)
        self.assertEqual(set(still.velocities), {(0, 0, 0)}, "zero before the first step")
        self.assertEqual(set(still.normals), {(0, 1, 0)}, "flat: down (+z) x right (+x) = +y")
        before = self.c.get(cid)
        self.assertIsNone(before.velocities)  # not asked for: not sent
        self.assertNotIn("velocities", before.reply)
        fastest = 0.0
        for step in range(24):
            self.c.step(DT, instances=[cid])
            after = self.c.get(cid, velocities=True, normals=True)
            self.assertEqual(len(after.velocities), N)
            for i in range(N):
                for k in range(3):
                    expected = (after.positions[i][k] - before.positions[i][k]) / f32(DT)
                    got = after.velocities[i][k]
                    self.assertLessEqual(abs(got - expected), 1e-4 + 1e-5 * abs(expected),
                                         f"step {step} particle {i} axis {k}")
                    fastest = max(fastest, abs(expected))
            self.assert_normals_face_down_x_right(after.normals, after.positions, W, H)
            before = after
        self.assertGreater(fastest, 1.0, "the sheet swings")
        self.assertLess(after.normals[-1][1], 0.9, "and its normals turn with it")

    def test_channel_frames_should_carry_the_gets_values_and_keep_positions_only_frames_as_before(self):
        cid = self.swinging_sheet(substeps=3)
        bare = self.client()
        full = self.client()
        quant = self.client()
        bare.subscribe(cid)
        full.subscribe(cid, channels=["positions", "velocities", "normals"])
        quant.subscribe(cid, quantize=True, channels=["velocities", "normals"])
        worst_v = worst_n = 0.0
        for step in range(16):
            if step:
                self.c.step(DT, instances=[cid])
            b, f, q = bare.next_frame(timeout=5), full.next_frame(timeout=5), quant.next_frame(timeout=5)
            state = self.c.get(cid, velocities=True, normals=True)
            self.assertEqual((b.frame, f.frame, q.frame, state.frame), (step,) * 4)
            # A positions-only frame is byte for byte the old form.
            self.assertEqual(b.flags, 0)
            self.assertEqual(b.payload, encode_positions(state.positions))
            self.assertEqual(b.size, 40 + 12 * N)
            self.assertEqual(f.flags, 2 | 4)
            self.assertEqual(f.size, 40 + 36 * N)
            self.assertEqual(f.payload[:12 * N], b.payload, "positions first, unchanged")
            self.assertEqual(f.velocities, f32s(state.velocities))  # the same float32
            self.assertEqual(f.normals, f32s(state.normals))
            self.assertEqual(q.flags, 1 | 2 | 4)
            self.assertEqual(q.size, 64 + 6 * N + 24 + 6 * N + 4 * N)
            for k in range(3):
                values = [f32(v[k]) for v in state.velocities]
                self.assertEqual(q.velocity_min[k], min(values))
                self.assertEqual(q.velocity_max[k], max(values))
                bound = (max(values) - min(values)) / 65535 / 2 + 1e-6
                for i in range(N):
                    err = abs(q.velocities[i][k] - values[i])
                    self.assertLessEqual(err, bound, f"frame {step} velocity {i} axis {k}")
                    worst_v = max(worst_v, err)
            for i in range(N):
                n = q.normals[i]
                self.assertAlmostEqual(math.sqrt(dot(n, n)), 1.0, delta=1e-6)
                for k in range(3):
                    err = abs(n[k] - state.normals[i][k])
                    self.assertLessEqual(err, 1e-4, f"frame {step} normal {i}")
                    worst_n = max(worst_n, err)
            self.assert_normals_face_down_x_right(q.normals, state.positions, W, H)
        self.assertGreater(worst_v, 0.0)
        self.assertGreater(worst_n, 0.0)

    def test_channels_should_work_on_pooled_steps_and_with_every(self):
        # 32 x 32 x 4 iterations is over the inline threshold: the pool's
        # workers encode the frames.
        cid = self.swinging_sheet(width=32, height=32)
        plain, chans = self.client(), self.client()
        plain.subscribe(cid, channels=["velocities"], every=2)
        chans.subscribe(cid, channels=["normals"], quantize=True)
        for _ in range(4):
            self.c.step(DT, instances=[cid])
        state = self.c.get(cid, velocities=True, normals=True)
        plain.status()
        chans.status()
        pf, cf = plain.poll_frames(), chans.poll_frames()
        self.assertEqual([f.frame for f in pf], [0, 2, 4])
        self.assertEqual([f.frame for f in cf], [0, 1, 2, 3, 4])
        self.assertEqual(pf[-1].velocities, f32s(state.velocities))
        self.assertIsNone(pf[-1].normals)
        self.assertIsNone(cf[-1].velocities)
        for n, m in zip(cf[-1].normals, state.normals):
            self.assertLessEqual(max(abs(a - b) for a, b in zip(n, m)), 1e-4)

    def test_soft_body_normals_should_point_outwards(self):
        sid = self.c.create_softbody(shape="ball", radius=0.3, resolution=5, center=[0, 1, 0])
        self.c.step(DT, instances=[sid])
        state = self.c.get(sid, velocities=True, normals=True)
        centre = [sum(p[k] for p in state.positions) / state.count for k in range(3)]
        surface = set(self.c.topology(sid)["triangles"])
        self.assertTrue(0 < len(surface) < state.count)
        for i, (p, n) in enumerate(zip(state.positions, state.normals)):
            if i in surface:
                self.assertAlmostEqual(math.sqrt(dot(n, n)), 1.0, delta=1e-6)
                self.assertGreater(dot(n, sub(p, centre)), 0, f"vertex {i} faces inwards")
            else:
                self.assertEqual(n, (0, 0, 0), f"interior vertex {i} has no normal")
        # Falling: every velocity points down.
        self.assertTrue(all(v[1] < 0 for v in state.velocities))

    def test_an_unknown_channel_should_be_invalid_and_list_the_valid_ones(self):
        cid = self.swinging_sheet()
        reply = send_line(self.c, '{"cmd":"subscribe","instance":%d,"channels":["normals","colour"]}' % cid)
        assert_error(self, reply, "invalid_argument", field="channels[1]",
                     message='channels[1]: unknown channel "colour" (one of "positions", '
                             '"velocities" or "normals")')
        reply = send_line(self.c, '{"cmd":"subscribe","channels":"normals"}')
        assert_error(self, reply, "invalid_argument", field="channels")
        reply = send_line(self.c, '{"cmd":"get","instance":%d,"normals":1}' % cid)
        assert_error(self, reply, "invalid_argument", message="normals: must be true or false")
        self.assertEqual(self.c.subscriptions, {}, "a failed subscribe subscribes nothing")


if __name__ == "__main__":
    unittest.main()
