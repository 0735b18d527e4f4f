"""status: the JSON summary and the seed's console text."""

import os
import unittest
from unittest import mock

from server import fresh_server


def line_of(text, instance):
    prefix = f"  Cloth {instance}: "
    lines = [ln for ln in text.split("\n") if ln.startswith(prefix)]
    assert len(lines) == 1, f"expected one line starting {prefix!r} in {text!r}"
    return lines[0]


class StatusTest(unittest.TestCase):
    def test_status_should_list_instances_in_the_seed_format(self):
        srv = fresh_server(self, workers=2)
        with srv.client() as c:
            empty = c.status()
            self.assertTrue(empty["text"].startswith("=== Cloth Simulation ===\n"), empty["text"])
            self.assertIn("Instances: 0", empty["text"].split("\n"))
            self.assertEqual(empty["instances"], [])

            a = c.create_cloth()
            b = c.create_cloth()
            self.assertEqual((a, b), (1, 2))
            c.add_collider(a, "sphere", position=[0, -3, 0])
            s = c.status()
            text = s["text"]
            lines = text.split("\n")
            self.assertTrue(text.startswith("=== Cloth Simulation ===\n"), text)
            self.assertIn("Instances: 2", lines)
            self.assertIn("  Cloth 1: 100 particles, 502 constraints, 1 colliders", lines)
            self.assertIn("  Cloth 2: 100 particles, 502 constraints, 0 colliders", lines)
            self.assertTrue(text.endswith("\n"), text)
            self.assertEqual(s["workers"], 2)
            self.assertEqual(s["version"], "0.1.0")
            self.assertEqual(s["globalWind"], [0, 0, 0])
            keys = ("instance", "type", "particles", "constraints", "colliders", "enabled", "frame")
            self.assertEqual([{k: i.get(k) for k in keys} for i in s["instances"]], [
                {"instance": 1, "type": "cloth", "particles": 100, "constraints": 502, "colliders": 1,
                 "enabled": True, "frame": 0},
                {"instance": 2, "type": "cloth", "particles": 100, "constraints": 502, "colliders": 0,
                 "enabled": True, "frame": 0},
            ])

            self.assertIs(c.enable(b, False), False)
            reply = c.step()
            self.assertEqual(reply["stepped"], 1, "a disabled instance is not stepped")
            self.assertEqual(reply["unstable"], [])
            s = c.status()
            self.assertEqual(line_of(s["text"], 2), "  Cloth 2: 100 particles, 502 constraints, 0 colliders [DISABLED]")
            self.assertEqual(line_of(s["text"], 1), "  Cloth 1: 100 particles, 502 constraints, 1 colliders")
            by_id = {i["instance"]: i for i in s["instances"]}
            self.assertEqual((by_id[1]["enabled"], by_id[1]["frame"]), (True, 1))
            self.assertEqual((by_id[2]["enabled"], by_id[2]["frame"]), (False, 0))
            self.assertEqual(c.get(b).frame, 0)

            self.assertIs(c.enable(b, True), True)
            self.assertNotIn("[DISABLED]", c.status()["text"])
            self.assertEqual(c.step()["stepped"], 2)


    def test_status_should_report_the_widest_simd_path_the_cpu_allows_or_the_forced_one(self):
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
        avx512 = all(f in flags for f in ("avx512f", "avx512vl", "avx512bw", "avx512dq"))
        best = "avx512" if avx512 else "avx2" if "avx2" in flags else "scalar"
        srv = fresh_server(self, workers=2)
        with srv.client() as c:
            self.assertEqual(c.status()["simd"], best)
        runs = {"scalar": True, "avx2": "avx2" in flags, "avx512": avx512}
        for path in (p for p, ok in runs.items() if ok):
            with mock.patch.dict(os.environ, {"CLOTHD_SIMD": path}):
                forced = fresh_server(self, workers=2)
            with forced.client() as c:
                self.assertEqual(c.status()["simd"], path)
        # A path this CPU (or any) lacks is refused: the widest one runs, and stderr says so.
        with mock.patch.dict(os.environ, {"CLOTHD_SIMD": "avx1024"}):
            refused = fresh_server(self, workers=2)
        with refused.client() as c:
            self.assertEqual(c.status()["simd"], best)
        self.assertIn(f"CLOTHD_SIMD=avx1024: no such path on this CPU or build; using {best}",
                      refused.stderr())


if __name__ == "__main__":
    unittest.main()
