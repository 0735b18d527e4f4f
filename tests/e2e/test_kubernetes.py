"""The Kubernetes manifests of packaging/kubernetes/ (issue 12, part 2),
without a cluster: every file parses (python3-yaml), and each clothd
container in them is checked for what makes it work:

  - the image is the Containerfile's at this build's version;
  - every flag is one `clothd --help` lists; the simulation port is
    clothd's default (7878) and declared as a containerPort; the health
    port is declared and serves /metrics too;
  - its liveness, readiness (and startup) probes ask paths that
    server/health.c serves, on the health port;
  - CPU and memory requests and limits are set, requests <= limits,
    --workers equals the CPU limit, and the memory limit covers the
    particle limit (32 MiB + 256 B a particle, README.md there);
  - non-root as the Containerfile's user, read-only root file system, no
    privilege escalation, no capabilities; --data-dir is a mounted
    volume and --autosave is on; a non-loopback --bind takes its token
    from a Secret;
  - the sharded Service is headless, publishes unready shards and names
    the StatefulSet; the Agones GameServer's game container is not clothd;
  - and clothd itself starts with the container's arguments (ports moved
    to free ones, the data dir to a temporary one), answers 200 on every
    probe path, and on SIGTERM writes its autosave there and exits 0."""

import glob
import http.client
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest

import yaml  # python3-yaml (the Makefile's DEB_TEST)

from server import REPO, clothd_bin

MANIFESTS = sorted(glob.glob(os.path.join(REPO, "packaging", "kubernetes", "*.yaml")))
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def clothd_help() -> str:
    return subprocess.run([clothd_bin(), "--help"], capture_output=True, text=True, timeout=10).stdout


def clothd_version() -> str:
    out = subprocess.run([clothd_bin(), "--version"], capture_output=True, text=True, timeout=10).stdout
    return re.search(r"(\d+\.\d+\.\d+)", out).group(1)


def containerfile_uid() -> int:
    with open(os.path.join(REPO, "Containerfile")) as f:
        return int(re.search(r"useradd[^\n]*--uid (\d+)", f.read()).group(1))


def cpu_cores(text) -> float:
    text = str(text)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def mem_bytes(text) -> int:
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|K|M|G)?", str(text))
    scale = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 10**3, "M": 10**6, "G": 10**9}
    return int(m.group(1)) * scale[m.group(2)]


def flags(args: list) -> dict:
    """--flag value pairs (a switch maps to True)."""
    out, i = {}, 0
    while i < len(args):
        name = args[i]
        assert name.startswith("--"), f"argument {name!r} is not a flag"
        if i + 1 < len(args) and not str(args[i + 1]).startswith("--"):
            out[name] = str(args[i + 1])
            i += 2
        else:
            out[name] = True
            i += 1
    return out


def pod_specs(doc: dict) -> list:
    if doc.get("kind") in ("Deployment", "StatefulSet", "GameServer"):
        return [doc["spec"]["template"]["spec"]]
    return []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


class KubernetesManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.help = clothd_help()
        cls.version = clothd_version()
        cls.uid = containerfile_uid()
        with open(os.path.join(REPO, "server", "health.c")) as f:
            cls.health_c = f.read()
        cls.docs = {path: [d for d in yaml.safe_load_all(open(path)) if d] for path in MANIFESTS}
        cls.known_flags = set(re.findall(r"^\s+(--[a-z-]+)", cls.help, re.M))
        cls.default_port = int(re.search(r"--port N .*\(default (\d+)\)", cls.help).group(1))
        cls.default_particles = int(re.search(r"--max-total-particles N .*\(default (\d+)\)", cls.help).group(1))

    def clothd_containers(self):
        """(manifest, pod spec, container, its volumes' names) of every clothd container."""
        out = []
        for path, docs in self.docs.items():
            for doc in docs:
                claims = [t["metadata"]["name"] for t in doc.get("spec", {}).get("volumeClaimTemplates", [])]
                for spec in pod_specs(doc):
                    volumes = [v["name"] for v in spec.get("volumes", [])] + claims
                    for c in spec.get("containers", []) + spec.get("initContainers", []):
                        if c["image"].split(":")[0].rsplit("/", 1)[-1] == "clothd":
                            out.append((os.path.basename(path), spec, c, volumes))
        return out

    def test_the_three_deployments_should_be_there_and_parse(self):
        names = {os.path.basename(p) for p in MANIFESTS}
        self.assertEqual(names, {"game-server-sidecar.yaml", "agones-gameserver.yaml", "clothd-sharded.yaml"})
        kinds = sorted(d["kind"] for docs in self.docs.values() for d in docs)
        self.assertEqual(kinds, ["Deployment", "GameServer", "PodDisruptionBudget", "Service", "StatefulSet"])
        self.assertEqual(len(self.clothd_containers()), 3)
        self.assertGreaterEqual(len(self.known_flags), 20)

    def test_image_flags_and_ports_should_be_clothds(self):
        for name, _, c, _ in self.clothd_containers():
            with self.subTest(manifest=name):
                self.assertEqual(c["image"].rsplit(":", 1)[1], self.version)
                f = flags(c["args"])
                self.assertEqual(set(f) - self.known_flags, set(), "flags clothd --help does not list")
                ports = {p["name"]: p["containerPort"] for p in c["ports"]}
                self.assertEqual(int(f["--port"]), self.default_port)
                self.assertEqual(ports["clothd"], self.default_port)
                self.assertEqual(ports["health"], int(f["--health-port"]))
                self.assertEqual(f["--metrics-port"], f["--health-port"], "/metrics on the probes' port")

    def test_probes_should_ask_paths_health_c_serves_on_the_health_port(self):
        for name, _, c, _ in self.clothd_containers():
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                with self.subTest(manifest=name, probe=probe):
                    get = c[probe]["httpGet"]
                    self.assertIn(get["path"], ("/healthz", "/readyz"))
                    self.assertIn(f'strcmp(target, "{get["path"]}")', self.health_c)
                    self.assertEqual(get["port"], "health")
            self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/healthz", "liveness: the loop answers")

    def test_resources_should_match_the_flags(self):
        for name, _, c, _ in self.clothd_containers():
            with self.subTest(manifest=name):
                req, lim = c["resources"]["requests"], c["resources"]["limits"]
                f = flags(c["args"])
                self.assertEqual(int(f["--workers"]), cpu_cores(lim["cpu"]), "--workers = CPU limit")
                self.assertEqual(cpu_cores(lim["cpu"]) % 1, 0, "whole cores")
                self.assertLessEqual(cpu_cores(req["cpu"]), cpu_cores(lim["cpu"]))
                self.assertLessEqual(mem_bytes(req["memory"]), mem_bytes(lim["memory"]))
                particles = int(f.get("--max-total-particles", self.default_particles))
                self.assertGreaterEqual(mem_bytes(lim["memory"]), (32 << 20) + 256 * particles,
                                        "memory limit >= 32 MiB + 256 B x --max-total-particles")

    def test_security_and_the_data_volume_should_be_set(self):
        for name, spec, c, volumes in self.clothd_containers():
            with self.subTest(manifest=name):
                pod, ctr = spec.get("securityContext", {}), c["securityContext"]
                self.assertTrue(ctr.get("runAsNonRoot", pod.get("runAsNonRoot")))
                self.assertEqual(ctr.get("runAsUser", pod.get("runAsUser")), self.uid)
                self.assertEqual(pod.get("fsGroup"), self.uid, "the data volume writable by clothd")
                self.assertIs(ctr["readOnlyRootFilesystem"], True)
                self.assertIs(ctr["allowPrivilegeEscalation"], False)
                self.assertEqual(ctr["capabilities"]["drop"], ["ALL"])
                f = flags(c["args"])
                mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
                self.assertIn(f["--data-dir"], mounts)
                self.assertIn(mounts[f["--data-dir"]], volumes)
                self.assertGreater(int(f["--autosave"]), 0)
                if f["--bind"] not in LOOPBACK:
                    env = {e["name"]: e for e in c.get("env", [])}
                    self.assertIn("secretKeyRef", env["CLOTHD_TOKEN"]["valueFrom"], "a token from a Secret")

    def test_the_sidecar_the_agones_game_server_and_the_shards_should_be_wired(self):
        by_name = {os.path.basename(p): docs for p, docs in self.docs.items()}
        deployment = by_name["game-server-sidecar.yaml"][0]["spec"]["template"]["spec"]
        sidecar = next(c for c in deployment["initContainers"] if c["name"] == "clothd")
        self.assertEqual(sidecar["restartPolicy"], "Always", "a native sidecar")
        self.assertEqual(flags(sidecar["args"])["--bind"], "127.0.0.1", "loopback: the Pod only")
        gs = by_name["agones-gameserver.yaml"][0]
        game = next(c for c in gs["spec"]["template"]["spec"]["containers"] if c["name"] == gs["spec"]["container"])
        self.assertNotIn("clothd", game["image"])
        self.assertNotIn(7878, [p["containerPort"] for p in gs["spec"]["ports"]], "players never reach clothd")
        service, sts = by_name["clothd-sharded.yaml"][0], by_name["clothd-sharded.yaml"][1]
        self.assertEqual(service["spec"]["clusterIP"], "None")
        self.assertIs(service["spec"]["publishNotReadyAddresses"], True)
        self.assertEqual(sts["spec"]["serviceName"], service["metadata"]["name"])
        self.assertEqual(service["spec"]["selector"], sts["spec"]["template"]["metadata"]["labels"])
        ctr = sts["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual({p["targetPort"] for p in service["spec"]["ports"]}, {p["name"] for p in ctr["ports"]})

    def test_clothd_should_start_with_each_containers_arguments_and_pass_its_probes(self):
        for name, _, c, _ in self.clothd_containers():
            with self.subTest(manifest=name), tempfile.TemporaryDirectory() as data:
                args = [str(a) for a in c["args"]]
                port, health = free_port(), free_port()
                moved = {"--port": str(port), "--health-port": str(health), "--metrics-port": str(health),
                         "--data-dir": data}
                for i in range(len(args) - 1):
                    if args[i] in moved:
                        args[i + 1] = moved[args[i]]
                env = dict(os.environ)
                env.pop("CLOTHD_TOKEN", None)
                if any(e["name"] == "CLOTHD_TOKEN" for e in c.get("env", [])):
                    env["CLOTHD_TOKEN"] = "k8s-test-token-0123456789"
                proc = subprocess.Popen([clothd_bin(), *args], env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
                try:
                    banner = proc.stdout.readline().decode()
                    self.assertIn(f"listening on {flags(args)['--bind']}:{port}", banner)
                    deadline = time.monotonic() + 10
                    while True:
                        try:
                            statuses = {p: http_get(health, c[p]["httpGet"]["path"])
                                        for p in ("startupProbe", "livenessProbe", "readinessProbe")}
                            break
                        except OSError:
                            if time.monotonic() > deadline:
                                raise
                            time.sleep(0.05)
                    self.assertEqual(statuses, {p: 200 for p in statuses})
                    self.assertEqual(http_get(health, "/metrics"), 200)
                    proc.terminate()
                    self.assertEqual(proc.wait(timeout=10), 0, proc.stderr.read().decode()[-2000:])
                    self.assertIn("autosave.cds", os.listdir(data), "the autosave at SIGTERM, in the volume")
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
                    proc.stdout.close()
                    proc.stderr.close()


if __name__ == "__main__":
    unittest.main()
