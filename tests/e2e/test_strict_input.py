"""Strict input (issue 9, item 9): a request line with invalid UTF-8, a raw
control byte, or a \\u0000 escape inside a string gets parse_error with a
message that says what and at which byte. Nothing of the invalid line is
echoed (the reply has no "id"), the reply is one valid JSON line, and the
connection goes on."""

import json
import unittest

from server import ServerTestCase


class StrictInputTest(ServerTestCase):
    def exchange_raw(self, line: bytes) -> dict:
        """Sends one raw line; returns the reply after checking that it is
        one line of valid UTF-8 JSON."""
        self.c.send_raw(line + b"\n")
        reply = self.c.read_reply()
        raw = self.c.last_line
        raw.decode("utf-8")  # strict: raises on invalid UTF-8
        self.assertNotIn(b"\n", raw)
        self.assertEqual(json.loads(raw), reply)
        return reply

    def assert_parse_error(self, line: bytes, message: str) -> None:
        reply = self.exchange_raw(line)
        self.assertIs(reply["ok"], False, reply)
        self.assertEqual(reply["error"]["code"], "parse_error", reply)
        self.assertEqual(reply["error"]["message"], message)
        self.assertNotIn("id", reply, "nothing of an invalid line is echoed")
        # The connection goes on.
        self.assertEqual(self.exchange_raw(b'{"id":"after","cmd":"ping"}'),
                         {"id": "after", "ok": True, "pong": True})

    def test_an_id_with_invalid_utf8_is_refused_not_echoed(self):
        self.assert_parse_error(b'{"id":"\xff\xfe","cmd":"status"}', "invalid UTF-8 at byte 7")
        self.assert_parse_error(b'{"id":"\xed\xa0\x80","cmd":"status"}', "invalid UTF-8 at byte 7")
        self.assert_parse_error(b'{"id":7,"cmd":"create","type":"\xc0\xaf"}', "invalid UTF-8 at byte 31")

    def test_raw_control_bytes_are_refused(self):
        self.assert_parse_error(b'{"id":"a\x01b","cmd":"status"}',
                                "raw control byte 0x01 inside a string at byte 8 (escape it)")
        self.assert_parse_error(b'{"id":"a\tb","cmd":"status"}',
                                "raw control byte 0x09 inside a string at byte 8 (escape it)")
        self.assert_parse_error(b'{"id":1,\x1b"cmd":"status"}', "raw control byte 0x1b at byte 8")
        self.assert_parse_error(b'{"id":"x\x00y","cmd":"status"}',
                                "raw control byte 0x00 inside a string at byte 8 (escape it)")

    def test_an_escaped_nul_is_refused_but_an_escaped_backslash_is_not(self):
        self.assert_parse_error(b'{"id":"a\\u0000b","cmd":"status"}',
                                "\\u0000 (NUL) inside a string at byte 8")
        self.assert_parse_error(b'{"id":1,"cmd":"transform","instance":1,"name":"h\\u0000x"}',
                                "\\u0000 (NUL) inside a string at byte 48")
        reply = self.exchange_raw(b'{"id":"a\\\\u0000b","cmd":"ping"}')
        self.assertEqual(reply, {"id": "a\\u0000b", "ok": True, "pong": True})

    def test_tabs_and_returns_between_tokens_and_utf8_strings_still_work(self):
        reply = self.exchange_raw('\t{"id":"é€😀",\t"cmd":"ping"}\r'.encode())
        self.assertEqual(reply, {"id": "é€😀", "ok": True, "pong": True})


if __name__ == "__main__":
    unittest.main()
