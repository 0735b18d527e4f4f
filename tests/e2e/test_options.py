"""The solver options through the server: create and set, transforms and
attachments, collider friction and coupling, the step reply's impulses and
sleeping, and the errors for bad values."""

import math

from server import ServerTestCase, assert_error, send_line

DT = 1 / 60


class OptionsTest(ServerTestCase):
    def check(self, line, code, field):
        assert_error(self, send_line(self.c, line), code, field)

    def test_bad_option_values_should_name_the_field(self):
        cid = self.c.create_cloth()
        for line, field in [
            ('{"cmd":"create","stretchCompliance":-1}', "stretchCompliance"),
            ('{"cmd":"create","bendCompliance":1e999}', "bendCompliance"),
            ('{"cmd":"create","substeps":-1}', "substeps"),
            ('{"cmd":"create","substeps":65}', "substeps"),
            ('{"cmd":"create","velocityRetention":0}', "velocityRetention"),
            ('{"cmd":"create","thickness":-0.1}', "thickness"),
            ('{"cmd":"create","particleMass":0}', "particleMass"),
            ('{"cmd":"create","windModel":"gale"}', "windModel"),
            ('{"cmd":"create","tethers":1}', "tethers"),
            ('{"cmd":"create","tetherScale":0.5}', "tetherScale"),
            ('{"cmd":"create","stiffness":0.5,"stretchCompliance":0.1}', "stretchCompliance"),
            ('{"cmd":"create","iterations":4,"solverIterations":4}', "iterations"),
            (f'{{"cmd":"set","instance":{cid},"width":20}}', "width"),
            (f'{{"cmd":"set","instance":{cid},"sleepThreshold":-1}}', "sleepThreshold"),
            (f'{{"cmd":"addCollider","instance":{cid},"type":"sphere","coupling":1.5}}', "coupling"),
            (f'{{"cmd":"addCollider","instance":{cid},"type":"sphere","friction":-1}}', "friction"),
            (f'{{"cmd":"transform","instance":{cid},"name":"","position":[0,0,0]}}', "name"),
            (f'{{"cmd":"transform","instance":{cid},"name":"a","position":[0,0,0],"rotation":[0,0,0,0]}}',
             "rotation"),
            (f'{{"cmd":"transform","instance":{cid},"name":"a","position":[0,0,0],"rotation":[0,0,1]}}',
             "rotation"),
            (f'{{"cmd":"transform","instance":{cid},"name":"{"x" * 32}","position":[0,0,0]}}', "name"),
        ]:
            with self.subTest(line=line):
                self.check(line, "invalid_argument", field)
        # Unknown names are not_found.
        self.check(f'{{"cmd":"attach","instance":{cid},"name":"ghost","particle":0}}', "not_found", "name")
        self.check(f'{{"cmd":"addCollider","instance":{cid},"type":"sphere","attachment":"ghost"}}',
                   "not_found", "attachment")
        self.check('{"cmd":"set","instance":4242,"substeps":2}', "not_found", "instance")

    def test_set_should_change_a_live_instance(self):
        cid = self.c.create_cloth(width=8, height=8, stretch_compliance=0.001, substeps=2)
        self.c.step(DT)
        self.c.request("set", instance=cid, stiffness=0.5, substeps=4, windModel="constant")
        self.c.wind([3, 0, 0], instance=cid)
        before = self.c.get(cid).positions
        self.c.step(DT)
        after = self.c.get(cid).positions
        # A constant wind of 3 m/s^2 now pushes every free particle along +x.
        self.assertTrue(all(a[0] > b[0] for a, b in zip(after, before)))

    def test_automatic_substeps_should_step_as_ceil_dt_times_the_solver_frequency(self):
        # substeps 0: 360 Hz by default, so 6 substeps at 60 Hz and 12 at
        # 30 Hz; the same bits as the explicit counts.
        def pair(dt, explicit, **auto_options):
            auto = self.c.create_cloth(substeps=0, solver_iterations=1, origin=[0, 3, 0], **auto_options)
            fixed = self.c.create_cloth(substeps=explicit, solver_iterations=1, origin=[0, 3, 0])
            for c in (auto, fixed):
                self.c.pin(c, [0, 9])
            for _ in range(20):
                self.c.step(dt, instances=[auto, fixed])
            got = self.c.get(auto).positions, self.c.get(fixed).positions
            for c in (auto, fixed):  # the class shares one server
                self.c.destroy(c)
            return got
        a, f = pair(1 / 60, 6)
        self.assertEqual(a, f)
        a, f = pair(1 / 30, 12)
        self.assertEqual(a, f)
        a, f = pair(1 / 60, 2, solver_frequency=120)
        self.assertEqual(a, f)

    def test_wind_models_should_be_named_in_get_and_in_the_error(self):
        # "aero" (the default) is the flat plate; "dragLift" the model
        # before it, kept; "constant" the seed's acceleration. A 0.7 m flag
        # on a pole in a 6 m/s wind, beside the same flag with no air.
        flags = {}
        for name, kw in (("aero", {}), ("dragLift", {"wind_model": "dragLift"}),
                         ("constant", {"wind_model": "constant"}), ("vacuum", {"air_density": 0})):
            cid = self.c.create_cloth(width=8, height=6, sleep_threshold=0, **kw)
            self.c.pin(cid, [0, 8, 16, 24, 32, 40])
            self.c.wind([6, 0, 2], instance=cid)
            self.assertEqual(self.c.request("get", instance=cid)["windModel"],
                             "aero" if name == "vacuum" else name)
            flags[name] = cid
        for _ in range(20):
            self.c.step(DT)
        tips = {m: self.c.get(cid).positions[47] for m, cid in flags.items()}
        # The wind's z part blows the flag out of its plane (measured: aero
        # 0.14 m, dragLift 0.08 m at the tip), each model its own way; with
        # no air it stays in its plane.
        self.assertEqual(tips["vacuum"][2], 0)
        for model in ("aero", "dragLift"):
            self.assertGreater(tips[model][2], 0.05, model)
        self.assertNotEqual(tips["aero"], tips["dragLift"])
        reply = send_line(self.c, '{"cmd":"create","windModel":"gale"}')
        assert_error(self, reply, "invalid_argument", "windModel")
        self.assertIn('"aero", "constant" or "dragLift"', reply["error"]["message"])

    def test_attached_particles_should_follow_their_transform(self):
        cid = self.c.create_cloth(width=10, height=10, spacing=0.1, origin=[-0.45, 2, 0])
        self.c.request("transform", instance=cid, name="shoulders", position=[0, 2, 0])
        reply = self.c.request("attach", instance=cid, name="shoulders", particles=[0, 9],
                               offsets=[[-0.45, 0, 0], [0.45, 0, 0]])
        self.assertEqual(reply["attached"], 2)
        # Turn 90 degrees about y and walk 1 m along x.
        s = math.sqrt(0.5)
        self.c.request("transform", instance=cid, name="shoulders", position=[1, 2, 0], rotation=[0, s, 0, s])
        got = self.c.get(cid)
        self.assertEqual(sorted(got.pinned), [0, 9])
        for index, local in [(0, -0.45), (9, 0.45)]:
            x, y, z = got.positions[index]
            # R_y(90) maps (l, 0, 0) to (0, 0, -l); within float rounding.
            self.assertAlmostEqual(x, 1.0, places=5)
            self.assertAlmostEqual(y, 2.0, places=5)
            self.assertAlmostEqual(z, -local, places=5)
        for _ in range(3):
            self.c.step(DT)
        self.assertAlmostEqual(self.c.get(cid).positions[9][2], -0.45, places=5)

    def test_attached_collider_should_follow_its_transform(self):
        cid = self.c.create_cloth()
        self.c.request("transform", instance=cid, name="hand", position=[1, 0, 0])
        col = self.c.request("addCollider", instance=cid, type="sphere", position=[0, 0.5, 0], radius=0.1,
                             attachment="hand")["collider"]
        self.c.request("transform", instance=cid, name="hand", position=[2, 0, 0])
        got = self.c.request("get", instance=cid)["colliders"]
        self.assertEqual([c["collider"] for c in got], [col])
        self.assertEqual(got[0]["position"], [2, 0.5, 0])

    def test_step_reply_should_carry_impulses_of_coupled_colliders(self):
        # A 12x12 sheet dropped on an off-centre sphere with coupling 1: the
        # sphere is pushed down and away from the sheet's centre. (The exact
        # momentum balance is proven in tests/test_solver_contact.c.)
        n = 12
        cid = self.c.create_cloth(width=n, height=n, spacing=0.05, down=[0, 0, 1], origin=[-0.275, 0.5, -0.275],
                                  damping=0, air_density=0, particle_mass=1 / (n * n), sleep_threshold=0)
        col = self.c.request("addCollider", instance=cid, type="sphere", position=[0.05, 0, 0], radius=0.3,
                             coupling=1)["collider"]
        one_way = self.c.request("addCollider", instance=cid, type="plane", position=[0, -5, 0])["collider"]
        total = [0.0, 0.0, 0.0]
        for _ in range(50):
            reply = self.c.step(DT)
            self.assertEqual(reply["sleeping"], [])
            for imp in reply["impulses"]:
                # Only the coupled collider is reported, never the plane.
                self.assertEqual((imp["instance"], imp["collider"]), (cid, col))
                self.assertNotEqual(imp["collider"], one_way)
                total = [t + v for t, v in zip(total, imp["linear"])]
        self.assertLess(total[1], -1.0)  # pushed down (N s)
        self.assertGreater(total[0], 0.05)  # and along +x, away from the sheet's centre

    def test_a_settled_cloth_should_sleep_and_wake_on_a_command(self):
        cid = self.c.create_cloth(width=6, height=6)
        self.c.pin(cid, list(range(6)))  # hangs still from the start
        asleep_at = None
        for i in range(120):
            if cid in self.c.step(DT)["sleeping"]:
                asleep_at = i
                break
        self.assertIsNotNone(asleep_at, "a still curtain should fall asleep within 2 s")
        self.assertTrue(self.c.get(cid).sleeping if hasattr(self.c.get(cid), "sleeping")
                        else self.c.request("get", instance=cid)["sleeping"])
        self.assertIn("[SLEEPING]", self.c.status()["text"])
        self.c.wind([0, 0, 5], instance=cid)
        self.assertEqual(self.c.step(DT)["sleeping"], [])
