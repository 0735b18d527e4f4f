#!/usr/bin/env python3
"""A tablecloth dropped over a round table (a sphere).

    python3 clients/python/examples/tablecloth.py [--host 127.0.0.1] [--port 7878]
                                                  [--seconds 4] [--quantize]

A horizontal 30x30 cloth (right = +x, down = +z, so it lies flat in the
x-z plane) 1.45 m square is dropped from 0.3 m above a sphere of radius
0.5 m centred at the origin (friction 0.6: without friction a cloth slides
off a sphere's top sooner or later); a floor plane lies at y = -0.9. The
script subscribes to the cloth's frames (every 15th: 4 a second at 60 Hz;
--quantize asks for 16-bit frames) and prints:

* every 0.25 s: the top height (should settle at the sphere's top, 0.5 m),
  the share of particles resting on the sphere (within 2 cm of its
  surface), the mean height of the hem (the border particles) and the
  lowest point;
* at the end, the height profile along the middle row: highest (0.5 m)
  at x = 0 on top of the sphere, following its curve down both sides and
  sloping off beyond its edge, symmetric about x = 0.

Once at rest the cloth falls asleep (the step replies list it in
"sleeping" and no frames are sent): the last lines say "(asleep)".
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from clothd import Client  # noqa: E402

N = 30
SPACING = 0.05
RADIUS = 0.5
DROP_HEIGHT = RADIUS + 0.3
FLOOR = -0.9
HZ = 60
EVERY = 15


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7878)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--quantize", action="store_true", help="ask for quantized (16-bit) frames")
    args = ap.parse_args()

    half = (N - 1) * SPACING / 2
    border = [y * N + x for y in range(N) for x in range(N) if x in (0, N - 1) or y in (0, N - 1)]
    with Client(args.host, args.port) as c:
        cloth = c.create_cloth(width=N, height=N, spacing=SPACING, origin=[-half, DROP_HEIGHT, -half],
                               right=[1, 0, 0], down=[0, 0, 1], damping=0.02, solver_iterations=8,
                               bend_stiffness=0.2)
        c.add_collider(cloth, "sphere", position=[0, 0, 0], radius=RADIUS, friction=0.6)
        c.add_collider(cloth, "plane", position=[0, FLOOR, 0], normal=[0, 1, 0])
        c.subscribe(cloth, every=EVERY, quantize=args.quantize)
        f = c.next_frame(timeout=5)
        print(f"tablecloth {cloth}: {N}x{N}, {2 * half:.2f} m square, dropped from y = {DROP_HEIGHT} "
              f"onto a sphere of radius {RADIUS} m ({'quantized' if f.quantized else 'plain'} frames, "
              f"{f.size} bytes each)")
        print(f"{'time s':>6}  {'top y':>7}  {'on sphere':>9}  {'hem mean y':>10}  {'lowest y':>8}")
        try:
            for i in range(1, int(args.seconds * HZ) + 1):
                reply = c.step(1 / HZ, instances=[cloth])
                if i % EVERY:
                    continue
                # A cloth at rest falls asleep: its steps then send no frame.
                asleep = cloth in reply.get("sleeping", [])
                if not asleep:
                    f = c.next_frame(timeout=5)
                ys = [p[1] for p in f.positions]
                touching = sum(1 for p in f.positions if abs(math.dist(p, (0, 0, 0)) - RADIUS) < 0.02)
                hem = sum(ys[p] for p in border) / len(border)
                print(f"{i / HZ:6.2f}  {max(ys):7.3f}  {100 * touching / len(ys):8.1f}%  {hem:10.3f}  {min(ys):8.3f}"
                      + ("  (asleep)" if asleep else ""))
        finally:
            c.unsubscribe()
            c.destroy(cloth)

    row = N // 2
    print(f"height profile along the middle row (z = {f.positions[row * N][2]:+.3f} m):")
    for x in range(0, N, 2):
        px, py, _ = f.positions[row * N + x]
        bar = "#" * max(0, int(round((py - FLOOR) * 30)))
        print(f"  x {px:+.3f}  y {py:+.3f}  {bar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
