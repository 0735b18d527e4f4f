"""Garments over the real server: a cloth cut as a triangle mesh, painted
per-vertex properties, and the skin that drives them (issue 14)."""

import json
import math
import unittest

from server import ServerTestCase, assert_error, send_line


def rect_mesh(w, h, s=0.1, hole=lambda x, y: False):
    """A w x h rectangle in the xy plane (y down), triangulated like the
    grid; cells for which hole(x, y) is true are left out, and with them
    the vertices no triangle uses."""
    tris = []
    for y in range(h - 1):
        for x in range(w - 1):
            if hole(x, y):
                continue
            tl = y * w + x
            tris += [tl, tl + w, tl + 1, tl + 1, tl + w, tl + w + 1]
    used = sorted(set(tris))
    remap = {old: new for new, old in enumerate(used)}
    verts = [[(i % w) * s, -(i // w) * s, 0.0] for i in used]
    return verts, [remap[i] for i in tris], remap


class MeshClothTest(ServerTestCase):
    def raw(self, **fields):
        return send_line(self.c, json.dumps(fields))

    def test_a_mesh_cloth_is_created_and_hands_back_its_triangles_and_uvs(self):
        verts, tris, _ = rect_mesh(4, 3)
        uvs = [c for v in verts for c in (v[0], -v[1])]
        r = self.c.request("create", type="cloth", vertices=verts, triangles=tris, uvs=uvs)
        # The grid's table: structural 3x3 + 4x2 = 17, the 6 cells' two
        # diagonals = 12, skip-one bending 2x3 + 4x1 = 10.
        self.assertEqual(r["particles"], 12)
        self.assertEqual(r["constraints"], 17 + 12 + 10)
        t = self.c.request("topology", instance=r["instance"])
        self.assertEqual(t["triangles"], tris)
        self.assertEqual(len(t["uvs"]), 24)
        for got, want in zip(t["uvs"], uvs):
            self.assertAlmostEqual(got, want, delta=1e-6)
        self.assertIs(t["skinned"], False)
        self.c.destroy(r["instance"])

    def test_flat_and_nested_vertices_are_the_same_mesh(self):
        verts, tris, _ = rect_mesh(3, 3)
        a = self.c.request("create", type="cloth", vertices=verts, triangles=tris)
        b = self.c.request("create", type="cloth", vertices=[c for v in verts for c in v],
                           triangles=tris)
        self.assertEqual(self.c.get(a["instance"]).positions, self.c.get(b["instance"]).positions)

    def test_every_bad_mesh_is_refused_naming_the_fault(self):
        verts, tris, _ = rect_mesh(3, 3)
        cases = [
            (dict(vertices=verts, triangles=tris[:-1]),
             "triangles: 23 indices is not a multiple of 3"),
            (dict(vertices=verts, triangles=tris[:-3] + [0, 1, 99]),
             "triangles[23]: index 99 out of range (9 vertices)"),
            (dict(vertices=verts, triangles=[0, 1, 2] + tris),
             "triangles: triangle 0 is degenerate (zero area)"),
            (dict(vertices=verts, triangles=tris + [tris[1], tris[0], tris[2]]),
             "triangles: triangle 8 repeats triangle 0"),
            (dict(vertices=verts, triangles=tris + [0, 1, 4, 0, 1, 5]),
             "triangles: edge 0-1 is shared by 3 triangles (non-manifold: at most 2)"),
            (dict(vertices=verts + [[5, 5, 5]], triangles=tris),
             "vertices: vertex 9 belongs to no triangle"),
            (dict(vertices=verts[:-1] + [[0, 2e5, 0]], triangles=tris),
             "vertices[8]: outside the world box (|x|, |y|, |z| <= 100000 m)"),
            (dict(vertices=verts, triangles=tris, uvs=[0.5] * 17),
             "uvs: 17 values for 9 vertices (2 per vertex)"),
            (dict(vertices=verts, triangles=tris, width=4),
             "width: not used with \"vertices\" (a mesh cloth's vertices are its layout)"),
            (dict(vertices=verts), "triangles: required with \"vertices\""),
            (dict(vertices=[0, 0, 0, 1], triangles=[0, 0, 0]),
             "vertices: 4 numbers is not a multiple of 3 (x, y, z per point)"),
        ]
        for fields, message in cases:
            with self.subTest(message=message):
                assert_error(self, self.raw(cmd="create", type="cloth", **fields),
                             "invalid_argument", message=message)

    def test_a_cape_with_a_neck_hole_hangs_from_its_shoulders(self):
        verts, tris, remap = rect_mesh(12, 10, 0.05, hole=lambda x, y: 4 <= x <= 6 and y < 2)
        verts = [[v[0], 0.0, -v[1]] for v in verts]  # lying flat: it must fall to hang
        r = self.c.request("create", type="cloth", vertices=verts, triangles=tris, selfDistance=0.02)
        cid = r["instance"]
        shoulders = [remap[x] for x in range(12) if x in remap]
        self.c.request("pin", instance=cid, particles=shoulders)
        for _ in range(60):
            self.c.request("step", instances=[cid])
        s = self.c.get(cid)
        lowest = min(p[1] for p in s.positions)
        self.assertLess(lowest, -0.40, "the 0.45 m cape hangs from its shoulders")
        self.assertTrue(all(math.isfinite(c) for p in s.positions for c in p))
        self.c.destroy(cid)


class PaintAndSkinTest(ServerTestCase):
    def raw(self, **fields):
        return send_line(self.c, json.dumps(fields))

    def test_paint_is_checked_against_the_vertex_count_and_handed_back(self):
        cid = self.c.create_cloth(width=5, height=4)
        assert_error(self, self.raw(cmd="set", instance=cid, maxDistance=[0.1] * 19),
                     "invalid_argument",
                     message="maxDistance: 19 values for 20 vertices (one per vertex, or one for all)")
        assert_error(self, self.raw(cmd="set", instance=cid, backstopRadius=-1),
                     "invalid_argument", message="backstopRadius: must be a number in [0, 100000]")
        assert_error(self, self.raw(cmd="set", instance=cid, maxDistance=[0.1] * 19 + ["x"]),
                     "invalid_argument", prefix="maxDistance[19]: must be a number")
        self.assertTrue(self.raw(cmd="set", instance=cid, maxDistance=[0.0] * 5 + [0.2] * 15,
                                 invMassScale=1)["ok"])
        t = self.c.request("topology", instance=cid)
        for got, want in zip(t["maxDistance"][:6], [0, 0, 0, 0, 0, 0.2]):
            self.assertAlmostEqual(got, want, delta=1e-6)
        self.assertEqual(t["invMassScale"], [1] * 20)
        self.assertNotIn("backstopRadius", t)
        self.assertTrue(self.raw(cmd="set", instance=cid, maxDistance=None)["ok"])
        self.assertNotIn("maxDistance", self.c.request("topology", instance=cid))

    def test_create_takes_paint_too(self):
        r = self.c.request("create", width=3, height=3, maxDistance=0.5)
        self.assertEqual(self.c.request("topology", instance=r["instance"])["maxDistance"], [0.5] * 9)
        assert_error(self, self.raw(cmd="create", width=3, height=3, maxDistance=[1, 2]),
                     "invalid_argument",
                     message="maxDistance: 2 values for 9 vertices (one per vertex, or one for all)")

    def test_skin_moves_max_distance_zero_vertices_exactly(self):
        cid = self.c.create_cloth(width=4, height=3, spacing=0.1, maxDistance=0)
        base = self.c.get(cid).positions
        for f in range(1, 11):
            pose = [[p[0] + 0.02 * f, p[1], p[2] + 0.01 * f] for p in base]
            self.assertTrue(self.c.request("skin", instance=cid, positions=pose)["ok"])
            self.c.request("step", instances=[cid])
            got = self.c.get(cid).positions
            for g, w in zip(got, pose):
                for k in range(3):
                    self.assertAlmostEqual(g[k], w[k], delta=1e-5)
        self.assertIs(self.c.request("topology", instance=cid)["skinned"], True)

    def test_skin_errors_name_the_field(self):
        cid = self.c.create_cloth(width=3, height=2)
        pose = [[0, 0, 0]] * 6
        assert_error(self, self.raw(cmd="skin", instance=cid, positions=pose[:5]),
                     "invalid_argument", message="positions: 5 points for 6 vertices (one per vertex)")
        assert_error(self, self.raw(cmd="skin", instance=cid, positions=pose, normals=pose[:2]),
                     "invalid_argument", message="normals: 2 normals for 6 positions")
        assert_error(self, self.raw(cmd="skin", instance=cid, positions=pose[:5] + [[0, 3e5, 0]]),
                     "invalid_argument",
                     message="positions[5]: outside the world box (|x|, |y|, |z| <= 100000 m)")
        assert_error(self, self.raw(cmd="skin", instance=cid), "invalid_argument",
                     message="positions: required")
        assert_error(self, self.raw(cmd="skin", instance=999, positions=pose), "not_found",
                     prefix="instance")


if __name__ == "__main__":
    unittest.main()
