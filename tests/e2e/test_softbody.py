"""Soft bodies and topology through the server: creation from a mesh or a
generator, the errors for bad meshes, volume kept on the floor, and the
triangles a renderer needs."""

from server import ServerTestCase, assert_error, send_line

DT = 1 / 60
CUBE = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]


class SoftBodyTest(ServerTestCase):
    def test_bad_meshes_should_name_the_field(self):
        for body, code, prefix in [
            ({"vertices": CUBE[:3], "tetrahedra": [0, 1, 2, 3]}, "invalid_argument", "vertices: at least 4"),
            ({"vertices": CUBE, "tetrahedra": [0, 1, 2]}, "invalid_argument", "tetrahedra: 3 indices"),
            ({"vertices": CUBE, "tetrahedra": [0, 1, 2, 9]}, "invalid_argument", "tetrahedra[3]: index 9"),
            ({"vertices": CUBE, "tetrahedra": [0, 2, 1, 3]}, "invalid_argument", "tetrahedra: tetrahedron 0 is inverted"),
            ({"vertices": [[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 0, 1]], "tetrahedra": [0, 1, 2, 3]},
             "invalid_argument", "tetrahedra: tetrahedron 0 is degenerate"),
            ({"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, "z"]], "tetrahedra": [0, 1, 2, 3]},
             "invalid_argument", "vertices[3]"),
            ({"vertices": CUBE, "tetrahedra": [0, 1, 2, -3]}, "invalid_argument", "tetrahedra[3]"),
            ({"tetrahedra": [0, 1, 2, 3]}, "invalid_argument", "vertices: required"),
            ({"shape": "blob"}, "invalid_argument", "shape:"),
            ({"shape": "box", "cells": [1, 0, 1]}, "invalid_argument", "cells[1]"),
            ({"shape": "ball", "radius": -1}, "invalid_argument", "radius"),
            ({"shape": "ball", "volumeStiffness": 2}, "invalid_argument", "volumeStiffness"),
            ({"shape": "ball", "selfDistance": -0.1}, "invalid_argument", "selfDistance"),
        ]:
            line = {"cmd": "create", "type": "softbody", **body}
            with self.subTest(body=body):
                import json
                reply = send_line(self.c, json.dumps(line))
                assert_error(self, reply, code, prefix=prefix)
        self.assertTrue(self.c.status()["ok"])

    def test_ball_should_rest_on_the_floor_with_its_volume(self):
        reply = self.c.request("create", type="softbody", shape="ball", radius=0.3, resolution=6, center=[0, 1, 0])
        sid = reply["instance"]
        self.c.request("addCollider", instance=sid, type="plane", friction=0.5)
        for _ in range(240):
            self.c.step(DT)
        positions = self.c.get(sid).positions
        # Nothing below the floor, and it came down from 0.7 m.
        self.assertGreaterEqual(min(p[1] for p in positions), -1e-4)
        self.assertLess(min(p[1] for p in positions), 0.05)
        text = self.c.status()["text"]
        self.assertIn(f"  Soft body {sid}: 179 particles, 1504 constraints, 1 colliders", text)

    def cantilever(self, youngs):
        """A 1 x 0.1 x 0.1 m beam of 1000 kg/m^3, 20 x 2 x 1 cells, its x = 0
        face pinned, damped to rest under its own weight with a converged
        budget (solver/material.c): its free end's mean drop over w L^4 / (8 E I)."""
        sid = self.c.request("create", type="softbody", shape="box", size=[1, 0.1, 0.1],
                             cells=[20, 2, 1], origin=[0, -0.05, -0.05], mass=10,
                             youngsModulus=youngs, poissonRatio=0.3, substeps=64,
                             solverIterations=8, velocityRetention=1e-12, sleepThreshold=0,
                             tethers=False)["instance"]
        # Vertex (x, y, z) of the 21 x 3 x 2 lattice is (z * 3 + y) * 21 + x.
        ends = [(z * 3 + y) * 21 for z in range(2) for y in range(3)]
        self.c.pin(sid, ends)
        for _ in range(36):
            self.c.step(1 / 120, instances=[sid])
        positions = self.c.get(sid).positions
        drop = -sum(positions[i + 20][1] for i in ends) / len(ends)
        formula = 1000 * 9.81 * 0.01 * 1.0 / (8 * youngs * 0.1 ** 4 / 12)
        self.c.request("destroy", instance=sid)
        return drop / formula

    def test_a_material_beam_should_bend_as_its_youngs_modulus_says(self):
        soft, stiff = self.cantilever(3e7), self.cantilever(6e7)
        # 2 cells across its depth lock to 0.70 of the formula (PROTOCOL.md,
        # youngsModulus); twice the modulus, half the drop.
        self.assertGreater(soft, 0.6)
        self.assertLess(soft, 0.8)
        self.assertAlmostEqual(stiff / soft, 1.0, delta=0.1)

    def test_topology_should_give_grid_triangles_and_uvs_for_cloth(self):
        cid = self.c.create_cloth(width=3, height=2)
        topo = self.c.request("topology", instance=cid)
        # tl bl tr, tr bl br for the two cells.
        self.assertEqual(topo["triangles"], [0, 3, 1, 1, 3, 4, 1, 4, 2, 2, 4, 5])
        self.assertEqual(topo["uvs"], [0, 0, 0.5, 0, 1, 0, 0, 1, 0.5, 1, 1, 1])

    def test_topology_should_give_the_surface_of_a_soft_body(self):
        sid = self.c.request("create", type="softbody", shape="box", cells=[2, 2, 2])["instance"]
        topo = self.c.request("topology", instance=sid)
        self.assertEqual(len(topo["triangles"]), 3 * 6 * 4 * 2)  # 6 faces x 4 squares x 2
        self.assertNotIn("uvs", topo)
        self.assertTrue(all(0 <= i < 27 for i in topo["triangles"]))
