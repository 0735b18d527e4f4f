"""The Python client with numpy: frames as (N, 3) float32 arrays without a
copy, plain and quantized, against the shared vectors and a live server.

Skipped when numpy is not importable; `make test` also runs this file
with an interpreter that has numpy (clients/python/client.mk)."""

import json
import os
import unittest

from server import REPO, ServerTestCase

import clothd
from clothd import decode_frame

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

VECTORS = os.path.join(REPO, "protocol", "test_vectors.json")


@unittest.skipUnless(np is not None, "numpy is not installed")
class NumpyVectorsTest(unittest.TestCase):
    def test_every_vector_should_decode_to_the_same_array_as_flat(self):
        with open(VECTORS) as f:
            vectors = json.load(f)["frames"]
        for v in vectors:
            with self.subTest(note=v["note"]):
                frame = decode_frame(bytes.fromhex(v["hex"]))
                arr = frame.array
                self.assertEqual(arr.shape, (frame.count, 3))
                self.assertEqual(arr.dtype, np.float32)
                expected = np.array(v["decoded"]["positions"], dtype=np.float32).reshape(-1, 3)
                self.assertTrue(np.array_equal(arr, expected), f"{arr} != {expected}")
                self.assertEqual(arr.ravel().tolist(), list(frame.flat))

    def test_a_plain_frame_array_should_be_a_read_only_view_on_the_payload(self):
        with open(VECTORS) as f:
            v = json.load(f)["frames"][1]
        frame = decode_frame(bytes.fromhex(v["hex"]))
        arr = frame.array
        self.assertFalse(arr.flags.owndata)
        self.assertFalse(arr.flags.writeable)
        base = arr
        while isinstance(base, np.ndarray):
            base = base.base
        self.assertIs(base, frame.payload)  # the very bytes received: no copy


@unittest.skipUnless(np is not None, "numpy is not installed")
class NumpyLiveTest(ServerTestCase):
    def test_frames_and_get_should_agree_as_arrays(self):
        cid = self.c.create_cloth(width=12, height=9, spacing=0.05, origin=[0, 1, 0])
        self.c.pin(cid, [0, 11])
        self.c.subscribe(cid)
        quant = self.client()
        quant.subscribe(cid, quantize=True)
        self.c.next_frame(timeout=5)
        quant.next_frame(timeout=5)
        for _ in range(20):
            self.c.step(1 / 60, instances=[cid])
        plain = self.c.next_frame(timeout=5)
        while plain.frame < 20:
            plain = self.c.next_frame(timeout=5)
        q = quant.next_frame(timeout=5)
        while q.frame < 20:
            q = quant.next_frame(timeout=5)
        state = self.c.get(cid)
        self.assertTrue(np.array_equal(plain.array, state.array))
        self.assertEqual(state.array.shape, (108, 3))
        span = plain.array.max(axis=0) - plain.array.min(axis=0)
        err = np.abs(q.array.astype(np.float64) - plain.array.astype(np.float64))
        self.assertTrue(np.all(err <= span / 65535 / 2 + 1e-6), f"max error {err.max(axis=0)}")


class WithoutNumpyTest(unittest.TestCase):
    def test_array_should_raise_a_clear_import_error_without_numpy(self):
        with open(VECTORS) as f:
            v = json.load(f)["frames"][0]
        saved = clothd._np
        clothd._np = None
        try:
            frame = decode_frame(bytes.fromhex(v["hex"]))
            with self.assertRaises(ImportError) as cm:
                frame.array
            self.assertIn("numpy", str(cm.exception))
            self.assertEqual(len(frame.flat), 6)  # the rest still works
        finally:
            clothd._np = saved


if __name__ == "__main__":
    unittest.main()
