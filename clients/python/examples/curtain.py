#!/usr/bin/env python3
"""A 20x20 curtain pinned along its top row, stepped for 3 s at 60 Hz.

    python3 clients/python/examples/curtain.py [--host 127.0.0.1] [--port 7878]

Every 0.25 s it prints the bottom row's mean height next to the value it
should settle at (top - (height - 1) * spacing) and the largest structural
strain |d - rest| / rest, so you can watch the curtain fall and settle.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from clothd import Client  # noqa: E402

WIDTH = HEIGHT = 20
SPACING = 0.05
TOP = 2.0
HZ = 60
SECONDS = 3.0
REPORT_EVERY = 0.25


def max_strain(positions, width, height, rest):
    """Largest |d - rest| / rest over horizontal and vertical neighbours."""
    worst = 0.0
    for y in range(height):
        for x in range(width):
            p = positions[y * width + x]
            for q in ((positions[y * width + x + 1],) if x + 1 < width else ()) + \
                     ((positions[(y + 1) * width + x],) if y + 1 < height else ()):
                worst = max(worst, abs(math.dist(p, q) - rest) / rest)
    return worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7878)
    args = ap.parse_args()

    with Client(args.host, args.port) as c:
        cloth = c.create_cloth(width=WIDTH, height=HEIGHT, spacing=SPACING, origin=[0, TOP, 0])
        c.pin(cloth, list(range(WIDTH)))  # the top row, where it is
        expected = TOP - (HEIGHT - 1) * SPACING
        print(f"curtain {cloth}: {WIDTH}x{HEIGHT}, spacing {SPACING} m, top row pinned at y = {TOP}")
        print(f"{'time s':>7}  {'bottom y':>9}  {'expected':>9}  {'max strain':>10}")
        steps = int(SECONDS * HZ)
        every = int(REPORT_EVERY * HZ)
        try:
            for i in range(1, steps + 1):
                c.step(1 / HZ, instances=[cloth])
                if i % every == 0:
                    s = c.get(cloth)
                    bottom = sum(p[1] for p in s.positions[-WIDTH:]) / WIDTH
                    strain = max_strain(s.positions, WIDTH, HEIGHT, SPACING)
                    print(f"{s.time:7.2f}  {bottom:9.4f}  {expected:9.4f}  {strain:10.4f}")
        finally:
            c.destroy(cloth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
