"""Self-collision through the server: a sheet dropped in folds keeps its
unconnected particles apart, `get` reports the work, and `set` turns it on
for a running cloth."""

from server import ServerTestCase

DT = 1 / 60
SPACING = 0.02
SELF = 0.8 * SPACING  # seed 003's advice: a little under the spacing


def connected(w, i, j):
    """Joined by a constraint: grid neighbours within one cell, skip-one partners."""
    dx, dy = abs(i % w - j % w), abs(i // w - j // w)
    return (dx <= 1 and dy <= 1) or (dx, dy) in ((2, 0), (0, 2))


def closest_unconnected(positions, w):
    best = float("inf")
    for i, p in enumerate(positions):
        for j in range(i + 1, len(positions)):
            if not connected(w, i, j):
                q = positions[j]
                d2 = (p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 + (p[2] - q[2]) ** 2
                best = min(best, d2)
    return best ** 0.5


class SelfCollisionTest(ServerTestCase):
    def drop(self, w, self_distance):
        """A w x w sheet, slanted, its lowest row just above a frictionless
        floor: it collapses into folds (the unit test's sheet, smaller)."""
        cid = self.c.create_cloth(w, w, spacing=SPACING, origin=[0, 0.05 + (w - 1) * SPACING, 0],
                                  down=[0, -1, 0.15], substeps=8, self_distance=self_distance,
                                  sleep_threshold=0)
        self.c.request("addCollider", instance=cid, type="plane")
        return cid

    def test_folds_should_keep_their_distance_and_report_the_work(self):
        w = 32
        on, off = self.drop(w, SELF), self.drop(w, 0)
        off_closest = float("inf")
        for step in range(1, 241):
            self.c.step(DT, instances=[on, off])
            if step % 60 == 0:
                off_closest = min(off_closest, closest_unconnected(self.c.get(off).positions, w))
        s_on, s_off = self.c.get(on), self.c.get(off)
        # Without it the folds pass through each other (at some point of
        # the collapse); with it no two unconnected particles end closer
        # than 0.9 selfDistance.
        self.assertLess(off_closest, 0.5 * SELF)
        self.assertGreaterEqual(closest_unconnected(s_on.positions, w), 0.9 * SELF)
        self.assertGreaterEqual(min(p[1] for p in s_on.positions), -1e-4)
        work = s_on.self_collision
        self.assertGreaterEqual(work["searches"], 240)     # at least once a step
        self.assertLessEqual(work["searches"], 240 * 4)    # at most every other substep
        self.assertGreater(work["pairs"], 0)
        self.assertEqual(work["overflows"], 0)
        self.assertIsNone(s_off.self_collision)
        self.assertNotIn("selfCollision", s_off.reply)

    def test_set_should_turn_it_on_for_a_running_cloth(self):
        cid = self.drop(8, 0)
        self.c.step(DT, instances=[cid])
        self.assertIsNone(self.c.get(cid).self_collision)
        self.c.set(cid, self_distance=SELF)
        for _ in range(3):
            self.c.step(DT, instances=[cid])
        self.assertGreaterEqual(self.c.get(cid).self_collision["searches"], 3)
