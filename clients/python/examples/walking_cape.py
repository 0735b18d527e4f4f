#!/usr/bin/env python3
"""A skinned cape on a walking character: a garment as games drive one.

    python3 clients/python/examples/walking_cape.py [--host 127.0.0.1] [--port 7878]
                                                    [--seconds 10] [--check]

The cape is a triangle mesh cut from a 30 x 24 sheet (3 cm spacing) with a
neck cut-out. The body is 8 capsules (torso, hips, arms, thighs, shins)
attached to four transforms (torso, hips, two legs) that the script moves
each frame: the character walks forward at 1.4 m/s, turning gently, legs
swinging. Each frame it also sends the cape's skinned pose (its rest shape
carried by the torso) as one binary `skin` request. Painted: the shoulders
(top two rows) follow the skin exactly, the reach grows to 0.5 m at the
hem, a backstop keeps the cape off the back; self-collision is on.

Every second it prints how deep any particle is inside the body (should be
~0), the largest stray beyond its reach (~0), and how far the hem swings
from its skinned place. With --check it exits 1 if a particle sank more
than 5 mm into the body or strayed more than 1 cm beyond its reach. Watch
it in the viewer (clients/viewer) while it runs.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from clothd import Client  # noqa: E402

HZ = 60
W, H, S = 30, 24, 0.03                   # the sheet: 0.87 x 0.69 m


def neck(x, y):
    return 12 <= x <= 16 and y < 3


def quat_y(a):
    return [0.0, math.sin(a / 2), 0.0, math.cos(a / 2)]


def quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz]


def rotate(q, v):
    x, y, z, w = q
    t = [2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])]
    return [v[0] + w * t[0] + (y * t[2] - z * t[1]), v[1] + w * t[1] + (z * t[0] - x * t[2]),
            v[2] + w * t[2] + (x * t[1] - y * t[0])]


def cape_mesh():
    """Rest vertices (in the torso's frame), triangles, and each vertex's reach."""
    tris, used = [], set()
    for y in range(H - 1):
        for x in range(W - 1):
            if neck(x, y):
                continue
            tl = y * W + x
            quad = [tl, tl + W, tl + 1, tl + 1, tl + W, tl + W + 1]
            tris += quad
            used.update(quad)
    order = sorted(used)
    remap = {old: new for new, old in enumerate(order)}
    rest, reach = [], []
    for i in order:
        x, y = i % W, i // W
        u = (x - (W - 1) / 2) * S
        rest.append([u, 0.25 - y * S, -0.17 - 0.25 * u * u])  # round the back
        reach.append(0.0 if y < 2 else 0.5 * (y - 1) / (H - 2))
    return rest, [remap[i] for i in tris], reach


def pose(t):
    """Torso position, heading and leg swing at time t."""
    heading = 0.4 * math.sin(0.5 * t)
    torso = [1.4 * t * math.sin(heading), 1.1 + 0.03 * math.sin(4 * math.pi * t),
             1.4 * t * math.cos(heading)]
    return torso, heading, 0.5 * math.sin(2 * math.pi * t)


BODY = [  # (transform, centre, axis, radius, total height)
    ("torso", [0, 0.05, 0], [0, 1, 0], 0.15, 0.6),
    ("hips", [0, 0, 0], [1, 0, 0], 0.14, 0.42),
    ("torso", [-0.22, 0.05, 0], [0, 1, 0], 0.05, 0.35),
    ("torso", [0.22, 0.05, 0], [0, 1, 0], 0.05, 0.35),
    ("leftLeg", [0, -0.22, 0], [0, 1, 0], 0.08, 0.45),
    ("rightLeg", [0, -0.22, 0], [0, 1, 0], 0.08, 0.45),
    ("leftLeg", [0, -0.62, 0], [0, 1, 0], 0.06, 0.42),
    ("rightLeg", [0, -0.62, 0], [0, 1, 0], 0.06, 0.42),
]


def move_body(c, cid, t):
    torso, heading, swing = pose(t)
    turn = quat_y(heading)
    bones = {"torso": (torso, turn), "hips": ([torso[0], torso[1] - 0.35, torso[2]], turn)}
    for side, name in ((-1, "leftLeg"), (1, "rightLeg")):
        hip = rotate(turn, [0.1 * side, 0, 0])
        q = quat_mul(turn, [math.sin(side * swing / 2), 0, 0, math.cos(side * swing / 2)])
        bones[name] = ([torso[0] + hip[0], torso[1] - 0.35 + hip[1], torso[2] + hip[2]], q)
    for name, (p, q) in bones.items():
        c.transform(cid, name, p, q)
    return bones


def skin_pose(rest, t):
    torso, heading, _ = pose(t)
    turn = quat_y(heading)
    back = rotate(turn, [0, 0, -1])
    positions = [[torso[k] + r[k] for k in range(3)] for r in map(lambda v: rotate(turn, v), rest)]
    return positions, [back] * len(rest)


def capsule_depth(bone, centre, axis, radius, height, p):
    pos, q = bone
    c = [pos[k] + v for k, v in enumerate(rotate(q, centre))]
    a = rotate(q, axis)
    d = [p[k] - c[k] for k in range(3)]
    half = height / 2 - radius
    s = max(-half, min(half, sum(d[k] * a[k] for k in range(3))))
    e = [d[k] - s * a[k] for k in range(3)]
    return radius - math.sqrt(sum(x * x for x in e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7878)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--check", action="store_true", help="exit 1 if the cape enters the body")
    args = ap.parse_args()

    rest, tris, reach = cape_mesh()
    with Client(args.host, args.port) as c:
        torso, _, _ = pose(0.0)
        start = [[torso[k] + r[k] for k in range(3)] for r in rest]
        cid = c.create_mesh_cloth(start, tris, mass=0.8, self_distance=0.8 * S, thickness=0.01,
                                  max_distance=reach, backstop_distance=0.01,
                                  backstop_radius=0.3)
        bones = move_body(c, cid, 0.0)
        for bone, centre, axis, radius, height in BODY:
            c.add_collider(cid, "capsule", centre, axis, radius, height, friction=0.3,
                           attachment=bone)
        positions, normals = skin_pose(rest, 0.0)
        c.skin(cid, positions, normals)
        worst_depth = worst_stray = 0.0
        frames = int(args.seconds * HZ)
        for f in range(1, frames + 1):
            t = f / HZ
            bones = move_body(c, cid, t)
            positions, normals = skin_pose(rest, t)
            c.skin(cid, positions, normals)
            c.step(1 / HZ, instances=[cid])
            if f % (HZ // 4) and f != frames:
                continue  # check four times a second
            now = c.get(cid).positions
            depth = max(capsule_depth(bones[b], ce, ax, r, h, p)
                        for p in now for b, ce, ax, r, h in BODY)
            stray = max(math.dist(p, s) - r for p, s, r in zip(now, positions, reach))
            worst_depth, worst_stray = max(worst_depth, depth), max(worst_stray, stray)
            if f % HZ == 0 or f == frames:
                hem = len(now) - W // 2
                print(f"t={t:4.1f}s  deepest in the body {max(depth, 0):.4f} m  beyond reach "
                      f"{max(stray, 0):.4f} m  hem {math.dist(now[hem], positions[hem]):.3f} m "
                      f"from its skin", flush=True)
        c.destroy(cid)
    if args.check and (worst_depth > 0.005 or worst_stray > 0.01):
        print(f"FAILED: {worst_depth:.4f} m inside the body, {worst_stray:.4f} m beyond reach")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
