"""The forward-compatibility rule against the real clothd (issue 12, part
4; PROTOCOL.md "Unknown members"): a member no part of the command reads
is run past and named in the reply's "warnings" (with the nearest known
name), on every kind of reply; `hello {"strict":true}` makes it an
invalid_argument error on that connection only. And every enum-valued
field lists its names when the value is another."""

import os
import tempfile
import unittest

from server import ServerTestCase, assert_error, fresh_server, send_line

WIDHT = 'unknown member "widht" (did you mean "width"?)'


def token_file(test, text):
    fd, path = tempfile.mkstemp(prefix="clothd-token-")
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    test.addCleanup(os.unlink, path)
    return path


class WarningsTest(ServerTestCase):
    def test_a_reply_carries_a_warning_per_unknown_member_and_is_otherwise_unchanged(self):
        reply = send_line(self.c, '{"id":1,"cmd":"create","widht":4,"colour":"red"}')
        self.assertEqual(reply["warnings"], [WIDHT, 'unknown member "colour"'])
        self.assertEqual((reply["id"], reply["ok"], reply["particles"]), (1, True, 100),
                         "the default width: the misspelt one was not read")
        plain = send_line(self.c, '{"id":2,"cmd":"get","instance":%d}' % reply["instance"])
        self.assertNotIn("warnings", plain, "no warnings member when there is none")
        self.c.destroy(reply["instance"])

    def test_every_command_reports_what_it_does_not_read(self):
        cid = self.c.create_cloth(width=3, height=3)
        for line, warning in (
                ('{"cmd":"status","verbose":true}', 'unknown member "verbose"'),
                ('{"cmd":"ping","instance":%d}' % cid, 'unknown member "instance"'),
                ('{"cmd":"get","instance":%d,"normal":true}' % cid,
                 'unknown member "normal" (did you mean "normals"?)'),
                ('{"cmd":"gravity","instance":%d,"gravity":[0,-1,0],"gravty":1}' % cid,
                 'unknown member "gravty" (did you mean "gravity"?)'),
                ('{"cmd":"addCollider","instance":%d,"type":"sphere","raduis":0.2}' % cid,
                 'unknown member "raduis" (did you mean "radius"?)'),
                ('{"cmd":"create","type":"softbody","shape":"box","radius":0.2,"cells":[1,1,1]}',
                 'unknown member "radius"')):
            reply = send_line(self.c, line)
            self.assertIs(reply["ok"], True, reply)
            self.assertEqual(reply["warnings"], [warning], line)

    def test_a_step_reply_sent_later_carries_its_warnings_and_the_next_reply_none(self):
        cid = self.c.create_cloth(width=4, height=4)
        # Pipelined: the step's reply is built when the workers are done,
        # after the next line has arrived; each keeps its own warnings.
        self.c.send_raw(b'{"id":1,"cmd":"step","instances":[%d],"budgetMS":2}\n'
                        b'{"id":2,"cmd":"ping"}\n{"id":3,"cmd":"ping","x":1}\n' % cid)
        step, ping, other = self.c.read_reply(), self.c.read_reply(), self.c.read_reply()
        self.assertEqual(step["stepped"], 1)
        self.assertEqual(step["warnings"], ['unknown member "budgetMS" (did you mean "budgetMs"?)'])
        self.assertEqual(ping, {"id": 2, "ok": True, "pong": True})
        self.assertEqual(other["warnings"], ['unknown member "x"'])

    def test_an_error_after_parsing_keeps_the_warnings_a_refused_parse_has_none(self):
        reply = send_line(self.c, '{"id":5,"cmd":"destroy","instance":999,"force":true}')
        assert_error(self, reply, "not_found", message="instance: no instance 999")
        self.assertEqual(reply["warnings"], ['unknown member "force"'])
        reply = send_line(self.c, '{"id":6,"cmd":"create","width":1,"widht":4}')
        assert_error(self, reply, "invalid_argument", "width")
        self.assertNotIn("warnings", reply, "the parser stopped at width: it read no further")

    def test_many_unknown_members_are_cut_with_a_count(self):
        members = ",".join(f'"extra{i}":{i}' for i in range(12))
        reply = send_line(self.c, '{"cmd":"ping",%s}' % members)
        self.assertEqual(len(reply["warnings"]), 9)
        self.assertEqual(reply["warnings"][-1], "... and 4 more unknown members")

    def test_strict_makes_them_errors_on_that_connection_only(self):
        other = self.client()
        hello = send_line(self.c, '{"id":1,"cmd":"hello","strict":true}')
        self.assertEqual((hello["server"], hello["protocol"], hello["strict"]), ("clothd", 1, True))
        self.assertEqual(hello["version"], self.server.version)
        self.assertEqual(hello["commands"][0], "create")
        self.assertIn("hello", hello["commands"])
        before = len(self.c.status()["instances"])
        reply = send_line(self.c, '{"id":2,"cmd":"create","widht":4}')
        assert_error(self, reply, "invalid_argument",
                     message='widht: unknown member (did you mean "width"?)')
        self.assertNotIn("warnings", reply)
        self.assertEqual(len(self.c.status()["instances"]), before, "a refused create made nothing")
        # The other connection is not strict.
        reply = send_line(other, '{"id":3,"cmd":"ping","x":1}')
        self.assertEqual(reply["warnings"], ['unknown member "x"'])
        # hello without "strict" reports the setting and keeps it.
        self.assertIs(send_line(self.c, '{"cmd":"hello"}')["strict"], True)
        self.assertIs(send_line(self.c, '{"cmd":"hello","strict":false}')["strict"], False)
        reply = send_line(self.c, '{"id":4,"cmd":"ping","x":1}')
        self.assertEqual(reply["warnings"], ['unknown member "x"'])
        assert_error(self, send_line(self.c, '{"cmd":"hello","strict":1}'), "invalid_argument",
                     message="strict: must be true or false")



class HelloAccessTest(unittest.TestCase):
    def test_hello_comes_after_auth_and_is_allowed_with_the_read_only_token(self):
        full, readonly = token_file(self, "full-token-0123456789abcdef"), \
            token_file(self, "readonly-token-0123456789abcdef")
        srv = fresh_server(self, "--token-file", full, "--readonly-token-file", readonly)
        c = srv.client(token="")
        self.addCleanup(c.close)
        assert_error(self, send_line(c, '{"cmd":"hello","strict":true}'), "unauthorized",
                     message='cmd: "hello" needs auth first')
        self.assertEqual(send_line(c, '{"cmd":"auth","token":"readonly-token-0123456789abcdef"}'),
                         {"ok": True, "access": "readonly"})
        self.assertIs(send_line(c, '{"cmd":"hello","strict":true}')["strict"], True)
        assert_error(self, send_line(c, '{"cmd":"status","verbose":1}'), "invalid_argument",
                     message="verbose: unknown member")


class EnumMessagesTest(ServerTestCase):
    def test_every_enum_field_lists_its_names(self):
        cid = self.c.create_cloth(width=3, height=3)
        for line, message in (
                ('{"cmd":"create","type":"rope"}',
                 'type: unknown instance type "rope" (one of "cloth" or "softbody")'),
                ('{"cmd":"create","type":"softbody","shape":"cube"}',
                 'shape: unknown shape "cube" (one of "box" or "ball")'),
                ('{"cmd":"create","windModel":"wind"}',
                 'windModel: unknown wind model "wind" (one of "aero", "constant" or "dragLift")'),
                ('{"cmd":"set","instance":%d,"windModel":3}' % cid,
                 'windModel: must be a string, one of "aero", "constant" or "dragLift"'),
                ('{"cmd":"addCollider","instance":%d,"type":"cube"}' % cid,
                 'type: unknown collider type "cube" (one of "sphere", "capsule", "plane", '
                 '"taperedCapsule" or "box")'),
                ('{"cmd":"subscribe","channels":["normals","colours"]}',
                 'channels[1]: unknown channel "colours" (one of "positions", "velocities" or '
                 '"normals")'),
                ('{"cmd":"fly"}', 'unknown command "fly" (hello lists the commands)'),
                ('{"cmd":"creat"}', 'unknown command "creat" (did you mean "create"?)')):
            reply = send_line(self.c, line)
            code = "unknown_command" if "command" in message else "invalid_argument"
            assert_error(self, reply, code, message=message)


if __name__ == "__main__":
    unittest.main()


class HelloFeaturesTest(unittest.TestCase):
    def test_hello_lists_features_and_the_servers_limits(self):
        srv = fresh_server(self, "--max-instances", "7", "--max-line", "65536")
        c = srv.client()
        self.addCleanup(c.close)
        reply = send_line(c, '{"cmd":"hello"}')
        self.assertEqual(reply["features"], ["warnings", "strict", "scenes", "ephemeral",
                                             "softbody", "mesh", "skin", "budget", "shm"],
                         "no --data-dir: no snapshots or recording")
        self.assertEqual(reply["limits"]["instances"], 7)
        self.assertEqual(reply["limits"]["lineBytes"], 65536)
        self.assertEqual(set(reply["limits"]), {"lineBytes", "outputBytes", "frameBytes", "connections",
                                                "instances", "particlesPerInstance", "particles",
                                                "stepWork"})

    def test_a_data_dir_adds_snapshots_and_recording(self):
        with tempfile.TemporaryDirectory() as data:
            srv = fresh_server(self, "--data-dir", data)
            c = srv.client()
            self.addCleanup(c.close)
            features = send_line(c, '{"cmd":"hello"}')["features"]
            self.assertEqual(features[-3:], ["snapshots", "recording", "shm"])

    def test_shm_mb_0_drops_shm(self):
        srv = fresh_server(self, "--shm-mb", "0")
        c = srv.client()
        self.addCleanup(c.close)
        features = send_line(c, '{"cmd":"hello"}')["features"]
        self.assertEqual(features[-1], "budget", "--shm-mb 0: no shared-memory frames")
