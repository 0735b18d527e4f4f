"""A change of wind is announced to subscribed connections (the viewers),
so that a viewport shows wind set by a game server at once."""

from server import ServerTestCase


class WindEventTest(ServerTestCase):
    def test_wind_changes_should_reach_subscribers_as_events(self):
        cid = self.c.create_cloth(width=3, height=3)
        viewer = self.client()
        viewer.subscribe()
        plain = self.client()  # not subscribed: gets no events
        self.c.wind([1, 0, 0.5], instance=cid)
        self.c.wind([0.1, 0, 0])
        self.c.wind([0.1, 0, 0])             # the same again: no event
        self.c.wind([1, 0, 0.5], instance=cid)  # the same again: no event
        viewer.wind([0, 0, -2])                 # its own change: the reply says it
        self.c.wind([0, 0, 0])
        viewer.status()  # every event sent before this reply has arrived
        plain.status()
        self.assertEqual(list(viewer.events), [
            {"event": "wind", "instance": cid, "wind": [1, 0, 0.5]},
            {"event": "wind", "wind": [0.100000001, 0, 0]},  # the stored float32, as replies print it
            {"event": "wind", "wind": [0, 0, 0]},
        ])
        self.assertEqual(list(plain.events), [])
        # A failed request announces nothing.
        with self.assertRaises(Exception):
            self.c.wind([5, 0, 0], instance=cid + 1000)
        viewer.status()
        self.assertEqual(len(viewer.events), 3)
