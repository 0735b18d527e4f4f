"""Shared-memory frames (subscribe's "shm"; server/shm.c, server/shm_ring.c;
PROTOCOL.md "Shared-memory frames"), through the real server and raw
sockets, reading the ring as any client would (/dev/shm, read-only):

- a reference (flags bit 3, 56 bytes) names a frame in the ring that is
  byte for byte what a subscriber without "shm" receives, over TCP loopback
  and over the Unix socket; the ring's header says what PROTOCOL.md says;
  one copy serves every shm subscriber of a form;
- a reader that stalls finds its old frames overwritten (the claimed
  counter says so) and its newest whole; the server does not wait for it;
- a frame longer than a quarter of the ring comes as an ordinary frame;
- the workers write the ring directly (rooms reserved when a step
  starts): a step that tears an instance, and a batch of 6 large frames,
  still name frames equal to a plain subscriber's;
- the refusals: a bad "shm", --shm-mb 0, a client not on loopback;
- the object is 0600, removed when the server stops, and a crashed
  server's is removed at the next start."""

import json
import mmap
import os
import socket
import stat
import struct
import subprocess
import tempfile
import unittest

from server import Server
from test_unix_socket import Conn, tcp_conn, unix_conn

SHARED = 0x0008
HEADER = 4096


class Ring:
    """The ring a subscribe reply names, mapped read-only as a client would."""

    def __init__(self, reply: dict):
        self.name = reply["shm"]["name"]
        self.size = reply["shm"]["size"]
        self.path = "/dev/shm" + self.name
        fd = os.open(self.path, os.O_RDONLY)
        try:
            self.map = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        finally:
            os.close(fd)

    def header(self):
        """(magic, version, data offset, size, claimed, published, pid)."""
        return struct.unpack_from("<4sIQQQQI", self.map, 0)

    def resolve(self, ref: bytes):
        """The frame a reference names, or None when it was overwritten."""
        position, length = struct.unpack_from("<QI", ref, 40)
        start = HEADER + position % self.size
        frame = self.map[start:start + length]
        claimed = struct.unpack_from("<Q", self.map, 24)[0]
        return frame if claimed <= position + self.size else None

    def close(self):
        self.map.close()


def flags_of(message: bytes) -> int:
    return struct.unpack_from("<H", message, 6)[0]


class ShmFramesTest(unittest.TestCase):
    def serve(self, *args: str) -> Server:
        server = Server(*args).start()
        self.addCleanup(lambda: server.alive() and server.stop())
        return server

    def conn(self, server: Server) -> Conn:
        c = tcp_conn(server)
        self.addCleanup(c.close)
        return c

    def ring(self, reply: dict) -> Ring:
        r = Ring(reply)
        self.addCleanup(r.close)
        return r

    def test_a_reference_should_name_the_plain_subscribers_frame_byte_for_byte(self):
        server = self.serve()
        driver, shm, plain = self.conn(server), self.conn(server), self.conn(server)
        inst = driver.request("create", width=12, height=9, spacing=0.05)["instance"]
        reply = shm.request("subscribe", instance=inst, shm=True)
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["instances"], [inst])
        self.assertEqual(reply["shm"]["size"], 64 << 20, "--shm-mb's default, 64 MiB")
        self.assertRegex(reply["shm"]["name"], r"^/clothd-%d-[0-9a-f]{8}$" % server.pid)
        self.assertTrue(plain.request("subscribe", instance=inst)["ok"])
        ring = self.ring(reply)
        self.assertEqual(stat.S_IMODE(os.stat(ring.path).st_mode), 0o600)
        magic, version, data, size, _, _, pid = ring.header()
        self.assertEqual((magic, version, data, size, pid), (b"CLSM", 1, 4096, 64 << 20, server.pid))
        length = 40 + 12 * 12 * 9
        for step in range(4):  # the current frame, then three steps
            if step:
                self.assertEqual(driver.request("step", dt=1 / 60)["stepped"], 1)
            ref, frame = shm.frame(), plain.frame()
            self.assertEqual(len(ref), 56)
            self.assertEqual(flags_of(ref), SHARED)
            self.assertEqual(struct.unpack_from("<I", ref, 8)[0], 56)
            self.assertEqual(ref[12:40], frame[12:40], "the named frame's instance, number, time, count")
            self.assertEqual(struct.unpack_from("<II", ref, 48), (length, 0), "its length, reserved 0")
            self.assertEqual(ring.resolve(ref), frame, f"frame {step}: the same bytes")
        _, _, _, _, claimed, published, _ = ring.header()
        position = struct.unpack_from("<Q", ref, 40)[0]
        self.assertEqual((claimed, published), (position + length,) * 2, "the newest frame's end")
        stats = driver.request("stats")
        self.assertEqual(stats["shm"], {"sizeBytes": 64 << 20, "frames": 4, "bytes": 4 * length},
                         "one copy per frame, whoever reads it")

    def test_every_shm_subscriber_of_a_form_should_share_one_copy_over_tcp_and_unix(self):
        with tempfile.TemporaryDirectory(prefix="clothd-shm-") as d:
            path = os.path.join(d, "clothd.sock")
            server = self.serve("--unix", path)
            driver, over_tcp = self.conn(server), self.conn(server)
            over_unix = unix_conn(path)
            self.addCleanup(over_unix.close)
            inst = driver.request("create", width=6, height=6)["instance"]
            a = over_tcp.request("subscribe", shm=True)
            over_tcp.frame()  # the current frame
            b = over_unix.request("subscribe", shm=True, channels=["normals"])
            self.assertEqual(flags_of(over_unix.frame()), SHARED | 0x0004, "normals, in the ring")
            c = over_unix.request("subscribe", instance=inst, shm=True)  # a named one wins
            self.assertEqual(flags_of(over_unix.frame()), SHARED)
            self.assertTrue(a["ok"] and b["ok"] and c["ok"], (a, b, c))
            self.assertEqual(a["shm"], c["shm"], "one ring per server")
            driver.request("step", dt=1 / 60)
            ref_tcp, ref_unix = over_tcp.frame(), over_unix.frame()
            self.assertEqual(ref_tcp, ref_unix, "the same copy: the same position")
            self.assertEqual(ring_frame := self.ring(a).resolve(ref_tcp), self.ring(c).resolve(ref_unix))
            self.assertEqual(len(ring_frame), 40 + 12 * 36)

    def test_a_stalled_reader_should_find_old_frames_overwritten_and_the_newest_whole(self):
        server = self.serve("--shm-mb", "1")
        driver, shm = self.conn(server), self.conn(server)
        inst = driver.request("create", width=100, height=100, spacing=0.01)["instance"]
        reply = shm.request("subscribe", instance=inst, shm=True)
        self.assertEqual(reply["shm"]["size"], 1 << 20)
        ring = self.ring(reply)
        for _ in range(12):  # 120 KB frames: the ring holds 8 of them
            self.assertEqual(driver.request("step", dt=1 / 60)["stepped"], 1)
        refs = [shm.frame() for _ in range(13)]  # queued meanwhile: the ring did not wait
        numbers = [struct.unpack_from("<Q", r, 16)[0] for r in refs]
        self.assertEqual(numbers, list(range(13)))
        frames = [ring.resolve(r) for r in refs]
        self.assertIsNone(frames[0], "frame 0 was overwritten while nobody read")
        self.assertEqual(sum(f is None for f in frames), 13 - 8, "the ring holds the newest 8")
        newest = frames[-1]
        self.assertEqual(struct.unpack_from("<Q", newest, 16)[0], 12)
        got = driver.request("get", instance=inst)
        xyz = struct.unpack_from("<%df" % (3 * 10000), newest, 40)
        as_f32 = list(struct.unpack("<3f", struct.pack("<3f", *got["positions"][:3])))
        self.assertEqual(list(xyz[:3]), as_f32, "the state get reports")

    def test_a_frame_over_a_quarter_of_the_ring_should_come_as_an_ordinary_frame(self):
        server = self.serve("--shm-mb", "1")
        driver, shm = self.conn(server), self.conn(server)
        inst = driver.request("create", width=160, height=160, spacing=0.01)["instance"]
        self.assertTrue(shm.request("subscribe", instance=inst, shm=True)["ok"])
        frame = shm.frame()
        self.assertEqual(flags_of(frame), 0, "307,240 bytes > 1 MiB / 4: not in the ring")
        self.assertEqual(len(frame), 40 + 12 * 160 * 160)

    def test_a_step_that_tears_should_name_the_torn_frame(self):
        # Rooms in the ring were reserved for the particles before the
        # step; the tear adds particles, so the frame is encoded again.
        server = self.serve()
        driver, shm, plain = self.conn(server), self.conn(server), self.conn(server)
        w, h, spacing = 24, 12, 0.05
        inst = driver.request("create", width=w, height=h, spacing=spacing, gravity=[0, 0, 0],
                              tearStrain=0.3, sleepThreshold=0)["instance"]
        ring = self.ring(shm.request("subscribe", instance=inst, shm=True))
        plain.request("subscribe", instance=inst)
        shm.frame(), plain.frame()
        driver.request("pin", instance=inst, particles=[y * w for y in range(h)])
        torn_at = None
        for f in range(1, 151):
            right = [y * w + w - 1 for y in range(h)]
            driver.request("pin", instance=inst, particles=right,
                           positions=[[(w - 1) * spacing + f / 60, -y * spacing, 0] for y in range(h)])
            reply = driver.request("step", instances=[inst])
            ref, frame = shm.frame(), plain.frame()
            self.assertEqual(ring.resolve(ref), frame, f"step {f}")
            if inst in reply.get("torn", []):
                torn_at = f
                break
        self.assertIsNotNone(torn_at, "the sheet tore")
        self.assertGreater(struct.unpack_from("<I", frame, 32)[0], w * h, "more particles after the tear")

    def test_a_batch_of_many_frames_should_name_each_whole(self):
        # 6 frames of 120,040 bytes in one step, 720 KB of a 1 MiB ring,
        # each room reserved when the step starts and filled by a worker.
        server = self.serve("--shm-mb", "1")
        driver, shm, plain = self.conn(server), self.conn(server), self.conn(server)
        ids = [driver.request("create", width=100, height=100, spacing=0.01,
                              origin=[2.0 * i, 0, 0])["instance"] for i in range(6)]
        ring = self.ring(shm.request("subscribe", shm=True))
        plain.request("subscribe")
        for _ in ids:
            shm.frame(), plain.frame()
        for step in range(3):
            self.assertEqual(driver.request("step", dt=1 / 60)["stepped"], 6)
            got = {}
            for _ in ids:
                ref, frame = shm.frame(), plain.frame()
                got[struct.unpack_from("<I", ref, 12)[0]] = (ring.resolve(ref), frame)
            self.assertEqual(sorted(got), sorted(ids))
            for inst, (from_ring, frame) in got.items():
                self.assertEqual(from_ring, frame, f"step {step}, instance {inst}")

    def test_bad_shm_requests_should_be_refused_and_subscribe_nothing(self):
        server = self.serve("--shm-mb", "0")
        driver = self.conn(server)
        inst = driver.request("create", width=4, height=4)["instance"]
        bad = driver.request("subscribe", instance=inst, shm="yes")
        self.assertEqual(bad["error"], {"code": "invalid_argument", "message": "shm: must be true or false"})
        off = driver.request("subscribe", instance=inst, shm=True)
        self.assertEqual(off["error"], {"code": "invalid_argument",
                                        "message": "shm: this server has no shared memory (--shm-mb 0)"})
        self.assertEqual(driver.request("step", dt=1 / 60)["stepped"], 1)
        self.assertTrue(driver.request("ping")["ok"])
        self.assertEqual(driver.buf, b"", "no frame: nothing was subscribed")

    def test_a_client_not_on_loopback_should_be_refused(self):
        address = outside_address()
        if address is None:
            self.skipTest("this host has no address but loopback")
        server = self.serve("--bind", "0.0.0.0", "--insecure")
        remote = Conn(socket.create_connection((address, server.port)))
        self.addCleanup(remote.close)
        inst = remote.request("create", width=4, height=4)["instance"]
        reply = remote.request("subscribe", instance=inst, shm=True)
        self.assertEqual(reply["error"]["code"], "invalid_argument")
        self.assertEqual(reply["error"]["message"],
                         "shm: only for a client on clothd's host (the Unix socket or a loopback address)")
        self.assertTrue(remote.request("subscribe", instance=inst)["ok"], "without shm it works")

    def test_the_ring_should_go_when_the_server_stops_and_a_crashed_ones_at_the_next_start(self):
        server = self.serve()
        c = self.conn(server)
        ring = self.ring(c.request("subscribe", shm=True))
        self.assertTrue(os.path.exists(ring.path))
        self.assertEqual(server.stop(), 0)
        self.assertFalse(os.path.exists(ring.path), "removed at exit")
        dead = dead_pid()
        stale = f"/dev/shm/clothd-{dead}-0badf00d"
        other = f"/dev/shm/clothd-notapid-{os.getpid()}"
        for p in (stale, other):
            with open(p, "wb") as f:
                f.write(b"x")
            self.addCleanup(lambda p=p: os.path.exists(p) and os.unlink(p))
        self.serve()
        self.assertFalse(os.path.exists(stale), "a gone process's ring is removed")
        self.assertTrue(os.path.exists(other), "a name that is not clothd-<pid>-… is left alone")


def outside_address():
    """An address of this host other than loopback, or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent: it picks the route's source
        address = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if address.startswith("127.") else address


def dead_pid() -> int:
    """A process id that no process has now."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


if __name__ == "__main__":
    unittest.main()
