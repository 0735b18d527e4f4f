#!/usr/bin/env python3
"""Writes the channel test vectors (velocities and normals, issue 15) into
protocol/test_vectors.json and prints their PROTOCOL.md text.

An encoder written from PROTOCOL.md alone, independent of protocol/frame.c:
the unit tests then check that frame.c reproduces every vector byte for
byte, and every client decodes them. Run from the repository root:

    python3 protocol/channel_vectors.py            # rewrite the JSON, print the Markdown
    python3 protocol/channel_vectors.py --check    # exit 1 when the JSON differs
"""
import json
import math
import struct
import sys

PATH = "protocol/test_vectors.json"
QUANTIZED, VELOCITIES, NORMALS = 1, 2, 4


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def short(v):
    """The shortest decimal whose nearest float32 is v (v a float32)."""
    for digits in range(1, 10):
        text = f"{v:.{digits}g}"
        if f32(float(text)) == v:
            value = float(text)
            return int(value) if value == int(value) and abs(value) < 1e15 else value
    return v


def c_round(s):
    """C's round() for s > 0: halves away from zero (floor(s + 0.5) is not
    the same for the double just below 0.5)."""
    whole = math.floor(s)
    return whole + 1 if s - whole >= 0.5 else whole


def quantize(v, lo, rng):
    if not (rng > 0) or not math.isfinite(rng):
        return 0
    s = (v - lo) / rng * 65535.0
    if not (s > 0):
        return 0
    if s >= 65535.0:
        return 65535
    return c_round(s)


def boxed(values):
    """(bytes, decoded, lo, hi) of a box and its u16 triplets."""
    lo = [min((p[k] for p in values), default=0.0) for k in range(3)]
    hi = [max((p[k] for p in values), default=0.0) for k in range(3)]
    out = struct.pack("<3f", *lo) + struct.pack("<3f", *hi)
    decoded = []
    for p in values:
        q = [quantize(p[k], lo[k], hi[k] - lo[k]) for k in range(3)]
        out += struct.pack("<3H", *q)
        decoded.append([short(f32(lo[k] + q[k] / 65535.0 * (hi[k] - lo[k]))) for k in range(3)])
    return out, decoded, lo, hi


def sgn(v):
    return 1.0 if v >= 0 else -1.0


def oct_axis(v):
    s = (v + 1.0) * 0.5 * 65535.0
    if not (s > 0):
        return 0
    if s >= 65535.0:
        return 65535
    return c_round(s)


def oct_encode(n):
    x, y, z = n
    total = abs(x) + abs(y) + abs(z)
    if not (total > 0) or not math.isfinite(total):
        return (0, 0)
    u, v = x / total, y / total
    if z < 0:
        u, v = (1.0 - abs(v)) * sgn(u), (1.0 - abs(u)) * sgn(v)
    q = (oct_axis(u), oct_axis(v))
    return (65535, 65535) if q == (0, 0) else q


def oct_decode(q):
    if q == (0, 0):
        return [0, 0, 0]
    u, v = q[0] / 65535.0 * 2.0 - 1.0, q[1] / 65535.0 * 2.0 - 1.0
    z = 1.0 - abs(u) - abs(v)
    if z < 0:
        u, v = (1.0 - abs(v)) * sgn(u), (1.0 - abs(u)) * sgn(v)
    length = math.sqrt(u * u + v * v + z * z)
    return [short(f32(c / length)) for c in (u, v, z)]


def frame(flags, instance, number, time, positions, velocities=None, normals=None):
    """The frame's bytes and its decoded fields."""
    positions = [[f32(c) for c in p] for p in positions]
    velocities = [[f32(c) for c in p] for p in velocities or []]
    normals = [[f32(c) for c in p] for p in normals or []]
    n = len(positions)
    body = b""
    decoded = {"instance": instance, "frame": number, "time": time}
    if flags & QUANTIZED:
        data, dec, lo, hi = boxed(positions)
        body += data
        decoded.update(bboxMin=[short(c) for c in lo], bboxMax=[short(c) for c in hi], positions=dec)
    else:
        body += b"".join(struct.pack("<3f", *p) for p in positions)
        decoded["positions"] = [[short(c) for c in p] for p in positions]
    if flags & VELOCITIES:
        if flags & QUANTIZED:
            data, dec, lo, hi = boxed(velocities)
            body += data
            decoded.update(velocityMin=[short(c) for c in lo], velocityMax=[short(c) for c in hi],
                           velocities=dec)
        else:
            body += b"".join(struct.pack("<3f", *p) for p in velocities)
            decoded["velocities"] = [[short(c) for c in p] for p in velocities]
    if flags & NORMALS:
        if flags & QUANTIZED:
            qs = [oct_encode(p) for p in normals]
            body += b"".join(struct.pack("<2H", *q) for q in qs)
            decoded["normalsQ"] = [list(q) for q in qs]
            decoded["normals"] = [oct_decode(q) for q in qs]
        else:
            body += b"".join(struct.pack("<3f", *p) for p in normals)
            decoded["normals"] = [[short(c) for c in p] for p in normals]
    header = b"\x89CLF" + struct.pack("<HHIIQdII", 1, flags, 40 + len(body), instance, number,
                                      time, n, 0)
    original = {"positions": [[short(c) for c in p] for p in positions]}
    if flags & VELOCITIES:
        original["velocities"] = [[short(c) for c in p] for p in velocities]
    if flags & NORMALS:
        original["normals"] = [[short(c) for c in p] for p in normals]
    return header + body, decoded, original


# A 2 x 2 cloth swinging in +z: its grid normals are down x right = +z for
# the default layout, tilted by the swing.
S = 1 / math.sqrt(2)
CELL = [[0, 2, 0], [0.1, 2, 0], [0, 1.9, 0.02], [0.1, 1.9, 0.02]]
CELL_V = [[0, 0, 0], [0, 0, 0], [0.25, -0.5, 1.5], [-0.25, -0.5, 1.5]]
N1 = 1 / math.sqrt(1 + 0.2 * 0.2)
CELL_N = [[0, 0.2 * N1, N1]] * 4
VECTORS = [
    ("Velocities (flags 2): a 2x2 cloth swinging in +z, its top row pinned (velocity 0).",
     VELOCITIES, 9, 12, 0.2, CELL, CELL_V, None),
    ("Normals (flags 4): the same cloth; every normal is unit and points to down x right (+z), "
     "tilted by the swing.", NORMALS, 9, 12, 0.2, CELL, None, CELL_N),
    ("Velocities and normals (flags 6): velocities come first, then normals; a particle with "
     "no triangle has the normal (0, 0, 0).",
     VELOCITIES | NORMALS, 65538, 7, 0.125,
     [[1, 1, 1], [-1, 0.5, 2]], [[-3.5, 0.25, 10], [0, -9.81, 0.001]],
     [[0, 0, 1], [0, 0, 0]]),
    ("Quantized with velocities and normals (flags 7): the cloth's velocities in their own box "
     "(flat on no axis), normals in 2 x 16 bits (octahedral).",
     QUANTIZED | VELOCITIES | NORMALS, 9, 12, 0.2, CELL, CELL_V, CELL_N),
    ("Quantized normals (flags 5) of the six axis directions, a lower-half diagonal, (0, 0, -1) "
     "written (65535, 65535) and none (0, 0).",
     QUANTIZED | NORMALS, 3, 1, 1 / 60,
     [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 0], [6, 0, 0], [7, 0, 0]],
     None,
     [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [-S * S, -0.5, -S],
      [0, 0, 0]]),
    ("Quantized velocities (flags 3) of no particles: the header, two zero boxes (88 bytes).",
     QUANTIZED | VELOCITIES, 4, 1, 3.25, [], [], None),
]

RULE = ("Entries with \"flags\" carry channels after the positions (PROTOCOL.md, Frames): bit 1 "
        "velocities, bit 2 normals, in that order. Plain: 3 float32 each per particle. Quantized "
        "(bit 0): velocities as a box (velocityMin, velocityMax) and u16 x, y, z by the positions' "
        "rule; normals as u16 u, v (octahedral; 'normalsQ' holds them) decoded as PROTOCOL.md says, "
        "(0, 0) decoding to (0, 0, 0). 'original' holds the encoder's input; 'decoded' what a "
        "decoder gets (compare after rounding to float32; a float32 decoder within 1e-6 * max(1, "
        "|min|, |max|) for velocities and 1e-6 for normals). Generated by "
        "protocol/channel_vectors.py.")


def entries():
    out = []
    for note, flags, instance, number, time, pos, vel, nrm in VECTORS:
        data, decoded, original = frame(flags, instance, number, time, pos, vel, nrm)
        entry = {"note": note, "flags": flags}
        if flags & QUANTIZED:
            entry["quantized"] = True
        entry["hex"] = data.hex()
        entry["original"] = original
        entry["decoded"] = decoded
        out.append((entry, data))
    return out


def compact(value):
    return json.dumps(value, separators=(",", ":"))


def write_json(made):
    with open(PATH) as f:
        doc = json.load(f)
    frames = [e for e in doc["frames"] if "flags" not in e] + [e for e, _ in made]
    doc["channelsRule"] = RULE
    doc["frames"] = frames
    lines = ["{"]
    keys = list(doc.keys())
    for i, key in enumerate(keys):
        end = "," if i + 1 < len(keys) else ""
        if key != "frames":
            lines.append(f"  {json.dumps(key)}: {json.dumps(doc[key])}{end}")
            continue
        lines.append('  "frames": [')
        for j, e in enumerate(frames):
            lines.append("    {")
            items = list(e.items())
            for k, (name, value) in enumerate(items):
                comma = "," if k + 1 < len(items) else ""
                text = json.dumps(value) if isinstance(value, (str, bool, int)) else compact(value)
                lines.append(f"      {json.dumps(name)}: {text}{comma}")
            lines.append("    }" + ("," if j + 1 < len(frames) else ""))
        lines.append("  ]" + end)
    lines.append("}")
    return "\n".join(lines) + "\n"


def markdown(made, first):
    text = []
    for i, (entry, data) in enumerate(made):
        text.append(f"**Vector {first + i}** — {entry['note']}\n")
        text.append("```json\n" + compact(entry["original"]) + "\n```\n")
        text.append("Decoded:\n\n```json\n" + compact(entry["decoded"]) + "\n```\n")
        text.append("Hex (one string):\n\n```\n" + data.hex() + "\n```\n")
    return "\n".join(text)


def main():
    made = entries()
    new = write_json(made)
    with open(PATH) as f:
        old = f.read()
    if "--check" in sys.argv:
        if old != new:
            print(f"{PATH} differs from what protocol/channel_vectors.py writes", file=sys.stderr)
            return 1
        return 0
    with open(PATH, "w") as f:
        f.write(new)
    with open(PATH) as f:
        first = sum(1 for e in json.load(f)["frames"] if "flags" not in e) + 1
    print(markdown(made, first))
    return 0


if __name__ == "__main__":
    sys.exit(main())
