"""The Python client and clothctl with tokens (issue 9, item 7), against the
real server: the token from an argument or CLOTHD_TOKEN, `auth` first on
every connection (reconnections too, before the subscriptions are renewed),
`access`, `ping()`, `auth()`, the Unauthorized error, and clothctl's
--token-file and ping."""

import os
import subprocess
import sys
import unittest

from server import REPO, fresh_server
from test_python_client import CuttableProxy

from clothd import TOKEN_ENV, Client, ClothdError, Subscriber, Unauthorized

FULL = "client-full-token-0123456789"
READONLY = "client-readonly-token-0123456789"
CLOTHCTL = os.path.join(REPO, "clients", "python", "clothctl.py")


def token_file(test: unittest.TestCase, text: str) -> str:
    path = os.path.join(test.tmp, f"token-{len(os.listdir(test.tmp))}")
    with open(path, "w") as f:
        f.write(text)
    return path


class TokenEnv:
    """Sets CLOTHD_TOKEN for a `with` block and restores what was there."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.old = os.environ.get(TOKEN_ENV)
        if self.value is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = self.value

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = self.old


class ClientTokenTest(unittest.TestCase):
    def setUp(self):
        import tempfile
        tmp = tempfile.TemporaryDirectory(prefix="clothd-client-auth-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.full = token_file(self, FULL + "\n")
        self.readonly = token_file(self, READONLY + "\r\n")
        self.srv = fresh_server(self, "--token-file", self.full, "--readonly-token-file", self.readonly)

    def client(self, **kw) -> Client:
        kw.setdefault("token", "")
        c = Client(self.srv.host, self.srv.port, 5.0, **kw)
        self.addCleanup(c.close)
        return c

    def test_a_token_argument_authenticates_on_connect(self):
        c = self.client(token=FULL).connect()
        self.assertEqual(c.access, "full")
        cid = c.create_cloth(width=3, height=3)
        self.assertEqual(c.step(instances=[cid])["stepped"], 1)
        self.assertLess(c.ping(), 5.0)

    def test_the_token_comes_from_the_environment_when_none_is_given(self):
        with TokenEnv(FULL):
            c = Client(self.srv.host, self.srv.port, 5.0)
            off = Client(self.srv.host, self.srv.port, 5.0, token="")  # "" sends none
        self.addCleanup(c.close)
        self.addCleanup(off.close)
        self.assertEqual(c.token, FULL)
        self.assertEqual(c.connect().access, "full")
        self.assertIs(c.status()["ok"], True)
        self.assertIsNone(off.connect().access)
        with self.assertRaises(Unauthorized) as cm:
            off.status()
        self.assertEqual(cm.exception.message, 'cmd: "status" needs auth first')
        # An argument wins over the environment.
        with TokenEnv(FULL):
            ro = Client(self.srv.host, self.srv.port, 5.0, token=READONLY)
        self.addCleanup(ro.close)
        self.assertEqual(ro.connect().access, "readonly")

    def test_a_wrong_token_raises_unauthorized_and_leaves_the_client_closed(self):
        c = self.client(token=FULL[:-1] + "X")
        with self.assertRaises(Unauthorized) as cm:
            c.connect()
        e = cm.exception
        self.assertIsInstance(e, ClothdError)  # old code that catches ClothdError still works
        self.assertEqual(e.code, "unauthorized")
        self.assertEqual(e.message, "token: wrong token")
        self.assertEqual(str(e), "unauthorized: token: wrong token")
        self.assertEqual(e.reply["error"], {"code": "unauthorized", "message": "token: wrong token"})
        self.assertFalse(c.connected)
        self.assertIsNone(c.access)

    def test_the_read_only_token_reads_and_writes_raise_unauthorized(self):
        writer = self.client(token=FULL)
        cid = writer.create_cloth(width=4, height=4)
        c = self.client(token=READONLY).connect()
        self.assertEqual(c.access, "readonly")
        self.assertGreater(c.ping(), 0.0)
        self.assertEqual(c.get(cid).count, 16)
        self.assertEqual(len(c.topology(cid)["triangles"]), 3 * 2 * 3 * 3)  # 3 indices per triangle
        self.assertEqual([s["instance"] for s in c.status()["instances"]], [cid])
        writes = {
            "create": lambda: c.create_cloth(width=3, height=3),
            "step": lambda: c.step(),
            "wind": lambda: c.wind([1, 0, 0]),
            "pin": lambda: c.pin(cid, 0),
            "set": lambda: c.set(cid, mass=2.0),
            "debug": lambda: c.debug(True),
            "destroy": lambda: c.destroy(cid),
        }
        for cmd, call in writes.items():
            with self.assertRaises(Unauthorized, msg=cmd) as cm:
                call()
            self.assertEqual(cm.exception.message, f'cmd: "{cmd}" is not allowed with the read-only token')
        self.assertEqual(writer.get(cid).frame, 0)  # nothing ran
        self.assertEqual(writer.global_wind(), [0, 0, 0])
        c.subscribe(cid)
        self.assertEqual(c.next_frame(timeout=5).instance, cid)

    def test_auth_method_upgrades_and_a_wrong_one_keeps_the_access(self):
        c = self.client().connect()
        with self.assertRaises(Unauthorized) as cm:
            c.ping()
        self.assertEqual(cm.exception.message, 'cmd: "ping" needs auth first')
        self.assertEqual(c.auth(READONLY), "readonly")
        self.assertEqual((c.access, c.token), ("readonly", READONLY))
        with self.assertRaises(Unauthorized) as cm:
            c.auth("not-the-token-at-all-xxxx")
        self.assertEqual(cm.exception.message, "token: wrong token")
        self.assertEqual((c.access, c.token), ("readonly", READONLY))
        self.assertEqual(c.auth(FULL), "full")  # after the 100 ms pause
        self.assertIsInstance(c.create_cloth(width=3, height=3), int)

    def test_a_reconnection_authenticates_before_renewing_subscriptions(self):
        admin = self.client(token=FULL)
        cid = admin.create_cloth(width=4, height=4)
        proxy = CuttableProxy(self.srv.host, self.srv.port)
        self.addCleanup(proxy.close)
        c = Client("127.0.0.1", proxy.port, 5.0, reconnect=True, token=READONLY)
        self.addCleanup(c.close)
        c.subscribe(cid, quantize=True)
        self.assertEqual(c.next_frame(timeout=5).frame, 0)
        proxy.cut()
        self.assertEqual(c.ping() < 5.0, True)  # transparently, on a new connection
        self.assertEqual(c.reconnects, 1)
        self.assertEqual(c.access, "readonly")
        self.assertEqual([e for e in c.events if e.get("event") == "resubscribe_failed"], [])
        self.assertEqual(c.subscriptions, {cid: {"quantize": True}})
        f = c.next_frame(timeout=5)  # the renewed subscription's current frame
        self.assertEqual((f.instance, f.frame, f.quantized), (cid, 0, True))
        admin.step(instances=[cid])
        self.assertEqual(c.next_frame(timeout=5).frame, 1)

    def test_a_subscriber_authenticates_on_every_connection(self):
        admin = self.client(token=FULL)
        cid = admin.create_cloth(width=5, height=5)
        proxy = CuttableProxy(self.srv.host, self.srv.port)
        self.addCleanup(proxy.close)
        with TokenEnv(READONLY):
            sub = Subscriber("127.0.0.1", proxy.port, cid)
        with sub:
            self.assertEqual(sub.access, "readonly")
            sub.start()
            self.assertEqual(sub.wait_for(cid, 0).frame, 0)
            proxy.cut()
            for _ in range(3):
                admin.step(instances=[cid])
            self.assertEqual(sub.wait_for(cid, 3, timeout=10).frame, 3)
            self.assertGreaterEqual(sub.client.reconnects, 1)
            self.assertEqual(sub.access, "readonly")
            self.assertIsNone(sub.error)

    def test_without_a_token_a_subscriber_fails_with_unauthorized(self):
        sub = Subscriber(self.srv.host, self.srv.port, token="")
        self.addCleanup(sub.close)
        with self.assertRaises(Unauthorized) as cm:
            sub.connect()
        self.assertEqual(cm.exception.message, 'cmd: "subscribe" needs auth first')


class NoTokenServerTest(unittest.TestCase):
    def test_auth_grants_full_access_and_ping_answers(self):
        srv = fresh_server(self)
        c = Client(srv.host, srv.port, 5.0, token="any-token-at-all").connect()
        self.addCleanup(c.close)
        self.assertEqual(c.access, "full")
        self.assertLess(c.ping(), 5.0)
        plain = Client(srv.host, srv.port, 5.0, token="").connect()
        self.addCleanup(plain.close)
        self.assertIsNone(plain.access)
        self.assertIs(plain.status()["ok"], True)


class ClothctlTokenTest(unittest.TestCase):
    def setUp(self):
        import tempfile
        tmp = tempfile.TemporaryDirectory(prefix="clothd-clothctl-auth-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.full = token_file(self, FULL + "\n")
        self.readonly = token_file(self, READONLY + "\n")
        self.srv = fresh_server(self, "--token-file", self.full, "--readonly-token-file", self.readonly)

    def ctl(self, *args: str, env=None) -> subprocess.CompletedProcess:
        full_env = {k: v for k, v in os.environ.items()
                    if k not in ("CLOTHD_HOST", "CLOTHD_PORT", TOKEN_ENV)}
        full_env.update(env or {})
        return subprocess.run([sys.executable, CLOTHCTL, "--port", str(self.srv.port), *args],
                              capture_output=True, text=True, timeout=30, env=full_env)

    def test_token_file_works_for_every_command_and_ping(self):
        out = self.ctl("--token-file", self.full, "create", "--width", "3", "--height", "3")
        self.assertEqual((out.returncode, out.stderr), (0, ""))
        self.assertEqual(out.stdout, "instance 1: 9 particles, 26 constraints\n")
        out = self.ctl("step", "--token-file", self.full)  # after the command too
        self.assertEqual((out.returncode, out.stdout), (0, "1 step of 0.016666668 s: 1 instance stepped\n"))
        out = self.ctl("--token-file", self.readonly, "ping")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"^pong from 127\.0\.0\.1:\d+ in \d+\.\d ms \(readonly access\)\n$")
        out = self.ctl("--token-file", self.readonly, "--json", "ping")
        self.assertEqual(out.stdout, '{"id":3,"ok":true,"pong":true}\n')  # 1 auth, 2 hello
        out = self.ctl("--token-file", self.readonly, "watch", "--count", "1")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("instance 1 frame 1 "), out.stdout)

    def test_the_environment_token_works_and_the_file_wins(self):
        out = self.ctl("status", env={TOKEN_ENV: FULL})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("=== Cloth Simulation ===\n"))
        out = self.ctl("--token-file", self.readonly, "create", env={TOKEN_ENV: FULL})
        self.assertEqual(out.returncode, 1)

    def test_without_a_token_it_fails_with_a_clear_message(self):
        out = self.ctl("status")
        self.assertEqual((out.returncode, out.stdout), (1, ""))
        self.assertEqual(out.stderr, 'clothctl: unauthorized: cmd: "status" needs auth first (clothd wants a '
                                     'token: give --token-file PATH or set CLOTHD_TOKEN)\n')

    def test_refused_tokens_and_bad_files_say_why(self):
        out = self.ctl("--token-file", self.readonly, "wind", "1", "0", "0")
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stderr, f'clothctl: unauthorized: cmd: "wind" is not allowed with the read-only '
                                     f'token (the token from --token-file {self.readonly} is the read-only one)\n')
        wrong = token_file(self, "wrong-token-0123456789abcdef\n")
        out = self.ctl("--token-file", wrong, "status")
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stderr, f"clothctl: unauthorized: token: wrong token (the token from "
                                     f"--token-file {wrong} was refused)\n")
        missing = os.path.join(self.tmp, "missing")
        out = self.ctl("--token-file", missing, "status")
        self.assertEqual(out.returncode, 2)
        self.assertIn(f"clothctl: --token-file {missing}: cannot read it: No such file or directory\n",
                      out.stderr)
        empty = token_file(self, "\n")
        out = self.ctl("--token-file", empty, "status")
        self.assertEqual(out.returncode, 2)
        self.assertIn(f"clothctl: --token-file {empty}: the first line is empty\n", out.stderr)


if __name__ == "__main__":
    unittest.main()
