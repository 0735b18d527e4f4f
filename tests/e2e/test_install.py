"""make install and make uninstall (issue 11, item 4): the files, a run of
the installed clothd and clothctl, the man pages against the flags and
commands, and the systemd unit: `systemd-analyze verify`, its offline
security exposure, and every system call clothd makes (under strace)
allowed by the unit's SystemCallFilter, with the unit's address families
and no writable executable memory.

The build tree is the one of the binary under test (CLOTHD_BIN's folder),
so `make install` does not rebuild clothd; under a sanitizer build the
module is skipped."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from ops import http, wait_for
from server import REPO, clothd_bin

HERE = os.path.dirname(os.path.abspath(__file__))


def build_dir():
    binary = clothd_bin()
    if os.environ.get("CLOTHD_SANITIZER") or os.path.basename(binary) != "clothd":
        raise unittest.SkipTest("install is checked with the release build only")
    return os.path.dirname(os.path.abspath(binary))


def make(*args, check=True):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    build = os.path.relpath(build_dir(), REPO)
    out = subprocess.run(["make", "--no-print-directory", "-s", f"BUILD={build}", *args], cwd=REPO,
                         capture_output=True, text=True, timeout=300, env=env)
    if check and out.returncode != 0:
        raise AssertionError(f"make {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
    return out


def files_under(root):
    found = set()
    for d, _, names in os.walk(root):
        for n in names:
            found.add(os.path.relpath(os.path.join(d, n), root))
    return found


def has_c_client():
    return os.path.exists(os.path.join(REPO, "clients", "c", "client.mk"))


def start(cmd, env=None):
    """Starts a clothd command; returns (process, port, http port)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    banner = proc.stdout.readline()
    m = re.match(r"clothd \S+ listening on \S+:(\d+) ", banner)
    if not m:
        proc.kill()
        raise AssertionError(f"no banner: {banner!r} {proc.stderr.read()!r}")
    h = None
    if "--health-port" in cmd or "--metrics-port" in cmd:
        h = re.search(r"http://[0-9.]+:(\d+) ", proc.stdout.readline())
    return proc, int(m.group(1)), int(h.group(1)) if h else None


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=10)
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    return code, err


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        build_dir()
        cls.tmp = tempfile.mkdtemp(prefix="clothd-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        make("install", f"PREFIX={cls.prefix}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_files_of_a_destdir_install_and_uninstall(self):
        stage = os.path.join(self.tmp, "stage")
        make("install", "PREFIX=/usr/local", f"DESTDIR={stage}")
        root = os.path.join(stage, "usr", "local")
        got = files_under(root)
        want = {"bin/clothd", "bin/clothctl", "share/clothd/python/clothd.py",
                "share/clothd/python/clothctl.py", "share/man/man1/clothd.1", "share/man/man1/clothctl.1",
                "lib/systemd/system/clothd.service"}
        if has_c_client():
            want |= {"include/clothd/client.h", "lib/pkgconfig/clothd.pc", "lib/libclothd.a",
                     "lib/libclothd.so"}
        self.assertLessEqual(want, got, f"missing: {want - got}")
        self.assertTrue(os.access(os.path.join(root, "bin/clothd"), os.X_OK))
        self.assertTrue(os.access(os.path.join(root, "bin/clothctl"), os.X_OK))
        with open(os.path.join(root, "bin/clothd"), "rb") as a, open(clothd_bin(), "rb") as b:
            self.assertEqual(a.read(), b.read(), "the installed clothd is the built one")
        wrapper = open(os.path.join(root, "bin/clothctl")).read()
        self.assertTrue(wrapper.startswith("#!/bin/sh\n"))
        self.assertIn("/usr/local/share/clothd/python/clothctl.py", wrapper)
        self.assertNotIn(stage, wrapper, "DESTDIR must not leak into installed files")
        unit = open(os.path.join(root, "lib/systemd/system/clothd.service")).read()
        self.assertIn("\nExecStart=/usr/local/bin/clothd ", unit)
        self.assertNotIn("@BINDIR@", unit)
        if has_c_client():
            pc = open(os.path.join(root, "lib/pkgconfig/clothd.pc")).read()
            self.assertIn("prefix=/usr/local", pc)
            self.assertTrue(os.path.islink(os.path.join(root, "lib/libclothd.so")), "symlinks kept")
        make("uninstall", "PREFIX=/usr/local", f"DESTDIR={stage}")
        self.assertEqual(files_under(stage), set(), "uninstall removes every installed file")

    def test_the_installed_clothd_and_clothctl_run(self):
        bindir = os.path.join(self.prefix, "bin")
        proc, port, hport = start([os.path.join(bindir, "clothd"), "--port", "0", "--health-port", "0",
                                   "--workers", "2"])
        try:
            ctl = [os.path.join(bindir, "clothctl"), "--port", str(port)]
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CLOTHD_TOKEN")}
            out = subprocess.run(ctl + ["ping"], capture_output=True, text=True, timeout=30, cwd=self.tmp,
                                 env=env)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, rf"^pong from 127\.0\.0\.1:{port} in \d+\.\d ms")
            out = subprocess.run(ctl + ["create", "--width", "4", "--height", "4"], capture_output=True,
                                 text=True, timeout=30, env=env)
            self.assertEqual(out.returncode, 0, out.stderr)
            out = subprocess.run(ctl + ["stats"], capture_output=True, text=True, timeout=30, env=env)
            self.assertIn("particles 16 ", out.stdout)
            self.assertEqual(http(hport, "/readyz")[::2], (200, b"ready\n"))
        finally:
            code, err = stop(proc)
        self.assertEqual(code, 0, err)
        self.assertIn(" info stop signal=SIGTERM", err)

    def test_a_c_program_builds_against_the_installed_clothd_pc_and_runs(self):
        if not has_c_client():
            self.skipTest("no clients/c/client.mk: libclothd is not installed")
        src = os.path.join(self.tmp, "ping.c")
        with open(src, "w") as f:
            f.write("""#include <stdio.h>
#include <stdlib.h>
#include <clothd/client.h>

int main(int argc, char **argv)
{
    clothd_options o = clothd_options_default();
    o.port = (uint16_t)atoi(argv[1]);
    clothd_client *c = NULL;
    clothd_error err;
    if (clothd_connect(&o, &c, &err) != CLOTHD_OK || clothd_ping(c, &err) != CLOTHD_OK) {
        fprintf(stderr, "%s\\n", err.message);
        return 1;
    }
    puts("pong");
    clothd_close(c);
    return 0;
}
""")
        libdir = os.path.join(self.prefix, "lib")
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "clothd"], capture_output=True, text=True,
                               env=env, timeout=30)
        self.assertEqual(flags.returncode, 0, flags.stderr)
        self.assertIn(f"-I{self.prefix}/include", flags.stdout)
        exe = os.path.join(self.tmp, "ping")
        out = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", src, "-o", exe, *flags.stdout.split()],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        proc, port, _ = start([os.path.join(self.prefix, "bin", "clothd"), "--port", "0", "--workers", "2"])
        try:
            run = subprocess.run([exe, str(port)], capture_output=True, text=True, timeout=30,
                                 env=dict(os.environ, LD_LIBRARY_PATH=libdir))
        finally:
            code, err = stop(proc)
        self.assertEqual((run.returncode, run.stdout), (0, "pong\n"), run.stderr)
        self.assertEqual(code, 0, err)

    def test_man_pages_render_and_name_every_flag_and_command(self):
        man1 = os.path.join(self.prefix, "share", "man", "man1")
        for page in ("clothd.1", "clothctl.1"):
            out = subprocess.run(["groff", "-man", "-ww", "-z", os.path.join(man1, page)],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual((out.returncode, out.stderr), (0, ""), f"groff warnings in {page}")
        page = open(os.path.join(man1, "clothd.1")).read().replace("\\-", "-")
        usage = subprocess.run([clothd_bin(), "--help"], capture_output=True, text=True, timeout=5).stdout
        flags = re.findall(r"^  (--[a-z-]+)", usage, re.M)
        self.assertGreater(len(flags), 15)
        for flag in flags:
            self.assertIn(flag, page, f"clothd.1 lacks {flag}")
        page = open(os.path.join(man1, "clothctl.1")).read()
        usage = subprocess.run([sys.executable, os.path.join(REPO, "clients/python/clothctl.py"), "--help"],
                               capture_output=True, text=True, timeout=30).stdout
        commands = re.findall(r"^    ([a-z-]+) ", usage, re.M)
        self.assertIn("stats", commands)
        self.assertIn("add-collider", commands)
        for cmd in commands:
            roff = cmd.replace("-", r"\\-")
            self.assertRegex(page, rf"\n\.(TP\n\.(B|BI|BR) )?{roff}\b", f"clothctl.1 lacks {cmd}")

    # -- the systemd unit ------------------------------------------------------

    def unit(self):
        return os.path.join(self.prefix, "lib", "systemd", "system", "clothd.service")

    def test_the_unit_verifies_and_is_sandboxed(self):
        if shutil.which("systemd-analyze") is None:
            self.skipTest("systemd-analyze is not installed (make deps-test installs it)")
        env = dict(os.environ, MANPATH=os.path.join(self.prefix, "share", "man"))
        out = subprocess.run(["systemd-analyze", "verify", self.unit()], capture_output=True, text=True,
                             timeout=60, env=env)
        self.assertEqual((out.returncode, out.stdout + out.stderr), (0, ""))
        out = subprocess.run(["systemd-analyze", "security", "--offline=yes", self.unit()],
                             capture_output=True, text=True, timeout=60)
        m = re.search(r"Overall exposure level for clothd\.service: (\d+\.\d+)", out.stdout)
        self.assertTrue(m, out.stdout[-500:] + out.stderr)
        self.assertLessEqual(float(m.group(1)), 2.0, "exposure 0 (sealed) .. 10 (wide open)")
        text = open(self.unit()).read()
        for line in ("DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                     "ProtectHome=yes", "MemoryDenyWriteExecute=yes", "StateDirectory=clothd",
                     "SystemCallFilter=@system-service", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX"):
            self.assertIn("\n" + line + "\n", text)

    def test_every_system_call_of_clothd_is_allowed_by_the_unit(self):
        if shutil.which("strace") is None or shutil.which("systemd-analyze") is None:
            self.skipTest("strace or systemd-analyze is not installed (make deps-test installs them)")
        text = open(self.unit()).read()

        def expand(item, seen=None):
            """A system call, or every call of a @group (groups nest)."""
            if not item.startswith("@"):
                return {item}
            out = subprocess.run(["systemd-analyze", "syscall-filter", item], capture_output=True,
                                 text=True, timeout=30)
            names = set()
            for entry in re.findall(r"^\s+(@?[a-z0-9_-]+)$", out.stdout, re.M):
                names |= expand(entry)
            self.assertTrue(names, f"{item}: no system calls listed")
            return names

        allowed, denied = set(), set()
        for rule in re.findall(r"^SystemCallFilter=(.*)$", text, re.M):
            for item in rule.lstrip("~").split():
                (denied if rule.startswith("~") else allowed).update(expand(item))
        allowed -= denied
        self.assertIn("epoll_wait", allowed)
        trace = os.path.join(self.tmp, "strace.txt")
        exe = os.path.join(self.prefix, "bin", "clothd")
        proc, port, hport = start(["strace", "-f", "-qq", "-o", trace, exe, "--port", "0", "--health-port", "0",
                                   "--metrics-port", "0", "--workers", "2", "--log-level", "debug"])
        try:
            sys.path.insert(0, os.path.join(REPO, "clients", "python"))
            from clothd import Client
            with Client("127.0.0.1", port, 30) as c:
                big = c.create_cloth(width=64, height=64, sleep_threshold=0)  # stepped on the pool
                c.subscribe(big, quantize=True)
                for _ in range(5):
                    c.step()
                c.stats()
                self.assertEqual(http(hport, "/metrics")[0], 200)
                self.assertEqual(http(hport, "/readyz")[0], 200)
        finally:
            # SIGTERM to clothd itself (strace would only detach), then strace ends with it.
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                for child in f.read().split():
                    os.kill(int(child), signal.SIGTERM)
            code = proc.wait(timeout=10)
            err = proc.stderr.read()
            proc.stdout.close()
            proc.stderr.close()
        self.assertEqual(code, 0, err)
        self.assertIn(" info stop signal=SIGTERM", err)
        lines = open(trace).read().splitlines()
        used = set()
        for line in lines:
            m = re.match(r"^\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]", line)
            if m and not line.split(None, 1)[1].startswith(("+++", "---")):
                used.add(m.group(1))
        used.discard("execve")  # strace's own exec of clothd; allowed anyway (@process)
        self.assertIn("epoll_wait", used)
        self.assertEqual(used - allowed, set(), "system calls the unit's SystemCallFilter would refuse")
        families = set(re.findall(r"socket\((AF_[A-Z0-9]+)", "\n".join(lines)))
        self.assertLessEqual(families, {"AF_INET", "AF_INET6", "AF_UNIX"})
        wx = [l for l in lines if re.search(r"\b(mmap|mprotect)\(.*PROT_WRITE\|PROT_EXEC|PROT_EXEC\|PROT_WRITE", l)]
        self.assertEqual(wx, [], "MemoryDenyWriteExecute would refuse these")


if __name__ == "__main__":
    unittest.main()
