"""The Python client decodes every shared frame test vector exactly as
protocol/test_vectors.json says (the same file the C tests encode against),
plain and quantized, with velocities and normals, and rejects damaged
frames."""

import json
import os
import struct
import unittest

from server import REPO

from clothd import ProtocolError, decode_frame

VECTORS = os.path.join(REPO, "protocol", "test_vectors.json")


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


class FrameVectorsTest(unittest.TestCase):
    def setUp(self):
        with open(VECTORS) as f:
            self.frames = json.load(f)["frames"]
        self.assertGreaterEqual(len(self.frames), 3)

    def test_every_vector_should_decode_to_its_json(self):
        for v in self.frames:
            with self.subTest(note=v.get("note")):
                frame = decode_frame(bytes.fromhex(v["hex"]))
                want = v["decoded"]
                self.assertEqual(frame.instance, want["instance"])
                self.assertEqual(frame.frame, want["frame"])
                self.assertEqual(frame.time, want["time"])  # f64, exact
                self.assertEqual(frame.count, len(want["positions"]))
                self.assertEqual(frame.quantized, bool(v.get("quantized")))
                self.assertEqual(frame.flags, v.get("flags", 1 if v.get("quantized") else 0))
                got = [tuple(p) for p in frame.positions]
                expected = [tuple(f32(c) for c in p) for p in want["positions"]]
                self.assertEqual(got, expected)  # bit-exact after rounding to f32
                self.assertEqual(frame.size, len(v["hex"]) // 2)

    def test_the_vectors_should_include_quantized_frames(self):
        self.assertGreaterEqual(sum(1 for v in self.frames if v.get("quantized")), 3)

    def test_quantized_vectors_should_carry_the_box_and_stay_within_half_a_step(self):
        for v in self.frames:
            if not v.get("quantized"):
                continue
            with self.subTest(note=v.get("note")):
                frame = decode_frame(bytes.fromhex(v["hex"]))
                self.assertTrue(frame.flags & 1)
                self.assertEqual(list(frame.bbox_min), [f32(c) for c in v["decoded"]["bboxMin"]])
                self.assertEqual(list(frame.bbox_max), [f32(c) for c in v["decoded"]["bboxMax"]])
                original = v["original"]["positions"] if "flags" in v else v["original"]
                for p, o in zip(frame.positions, original):
                    for k in range(3):
                        bound = (frame.bbox_max[k] - frame.bbox_min[k]) / 65535 / 2 + 1e-6
                        self.assertLessEqual(abs(p[k] - f32(o[k])), bound)

    def test_channel_vectors_should_decode_their_velocities_and_normals(self):
        seen = set()
        for v in self.frames:
            flags = v.get("flags", 0)
            if not flags & 6:
                self.assertIsNone(decode_frame(bytes.fromhex(v["hex"])).velocities)
                continue
            with self.subTest(note=v["note"]):
                frame = decode_frame(bytes.fromhex(v["hex"]))
                seen.add(flags)
                want = v["decoded"]
                self.assertEqual(frame.has_velocities, bool(flags & 2))
                self.assertEqual(frame.has_normals, bool(flags & 4))
                if flags & 2:
                    got = [tuple(p) for p in frame.velocities]
                    self.assertEqual(got, [tuple(f32(c) for c in p) for p in want["velocities"]])
                    if flags & 1:
                        self.assertEqual(list(frame.velocity_min), [f32(c) for c in want["velocityMin"]])
                        for p, o in zip(got, v["original"]["velocities"]):
                            for k in range(3):
                                span = frame.velocity_max[k] - frame.velocity_min[k]
                                self.assertLessEqual(abs(p[k] - f32(o[k])), span / 65535 / 2 + 1e-6)
                else:
                    self.assertIsNone(frame.velocities)
                if flags & 4:
                    got = [tuple(p) for p in frame.normals]
                    self.assertEqual(got, [tuple(f32(c) for c in p) for p in want["normals"]])
                    for p, o in zip(got, v["original"]["normals"]):
                        length = sum(c * c for c in p) ** 0.5
                        if any(o):
                            self.assertAlmostEqual(length, 1.0, delta=1e-6)
                            for k in range(3):
                                self.assertLessEqual(abs(p[k] - o[k]), 1e-4)
                        else:
                            self.assertEqual(p, (0.0, 0.0, 0.0))
                else:
                    self.assertIsNone(frame.normals)
        self.assertEqual(seen, {2, 3, 4, 5, 6, 7})

    def test_damaged_frames_should_be_rejected(self):
        good = bytes.fromhex(self.frames[0]["hex"])
        for name, bad in [("magic", b"\x88" + good[1:]),
                          ("version", good[:4] + b"\x02\x00" + good[6:]),
                          ("truncated", good[:-4]),
                          ("short header", good[:20]),
                          ("unknown flag", good[:6] + b"\x08\x00" + good[8:]),
                          ("velocities flag on a plain length", good[:6] + b"\x02\x00" + good[8:]),
                          ("quantized flag on a plain length", good[:6] + b"\x01\x00" + good[8:])]:
            with self.subTest(damage=name):
                with self.assertRaises(ProtocolError):
                    decode_frame(bad)
