"""Generation-checked ids: a destroyed id never works again."""

import unittest

from server import assert_error, fresh_server, send_line


class StaleIdTest(unittest.TestCase):
    def test_destroyed_instance_id_should_stay_not_found(self):
        srv = fresh_server(self)
        with srv.client() as c:
            first = c.create_cloth(width=4, height=4)
            self.assertEqual(first, 1)
            c.destroy(1)
            assert_error(self, send_line(c, '{"cmd":"get","instance":1}'), "not_found", "instance")
            again = c.create_cloth(width=4, height=4)
            self.assertNotEqual(again, 1)
            self.assertEqual(c.get(again).instance, again)
            for line in ['{"cmd":"get","instance":1}', '{"cmd":"destroy","instance":1}',
                         '{"cmd":"step","instances":[1]}', '{"cmd":"pin","instance":1,"particle":0}',
                         '{"cmd":"enable","instance":1,"enabled":true}',
                         '{"cmd":"addCollider","instance":1,"type":"sphere"}']:
                with self.subTest(line=line):
                    assert_error(self, send_line(c, line), "not_found", None)
                    self.assertTrue(send_line(c, line)["error"]["message"].startswith("instance"))
            self.assertEqual([i["instance"] for i in c.status()["instances"]], [again])

    def test_removed_collider_id_should_stay_not_found(self):
        srv = fresh_server(self)
        with srv.client() as c:
            cid = c.create_cloth(width=3, height=3)
            col = c.add_collider(cid, "sphere", position=[0, -5, 0])
            c.remove_collider(cid, col)
            col2 = c.add_collider(cid, "sphere", position=[0, -5, 0])
            self.assertNotEqual(col, col2)
            for line in [f'{{"cmd":"removeCollider","instance":{cid},"collider":{col}}}',
                         f'{{"cmd":"moveCollider","instance":{cid},"collider":{col},"position":[0,0,0]}}']:
                with self.subTest(line=line):
                    assert_error(self, send_line(c, line), "not_found", "collider")
            c.move_collider(cid, col2, position=[0, -6, 0])


if __name__ == "__main__":
    unittest.main()
