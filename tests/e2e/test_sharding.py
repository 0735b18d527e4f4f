"""Scenes sharded over three real clothd processes on loopback, through
clothd.ShardedClient (issue 12, part 2): every scene is reachable and lives
on the server rendezvous hashing names, each server's status holds only
its own scenes, a fourth endpoint takes about a quarter of them (and only
those move), and a stopped server is an error naming it, with no failover
to another server, until it is back.

The server's scenes (part 1) are needed: on a server whose hello lists no
"scene" command, the tests are skipped, saying so."""

import unittest

from server import Server

from clothd import Client, ClothdError, EndpointUnavailable, Scene, ShardedClient, place_scene  # noqa: F401

SCENES = [f"game-{i}" for i in range(30)]


def skip_without_scenes(client: Client) -> None:
    """SkipTest when the server's hello lists no "scene" command (no scenes yet)."""
    commands = client.hello().get("commands") or []
    if "scene" not in commands:
        raise unittest.SkipTest("this clothd has no scenes yet (hello lists no \"scene\" command); "
                                "runs once they are on main")


def endpoint(server: Server) -> str:
    return f"{server.host}:{server.port}"


class ShardingTest(unittest.TestCase):
    servers: list

    @classmethod
    def setUpClass(cls) -> None:
        cls.servers = []
        try:
            for _ in range(3):
                cls.servers.append(Server(workers=1).start())
            with cls.servers[0].client() as c:
                skip_without_scenes(c)
        except BaseException:
            for s in cls.servers:
                s.kill()
            raise
        cls.endpoints = [endpoint(s) for s in cls.servers]
        cls.shards = ShardedClient(cls.endpoints, timeout=5.0)
        cls.ids = {}
        for name in SCENES:
            cls.ids[name] = cls.shards.scene(name).create_cloth(width=4, height=4)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.shards.close()
        for s in cls.servers:
            s.stop()

    def server_status(self, server: Server) -> set:
        with server.client() as c:
            return {int(s["instance"]) for s in c.status()["instances"]}

    def test_every_scene_should_step_and_answer_on_its_server(self):
        for name in SCENES:
            scene = self.shards.scene(name)
            self.assertEqual(scene.endpoint, place_scene(self.endpoints, name))
            reply = scene.step(1 / 60)
            self.assertEqual(reply["stepped"], 1, name)  # its own instance, no other scene's
            state = scene.get(self.ids[name])
            self.assertGreaterEqual(state.frame, 1, name)
            self.assertEqual(scene.instances(), [self.ids[name]], name)
        self.assertEqual(sorted(self.shards.connected()), sorted(self.endpoints))

    def test_each_server_should_hold_only_its_own_scenes(self):
        placed = {e: set() for e in self.endpoints}
        for name in SCENES:
            placed[place_scene(self.endpoints, name)].add(self.ids[name])
        for server in self.servers:
            self.assertEqual(self.server_status(server), placed[endpoint(server)], endpoint(server))
        self.assertTrue(all(len(p) >= 3 for p in placed.values()), {e: len(p) for e, p in placed.items()})

    def test_a_fourth_endpoint_should_take_about_a_quarter_and_leave_the_rest(self):
        with Server(workers=1) as fourth:
            grown = ShardedClient(self.endpoints + [endpoint(fourth)], timeout=5.0)
            try:
                moved = [n for n in SCENES if grown.endpoint(n) != self.shards.endpoint(n)]
                self.assertTrue(3 <= len(moved) <= 13, f"{len(moved)} of {len(SCENES)} moved")
                self.assertEqual({grown.endpoint(n) for n in moved}, {endpoint(fourth)})
                for name in SCENES:
                    scene = grown.scene(name)
                    if name in moved:  # placed on the new server, which holds nothing of it yet
                        with self.assertRaises(ClothdError):
                            scene.get(self.ids[name])
                        self.assertEqual(scene.instances(), [])
                    else:  # still where it was made, reachable through the new list
                        self.assertEqual(scene.get(self.ids[name]).instance, self.ids[name])
            finally:
                grown.close()


class StoppedEndpointTest(unittest.TestCase):
    def test_a_stopped_server_should_be_named_and_nothing_should_fail_over(self):
        servers = [Server(workers=1).start() for _ in range(3)]
        shards = None
        try:
            with servers[0].client() as c:
                skip_without_scenes(c)
            eps = [endpoint(s) for s in servers]
            shards = ShardedClient(eps, timeout=5.0)
            victim = servers[1]
            name = next(n for n in SCENES if place_scene(eps, n) == endpoint(victim))
            other = next(n for n in SCENES if place_scene(eps, n) != endpoint(victim))
            shards.scene(name).create_cloth(width=4, height=4)
            shards.scene(other).create_cloth(width=4, height=4)
            port = victim.port
            victim.stop()
            for _ in range(2):  # the connection that broke, then a fresh connect that is refused
                with self.assertRaises(EndpointUnavailable) as cm:
                    shards.scene(name).step(1 / 60)
                self.assertEqual(cm.exception.endpoint, endpoint(victim))
                self.assertEqual(cm.exception.scene, name)
                self.assertIn(endpoint(victim), str(cm.exception))
            self.assertEqual(shards.scene(other).step(1 / 60)["stepped"], 1, "the other servers go on")
            for s in (servers[0], servers[2]):
                with s.client() as c:
                    self.assertEqual(Scene(c, name).instances(), [], "the scene was not recreated elsewhere")
            # Back on its port (empty: no --data-dir), the next call reaches it again.
            servers[1] = Server("--port", str(port), workers=1).start()
            self.assertEqual(servers[1].port, port)
            self.assertEqual(shards.scene(name).instances(), [])
        finally:
            if shards is not None:
                shards.close()
            for s in servers:
                if s.alive():
                    s.stop()


if __name__ == "__main__":
    unittest.main()
