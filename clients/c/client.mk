# clients/c/client.mk: libclothd, the C client library (included by the top Makefile).
#
#   make c-client       $(BUILD)/clients/c/: libclothd.a, libclothd.so (soname libclothd.so.0),
#                       clothd.pc (for PREFIX) and clothd-uninstalled.pc (this build tree)
#   make c-test         the library's tests against the real server (plain C runner), the
#                       examples built and run, the Windows cross-compile, the C# P/Invoke check
#   make c-test-asan    the same tests built with ASan+UBSan
#   make c-codes        rewrite include/clothd/codes.h from solver/errors.h
#   make c-bench        the cost of a `step` round trip, the C client beside the Python client
#   make c-bench-skin   the cost of a 1,960-vertex `skin` round trip, binary against JSON
#   make c-bench-shm    a subscriber's CPU per frame: shared-memory frames against TCP and Unix
#
# For an install rule: CLOTHD_C_LIBS (the built libraries, symlinks included),
# CLOTHD_C_HEADERS (the public headers, to go under include/clothd/) and
# CLOTHD_C_PC (clothd.pc; its prefix is CLOTHD_C_PREFIX, default PREFIX or /usr/local).

C_DIR       := clients/c
C_OUT       := $(BUILD)/clients/c
C_VERSION   := 0.1.0
C_SOMAJOR   := 0
C_SONAME    := libclothd.so.$(C_SOMAJOR)
C_LIB_SRC   := $(filter-out $(C_DIR)/src/net_win32.c,$(wildcard $(C_DIR)/src/*.c))
C_TEST_SRC  := $(wildcard $(C_DIR)/tests/*.c)
C_WARN      := -std=c11 -Wall -Wextra -Werror -pedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
C_CFLAGS    := $(C_WARN) -O2 -g -fPIC -fvisibility=hidden -I$(C_DIR)/include -MMD -MP
C_TEST_CFLAGS := $(C_WARN) -Wno-format-extra-args -O1 -g -I$(C_DIR)/include -I$(C_DIR)/src -MMD -MP
C_SAN       := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
CLOTHD_C_PREFIX ?= $(if $(PREFIX),$(PREFIX),/usr/local)
# clothd.pc's libdir and includedir: the install rule's LIBDIR/INCLUDEDIR when
# the top Makefile sets them (written relative to ${prefix} when under it).
c_pc_dir = $(if $(1),$(patsubst $(CLOTHD_C_PREFIX)/%,$${prefix}/%,$(1)),$${prefix}/$(2))

CLOTHD_C_LIBS    := $(C_OUT)/libclothd.a $(C_OUT)/libclothd.so.$(C_VERSION) $(C_OUT)/$(C_SONAME) \
                    $(C_OUT)/libclothd.so
CLOTHD_C_HEADERS := $(C_DIR)/include/clothd/client.h $(C_DIR)/include/clothd/codes.h
CLOTHD_C_PC      := $(C_OUT)/clothd.pc

# Windows (mingw-w64) and C# (mono) checks, when their Debian packages are there.
C_MINGW := $(shell command -v x86_64-w64-mingw32-gcc 2>/dev/null)
C_MCS   := $(shell command -v mcs 2>/dev/null)
DEB_TEST += gcc-mingw-w64-x86-64 mono-mcs g++ locales

CLIENT_TESTS += c-test c-test-asan
.PHONY: c-pc-always c-client c-test c-test-asan c-codes c-codes-check c-mingw c-csharp c-bench c-bench-skin \
        c-bench-shm

c_pic_obj = $(patsubst $(C_DIR)/%.c,$(C_OUT)/pic/%.o,$(1))
c_san_obj = $(patsubst $(C_DIR)/%.c,$(C_OUT)/san/%.o,$(1))
c_test_obj = $(patsubst $(C_DIR)/%.c,$(C_OUT)/obj/%.o,$(1))

$(C_OUT)/pic/%.o: $(C_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(C_CFLAGS) -c $< -o $@

$(C_OUT)/obj/%.o: $(C_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(C_TEST_CFLAGS) -c $< -o $@

$(C_OUT)/san/%.o: $(C_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(C_TEST_CFLAGS) $(C_SAN) -c $< -o $@

$(C_OUT)/libclothd.a: $(call c_pic_obj,$(C_LIB_SRC))
	@rm -f $@
	$(AR) rcs $@ $^

$(C_OUT)/libclothd.so.$(C_VERSION): $(call c_pic_obj,$(C_LIB_SRC))
	$(CC) -shared -Wl,-soname,$(C_SONAME) -Wl,--no-undefined $^ -o $@ -lm

$(C_OUT)/$(C_SONAME) $(C_OUT)/libclothd.so: $(C_OUT)/libclothd.so.$(C_VERSION)
	ln -sf libclothd.so.$(C_VERSION) $@

# pkg-config: clothd.pc for an installed prefix; clothd-uninstalled.pc (which
# pkg-config prefers when it is on PKG_CONFIG_PATH) for this build tree.
define c_pc
prefix=$(1)
libdir=$(2)
includedir=$(3)

Name: clothd
Description: C client of the clothd cloth-simulation server
Version: $(C_VERSION)
Libs: -L$${libdir} -lclothd
Libs.private: -lm
Cflags: -I$${includedir}
endef
$(C_OUT)/clothd.pc: c-pc-always
	@mkdir -p $(dir $@)
	$(file >$@,$(call c_pc,$(CLOTHD_C_PREFIX),$(call c_pc_dir,$(LIBDIR),lib),$(call c_pc_dir,$(INCLUDEDIR),include)))
	@echo "wrote $@ (prefix $(CLOTHD_C_PREFIX))"
$(C_OUT)/clothd-uninstalled.pc: $(C_DIR)/client.mk
	@mkdir -p $(dir $@)
	$(file >$@,$(call c_pc,$(abspath $(C_DIR)),$(abspath $(C_OUT)),$${prefix}/include))
	@echo "wrote $@"

c-client: $(CLOTHD_C_LIBS) $(CLOTHD_C_PC) $(C_OUT)/clothd-uninstalled.pc

# codes.h is generated from solver/errors.h and checked in (a client tree
# copied elsewhere builds without the generator); the test keeps it honest.
$(C_OUT)/gen_codes: $(C_DIR)/tools/gen_codes.c solver/errors.h
	@mkdir -p $(dir $@)
	$(CC) $(C_WARN) $< -o $@
c-codes: $(C_OUT)/gen_codes
	./$(C_OUT)/gen_codes > $(C_DIR)/include/clothd/codes.h
c-codes-check: $(C_OUT)/gen_codes
	@./$(C_OUT)/gen_codes | cmp -s - $(C_DIR)/include/clothd/codes.h || \
	  { echo "clients/c/include/clothd/codes.h differs from solver/errors.h: run make c-codes"; exit 1; }

# The examples: the game loop in C against the shared library (found by
# rpath), the C++ wrapper against the static one, and the game loop once more
# built only from `pkg-config --cflags --libs clothd` (the uninstalled .pc).
C_EXAMPLES := $(C_OUT)/examples/cape $(C_OUT)/examples/raii $(C_OUT)/examples/cape-pkgconfig \
              $(C_OUT)/examples/walking_cape
$(C_OUT)/examples/cape $(C_OUT)/examples/walking_cape: $(C_OUT)/examples/%: $(C_DIR)/examples/%.c \
                                                      $(C_OUT)/$(C_SONAME) $(C_OUT)/libclothd.so
	@mkdir -p $(dir $@)
	$(CC) $(C_WARN) -O2 -I$(C_DIR)/include $< -o $@ -L$(C_OUT) -lclothd -Wl,-rpath,$(abspath $(C_OUT)) -lm
$(C_OUT)/examples/cape-pkgconfig: $(C_DIR)/examples/cape.c $(C_OUT)/clothd-uninstalled.pc $(C_OUT)/libclothd.so
	@mkdir -p $(dir $@)
	$(CC) $(C_WARN) -O2 $< -o $@ $$(PKG_CONFIG_PATH=$(abspath $(C_OUT)) pkg-config --cflags --libs clothd) \
	  -Wl,-rpath,$(abspath $(C_OUT)) -lm
$(C_OUT)/examples/raii: $(C_DIR)/examples/raii.cpp $(C_OUT)/libclothd.a
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -Wall -Wextra -Werror -pedantic -O2 -I$(C_DIR)/include $< $(C_OUT)/libclothd.a -o $@ -lm

# The tests: one plain runner (tests/main.c) linked with the static library,
# so it also reaches the JSON reader it checks; the ASan+UBSan twin is built
# from the same sources.
$(C_OUT)/c_tests: $(call c_test_obj,$(C_TEST_SRC)) $(C_OUT)/libclothd.a
	$(CC) $^ -o $@ -lpthread -lm
$(C_OUT)/c_tests_san: $(call c_san_obj,$(C_TEST_SRC) $(C_LIB_SRC))
	$(CC) $(C_SAN) $^ -o $@ -lpthread -lm
$(C_OUT)/san/examples/cape $(C_OUT)/san/examples/walking_cape: $(C_OUT)/san/examples/%: $(C_DIR)/examples/%.c \
                                                              $(call c_san_obj,$(C_LIB_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(C_WARN) -O1 -g $(C_SAN) -I$(C_DIR)/include $^ -o $@ -lm
$(C_OUT)/san/examples/raii: $(C_DIR)/examples/raii.cpp $(call c_san_obj,$(C_LIB_SRC))
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -Wall -Wextra -Werror -pedantic -O1 -g $(C_SAN) -I$(C_DIR)/include $^ -o $@

# Windows: the library cross-compiled with mingw-w64 (objects, a DLL and its
# import library): it must build with the same warnings as on Linux.
C_WIN_OBJ := $(patsubst $(C_DIR)/%.c,$(C_OUT)/win64/%.o,$(filter-out $(C_DIR)/src/net_posix.c,$(wildcard $(C_DIR)/src/*.c)))
$(C_OUT)/win64/%.o: $(C_DIR)/%.c
	@mkdir -p $(dir $@)
	x86_64-w64-mingw32-gcc $(C_WARN) -O2 -DCLOTHD_BUILDING_DLL -I$(C_DIR)/include -c $< -o $@
$(C_OUT)/win64/clothd.dll: $(C_WIN_OBJ)
	x86_64-w64-mingw32-gcc -shared $^ -o $@ -Wl,--out-implib,$(C_OUT)/win64/libclothd.dll.a -lws2_32
c-mingw:
ifneq ($(C_MINGW),)
	@$(MAKE) --no-print-directory $(C_OUT)/win64/clothd.dll
	@echo "c-mingw: libclothd cross-compiled for Windows: $(C_OUT)/win64/clothd.dll"
else
	@echo "c-mingw: skipped (no x86_64-w64-mingw32-gcc; apt-get install gcc-mingw-w64-x86-64)"
endif

# C#: the P/Invoke example compiled with mono's mcs; the tests run it.
$(C_OUT)/examples/ClothdExample.exe: $(C_DIR)/examples/csharp/Clothd.cs $(C_DIR)/examples/csharp/Example.cs
	@mkdir -p $(dir $@)
	mcs -nologo -warnaserror -out:$@ $^
c-csharp:
ifneq ($(C_MCS),)
	@$(MAKE) --no-print-directory $(C_OUT)/examples/ClothdExample.exe
else
	@echo "c-csharp: skipped (no mcs; apt-get install mono-mcs)"
endif

# A decimal-comma locale for the JSON tests, generated into the build tree
# (LOCPATH) so that nothing is installed system-wide.
$(C_OUT)/locale/de_DE.UTF-8:
	@mkdir -p $(dir $@)
	localedef -i de_DE -f UTF-8 $@ || echo "c-test: no de_DE locale (the JSON test then runs in C only)"

C_TEST_ENV = CLOTHD_BIN=$(abspath $(BUILD)/clothd) CLOTHD_REPO=$(abspath .) \
             CLOTHD_C_LOGS=$(abspath $(C_OUT)/logs) CLOTHD_C_LIBDIR=$(abspath $(C_OUT)) \
             LOCPATH=$(abspath $(C_OUT)/locale)

c-test: $(BUILD)/clothd c-client c-codes-check $(C_OUT)/c_tests $(C_EXAMPLES) c-mingw c-csharp \
        $(C_OUT)/locale/de_DE.UTF-8
	@mkdir -p $(C_OUT)/logs
	$(C_TEST_ENV) CLOTHD_C_EXAMPLES=$(abspath $(C_OUT)/examples) ./$(C_OUT)/c_tests

c-test-asan: $(BUILD)/clothd $(C_OUT)/c_tests_san $(C_OUT)/san/examples/cape $(C_OUT)/san/examples/raii \
             $(C_OUT)/san/examples/walking_cape \
             $(C_OUT)/locale/de_DE.UTF-8
	@mkdir -p $(C_OUT)/logs
	$(C_TEST_ENV) CLOTHD_C_EXAMPLES=$(abspath $(C_OUT)/san/examples) \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ./$(C_OUT)/c_tests_san

# One tiny instance, N blocking `step` round trips: C and Python in one run.
C_BENCH_STEPS ?= 1000
$(C_OUT)/bench/roundtrip: $(C_DIR)/bench/roundtrip.c $(C_OUT)/libclothd.a
	@mkdir -p $(dir $@)
	$(CC) $(C_WARN) -O2 -I$(C_DIR)/include $< $(C_OUT)/libclothd.a -o $@ -lm
c-bench: $(BUILD)/clothd $(C_OUT)/bench/roundtrip
	python3 $(C_DIR)/bench/roundtrip.py --clothd $(BUILD)/clothd --c-bench $(C_OUT)/bench/roundtrip \
	  --steps $(C_BENCH_STEPS)

# One 1,960-vertex skin (positions and normals), binary against JSON, N
# blocking round trips each; it starts its own clothd.
C_BENCH_SKIN_REQUESTS ?= 100
$(C_OUT)/bench/skin: $(C_DIR)/bench/skin.c $(C_OUT)/libclothd.a
	@mkdir -p $(dir $@)
	$(CC) $(C_WARN) -O2 -I$(C_DIR)/include $< $(C_OUT)/libclothd.a -o $@ -lm
c-bench-skin: $(BUILD)/clothd $(C_OUT)/bench/skin
	./$(C_OUT)/bench/skin --clothd $(BUILD)/clothd --requests $(C_BENCH_SKIN_REQUESTS)

# A reader of N instances' frames (64 of 32 x 32, 500 steps a round): its
# CPU per frame through shared memory, TCP loopback and the Unix socket;
# it starts its own clothd. Not part of `make test`.
C_BENCH_SHM_STEPS ?= 500
C_BENCH_SHM_ROUNDS ?= 1
$(C_OUT)/bench/shm_reader: $(C_DIR)/bench/shm_reader.c $(C_OUT)/libclothd.a
	@mkdir -p $(dir $@)
	$(CC) $(C_WARN) -O2 -I$(C_DIR)/include $< $(C_OUT)/libclothd.a -o $@ -lpthread -lm
c-bench-shm: $(BUILD)/clothd $(C_OUT)/bench/shm_reader
	./$(C_OUT)/bench/shm_reader --clothd $(BUILD)/clothd --steps $(C_BENCH_SHM_STEPS) --rounds $(C_BENCH_SHM_ROUNDS)

-include $(wildcard $(C_OUT)/pic/src/*.d $(C_OUT)/obj/tests/*.d $(C_OUT)/san/src/*.d $(C_OUT)/san/tests/*.d)
