"""Scenes sharded over three real clothd processes on loopback, through
clothd.ShardedClient (issue 12, part 2): every scene is reachable and lives
on the server rendezvous hashing names, each server's status holds only
its own scenes, every method of a scene handle (the scene and scenes
commands included) reaches the scene's server, ShardedClient.scenes()
merges every server's, a fourth endpoint takes about a quarter of them
(and only those move), and a stopped server is an error naming it, with
no failover to another server, until it is back. The sharding snippet of
clients/python/README.md runs against the three and leaves nothing.

Every server must list the "scenes" feature in its hello: a server
without it fails these tests (ShardedClient refuses it)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from server import REPO, Server

from clothd import Client, ClothdError, EndpointUnavailable, Scene, ShardedClient, place_scene

SCENES = [f"game-{i}" for i in range(30)]


def endpoint(server: Server) -> str:
    return f"{server.host}:{server.port}"


def wait_until(check, what: str, timeout: float = 5.0) -> None:
    """Waits for check() to hold (a closed connection's instances go right
    after the server sees the close, not before the next request elsewhere)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.02)


def scene_on(endpoints: list, where: str, prefix: str) -> str:
    """The first scene named prefix-N that rendezvous hashing puts on `where`."""
    return next(n for n in (f"{prefix}-{i}" for i in range(1000)) if place_scene(endpoints, n) == where)


class ShardingTest(unittest.TestCase):
    servers: list

    @classmethod
    def setUpClass(cls) -> None:
        cls.servers = []
        cls.dirs = [tempfile.mkdtemp(prefix="clothd-shard-") for _ in range(3)]
        try:
            for d in cls.dirs:  # a --data-dir each: save and record reach their scene's server
                cls.servers.append(Server("--data-dir", d, workers=1).start())
            with Client(cls.servers[0].host, cls.servers[0].port, require=["scenes"]) as c:
                assert "scenes" in c.features, "the servers under test have scenes"
        except BaseException:
            for s in cls.servers:
                s.kill()
            for d in cls.dirs:
                shutil.rmtree(d, ignore_errors=True)
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
        for d in cls.dirs:
            shutil.rmtree(d, ignore_errors=True)

    def client_of(self, ep: str) -> Client:
        server = next(s for s in self.servers if endpoint(s) == ep)
        c = server.client()
        self.addCleanup(c.close)
        return c

    def test_scene_and_scenes_should_go_to_the_scenes_server(self):
        for name in SCENES:
            scene = self.shards.scene(name)
            reply = scene.scene()  # a misrouted one would find no instance there
            self.assertEqual((reply["scene"], reply["instances"], reply["owned"]), (name, [self.ids[name]], False))
            self.assertEqual(scene.scenes(), [{"scene": name, "instances": 1, "ephemeral": False}])

    def test_scenes_should_merge_every_server(self):
        merged = [e for e in self.shards.scenes() if e["scene"] in SCENES]  # other tests' come and go
        self.assertEqual([e["scene"] for e in merged], sorted(SCENES), "each scene once, sorted")
        for e in merged:
            self.assertEqual(e["endpoint"], place_scene(self.endpoints, e["scene"]), e)
            self.assertEqual((e["instances"], e["ephemeral"]), (1, False), e)
        self.assertEqual(sorted(self.shards.connected()), sorted(self.endpoints), "it asked every server")

    def test_every_method_of_a_scene_should_reach_its_server(self):
        """Instance ids are each server's own (the same numbers on all
        three): a request sent to another server would name an instance of
        another scene there, or none, and be refused."""
        for ep, data in zip(self.endpoints, self.dirs):
            name = scene_on(self.endpoints, ep, "route")
            with self.subTest(scene=name, endpoint=ep):
                self.exercise_scene(name, ep, data)

    def exercise_scene(self, name: str, ep: str, data: str) -> None:
        sc = self.shards.scene(name)
        self.assertEqual(sc.endpoint, ep)
        cid = sc.create_cloth(width=4, height=4, origin=[0, 1, 0])
        soft = sc.create_softbody(shape="ball", radius=0.2, resolution=3, center=[2, 1, 0])
        mesh = sc.create_mesh_cloth([[0, 0, 0], [1, 0, 0], [0, -1, 0]], [0, 1, 2])
        other = sc.create("cloth", width=2, height=2, origin=[4, 1, 0])
        self.assertEqual(sc.pin(cid, [0, 1]), 2)
        self.assertEqual(sc.unpin(cid, 1), 1)
        sc.pin_bulk(cid, [2], [[0.2, 1, 0]])
        self.assertEqual(sc.wind([1, 0, 0], instance=cid), [1, 0, 0])
        sc.gravity(cid, [0, -1, 0])
        col = sc.add_collider(cid, "sphere", position=[0, 0, 0], radius=0.1)
        sc.move_collider(cid, col, position=[0, -0.5, 0])
        cap = sc.add_tapered_capsule(cid, [0, 0, 0], [0, -1, 0], 0.1, 0.05)
        sc.remove_collider(cid, cap)
        self.assertFalse(sc.enable(soft, False))
        sc.set(cid, stiffness=0.8)
        sc.transform(cid, "hand", [0, 1, 0])
        self.assertEqual(sc.attach(cid, "hand", 3), 1)
        sc.teleport(mesh, translation=[0, 0.1, 0])
        sc.skin(mesh, [[0, 0.1, 0], [1, 0.1, 0], [0, -0.9, 0]])
        self.assertEqual(len(sc.topology(cid)["triangles"]), 3 * 2 * 3 * 3)
        self.assertEqual(sorted(sc.subscribe()["instances"]), sorted([cid, soft, mesh, other]))
        self.assertEqual(sc.step(1 / 60)["stepped"], 3, "the scene's enabled instances, no other")
        self.assertEqual({f.instance for f in sc.client.poll_frames()}, {cid, soft, mesh, other})
        sc.unsubscribe()
        self.assertNotIn(name, sc.client.subscriptions)
        self.assertEqual(sc.save(f"{name}-snap")["instances"], 4)
        self.assertEqual(sc.record(f"{name}-j")["instances"], [cid, soft, mesh, other])
        sc.step(1 / 60)
        self.assertEqual(sc.stop_recording()["frames"], 1)
        self.assertIn(f"{name}-j", sc.journals()["journals"])
        self.assertEqual(sorted(sc.instances()), sorted([cid, soft, mesh, other]))
        self.assertEqual(sc.destroy(other), [other])
        # What a plain client of that server sees; the other servers know nothing of the scene.
        direct = self.client_of(ep)
        state = direct.get(cid)
        self.assertEqual((state.scene, state.frame, state.gravity, state.wind), (name, 2, [0, -1, 0], [1, 0, 0]))
        self.assertEqual(state.pinned, [0, 2, 3])
        self.assertEqual([c["collider"] for c in state.colliders], [col])
        self.assertFalse(direct.get(soft).enabled)
        self.assertEqual(direct.scenes(name), [{"scene": name, "instances": 3, "ephemeral": False}])
        self.assertEqual(sorted(os.listdir(data)), [f"{name}-j.cdj", f"{name}-snap.cds"])
        for other_ep in self.endpoints:
            if other_ep != ep:
                self.assertEqual(self.client_of(other_ep).scenes(name), [], other_ep)
        self.assertEqual(sorted(sc.destroy()), sorted([cid, soft, mesh]))
        self.assertEqual(direct.scenes(name), [])

    def test_a_held_scene_should_go_with_its_connection(self):
        with ShardedClient(self.endpoints, timeout=5.0) as mine:
            name = scene_on(self.endpoints, self.endpoints[1], "held")
            match = mine.scene(name)
            self.assertEqual(match.scene(ephemeral=True)["owned"], True)
            iid = match.create_cloth(width=3, height=3)
            direct = self.client_of(self.endpoints[1])
            self.assertEqual(direct.scenes(name), [{"scene": name, "instances": 1, "ephemeral": True}])
            self.assertIs(direct.scene(name)["owned"], False, "held by the shard's connection, not this one")
        # Closed with the ShardedClient: the scene and its instance are gone.
        wait_until(lambda: direct.scenes(name) == [], f"scene {name} gone with its connection")
        self.assertNotIn(iid, {s["instance"] for s in direct.status()["instances"]})

    def test_the_readme_sharding_snippet_should_leave_nothing_behind(self):
        readme = open(os.path.join(REPO, "clients", "python", "README.md")).read()
        code = re.search(r"```python\n(from clothd import ShardedClient.*?)```", readme, re.S).group(1)
        listed = re.search(r"ShardedClient\((\[[^]]*\])", code).group(1)
        code = code.replace(listed, repr(self.endpoints))
        before = self.shards.scenes()
        out = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(REPO, "clients", "python"),
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        wait_until(lambda: self.shards.scenes() == before, "no scene, no instance left on any server")

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

    def test_scenes_of_every_server_should_name_one_that_is_down(self):
        servers = [Server(workers=1).start() for _ in range(3)]
        try:
            eps = [endpoint(s) for s in servers]
            with ShardedClient(eps, timeout=5.0) as shards:
                self.assertEqual(shards.scenes(), [])
                servers[2].stop()
                with self.assertRaises(EndpointUnavailable) as cm:
                    shards.scenes()
                self.assertEqual((cm.exception.endpoint, cm.exception.scene), (eps[2], None))
                self.assertIn(eps[2], str(cm.exception))
        finally:
            for s in servers:
                if s.alive():
                    s.stop()


if __name__ == "__main__":
    unittest.main()
