"""The skeleton's colliders against the real clothd (issue 14): a tapered
capsule (the hull of two spheres of different radii) and an oriented box.
Cloth dropped on each stays outside it (distances from references written
here, not from the server), `get` lists their fields, a box turned every
step pushes the cloth without letting it through, a box attached to a
transform turns with it, bad fields are refused with their exact
messages, and a large cloth over both gives the same bits with 1 or 4
workers."""

import math
import os
import subprocess
import sys
import unittest

from server import REPO, ServerTestCase, assert_error, fresh_server, send_line

DT = 1 / 60
TOL = 1e-4


def sub(a, b):
    return [a[i] - b[i] for i in range(3)]


def dot(a, b):
    return sum(a[i] * b[i] for i in range(3))


def length(a):
    return math.sqrt(dot(a, a))


def qrot(q, v):
    """v turned by the unit quaternion q = [x, y, z, w]."""
    x, y, z, w = q
    tx, ty, tz = 2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])
    return [v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz), v[2] + w * tz + (x * ty - y * tx)]


def axis_angle(axis, angle):
    n = length(axis)
    s = math.sin(angle / 2) / n
    return [axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2)]


def tapered_sd(p, centre, axis, r1, r2, height):
    """Signed distance to the hull of two spheres (radius r1 at the -axis
    end, r2 at the +axis end, height counting both caps), in the plane of
    the axis and p: the section is two circles and their common tangent,
    whose normal is (c, s) with s = (r1 - r2) / L; a point whose foot on
    that tangent (u = c y - s x) falls before or past it is nearest to a
    circle. (The unit tests check the same hull against a brute force.)"""
    n = [a / length(axis) for a in axis]
    big_l = height - r1 - r2
    a = [centre[i] - n[i] * big_l / 2 for i in range(3)]
    d = sub(p, a)
    y = dot(d, n)
    x = length([d[i] - n[i] * y for i in range(3)])
    s = (r1 - r2) / big_l
    c = math.sqrt(1 - s * s)
    u = c * y - s * x
    if u < 0:
        return math.hypot(x, y) - r1
    if u > c * big_l:
        return math.hypot(x, y - big_l) - r2
    return c * x + s * y - r1


def box_sd(p, centre, half, q):
    inv = [-q[0], -q[1], -q[2], q[3]]
    l = qrot(inv, sub(p, centre))
    o = [abs(l[i]) - half[i] for i in range(3)]
    return length([max(v, 0) for v in o]) + min(max(o), 0)


def tablecloth(c, n, spacing, y, **extra):
    h = (n - 1) * spacing / 2
    return c.create_cloth(width=n, height=n, spacing=spacing, origin=[-h, y, -h], right=[1, 0, 0],
                          down=[0, 0, 1], **extra)


class SkeletonCollidersTest(ServerTestCase):
    def step_n(self, cid, n):
        for _ in range(n):
            self.c.step(DT, instances=[cid])

    def test_cloth_dropped_on_a_tapered_capsule_should_rest_outside_it(self):
        thickness = 0.01
        cid = tablecloth(self.c, 12, 0.08, 0.45, thickness=thickness, solver_iterations=8)
        centre, axis, r1, r2, height = [0, 0, 0], [0, 0, 1], 0.22, 0.08, 1.2
        col = self.c.add_tapered_capsule(cid, [0, 0, -0.45], [0, 0, 0.45], r1, r2, friction=0.3)
        nearest = math.inf
        for k in range(12):
            self.step_n(cid, 10)
            for i, p in enumerate(self.c.get(cid).positions):
                sd = tapered_sd(p, centre, axis, r1, r2, height)
                nearest = min(nearest, sd)
                self.assertGreaterEqual(sd, thickness - TOL, f"step {10 * k + 10}: particle {i} at {p}")
        self.assertLess(nearest, thickness + 0.003, "the cloth never reached the tapered capsule")
        listed = [x for x in self.c.get(cid).colliders if x["collider"] == col]
        self.assertEqual(len(listed), 1)
        self.assertEqual(listed[0]["type"], "taperedCapsule")
        self.assertAlmostEqual(listed[0]["radius2"], r2, places=6)
        self.assertAlmostEqual(listed[0]["radius"], r1, places=6)
        self.assertAlmostEqual(listed[0]["height"], height, places=6)
        self.assertEqual(listed[0]["normal"], [0, 0, 1])

    def test_cloth_dropped_on_a_rotated_box_should_rest_outside_it(self):
        thickness = 0.01
        cid = tablecloth(self.c, 12, 0.08, 0.5, thickness=thickness, solver_iterations=8)
        centre, half = [0.05, 0, 0], [0.35, 0.15, 0.3]
        q = axis_angle([0.3, 0, 1], math.radians(25))
        col = self.c.add_collider(cid, "box", position=centre, half_extents=half, rotation=q, friction=0.2)
        nearest = math.inf
        for k in range(12):
            self.step_n(cid, 10)
            for i, p in enumerate(self.c.get(cid).positions):
                sd = box_sd(p, centre, half, q)
                nearest = min(nearest, sd)
                self.assertGreaterEqual(sd, thickness - TOL, f"step {10 * k + 10}: particle {i} at {p}")
        self.assertLess(nearest, thickness + 0.003, "the cloth never reached the box")
        (listed,) = [x for x in self.c.get(cid).colliders if x["collider"] == col]
        self.assertEqual(listed["type"], "box")
        for got, want in zip(listed["halfExtents"], half):
            self.assertAlmostEqual(got, want, places=6)
        for got, want in zip(listed["rotation"], q):
            self.assertAlmostEqual(got, want, places=6)
        for got, want in zip(listed["normal"], qrot(q, [0, 1, 0])):  # its own +y
            self.assertAlmostEqual(got, want, places=6)

    def test_box_turned_every_step_should_push_the_cloth_without_tunnelling(self):
        # A free sheet (1 m, no gravity) over a paddle pivoting about z from
        # flat to 60 degrees in 10 moveCollider turns: 0.105 rad a step, its
        # face 0.047 m a step at x = 0.45, more than half its thickness.
        cid = self.c.create_cloth(width=21, height=21, spacing=0.05, origin=[-0.5, 0, -0.5], right=[1, 0, 0],
                                  down=[0, 0, 1], gravity=[0, 0, 0], substeps=8, air_density=0,
                                  sleep_threshold=0)
        pivot, half = [0, -0.1, 0], [1.0, 0.03, 0.6]
        paddle = self.c.add_collider(cid, "box", position=pivot, half_extents=half)
        q = [0, 0, 0, 1]
        for step in range(1, 11):
            q = axis_angle([0, 0, 1], step * (math.pi / 3) / 10)
            self.c.move_collider(cid, paddle, rotation=q)
            self.c.step(DT, instances=[cid])
        pos = self.c.get(cid).positions
        inv = [-q[0], -q[1], -q[2], q[3]]
        over = [i for i in range(441) if 0.15 < -0.5 + 0.05 * (i % 21) < 0.45]
        for i in over:
            local = qrot(inv, sub(pos[i], pivot))
            self.assertGreater(local[1], 0, f"particle {i} at {pos[i]} went through the paddle")
            self.assertGreaterEqual(box_sd(pos[i], pivot, half, q), -TOL)
        self.assertGreater(max(p[1] for p in pos), 0.3, "the paddle did not lift the sheet")

    def test_box_attached_to_a_transform_should_turn_with_it(self):
        cid = tablecloth(self.c, 4, 0.1, 5)
        self.c.transform(cid, "hips", [1, 1, 1])
        col = self.c.add_collider(cid, "box", position=[0.3, 0, 0], half_extents=[0.5, 0.05, 0.5],
                                  rotation=[0, 0, 0, 1], attachment="hips")
        quarter = axis_angle([0, 0, 1], math.pi / 2)
        self.c.transform(cid, "hips", [1, 1, 1], rotation=quarter)
        (listed,) = [x for x in self.c.get(cid).colliders if x["collider"] == col]
        for got, want in zip(listed["position"], [1, 1.3, 1]):
            self.assertAlmostEqual(got, want, places=5)
        for got, want in zip(listed["rotation"], quarter):
            self.assertAlmostEqual(got, want, places=6)
        for got, want in zip(listed["normal"], [-1, 0, 0]):
            self.assertAlmostEqual(got, want, places=6)

    def test_bad_fields_should_be_refused_with_their_messages(self):
        cid = tablecloth(self.c, 3, 0.1, 1)
        box = self.c.add_collider(cid, "box")
        limb = self.c.add_collider(cid, "taperedCapsule", radius=0.2, radius2=0.1)
        cases = [
            ('"type":"taperedCapsule","radius2":-0.5', "radius2: must be a number in [0, 100000]"),
            ('"type":"box","halfExtents":[1,0,1]', "halfExtents: each must be a number in (0, 100000]"),
            ('"type":"box","halfExtents":[-1,1,1]', "halfExtents: each must be a number in (0, 100000]"),
            ('"type":"box","rotation":[0,0,0,0]', "rotation: must not be zero-length"),
            ('"type":"box","rotation":[0,0,0,2]',
             "rotation: must be a unit quaternion (length within 0.001 of 1, not 2)"),
            ('"type":"box","rotation":[0,0,1]', "rotation: must be a quaternion [x, y, z, w] of 4 finite numbers"),
            ('"type":"box","normal":[0,1,0]', 'normal: a box turns by "rotation", not "normal"'),
            ('"type":"capsule","rotation":[0,0,0,1]',
             'rotation: only a box takes a rotation (a capsule turns by "normal")'),
        ]
        for fields, message in cases:
            reply = send_line(self.c, f'{{"cmd":"addCollider","instance":{cid},{fields}}}')
            assert_error(self, reply, "invalid_argument", message=message)
        moves = [
            (box, '"normal":[0,1,0]', f'normal: collider {box} is a box, which turns by "rotation"'),
            (limb, '"rotation":[0,0,0,1]', f'rotation: collider {limb} is a taperedCapsule, which turns by "normal"'),
            (box, '"rotation":[1,1,0,0]', "rotation: must be a unit quaternion (length within 0.001 of 1, not 1.41421)"),
        ]
        for collider, fields, message in moves:
            reply = send_line(self.c, f'{{"cmd":"moveCollider","instance":{cid},"collider":{collider},{fields}}}')
            assert_error(self, reply, "invalid_argument", message=message)
        # Nothing was added by the refused requests.
        self.assertEqual(len(self.c.get(cid).colliders), 2)


def run_large(srv):
    """A 64 x 72 curtain (4,608 particles: several workers step it) over a
    turning box and a tapered capsule; the positions after 40 steps."""
    with srv.client() as c:
        cid = c.create_cloth(width=64, height=72, spacing=0.02, origin=[-0.64, 1.6, 0], substeps=2,
                             thickness=0.005, sleep_threshold=0)
        c.pin(cid, list(range(0, 64, 7)))
        box = c.add_collider(cid, "box", position=[-0.2, 0.9, 0.2], half_extents=[0.3, 0.1, 0.25],
                             rotation=axis_angle([1, 0, 1], 0.3), friction=0.3, static_friction=0.5)
        c.add_tapered_capsule(cid, [0.35, 1.3, 0.05], [0.45, 0.7, 0.25], 0.15, 0.06, friction=0.4)
        for step in range(40):
            c.move_collider(cid, box, rotation=axis_angle([1, 0, 1], 0.3 + 0.05 * step))
            c.step(DT, instances=[cid])
        return c.get(cid).positions


class SkeletonCollidersDeterminismTest(unittest.TestCase):
    def test_a_large_cloth_over_both_should_give_the_same_bits_with_1_or_4_workers(self):
        one = run_large(fresh_server(self, workers=1))
        four = run_large(fresh_server(self, workers=4))
        self.assertEqual(len(one), 64 * 72)
        self.assertEqual(one, four)


class SkeletonCapeExampleTest(unittest.TestCase):
    def test_the_walking_character_example_should_keep_the_cape_out_of_the_body(self):
        srv = fresh_server(self)
        script = os.path.join(REPO, "clients", "python", "examples", "skeleton_cape.py")
        run = subprocess.run([sys.executable, script, "--port", str(srv.port), "--quick"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        rows = [line.split() for line in run.stdout.splitlines() if line[:6].strip().replace(".", "").isdigit()]
        walking = [float(r[3]) for r in rows if r[1] == "walk"]
        self.assertTrue(walking and min(walking) > 0.1, f"the hem should trail while walking: {run.stdout}")
        self.assertGreaterEqual(min(float(r[-1]) for r in rows), 0.01 - 1e-3, run.stdout)
        self.assertIn("no more than", run.stdout)


if __name__ == "__main__":
    unittest.main()
