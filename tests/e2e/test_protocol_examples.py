"""The examples of protocol/PROTOCOL.md are a real session: replayed here in
the order of their ids against a fresh server, every reply must be exactly
the one printed. Run with --update to rewrite the printed replies from a
real run (after a deliberate change of behaviour), then review the diff.

In an example block, "> " lines are requests and "< " lines what comes
back: a JSON reply, or "(frame: instance I, frame F, …)" / "(quantized
frame: instance I, frame F…)" for a binary frame. A "< " line after a
"(to each subscribed connection)" line goes to other connections and is
not checked here.

A value printed as "…" in an expected reply stands for any value (what
depends on the machine or the clock, as in `stats`); --update keeps it."""

import json
import os
import re
import sys
import unittest

from server import REPO, Server

DOC = os.path.join(REPO, "protocol", "PROTOCOL.md")
FRAME = re.compile(r"^\((quantized )?frame: instance (\d+), frame (\d+)")
ANY = "\u2026"  # "…": any value


def matches(got, want) -> bool:
    """got equals want, where want's "…" values match anything."""
    if want == ANY:
        return True
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(
            matches(got[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            matches(g, w) for g, w in zip(got, want))
    return got == want


def keep_wildcards(got, want):
    """got, with "…" wherever want has it (for --update)."""
    if want == ANY:
        return ANY
    if isinstance(got, dict) and isinstance(want, dict):
        return {k: keep_wildcards(v, want[k]) if k in want else v for k, v in got.items()}
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [keep_wildcards(g, w) for g, w in zip(got, want)]
    return got


def commands_section(text: str) -> str:
    start = text.index("\n## Commands")
    return text[start:text.index("\n## ", start + 5)]


def examples(text: str):
    """[(id, request line, [expected '< ' payloads])] from every code block."""
    out = []
    # Fences are matched whole, language tag and all: a "```text" block's
    # closing fence must not open the next example.
    for lang, block in re.findall(r"^```(\w*)\n(.*?)^```", commands_section(text), re.S | re.M):
        if lang:
            continue
        current = None
        others = False
        for line in block.splitlines():
            if line.startswith("> "):
                request = json.loads(line[2:])
                current = (request["id"], line[2:], [])
                out.append(current)
                others = False
            elif line.startswith("("):
                others = "each subscribed connection" in line
            elif line.startswith("< ") and current is not None and not others:
                current[2].append(line[2:])
    return sorted(out, key=lambda e: e[0])


def replay(tc, update: bool):
    text = open(DOC).read()
    srv = Server(workers=2).start()
    replaced = {}
    try:
        c = srv.client(handshake=False)  # the session is the document's lines, and nothing else
        for _id, line, expected in examples(text):
            c.send_raw(line.encode() + b"\n")
            for want in expected:
                m = FRAME.match(want)
                if m:
                    frame = c.next_frame(timeout=10)
                    got_desc = (bool(frame.flags & 1), frame.instance, frame.frame)
                    want_desc = (bool(m.group(1)), int(m.group(2)), int(m.group(3)))
                    if tc is not None:
                        tc.assertEqual(got_desc, want_desc, f"after {line}")
                    continue
                reply = c.read_reply()
                expected = json.loads(want)
                got = json.dumps(keep_wildcards(reply, expected), separators=(",", ":"), ensure_ascii=False)
                if update:
                    replaced[want] = got
                elif tc is not None and ANY in want:
                    tc.assertTrue(matches(reply, expected), f"reply to {line}: got {got}, expected {want}")
                elif tc is not None:
                    tc.assertEqual(reply, expected, f"reply to {line}")
        c.close()
    finally:
        srv.stop()
    if update:
        for old, new in replaced.items():
            text = text.replace("< " + old + "\n", "< " + new + "\n", 1)
        open(DOC, "w").write(text)


class ProtocolExamplesTest(unittest.TestCase):
    def test_every_documented_reply_should_be_what_the_server_sends(self):
        self.assertGreater(len(examples(open(DOC).read())), 20)
        replay(self, update=False)


if __name__ == "__main__":
    os.environ.setdefault("CLOTHD_BIN", os.path.join(REPO, "build", "clothd"))
    if "--update" in sys.argv:
        replay(None, update=True)
        print("PROTOCOL.md examples rewritten from a real run; review the diff.")
    else:
        unittest.main()
