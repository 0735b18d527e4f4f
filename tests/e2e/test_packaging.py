"""The Containerfile, run without a container runtime (issue 11, item 4).

The machine has no container engine, so this test does what a build
would, as far as it can without the base image:

  - reads the Containerfile (continuations, exec-form JSON arrays) and
    checks its shape: two Debian slim stages, a non-root USER created by
    the runtime stage, EXPOSEd ports that the CMD uses, a HEALTHCHECK;
  - checks that every package the stages apt-get install is a Debian
    package installed here (the build's tools and libraries, the runtime
    libraries), and that every library the built clothd links against
    belongs to one of the runtime stage's packages or to libc6;
  - runs the build stage in a clean temporary directory: COPY copies from
    the checkout, WORKDIR is that directory, every RUN command but the
    apt-get and useradd parts runs there with bash (a clean build of
    clothd, then its install into out/);
  - lays out the runtime stage's COPY --from files in a second directory,
    starts its ENTRYPOINT and CMD from there (ports moved to free ones,
    the token from CLOTHD_TOKEN as the image's users give it), runs the
    HEALTHCHECK command against it, and stops it with SIGTERM (exit 0,
    JSON log lines as the CMD asks)."""

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

from server import REPO

CONTAINERFILE = os.path.join(REPO, "Containerfile")


def instructions(path):
    """[(INSTRUCTION, argument text)] with continuations joined."""
    out, current = [], ""
    for raw in open(path).read().splitlines():
        line = raw.rstrip()
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    return out


def stages(path):
    """[{"from", "name", "steps": [(INSTR, arg)]}] in order."""
    result = []
    for word, arg in instructions(path):
        if word == "FROM":
            parts = arg.split()
            result.append({"from": parts[0], "name": parts[2] if len(parts) == 3 else None, "steps": []})
        else:
            result[-1]["steps"].append((word, arg))
    return result


def exec_form(arg):
    """An exec-form array (JSON) or a shell-form string as argv."""
    return json.loads(arg) if arg.startswith("[") else ["/bin/sh", "-c", arg]


def segments(command):
    """The parts of a RUN command joined by &&."""
    return [part.strip() for part in command.split("&&") if part.strip()]


def apt_packages(command):
    names = []
    for part in segments(command):
        words = shlex.split(part)
        if "apt-get" in words and "install" in words:
            names += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ContainerfileTest(unittest.TestCase):
    def test_the_containerfile_builds_and_runs_its_image_s_steps(self):
        if os.environ.get("CLOTHD_SANITIZER"):
            self.skipTest("a clean release build; nothing to check under a sanitizer")
        build, run = stages(CONTAINERFILE)
        self.assertRegex(build["from"], r"^debian:[a-z]+-slim$")
        self.assertEqual(run["from"], build["from"], "both stages on the same Debian")
        self.assertEqual(build["name"], "build")
        steps = run["steps"]
        user = [a for w, a in steps if w == "USER"]
        self.assertEqual(len(user), 1)
        user_name = user[0].split(":")[0]
        self.assertNotIn(user_name, ("root", "0"))
        runs = " && ".join(a for w, a in steps if w == "RUN")
        self.assertRegex(runs, rf"useradd [^&]*--system[^&]* {user_name}\b")
        health = [a for w, a in steps if w == "HEALTHCHECK"]
        self.assertEqual(len(health), 1)
        health_cmd = exec_form(health[0][health[0].index("CMD") + 3:].strip())
        entry = exec_form(dict(steps)["ENTRYPOINT"])
        cmd = exec_form(dict(steps)["CMD"])
        exposed = set(dict(steps)["EXPOSE"].split())
        ports = {cmd[i + 1] for i, a in enumerate(cmd) if a in ("--port", "--health-port", "--metrics-port")}
        self.assertEqual(ports, exposed, "EXPOSE names the ports the CMD serves")
        self.assertIn("/healthz", " ".join(health_cmd))

        # Every apt package exists here, installed (the build stage's tools,
        # the runtime libraries, which the -dev packages pull in).
        wanted = [p for s in (build, run) for w, a in s["steps"] if w == "RUN" for p in apt_packages(a)]
        self.assertIn("libuv1", wanted)
        for pkg in wanted:
            st = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
            self.assertEqual(st.stdout, "install ok installed", f"{pkg} is not an installed Debian package")
        runtime_pkgs = set(apt_packages(" && ".join(a for w, a in steps if w == "RUN"))) | {"libc6"}

        with tempfile.TemporaryDirectory(prefix="clothd-containerfile-") as tmp:
            ctx_root = os.path.join(tmp, "build-stage")
            workdir = None
            for word, arg in build["steps"]:
                if word == "WORKDIR":
                    workdir = os.path.join(ctx_root, arg.lstrip("/"))
                    os.makedirs(workdir, exist_ok=True)
                    build_workdir = arg
                elif word == "COPY":
                    *sources, dest = shlex.split(arg)
                    target = os.path.join(workdir, dest)
                    for src in sources:
                        full = os.path.join(REPO, src)
                        if os.path.isdir(full):
                            shutil.copytree(full, os.path.join(target, ""), dirs_exist_ok=True,
                                            ignore=shutil.ignore_patterns("__pycache__", "build*"))
                        else:
                            os.makedirs(target if dest.endswith("/") else os.path.dirname(target), exist_ok=True)
                            shutil.copy2(full, target if not dest.endswith("/") else os.path.join(target, ""))
                elif word == "RUN":
                    for part in segments(arg):
                        if part.startswith(("apt-get", "DEBIAN_FRONTEND", "rm -rf /var/lib/apt")):
                            continue
                        env = {k: v for k, v in os.environ.items()
                               if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
                        out = subprocess.run(["bash", "-c", part], cwd=workdir, capture_output=True, text=True,
                                             timeout=600, env=env)
                        self.assertEqual(out.returncode, 0, f"RUN {part}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")

            # The runtime stage: its COPY --from=build files, at their paths.
            root = os.path.join(tmp, "runtime")
            for word, arg in steps:
                if word != "COPY":
                    continue
                words = shlex.split(arg)
                self.assertEqual(words[0], "--from=build")
                src, dest = words[1], words[2]
                self.assertTrue(src.startswith(build_workdir + "/"), src)
                local = os.path.join(ctx_root, src.lstrip("/"))
                self.assertTrue(os.path.exists(local), f"COPY --from=build {src}: not built")
                os.makedirs(os.path.dirname(os.path.join(root, dest.lstrip("/"))), exist_ok=True)
                shutil.copy2(local, os.path.join(root, dest.lstrip("/")))
            exe = os.path.join(root, entry[0].lstrip("/"))
            self.assertTrue(os.access(exe, os.X_OK), f"ENTRYPOINT {entry[0]} is not in the runtime stage")

            # Every shared library it needs comes with the runtime packages.
            ldd = subprocess.run(["ldd", exe], capture_output=True, text=True, timeout=30).stdout
            for lib in re.findall(r"=> (/\S+)", ldd):
                owner = subprocess.run(["dpkg", "-S", os.path.realpath(lib)], capture_output=True, text=True)
                if owner.returncode != 0:
                    owner = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True)
                pkg = owner.stdout.split(":")[0]
                self.assertIn(pkg, runtime_pkgs, f"{lib} comes from {pkg}, which the runtime stage lacks")

            # Start it as the image would, ports moved to free ones.
            moved = {p: str(free_port()) for p in sorted(exposed)}
            argv = [exe] + [moved.get(a, a) for a in cmd]
            env = dict(os.environ, CLOTHD_TOKEN="container-test-token-0123456789")
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                    cwd=tmp)
            try:
                banner = proc.stdout.readline()
                self.assertRegex(banner, rf"^clothd \S+ listening on 0\.0\.0\.0:{moved['7878']} ")
                check = [moved.get(w, w) for w in health_cmd]
                for port in exposed:
                    check = [w.replace(f"/{port} ", f"/{moved[port]} ").replace(f"/{port}&", f"/{moved[port]}&")
                             for w in check]
                self.assertNotEqual(check, health_cmd, "the HEALTHCHECK's port was moved")
                out = subprocess.run(check, capture_output=True, text=True, timeout=10)
                self.assertEqual(out.returncode, 0, f"HEALTHCHECK failed: {out.stderr}")
            finally:
                proc.send_signal(signal.SIGTERM)
                code = proc.wait(timeout=10)
                err = proc.stderr.read()
                proc.stdout.close()
                proc.stderr.close()
            self.assertEqual(code, 0, err)
            down = subprocess.run(check, capture_output=True, text=True, timeout=10)
            self.assertNotEqual(down.returncode, 0, "the HEALTHCHECK must fail when clothd is gone")
            lines = [json.loads(line) for line in err.splitlines()]
            self.assertEqual([e["event"] for e in lines][0], "start")
            self.assertEqual(lines[0]["access"], "token")
            self.assertEqual(lines[-1]["event"], "stop")


if __name__ == "__main__":
    unittest.main()
