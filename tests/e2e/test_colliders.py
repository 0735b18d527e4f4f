"""Colliders: nothing ends up inside a sphere, capsule or behind a plane."""

import math
import unittest

from server import ServerTestCase, assert_error, send_line

DT = 1 / 60
TOL = 1e-4


def horizontal_cloth(c, y, **extra):
    """A 10x10, 0.9 m square lying flat (down = +z), centred on the y axis."""
    return c.create_cloth(width=10, height=10, spacing=0.1, origin=[-0.45, y, -0.45], right=[1, 0, 0],
                          down=[0, 0, 1], **extra)


class CollidersTest(ServerTestCase):
    def step_n(self, cid, n):
        for _ in range(n):
            self.c.step(DT, instances=[cid])

    def drop_and_watch(self, cid, distance, r, what):
        """Steps 120 times; every 10 steps no particle may be closer than
        r - TOL (distance(p) is its distance to the collider's core), and at
        some checkpoint the cloth must touch (a frictionless cloth may slide
        off later)."""
        touched = False
        for k in range(12):
            self.step_n(cid, 10)
            pos = self.c.get(cid).positions
            self.assertEqual(len(pos), 100)
            dists = [distance(p) for p in pos]
            worst = min(range(len(dists)), key=dists.__getitem__)
            self.assertGreaterEqual(dists[worst], r - TOL,
                                    f"step {10 * k + 10}: particle {worst} at {pos[worst]} is inside the {what}")
            touched = touched or dists[worst] <= r + 0.01
        self.assertTrue(touched, f"the cloth never reached the {what}")

    def test_cloth_dropped_on_a_sphere_should_stay_outside_it(self):
        cid = horizontal_cloth(self.c, 0.8)
        r = 0.5
        self.c.add_collider(cid, "sphere", position=[0, 0, 0], radius=r)
        self.drop_and_watch(cid, lambda p: math.sqrt(p[0] ** 2 + p[1] ** 2 + p[2] ** 2), r, "sphere")

    def test_cloth_dropped_on_a_capsule_should_stay_outside_it(self):
        cid = horizontal_cloth(self.c, 0.6)
        r, height = 0.3, 2.0
        half = height / 2 - r
        self.c.add_collider(cid, "capsule", position=[0, 0, 0], normal=[2, 0, 0], radius=r, height=height)

        def to_axis(p):
            x, y, z = p
            return math.sqrt((x - max(-half, min(half, x))) ** 2 + y * y + z * z)

        self.drop_and_watch(cid, to_axis, r, "capsule")

    def test_short_capsule_should_act_as_a_sphere(self):
        cid = horizontal_cloth(self.c, 0.6)
        r = 0.3
        self.c.add_collider(cid, "capsule", position=[0, 0, 0], normal=[0, 0, 1], radius=r, height=0.2)
        self.drop_and_watch(cid, lambda p: math.sqrt(p[0] ** 2 + p[1] ** 2 + p[2] ** 2), r, "capsule")

    def test_cloth_dropped_on_a_plane_should_not_go_below_it(self):
        cid = horizontal_cloth(self.c, 0.5)
        self.c.add_collider(cid, "plane", position=[0, 0, 0], normal=[0, 1, 0])
        self.step_n(cid, 120)
        ys = [p[1] for p in self.c.get(cid).positions]
        self.assertGreaterEqual(min(ys), -TOL)
        self.assertLessEqual(min(ys), 0.01, "the cloth should reach the plane")

    def test_tilted_plane_normal_should_be_normalised(self):
        cid = horizontal_cloth(self.c, 0.5)
        self.c.add_collider(cid, "plane", position=[0, 0, 0], normal=[0, 3, 3])
        self.step_n(cid, 120)
        n = 1 / math.sqrt(2)
        signed = [(y + z) * n for _, y, z in self.c.get(cid).positions]
        self.assertGreaterEqual(min(signed), -TOL)

    def test_moving_and_removing_a_collider_should_take_effect(self):
        cid = horizontal_cloth(self.c, 0.2)
        a = self.c.add_collider(cid, "plane", position=[0, 0, 0])
        b = self.c.add_collider(cid, "sphere", position=[50, 50, 50], radius=0.1)
        self.assertNotEqual(a, b)
        self.step_n(cid, 60)
        self.assertGreaterEqual(min(p[1] for p in self.c.get(cid).positions), -TOL)
        self.c.move_collider(cid, a, position=[0, -1, 0])
        self.step_n(cid, 60)
        ys = [p[1] for p in self.c.get(cid).positions]
        self.assertLess(min(ys), -0.5, "the cloth should follow the lowered plane")
        self.assertGreaterEqual(min(ys), -1 - TOL)
        self.c.remove_collider(cid, a)
        self.step_n(cid, 30)
        self.assertLess(max(p[1] for p in self.c.get(cid).positions), -1.05,
                        "with the plane removed the cloth should fall through")
        reply = send_line(self.c, f'{{"cmd":"moveCollider","instance":{cid},"collider":{a},"position":[0,0,0]}}')
        assert_error(self, reply, "not_found", "collider")
        self.c.remove_collider(cid, b)
        self.assertEqual([i["colliders"] for i in self.c.status()["instances"] if i["instance"] == cid], [0])


if __name__ == "__main__":
    unittest.main()
