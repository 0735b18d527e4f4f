"""The debug command (the seed's cloth_debug): a server-wide flag for the
viewers' overlay, announced to subscribed connections as an event."""

import unittest

from server import ServerTestCase


class DebugTest(ServerTestCase):
    def test_toggle_should_reply_and_reach_subscribers_as_an_event(self):
        viewer = self.client()
        viewer.subscribe()  # every instance: a viewer
        plain = self.client()  # not subscribed: gets no events
        self.assertFalse(self.c.debug())
        self.assertTrue(self.c.debug(True))
        self.assertTrue(self.c.status()["debug"])
        cid = self.c.create_cloth(width=3, height=3)
        # Subscribing to all sent the frames of existing instances first.
        while viewer.next_frame(timeout=5).instance != cid:
            pass
        self.assertEqual(list(viewer.events), [{"event": "debug", "enabled": True}])
        self.assertEqual(list(plain.events), [])
        plain.status()
        self.assertEqual(list(plain.events), [])
        # Setting the same value again is no change: no second event.
        self.assertTrue(self.c.debug(True))
        self.assertFalse(self.c.debug(False))
        viewer.status()
        self.assertEqual([e["enabled"] for e in viewer.events], [True, False])

    def test_get_should_list_colliders_with_their_shapes(self):
        cid = self.c.create_cloth()
        s = self.c.add_collider(cid, "sphere", position=[1, 2, 3], radius=0.25)
        p = self.c.add_collider(cid, "plane", position=[0, -1, 0], normal=[0, 2, 0])
        got = self.c.request("get", instance=cid)["colliders"]
        self.assertEqual(got, [
            {"collider": s, "type": "sphere", "position": [1, 2, 3], "normal": [0, 1, 0], "radius": 0.25, "height": 1},
            {"collider": p, "type": "plane", "position": [0, -1, 0], "normal": [0, 1, 0], "radius": 0.5, "height": 1},
        ])
