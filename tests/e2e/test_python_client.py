"""The Python client's own behaviour against a live server: keyword
arguments, Subscriber (iterator and background thread), and reconnecting
after the connection drops or the server restarts."""

import socket
import threading
import time
import unittest

from server import Server, ServerTestCase, fresh_server

from clothd import Client, ClothdError, ConnectionClosed, Subscriber


class CuttableProxy:
    """A TCP relay in front of clothd whose connections can be cut while it
    keeps listening, to play a network drop."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.pairs = []
        self.lock = threading.Lock()
        self.closed = False
        self.mute = False  # drop what the server sends (replies lost in flight)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                a, _ = self.listener.accept()
            except OSError:
                return
            b = socket.create_connection(self.target)
            with self.lock:
                self.pairs.append((a, b))
            threading.Thread(target=self._pipe, args=(a, b, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(b, a, True), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, from_server: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not (from_server and self.mute):
                    dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Closes every relayed connection (both sides)."""
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for a, b in pairs:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
        time.sleep(0.05)

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.listener.close()


class KeywordsTest(ServerTestCase):
    def test_create_should_take_the_protocol_fields_in_snake_case(self):
        cid = self.c.create_cloth(width=3, height=4, spacing=0.2, mass=2, stiffness=1, bend_stiffness=0.25,
                                  damping=0, origin=[1, 2, 3], solver_iterations=8, right=[0, 0, 1],
                                  down=[0, -1, 0], gravity=[0, 0, 0])
        s = self.c.get(cid)
        self.assertEqual((s.width, s.height, s.count), (3, 4, 12))
        self.assertEqual(s.positions[1], (1, 2, 3.20000005))
        self.c.pin(cid, particle=0)
        self.c.pin(cid, [1, 2], positions=[[1, 2, 3.2], [1, 2, 3.4]])
        self.assertEqual(self.c.get(cid).pinned, [0, 1, 2])
        self.assertEqual(self.c.unpin(cid, particle=2), 1)
        self.assertEqual(self.c.step(0.01, instance=cid)["stepped"], 1)
        with self.assertRaises(ClothdError) as cm:
            self.c.create_cloth(width=1)
        self.assertEqual(cm.exception.code, "invalid_argument")
        self.assertEqual(cm.exception.message, "width: must be an integer >= 2")
        self.c.destroy(cid)

    def test_soft_bodies_should_have_topology_and_quantized_frames(self):
        ball = self.c.create_softbody(shape="ball", radius=0.3, resolution=6, center=[0, 1, 0])
        s = self.c.get(ball)
        self.assertEqual((s.type, s.height), ("softbody", 1))
        self.assertEqual(s.width, s.count)
        tris = self.c.topology(ball)["triangles"]
        self.assertEqual(len(tris) % 3, 0)
        self.assertTrue(all(0 <= i < s.count for i in tris))
        self.c.set(ball, volume_stiffness=1.0, sleep_threshold=0)
        self.c.subscribe(ball, quantize=True)
        f = self.c.next_frame(timeout=5)
        self.assertTrue(f.quantized)
        self.assertEqual(f.count, s.count)
        for k in range(3):
            span = f.bbox_max[k] - f.bbox_min[k]
            for got, want in zip(f.flat[k::3], s.flat[k::3]):
                self.assertLessEqual(abs(got - want), span / 65535 / 2 + 1e-6)
        self.c.unsubscribe()
        self.c.destroy(ball)

    def test_subscriptions_should_be_tracked_with_their_options(self):
        cid = self.c.create_cloth(width=3, height=3)
        self.c.subscribe(cid, quantize=True, every=4)
        self.c.subscribe()
        self.assertEqual(self.c.subscriptions, {cid: {"quantize": True, "every": 4}, None: {}})
        self.c.unsubscribe(cid)
        self.assertEqual(self.c.subscriptions, {None: {}})
        self.c.unsubscribe()
        self.assertEqual(self.c.subscriptions, {})
        self.c.destroy(cid)


class StatsTest(ServerTestCase):
    def test_stats_should_count_what_this_client_did(self):
        before = self.c.stats()
        cid = self.c.create_cloth(width=3, height=3)
        for _ in range(4):
            self.c.step(instance=cid)
        after = self.c.stats()
        self.assertEqual(after["steps"]["total"] - before["steps"]["total"], 4)
        self.assertEqual(after["requests"]["step"] - before["requests"]["step"], 4)
        self.assertEqual(after["requests"]["stats"] - before["requests"]["stats"], 1)
        self.assertEqual(after["version"], self.server.version)
        self.assertIsInstance(after["instances"]["awake"], int)
        self.c.destroy(cid)


class SubscriberTest(ServerTestCase):
    def test_background_subscriber_should_keep_the_newest_frame(self):
        cid = self.c.create_cloth(width=10, height=10)
        seen = []
        with Subscriber(self.server.host, self.server.port, cid, quantize=True) as sub:
            sub.start(callback=lambda f: seen.append(f.frame))
            self.assertEqual(sub.wait_for(cid, 0).frame, 0)
            for _ in range(12):
                self.c.step(1 / 60, instances=[cid])
            f = sub.wait_for(cid, 12, timeout=5)
            self.assertEqual(f.frame, 12)
            self.assertTrue(f.quantized)
            self.assertIs(sub.latest(cid), f)
            self.assertEqual(seen[-1], 12)
            self.assertIsNone(sub.error)
        self.c.destroy(cid)

    def test_iterating_a_subscriber_should_yield_every_kth_frame(self):
        cid = self.c.create_cloth(width=5, height=5)
        for _ in range(6):
            self.c.step(1 / 60, instances=[cid])
        sub = Subscriber(self.server.host, self.server.port, [cid], every=4)
        self.addCleanup(sub.close)
        it = iter(sub)
        self.assertEqual(next(it).frame, 6)  # the current frame first
        for _ in range(10):
            self.c.step(1 / 60, instances=[cid])
        self.assertEqual([next(it).frame, next(it).frame], [8, 12])
        sub.close()
        self.c.destroy(cid)

    def test_frames_should_queue_while_a_client_commands(self):
        cid = self.c.create_cloth(width=4, height=4)
        self.c.subscribe(cid, every=2)
        for _ in range(6):
            self.c.step(1 / 60, instances=[cid])
        self.c.status()
        self.assertEqual([f.frame for f in self.c.poll_frames()], [0, 2, 4, 6])
        self.c.unsubscribe()
        self.c.destroy(cid)


class ReconnectTest(unittest.TestCase):
    def setUp(self):
        self.srv = fresh_server(self)
        self.proxy = CuttableProxy(self.srv.host, self.srv.port)
        self.addCleanup(self.proxy.close)
        self.admin = self.srv.client()
        self.addCleanup(self.admin.close)

    def test_a_request_after_a_drop_should_go_through_on_a_new_connection(self):
        c = Client("127.0.0.1", self.proxy.port, 5.0, reconnect=True).connect()
        self.addCleanup(c.close)
        cid = c.create_cloth(width=4, height=4)
        c.subscribe(cid, quantize=True)
        c.next_frame(timeout=5)
        self.proxy.cut()
        self.assertEqual(c.status()["instances"][0]["instance"], cid)  # transparently
        self.assertEqual(c.reconnects, 1)
        f = c.next_frame(timeout=5)  # the renewed subscription's current frame
        self.assertTrue(f.quantized)
        self.admin.step(1 / 60)
        self.assertEqual(c.next_frame(timeout=5).frame, 1)

    def test_without_reconnect_a_drop_should_raise(self):
        c = Client("127.0.0.1", self.proxy.port, 5.0).connect()
        self.addCleanup(c.close)
        c.status()
        self.proxy.cut()
        with self.assertRaises(ConnectionError):
            c.status()

    def test_a_reply_lost_in_flight_should_raise_reconnected_and_not_resend(self):
        c = Client("127.0.0.1", self.proxy.port, 5.0, reconnect=True).connect()
        self.addCleanup(c.close)
        c.status()
        self.proxy.mute = True  # the server's reply never arrives...

        def drop() -> None:  # ...and then the connection drops; the next one is heard (its hello)
            self.proxy.mute = False
            self.proxy.cut()

        timer = threading.Timer(0.3, drop)
        timer.start()
        self.addCleanup(timer.cancel)
        with self.assertRaises(ConnectionClosed) as cm:
            c.create_cloth(width=3, height=3)
        self.assertTrue(cm.exception.reconnected)
        # The create ran once on the server, and was not sent again.
        self.assertEqual(len(c.status()["instances"]), 1)
        self.assertEqual(c.reconnects, 1)

    def test_a_subscriber_should_survive_a_drop(self):
        cid = self.admin.create_cloth(width=6, height=6)
        with Subscriber("127.0.0.1", self.proxy.port, cid, every=2) as sub:
            sub.start()
            sub.wait_for(cid, 0)
            self.proxy.cut()
            for _ in range(4):
                self.admin.step(1 / 60)
            self.assertEqual(sub.wait_for(cid, 4, timeout=10).frame, 4)
            self.assertGreaterEqual(sub.client.reconnects, 1)
            self.assertIsNone(sub.error)

    def test_a_restarted_server_should_report_lost_subscriptions(self):
        port = self.srv.port
        c = Client("127.0.0.1", port, 5.0, reconnect=True, reconnect_timeout=15).connect()
        self.addCleanup(c.close)
        cid = c.create_cloth(width=4, height=4)
        c.subscribe(cid)
        c.subscribe()
        c.next_frame(timeout=5)
        self.srv.stop()
        srv2 = Server("--port", str(port)).start()
        self.addCleanup(srv2.kill)
        self.assertEqual(c.status()["instances"], [])  # a new, empty server
        self.assertEqual(c.subscriptions, {None: {}})
        lost = [e for e in c.events if e.get("event") == "resubscribe_failed"]
        self.assertEqual(len(lost), 1)
        self.assertEqual(lost[0]["instance"], cid)
        self.assertEqual(lost[0]["error"]["code"], "not_found")
        srv2.stop()


if __name__ == "__main__":
    unittest.main()
