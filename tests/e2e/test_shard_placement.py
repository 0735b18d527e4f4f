"""Scene placement in the Python client, with no server: the rendezvous
hash reproduces protocol/placement_vectors.json (the file the Node and C
clients check too, so all three put a scene on the same endpoint), a
fourth endpoint moves about a quarter of 1,000 scenes and only onto
itself, removing one moves only its scenes, and a Scene stamps its name on
exactly the commands that take one."""

import json
import os
import socket
import threading
import unittest

from server import REPO

import clothd
from clothd import (Client, EndpointUnavailable, FeatureMissing, IncompatibleServer, Scene, ShardedClient,
                    parse_endpoint, place_scene, rendezvous_weight)

VECTORS = os.path.join(REPO, "protocol", "placement_vectors.json")


def load_vectors() -> dict:
    with open(VECTORS) as f:
        return json.load(f)


class PlacementVectorsTest(unittest.TestCase):
    def setUp(self):
        self.v = load_vectors()

    def test_fnv1a64_and_fmix64_should_match_their_published_values(self):
        for case in self.v["fnv1a64"]:
            self.assertEqual(clothd._fnv1a64(case["input"].encode()), int(case["hash"], 16), case)
        for case in self.v["fmix64"]:
            self.assertEqual(clothd._fmix64(int(case["input"], 16)), int(case["output"], 16), case)

    def test_every_weight_vector_should_be_reproduced(self):
        self.assertGreaterEqual(len(self.v["weights"]), 8)
        for case in self.v["weights"]:
            with self.subTest(endpoint=case["endpoint"], scene=case["scene"]):
                self.assertEqual(rendezvous_weight(case["endpoint"], case["scene"]), int(case["weight"], 16))

    def test_every_placement_vector_should_be_reproduced(self):
        eps = self.v["endpoints"]
        for case in self.v["placements"]:
            with self.subTest(scene=case["scene"]):
                self.assertEqual(place_scene(eps, case["scene"]), case["owner3"])
                self.assertEqual(place_scene(eps + [self.v["added"]], case["scene"]), case["owner4"])

    def test_the_counts_over_a_thousand_scenes_should_be_reproduced(self):
        s = self.v["scenes"]
        eps = self.v["endpoints"]
        names = [s["pattern"].format(i=i) for i in range(s["count"])]
        owners = [place_scene(eps, n) for n in names]
        self.assertEqual({e: owners.count(e) for e in eps}, s["perEndpoint3"])
        added = eps + [self.v["added"]]
        self.assertEqual(sum(place_scene(added, n) != o for n, o in zip(names, owners)), s["movedWhenAdded"])
        removed = [e for e in eps if e != self.v["removed"]]
        self.assertEqual(sum(place_scene(removed, n) != o for n, o in zip(names, owners)),
                         s["movedWhenRemoved"])


class RendezvousPropertiesTest(unittest.TestCase):
    EPS = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]
    NAMES = [f"scene-{i}" for i in range(1000)]

    def test_a_fourth_endpoint_should_take_about_a_quarter_and_only_onto_itself(self):
        new = "127.0.0.1:7004"
        before = {n: place_scene(self.EPS, n) for n in self.NAMES}
        after = {n: place_scene(self.EPS + [new], n) for n in self.NAMES}
        moved = [n for n in self.NAMES if before[n] != after[n]]
        self.assertGreaterEqual(len(moved), 200)
        self.assertLessEqual(len(moved), 300)
        self.assertEqual({after[n] for n in moved}, {new})

    def test_removing_an_endpoint_should_move_only_its_scenes(self):
        gone = self.EPS[1]
        before = {n: place_scene(self.EPS, n) for n in self.NAMES}
        after = {n: place_scene([e for e in self.EPS if e != gone], n) for n in self.NAMES}
        moved = {n for n in self.NAMES if before[n] != after[n]}
        self.assertEqual(moved, {n for n in self.NAMES if before[n] == gone})
        self.assertGreater(len(moved), 250)  # it had about a third

    def test_each_endpoint_should_get_about_a_third(self):
        owners = [place_scene(self.EPS, n) for n in self.NAMES]
        for e in self.EPS:
            self.assertGreater(owners.count(e), 280, e)
            self.assertLess(owners.count(e), 390, e)

    def test_the_order_of_the_list_should_not_matter(self):
        for n in self.NAMES[:200]:
            self.assertEqual(place_scene(self.EPS, n), place_scene(list(reversed(self.EPS)), n))

    def test_a_tie_should_go_to_the_endpoint_that_sorts_first(self):
        real = clothd.rendezvous_weight
        clothd.rendezvous_weight = lambda endpoint, scene: 42  # every weight equal
        try:
            self.assertEqual(place_scene(["b:1", "a:2", "c:1"], "x"), "a:2")
            self.assertEqual(place_scene(["c:1", "b:1"], "x"), "b:1")
        finally:
            clothd.rendezvous_weight = real
        with self.assertRaises(ValueError):
            place_scene([], "x")


class NamesTest(unittest.TestCase):
    def test_endpoints_should_parse_or_be_refused_by_name(self):
        self.assertEqual(parse_endpoint("127.0.0.1:7878"), ("127.0.0.1", 7878))
        self.assertEqual(parse_endpoint("[::1]:7001"), ("::1", 7001))
        self.assertEqual(parse_endpoint("clothd-0.clothd:7878"), ("clothd-0.clothd", 7878))
        for bad in ("127.0.0.1", ":7878", "host:", "host:0", "host:65536", "host:x"):
            with self.assertRaises(ValueError) as cm:
                parse_endpoint(bad)
            self.assertIn(repr(bad), str(cm.exception))

    def test_scene_names_should_follow_the_protocol(self):
        self.assertEqual(clothd.check_scene_name("npc-capes.v2:a_b"), "npc-capes.v2:a_b")
        self.assertEqual(clothd.check_scene_name("x" * 64), "x" * 64)
        for bad in ("", "x" * 65, "a b", "é", "a/b"):
            with self.assertRaises(ValueError):
                clothd.check_scene_name(bad)

    def test_a_sharded_client_should_refuse_bad_lists(self):
        with self.assertRaises(ValueError):
            ShardedClient([])
        with self.assertRaises(ValueError):
            ShardedClient(["a:1", "a:1"])
        with self.assertRaises(TypeError):
            ShardedClient("a:1")
        with self.assertRaises(ValueError):
            ShardedClient(["a:1", "b"])

    def test_a_scene_should_be_bound_to_its_endpoint_without_connecting(self):
        shards = ShardedClient(RendezvousPropertiesTest.EPS)
        for n in ("npc-capes", "default", "level-3:flags"):
            self.assertEqual(shards.scene(n).endpoint, place_scene(RendezvousPropertiesTest.EPS, n))
        self.assertEqual(shards.connected(), [])


class SceneStampTest(unittest.TestCase):
    """What a Scene puts on the wire, read from Client._message (no socket)."""

    def line(self, client: Client, cmd: str, **fields) -> dict:
        return json.loads(client._message(cmd, fields)[1])

    def test_scene_commands_should_carry_the_scene_and_others_should_not(self):
        c = Client()
        c._scene = "npc-capes"
        self.assertEqual(self.line(c, "create", width=4)["scene"], "npc-capes")
        self.assertEqual(self.line(c, "step", dt=0.01)["scene"], "npc-capes")
        self.assertEqual(self.line(c, "get", instance=3)["scene"], "npc-capes")
        self.assertEqual(self.line(c, "wind", instance=3, wind=[1, 0, 0])["scene"], "npc-capes")
        for cmd, fields in (("ping", {}), ("stats", {}), ("auth", {"token": "t" * 16}), ("load", {"name": "a"}),
                            ("wind", {"wind": [1, 0, 0]}), ("debug", {})):
            self.assertNotIn("scene", self.line(c, cmd, **fields), cmd)
        self.assertEqual(self.line(c, "step", scene="other")["scene"], "other")  # an explicit one wins
        c._scene = None
        self.assertNotIn("scene", self.line(c, "create", width=4))

    def test_every_scene_command_should_be_a_command_of_the_protocol(self):
        with open(os.path.join(REPO, "protocol", "commands.h")) as f:
            table = f.read()
        for cmd in clothd.SCENE_COMMANDS:
            self.assertIn(f'"{cmd}"', table, cmd)

    def test_a_scene_should_restore_the_clients_scene_after_each_call(self):
        c = Client("127.0.0.1", 1, timeout=0.5)  # nothing listens on port 1
        scene = Scene(c, "npc-capes")
        self.assertEqual(scene.endpoint, "127.0.0.1:1")
        with self.assertRaises(OSError):
            scene.step()
        self.assertIsNone(c._scene)
        with self.assertRaises(AttributeError):
            scene.no_such_method()

    def test_a_scene_handle_should_refuse_a_request_for_another_scene(self):
        shards = ShardedClient(RendezvousPropertiesTest.EPS)
        capes = shards.scene("npc-capes")
        for call in (lambda: capes.step(scene="flags"), lambda: capes.create_cloth(scene="flags"),
                     lambda: capes.request("destroy", scene="flags")):
            with self.assertRaises(ValueError) as cm:
                call()
            self.assertIn("'flags'", str(cm.exception))
        self.assertEqual(shards.connected(), [], "refused before connecting")

    def test_a_down_endpoint_should_be_named_in_the_error(self):
        shards = ShardedClient(["127.0.0.1:1"], timeout=0.5)
        with self.assertRaises(EndpointUnavailable) as cm:
            shards.scene("npc-capes").create_cloth(width=4, height=4)
        e = cm.exception
        self.assertEqual(e.endpoint, "127.0.0.1:1")
        self.assertEqual(e.scene, "npc-capes")
        self.assertIn("127.0.0.1:1", str(e))
        self.assertIn("npc-capes", str(e))
        self.assertIsInstance(e, ConnectionError)
        self.assertEqual(shards.connected(), [])

    def test_a_server_without_scenes_should_be_refused_naming_it(self):
        # A fake clothd from before scenes: its hello lists no "scenes" feature.
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]

        def serve():
            conn, _ = listener.accept()
            with conn, conn.makefile("rwb") as f:
                request = json.loads(f.readline())
                f.write(json.dumps({"id": request["id"], "ok": True, "server": "clothd",
                                    "commands": ["create", "step", "hello"]}).encode() + b"\n")
                f.flush()
                f.readline()  # until the client closes

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        shards = ShardedClient([f"127.0.0.1:{port}"], timeout=5)
        try:
            with self.assertRaises(IncompatibleServer) as cm:
                shards.scene("npc-capes").create_cloth(width=4, height=4)
            self.assertIsInstance(cm.exception, FeatureMissing)
            self.assertEqual(cm.exception.features, ("scenes",))
            self.assertEqual(cm.exception.endpoint, f"127.0.0.1:{port}")
            self.assertEqual(cm.exception.code, "incompatible_server")
            self.assertIn(f"127.0.0.1:{port}", str(cm.exception))
            self.assertIn('lacks the feature "scenes" (needed by ShardedClient', str(cm.exception))
            self.assertEqual(shards.connected(), [])
        finally:
            shards.close()
            thread.join(timeout=5)
            listener.close()


if __name__ == "__main__":
    unittest.main()
