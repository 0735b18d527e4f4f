"""Every bad request gets its exact error code, a message naming the field,
and leaves the connection working."""

import json
import unittest

from server import ServerTestCase, assert_error, assert_still_works, send_line


class ErrorsTest(ServerTestCase):
    def check(self, line, code, field=None, message=None, prefix=None):
        """Sends `line` (str or dict), asserts the error, then that the
        connection still answers a status request."""
        if not isinstance(line, str):
            line = json.dumps(line, separators=(",", ":"))
        with self.subTest(line=line[:120]):
            reply = send_line(self.c, line)
            assert_error(self, reply, code, field, message, prefix)
            assert_still_works(self, self.c)
            return reply

    def test_malformed_lines_should_be_parse_errors_without_id(self):
        for line in ["not json", "[1,2]", '"cmd"', "42", "{", '{"cmd":"status"', "{'cmd':'status'}", "null"]:
            reply = self.check(line, "parse_error")
            self.assertNotIn("id", reply)

    def test_missing_or_non_string_cmd_should_be_invalid_argument(self):
        self.check({"id": 3}, "invalid_argument", "cmd")
        self.check({"cmd": 5}, "invalid_argument", "cmd")
        self.check({"cmd": None}, "invalid_argument", "cmd")

    def test_unknown_command_should_name_it(self):
        self.check({"cmd": "fly"}, "unknown_command",
                   message='unknown command "fly" (hello lists the commands)')
        self.check({"cmd": "creat"}, "unknown_command",
                   message='unknown command "creat" (did you mean "create"?)')
        self.check({"cmd": "Create"}, "unknown_command")

    def test_bad_create_fields_should_be_invalid_argument(self):
        cases = [
            ({"width": 1}, "width"), ({"width": 2.5}, "width"), ({"width": "10"}, "width"),
            ({"width": -3}, "width"), ({"width": True}, "width"), ({"height": 1}, "height"),
            ({"height": 1e10}, "height"),
            ({"spacing": 0}, "spacing"), ({"spacing": -0.1}, "spacing"), ({"spacing": "0.1"}, "spacing"),
            ({"mass": 0}, "mass"), ({"stiffness": 1.5}, "stiffness"), ({"stiffness": -0.01}, "stiffness"),
            ({"bendStiffness": 2}, "bendStiffness"), ({"damping": 1.01}, "damping"),
            ({"solverIterations": 0}, "solverIterations"), ({"solverIterations": 257}, "solverIterations"),
            ({"solverIterations": 4.5}, "solverIterations"),
            ({"origin": [1, 2]}, "origin"), ({"origin": [1, 2, 3, 4]}, "origin"), ({"origin": [1, 2, "3"]}, "origin"),
            ({"origin": "0,0,0"}, "origin"), ({"right": [0, 0, 0]}, "right"), ({"down": [0, 0, 0]}, "down"),
            ({"gravity": [0, None, 0]}, "gravity"), ({"type": "rope"}, "type"),
        ]
        for fields, field in cases:
            self.check({"cmd": "create", **fields}, "invalid_argument", field)
        self.check({"cmd": "create", "type": "rope"}, "invalid_argument",
                   message='type: unknown instance type "rope" (one of "cloth" or "softbody")')

    def test_number_literals_that_overflow_should_be_rejected_as_not_finite(self):
        self.check('{"cmd":"create","spacing":1e999}', "invalid_argument", "spacing")
        self.check('{"cmd":"create","origin":[1e999,0,0]}', "invalid_argument", "origin")
        self.check('{"cmd":"create","gravity":[0,-1e999,0]}', "invalid_argument", "gravity")
        self.check('{"cmd":"step","dt":-1e999}', "invalid_argument", "dt")
        self.check('{"cmd":"create","width":1e999}', "invalid_argument", "width")

    def test_bad_collider_fields_should_be_invalid_argument(self):
        cid = self.c.create_cloth()
        base = {"cmd": "addCollider", "instance": cid}
        self.check({**base, "type": "sphere", "radius": -1}, "invalid_argument", "radius")
        self.check({**base, "type": "plane", "normal": [0, 0, 0]}, "invalid_argument", "normal")
        self.check({**base, "type": "capsule", "height": -1}, "invalid_argument", "height")
        self.check({**base, "type": "cube"}, "invalid_argument", "type")
        self.check({**base}, "invalid_argument", "type")
        self.check({**base, "type": "sphere", "position": [0, 0]}, "invalid_argument", "position")
        col = self.c.add_collider(cid, "sphere")
        self.check({"cmd": "moveCollider", "instance": cid, "collider": col}, "invalid_argument")
        self.check({"cmd": "moveCollider", "instance": cid, "collider": col, "normal": [0, 0, 0]},
                   "invalid_argument", "normal")
        self.check({"cmd": "moveCollider", "instance": cid, "collider": col + 1, "position": [0, 0, 0]},
                   "not_found", "collider")
        self.check({"cmd": "removeCollider", "instance": cid, "collider": 9999}, "not_found",
                   message=f"collider: no collider 9999 on instance {cid}")

    def test_bad_pins_should_be_invalid_argument(self):
        cid = self.c.create_cloth(width=10, height=10)
        self.check({"cmd": "pin", "instance": cid, "particle": 100}, "invalid_argument",
                   message="particle: index 100 out of range (100 particles)")
        self.check({"cmd": "pin", "instance": cid, "particle": -1}, "invalid_argument", "particle")
        self.check({"cmd": "pin", "instance": cid, "particles": [0, 100]}, "invalid_argument", "particles[1]")
        self.check({"cmd": "pin", "instance": cid, "particles": [0, 1.5]}, "invalid_argument", "particles[1]")
        self.check({"cmd": "pin", "instance": cid, "particles": [0, 1], "positions": [[0, 0, 0]]},
                   "invalid_argument", "positions")
        self.check({"cmd": "pin", "instance": cid, "particle": 0, "particles": [1]}, "invalid_argument")
        self.check({"cmd": "pin", "instance": cid, "particle": 0, "position": [0, 0]}, "invalid_argument",
                   "position")
        self.check({"cmd": "unpin", "instance": cid, "particle": 100}, "invalid_argument", "particle")
        # Outside the world box the guard would stop every step: refused whole.
        self.check({"cmd": "pin", "instance": cid, "particle": 0, "position": [0, 2e5, 0]},
                   "invalid_argument", "position")
        self.check({"cmd": "pin", "instance": cid, "particles": [0, 1], "positions": [[0, 0, 0], [1e6, 0, 0]]},
                   "invalid_argument", "positions[1]")
        self.assertEqual(self.c.get(cid).pinned, [], "a rejected pin must not pin anything")

    def test_a_cloth_reaching_outside_the_world_box_should_be_refused(self):
        self.check({"cmd": "create", "origin": [99999.95, 0, 0]}, "invalid_argument", "origin")
        self.check({"cmd": "create", "origin": [0, 0, -2e5]}, "invalid_argument", "origin")

    def test_unknown_instance_should_be_not_found(self):
        self.check({"cmd": "get", "instance": 777}, "not_found", message="instance: no instance 777")
        extra = {"destroy": {}, "get": {}, "gravity": {"gravity": [0, 0, 0]}, "wind": {"wind": [0, 0, 0]},
                 "enable": {"enabled": True}, "pin": {"particle": 0}, "unpin": {"particle": 0},
                 "addCollider": {"type": "sphere"}}
        for cmd, fields in extra.items():
            self.check({"cmd": cmd, "instance": 777, **fields}, "not_found", "instance")
        reply = self.check({"cmd": "step", "instances": [777]}, "not_found")
        self.assertTrue(reply["error"]["message"].startswith("instance"), reply)

    def test_missing_required_fields_should_be_invalid_argument(self):
        cid = self.c.create_cloth(width=3, height=3)
        self.check({"cmd": "get"}, "invalid_argument", "instance")
        self.check({"cmd": "destroy"}, "invalid_argument", "instance")
        self.check({"cmd": "get", "instance": "1"}, "invalid_argument", "instance")
        self.check({"cmd": "get", "instance": 1.5}, "invalid_argument", "instance")
        self.check({"cmd": "wind", "instance": cid}, "invalid_argument", "wind")
        self.check({"cmd": "gravity", "instance": cid}, "invalid_argument", "gravity")
        self.check({"cmd": "gravity", "gravity": [0, 0, 0]}, "invalid_argument", "instance")
        self.check({"cmd": "enable", "instance": cid}, "invalid_argument", "enabled")
        self.check({"cmd": "enable", "instance": cid, "enabled": 1}, "invalid_argument", "enabled")

    def test_bad_dt_should_be_invalid_argument(self):
        for dt in [0, -0.01, 1.5, "0.016"]:
            self.check({"cmd": "step", "dt": dt}, "invalid_argument", "dt")
        self.check({"cmd": "step", "instances": "all"}, "invalid_argument", "instances")

    def test_id_should_be_echoed_as_given(self):
        for rid in [42, "abc-1", 0, -7, 1.5, ""]:
            with self.subTest(id=rid):
                reply = self.c.exchange({"id": rid, "cmd": "status"})
                self.assertIs(reply["ok"], True)
                self.assertIn("id", reply)
                self.assertEqual(reply["id"], rid)
                self.assertEqual(type(reply["id"]), type(rid))
        reply = self.c.exchange({"id": "e1", "cmd": "fly"})
        self.assertEqual(reply["id"], "e1")
        assert_error(self, reply, "unknown_command")
        reply = self.c.exchange({"id": 9, "cmd": "create", "width": 1})
        self.assertEqual(reply["id"], 9)
        assert_error(self, reply, "invalid_argument", "width")
        reply = self.c.exchange({"cmd": "status"})
        self.assertNotIn("id", reply)

    def test_id_of_another_type_should_be_rejected_without_echo(self):
        for rid in [{"a": 1}, [1], True]:
            reply = self.check({"id": rid, "cmd": "status"}, "invalid_argument", "id",
                               message="id: must be a number or a string")
            self.assertNotIn("id", reply)

    def test_empty_lines_crlf_and_pipelining_should_work(self):
        c = self.c
        c.send_raw(b"\n\r\n\n" + b'{"id":1,"cmd":"status"}\r\n' + b'{"id":2,"cmd":"fly"}\n{"id":3,"cmd":"status"}\n')
        replies = [c.read_reply() for _ in range(3)]
        self.assertEqual([r.get("id") for r in replies], [1, 2, 3])
        self.assertEqual([r["ok"] for r in replies], [True, False, True])
        c.send_raw(b'{"id":4,"cmd":"sta')
        c.send_raw(b'tus","future":{"nested":[1,2,3]}}\n')
        self.assertEqual(c.read_reply()["id"], 4)


if __name__ == "__main__":
    unittest.main()
