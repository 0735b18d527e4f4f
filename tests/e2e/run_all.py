#!/usr/bin/env python3
"""End-to-end suite: the Python client against the real clothd binary.

    python3 tests/e2e/run_all.py --clothd build/clothd [-k PATTERN] [-q] [--sanitizer asan|tsan]

Discovers tests/e2e/test_*.py (unittest), runs them and ends with one line:

    e2e: 37 passed, 0 failed            (", N skipped" when some were)

Exits 1 when any test failed or errored.

--sanitizer names the sanitizer the binary was built with (make e2e-asan,
make e2e-tsan): the modules that wrap the server in valgrind are left out
(valgrind cannot run a sanitized binary), the server's stop timeout is
raised for TSan's slower exit, and CLOTHD_SANITIZER is set for the tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


class _CountingResult(unittest.TextTestResult):
    """Counts successes directly (a failing setUpClass adds an error that
    is not a test run, so testsRun minus the rest would be wrong)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


# Modules that cannot run against a sanitizer build, and why.
SANITIZER_EXCLUDED = {
    "test_memcheck": "valgrind cannot run a sanitizer build (the sanitizer checks the same memory)",
}


def _without_modules(suite: unittest.TestSuite, modules: dict) -> tuple:
    """The suite without the tests of `modules`; also the names left out."""
    kept = unittest.TestSuite()
    left_out = set()
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            sub, gone = _without_modules(item, modules)
            left_out |= gone
            if sub.countTestCases():
                kept.addTest(sub)
            continue
        module = type(item).__module__
        if module in modules:
            left_out.add(module)
        else:
            kept.addTest(item)
    return kept, left_out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clothd", default=os.path.join(REPO, "build", "clothd"),
                        help="path of the clothd binary (default build/clothd)")
    parser.add_argument("-k", dest="patterns", action="append", default=None,
                        help="only run tests whose name contains this substring (repeatable)")
    parser.add_argument("-q", "--quiet", action="store_true", help="one dot per test instead of names")
    parser.add_argument("--sanitizer", choices=("asan", "tsan"), default=None,
                        help="the binary is a sanitizer build: leave out the valgrind modules")
    args = parser.parse_args(argv)

    binary = os.path.abspath(args.clothd)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"e2e: {args.clothd} is not an executable file (run `make build/clothd` first)", file=sys.stderr)
        return 2
    os.environ["CLOTHD_BIN"] = binary
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(REPO, "clients", "python"))

    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = [f"*{p}*" for p in args.patterns]
    suite = loader.discover(start_dir=HERE, pattern="test_*.py", top_level_dir=HERE)
    if args.sanitizer:
        os.environ["CLOTHD_SANITIZER"] = args.sanitizer
        import server  # noqa: E402  (after sys.path is set)
        server.STOP_TIMEOUT = 30.0
        suite, left_out = _without_modules(suite, SANITIZER_EXCLUDED)
        for name in sorted(left_out):
            print(f"e2e: {name} left out under {args.sanitizer}: {SANITIZER_EXCLUDED[name]}", file=sys.stderr)

    started = time.monotonic()
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=1 if args.quiet else 2,
                                     resultclass=_CountingResult)
    result = runner.run(suite)
    elapsed = time.monotonic() - started

    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.passed
    line = f"e2e: {passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    sys.stdout.flush()
    print(f"(e2e took {elapsed:.1f}s)", file=sys.stderr)
    sys.stderr.flush()
    print(line, flush=True)
    return 1 if failed or result.testsRun == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
