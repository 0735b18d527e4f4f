"""create and get: ids, counts, and the initial grid."""

import unittest

from server import ServerTestCase, assert_error, constraint_count, fresh_server, grid, send_line


class CreateIdsTest(unittest.TestCase):
    def test_first_instances_should_get_ids_1_then_2_with_counts(self):
        srv = fresh_server(self)
        with srv.client() as c:
            r1 = c.request("create", type="cloth")
            self.assertEqual(r1["instance"], 1)
            self.assertEqual(r1["particles"], 100)
            self.assertEqual(r1["constraints"], 502)
            r2 = c.request("create", width=7, height=4)
            self.assertEqual(r2["instance"], 2)
            self.assertEqual(r2["particles"], 28)
            self.assertEqual(r2["constraints"], constraint_count(7, 4))


class CreateTest(ServerTestCase):
    def test_constraint_count_should_follow_the_contract_formula(self):
        for w, h in [(2, 2), (3, 2), (2, 3), (10, 10), (13, 5), (64, 64)]:
            with self.subTest(width=w, height=h):
                r = self.c.request("create", width=w, height=h)
                self.assertEqual(r["particles"], w * h)
                self.assertEqual(r["constraints"], constraint_count(w, h))
                self.c.destroy(r["instance"])

    def test_get_should_return_the_default_grid_at_rest(self):
        cid = self.c.create_cloth()
        s = self.c.get(cid)
        self.assertEqual(s.instance, cid)
        self.assertEqual(s.type, "cloth")
        self.assertEqual((s.width, s.height), (10, 10))
        self.assertEqual(s.frame, 0)
        self.assertEqual(s.time, 0)
        self.assertIs(s.enabled, True)
        self.assertIs(s.unstable, False)
        self.assertEqual(s.pinned, [])
        expected = grid(10, 10)
        self.assertEqual(len(s.positions), 100)
        for i, (got, want) in enumerate(zip(s.positions, expected)):
            for k in range(3):
                self.assertAlmostEqual(got[k], want[k], delta=1e-6, msg=f"particle {i} axis {k}")

    def test_get_should_lay_the_grid_along_right_and_down_from_origin(self):
        spec = dict(width=5, height=4, spacing=0.25, origin=[1.0, 2.0, 3.0], right=[0.0, 0.0, 2.0],
                    down=[1.0, -1.0, 0.0])
        cid = self.c.create_cloth(**spec)
        s = self.c.get(cid)
        self.assertEqual((s.width, s.height), (5, 4))
        expected = grid(5, 4, 0.25, spec["origin"], spec["right"], spec["down"])
        self.assertEqual(len(s.positions), 20)
        for i, (got, want) in enumerate(zip(s.positions, expected)):
            for k in range(3):
                self.assertAlmostEqual(got[k], want[k], delta=1e-6, msg=f"particle {i} axis {k}")

    def test_create_should_accept_every_documented_field(self):
        r = self.c.request("create", type="cloth", width=6, height=3, spacing=0.2, mass=2.5, stiffness=1,
                           bend_stiffness=0, damping=0, origin=[0, 1, 0], solver_iterations=256,
                           right=[1, 0, 0], down=[0, -1, 0], gravity=[0, 0, 0])
        self.assertEqual(r["particles"], 18)
        self.assertEqual(r["constraints"], constraint_count(6, 3))

    def test_a_misspelt_option_should_be_a_warning_naming_it(self):
        # Issue 12: accepted, it did nothing, and the cloth only looked wrong.
        # It still runs (forward compatibility: PROTOCOL.md "Unknown
        # members"), and the reply says what was not read.
        for line, warning in (
                ('{"cmd":"create","stretchComplience":0.001}',
                 'unknown member "stretchComplience" (did you mean "stretchCompliance"?)'),
                ('{"cmd":"create","widht":4}', 'unknown member "widht" (did you mean "width"?)'),
                ('{"cmd":"create","type":"softbody","shape":"ball","raduis":0.2}',
                 'unknown member "raduis" (did you mean "radius"?)'),
                ('{"cmd":"create","futureField":{"x":1}}', 'unknown member "futureField"')):
            reply = send_line(self.c, line)
            self.assertIs(reply["ok"], True, reply)
            self.assertEqual(reply["warnings"], [warning])
            self.c.destroy(reply["instance"])
        cid = self.c.create_cloth(width=3, height=3)
        reply = send_line(self.c, '{"cmd":"set","instance":%d,"sleepTreshold":0}' % cid)
        self.assertEqual(reply, {"ok": True, "warnings": [
            'unknown member "sleepTreshold" (did you mean "sleepThreshold"?)']})
        self.c.destroy(cid)

    def test_destroy_should_remove_the_instance_from_status(self):
        cid = self.c.create_cloth(width=3, height=3)
        ids = [i["instance"] for i in self.c.status()["instances"]]
        self.assertIn(cid, ids)
        self.c.destroy(cid)
        ids = [i["instance"] for i in self.c.status()["instances"]]
        self.assertNotIn(cid, ids)


if __name__ == "__main__":
    unittest.main()
