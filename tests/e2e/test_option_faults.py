"""One definition per option and per command (issue 9, item 10), bounded
step work (item 5) and the total particle budget (item 4), through the real
server.

Before the option table, the server guessed the field of a solver error:
`create {"thickness":5000}` was blamed on the origin, values near 3e38 got
the same wrong message, `set` said "the options do not fit together", and a
collider at 3e38 was accepted. Now the solver names the field and the
server reports it verbatim."""

import unittest

from server import ServerTestCase, assert_error, assert_still_works, send_line

WORLD_BOX = "outside the world box (|x|, |y|, |z| <= 100000 m)"


class OptionFaultTest(ServerTestCase):
    def expect(self, line, code, message):
        reply = send_line(self.c, line)
        assert_error(self, reply, code, message=message)
        return reply

    def test_thickness_5000_names_thickness(self):
        self.expect('{"cmd":"create","thickness":5000}', "invalid_argument",
                    "thickness: must be a number in [0, 1000]")

    def test_huge_values_name_their_own_field(self):
        self.expect('{"cmd":"create","selfDistance":1e30}', "invalid_argument",
                    "selfDistance: must be a number in [0, 1000]")
        self.expect('{"cmd":"create","tetherScale":3e38}', "invalid_argument",
                    "tetherScale: must be a number in [1, 1000]")
        self.expect('{"cmd":"create","airDensity":3e38}', "invalid_argument",
                    "airDensity: must be a number in [0, 10000]")

    def test_set_names_the_field_it_refuses(self):
        cid = self.c.create_cloth(4, 4)
        self.expect(f'{{"cmd":"set","instance":{cid},"thickness":5000}}', "invalid_argument",
                    "thickness: must be a number in [0, 1000]")
        self.expect(f'{{"cmd":"set","instance":{cid},"selfDistance":0.5}}', "invalid_argument",
                    "selfDistance: must be at most the spacing (0.1 m)")
        self.assertIs(send_line(self.c, f'{{"cmd":"set","instance":{cid},"selfDistance":0.08}}')["ok"], True)

    def test_a_collider_at_3e38_names_its_position_once(self):
        cid = self.c.create_cloth(4, 4)
        self.expect(f'{{"cmd":"addCollider","instance":{cid},"type":"sphere","position":[3e38,0,0]}}',
                    "invalid_argument", "position: " + WORLD_BOX)
        col = self.c.request("addCollider", instance=cid, type="sphere")["collider"]
        self.expect(f'{{"cmd":"moveCollider","instance":{cid},"collider":{col},"position":[0,3e38,0]}}',
                    "invalid_argument", "position: " + WORLD_BOX)
        self.expect(f'{{"cmd":"addCollider","instance":{cid},"type":"sphere","radius":3e38}}',
                    "invalid_argument", "radius: must be a number in [0, 100000]")
        self.assertEqual(self.c.status()["instances"][-1]["colliders"], 1)

    def test_the_origin_is_blamed_only_when_the_cloth_reaches_out(self):
        self.expect('{"cmd":"create","origin":[99999.5,0,0]}', "invalid_argument",
                    "origin: the cloth reaches outside the world box (|x|, |y|, |z| <= 100000 m)")

    def test_ping_answers_pong(self):
        # ping reads no "instance": it answers, and says so.
        self.assertEqual(send_line(self.c, '{"id":"p","cmd":"ping","instance":99}'),
                         {"id": "p", "ok": True, "pong": True,
                          "warnings": ['unknown member "instance"']})


class StepWorkTest(ServerTestCase):
    SERVER_ARGS = ("--max-step-work", "100000")

    def test_create_and_set_over_the_step_work_limit_are_refused(self):
        line = '{"cmd":"create","width":100,"height":100,"substeps":4,"iterations":4}'
        assert_error(self, send_line(self.c, line), "limit_exceeded",
                     message="substeps, iterations: 10000 particles x 4 substeps x 4 iterations = "
                             "160000 exceeds the step work limit of 100000 (--max-step-work)")
        cid = self.c.create_cloth(100, 100, substeps=2, iterations=5)  # exactly 100000
        reply = send_line(self.c, f'{{"cmd":"set","instance":{cid},"substeps":3}}')
        assert_error(self, reply, "limit_exceeded",
                     message="substeps, iterations: 10000 particles x 3 substeps x 5 iterations = "
                             "150000 exceeds the step work limit of 100000 (--max-step-work)")
        self.c.set(cid, substeps=1, iterations=10)
        soft = '{"cmd":"create","type":"softbody","shape":"box","cells":[20,20,20]}'
        assert_error(self, send_line(self.c, soft), "limit_exceeded", "substeps, iterations")
        self.c.step(1 / 60)  # a step is never refused
        assert_still_works(self, self.c)


class TotalParticlesTest(ServerTestCase):
    SERVER_ARGS = ("--max-total-particles", "100000", "--max-particles", "40000")

    def test_the_total_is_enforced_at_create_and_a_destroy_frees_room(self):
        ids = [self.c.create_cloth(200, 200) for _ in range(2)]  # 80000
        line = '{"cmd":"create","width":200,"height":200}'
        assert_error(self, send_line(self.c, line), "limit_exceeded",
                     message="width, height: 40000 particles would bring the total to 120000, "
                             "over the limit of 100000 (--max-total-particles)")
        small = self.c.create_cloth(100, 200)  # 20000: exactly 100000
        assert_error(self, send_line(self.c, '{"cmd":"create","width":2,"height":2}'),
                     "limit_exceeded", "width, height")
        soft = '{"cmd":"create","type":"softbody","vertices":[[0,0,0],[1,0,0],[0,1,0],[0,0,1]],"tetrahedra":[0,1,2,3]}'
        assert_error(self, send_line(self.c, soft), "limit_exceeded",
                     message="vertices: 4 particles would bring the total to 100004, "
                             "over the limit of 100000 (--max-total-particles)")
        self.c.destroy(ids[0])
        ids[0] = self.c.create_cloth(200, 200)
        for cid in ids + [small]:
            self.c.destroy(cid)


if __name__ == "__main__":
    unittest.main()
