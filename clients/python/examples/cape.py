#!/usr/bin/env python3
"""A cape on a character walking in a circle.

    python3 clients/python/examples/cape.py [--host 127.0.0.1] [--port 7878]
                                            [--speed 1.5] [--radius 2]

The character is a capsule collider (1.8 m tall, 0.25 m radius) that stands
for 1 s, speeds up to --speed m/s over 1 s, walks a circle of --radius m
for 4 s, stops over 1 s and stands for 1 s. Every tick (60 Hz) the capsule
is moved with moveCollider and the cape's two top corners are pinned to
the shoulders with `pin` (particles/positions), then the cape is stepped.

Every 0.5 s it prints, from a subscription with every=30 (one frame per
0.5 s of 60 Hz steps), how far the cape's hem trails behind the shoulders
along the walking direction, the trailing angle from vertical, and how far
the hem hangs below the shoulders. Check: lag and angle are near 0 while
the character stands, grow while it walks (faster --speed: larger), and
swing back after it stops.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from clothd import Client  # noqa: E402

HZ = 60
CAPE_W, CAPE_H = 12, 20            # particles
SPACING = 0.04                     # 0.44 m wide, 0.76 m long
BODY_RADIUS, BODY_HEIGHT = 0.25, 1.8
SHOULDER_Y = 1.45                  # above the ground
PHASES = [(1.0, "stand"), (1.0, "speed up"), (4.0, "walk"), (1.0, "stop"), (1.0, "stand")]


def speed_at(t: float, top: float) -> float:
    """Walking speed at time t (s): stand, ramp up, walk, ramp down, stand."""
    start = 0.0
    for length, name in PHASES:
        if t < start + length:
            u = (t - start) / length
            return {"stand": 0.0, "speed up": top * u, "walk": top, "stop": top * (1 - u)}[name]
        start += length
    return 0.0


def phase_at(t: float) -> str:
    start = 0.0
    for length, name in PHASES:
        if t < start + length:
            return name
        start += length
    return PHASES[-1][1]


def frame_of(theta: float, radius: float):
    """Body centre, forward (walking direction) and right vectors on the circle."""
    centre = (radius * math.cos(theta), BODY_HEIGHT / 2, radius * math.sin(theta))
    forward = (-math.sin(theta), 0.0, math.cos(theta))
    right = (math.cos(theta), 0.0, math.sin(theta))   # outward
    return centre, forward, right


def shoulders(theta: float, radius: float):
    """The two pin positions: on the back of the body, 0.2 m either side."""
    centre, forward, right = frame_of(theta, radius)
    back = BODY_RADIUS + 0.03
    half = (CAPE_W - 1) * SPACING / 2
    mid = (centre[0] - forward[0] * back, SHOULDER_Y, centre[2] - forward[2] * back)
    left = [mid[0] - right[0] * half, mid[1], mid[2] - right[2] * half]
    rgt = [mid[0] + right[0] * half, mid[1], mid[2] + right[2] * half]
    return left, rgt, mid, forward


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7878)
    ap.add_argument("--speed", type=float, default=1.5, help="walking speed, m/s (default 1.5)")
    ap.add_argument("--radius", type=float, default=2.0, help="radius of the circle, m (default 2)")
    args = ap.parse_args()

    total = sum(length for length, _ in PHASES)
    theta = 0.0
    left, rgt, _, _ = shoulders(theta, args.radius)
    _, _, right = frame_of(theta, args.radius)
    with Client(args.host, args.port) as c:
        cape = c.create_cloth(width=CAPE_W, height=CAPE_H, spacing=SPACING, origin=left, right=right,
                              down=[0, -1, 0], damping=0.03, solver_iterations=8, bend_stiffness=0.3)
        corners = [0, CAPE_W - 1]
        c.pin(cape, corners, positions=[left, rgt])
        centre, _, _ = frame_of(theta, args.radius)
        body = c.add_collider(cape, "capsule", position=centre, normal=[0, 1, 0], radius=BODY_RADIUS,
                              height=BODY_HEIGHT)
        c.add_collider(cape, "plane", position=[0, 0, 0], normal=[0, 1, 0])  # the ground
        c.subscribe(cape, every=HZ // 2)   # one frame per 0.5 s
        c.next_frame(timeout=5)            # frame 0, sent right after subscribing
        hem = [(CAPE_H - 1) * CAPE_W + x for x in range(CAPE_W)]
        print(f"cape {cape}: {CAPE_W}x{CAPE_H} particles, corners pinned to the shoulders of a capsule "
              f"walking a {args.radius} m circle at up to {args.speed} m/s")
        print(f"{'time s':>6}  {'phase':<9} {'speed':>5}  {'hem lag m':>9}  {'angle deg':>9}  {'hem drop m':>10}")
        walked_lags, standing_lags = [], []
        try:
            for i in range(1, int(total * HZ) + 1):
                t = i / HZ
                v = speed_at(t, args.speed)
                theta += v / args.radius / HZ
                left, rgt, mid, forward = shoulders(theta, args.radius)
                centre, _, _ = frame_of(theta, args.radius)
                c.move_collider(cape, body, position=centre)
                c.pin(cape, corners, positions=[left, rgt])
                c.step(1 / HZ, instances=[cape])
                if i % (HZ // 2):
                    continue
                f = c.next_frame(timeout=5)
                hx = sum(f.positions[p][0] for p in hem) / CAPE_W
                hy = sum(f.positions[p][1] for p in hem) / CAPE_W
                hz = sum(f.positions[p][2] for p in hem) / CAPE_W
                # Behind the shoulders along the walking direction, and below them.
                lag = (mid[0] - hx) * forward[0] + (mid[2] - hz) * forward[2]
                drop = mid[1] - hy
                angle = math.degrees(math.atan2(lag, drop))
                phase = phase_at(t - 1e-9)
                (walked_lags if phase == "walk" else standing_lags).append(lag)
                print(f"{f.time:6.2f}  {phase:<9} {v:5.2f}  {lag:9.3f}  {angle:9.1f}  {drop:10.3f}")
        finally:
            c.unsubscribe()
            c.destroy(cape)
        if walked_lags:
            print(f"mean hem lag while walking: {sum(walked_lags) / len(walked_lags):.3f} m; "
                  f"while standing or changing speed: {sum(standing_lags) / len(standing_lags):.3f} m")
    return 0


if __name__ == "__main__":
    sys.exit(main())
