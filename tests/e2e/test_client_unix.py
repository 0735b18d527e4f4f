"""The Python client over a Unix-domain socket (`clothd --unix PATH`): the
same protocol as over TCP, byte for byte, for a game server on the same
host. Client(unix_socket=PATH) creates, steps and gets; a subscription
brings binary frames (one large enough to arrive over many reads); a
Subscriber and a reconnecting client work through the socket; what goes
wrong names "unix:PATH" (nothing listening there, a socket file nobody
accepts on, a missing feature); a ShardedClient mixes "unix:PATH" with
"host:port" endpoints; clothctl takes --unix PATH and $CLOTHD_UNIX."""

import os
import socket
import subprocess
import sys
import tempfile
import unittest

from server import REPO, Server

from clothd import (UNIX_PATH_MAX, Client, EndpointUnavailable, FeatureMissing, ShardedClient, Subscriber,
                    parse_endpoint, place_scene, unix_endpoint_path)

CLOTHCTL = os.path.join(REPO, "clients", "python", "clothctl.py")


def scene_on(endpoints: list, where: str, prefix: str) -> str:
    """The first scene named prefix-N that rendezvous hashing puts on `where`."""
    return next(n for n in (f"{prefix}-{i}" for i in range(1000)) if place_scene(endpoints, n) == where)


class UnixSocketClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(unix=True).start()
        cls.path = cls.server.unix_path

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def unix_client(self, **kwargs) -> Client:
        c = Client(unix_socket=self.path, **kwargs).connect()
        self.addCleanup(c.close)
        return c

    def missing_path(self) -> str:
        folder = tempfile.mkdtemp(prefix="clothd-nothing-")
        self.addCleanup(os.rmdir, folder)
        return os.path.join(folder, "clothd.sock")

    def test_a_client_should_create_step_and_get_over_the_socket(self):
        c = self.unix_client()
        self.assertEqual(c.endpoint, f"unix:{self.path}")
        self.assertIn(f"unix:{self.path}", repr(c))
        self.assertIn("scenes", c.features, "hello went through the socket")
        cid = c.create_cloth(width=4, height=4, spacing=0.1, ephemeral=True)
        before = c.get(cid)
        for _ in range(5):
            c.step(1 / 60, instances=[cid])
        after = c.get(cid)
        self.assertEqual((after.frame, after.count), (5, 16))
        for was, now in zip(before.positions, after.positions):  # free fall: 0.5 g t^2 = 0.034 m
            self.assertLess(now[1], was[1] - 0.02, "every particle falls")

    def test_tcp_and_unix_clients_should_share_one_server(self):
        c = self.unix_client()
        cid = c.create_cloth(width=3, height=3, scene="unix-shared", ephemeral=True)
        with Client(self.server.host, self.server.port) as tcp:
            listed = [s["instance"] for s in tcp.status(scene="unix-shared")["instances"]]
        self.assertEqual(listed, [cid])

    def test_a_subscription_should_bring_binary_frames_over_the_socket(self):
        c = self.unix_client()
        cid = c.create_cloth(width=64, height=64, spacing=0.02, ephemeral=True)  # 49,192-byte frames
        c.subscribe(cid)
        first = c.next_frame(timeout=5)  # the current frame
        self.assertEqual((first.instance, first.frame, first.count), (cid, 0, 4096))
        c.step(1 / 60, instances=[cid])
        f = c.next_frame(timeout=5)
        self.assertEqual((f.instance, f.frame, len(f.flat)), (cid, 1, 3 * 4096))
        got = [v for p in c.get(cid).positions for v in p]  # JSON: 9 significant digits
        self.assertLess(max(abs(a - b) for a, b in zip(f.flat, got)), 1e-6, "the frame holds what get says")
        c.unsubscribe()

    def test_a_subscriber_should_receive_frames_over_the_socket(self):
        c = self.unix_client()
        cid = c.create_cloth(width=5, height=5, ephemeral=True)
        with Subscriber(instances=cid, unix_socket=self.path, quantize=True) as sub:
            sub.start()
            sub.wait_for(cid, 0)
            c.step(1 / 60, instances=[cid])
            f = sub.wait_for(cid, 1)
            self.assertTrue(f.quantized)
            self.assertEqual(sub.client.endpoint, f"unix:{self.path}")
            self.assertIsNone(sub.error)

    def test_nothing_listening_should_name_the_socket_path(self):
        path = self.missing_path()
        with self.assertRaises(FileNotFoundError) as cm:
            Client(unix_socket=path).connect()
        self.assertEqual(str(cm.exception.strerror),
                         f"cannot connect to clothd at unix:{path}: No such file or directory")
        # A socket file nobody accepts on (a server that died without removing it).
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
            dead.bind(path)
        self.addCleanup(os.unlink, path)
        with self.assertRaises(ConnectionRefusedError) as cm:
            Client(unix_socket=path).connect()
        self.assertIn(f"cannot connect to clothd at unix:{path}: ", str(cm.exception))

    def test_a_path_too_long_for_a_socket_should_be_refused_by_name(self):
        long_path = "/tmp/" + "x" * UNIX_PATH_MAX
        with self.assertRaises(ValueError) as cm:
            Client(unix_socket=long_path)
        self.assertIn(f"unix_socket: the path is {len(long_path)} bytes; a Unix socket path holds at most 107",
                      str(cm.exception))
        with self.assertRaises(ValueError):
            Client(unix_socket="")

    def test_a_missing_feature_should_name_the_socket(self):
        with self.assertRaises(FeatureMissing) as cm:
            Client(unix_socket=self.path, require=["no-such-feature"]).connect()
        self.assertEqual(cm.exception.endpoint, f"unix:{self.path}")
        self.assertIn(f"clothd endpoint unix:{self.path}: lacks the feature", str(cm.exception))

    def test_clothctl_should_take_unix_and_clothd_unix(self):
        def ctl(*args: str, env=None) -> subprocess.CompletedProcess:
            full_env = {k: v for k, v in os.environ.items() if not k.startswith("CLOTHD_")}
            full_env.update(env or {})
            return subprocess.run([sys.executable, CLOTHCTL, *args], capture_output=True, text=True,
                                  timeout=30, env=full_env, stdin=subprocess.DEVNULL)

        out = ctl("--unix", self.path, "ping")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith(f"pong from unix:{self.path} in "), out.stdout)
        out = ctl("status", env={"CLOTHD_UNIX": self.path})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("=== Cloth Simulation ===", out.stdout)
        out = ctl("--version", env={"CLOTHD_UNIX": self.path})
        self.assertIn(f"at unix:{self.path}, protocol 1", out.stdout)
        missing = self.missing_path()
        # --port wins over $CLOTHD_UNIX; --unix over --port.
        out = ctl("--port", str(self.server.port), "ping", env={"CLOTHD_UNIX": missing})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(f"pong from 127.0.0.1:{self.server.port}", out.stdout)
        out = ctl("--unix", missing, "--port", str(self.server.port), "ping")
        self.assertEqual((out.returncode, out.stderr),
                         (3, f"clothctl: cannot connect to clothd at unix:{missing}: No such file or directory\n"))
        out = ctl("--unix", "/tmp/" + "x" * 200, "ping")
        self.assertEqual(out.returncode, 2)
        self.assertIn("clothctl: --unix: unix_socket: the path is 205 bytes", out.stderr)


class UnixEndpointTest(unittest.TestCase):
    """"unix:PATH" endpoints beside "host:port" ones (no server needed)."""

    def test_unix_endpoints_should_be_read_apart_from_host_port(self):
        self.assertEqual(unix_endpoint_path("unix:/run/clothd.sock"), "/run/clothd.sock")
        self.assertEqual(unix_endpoint_path("unix:./7878"), "./7878")
        self.assertIsNone(unix_endpoint_path("unix:7878"), "digits only: a host named unix")
        self.assertEqual(parse_endpoint("unix:7878"), ("unix", 7878))
        self.assertIsNone(unix_endpoint_path("10.0.0.7:7878"))
        with self.assertRaises(ValueError) as cm:
            unix_endpoint_path("unix:/" + "x" * 200)
        self.assertIn("unix_socket: the path is 201 bytes", str(cm.exception))
        with self.assertRaises(ValueError):
            ShardedClient(["unix:"])
        with self.assertRaises(ValueError):
            ShardedClient(["unix:/a.sock", "unix:/a.sock"])


class UnixShardTest(unittest.TestCase):
    """One endpoint on a Unix socket, one on TCP."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.unix_server = Server(unix=True, workers=1).start()
        cls.tcp_server = Server(workers=1).start()
        cls.unix_ep = f"unix:{cls.unix_server.unix_path}"
        cls.tcp_ep = f"{cls.tcp_server.host}:{cls.tcp_server.port}"
        cls.endpoints = [cls.tcp_ep, cls.unix_ep]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.unix_server.stop()
        cls.tcp_server.stop()

    def test_scenes_should_reach_the_unix_shard_and_the_tcp_one(self):
        with ShardedClient(self.endpoints, timeout=5.0) as shards:
            for ep, server in ((self.unix_ep, self.unix_server), (self.tcp_ep, self.tcp_server)):
                name = scene_on(self.endpoints, ep, "mixed")
                sc = shards.scene(name)
                self.assertEqual(sc.endpoint, ep)
                cid = sc.create_cloth(width=4, height=4)
                sc.step(1 / 60)
                self.assertEqual(sc.get(cid).frame, 1)
                with Client(server.host, server.port) as direct:  # the TCP side of the same server
                    self.assertEqual([s["instance"] for s in direct.status(scene=name)["instances"]], [cid])
                sc.destroy()
            self.assertEqual(sorted(shards.connected()), sorted(self.endpoints))
            self.assertEqual(shards.client(self.unix_ep).endpoint, self.unix_ep)

    def test_an_unreachable_unix_shard_should_be_named(self):
        folder = tempfile.mkdtemp(prefix="clothd-nothing-")
        self.addCleanup(os.rmdir, folder)
        gone = f"unix:{folder}/clothd.sock"
        eps = [self.tcp_ep, gone]
        name = scene_on(eps, gone, "lost")
        with ShardedClient(eps, timeout=5.0) as shards:
            with self.assertRaises(EndpointUnavailable) as cm:
                shards.scene(name).create_cloth(width=3, height=3)
        self.assertEqual((cm.exception.endpoint, cm.exception.scene), (gone, name))
        self.assertIn(f"clothd endpoint {gone} is unavailable (scene '{name}' lives there): ", str(cm.exception))
        self.assertIn(f"cannot connect to clothd at {gone}: No such file or directory", str(cm.exception))


class UnixReconnectTest(unittest.TestCase):
    def test_a_reconnecting_client_should_come_back_on_the_same_socket(self):
        folder = tempfile.mkdtemp(prefix="clothd-again-")
        path = os.path.join(folder, "clothd.sock")
        first = Server(unix=path, workers=1).start()
        try:
            c = Client(unix_socket=path, timeout=5.0, reconnect=True, reconnect_timeout=10.0).connect()
            self.addCleanup(c.close)
            c.create_cloth(width=3, height=3)
            first.stop()
            self.assertFalse(os.path.exists(path), "clothd removes its socket file on shutdown")
            second = Server(unix=path, workers=1).start()
            try:
                self.assertEqual(c.status()["instances"], [], "the new server, through the same path")
                self.assertEqual(c.reconnects, 1)
            finally:
                c.close()
                second.stop()
        finally:
            first.kill()
            for leftover in os.listdir(folder):
                os.unlink(os.path.join(folder, leftover))
            os.rmdir(folder)


if __name__ == "__main__":
    unittest.main()
