"""The Python client's handshake (issue 12, part 5): every connection sends
`hello` and keeps the reply (server_info, features, limits); `require=`
refuses at connect a server that lacks a feature, naming host:port and the
feature; a method that needs a feature the server lacks raises
FeatureMissing before anything is sent. Against the real clothd (with and
without --data-dir, with a token), and against a fake clothd from before
hello, which answers unknown_command to it: the plain protocol 1 commands
still work there, and the rest fail clearly."""

import json
import socket
import tempfile
import threading
import unittest

from server import ServerTestCase, fresh_server, send_line

from clothd import (Client, ClothdError, FeatureMissing, IncompatibleServer, LimitExceeded, Scene,
                    Unauthorized)


class OldClothd:
    """A fake clothd from before hello: it answers unknown_command to
    hello and to anything else but create, step and ping, and keeps the
    commands it received (to prove what the client never sent)."""

    def __init__(self, tc: unittest.TestCase):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"127.0.0.1:{self.port}"
        self.received: list = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        tc.addCleanup(self.close)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as f:
            for line in f:
                req = json.loads(line)
                cmd = req.get("cmd")
                self.received.append(cmd)
                reply = {"id": req.get("id"), "ok": True}
                if cmd == "create":
                    reply.update(instance=1, particles=4, constraints=6)
                elif cmd == "step":
                    reply.update(stepped=1, unstable=[])
                elif cmd == "ping":
                    reply.update(pong=True)
                else:
                    reply = {"id": req.get("id"), "ok": False,
                             "error": {"code": "unknown_command", "message": f'unknown command "{cmd}"'}}
                f.write(json.dumps(reply).encode() + b"\n")
                f.flush()

    def close(self) -> None:
        self.listener.close()


class HelloTest(ServerTestCase):
    def test_every_connection_keeps_its_hello(self):
        raw = send_line(self.c, '{"cmd":"hello"}')
        info = self.c.server_info
        self.assertEqual((info["server"], info["version"], info["protocol"]), ("clothd", self.server.version, 1))
        self.assertEqual(self.c.features, frozenset(raw["features"]))
        self.assertEqual(self.c.features, {"warnings", "strict", "scenes", "ephemeral", "softbody", "mesh",
                                           "skin", "budget", "shm"}, "no --data-dir: no snapshots, no recording")
        self.assertEqual(self.c.limits, raw["limits"])
        self.assertEqual(self.c.limits["connections"], 128)
        self.assertTrue(self.c.has_feature("scenes"))
        self.assertFalse(self.c.has_feature("recording"))
        self.assertEqual(self.c.endpoint, f"127.0.0.1:{self.server.port}")
        self.c.reconnect()
        self.assertEqual(self.c.server_info["features"], raw["features"], "asked again on the new connection")

    def test_require_passes_or_names_the_server_and_the_feature_at_connect(self):
        with Client(self.server.host, self.server.port, require=["scenes", "ephemeral"]) as c:
            self.assertIn("scenes", c.features)
        c = Client(self.server.host, self.server.port, require=["scenes", "recording", "snapshots"])
        with self.assertRaises(FeatureMissing) as cm:
            c.connect()
        e = cm.exception
        self.assertEqual(e.features, ("recording", "snapshots"))
        self.assertEqual(e.endpoint, f"127.0.0.1:{self.server.port}")
        self.assertIn(f"127.0.0.1:{self.server.port}", str(e))
        self.assertIn('"recording", "snapshots"', str(e))
        self.assertIn("--data-dir", str(e), "says what makes the server list them")
        self.assertEqual(e.code, "incompatible_server")
        self.assertIsInstance(e, IncompatibleServer)
        self.assertIsInstance(e, ClothdError)
        self.assertFalse(c.connected, "a refused connection is closed")
        with self.assertRaises(TypeError):
            Client(require="scenes")

    def test_a_method_needing_a_missing_feature_fails_before_sending(self):
        before = self.c.stats()["requests"]
        for call, feature in ((lambda: self.c.save("w"), "snapshots"), (lambda: self.c.load("w"), "snapshots"),
                              (lambda: self.c.record("j"), "recording"), (self.c.journals, "recording"),
                              (lambda: self.c.replay("j"), "recording")):
            with self.assertRaises(FeatureMissing) as cm:
                call()
            self.assertEqual(cm.exception.features, (feature,))
            self.assertIn(f"127.0.0.1:{self.server.port}", str(cm.exception))
        after = self.c.stats()["requests"]
        for cmd in ("save", "load", "record", "replay", "journals"):
            self.assertEqual(after[cmd], before[cmd], f"{cmd} was never sent")
        # A memory snapshot needs no --data-dir: it is sent and works.
        cid = self.c.create_cloth(width=3, height=3, scene="hello-mem", ephemeral=True)
        self.assertEqual(self.c.request("save", name="m", memory=True, instance=cid)["instances"], 1)


class HelloWithDataDirTest(unittest.TestCase):
    def test_snapshots_and_recording_are_listed_and_work(self):
        with tempfile.TemporaryDirectory() as data:
            srv = fresh_server(self, "--data-dir", data)
            with Client(srv.host, srv.port, require=["snapshots", "recording"]) as c:
                self.assertTrue({"snapshots", "recording"} <= c.features)
                c.create_cloth(width=3, height=3, scene="dd", ephemeral=True)
                self.assertEqual(c.save("w", scene="dd")["instances"], 1)
                self.assertEqual(c.journals()["recording"], None)


class HelloWithTokenTest(unittest.TestCase):
    def test_hello_waits_for_auth_and_require_needs_the_token(self):
        with tempfile.NamedTemporaryFile("w", suffix=".token") as f:
            f.write("hello-token-0123456789\n")
            f.flush()
            srv = fresh_server(self, "--token-file", f.name)
            with Client(srv.host, srv.port, token="") as c:  # connects; the server wants auth first
                self.assertIsNone(c.server_info)
                self.assertEqual(c.features, frozenset())
                with self.assertRaises(Unauthorized):
                    c.scenes()  # the server's answer, not a guess of the client's
                c.auth("hello-token-0123456789")
                self.assertIn("scenes", c.features, "asked once authenticated")
                self.assertEqual(c.scenes(), [])
            with self.assertRaises(Unauthorized):
                Client(srv.host, srv.port, token="", require=["scenes"]).connect()
            with Client(srv.host, srv.port, token="hello-token-0123456789", require=["scenes"]) as c:
                self.assertEqual(c.access, "full")
                self.assertIn("scenes", c.features)


class OldServerTest(unittest.TestCase):
    def test_v1_commands_work_and_the_rest_fail_naming_the_server_and_feature(self):
        old = OldClothd(self)
        c = Client("127.0.0.1", old.port, timeout=5).connect()
        self.addCleanup(c.close)
        self.assertIsNone(c.server_info)
        self.assertEqual((c.features, c.limits), (frozenset(), {}))
        self.assertEqual(c.create_cloth(width=2, height=2), 1)
        self.assertEqual(c.step(1 / 60)["stepped"], 1)
        self.assertGreaterEqual(c.ping(), 0)
        calls = {
            "scenes": [lambda: c.scenes(), lambda: c.scene("a"), lambda: c.step(scene="a"),
                       lambda: c.create_cloth(width=2, height=2, scene="a"), lambda: c.status(scene="a"),
                       lambda: Scene(c, "a").step(), lambda: c.destroy(scene="a")],
            "ephemeral": [lambda: c.create_cloth(width=2, height=2, ephemeral=True)],
            "softbody": [lambda: c.create_softbody(shape="ball")],
            "mesh": [lambda: c.create_mesh_cloth([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [0, 1, 2])],
            "skin": [lambda: c.skin(1, [[0, 0, 0]] * 4)],
            "budget": [lambda: c.step(1 / 60, budget_ms=2), lambda: c.set(1, lod=2)],
            "snapshots": [lambda: c.save("w"), lambda: c.load("w")],
            "recording": [lambda: c.record("j"), lambda: c.replay("j"), lambda: c.journals()],
            "shm": [lambda: c.subscribe(1, shm=True)],
        }
        for feature, fns in calls.items():
            for fn in fns:
                with self.assertRaises(FeatureMissing) as cm:
                    fn()
                e = cm.exception
                self.assertIn(feature, e.features)
                self.assertEqual(e.endpoint, old.endpoint)
                self.assertIn(old.endpoint, str(e))
                self.assertIn(f'"{feature}"', str(e))
                self.assertIn("answers no hello", str(e))
        self.assertEqual(old.received, ["hello", "create", "step", "ping"], "nothing else was sent")
        # Connecting with require, or strict, fails at once, naming both.
        with self.assertRaises(FeatureMissing) as cm:
            Client("127.0.0.1", old.port, timeout=5, require=["scenes"]).connect()
        self.assertIn(old.endpoint, str(cm.exception))
        self.assertEqual(cm.exception.features, ("scenes",))
        with self.assertRaises(FeatureMissing) as cm:
            Client("127.0.0.1", old.port, timeout=5, strict=True).connect()
        self.assertEqual(cm.exception.features, ("strict",))


class RefusedConnectionTest(unittest.TestCase):
    def test_a_connection_over_the_cap_raises_the_servers_refusal(self):
        srv = fresh_server(self, "--max-connections", "1")
        held = srv.client()
        self.addCleanup(held.close)
        with self.assertRaises(LimitExceeded) as cm:
            Client(srv.host, srv.port, timeout=5).connect()
        self.assertIn("--max-connections", cm.exception.message)


if __name__ == "__main__":
    unittest.main()
