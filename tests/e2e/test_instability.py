"""The instability guard: a runaway instance is stopped, reported, and
never shows a non-finite number."""

import math
import unittest

from server import assert_error, fresh_server, send_line

DT = 1 / 60


def all_finite(values):
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


class InstabilityTest(unittest.TestCase):
    def test_runaway_cloth_should_be_caught_reported_and_cleared_by_enable(self):
        srv = fresh_server(self)
        with srv.client() as c:
            bad = c.create_cloth(gravity=[0, -1e30, 0])
            good = c.create_cloth()
            c.subscribe(bad)
            caught_at = None
            for i in range(10):
                reply = c.step(DT)
                self.assertNotIn(good, reply["unstable"])
                if bad in reply["unstable"]:
                    caught_at = i
                    break
            self.assertIsNotNone(caught_at, "a gravity of -1e30 m/s^2 was never caught by the guard")

            state = c.get(bad)
            self.assertTrue(all_finite(state.reply["positions"]), "get shows a non-finite number")
            self.assertIs(state.unstable, True)
            self.assertIs(state.enabled, False)
            for f in c.poll_frames():
                self.assertTrue(all(math.isfinite(v) for v in f.flat), f"frame {f.frame} has non-finite values")
            text = c.status()["text"]
            bad_line = [ln for ln in text.split("\n") if ln.startswith(f"  Cloth {bad}: ")]
            self.assertEqual(len(bad_line), 1, text)
            self.assertTrue(bad_line[0].endswith(" [UNSTABLE]"), bad_line[0])

            # It stays stopped: later steps neither step nor report it again.
            frame = state.frame
            reply = c.step(DT)
            self.assertEqual(reply["unstable"], [])
            self.assertEqual(reply["stepped"], 1)
            self.assertEqual(c.get(bad).frame, frame)
            self.assertEqual(c.get(good).frame, caught_at + 2)

            self.assertIs(c.enable(bad, True), True)
            state = c.get(bad)
            self.assertIs(state.unstable, False)
            self.assertIs(state.enabled, True)
            self.assertNotIn("[UNSTABLE]", c.status()["text"])

    def test_gravity_too_big_for_float32_should_be_refused_or_caught(self):
        srv = fresh_server(self)
        with srv.client() as c:
            reply = send_line(c, '{"cmd":"create","gravity":[0,-1e300,0]}')
            if reply.get("ok") is False:
                assert_error(self, reply, "invalid_argument", "gravity")
                return
            cid = reply["instance"]
            self.assertIn(cid, c.step(DT)["unstable"])
            state = c.get(cid)
            self.assertTrue(all_finite(state.reply["positions"]))
            self.assertIs(state.unstable, True)

    def test_float32_overflow_over_big_steps_should_be_caught(self):
        srv = fresh_server(self)
        with srv.client() as c:
            cid = c.create_cloth(gravity=[0, -3e38, 0], damping=0)
            caught = False
            for _ in range(5):
                if cid in c.step(1.0)["unstable"]:
                    caught = True
                    break
            self.assertTrue(caught, "positions overflowing float32 were never caught")
            state = c.get(cid)
            self.assertTrue(all_finite(state.reply["positions"]), state.reply["positions"][:6])
            self.assertIs(state.unstable, True)


if __name__ == "__main__":
    unittest.main()
