#!/usr/bin/env python3
"""A flag pinned along its left edge, blown by the wind.

    python3 clients/python/examples/flag.py [--host 127.0.0.1] [--port 7878]
                                            [--wind 10 0 2] [--seconds 4]

It subscribes to the flag's frames and prints the free tip's position (the
top-right corner) every 0.25 s: it should stream out downwind and flutter.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from clothd import Client  # noqa: E402

WIDTH, HEIGHT = 24, 16
SPACING = 0.05
HZ = 60


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7878)
    ap.add_argument("--wind", type=float, nargs=3, default=[10.0, 0.0, 2.0], metavar=("X", "Y", "Z"))
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()

    with Client(args.host, args.port) as c:
        flag = c.create_cloth(width=WIDTH, height=HEIGHT, spacing=SPACING, origin=[0, 3, 0], damping=0.02)
        c.pin(flag, [y * WIDTH for y in range(HEIGHT)])  # the left edge: the pole
        c.wind(args.wind, instance=flag)
        c.subscribe(flag)
        frames = c.frames()
        tip = WIDTH - 1  # top-right corner
        print(f"flag {flag}: {WIDTH}x{HEIGHT}, left edge pinned, wind {args.wind}")
        print(f"{'time s':>7}  {'tip x':>8}  {'tip y':>8}  {'tip z':>8}")
        try:
            f = next(frames)  # the current state, sent right after subscribing
            for i in range(1, int(args.seconds * HZ) + 1):
                reply = c.step(1 / HZ, instances=[flag])
                if flag not in reply.get("sleeping", []):  # asleep: no frame, nothing moved
                    f = next(frames)
                if i % (HZ // 4) == 0:
                    x, y, z = f.positions[tip]
                    print(f"{f.time:7.2f}  {x:8.3f}  {y:8.3f}  {z:8.3f}")
        finally:
            c.unsubscribe()
            c.destroy(flag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
