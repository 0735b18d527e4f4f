"""Subscribe options (issue 5, frames for remote viewports): quantized
frames and every k-th frame, against the real server."""

import unittest

from server import ServerTestCase, assert_error, send_line

from clothd import Client, Frame

W, H = 20, 20
N = W * H


def half_step_bound(plain: Frame, axis: int) -> float:
    """(max - min) / 65535 / 2 + 1e-6 over the plain frame's axis."""
    values = plain.flat[axis::3]
    return (max(values) - min(values)) / 65535 / 2 + 1e-6


class QuantizedFramesTest(ServerTestCase):
    def make_curtain(self, **kw) -> int:
        cid = self.c.create_cloth(width=W, height=H, spacing=0.05, origin=[0, 2, 0], **kw)
        self.c.pin(cid, list(range(W)))
        self.c.wind([3, 0, 1.5], instance=cid)
        return cid

    def test_quantized_frames_should_be_within_half_a_step_of_the_plain_ones_and_smaller(self):
        cid = self.make_curtain()
        plain = self.client()
        quant = self.client()
        plain.subscribe(cid)
        quant.subscribe(cid, quantize=True)
        worst = 0.0
        for step in range(31):
            if step:
                self.c.step(1 / 60, instances=[cid])
            p, q = plain.next_frame(timeout=5), quant.next_frame(timeout=5)
            self.assertEqual((p.instance, p.frame, p.time, p.count), (q.instance, q.frame, q.time, q.count))
            self.assertEqual(p.frame, step)
            self.assertFalse(p.quantized)
            self.assertTrue(q.quantized)
            self.assertEqual(q.flags, 1)
            self.assertEqual(p.size, 40 + 12 * N)
            self.assertEqual(q.size, 64 + 6 * N)
            for k in range(3):
                # The box is the plain positions' exact min and max.
                self.assertEqual(q.bbox_min[k], min(p.flat[k::3]))
                self.assertEqual(q.bbox_max[k], max(p.flat[k::3]))
                bound = half_step_bound(p, k)
                for i in range(N):
                    err = abs(q.flat[3 * i + k] - p.flat[3 * i + k])
                    worst = max(worst, err)
                    self.assertLessEqual(err, bound, f"frame {step} particle {i} axis {k}")
        self.assertGreater(worst, 0.0)  # it really is quantized
        self.assertLess(worst, 2e-5)    # a 1 m curtain: half a step is ~8 um

    def test_a_flat_axis_should_decode_exactly(self):
        # A horizontal cloth (down = +z) has every y equal: max == min on y.
        cid = self.c.create_cloth(width=8, height=8, spacing=0.1, origin=[0, 1, 0], down=[0, 0, 1],
                                  gravity=[0, 0, 0])
        plain, quant = self.client(), self.client()
        plain.subscribe(cid)
        quant.subscribe(cid, quantize=True)
        p, q = plain.next_frame(timeout=5), quant.next_frame(timeout=5)
        self.assertEqual(q.bbox_min[1], q.bbox_max[1])
        self.assertEqual(list(q.flat[1::3]), list(p.flat[1::3]))
        # The q values of the flat axis are 0 (payload after the 24-byte box).
        qs = [int.from_bytes(q.payload[24 + 6 * i + 2:24 + 6 * i + 4], "little") for i in range(64)]
        self.assertEqual(set(qs), {0})

    def test_every_3_should_deliver_exactly_frames_0_3_6(self):
        cid = self.make_curtain()
        sub = self.client()
        sub.subscribe(cid, every=3)
        for _ in range(10):
            self.c.step(1 / 60, instances=[cid])
        sub.status()  # its reply comes after every frame queued before it
        self.assertEqual([f.frame for f in sub.poll_frames()], [0, 3, 6, 9])

    def test_every_should_always_send_the_current_frame_first(self):
        cid = self.make_curtain()
        for _ in range(5):
            self.c.step(1 / 60, instances=[cid])
        sub = self.client()
        sub.subscribe(cid, every=3, quantize=True)
        for _ in range(8):
            self.c.step(1 / 60, instances=[cid])
        sub.status()
        frames = sub.poll_frames()
        self.assertEqual([f.frame for f in frames], [5, 6, 9, 12])
        self.assertTrue(all(f.quantized for f in frames))

    def test_every_should_apply_to_instances_created_after_subscribing_to_all(self):
        sub = self.client()
        sub.subscribe(every=2)
        cid = self.c.create_cloth(width=4, height=4)
        for _ in range(5):
            self.c.step(1 / 60, instances=[cid])
        sub.status()
        self.assertEqual([(f.instance, f.frame) for f in sub.poll_frames() if f.instance == cid],
                         [(cid, 0), (cid, 2), (cid, 4)])
        sub.unsubscribe()
        self.c.destroy(cid)

    def test_subscribing_again_should_replace_the_options(self):
        cid = self.make_curtain()
        sub = self.client()
        sub.subscribe(cid)
        self.assertFalse(sub.next_frame(timeout=5).quantized)
        sub.subscribe(cid, quantize=True, every=2)
        self.assertTrue(sub.next_frame(timeout=5).quantized)  # the current frame, again
        for _ in range(4):
            self.c.step(1 / 60, instances=[cid])
        sub.status()
        frames = sub.poll_frames()
        self.assertEqual([(f.frame, f.quantized) for f in frames], [(2, True), (4, True)])

    def test_a_named_subscription_should_win_over_all(self):
        a = self.c.create_cloth(width=6, height=6)
        b = self.c.create_cloth(width=6, height=6)
        sub = self.client()
        sub.subscribe()                         # plain, every frame
        sub.subscribe(a, quantize=True, every=2)
        self.c.step(1 / 60, instances=[a, b])
        self.c.step(1 / 60, instances=[a, b])
        sub.status()
        got = [(f.instance, f.frame, f.quantized) for f in sub.poll_frames() if f.instance in (a, b)]
        self.assertIn((a, 2, True), got)
        self.assertNotIn((a, 1, True), got)
        self.assertNotIn((a, 1, False), got)
        self.assertIn((b, 1, False), got)
        self.assertIn((b, 2, False), got)
        sub.unsubscribe()

    def test_subscribers_of_one_form_should_get_the_same_bytes(self):
        cid = self.make_curtain()
        subs = [self.client() for _ in range(3)]
        subs[0].subscribe(cid, quantize=True)
        subs[1].subscribe(cid, quantize=True, every=2)
        subs[2].subscribe(cid)
        for s in subs:
            s.next_frame(timeout=5)
        self.c.step(1 / 60, instances=[cid])
        self.c.step(1 / 60, instances=[cid])
        f0 = [f for f in (subs[0].next_frame(timeout=5), subs[0].next_frame(timeout=5)) if f.frame == 2][0]
        f1 = subs[1].next_frame(timeout=5)
        self.assertEqual(f1.frame, 2)
        self.assertEqual(f0.payload, f1.payload)
        self.assertEqual(f0, f1)

    def test_bad_option_values_should_be_invalid_argument(self):
        cid = self.c.create_cloth(width=4, height=4)
        cases = [
            ('"quantize":1', "quantize", "quantize: must be true or false"),
            ('"quantize":"yes"', "quantize", "quantize: must be true or false"),
            ('"quantize":null', "quantize", "quantize: must be true or false"),
            ('"every":0', "every", "every: must be an integer in [1, 1000]"),
            ('"every":1001', "every", "every: must be an integer in [1, 1000]"),
            ('"every":2.5', "every", "every: must be an integer in [1, 1000]"),
            ('"every":"3"', "every", "every: must be an integer in [1, 1000]"),
            ('"every":-1', "every", "every: must be an integer in [1, 1000]"),
        ]
        for member, fieldname, message in cases:
            with self.subTest(member=member):
                reply = send_line(self.c, f'{{"id":"x","cmd":"subscribe","instance":{cid},{member}}}')
                assert_error(self, reply, "invalid_argument", field=fieldname, message=message)
                self.assertEqual(reply.get("id"), "x")
        # Nothing was subscribed: a step sends no frame to this connection.
        self.c.step(1 / 60, instances=[cid])
        self.c.status()
        self.assertEqual(self.c.poll_frames(), [])
        # The limits themselves are fine.
        self.c.subscribe(cid, every=1000, quantize=False)
        self.assertEqual(self.c.next_frame(timeout=5).frame, 1)
        self.c.unsubscribe()


class QuantizedSlowSubscriberTest(ServerTestCase):
    def test_a_slow_quantized_subscriber_should_still_get_the_newest_frame(self):
        c = self.c
        cid = c.create_cloth(width=64, height=64)
        slow = Client(self.server.host, self.server.port, 10.0, rcvbuf=4096).connect()
        self.addCleanup(slow.close)
        slow.subscribe(cid, quantize=True)
        for _ in range(40):
            c.step(1 / 60, instances=[cid])
        frames = [slow.next_frame(timeout=5)]
        while frames[-1].frame < 40:
            frames.append(slow.next_frame(timeout=5))
        self.assertTrue(all(f.quantized for f in frames))
        self.assertEqual(frames[-1].frame, 40)
        numbers = [f.frame for f in frames]
        self.assertEqual(numbers, sorted(numbers))


if __name__ == "__main__":
    unittest.main()
