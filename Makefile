# clothd — build, run, test, bench.
#
#   make run     install missing Debian packages, build, start clothd on 127.0.0.1:7878
#   make test    install missing Debian packages, build, run every test
#   make bench   install missing packages (Bullet too), build, run the benchmarks
#   make         build build/clothd only (packages must be present)

CC      := gcc
CXX     := g++
BUILD   := build
PKGS    := libuv libcjson ck

# Debian packages each goal needs; `deps` installs whichever are missing.
DEB_BUILD := gcc make pkg-config libuv1-dev libcjson-dev libck-dev
DEB_TEST  := $(DEB_BUILD) libcriterion-dev python3 valgrind
DEB_BENCH := $(DEB_BUILD) g++ libbullet-dev

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS  ?= -O2 -g -fno-math-errno
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP
LDLIBS  = $(PKG_LIBS) -lpthread -lm

SOLVER_SRC   := $(wildcard solver/*.c)
PROTOCOL_SRC := $(wildcard protocol/*.c)
SERVER_SRC   := $(filter-out server/main.c,$(wildcard server/*.c))
TEST_SRC     := $(wildcard tests/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
SOLVER_OBJ   := $(call obj,$(SOLVER_SRC))
PROTOCOL_OBJ := $(call obj,$(PROTOCOL_SRC))
SERVER_OBJ   := $(call obj,$(SERVER_SRC))
TEST_OBJ     := $(call obj,$(TEST_SRC))
CORE_OBJ     := $(SOLVER_OBJ) $(PROTOCOL_OBJ) $(SERVER_OBJ)

.PHONY: all run test check bench deps deps-test deps-bench clean e2e unit

# Each client folder may bring a fragment, clients/NAME/client.mk, that
# defines its own targets, appends its test target to CLIENT_TESTS (run by
# `make test` against build/clothd) and its Debian packages to DEB_TEST.
CLIENT_TESTS :=
.DEFAULT_GOAL := all
include $(wildcard clients/*/client.mk)

all: $(BUILD)/clothd

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/clothd: $(call obj,server/main.c) $(CORE_OBJ)
	$(CC) $^ -o $@ $(LDLIBS)

$(BUILD)/unit_tests: $(TEST_OBJ) $(CORE_OBJ)
	$(CC) $^ -o $@ $(LDLIBS) -lcriterion

# "No allocation inside a step", counted by malloc and its kin interposed
# in this executable (tests/alloc/count_alloc.c); never with a sanitizer.
ALLOC_TEST_SRC := $(wildcard tests/alloc/*.c)
$(BUILD)/alloc_tests: $(call obj,$(ALLOC_TEST_SRC)) $(SOLVER_OBJ) $(call obj,server/pool.c)
	$(CC) $^ -o $@ $(LDLIBS) -lcriterion

# The same unit tests built with AddressSanitizer and UBSan.
SAN       := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -O1 -g -fno-math-errno $(SAN) $(PKG_CFLAGS) -MMD -MP
san_obj = $(patsubst %.c,$(BUILD)/san/%.o,$(1))

$(BUILD)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) -c $< -o $@

$(BUILD)/unit_tests_san: $(call san_obj,$(TEST_SRC) $(SOLVER_SRC) $(PROTOCOL_SRC) $(SERVER_SRC))
	$(CC) $(SAN) $^ -o $@ $(LDLIBS) -lcriterion

# ---- the README's two commands --------------------------------------------

run: deps
	@$(MAKE) --no-print-directory all
	./$(BUILD)/clothd

test: deps-test
	@$(MAKE) --no-print-directory check

# e2e first (Python against the real server, leaks checked there by
# valgrind), the clients' tests, the no-allocation check of the step, then
# the unit tests under ASan/UBSan (leak detection off:
# Criterion's own runner keeps blocks until exit, and a suppression for it
# would hide leaks in test bodies too), then the plain unit tests, whose
# synthesis line closes the run.
check: $(BUILD)/clothd $(BUILD)/unit_tests $(BUILD)/unit_tests_san $(BUILD)/alloc_tests
	python3 tests/e2e/run_all.py --clothd $(BUILD)/clothd
	@for t in $(CLIENT_TESTS); do $(MAKE) --no-print-directory $$t || exit 1; done
	./$(BUILD)/alloc_tests --jobs 2
	ASAN_OPTIONS=detect_leaks=0 ./$(BUILD)/unit_tests_san --jobs 2
	./$(BUILD)/unit_tests --jobs 2

e2e: $(BUILD)/clothd
	python3 tests/e2e/run_all.py --clothd $(BUILD)/clothd

unit: $(BUILD)/unit_tests
	./$(BUILD)/unit_tests

# ---- bench ---------------------------------------------------------------

BENCH_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(PKG_CFLAGS)
# Bullet's headers as system headers: their own warnings are not ours.
BULLET_CFLAGS = $(patsubst -I%,-isystem %,$(shell pkg-config --cflags bullet 2>/dev/null))
BULLET_LIBS   = $(shell pkg-config --libs bullet 2>/dev/null)

# The bench drives the solver and the worker pool directly (no sockets), so it
# links only those: it builds even while the protocol or the server is broken.
$(BUILD)/bench_clothd: bench/bench_clothd.c $(SOLVER_OBJ) $(call obj,server/pool.c)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bench_bullet: bench/bench_bullet.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra -Werror $(BULLET_CFLAGS) $< -o $@ $(BULLET_LIBS)

bench: deps-bench
	@$(MAKE) --no-print-directory $(BUILD)/bench_clothd $(BUILD)/bench_bullet
	python3 bench/run.py --build $(BUILD)

# ---- set-up: install what is missing, nothing else --------------------------

define install_missing
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "clothd: installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_BUILD))
deps-test:
	$(call install_missing,$(DEB_TEST))
deps-bench:
	$(call install_missing,$(DEB_BENCH) python3)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/san -name '*.d' 2>/dev/null)
