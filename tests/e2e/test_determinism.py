"""The same script gives bit-identical results whatever the worker count,
a large cloth (6,144 particles, stepped by several workers at once) among
them."""

import unittest

from server import fresh_server

SPECS = [
    dict(width=10, height=10),
    dict(width=16, height=12, spacing=0.05, stiffness=0.7, bend_stiffness=0.2, damping=0.02, solver_iterations=8),
    dict(width=7, height=20, spacing=0.08, mass=3, damping=0, origin=[1, 2, 3], right=[0, 0, 1], down=[0, -1, 0]),
    dict(width=32, height=32, spacing=0.03, stiffness=1, bend_stiffness=1, solver_iterations=16,
         origin=[-0.5, 1, -0.5], right=[1, 0, 0], down=[0, 0, 1]),
    dict(width=5, height=5, spacing=0.2, mass=0.1, gravity=[0, -3, 1]),
    dict(width=20, height=8, spacing=0.1, stiffness=0.4, bend_stiffness=0.9, damping=0.1, right=[1, 1, 0],
         down=[0, 0, -1], origin=[0, 3, 0]),
    # Over 4,096 particles: the other workers help its steps (solver/team.c).
    dict(width=96, height=64, spacing=0.02, solver_iterations=6, origin=[-1, 2.5, 0.2]),
]


def run_script(srv):
    """Runs the fixed script; returns {id: (frame, time, payload bytes)} and
    the get replies' positions."""
    with srv.client() as c:
        ids = [c.create_cloth(**spec) for spec in SPECS]
        a, b, d, e, f, g, h = ids
        c.pin(a, list(range(10)))
        c.pin(b, [0, 15], positions=[[0, 0.1, 0], [0.9, 0.1, 0]])
        c.pin(d, [y * 7 for y in range(20)])
        c.pin(g, 0)
        c.wind([1, 0, 2], instance=a)
        c.wind([0, 0, -4], instance=d)
        c.wind([0.5, 0, 0.3])
        c.gravity(b, [0, -5, 0])
        sphere = c.add_collider(e, "sphere", position=[0, 0.5, 0], radius=0.3)
        c.add_collider(e, "plane", position=[0, 0, 0], normal=[0, 1, 0])
        c.add_collider(f, "capsule", position=[0.4, -0.5, 0], normal=[1, 0, 1], radius=0.15, height=1)
        c.add_collider(g, "plane", position=[0, 2, 0], normal=[0.2, 1, 0.1])
        c.pin(h, list(range(0, 96, 6)))
        c.add_collider(h, "sphere", position=[0, 1.8, 0.3], radius=0.4, friction=0.3)
        for i in range(100):
            if i == 30:
                c.move_collider(e, sphere, position=[0.1, 0.4, 0.05])
            if i == 40:
                c.move_collider(e, sphere, normal=[1, 0, 0])
            if i == 50:
                c.unpin(a, [0, 9])
            if i == 60:
                c.enable(f, False)
            if i == 70:
                c.enable(f, True)
            if i == 80:
                c.wind([0, 0, 0])
            if 85 <= i < 90:
                c.step(1 / 120, instances=[a, b, d])
            elif 90 <= i < 95:
                c.step(1 / 60, instances=[h])  # alone: every worker on it
            else:
                c.step(1 / 60)
        c.subscribe(instances=ids)
        frames = {}
        while len(frames) < len(ids):
            fr = c.next_frame(timeout=5)
            frames[fr.instance] = (fr.frame, fr.time, fr.payload)
        gets = {i: c.get(i).reply["positions"] for i in ids}
        return ids, frames, gets


class DeterminismTest(unittest.TestCase):
    def test_results_should_be_bit_identical_with_1_and_4_workers(self):
        results = []
        for workers in (1, 4):
            srv = fresh_server(self, workers=workers)
            self.assertEqual(srv.workers, workers)
            results.append(run_script(srv))
        (ids1, frames1, gets1), (ids4, frames4, gets4) = results
        self.assertEqual(ids1, ids4)
        for i in ids1:
            with self.subTest(instance=i):
                f1, f4 = frames1[i], frames4[i]
                self.assertEqual(f1[0], f4[0], "frame numbers")
                self.assertEqual(f1[1], f4[1], "times")
                self.assertTrue(f1[2] == f4[2], f"positions of instance {i} differ between 1 and 4 workers")
                self.assertEqual(gets1[i], gets4[i])
        # The script did move things (the comparison is not of two rest states).
        self.assertGreater(frames1[ids1[0]][0], 90)


if __name__ == "__main__":
    unittest.main()
