"""The Python client's errors and warnings against the real clothd (issue
12): one exception class per stable code, all ClothdError subclasses; a
reply's "warnings" as ClothdWarning through warnings.warn; strict=True
asks the server to refuse instead; a refused connection names the
address."""

import socket
import unittest
import warnings

import clothd
from clothd import (ERROR_CLASSES, ERROR_CODES, Client, ClothdError, ClothdWarning, InvalidArgument,
                    LimitExceeded, NotFound, ParseError, UnknownCommand)
from server import ServerTestCase


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ErrorClassesTest(ServerTestCase):
    def test_every_code_of_the_server_has_its_class(self):
        # The server's own list: stats counts errors by every code it has.
        self.assertEqual(list(self.c.stats()["errors"]), list(ERROR_CODES))
        for code, cls in ERROR_CLASSES.items():
            self.assertTrue(issubclass(cls, ClothdError), cls)
            self.assertEqual(cls.code_name, code)
            self.assertIs(getattr(clothd, cls.__name__), cls, "exported by name")
        self.assertEqual(len(set(ERROR_CLASSES.values())), len(ERROR_CODES))

    def test_each_error_reply_raises_its_codes_class(self):
        with self.assertRaises(NotFound) as cm:
            self.c.get(987654)
        self.assertEqual((cm.exception.code, cm.exception.message),
                         ("not_found", "instance: no instance 987654"))
        with self.assertRaises(InvalidArgument) as cm:
            self.c.request("create", width=1)
        self.assertEqual(cm.exception.message, "width: must be an integer >= 2")
        with self.assertRaises(UnknownCommand):
            self.c.request("fly")
        with self.assertRaises(LimitExceeded):
            self.c.request("create", width=2000, height=2000)
        # Old code that catches ClothdError keeps working.
        with self.assertRaises(ClothdError):
            self.c.get(987654)

    def test_an_unknown_code_raises_clothd_error_itself(self):
        err = clothd._error("newer_code", "from a newer server")
        self.assertIs(type(err), ClothdError)
        self.assertIsInstance(clothd._error("parse_error", "x"), ParseError)


class ClientWarningsTest(ServerTestCase):
    def test_a_misspelt_option_warns_at_the_callers_line(self):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cid = self.c.create_cloth(width=3, height=3, stretch_complience=0.01)
        self.assertEqual([str(w.message) for w in caught],
                         ['clothd: unknown member "stretchComplience" (did you mean '
                          '"stretchCompliance"?)'])
        self.assertIs(caught[0].category, ClothdWarning)
        self.assertEqual(caught[0].filename, __file__, "attributed to the caller's line")
        self.assertEqual(self.c.last_warnings,
                         ['unknown member "stretchComplience" (did you mean "stretchCompliance"?)'])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.c.get(cid)
        self.assertEqual(caught, [])
        self.assertEqual(self.c.last_warnings, [])
        # As errors, by the warnings filter.
        with warnings.catch_warnings():
            warnings.simplefilter("error", ClothdWarning)
            with self.assertRaises(ClothdWarning):
                self.c.request("status", verbose=True)

    def test_strict_makes_the_server_refuse(self):
        c = self.client(strict=True)
        with self.assertRaises(InvalidArgument) as cm:
            c.create_cloth(width=3, height=3, widht=4)
        self.assertEqual(cm.exception.message, 'widht: unknown member (did you mean "width"?)')
        self.assertIs(c.hello()["strict"], True)
        c.reconnect()
        self.assertIs(c.hello()["strict"], True, "asked again on the new connection")
        self.assertIs(c.hello(strict=False)["strict"], False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c.request("ping", x=1)
        self.assertEqual(len(caught), 1)


class ConnectErrorTest(unittest.TestCase):
    def test_a_refused_connection_names_the_address(self):
        port = free_port()
        with self.assertRaises(ConnectionRefusedError) as cm:
            Client("127.0.0.1", port).connect()
        self.assertIn(f"cannot connect to clothd at 127.0.0.1:{port}", str(cm.exception))
        self.assertIsInstance(cm.exception, OSError, "still an OSError for old code")


if __name__ == "__main__":
    unittest.main()
