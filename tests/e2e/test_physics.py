"""Physical facts through the server: free fall, curtain, gravity, wind, pins."""

import unittest

from server import ServerTestCase, fresh_server, send_line

G = 9.81
DT = 1 / 60


class PhysicsTest(ServerTestCase):
    def step_n(self, cid, n, dt=DT):
        for _ in range(n):
            self.c.step(dt, instances=[cid])

    def test_free_fall_should_match_half_g_t_squared(self):
        cid = self.c.create_cloth(damping=0, origin=[0, 10, 0])
        before = self.c.get(cid).positions
        self.step_n(cid, 30)
        s = self.c.get(cid)
        self.assertEqual(s.frame, 30)
        self.assertAlmostEqual(s.time, 0.5, delta=1e-5)
        t = 30 * DT
        drop = 0.5 * G * t * t
        for i, (p0, p) in enumerate(zip(before, s.positions)):
            self.assertAlmostEqual(p[1], p0[1] - drop, delta=1e-3, msg=f"particle {i} y")
            self.assertAlmostEqual(p[0], p0[0], delta=1e-4, msg=f"particle {i} x")
            self.assertAlmostEqual(p[2], p0[2], delta=1e-4, msg=f"particle {i} z")

    def test_kinetic_energy_of_a_free_fall_should_be_half_m_v_squared(self):
        # 1 kg in vacuum, undamped, 0.5 s at 60 Hz (6 substeps of h): the
        # Verlet velocity is the one at t - h/2, so 1/2 M (g (t - h/2))^2.
        cid = self.c.create_cloth(airDensity=0, velocityRetention=1, sleepThreshold=0,
                                  origin=[0, 10, 0])
        self.assertEqual(send_line(self.c, f'{{"cmd":"get","instance":{cid}}}')["kineticEnergy"], 0)
        self.step_n(cid, 30)
        h = DT / 6
        want = 0.5 * (G * (30 * DT - h / 2)) ** 2
        got = send_line(self.c, f'{{"cmd":"get","instance":{cid}}}')["kineticEnergy"]
        self.assertAlmostEqual(got, want, delta=1e-3 * want)
        listed = [i for i in send_line(self.c, '{"cmd":"status"}')["instances"] if i["instance"] == cid]
        self.assertEqual(listed[0]["kineticEnergy"], got)

    def test_curtain_pinned_top_row_should_hold_and_hang_to_its_length(self):
        w = h = 10
        spacing = 0.1
        cid = self.c.create_cloth(width=w, height=h, spacing=spacing, origin=[0, 2, 0])
        self.assertEqual(self.c.pin(cid, list(range(w))), w)
        top = self.c.get(cid).positions[:w]
        self.step_n(cid, 300)
        s = self.c.get(cid)
        self.assertEqual(s.frame, 300)
        self.assertEqual(sorted(s.pinned), list(range(w)))
        self.assertEqual(s.positions[:w], top, "pinned particles moved")
        top_y = top[0][1]
        bottom_y = sum(p[1] for p in s.positions[-w:]) / w
        drop = top_y - bottom_y
        expected = (h - 1) * spacing
        self.assertLessEqual(abs(drop - expected), 0.15 * expected,
                             f"bottom row hangs {drop:.4f} m below the top, expected {expected:.4f} m ±15%")

    def test_gravity_command_should_change_the_acceleration(self):
        up = self.c.create_cloth(damping=0)
        down = self.c.create_cloth(damping=0)
        self.c.gravity(up, [0, 4, 0])
        p_up, p_down = self.c.get(up).positions, self.c.get(down).positions
        for _ in range(30):
            self.c.step(DT, instances=[up, down])
        t = 30 * DT
        s_up, s_down = self.c.get(up), self.c.get(down)
        for p0, p in zip(p_up, s_up.positions):
            self.assertAlmostEqual(p[1], p0[1] + 0.5 * 4 * t * t, delta=1e-3)
        for p0, p in zip(p_down, s_down.positions):
            self.assertAlmostEqual(p[1], p0[1] - 0.5 * G * t * t, delta=1e-3)

    def test_wind_should_push_the_cloth_downwind(self):
        cid = self.c.create_cloth(damping=0, gravity=[0, 0, 0])
        echo = self.c.wind([0, 0, 3], instance=cid)
        self.assertEqual(echo, [0, 0, 3])
        before = self.c.get(cid).positions
        self.step_n(cid, 30)
        after = self.c.get(cid).positions
        dz = [p[2] - p0[2] for p0, p in zip(before, after)]
        self.assertTrue(all(d > 0 for d in dz), "every particle should move along +z")
        self.assertGreater(sum(dz) / len(dz), 0.01)

    def test_pin_at_position_should_hold_there_and_unpin_should_release(self):
        cid = self.c.create_cloth(width=4, height=4)
        self.assertEqual(self.c.pin(cid, [0, 3], positions=[[5, 5, 5], [5.3, 5, 5]]), 2)
        self.step_n(cid, 10)
        s = self.c.get(cid)
        self.assertEqual(sorted(s.pinned), [0, 3])
        self.assertEqual(s.positions[0], (5, 5, 5))
        for got, want in zip(s.positions[3], (5.3, 5, 5)):
            self.assertAlmostEqual(got, want, delta=1e-6)
        self.assertEqual(self.c.unpin(cid, [0, 3]), 2)
        self.step_n(cid, 30)
        s = self.c.get(cid)
        self.assertEqual(s.pinned, [])
        self.assertLess(s.positions[0][1], 4.9, "an unpinned particle should fall")

    def test_pin_in_place_should_keep_the_current_position(self):
        cid = self.c.create_cloth(width=5, height=5)
        self.step_n(cid, 5)
        p = self.c.get(cid).positions[12]
        self.assertEqual(self.c.pin(cid, 12), 1)
        self.step_n(cid, 20)
        s = self.c.get(cid)
        self.assertEqual(s.positions[12], p)
        self.assertEqual(s.pinned, [12])


class GlobalWindTest(unittest.TestCase):
    def test_global_wind_should_add_to_each_instances_own(self):
        srv = fresh_server(self)
        with srv.client() as c:
            calm = c.create_cloth(damping=0, gravity=[0, 0, 0])
            pushed = c.create_cloth(damping=0, gravity=[0, 0, 0])
            c.wind([0, 0, -3], instance=calm)
            self.assertEqual(c.wind([0, 0, 3]), [0, 0, 3])
            self.assertEqual(c.status()["globalWind"], [0, 0, 3])
            b_calm, b_pushed = c.get(calm).positions, c.get(pushed).positions
            for _ in range(30):
                c.step(DT)
            a_calm, a_pushed = c.get(calm).positions, c.get(pushed).positions
            for p0, p in zip(b_calm, a_calm):
                for k in range(3):
                    self.assertAlmostEqual(p[k], p0[k], delta=1e-5, msg="own -3 + global +3 is no wind")
            self.assertTrue(all(p[2] > p0[2] for p0, p in zip(b_pushed, a_pushed)))


if __name__ == "__main__":
    unittest.main()
