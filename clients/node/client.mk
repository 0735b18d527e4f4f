# clients/node/client.mk — included by the top Makefile.
# `make node-test` runs the Node client's tests (node:test, no npm packages)
# against the real server; `make test` runs it through CLIENT_TESTS.

.PHONY: node-test
CLIENT_TESTS += node-test
# Debian's nodejs only where no node is on PATH already.
DEB_TEST += $(if $(shell command -v node 2>/dev/null),,nodejs)

node-test: $(BUILD)/clothd
	CLOTHD_BIN=$(abspath $(BUILD)/clothd) node --test --test-reporter=spec clients/node/test/
