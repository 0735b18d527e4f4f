"""The Python client's shared-memory frames (subscribe(shm=True);
PROTOCOL.md "Shared-memory frames") against the real server:

- a Client or Subscriber with shm=True receives, over TCP loopback and over
  the Unix socket, the same Frames as a plain subscriber: the same frame
  numbers, times and bytes (the 56-byte references never reach the user);
- a reader that stalls while the ring wraps gets the frames still whole
  (5..12 of a 100x100 cloth in a 1 MiB ring of 8 such frames) and counts
  the 5 overwritten ones in frames_missed;
- a frame over a quarter of the ring comes as an ordinary frame and is
  delivered as one;
- a server started with --shm-mb 0: its hello lacks "shm", so the client
  refuses (FeatureMissing) before sending; without the handshake the
  server's invalid_argument comes through as InvalidArgument;
- the ring is unmapped on close, mapped again on reconnect;
- a ring that cannot be opened (a fake server names one that is not there)
  raises ShmUnavailable; the connection goes on and its frames count as
  missed;
- decode_frame of a bare reference (one from the server, PROTOCOL.md's
  test vector) is a ProtocolError that says so;
- clothctl watch --shm prints the frames."""

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import unittest

from server import REPO, Server

from clothd import (FRAME_FLAG_SHARED, Client, ClothdError, FeatureMissing, Frame, InvalidArgument,
                    ProtocolError, ShmUnavailable, Subscriber, decode_frame)

CLOTHCTL = os.path.join(REPO, "clients", "python", "clothctl.py")
DT = 1 / 60


def frame_bytes(f: Frame) -> bytes:
    """The frame as the wire carries it (decode_frame's inverse)."""
    return struct.pack("<4sHHIIQdII", b"\x89CLF", f.version, f.flags, f.size, f.instance, f.frame,
                       f.time, f.count, 0) + f.payload


class ShmClientTest(unittest.TestCase):
    """One server, TCP and a Unix socket, the default 64 MiB ring."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(unix=True).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def client(self, **kwargs) -> Client:
        c = Client(port=self.server.port, **kwargs).connect()
        self.addCleanup(c.close)
        return c

    def same_frames_as_plain(self, shm: Client) -> None:
        driver, plain = self.client(), self.client()
        inst = driver.create_cloth(width=12, height=9, spacing=0.05, ephemeral=True)
        reply = shm.subscribe(inst, shm=True, channels=["normals"])
        self.assertEqual(reply["shm"]["size"], 64 << 20)
        self.assertEqual(shm.shm, reply["shm"], "the ring the reply named is mapped")
        plain.subscribe(inst, channels=["normals"])
        for step in range(4):  # the current frame, then three steps
            if step:
                driver.step(DT, instances=[inst])
            got, want = shm.next_frame(timeout=5), plain.next_frame(timeout=5)
            self.assertEqual((got.instance, got.frame, got.time), (inst, step, want.time))
            self.assertEqual(got.flags & FRAME_FLAG_SHARED, 0, "a Frame, not the reference")
            self.assertEqual(got, want, f"frame {step}: the same header and payload")
            self.assertEqual(frame_bytes(got), frame_bytes(want))
            self.assertEqual(got.size, 40 + 2 * 12 * 12 * 9, "positions and normals")
            self.assertEqual(list(got.flat), list(want.flat))
        self.assertEqual(shm.frames_missed, 0)

    def test_shm_frames_should_equal_a_plain_subscribers_over_tcp(self):
        self.same_frames_as_plain(self.client())

    def test_shm_frames_should_equal_a_plain_subscribers_over_the_unix_socket(self):
        self.same_frames_as_plain(self.client(unix_socket=self.server.unix_path))

    def test_a_subscriber_should_read_shm_frames_on_its_thread_over_the_unix_socket(self):
        driver = self.client()
        inst = driver.create_cloth(width=5, height=5, ephemeral=True)
        seen = []
        sub = Subscriber(unix_socket=self.server.unix_path, instances=inst, shm=True, quantize=True)
        self.addCleanup(sub.close)
        sub.start(callback=seen.append)
        sub.wait_for(inst, 0)
        for _ in range(3):
            driver.step(DT, instances=[inst])
        newest = sub.wait_for(inst, 3)
        self.assertEqual(newest.frame, 3)
        self.assertTrue(newest.quantized)
        self.assertEqual([f.frame for f in seen], [0, 1, 2, 3])
        self.assertEqual(sub.frames_missed, 0)
        self.assertIsNotNone(sub.client.shm)

    def test_the_ring_should_be_unmapped_on_close_and_mapped_again_on_reconnect(self):
        driver, shm = self.client(), self.client()
        inst = driver.create_cloth(width=4, height=4, ephemeral=True)
        ring = shm.subscribe(inst, shm=True)["shm"]
        self.assertEqual(shm.next_frame(timeout=5).frame, 0)
        shm.reconnect()
        self.assertEqual(shm.shm, ring, "the renewed subscription maps the same ring")
        self.assertEqual(shm.subscriptions[inst], {"shm": True})
        self.assertEqual(shm.next_frame(timeout=5).frame, 0, "the current frame after the renewal")
        driver.step(DT, instances=[inst])
        self.assertEqual(shm.next_frame(timeout=5).frame, 1)
        shm.close()
        self.assertIsNone(shm.shm, "unmapped")
        self.assertTrue(os.path.exists("/dev/shm" + ring["name"]), "the server's object stays")

    def test_decode_frame_of_a_bare_reference_should_say_what_it_is(self):
        raw = self.client(handshake=False)
        inst = raw.create_cloth(width=3, height=3, ephemeral=True)
        raw.send_json({"id": 99, "cmd": "subscribe", "instance": inst, "shm": True})
        self.assertTrue(raw.read_reply()["ok"])  # not through request(): no ring mapped
        ref = raw._take(56)
        self.assertEqual(struct.unpack_from("<HI", ref, 6), (FRAME_FLAG_SHARED, 56))
        with self.assertRaisesRegex(ProtocolError, r"shared-memory reference \(flags bit 3\) to frame 0 of "
                                                   rf"instance {inst}, not a frame"):
            decode_frame(ref)
        longer = ref[:8] + struct.pack("<I", 60) + ref[12:] + bytes(4)
        with self.assertRaisesRegex(ProtocolError, "shared-memory reference"):
            decode_frame(longer)

    def test_clothctl_watch_shm_should_print_the_frames(self):
        driver = self.client()
        inst = driver.create_cloth(width=4, height=3)
        self.addCleanup(driver.destroy, inst)
        out = subprocess.run([sys.executable, CLOTHCTL, "--port", str(self.server.port), "--json", "watch",
                              str(inst), "--shm", "--count", "1", "--idle", "5"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn('"shm":{"name":"/clothd-', lines[0], "the subscribe reply")
        self.assertIn(f'{{"instance":{inst},"frame":0,', lines[1])
        self.assertIn('"bytes":184}', lines[1], "40 + 12 * 12: the frame, not the 56-byte reference")


class ShmSmallRingTest(unittest.TestCase):
    """--shm-mb 1: a ring of 1 MiB."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server("--shm-mb", "1").start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def client(self) -> Client:
        c = self.server.client()
        self.addCleanup(c.close)
        return c

    def test_a_stalled_reader_should_get_the_frames_still_whole_and_count_the_missed(self):
        driver, shm = self.client(), self.client()
        inst = driver.create_cloth(width=100, height=100, spacing=0.01, ephemeral=True)
        self.assertEqual(shm.subscribe(inst, shm=True)["shm"]["size"], 1 << 20)
        for _ in range(12):  # 120,040-byte frames: the ring holds 8; shm reads nothing meanwhile
            self.assertEqual(driver.step(DT, instances=[inst])["stepped"], 1)
        # A step's reply goes out just before its frame enters the ring; the
        # next request is served after that.
        driver.ping()
        frames = [shm.next_frame(timeout=5) for _ in range(8)]
        self.assertEqual([f.frame for f in frames], list(range(5, 13)))
        self.assertEqual(shm.frames_missed, 5, "frames 0..4 were overwritten before they were read")
        self.assertEqual(shm.poll_frames(), [], "nothing else came")
        newest = frames[-1]
        self.assertEqual(newest.size, 120040)
        state = driver.get(inst)
        self.assertEqual(list(newest.flat), list(state.flat), "the state get reports")

    def test_a_frame_over_a_quarter_of_the_ring_should_come_as_an_ordinary_frame(self):
        driver, shm = self.client(), self.client()
        inst = driver.create_cloth(width=160, height=160, spacing=0.01, ephemeral=True)
        self.assertTrue(shm.subscribe(inst, shm=True)["ok"])
        frame = shm.next_frame(timeout=5)
        self.assertEqual((frame.instance, frame.frame, frame.flags), (inst, 0, 0))
        self.assertEqual(frame.size, 40 + 12 * 160 * 160, "307,240 bytes > 1 MiB / 4: through the socket")
        self.assertEqual(list(frame.flat), list(driver.get(inst).flat))
        self.assertEqual(shm.frames_missed, 0)


class NoShmServerTest(unittest.TestCase):
    """--shm-mb 0: no shared memory."""

    def test_a_server_without_shared_memory_should_refuse_through_the_error_api(self):
        server = Server("--shm-mb", "0").start()
        self.addCleanup(server.stop)
        c = server.client()
        self.addCleanup(c.close)
        self.assertNotIn("shm", c.features)
        inst = c.create_cloth(width=4, height=4, ephemeral=True)
        with self.assertRaises(FeatureMissing) as caught:
            c.subscribe(inst, shm=True)
        self.assertEqual(caught.exception.features, ("shm",))
        self.assertIn('needed by subscribe with "shm"', caught.exception.message)
        raw = server.client(handshake=False)  # no hello: nothing checked before sending
        self.addCleanup(raw.close)
        with self.assertRaises(InvalidArgument) as refused:
            raw.subscribe(inst, shm=True)
        self.assertEqual(refused.exception.message, "shm: this server has no shared memory (--shm-mb 0)")
        self.assertEqual(raw.subscriptions, {}, "nothing subscribed")
        self.assertIsNone(raw.shm)
        c.step(DT, instances=[inst])
        self.assertEqual(raw.poll_frames(), [], "no frame: nothing was subscribed")


def reference(instance: int, frame: int, count: int, position: int, time: float = 0.0) -> bytes:
    """A 56-byte reference to a plain frame of `count` particles."""
    return struct.pack("<4sHHIIQdIIQII", b"\x89CLF", 1, FRAME_FLAG_SHARED, 56, instance, frame, time, count, 0,
                       position, 40 + 12 * count, 0)


class ReferenceVectorTest(unittest.TestCase):
    def test_protocol_md_reference_vector_should_be_what_the_client_reads(self):
        with open(os.path.join(REPO, "protocol", "PROTOCOL.md"), encoding="utf-8") as f:
            text = f.read()
        at = text.index("A test vector: the reference to frame 2 of instance 1")
        block = text[at:].split("```")[1]
        vector = bytes.fromhex("".join(row.split("   ")[0] for row in block.strip().splitlines()))
        self.assertEqual(vector, reference(1, 2, 4, 4096, time=1.0))
        with self.assertRaisesRegex(ProtocolError, r"reference \(flags bit 3\) to frame 2 of instance 1, not a frame"):
            decode_frame(vector)


class UnopenableRingTest(unittest.TestCase):
    def test_a_ring_that_cannot_be_opened_should_raise_and_count_its_frames_missed(self):
        name = f"/clothd-py-test-{os.getpid()}-absent"
        self.assertFalse(os.path.exists("/dev/shm" + name))
        listener = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(listener.close)

        def serve() -> None:  # hello lists "shm"; subscribe names a ring that is not there
            conn, _ = listener.accept()
            with conn, conn.makefile("rb") as lines:
                for line in lines:
                    req = json.loads(line)
                    if req["cmd"] == "hello":
                        conn.sendall(b'{"id":%d,"ok":true,"features":["shm"]}\n' % req["id"])
                    elif req["cmd"] == "subscribe":
                        conn.sendall(b'{"id":%d,"ok":true,"all":true,"shm":{"name":"%s","size":1048576}}\n'
                                     % (req["id"], name.encode()) + reference(1, 0, 4, 0))
                    else:
                        conn.sendall(b'{"id":%d,"ok":true,"pong":true}\n' % req["id"])

        threading.Thread(target=serve, daemon=True).start()
        c = Client(port=listener.getsockname()[1], timeout=5).connect()
        self.addCleanup(c.close)
        with self.assertRaises(ShmUnavailable) as caught:
            c.subscribe(shm=True)
        e = caught.exception
        self.assertIsInstance(e, ClothdError)
        self.assertEqual((e.code, e.path), ("shm_unavailable", "/dev/shm" + name))
        self.assertIsInstance(e.__cause__, FileNotFoundError)
        self.assertRegex(e.message, r"cannot open the server's ring .* as clothd's user")
        self.assertIsNone(c.shm)
        c.ping()  # the connection goes on; the reference came before the pong
        self.assertEqual(c.frames_missed, 1)
        self.assertEqual(c.poll_frames(), [])


if __name__ == "__main__":
    unittest.main()
