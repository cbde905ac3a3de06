# hutch build. `make` builds build/; `make SAN=1` builds the ASan+UBSan tree in
# build-san/. `make check` builds both and runs every test suite (README.md).

ifneq ($(filter deps,$(MAKECMDGOALS)),)
# `make deps [GOAL...]` on a fresh machine: the rest of this Makefile reads the installed
# packages (pkg-config, the lazy libraries' sonames) while it is parsed, before any recipe
# runs. So install first, then make the other goals in a new make that sees the packages.
OTHER_GOALS := $(filter-out deps,$(MAKECMDGOALS))
.PHONY: deps $(OTHER_GOALS)
deps:
	scripts/install-deps.sh
	tests/e2e-py/setup-venv.sh
ifneq ($(OTHER_GOALS),)
$(OTHER_GOALS): deps
	@$(MAKE) --no-print-directory $@
endif
else

PKGS      := libevent libevent_openssl libssl jansson sqlite3 libpq libseccomp zlib libcrypto libnftables libarchive
CC        ?= cc
SAN       ?= 0
PREFIX    ?= /usr/local

ifeq ($(SAN),1)
BUILD     := build-san
SANFLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT       := -O1 -g
# the sanitizer tree is the test build: test-only hooks (HUTCH_TEST_BUILD_PROBE)
TESTDEFS  := -DHU_TEST_HOOKS
else
BUILD     := build
SANFLAGS  :=
OPT       := -O2 -g
endif

WARN      := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter -Wno-format-truncation
CPPFLAGS  += -D_GNU_SOURCE -Isrc $(TESTDEFS) $(shell pkg-config --cflags $(PKGS))
CFLAGS    += -std=gnu11 $(OPT) $(WARN) $(SANFLAGS) -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE
LDFLAGS   += $(SANFLAGS) -pie -Wl,-z,relro,-z,now -Wl,--as-needed
# libarchive, libnftables and libpq are loaded on first use (src/util/dynlib.h), by the soname the
# linker would record; programs that call them directly (tests) link them as usual.
LAZY_PKGS := libarchive libnftables libpq
soname     = $(shell objdump -p $(shell pkg-config --variable=libdir $(1))/$(2).so 2>/dev/null | awk '/SONAME/ {print $$2}')
CPPFLAGS  += -DHU_LIBARCHIVE_SONAME='"$(call soname,libarchive,libarchive)"' \
             -DHU_LIBNFTABLES_SONAME='"$(call soname,libnftables,libnftables)"' \
             -DHU_LIBPQ_SONAME='"$(call soname,libpq,libpq)"'
ifeq ($(findstring .so.,$(call soname,libarchive,libarchive)$(call soname,libnftables,libnftables)),)
$(error cannot read the sonames of libarchive and libnftables (objdump, the -dev packages))
endif
ifeq ($(findstring .so.,$(call soname,libpq,libpq)),)
$(error cannot read the soname of libpq (objdump, libpq-dev))
endif
LIBS      := $(shell pkg-config --libs $(filter-out $(LAZY_PKGS),$(PKGS)))
# the `hutch` binary itself (src/cli/front.c): `hutch run` only needs these; hutch-full has the rest
FRONT_LIBS:= $(shell pkg-config --libs libseccomp jansson zlib)
TEST_LIBS := $(shell pkg-config --libs cmocka $(LAZY_PKGS))

UTIL_SRC    := $(wildcard src/util/*.c)
PROTO_SRC   := $(wildcard src/proto/*.c)
RUNTIME_SRC := $(wildcard src/runtime/*.c)
INIT_SRC    := $(wildcard src/init/*.c)
CLI_SRC     := $(filter-out src/cli/front.c,$(wildcard src/cli/*.c) $(wildcard src/cli/doctor/*.c))
FRONT_SRC   := src/cli/front.c src/cli/run.c src/cli/cli_error.c
DAEMON_SRC  := $(wildcard src/daemon/*.c src/daemon/*/*.c)
TEMPLATE_SRC:= $(wildcard src/template/*.c)
LIB_SRC     := $(UTIL_SRC) $(PROTO_SRC) $(RUNTIME_SRC) $(DAEMON_SRC) $(TEMPLATE_SRC)

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))

LIB       := $(BUILD)/libhutch.a
HUTCH     := $(BUILD)/hutch
FULL      := $(BUILD)/hutch-full
INIT      := $(BUILD)/hutch-init
BUILDER   := $(BUILD)/hutch-build
BUILDER_SRC := $(wildcard src/template/builder/*.c)
UNIT_SRC  := $(wildcard tests/unit/*/test_*.c tests/unit/*/*/test_*.c)
UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRC))
HELPER_SRC:= $(wildcard tests/helpers/*.c)
HELPER_BIN:= $(patsubst tests/helpers/%.c,$(BUILD)/tests/helpers/%,$(HELPER_SRC))
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps tests check check-layering check-unit check-integration check-e2e check-e2e-py check-e2e-pg check-e2e-via-node check-interpreter check-interpreter-sandbox check-conformance check-fuzz fuzz bench install clean run serve
all: $(HUTCH) $(FULL) $(INIT) $(BUILDER) $(UNIT_BIN) $(HELPER_BIN) $(BENCH_BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(call obj,$(LIB_SRC))
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

# `hutch`: `hutch run` here, every other verb in hutch-full (src/cli/front.c says why)
$(HUTCH): $(call obj,$(FRONT_SRC)) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(FRONT_LIBS)

$(FULL): $(call obj,$(CLI_SRC)) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# hutch-init runs as PID 1 inside every sandbox; it links only what it uses.
# Static (static-pie): no dynamic loader at every sandbox start, about a
# third of a cold create here (docs/benchmarks.md); the sanitizer build
# cannot link statically.
INIT_LDFLAGS := $(if $(SANFLAGS),,-static-pie)
# Its debug information goes to hutch-init.debug (found through a debuglink): every runtime copies
# the binary into a sealed memfd, and a third of its bytes were debug sections nobody executes.
$(INIT): $(call obj,$(INIT_SRC)) $(LIB)
	$(CC) $(LDFLAGS) $(INIT_LDFLAGS) -o $@.full $^
	cd $(dir $@) && objcopy --only-keep-debug $(notdir $@).full $(notdir $@).debug && \
		objcopy --strip-debug --add-gnu-debuglink=$(notdir $@).debug $(notdir $@).full $(notdir $@) && \
		rm $(notdir $@).full

# hutch-build unpacks uploaded template archives for the daemon, confined
# (src/template/builder.h); the daemon executes a sealed copy of it.
$(BUILDER): $(call obj,$(BUILDER_SRC)) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests -o $@ $< $(LIB) $(LDFLAGS) $(LIBS) $(TEST_LIBS)

$(BUILD)/tests/helpers/%: tests/helpers/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LIBS) -lm

run: all
	$(HUTCH) run -- python3 -c 'print(1)'

serve: all
	$(HUTCH) serve

check-unit: all
	tests/run-unit.sh $(BUILD)

check-integration: all
	tests/integration/run.sh $(BUILD)

check-e2e: all
	tests/e2e/run.sh $(BUILD)

check-e2e-py: all
	tests/e2e-py/run.sh $(BUILD)

# The core end-to-end files again with the store in PostgreSQL (a server of
# the run's own, tests/pg.sh).
E2E_PG_FILES := ./control.test.mjs ./lifecycle.test.mjs ./store_pg.test.mjs ./cluster.test.mjs ./cluster_templates.test.mjs ./cluster_download.test.mjs
check-e2e-pg: all
	E2E_STORE=postgresql E2E_FILES="$(E2E_PG_FILES)" tests/e2e/run.sh $(BUILD)

# The core files once more with every call through a second node that
# forwards it to the daemon the file started (E2E_VIA_NODE, harness.mjs).
E2E_VIA_FILES := ./control.test.mjs ./lifecycle.test.mjs
check-e2e-via-node: all
	E2E_STORE=postgresql E2E_VIA_NODE=1 E2E_FILES="$(E2E_VIA_FILES)" tests/e2e/run.sh $(BUILD)

# The include rules of src/ (docs/architecture.md "Layers").
check-layering:
	mkdir -p tests/results; python3 tests/lint/layering.py > tests/results/layering.txt; rc=$$?; cat tests/results/layering.txt; exit $$rc

check-fuzz:
	tests/fuzz/run.sh smoke

# The code interpreter's server against real kernels on the host (~40 s).
check-interpreter:
	images/code-interpreter/tests/run.sh

# The code-interpreter-v1 template built and its server driven inside a sandbox; the first run downloads
# ~300 MB of Debian packages into HUTCH_INTERP_CACHE (docs/operations.md, "The code interpreter").
check-interpreter-sandbox: all
	images/code-interpreter/tests/sandbox.sh $(BUILD)

# E2B's own JS SDK tests against hutch: E2B_REPO=<checkout of e2b-dev/E2B>; the code interpreter's JS and
# Python suites: E2B_CI_REPO=<checkout of e2b-dev/code-interpreter> (each skipped with a message without its
# checkout; docs/e2b-compat.md). The code interpreter's build the Debian tree into HUTCH_INTERP_CACHE once.
check-conformance: all
	tests/conformance/run-e2b-suite.sh "$(E2B_REPO)" $(BUILD)
	tests/conformance/run-e2b-py-suite.sh "$(E2B_REPO)" $(BUILD)
	tests/conformance/run-e2b-ci-suite.sh "$(E2B_CI_REPO)" $(BUILD)
	tests/conformance/run-e2b-ci-py-suite.sh "$(E2B_CI_REPO)" $(BUILD)

fuzz:
	tests/fuzz/run.sh build

# The full suite: the plain build and the sanitizer build, unit and
# integration tests under both, end-to-end and (with E2B_REPO, E2B_CI_REPO) E2B's own
# SDK tests, then a bounded fuzz run.
check:
	rm -rf tests/results
	mkdir -p tests/results
	$(MAKE) check-layering
	$(MAKE) all
	$(MAKE) SAN=1 all
	tests/run-unit.sh build
	tests/run-unit.sh build-san
	tests/integration/run.sh build-san
	tests/security/run.sh build-san
	tests/e2e/run.sh build-san
	tests/e2e-py/run.sh build-san
	E2E_STORE=postgresql E2E_FILES="$(E2E_PG_FILES)" tests/e2e/run.sh build-san
	E2E_STORE=postgresql E2E_VIA_NODE=1 E2E_FILES="$(E2E_VIA_FILES)" tests/e2e/run.sh build-san
	images/code-interpreter/tests/run.sh
	tests/conformance/run-e2b-suite.sh "$(E2B_REPO)" build-san
	tests/conformance/run-e2b-py-suite.sh "$(E2B_REPO)" build-san
	tests/conformance/run-e2b-ci-suite.sh "$(E2B_CI_REPO)" build-san
	tests/conformance/run-e2b-ci-py-suite.sh "$(E2B_CI_REPO)" build-san
	tests/fuzz/run.sh smoke
	tests/summary.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/hutch
	install -m 0755 $(HUTCH) $(DESTDIR)$(PREFIX)/bin/hutch
	install -m 0755 $(FULL) $(DESTDIR)$(PREFIX)/libexec/hutch/hutch-full
	install -m 0755 $(INIT) $(DESTDIR)$(PREFIX)/libexec/hutch/hutch-init
	install -m 0644 $(INIT).debug $(DESTDIR)$(PREFIX)/libexec/hutch/hutch-init.debug
	install -m 0755 $(BUILDER) $(DESTDIR)$(PREFIX)/libexec/hutch/hutch-build
	# the code interpreter's recipe, which `hutch serve` finds beside its binary (docs/operations.md)
	install -d $(DESTDIR)$(PREFIX)/share/hutch/code-interpreter/server
	install -m 0755 images/code-interpreter/build.sh $(DESTDIR)$(PREFIX)/share/hutch/code-interpreter/
	install -m 0644 images/code-interpreter/packages.txt images/code-interpreter/packages.lock \
		$(DESTDIR)$(PREFIX)/share/hutch/code-interpreter/
	install -m 0644 images/code-interpreter/server/* $(DESTDIR)$(PREFIX)/share/hutch/code-interpreter/server/

clean:
	rm -rf build build-san build-fuzz

-include $(shell find build build-san -name '*.d' 2>/dev/null)

endif # not `make deps`
