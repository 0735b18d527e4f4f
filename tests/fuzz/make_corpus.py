#!/usr/bin/env python3
"""Seed corpus and dictionary for tests/fuzz/fuzz_server.c, generated from
the protocol's own documents (run by tests/fuzz/run_fuzz.py before each run):

    python3 tests/fuzz/make_corpus.py --out DIR

Writes DIR/seeds/ (one file per input: request lines, one per line) and
DIR/clothd.dict (libFuzzer's dictionary format). Sources:

- protocol/PROTOCOL.md: every request of the documented session (the `> `
  lines), in order, as one input; each request again in a small session of
  its own after the two `create`s the session starts with (so ids 1 and 2
  exist), followed by a step and a get; every request-shaped JSON object in
  backticks (the error tables) likewise;
- protocol/test_vectors.json: each frame's positions as a `pin` with
  positions and as a soft body's vertices; each frame's raw bytes sent as
  a (garbage) request line;
- binary requests (PROTOCOL.md "Binary requests", the layouts of vectors
  B1 and B2): a skin with normals and a pin of a live 2 x 2 cloth between
  JSON lines (one on the second connection), and one whose length does
  not match its count;
- a few sessions that race commands against multi-instance steps
  (destroy, get of out-of-range ids, subscribe/unsubscribe around steps),
  some on a second connection ('@' lines, see fuzz_server.c);
- the dictionary: every command name, every member name seen in a request
  or reply, and the values that sit on range edges.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROTOCOL = os.path.join(REPO, "protocol", "PROTOCOL.md")
VECTORS = os.path.join(REPO, "protocol", "test_vectors.json")


def doc_requests(text: str) -> list[str]:
    """The `> {...}` request lines of PROTOCOL.md, in document order."""
    return [line[2:].strip() for line in text.splitlines() if line.startswith("> {")]


def doc_objects(text: str) -> list[dict]:
    """Every JSON object written in backticks or after `> `/`< `."""
    found = []
    for m in re.finditer(r"`(\{[^`]*\})`", text):
        try:
            obj = json.loads(m.group(1))
        except ValueError:
            continue
        if isinstance(obj, dict):
            found.append(obj)
    for line in text.splitlines():
        if line.startswith(("> {", "< {")):
            try:
                obj = json.loads(line[2:])
            except ValueError:
                continue
            if isinstance(obj, dict):
                found.append(obj)
    return found


def command_names(text: str) -> list[str]:
    """Names from the command table: | [`create`](#create) | ..."""
    return sorted(set(re.findall(r"^\| \[`(\w+)`\]", text, flags=re.M)))


def keys_of(value, out: set) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            keys_of(v, out)
    elif isinstance(value, list):
        for v in value:
            keys_of(v, out)


def dict_entry(token: bytes) -> str:
    """A token in libFuzzer's dictionary syntax: "..." with \\ escapes."""
    out = []
    for b in token:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02X}")
    return '"' + "".join(out) + '"'


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for seeds/ and clothd.dict")
    args = parser.parse_args(argv)

    text = open(PROTOCOL, encoding="utf-8").read()
    session = doc_requests(text)
    objects = doc_objects(text)
    commands = command_names(text)
    if not session or not commands:
        print("make_corpus: found no requests or commands in PROTOCOL.md", file=sys.stderr)
        return 1
    creates = [r for r in session if json.loads(r).get("cmd") == "create"][:2]
    prologue = creates or ['{"cmd":"create","width":4,"height":4}', '{"cmd":"create"}']
    epilogue = ['{"cmd":"step","dt":0.5}', '{"cmd":"get","instance":1}', '{"cmd":"status"}']

    seeds: list[list[str]] = [session]
    requests = list(session)
    for obj in objects:
        if isinstance(obj.get("cmd"), str) and "ok" not in obj:
            requests.append(json.dumps(obj, separators=(",", ":")))
    for r in dict.fromkeys(requests):  # each once, in order
        seeds.append([*prologue, r, *epilogue])

    # Frames of the test vectors: positions into requests, bytes as garbage.
    raw_seeds: list[bytes] = []
    vectors = json.load(open(VECTORS, encoding="utf-8"))
    for frame in vectors.get("frames", []):
        decoded = frame.get("decoded", {})
        original = frame.get("original")
        if isinstance(original, dict):  # a channel vector: positions, velocities, normals
            original = original.get("positions")
        positions = decoded.get("positions") or original or []
        n = len(positions)
        if n:
            seeds.append([
                f'{{"cmd":"create","width":{max(2, n)},"height":2}}',
                json.dumps({"cmd": "pin", "instance": 1, "particles": list(range(n)), "positions": positions},
                           separators=(",", ":")),
                '{"cmd":"subscribe","instance":1,"quantize":true}'
                if "flags" not in frame else
                '{"cmd":"subscribe","instance":1,"quantize":%s,"channels":["velocities","normals"]}'
                % ("true" if frame.get("quantized") else "false"),
                '{"cmd":"step","dt":0.016}',
                '{"cmd":"get","instance":1}',
            ])
            if n >= 4:
                seeds.append([json.dumps({"cmd": "create", "type": "softbody", "vertices": positions[:4],
                                          "tetrahedra": [0, 1, 2, 3]}, separators=(",", ":")),
                              '{"cmd":"step","instance":1}', '{"cmd":"topology","instance":1}'])
        raw = bytes.fromhex(frame.get("hex", ""))
        if raw:
            raw_seeds.append(raw.replace(b"\n", b" ") + b"\n" + b'{"cmd":"status"}\n')

    # Binary requests (the layouts of vectors B1 and B2) between JSON lines.
    def binary(kind: int, instance: int, rid: int, count: int, flags: int, body: bytes, length=None) -> bytes:
        n = 32 + len(body) if length is None else length
        return struct.pack("<4sHHIIIIII", b"\x89CLR", 1, flags, n, instance, kind, rid, count, 0) + body

    square = [0, 1, 0, 0.1, 1, 0, 0, 0.9, 0, 0.1, 0.9, 0]
    skin = binary(1, 1, 7, 4, 1, struct.pack("<24f", *square, *([0, 0, 1] * 4)))
    pin = binary(2, 1, 8, 1, 0, struct.pack("<I3f", 3, 0.1, 1.0, 0.0))
    create = b'{"cmd":"create","width":2,"height":2,"spacing":0.1,"origin":[0,1,0],"maxDistance":0.05}\n'
    raw_seeds += [
        create + skin + pin + b'{"cmd":"step"}\n{"cmd":"topology","instance":1}\n{"cmd":"get","instance":1}\n',
        create + b'@' + skin + b'{"cmd":"step","instances":[1]}\n' + binary(1, 1, 9, 3, 0, b"\0" * 48),
    ]

    # Commands racing multi-instance steps, as issue 9 describes them.
    seeds += [
        ['{"cmd":"create","width":8,"height":8}', '{"cmd":"create","width":8,"height":8}',
         '{"cmd":"create","type":"softbody","shape":"ball","radius":0.2,"resolution":4}',
         '{"cmd":"subscribe"}', '{"cmd":"step","instances":[1,2,3]}', '{"cmd":"destroy","instance":2}',
         '{"cmd":"get","instance":65535}', '{"cmd":"step","instances":[1,3]}', '{"cmd":"unsubscribe"}',
         '{"cmd":"destroy","instance":1}', '{"cmd":"create"}', '{"cmd":"get","instance":65537}'],
        ['{"cmd":"create","width":3,"height":3}', '{"cmd":"addCollider","instance":1,"type":"sphere",'
         '"position":[0,-0.1,0],"radius":0.1,"coupling":1}', '{"cmd":"wind","wind":[3e38,0,0]}',
         '{"cmd":"gravity","instance":1,"gravity":[0,-1e30,0]}', '{"cmd":"step","dt":1}',
         '{"cmd":"get","instance":1}', '{"cmd":"set","instance":1,"selfDistance":0.05,"substeps":4}',
         '{"cmd":"step"}'],
        # '@': the second connection (see fuzz_server.c), racing the first.
        ['{"cmd":"create","width":6,"height":6}', '{"cmd":"create","width":6,"height":6}',
         '{"cmd":"create","width":6,"height":6}', '@{"cmd":"subscribe"}',
         '{"cmd":"step","instances":[1,2,3]}', '@{"cmd":"destroy","instance":2}',
         '{"cmd":"step","instances":[1,3]}', '@{"cmd":"get","instance":65535}',
         '{"cmd":"step"}', '@{"cmd":"destroy","instance":3}', '{"cmd":"get","instance":1}'],
        # Shared-memory subscribers (references, flags bit 3) around steps, a
        # tear and a destroy.
        ['{"cmd":"create","width":8,"height":8}',
         '{"cmd":"create","width":8,"height":8,"tearStrain":0.3,"gravity":[0,-80,0]}',
         '@{"cmd":"subscribe","shm":true}', '{"cmd":"subscribe","instance":1,"shm":true,"channels":["normals"]}',
         '{"cmd":"pin","instance":2,"particles":[0]}', '{"cmd":"step","instances":[1,2]}',
         '@{"cmd":"destroy","instance":2}', '{"cmd":"step"}', '{"cmd":"unsubscribe"}', '{"cmd":"stats"}'],
        ['{"id":"\\u00e9","cmd":"ping"}', '{"id":[1],"cmd":"status"}', '{"cmd":"debug","enabled":true}',
         '{"cmd":"transform","instance":1,"name":"hand","position":[0,1,0]}', '{"cmd":"status"}'],
    ]

    out = os.path.abspath(args.out)
    seed_dir = os.path.join(out, "seeds")
    os.makedirs(seed_dir, exist_ok=True)
    for name in os.listdir(seed_dir):
        os.unlink(os.path.join(seed_dir, name))
    blobs = [("\n".join(s) + "\n").encode() for s in seeds] + raw_seeds
    for blob in blobs:
        name = hashlib.sha1(blob).hexdigest()
        with open(os.path.join(seed_dir, name), "wb") as f:
            f.write(blob)

    keys: set = set()
    for obj in objects:
        keys_of(obj, keys)
    tokens: list[bytes] = []
    tokens += [f'"cmd":"{c}"'.encode() for c in commands]
    tokens += [f'"{k}":'.encode() for k in sorted(keys)]
    tokens += [v.encode() for v in (
        "true", "false", "null", "1e999", "-1e999", "3.40282347e38", "3.5e38", "1e-45", "-0", "0.5",
        "4294967295", "4294967296", "65535", "65536", "65537", "262144", "1000001", "[0,0,0]",
        "[1,0,0]", "[]", "{}", '"\\u0000"', '"\\ud800"', "\xff", "\r", "\t")]
    tokens += [b"\x89CLF", b"\x89CLR", b"\x01\x00\x01\x00", b"\xc3\x28", b"\xed\xa0\x80"]
    with open(os.path.join(out, "clothd.dict"), "w", encoding="ascii") as f:
        f.write("# generated by tests/fuzz/make_corpus.py from protocol/PROTOCOL.md\n")
        for i, t in enumerate(dict.fromkeys(tokens)):
            f.write(f"kw{i}={dict_entry(t)}\n")
    print(f"make_corpus: {len(blobs)} seeds, {len(set(tokens))} dictionary entries in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
