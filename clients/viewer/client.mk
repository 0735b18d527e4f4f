# clients/viewer/client.mk: the browser viewport (included by the top Makefile).
#
#   make viewer [CLOTHD=host:port] [VIEWER_PORT=8080] [VIEWER_FLAGS='--token-file PATH …']
#                                                       relay + page against a running clothd
#   make viewer-test                                    clothd + viewer + headless Chromium

VIEWER_DIR  := clients/viewer
CLOTHD      ?= 127.0.0.1:7878
VIEWER_PORT ?= 8080
VIEWER_FLAGS ?=
# npm writes this file at the end of every install: it is missing or older
# than package-lock.json exactly when node_modules needs `npm ci`.
VIEWER_STAMP := $(VIEWER_DIR)/node_modules/.package-lock.json

# Debian's Chromium for the test; Node.js and npm only where none is on PATH.
VIEWER_DEB := chromium
ifeq ($(shell command -v node 2>/dev/null),)
VIEWER_DEB += nodejs
endif
ifeq ($(shell command -v npm 2>/dev/null),)
VIEWER_DEB += npm
endif
DEB_TEST += $(VIEWER_DEB)
CLIENT_TESTS += viewer-test

.PHONY: viewer viewer-test viewer-deps

$(VIEWER_STAMP): $(VIEWER_DIR)/package-lock.json
	cd $(VIEWER_DIR) && npm ci --no-audit --no-fund
	@touch $@

viewer-deps:
	$(call install_missing,$(VIEWER_DEB))

viewer: $(VIEWER_STAMP)
	node $(VIEWER_DIR)/server.js --clothd $(CLOTHD) --port $(VIEWER_PORT) $(VIEWER_FLAGS)

# Screenshots go to $(BUILD)/artifacts/.
viewer-test: viewer-deps $(BUILD)/clothd $(VIEWER_STAMP)
	CLOTHD_BIN=$(abspath $(BUILD)/clothd) VIEWER_ARTIFACTS=$(abspath $(BUILD)/artifacts) node --test --test-reporter=spec \
	  $(VIEWER_DIR)/test/frame.test.mjs $(VIEWER_DIR)/test/viewer.test.mjs $(VIEWER_DIR)/test/security.test.mjs \
	  $(VIEWER_DIR)/test/auth.test.mjs $(VIEWER_DIR)/test/garment.test.mjs $(VIEWER_DIR)/test/channels.test.mjs \
	  $(VIEWER_DIR)/test/timeline.test.mjs $(VIEWER_DIR)/test/shapes.test.mjs \
	  $(VIEWER_DIR)/test/drape.test.mjs $(VIEWER_DIR)/test/controls.test.mjs $(VIEWER_DIR)/test/scenes.test.mjs \
	  $(VIEWER_DIR)/test/energy.test.mjs
