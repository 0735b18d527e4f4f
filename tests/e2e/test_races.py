"""Commands from one client racing another client's step (issue 9, items 1-2).

Every instance of a step batch stays busy until the whole batch is finished
(reply with impulses, frames to subscribers): a `destroy` of an instance whose
own job returned early must wait for the batch, never free what the batch still
reads. These tests also run against the ASan/UBSan and TSan builds of the
server (make e2e-asan, make e2e-tsan), where a use-after-free or an
out-of-bounds read fails them at once.
"""

import threading
import time
import unittest

from clothd import Frame
from server import assert_error, fresh_server

DT = 1 / 60


def slow_cloth(c, **extra):
    """A cloth whose step takes tens of milliseconds (128x128, 64 iterations)."""
    return c.create_cloth(width=128, height=128, spacing=0.02, solverIterations=64, tethers=False,
                          sleepThreshold=0, **extra)


class DestroyDuringStepTest(unittest.TestCase):
    def test_destroy_of_an_early_finished_instance_waits_for_the_whole_batch(self):
        srv = fresh_server(self, workers=2)
        stepper = srv.client()
        self.addCleanup(stepper.close)
        destroyer = srv.client()
        self.addCleanup(destroyer.close)
        big = slow_cloth(stepper)
        # The small one has a coupled collider, so the batch's reply reads its
        # impulses after the big one's job is back.
        small = stepper.create_cloth(width=6, height=6, sleepThreshold=0)
        stepper.add_collider(small, "sphere", position=[0.25, -0.6, 0], radius=0.3, coupling=1)
        destroyer.subscribe()  # "all": frames of both instances come to this socket
        for _ in range(2):
            destroyer.next_frame(timeout=5)

        for _ in range(3):
            stepper.send_json({"id": 1, "cmd": "step", "dt": DT, "instances": [big, small]})
            time.sleep(0.02)  # the small job is long back, the big one is not
            destroyer.send_json({"id": "d", "cmd": "destroy", "instance": small})
            # Up to the destroy's reply: the batch's frames (if any) come first.
            while True:
                msg = destroyer.read_message()
                if isinstance(msg, dict):
                    self.assertEqual(msg.get("id"), "d", msg)
                    self.assertIs(msg["ok"], True, msg)
                    break
            reply = stepper.read_reply()
            self.assertIs(reply["ok"], True, reply)
            self.assertEqual(reply["stepped"], 2, reply)
            assert_error(self, stepper.exchange({"cmd": "get", "instance": small}), "not_found", "instance")
            # Nothing of the destroyed instance may arrive after its destroy.
            after = []
            destroyer.sock.settimeout(0.3)
            try:
                while True:
                    msg = destroyer.read_message()
                    if isinstance(msg, Frame):
                        after.append(msg.instance)
            except (TimeoutError, OSError):
                pass
            destroyer.sock.settimeout(10)
            self.assertNotIn(small, after, "a frame of a destroyed instance was sent after its destroy")
            small = stepper.create_cloth(width=6, height=6, sleepThreshold=0)
            stepper.add_collider(small, "sphere", position=[0.25, -0.6, 0], radius=0.3, coupling=1)
        self.assertTrue(srv.alive())

    def test_create_destroy_churn_beside_a_multi_instance_stepper(self):
        """The issue's reproduction: churn from one client while another steps
        several instances; the release build died within 12 s."""
        srv = fresh_server(self, workers=2)
        stop = threading.Event()
        errors = []

        def churn():
            try:
                c = srv.client()
                ids = []
                while not stop.is_set():
                    ids.append(c.create_cloth(width=8, height=8))
                    if len(ids) > 4:
                        c.destroy(ids.pop(0))
                c.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        stepper = srv.client()
        self.addCleanup(stepper.close)
        mine = [stepper.create_cloth(width=16, height=16, sleepThreshold=0) for _ in range(3)]
        victim_maker = srv.client()
        self.addCleanup(victim_maker.close)
        t = threading.Thread(target=churn)
        t.start()
        try:
            deadline = time.monotonic() + 3
            steps = 0
            while time.monotonic() < deadline:
                victim = victim_maker.create_cloth(width=8, height=8, sleepThreshold=0)
                victim_maker.add_collider(victim, "sphere", position=[0.3, -0.5, 0], radius=0.2, coupling=1)
                stepper.send_json({"id": steps, "cmd": "step", "dt": DT, "instances": mine + [victim]})
                victim_maker.send_json({"cmd": "destroy", "instance": victim})
                reply = stepper.read_reply()
                if reply["ok"]:
                    self.assertEqual(reply["stepped"], 4, reply)
                    steps += 1
                else:  # the destroy overtook the step: refused whole, as it should be
                    assert_error(self, reply, "not_found", "instances[3]")
                self.assertIs(victim_maker.read_reply()["ok"], True)
        finally:
            stop.set()
            t.join(10)
        self.assertEqual(errors, [])
        self.assertGreater(steps, 10)
        self.assertTrue(srv.alive())


class ForeignIdsDuringStepTest(unittest.TestCase):
    def test_ids_beyond_the_instance_table_during_a_step_are_not_found(self):
        # --max-instances 4: the busy table has 5 slots; ids naming slot
        # 65535 (or any slot beyond 4) must be answered, not read out of bounds.
        srv = fresh_server(self, "--max-instances", "4", workers=2)
        stepper = srv.client()
        self.addCleanup(stepper.close)
        other = srv.client()
        self.addCleanup(other.close)
        big = slow_cloth(stepper)
        for _ in range(3):
            stepper.send_json({"id": 1, "cmd": "step", "dt": DT, "instances": [big]})
            time.sleep(0.005)
            for cmd, extra in (("get", {}), ("destroy", {}), ("wind", {"wind": [1, 0, 0]}),
                               ("pin", {"particle": 0}), ("subscribe", {}), ("step", {})):
                for bad in (65535, 0xFFFFFFFF, 5, (7 << 16) | 4000):
                    reply = other.exchange({"cmd": cmd, "instance": bad, **extra})
                    assert_error(self, reply, "not_found", "instance")
            self.assertIs(stepper.read_reply()["ok"], True)
        self.assertTrue(srv.alive())


if __name__ == "__main__":
    unittest.main()
