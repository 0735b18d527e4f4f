"""Helpers for the operations tests (issue 11, items 5-7): clothd's log
lines on stderr, its HTTP ports, and the Prometheus text format."""

from __future__ import annotations

import json
import re
import socket
import time
from typing import Dict, List, Optional, Tuple

from server import Server

# "2026-12-01T10:00:00.123Z info connect peer=127.0.0.1:40312 connections=1"
TEXT_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (error|warn|info|debug) ([a-z_]+)((?: [a-z_]+=(?:\"(?:[^\"\\]|\\.)*\"|\S+))*)$")
FIELD = re.compile(r' ([a-z_]+)=("(?:[^"\\]|\\.)*"|\S+)')
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
HTTP_LINE = re.compile(r"^clothd (health and metrics|health|metrics) on http://([0-9.]+):(\d+) ")


def text_lines(srv: Server) -> List[Dict[str, str]]:
    """Every stderr line of a text-format log as {"time", "level", "event",
    and the fields}; an AssertionError names the first line that is not
    one."""
    out = []
    for line in srv.stderr(limit=None).splitlines():
        m = TEXT_LINE.match(line)
        if not m:
            raise AssertionError(f"not a text log line: {line!r}")
        entry = {"time": m.group(1), "level": m.group(2), "event": m.group(3)}
        for key, value in FIELD.findall(m.group(4)):
            entry[key] = json.loads(value) if value.startswith('"') else value
        out.append(entry)
    return out


def json_lines(srv: Server) -> List[dict]:
    """Every stderr line of a JSON-format log, parsed."""
    out = []
    for line in srv.stderr(limit=None).splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON log line: {line!r}") from None
    return out


def events(lines: List[dict], event: str) -> List[dict]:
    return [e for e in lines if e["event"] == event]


def wait_for(predicate, timeout: float = 5.0, what: str = "condition"):
    """Polls until predicate() returns something true; returns it."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def http_ports(srv: Server) -> Dict[str, int]:
    """{"health": port, "metrics": port} from the lines clothd prints after
    its banner ("clothd health on http://127.0.0.1:PORT (…)")."""
    def parse():
        found = {}
        for line in "".join(srv.extra_stdout).splitlines():
            m = HTTP_LINE.match(line)
            if m:
                for what in ("health", "metrics"):
                    if what in m.group(1):
                        found[what] = int(m.group(3))
        return found
    return wait_for(parse, what="the HTTP port lines on stdout")


def http(port: int, path: str = "/healthz", method: str = "GET", raw: Optional[bytes] = None,
         timeout: float = 10.0) -> Tuple[int, Dict[str, str], bytes]:
    """One HTTP/1.1 request to 127.0.0.1:port; (status, headers, body).
    `raw` replaces the whole request. Reads until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw if raw is not None else
                  f"{method} {path} HTTP/1.1\r\nHost: test\r\nUser-Agent: e2e\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


def http_status(port: int, path: str = "/healthz") -> Optional[int]:
    """The status of GET path, or None when the connection was refused or
    reset (for polling while the server catches up)."""
    try:
        return http(port, path, timeout=5)[0]
    except (ConnectionError, OSError, IndexError, ValueError):
        return None


PROM_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-z_]+="[^"\\]*"(?:,[a-z_]+="[^"\\]*")*)\})? (\S+)$')


def parse_prometheus(text: str) -> Tuple[Dict[str, Tuple[str, str]], Dict[Tuple[str, Tuple], float]]:
    """The text exposition format: ({family: (type, help)}, {(name, labels):
    value}) with labels a sorted tuple of (key, value). Asserts the syntax
    and that every sample belongs to a family declared before it."""
    families: Dict[str, Tuple[str, str]] = {}
    samples: Dict[Tuple[str, Tuple], float] = {}
    helps: Dict[str, str] = {}
    assert text.endswith("\n"), "the exposition must end with a newline"
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            helps[name] = help_text
            continue
        if line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert kind in ("counter", "gauge", "histogram"), line
            assert name in helps, f"TYPE before HELP for {name}"
            assert name not in families, f"family {name} declared twice"
            families[name] = (kind, helps[name])
            continue
        m = PROM_SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name, labels, value = m.group(1), m.group(3), m.group(4)
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in families else name
        assert family in families, f"sample {name} has no # TYPE"
        pairs = tuple(sorted(tuple(p.split("=", 1)) for p in labels.split(","))) if labels else ()
        pairs = tuple((k, v.strip('"')) for k, v in pairs)
        assert (name, pairs) not in samples, f"duplicate sample {line!r}"
        samples[(name, pairs)] = float(value)
    return families, samples
