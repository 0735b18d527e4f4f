"""subscribe / unsubscribe and the binary frames."""

import time
import unittest

from server import ServerTestCase, assert_error, send_line

DT = 1 / 60


def frames_until(c, pred, timeout=5.0):
    """Reads frames until pred(frame) holds; returns every frame read."""
    got = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no matching frame within {timeout}s; got {[(f.instance, f.frame) for f in got]}")
        f = c.next_frame(timeout=left)
        got.append(f)
        if pred(f):
            return got


class SubscribeTest(ServerTestCase):
    def test_subscribe_should_send_the_current_frame_then_one_per_step(self):
        cid = self.c.create_cloth(width=8, height=6)
        self.c.subscribe(cid)
        first = self.c.next_frame(timeout=5)
        self.assertEqual((first.instance, first.frame, first.count), (cid, 0, 48))
        self.assertEqual(first.time, 0)
        self.assertEqual(list(first.flat), list(self.c.get(cid).flat))
        for k in range(1, 6):
            self.c.step(DT, instances=[cid])
            state = self.c.get(cid)
            f = self.c.next_frame(timeout=5)
            self.assertEqual((f.instance, f.frame, f.count), (cid, k, 48))
            self.assertEqual(state.frame, k)
            self.assertAlmostEqual(f.time, state.time, delta=1e-12)
            self.assertEqual(list(f.flat), list(state.flat), f"frame {k} differs from get")
        self.assertEqual(self.c.poll_frames(), [])

    def test_subscribe_to_a_list_should_send_each_current_frame(self):
        a = self.c.create_cloth(width=3, height=3)
        b = self.c.create_cloth(width=4, height=3)
        self.c.subscribe(instances=[a, b])
        got = {self.c.next_frame(timeout=5).instance for _ in range(2)}
        self.assertEqual(got, {a, b})
        self.c.step(DT, instances=[a, b])
        got = sorted((f.instance, f.frame, f.count) for f in (self.c.next_frame(timeout=5) for _ in range(2)))
        self.assertEqual(got, sorted([(a, 1, 9), (b, 1, 12)]))

    def test_subscribe_all_should_include_instances_created_later(self):
        self.c.subscribe()
        other = self.client()
        cid = other.create_cloth(width=5, height=5)
        other.step(DT, instances=[cid])
        got = frames_until(self.c, lambda f: f.instance == cid and f.frame == 1)
        self.assertEqual(got[-1].count, 25)

    def test_unsubscribe_should_stop_the_frames(self):
        cid = self.c.create_cloth(width=3, height=3)
        self.c.subscribe(cid)
        self.c.next_frame(timeout=5)
        self.c.step(DT, instances=[cid])
        self.c.next_frame(timeout=5)
        self.c.unsubscribe(cid)
        self.c.poll_frames()
        self.c.step(DT, instances=[cid])
        self.c.status()
        self.assertEqual([(f.instance, f.frame) for f in self.c.poll_frames()], [])

    def test_unsubscribe_all_should_drop_every_subscription(self):
        a = self.c.create_cloth(width=3, height=3)
        b = self.c.create_cloth(width=3, height=3)
        self.c.subscribe(instances=[a, b])
        self.c.unsubscribe()
        self.c.poll_frames()
        self.c.step(DT, instances=[a, b])
        self.c.status()
        self.assertEqual(self.c.poll_frames(), [])

    def test_frames_of_a_destroyed_instance_should_stop(self):
        cid = self.c.create_cloth(width=3, height=3)
        self.c.subscribe(cid)
        self.c.destroy(cid)
        self.c.step(DT)
        self.c.status()
        self.assertTrue(all(f.frame == 0 for f in self.c.poll_frames()))

    def test_subscribe_to_an_unknown_instance_should_be_not_found(self):
        reply = send_line(self.c, '{"cmd":"subscribe","instance":60000}')
        assert_error(self, reply, "not_found", "instance")
        self.c.status()


if __name__ == "__main__":
    unittest.main()
