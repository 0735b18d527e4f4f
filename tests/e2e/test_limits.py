"""Configured limits: --max-line, --max-particles, --max-instances."""

import unittest

from clothd import ConnectionClosed
from server import ServerTestCase, assert_error, assert_still_works, send_line


def expect_closed(tc, c):
    """The server closes the connection (EOF or reset) with nothing more to say."""
    c.sock.settimeout(5)
    try:
        extra = c.read_message()
    except (ConnectionClosed, ConnectionResetError):
        return
    except TimeoutError:
        tc.fail("the server did not close the connection within 5 s")
    tc.fail(f"expected the connection to close, got {extra!r}")


class MaxLineTest(ServerTestCase):
    SERVER_ARGS = ("--max-line", "4096")

    def test_a_line_under_the_limit_should_work(self):
        line = '{"cmd":"status","pad":"' + "x" * 3900 + '"}'
        self.assertLess(len(line), 4096)
        self.assertIs(send_line(self.c, line)["ok"], True)

    def test_a_line_over_the_limit_should_be_refused_and_closed(self):
        other = self.client()
        cid = other.create_cloth(width=4, height=4)
        line = '{"id":1,"cmd":"status","pad":"' + "x" * 5000 + '"}\n'
        self.c.send_raw(line.encode())
        reply = self.c.read_reply()
        assert_error(self, reply, "line_too_long")
        expect_closed(self, self.c)
        other.step(1 / 60, instances=[cid])
        self.assertEqual(other.get(cid).frame, 1)
        assert_still_works(self, other)

    def test_an_endless_line_without_newline_should_be_refused_before_it_ends(self):
        self.c.send_raw(b'{"cmd":"status","pad":"' + b"y" * 8192)
        reply = self.c.read_reply()
        assert_error(self, reply, "line_too_long")
        expect_closed(self, self.c)
        assert_still_works(self, self.client())


class MaxParticlesTest(ServerTestCase):
    SERVER_ARGS = ("--max-particles", "10000")

    def test_create_over_max_particles_should_be_limit_exceeded(self):
        r = self.c.request("create", width=100, height=100)
        self.assertEqual(r["particles"], 10000)
        reply = send_line(self.c, '{"cmd":"create","width":101,"height":100}')
        assert_error(self, reply, "limit_exceeded", "width, height",
                     message="width, height: 10100 particles exceed the limit of 10000")
        reply = send_line(self.c, '{"cmd":"create","width":100000,"height":100000}')
        assert_error(self, reply, "limit_exceeded", "width, height")
        assert_still_works(self, self.c)


class MaxInstancesTest(ServerTestCase):
    SERVER_ARGS = ("--max-instances", "3")

    def test_create_over_max_instances_should_be_limit_exceeded(self):
        ids = [self.c.create_cloth(width=3, height=3) for _ in range(3)]
        reply = send_line(self.c, '{"cmd":"create","width":3,"height":3}')
        assert_error(self, reply, "limit_exceeded", "instance", prefix="instance: at most 3 instances")
        self.c.destroy(ids[1])
        new = self.c.create_cloth(width=3, height=3)
        self.assertNotIn(new, ids)
        assert_error(self, send_line(self.c, '{"cmd":"create"}'), "limit_exceeded", "instance")
        self.assertEqual(len(self.c.status()["instances"]), 3)


if __name__ == "__main__":
    unittest.main()
