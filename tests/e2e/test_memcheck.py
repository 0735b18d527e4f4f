"""The real server under valgrind's memcheck: hostile and ordinary traffic,
then SIGTERM. Any invalid read or write, use of uninitialised memory, or a
definite/indirect leak makes valgrind exit with 99 instead of clothd's 0."""

import random
import shutil
import socket
import unittest

from server import Server

DT = 1 / 60
VALGRIND = ["valgrind", "--quiet", "--leak-check=full", "--show-leak-kinds=definite,indirect",
            "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99"]


@unittest.skipUnless(shutil.which("valgrind"), "valgrind is not installed")
class MemcheckTest(unittest.TestCase):
    def test_server_should_leak_nothing_and_touch_no_invalid_memory(self):
        srv = Server("--max-line", "4096", "--max-instances", "8", workers=2, wrapper=VALGRIND)
        srv.stop_timeout = 120.0
        srv.start()
        try:
            c = srv.client(timeout=60)
            viewer = srv.client(timeout=60)
            viewer.subscribe()
            a = c.create_cloth(width=8, height=8)
            b = c.create_cloth(width=6, height=5, down=[0, 0, 1])
            c.pin(a, list(range(8)))
            col = c.add_collider(b, "sphere", position=[0.2, -0.3, 0.2], radius=0.2)
            c.add_collider(a, "capsule", position=[0.3, -0.4, 0.05], normal=[1, 0, 0], radius=0.1, height=0.5)
            c.add_collider(b, "plane", position=[0, -1, 0], normal=[0, 1, 0])
            c.wind([1, 0, 0.5])
            for _ in range(20):
                c.step(DT)
            c.move_collider(b, col, position=[0.2, -0.2, 0.2])
            c.remove_collider(b, col)
            c.unpin(a, [0, 1])
            c.get(a)
            c.status()
            c.gravity(a, [0, -1e30, 0])
            self.assertIn(a, c.step(DT)["unstable"])  # the guard's restore path
            c.destroy(b)

            # The later commands: options, transforms, soft bodies, topology,
            # self-collision (its buffers are allocated on first use).
            c.request("set", instance=a, substeps=2, stretchCompliance=1e-4, selfDistance=0.05)
            c.request("transform", instance=a, name="hand", position=[0, 1, 0])
            c.request("attach", instance=a, name="hand", particles=[2, 3])
            c.request("addCollider", instance=a, type="sphere", attachment="hand", coupling=0.5)
            c.request("enable", instance=a, enabled=True)
            soft = c.request("create", type="softbody", shape="ball", radius=0.2, resolution=4,
                             selfDistance=0.01)["instance"]
            c.request("create", type="softbody", vertices=[[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
                      tetrahedra=[0, 1, 2, 3])
            c.request("topology", instance=soft)
            c.request("topology", instance=a)
            for _ in range(5):
                c.step(DT)
            c.destroy(soft)
            for line in [b'{"cmd":"create","type":"softbody","vertices":[[0,0,0]],"tetrahedra":[0,1,2,3]}',
                         b'{"cmd":"create","type":"softbody","vertices":[[0,0,0],[1,0,0],[0,1,0],[0,0,1]],'
                         b'"tetrahedra":[0,2,1,3]}',
                         b'{"cmd":"attach","instance":1,"name":"ghost","particle":0}',
                         b'{"cmd":"set","instance":1,"width":3}']:
                c.send_raw(line + b"\n")
                self.assertFalse(c.read_reply()["ok"])

            # Errors of every kind on the same connection.
            for line in [b"not json", b"[1,2]", b'{"cmd":"fly"}', b'{"cmd":"create","width":1}',
                         b'{"cmd":"pin","instance":1,"particles":[0,99999]}', b'{"cmd":"get","instance":4242}',
                         b'{"cmd":"addCollider","instance":1,"type":"sphere","radius":-1}',
                         b'{"cmd":"step","dt":0}', b'{"cmd":"step","instances":[1,1]}']:
                c.send_raw(line + b"\n")
                self.assertFalse(c.read_reply()["ok"])

            # Garbage, a line over the limit, and clients vanishing mid-step.
            rng = random.Random(7)
            for _ in range(3):
                s = socket.create_connection((srv.host, srv.port))
                s.sendall(bytes(rng.randrange(256) for _ in range(3000)))
                s.close()
            s = socket.create_connection((srv.host, srv.port))
            s.sendall(b"x" * 5000)
            s.recv(4096)
            s.close()
            quitter = srv.client(timeout=60)
            quitter.send_json({"cmd": "step", "dt": DT})
            quitter.close()
            self.assertEqual(c.status()["workers"], 2)
            viewer.close()
            c.close()
        except BaseException:
            srv.kill()
            raise
        srv.stop()  # asserts exit code 0: valgrind found nothing
