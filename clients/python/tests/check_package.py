#!/usr/bin/env python3
"""The Python package as a user installs it, offline.

    python3 clients/python/tests/check_package.py [--clothd build/clothd]

1. `python3 -m venv` a fresh environment in a temporary folder and
   `pip install --no-index ./clients/python` into it: no package index is
   reachable or needed (the in-tree build backend has no requirements);
2. from outside the checkout, the venv's python imports the installed
   clothd and clothctl modules and decodes every shared frame test vector;
3. the installed `clothctl` console script talks to a real clothd
   (status, create, step, get, exit code 3 without a server; the same
   server over its Unix socket, --unix PATH and $CLOTHD_UNIX), and to one
   started with --token-file (ping with --token-file, exit 1 without);
4. tests/e2e/test_client_numpy.py runs with an interpreter that has numpy
   (this one, else Debian's /usr/bin/python3), so Frame.array is covered;
5. the wheel ships clothd as a package with its py.typed marker (PEP 561),
   and mypy (Debian's, when installed) reads the installed hints: a
   correct use checks clean, a wrong one is caught.

Ends with one line: "python-test: N passed, M failed".
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PKG))
BANNER = re.compile(rb"listening on ([0-9.]+):(\d+)")

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> bool:
    results.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail and not ok else ""), flush=True)
    return ok


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def start_clothd(binary: str, *extra: str, unix: str = "") -> tuple[subprocess.Popen, int]:
    """clothd on an ephemeral port (and with `unix`, on that Unix socket
    too: its second line says so)."""
    proc = subprocess.Popen([binary, "--port", "0", "--workers", "2", *extra,
                             *(["--unix", unix] if unix else [])], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    line = proc.stdout.readline()
    m = BANNER.search(line)
    second = proc.stdout.readline() if m and unix else b""
    if not m or (unix and second != f"clothd listening on unix:{unix}\n".encode()):
        proc.kill()
        raise SystemExit(f"clothd printed {line!r} {second!r}")
    return proc, int(m.group(2))


def numpy_python() -> str | None:
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and run([py, "-c", "import numpy"]).returncode == 0:
            return py
    return None


VECTOR_CHECK = r"""
import json, struct, sys, clothd, clothctl
assert clothd.__file__.startswith(sys.prefix), clothd.__file__
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
vectors = json.load(open(sys.argv[1]))["frames"]
for v in vectors:
    fr = clothd.decode_frame(bytes.fromhex(v["hex"]))
    assert fr.quantized == bool(v.get("quantized")), v["note"]
    want = [tuple(f32(c) for c in p) for p in v["decoded"]["positions"]]
    assert [tuple(p) for p in fr.positions] == want, v["note"]
    for name in ("velocities", "normals"):
        if name in v["decoded"]:
            want = [tuple(f32(c) for c in p) for p in v["decoded"][name]]
            assert [tuple(p) for p in getattr(fr, name)] == want, v["note"]
print(len(vectors), clothd.__version__)
"""


TYPED_OK = """
import clothd
with clothd.Client("127.0.0.1", 7878, require=["scenes"]) as c:
    cloth: int = c.create_cloth(width=4, height=4, scene="s", ephemeral=True)
    state: clothd.InstanceState = c.get(cloth)
    n: int = state.count
    limit: int = c.limits["particles"]
    known: bool = "mesh" in c.features and c.has_feature("skin")
try:
    c.get(1)
except clothd.NotFound as e:
    code: str = e.code
except clothd.FeatureMissing as f:
    missing: tuple = f.features
    where: str = f.endpoint
"""
TYPED_WRONG = """
import clothd
c = clothd.Client()
name: str = c.create_cloth(width=4, height=4)
"""


def check_typed(py: str, tmp: str) -> None:
    """The installed package is typed: py.typed beside clothd/__init__.py,
    listed in the wheel's RECORD, and read by mypy when there is one."""
    out = run([py, "-c", "import clothd, os; print(os.path.dirname(clothd.__file__))"], cwd=tmp)
    pkg = out.stdout.strip()
    check("installed clothd is a package with py.typed",
          out.returncode == 0 and os.path.isfile(os.path.join(pkg, "py.typed")), out.stdout + out.stderr)
    records = [os.path.join(os.path.dirname(pkg), d, "RECORD") for d in os.listdir(os.path.dirname(pkg))
               if d.startswith("clothd-") and d.endswith(".dist-info")]
    listed = bool(records) and "clothd/py.typed," in open(records[0]).read()
    check("the wheel's RECORD lists clothd/py.typed", listed, str(records))
    mypy = shutil.which("mypy")
    if mypy is None:
        print("skip mypy: not installed (apt-get install mypy)")
        return
    for name, text in (("typed_ok.py", TYPED_OK), ("typed_wrong.py", TYPED_WRONG)):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    base = [mypy, "--python-executable", py, "--no-incremental", "--cache-dir", os.path.join(tmp, "mypy")]
    out = run(base + ["typed_ok.py"], cwd=tmp)
    check("mypy reads the installed hints (a correct use)", out.returncode == 0, out.stdout + out.stderr)
    out = run(base + ["typed_wrong.py"], cwd=tmp)
    check("mypy catches a wrong use through the installed hints",
          out.returncode == 1 and 'has type "int", variable has type "str"' in out.stdout,
          out.stdout + out.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clothd", default=os.path.join(REPO, "build", "clothd"))
    args = ap.parse_args()
    binary = os.path.abspath(args.clothd)

    tmp = tempfile.mkdtemp(prefix="clothd-pip-")
    try:
        venv = os.path.join(tmp, "venv")
        out = run([sys.executable, "-m", "venv", venv])
        if not check("python3 -m venv", out.returncode == 0, out.stderr[-500:]):
            return finish()
        py = os.path.join(venv, "bin", "python")
        env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
        out = run([py, "-m", "pip", "install", "--no-index", "--no-cache-dir", PKG], env=env, cwd=tmp)
        check("pip install --no-index ./clients/python", out.returncode == 0, (out.stdout + out.stderr)[-1500:])
        if out.returncode != 0:
            return finish()

        vectors = os.path.join(REPO, "protocol", "test_vectors.json")
        out = run([py, "-c", VECTOR_CHECK, vectors], cwd=tmp)
        check("installed clothd decodes the shared vectors", out.returncode == 0, out.stderr[-1500:])

        ctl = os.path.join(venv, "bin", "clothctl")
        check("clothctl console script installed", os.access(ctl, os.X_OK))
        out = run([ctl, "--help"], cwd=tmp)
        check("clothctl --help", out.returncode == 0 and "status" in out.stdout, out.stderr)

        sock = os.path.join(tmp, "clothd.sock")
        proc, port = start_clothd(binary, unix=sock)
        try:
            base = [ctl, "--port", str(port)]
            out = run(base + ["status"], cwd=tmp)
            check("clothctl status", out.returncode == 0 and out.stdout.startswith("=== Cloth Simulation ===\n"),
                  out.stdout + out.stderr)
            out = run(base + ["create", "--width", "5", "--height", "5"], cwd=tmp)
            check("clothctl create", out.returncode == 0 and "instance 1: 25 particles" in out.stdout,
                  out.stdout + out.stderr)
            out = run(base + ["step", "--count", "3"], cwd=tmp)
            check("clothctl step", out.returncode == 0, out.stdout + out.stderr)
            out = run(base + ["get", "1"], cwd=tmp)
            check("clothctl get", out.returncode == 0 and "frame 3" in out.stdout, out.stdout + out.stderr)
            out = run([ctl, "--unix", sock, "get", "1"], cwd=tmp)
            check("clothctl --unix get", out.returncode == 0 and "frame 3" in out.stdout, out.stdout + out.stderr)
            out = run([ctl, "ping"], cwd=tmp, env=dict(os.environ, CLOTHD_UNIX=sock))
            check("CLOTHD_UNIX clothctl ping", out.returncode == 0 and out.stdout.startswith(f"pong from unix:{sock} "),
                  out.stdout + out.stderr)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        out = run(base + ["status"], cwd=tmp)
        check("clothctl without a server exits 3", out.returncode == 3, f"{out.returncode} {out.stderr}")
        out = run([ctl, "--unix", sock, "status"], cwd=tmp)
        check("clothctl --unix without a server exits 3 naming unix:PATH", out.returncode == 3 and
              f"cannot connect to clothd at unix:{sock}: " in out.stderr, f"{out.returncode} {out.stderr}")

        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write("check-package-token-0123456789\n")
        proc, port = start_clothd(binary, "--token-file", token)
        try:
            base = [ctl, "--port", str(port)]
            no_env = {k: v for k, v in os.environ.items() if k != "CLOTHD_TOKEN"}
            out = run(base + ["--token-file", token, "ping"], cwd=tmp, env=no_env)
            check("clothctl --token-file ping", out.returncode == 0 and out.stdout.startswith("pong from ")
                  and "(full access)" in out.stdout, out.stdout + out.stderr)
            out = run(base + ["ping"], cwd=tmp, env=no_env)
            check("clothctl without the token exits 1", out.returncode == 1 and
                  'unauthorized: cmd: "ping" needs auth first' in out.stderr, f"{out.returncode} {out.stderr}")
        finally:
            proc.terminate()
            proc.wait(timeout=10)

        check_typed(py, tmp)

        npy = numpy_python()
        if npy is None:
            print("skip numpy tests: no python3 with numpy (apt-get install python3-numpy)")
        else:
            out = run([npy, os.path.join(REPO, "tests", "e2e", "run_all.py"), "--clothd", binary,
                       "-k", "Numpy", "-k", "WithoutNumpy", "-q"])
            last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
            check(f"numpy tests with {npy}", out.returncode == 0 and "skipped" not in last,
                  (out.stdout + out.stderr)[-1500:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


def finish() -> int:
    failed = sum(1 for _, ok, _ in results if not ok)
    print(f"python-test: {len(results) - failed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
