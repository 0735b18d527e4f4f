#!/usr/bin/env python3
"""A cape on a walking character built from skeleton colliders.

    python3 clients/python/examples/skeleton_cape.py [--host 127.0.0.1] [--port 7878]
                                                     [--speed 1.4] [--radius 2] [--quick]

The character is a box torso and tapered-capsule limbs (thighs, shins,
upper arms: wide at the joint nearer the body, as Chaos and NvCloth model
limbs), each collider attached to a named transform ("hips", "thigh.L",
"shin.L", "arm.L", ...). Every tick (60 Hz) the script poses the skeleton
with `transform` (the hips walk a circle of --radius m and face the
walking direction; the legs and arms swing with the stride), and the
cape's top row, attached to the "shoulders" transform, follows. It
stands 1 s, speeds up over 1 s, walks 4 s, stops over 1 s, stands 1 s
(--quick: a quarter of each).

Every 0.5 s it prints how far the hem trails the shoulders along the
walking direction, and the nearest any cape particle has come to a body
collider so far (checked every 5 ticks from `get`'s colliders and
positions with the shapes' distance functions; negative: inside; the
cape's thickness, 0.01 m, while it rests on the body). Check: the lag is
~0 standing, ~0.3 m walking at 1.4 m/s, swings back past 0 when the
walker stops, and the nearest stays at 0.01 m. It exits with 1 if a
particle was ever more than 5 mm inside the body.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from clothd import Client  # noqa: E402

HZ = 60
CAPE_W, CAPE_H = 11, 22            # particles
SPACING = 0.045                    # 0.45 m wide, 0.95 m long: over the thighs
HIP_Y = 0.95
TOLERANCE = 0.005                  # m inside the body the check allows
PHASES = [(1.0, "stand"), (1.0, "speed up"), (4.0, "walk"), (1.0, "stop"), (1.0, "stand")]

# Limbs: (transform, parent, joint offset in the parent's frame, length,
# radius at the joint, radius at the far end, swing sign).
LIMBS = [
    ("thigh.L", "hips", (0.1, 0.0, 0.0), 0.44, 0.085, 0.06, 1),
    ("thigh.R", "hips", (-0.1, 0.0, 0.0), 0.44, 0.085, 0.06, -1),
    ("shin.L", "thigh.L", (0.0, -0.44, 0.0), 0.44, 0.06, 0.045, 1),
    ("shin.R", "thigh.R", (0.0, -0.44, 0.0), 0.44, 0.06, 0.045, -1),
    ("arm.L", "hips", (0.23, 0.62, 0.0), 0.3, 0.055, 0.045, -1),
    ("arm.R", "hips", (-0.23, 0.62, 0.0), 0.3, 0.055, 0.045, 1),
]
TORSO_CENTRE, TORSO_HALF = (0.0, 0.38, 0.0), (0.17, 0.3, 0.1)
SHOULDERS = (0.0, 0.66, -0.115)    # in the hips' frame: on the torso's back, top


# ---- quaternions [x, y, z, w] ------------------------------------------------

def q_axis(axis, angle):
    s = math.sin(angle / 2)
    return [axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2)]


def q_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz]


def q_rot(q, v):
    x, y, z, w = q
    tx, ty, tz = 2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])
    return [v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz),
            v[2] + w * tz + (x * ty - y * tx)]


def add(a, b):
    return [a[i] + b[i] for i in range(3)]


def sub(a, b):
    return [a[i] - b[i] for i in range(3)]


def dot(a, b):
    return sum(a[i] * b[i] for i in range(3))


# ---- the walk ------------------------------------------------------------------

def speed_at(t, top, phases):
    start = 0.0
    for length, name in phases:
        if t < start + length:
            u = (t - start) / length
            return {"stand": 0.0, "speed up": top * u, "walk": top, "stop": top * (1 - u)}[name]
        start += length
    return 0.0


def phase_at(t, phases):
    start = 0.0
    for length, name in phases:
        if t < start + length:
            return name
        start += length
    return phases[-1][1]


def pose(theta, radius, stride):
    """{name: (position, rotation)} of every transform: the hips on the
    circle facing along it (+z of the character is forward), the limbs
    swinging about their joints' x axis by the stride phase."""
    out = {}
    yaw = q_axis([0, 1, 0], -theta)  # +z turned onto the walking direction (-sin, 0, cos)
    out["hips"] = ([radius * math.cos(theta), HIP_Y, radius * math.sin(theta)], yaw)
    swing = 0.45 * math.sin(stride)
    for name, parent, joint, _length, _r0, _r1, sign in LIMBS:
        p_pos, p_rot = out[parent]
        angle = sign * swing
        if name.startswith("shin"):
            angle = 0.7 * max(0.0, -sign * math.sin(stride))  # the knee bends back on the way forward
        elif name.startswith("arm"):
            angle = 0.6 * sign * swing
        out[name] = (add(p_pos, q_rot(p_rot, joint)), q_mul(p_rot, q_axis([1, 0, 0], angle)))
    out["shoulders"] = (add(out["hips"][0], q_rot(yaw, SHOULDERS)), yaw)
    return out


# ---- distances to the body (what the check measures) --------------------------

def tapered_sd(p, c):
    """Signed distance to a tapered capsule as `get` lists it (PROTOCOL.md):
    in the plane of its axis, two circles and their common tangent."""
    n = c["normal"]
    r1, r2 = c["radius"], c["radius2"]
    big_l = max(c["height"] - r1 - r2, 0.0)
    a = sub(c["position"], [x * big_l / 2 for x in n])
    d = sub(p, a)
    y = dot(d, n)
    x = math.sqrt(max(dot(d, d) - y * y, 0.0))
    if big_l <= abs(r1 - r2):
        return math.hypot(x, y) - r1 if r1 >= r2 else math.hypot(x, y - big_l) - r2
    s = (r1 - r2) / big_l
    co = math.sqrt(1 - s * s)
    u = co * y - s * x
    if u < 0:
        return math.hypot(x, y) - r1
    if u > co * big_l:
        return math.hypot(x, y - big_l) - r2
    return co * x + s * y - r1


def box_sd(p, c):
    q = c["rotation"]
    local = q_rot([-q[0], -q[1], -q[2], q[3]], sub(p, c["position"]))
    o = [abs(local[i]) - c["halfExtents"][i] for i in range(3)]
    return math.sqrt(sum(max(v, 0.0) ** 2 for v in o)) + min(max(o), 0.0)


def nearest(state):
    """The smallest signed distance of any particle to any body collider."""
    worst = math.inf
    for c in state.colliders:
        sd = tapered_sd if c["type"] == "taperedCapsule" else box_sd if c["type"] == "box" else None
        if sd is not None:
            worst = min(worst, min(sd(p, c) for p in state.positions))
    return worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7878)
    ap.add_argument("--speed", type=float, default=1.4, help="walking speed, m/s (default 1.4)")
    ap.add_argument("--radius", type=float, default=2.0, help="radius of the circle, m (default 2)")
    ap.add_argument("--quick", action="store_true", help="a quarter of every phase (for tests)")
    args = ap.parse_args()
    phases = [(length / 4 if args.quick else length, name) for length, name in PHASES]

    total = sum(length for length, _ in phases)
    theta = stride = 0.0
    worst = math.inf
    with Client(args.host, args.port) as c:
        skeleton = pose(theta, args.radius, stride)
        shoulders_at, yaw = skeleton["shoulders"]
        half = (CAPE_W - 1) * SPACING / 2
        cape = c.create_cloth(width=CAPE_W, height=CAPE_H, spacing=SPACING,
                              origin=add(shoulders_at, q_rot(yaw, [half, 0, 0])), right=q_rot(yaw, [-1, 0, 0]),
                              down=[0, -1, 0], damping=0.03, solver_iterations=8, bend_stiffness=0.3,
                              thickness=0.01)
        for name, (position, rotation) in skeleton.items():
            c.transform(cape, name, position, rotation=rotation)
        c.attach(cape, "shoulders", list(range(CAPE_W)))
        c.add_collider(cape, "box", position=list(TORSO_CENTRE), half_extents=list(TORSO_HALF),
                       rotation=[0, 0, 0, 1], attachment="hips", friction=0.3)
        for name, _parent, _joint, length, r0, r1, _sign in LIMBS:
            # In the limb's frame the bone runs from the joint down -y.
            c.add_tapered_capsule(cape, [0, 0, 0], [0, -length, 0], r0, r1, attachment=name, friction=0.3)
        c.add_collider(cape, "plane", position=[0, 0, 0], normal=[0, 1, 0])  # the ground
        print(f"cape {cape}: {CAPE_W}x{CAPE_H} particles on a box torso and {len(LIMBS)} tapered limbs, "
              f"walking a {args.radius} m circle at up to {args.speed} m/s")
        print(f"{'time s':>6}  {'phase':<9} {'speed':>5}  {'hem lag m':>9}  {'nearest m':>9}")
        hem = [(CAPE_H - 1) * CAPE_W + x for x in range(CAPE_W)]
        try:
            for i in range(1, int(round(total * HZ)) + 1):
                t = i / HZ
                v = speed_at(t, args.speed, phases)
                theta += v / args.radius / HZ
                stride += 2 * math.pi * 1.8 * (v / 1.4) / HZ / 2  # 0.9 strides a second at 1.4 m/s
                for name, (position, rotation) in pose(theta, args.radius, stride).items():
                    c.transform(cape, name, position, rotation=rotation)
                c.step(1 / HZ, instances=[cape])
                if i % 5:
                    continue
                state = c.get(cape)
                worst = min(worst, nearest(state))
                if i % (HZ // 2):
                    continue
                mid, forward = pose(theta, args.radius, stride)["shoulders"][0], [-math.sin(theta), 0, math.cos(theta)]
                hx = sum(state.positions[p][0] for p in hem) / CAPE_W
                hz = sum(state.positions[p][2] for p in hem) / CAPE_W
                lag = (mid[0] - hx) * forward[0] + (mid[2] - hz) * forward[2]
                print(f"{t:6.2f}  {phase_at(t - 1e-9, phases):<9} {v:5.2f}  {lag:9.3f}  {worst:9.4f}")
        finally:
            c.destroy(cape)
    inside = worst < -TOLERANCE
    print(f"deepest inside the body: {max(-worst, 0.0):.4f} m "
          f"({'more' if inside else 'no more'} than the {TOLERANCE} m allowed)")
    return 1 if inside else 0


if __name__ == "__main__":
    sys.exit(main())
