# clothd — build, run, test, bench.
#
#   make run     install missing Debian packages, build, start clothd on 127.0.0.1:7878
#   make test    install missing Debian packages, build, run every test
#   make bench   install missing packages (Bullet too), build, run the benchmarks
#   make         build build/clothd only (packages must be present)
#   make install PREFIX=/usr/local DESTDIR=   clothd, clothctl, man pages, the systemd unit
#                (and libclothd, its headers and clothd.pc once built); make uninstall

CC      := gcc
CXX     := g++
BUILD   := build
PKGS    := libuv libcjson ck

# Where `make install` puts things (DESTDIR is prepended to each).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
UNITDIR    ?= $(LIBDIR)/systemd/system
PYDIR      ?= $(DATADIR)/clothd/python

# Debian packages each goal needs; `deps` installs whichever are missing.
DEB_BUILD := gcc make pkg-config libuv1-dev libcjson-dev libck-dev
DEB_TEST  := $(DEB_BUILD) libcriterion-dev python3 valgrind
# The fuzz target (clang's libFuzzer) and the sanitizers' runtimes.
DEB_TEST  += clang-14 libclang-rt-14-dev libasan8 libubsan1 libtsan2
# The packaging checks: man pages (groff), the unit (systemd-analyze), the
# system calls clothd makes against the unit's filter (strace).
DEB_TEST  += groff-base systemd strace
# The Kubernetes manifests' check parses them (tests/e2e/test_kubernetes.py).
DEB_TEST  += python3-yaml
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

.PHONY: all run test check bench bench-frames deps deps-test deps-bench clean e2e unit

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
$(BUILD)/alloc_tests: $(call obj,$(ALLOC_TEST_SRC)) $(SOLVER_OBJ) $(PROTOCOL_OBJ) $(call obj,server/pool.c server/frames.c server/shm_ring.c)
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

# ---- sanitizer builds of the server, fuzzing, soak (issue 9) ---------------
# clothd-asan: the server from the same sources with ASan+UBSan (the san/
# objects above); clothd-tsan: with ThreadSanitizer. The e2e suite runs
# against each (`make e2e-asan`, `make e2e-tsan`); `make check` runs a short
# subset of each. ASan's leak check runs at exit: a leak makes the exit code
# non-zero, which fails the e2e harness's "exit 0 on SIGTERM".
$(BUILD)/clothd-asan: $(call san_obj,server/main.c $(SOLVER_SRC) $(PROTOCOL_SRC) $(SERVER_SRC))
	$(CC) $(SAN) $^ -o $@ $(LDLIBS)

TSAN       := -fsanitize=thread -fno-omit-frame-pointer
TSAN_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -O1 -g -fno-math-errno $(TSAN) $(PKG_CFLAGS) -MMD -MP
tsan_obj = $(patsubst %.c,$(BUILD)/tsan/%.o,$(1))

$(BUILD)/tsan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) -c $< -o $@

$(BUILD)/clothd-tsan: $(call tsan_obj,server/main.c $(SOLVER_SRC) $(PROTOCOL_SRC) $(SERVER_SRC))
	$(CC) $(TSAN) $^ -o $@ $(LDLIBS)

# The pool's hand-off under TSan, a plain program (Criterion's runner cannot
# start under TSan): tests/sanitizers/pool_handoff.c.
$(BUILD)/pool_handoff_tsan: $(call tsan_obj,tests/sanitizers/pool_handoff.c server/pool.c)
	$(CC) $(TSAN) $^ -o $@ $(LDLIBS)

# One large instance's step shared by 4 threads (solver/team.c).
$(BUILD)/team_handoff_tsan: $(call tsan_obj,tests/sanitizers/team_handoff.c $(SOLVER_SRC) server/pool.c)
	$(CC) $(TSAN) $^ -o $@ $(LDLIBS)

ASAN_RUN := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
TSAN_RUN := TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
# Which e2e cases race commands against steps, feed garbage, or are about
# concurrency: the short sanitizer runs of `make check`.
E2E_SAN_SHORT  := -k test_races -k test_ordering -k test_robustness -k test_strict_input -k test_errors \
                  -k test_lifecycle -k test_snapshots -k test_replay -k test_scenes -k test_unix_socket \
                  -k test_shm_frames
E2E_TSAN_SHORT := -k test_races -k test_ordering -k test_subscribe -k test_backpressure -k test_robustness \
                  -k test_determinism -k test_snapshots -k test_scenes -k test_shm_frames

# The unit tests under ASan with leak detection on. Criterion runs each test
# in a worker process whose leak report it ignores (it even calls the test
# "passing"), so every sanitizer report goes to a file (log_path) and any file
# fails the run. Criterion's runner keeps one block of its own until it exits:
# tests/sanitizers/criterion_lsan.supp suppresses exactly that (matched by
# criterion_run_all_tests in the full allocation stack, which a test body's
# stack never holds).
UNIT_SAN_LOGS = $(BUILD)/unit-san-logs
unit-san: $(BUILD)/unit_tests_san
	@rm -rf $(UNIT_SAN_LOGS) && mkdir -p $(UNIT_SAN_LOGS)
	ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:log_path=$(abspath $(UNIT_SAN_LOGS))/report \
	LSAN_OPTIONS=suppressions=$(abspath tests/sanitizers/criterion_lsan.supp):print_suppressions=0 \
	  ./$(BUILD)/unit_tests_san --jobs 2
	@if ls $(UNIT_SAN_LOGS)/report.* >/dev/null 2>&1; then cat $(UNIT_SAN_LOGS)/report.*; \
	  echo "unit tests under ASan: the sanitizer reported the above (leak or memory error)"; exit 1; fi

e2e-asan: $(BUILD)/clothd-asan
	$(ASAN_RUN) python3 tests/e2e/run_all.py --sanitizer asan --clothd $(BUILD)/clothd-asan

e2e-tsan: $(BUILD)/clothd-tsan $(BUILD)/pool_handoff_tsan $(BUILD)/team_handoff_tsan
	$(TSAN_RUN) ./$(BUILD)/pool_handoff_tsan
	$(TSAN_RUN) ./$(BUILD)/team_handoff_tsan
	$(TSAN_RUN) python3 tests/e2e/run_all.py --sanitizer tsan --clothd $(BUILD)/clothd-tsan

# libFuzzer (clang): the real parser and dispatcher behind a real connection
# to an in-process clothd (tests/fuzz/fuzz_server.c). Its objects are built
# apart, with clang's coverage instrumentation.
FUZZ_CC      := clang-14
FUZZ_SECONDS ?= 1800
FUZZ_SHORT   ?= 30
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -Wall -Wextra -O1 -g -fno-math-errno $(FUZZ_SAN) \
                $(PKG_CFLAGS) -MMD -MP
fuzz_obj = $(patsubst %.c,$(BUILD)/fuzz/%.o,$(1))

$(BUILD)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz_server: $(call fuzz_obj,tests/fuzz/fuzz_server.c $(SOLVER_SRC) $(PROTOCOL_SRC) $(SERVER_SRC))
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) $^ -o $@ $(LDLIBS)

fuzz: $(BUILD)/fuzz_server
	python3 tests/fuzz/run_fuzz.py --fuzzer $(BUILD)/fuzz_server --work $(BUILD)/fuzz \
	  --seconds $(FUZZ_SECONDS)

# The soak: 8 clients at once against the release server (tests/soak/soak.py).
SOAK_SECONDS ?= 600
SOAK_SHORT   ?= 30
soak: $(BUILD)/clothd
	python3 tests/soak/soak.py --clothd $(BUILD)/clothd --seconds $(SOAK_SECONDS)

# The short versions for `make check`: about 3 minutes in all on 2 cores.
check-hardening: $(BUILD)/clothd $(BUILD)/clothd-asan $(BUILD)/clothd-tsan $(BUILD)/pool_handoff_tsan \
                 $(BUILD)/team_handoff_tsan $(BUILD)/fuzz_server
	$(ASAN_RUN) python3 tests/e2e/run_all.py -q --sanitizer asan --clothd $(BUILD)/clothd-asan $(E2E_SAN_SHORT)
	$(TSAN_RUN) ./$(BUILD)/pool_handoff_tsan
	$(TSAN_RUN) ./$(BUILD)/team_handoff_tsan
	$(TSAN_RUN) python3 tests/e2e/run_all.py -q --sanitizer tsan --clothd $(BUILD)/clothd-tsan $(E2E_TSAN_SHORT)
	python3 tests/fuzz/run_fuzz.py --fuzzer $(BUILD)/fuzz_server --work $(BUILD)/fuzz --seconds $(FUZZ_SHORT)
	python3 tests/soak/soak.py --clothd $(BUILD)/clothd --seconds $(SOAK_SHORT)

.PHONY: unit-san e2e-asan e2e-tsan fuzz soak check-hardening

# ---- the README's two commands --------------------------------------------

run: deps
	@$(MAKE) --no-print-directory all
	./$(BUILD)/clothd

test: deps-test
	@$(MAKE) --no-print-directory check

# The fast unit tests first (a failure shows early), the no-allocation check
# of the step, the unit tests under ASan/UBSan with leak detection (unit-san),
# the short sanitizer, fuzz and soak runs (check-hardening), the clients'
# tests, and last the e2e suite against the release server (leaks checked
# there by valgrind), whose "e2e: N passed, N failed" line closes the run.
check: $(BUILD)/clothd $(BUILD)/unit_tests $(BUILD)/unit_tests_san $(BUILD)/alloc_tests
	./$(BUILD)/unit_tests --jobs 2
	./$(BUILD)/alloc_tests --jobs 2
	@$(MAKE) --no-print-directory unit-san
	@$(MAKE) --no-print-directory check-hardening
	@for t in $(CLIENT_TESTS); do $(MAKE) --no-print-directory $$t || exit 1; done
	python3 tests/e2e/run_all.py --clothd $(BUILD)/clothd

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

# The garment bench (issue 14): a skinned cape on a walking body beside a
# grid of its size, and the cost of a skin update (bench/bench_garment.c).
$(BUILD)/bench_garment: bench/bench_garment.c $(SOLVER_OBJ) $(PROTOCOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $^ -o $@ $(LDLIBS)

bench-garment: $(BUILD)/bench_garment
	$(BUILD)/bench_garment

.PHONY: bench-garment

# The cantilever sweep of issue 10 (bench/bench_beam.c; bench/README.md):
# a soft-body beam with youngsModulus against Euler-Bernoulli at 1 to 6
# cells across, converged and at the default budget. A few minutes.
$(BUILD)/bench_beam: bench/bench_beam.c $(SOLVER_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $^ -o $@ $(LDLIBS)

bench-beam: $(BUILD)/bench_beam
	$(BUILD)/bench_beam

.PHONY: bench-beam

# Frames with and without their velocity and normal channels (issue 15):
# bytes and build cost per form for one 64 x 64 curtain (bench/README.md, 9).
$(BUILD)/bench_frames: bench/bench_frames.c $(SOLVER_OBJ) $(PROTOCOL_OBJ) $(call obj,server/frames.c)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $^ -o $@ $(LDLIBS)

bench-frames: $(BUILD)/bench_frames
	./$(BUILD)/bench_frames 64

# bench_server.py's subscribers in C (a game server's reader), beside its Python ones.
$(BUILD)/bench_subscriber: bench/bench_subscriber.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $< -o $@

$(BUILD)/bench_bullet: bench/bench_bullet.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra -Werror $(BULLET_CFLAGS) $< -o $@ $(BULLET_LIBS)

bench: deps-bench
	@$(MAKE) --no-print-directory $(BUILD)/bench_clothd $(BUILD)/bench_bullet
	python3 bench/run.py --build $(BUILD)
	@$(MAKE) --no-print-directory bench-server
	@$(MAKE) --no-print-directory bench-self-team
	@$(MAKE) --no-print-directory bench-garment
	@$(MAKE) --no-print-directory bench-lod

# Through the real server (issue 8): 64 awake capes of 32x32 stepped over TCP
# with 0 and 4 subscribers reading every frame, and the server CPU of a tiny
# `step` (bench/bench_server.py; bench/README.md, "Through the server").
# Compare builds in one run: BENCH_SERVER_FLAGS="--clothd before=PATH --clothd after=PATH".
BENCH_SERVER_FLAGS ?=
bench-server: $(BUILD)/clothd $(BUILD)/bench_subscriber
	python3 bench/bench_server.py --build $(BUILD) $(BENCH_SERVER_FLAGS)

.PHONY: bench-server

# One large cloth with self-collision through the server on 1 and 2
# workers: its pair search shared by the team (bench/README.md, 5c).
bench-self-team: $(BUILD)/clothd
	python3 bench/bench_self_team.py --build $(BUILD)

.PHONY: bench-self-team

# Levels of detail and the step budget (issue 15): what each level costs and
# how it looks (bench_clothd's `lod`), then 64 capes through the real server
# with a budget of half their full-detail time (bench/bench_lod.py;
# bench/README.md, sections 11 and 12). About two minutes.
bench-lod: $(BUILD)/clothd $(BUILD)/bench_clothd
	python3 bench/bench_lod.py --build $(BUILD) $(BENCH_LOD_FLAGS)

.PHONY: bench-lod

# ---- install ---------------------------------------------------------------
# clothd, clothctl (a wrapper running clients/python/clothctl.py from
# PYDIR with the client module beside it), the man pages, the systemd unit
# (ExecStart filled in) and, when clients/c/client.mk defines them,
# libclothd's libraries, headers and clothd.pc. Every file installed is
# listed in INSTALLED, which `make uninstall` removes.

MAN_PAGES := doc/clothd.1 doc/clothctl.1
INSTALLED  = $(BINDIR)/clothd $(BINDIR)/clothctl $(PYDIR)/clothd.py $(PYDIR)/clothctl.py \
             $(addprefix $(MANDIR)/man1/,$(notdir $(MAN_PAGES))) $(UNITDIR)/clothd.service \
             $(addprefix $(LIBDIR)/,$(notdir $(CLOTHD_C_LIBS))) \
             $(addprefix $(INCLUDEDIR)/clothd/,$(notdir $(CLOTHD_C_HEADERS))) \
             $(if $(CLOTHD_C_PC),$(LIBDIR)/pkgconfig/clothd.pc)

install: $(BUILD)/clothd $(CLOTHD_C_LIBS) $(CLOTHD_C_PC)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PYDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(UNITDIR)
	install -m 755 $(BUILD)/clothd $(DESTDIR)$(BINDIR)/clothd
	install -m 644 clients/python/clothd.py clients/python/clothctl.py $(DESTDIR)$(PYDIR)/
	printf '#!/bin/sh\n# clothctl, the console of a running clothd (make install)\nexec python3 %s "$$@"\n' \
	  '$(PYDIR)/clothctl.py' > $(DESTDIR)$(BINDIR)/clothctl
	chmod 755 $(DESTDIR)$(BINDIR)/clothctl
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/
	sed 's|@BINDIR@|$(BINDIR)|g' packaging/clothd.service.in > $(DESTDIR)$(UNITDIR)/clothd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/clothd.service
	$(if $(CLOTHD_C_LIBS),install -d $(DESTDIR)$(LIBDIR) && cp -P $(CLOTHD_C_LIBS) $(DESTDIR)$(LIBDIR)/)
	$(if $(CLOTHD_C_HEADERS),install -d $(DESTDIR)$(INCLUDEDIR)/clothd && \
	  install -m 644 $(CLOTHD_C_HEADERS) $(DESTDIR)$(INCLUDEDIR)/clothd/)
	$(if $(CLOTHD_C_PC),install -d $(DESTDIR)$(LIBDIR)/pkgconfig && \
	  install -m 644 $(CLOTHD_C_PC) $(DESTDIR)$(LIBDIR)/pkgconfig/clothd.pc)

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(PYDIR) $(DESTDIR)$(DATADIR)/clothd $(DESTDIR)$(INCLUDEDIR)/clothd 2>/dev/null

.PHONY: install uninstall

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
-include $(shell find $(BUILD)/tsan $(BUILD)/fuzz -name '*.d' 2>/dev/null)
