# clients/python/client.mk — included by the top Makefile.
# `make python-test` checks the Python package the way a user gets it: an
# offline `pip install` of clients/python into a fresh venv (console script
# clothctl included) against the real server, then the client's numpy
# tests with an interpreter that has numpy. (The client's other tests are
# the e2e suite, tests/e2e/, which `make test` runs first.)

.PHONY: python-test
CLIENT_TESTS += python-test
# venv + ensurepip for Debian's python3; numpy for Frame.array's tests;
# mypy to check that the installed package's hints are read (py.typed).
DEB_TEST += python3-venv python3-numpy mypy

python-test: $(BUILD)/clothd
	python3 clients/python/tests/check_package.py --clothd $(BUILD)/clothd
