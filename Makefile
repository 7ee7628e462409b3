# stacksnap - GNU make build. `make` builds the library, the CLI and
# stacksnap.pc; `make check` builds and runs every test, also under
# AddressSanitizer + UndefinedBehaviorSanitizer; `make demo` runs the CLI on
# a built-in demo target; `make fuzz`, `make bench`, `make install`.

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
PKGDIR ?= $(LIBDIR)/pkgconfig

VERSION := 0.1.0
CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif
CLANG ?= clang
O ?= build
PKGS := libelf libdw liblzma libbpf libdebuginfod
# The analysis stepper decodes machine code with Capstone (issue 14).
PKGS += capstone

# Plain `make` builds everything (the stamp rule below would come first).
.DEFAULT_GOAL := all

# Missing build dependencies are installed by scripts/install-deps.sh the
# first time; the stamp keeps later builds from asking pkg-config again.
DEPS_STAMP := $(O)/.deps-ok
$(DEPS_STAMP): scripts/install-deps.sh
	@mkdir -p $(@D)
	@scripts/install-deps.sh
	@touch $@

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes
BASE_CFLAGS := -std=gnu11 $(WARN) -g -fno-omit-frame-pointer -Iinclude -Isrc -I$(O)/bpf
BASE_CFLAGS += -I$(O)/gen
CFLAGS ?= -O2
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS) $(PKG_CFLAGS)
# libdebuginfod, libstdc++ and libcapstone are dlopen'ed when first needed
# (src/elf/elf_find.c, src/symbolize/demangle.c,
# src/unwind/steppers/capstone_dl.c): linked, they cost every CLI run
# ~24 ms of start-up (issue 16). Test tools that decode code themselves
# link Capstone.
# libiberty (libiberty-dev: a static archive only, built PIC, so it links
# into libstacksnap.so as well) demangles Rust names as gdb does; the
# library refers to rust_demangle weakly (src/symbolize/demangle.c), so
# -u pulls it out of the archive.
IBERTY = -Wl,-u,rust_demangle -liberty
LIBS = $(filter-out -ldebuginfod -lcapstone,$(PKG_LIBS)) $(IBERTY) -lpthread
TOOL_LIBS = $(LIBS) -lcapstone
SAN_FLAGS := -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined

# src/bpf/*.bpf.c are BPF programs (built by clang -target bpf into
# skeletons, below), not library sources.
LIB_SRCS := $(sort $(filter-out %.bpf.c,$(wildcard src/*/*.c src/*/*/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(O)/obj/%.o)
LIB_PIC_OBJS := $(LIB_SRCS:%.c=$(O)/pic/%.o)
SAN_OBJS := $(LIB_SRCS:%.c=$(O)/san/%.o)
# pprof's profile.proto, compiled by protoc-c at build time into
# $(O)/gen (issue 15): the generated encoder is one more library source.
PKGS += libprotobuf-c zlib libzstd
# libdeflate inflates compressed debug sections (src/symbolize/dwarf_mem.c).
PKGS += libdeflate
GEN_DIR := $(O)/gen
GEN_SRCS := $(GEN_DIR)/profile.pb-c.c
LIB_OBJS += $(O)/obj/gen/profile.pb-c.o
LIB_PIC_OBJS += $(O)/pic/gen/profile.pb-c.o
SAN_OBJS += $(O)/san/gen/profile.pb-c.o
CLI_SRCS := $(sort $(wildcard tools/stacksnap/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(O)/obj/%.o)
# --help texts and the man page, both generated from tools/stacksnap/help/
# (scripts/gen-help.py; issue 15).
HELP_SRCS := $(sort $(wildcard tools/stacksnap/help/*.txt))
HELP_SRCS += $(wildcard tools/stacksnap/help/*.inc)
HELP_SRCS += $(wildcard tools/stacksnap/help/*.sect)
CLI_OBJS += $(O)/obj/gen/help_text.o
# The CLI uses only the public API: its sources are compiled without src/
# on the include path, so the compiler holds it to include/.
$(CLI_OBJS): ALL_CFLAGS = $(filter-out -Isrc -I$(O)/bpf,$(BASE_CFLAGS)) $(CFLAGS) $(PKG_CFLAGS)
MANDIR ?= $(PREFIX)/share/man
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/%)
UNIT_SAN_BINS := $(UNIT_SRCS:tests/unit/%.c=$(O)/tests-san/%)
TOOL_SRCS := $(sort $(wildcard tests/tools/*.c))
TOOL_BINS := $(TOOL_SRCS:tests/tools/%.c=$(O)/tests/%)
TOOL_SAN_BINS := $(TOOL_SRCS:tests/tools/%.c=$(O)/tests-san/%)
FUZZ_SRCS := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:fuzz/%.c=$(O)/fuzz/%)
BENCH_SRCS := $(sort $(wildcard bench/bench_*.c))
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(O)/bench/%)

.PHONY: all lib cli check check-build layers unit unit-san integration demo fuzz fuzz-check bench install clean deps

all: lib cli $(O)/stacksnap.pc $(O)/stacksnap.1
lib: $(O)/libstacksnap.a $(O)/libstacksnap.so
cli: $(O)/stacksnap
deps: $(DEPS_STAMP)

$(O)/obj/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@
$(O)/pic/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@
$(O)/san/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

# BPF programs: CO-RE objects compiled by clang against the running kernel's
# BTF (vmlinux.h, generated), turned into libbpf skeletons
# ($(O)/bpf/NAME.skel.h, `struct NAME_bpf`) that the library's loaders
# include. Every library object waits for the skeletons (order-only), so
# any source may include one.
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
BPF_SRCS := $(sort $(wildcard src/bpf/*.bpf.c))
BPF_SKELS := $(BPF_SRCS:src/bpf/%.bpf.c=$(O)/bpf/%.skel.h)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Wno-unused-function -I$(O)/bpf -Isrc -Iinclude
$(O)/bpf/vmlinux.h: $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp
	@mv $@.tmp $@
$(O)/bpf/%.bpf.o: src/bpf/%.bpf.c $(O)/bpf/vmlinux.h
	$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
$(O)/bpf/%.skel.h: $(O)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp
	@mv $@.tmp $@
# Light skeletons ($(O)/bpf/NAME.lskel.h, `struct NAME_lbpf`): the object
# loaded by a small BPF_PROG_TYPE_SYSCALL program that the kernel runs,
# which resolves the CO-RE relocations and the attach target against the
# kernel's own BTF, so that nothing parses /sys/kernel/btf/vmlinux in user
# space (libbpf's loader does, ~50 ms, for any tracing program: see
# docs/nonstop-capture.md, "Loading without the BTF parse"). Only for the
# programs whose loader uses one (BPF_LSKELS).
BPF_LSKELS := $(O)/bpf/nonstop.lskel.h
$(O)/bpf/%.lskel.h: $(O)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton -L $< name $*_lbpf > $@.tmp
	@mv $@.tmp $@
# The minimal kernel BTF of the trace objects whose programs need the
# kernel's BTF only for CO-RE relocations (tracepoint, uprobe, perf_event),
# cut from the build machine's kernel with its identity, as a header
# (scripts/min-core-btf.py): loaded where the running kernel is the same,
# it spares libbpf the parse of the full BTF.
BPF_MIN_BTF_OBJS := $(O)/bpf/trace_tp.bpf.o $(O)/bpf/trace_uprobe.bpf.o $(O)/bpf/trace_sample.bpf.o
BPF_MIN_BTF := $(O)/bpf/trace_min_btf.h
$(BPF_MIN_BTF): $(BPF_MIN_BTF_OBJS) scripts/min-core-btf.py
	scripts/min-core-btf.py $(BPFTOOL) $@ /sys/kernel/btf/vmlinux $(BPF_MIN_BTF_OBJS)
$(LIB_OBJS) $(LIB_PIC_OBJS) $(SAN_OBJS): | $(BPF_SKELS) $(BPF_LSKELS) $(BPF_MIN_BTF)

$(O)/libstacksnap.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^
$(O)/libstacksnap-san.a: $(SAN_OBJS)
	@rm -f $@
	ar rcs $@ $^
$(O)/libstacksnap.so: $(LIB_PIC_OBJS) src/libstacksnap.map
	$(CC) -shared -Wl,-soname,libstacksnap.so.0 -Wl,--version-script=src/libstacksnap.map -o $@ $(LIB_PIC_OBJS) $(LIBS)

# The CLI links its dependencies' static archives (each -dev package
# installs one): a dump is a short-lived process, and mapping and
# relocating nine shared libraries cost every run ~2.7 ms of its ~8 ms
# (`stacksnap --version` 7.0 -> 4.3 ms, perf stat -r 50; issue 16).
# `make STATIC_DEPS=0` links them dynamically; so does a missing archive.
# The library itself (libstacksnap.so/.a) and the tests stay dynamic.
STATIC_DEPS ?= 1
CLI_STATIC_LIBS = $(filter-out -ldebuginfod -lcapstone -pthread -lpthread,\
	$(shell pkg-config --static --libs $(filter-out libdebuginfod capstone,$(PKGS)) 2>/dev/null))
CLI_ARCHIVES_OK = $(if $(strip $(foreach l,$(sort $(CLI_STATIC_LIBS:-l%=%)),\
	$(if $(wildcard $(shell $(CC) -print-file-name=lib$(l).a)),,missing))),,yes)
ifeq ($(STATIC_DEPS),1)
CLI_STATIC_LINK = -Wl,-Bstatic -Wl,--start-group $(sort $(CLI_STATIC_LIBS)) \
	$(IBERTY) -Wl,--end-group -Wl,-Bdynamic -lpthread -ldl
CLI_LIBS = $(if $(CLI_ARCHIVES_OK),$(CLI_STATIC_LINK),$(LIBS))
else
CLI_LIBS = $(LIBS)
endif
$(O)/stacksnap: $(CLI_OBJS) $(O)/libstacksnap.a
	$(CC) -o $@ $(CLI_OBJS) $(O)/libstacksnap.a $(CLI_LIBS)

# The .pc names the install prefix, so `make install` writes it anew for
# the PREFIX it is given.
# stacksnap.pc requires what a program linking the library links:
# libdebuginfod and Capstone are dlopen'ed (LIBS above), and Debian ships
# no static libdebuginfod for `pkg-config --static --libs` (issue 40).
PC_REQUIRES = $(filter-out libdebuginfod capstone,$(PKGS))
PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCDIR@|$(INCDIR)|; s|@VERSION@|$(VERSION)|; s|@REQUIRES@|$(PC_REQUIRES)|'
$(O)/stacksnap.pc: stacksnap.pc.in Makefile
	@mkdir -p $(@D)
	$(PC_SED) $< > $@

# Unit tests and test tools link the static library, so they can reach
# internal functions as well as the public API.
$(O)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(O)/libstacksnap.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(O)/libstacksnap.a $(LIBS)
$(O)/tests-san/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(O)/libstacksnap-san.a
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< $(O)/libstacksnap-san.a $(LIBS)
$(O)/tests/%: tests/tools/%.c $(O)/libstacksnap.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libstacksnap.a $(TOOL_LIBS)
$(O)/tests-san/%: tests/tools/%.c $(O)/libstacksnap-san.a
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -o $@ $< $(O)/libstacksnap-san.a $(TOOL_LIBS)

# Every test program prints a closing `N passed, N failed` line;
# tests/run-all sums them into the closing line of `make check`.
# The build part runs in parallel, one job per core, whatever make was
# given (CI calls plain `make check`): it is a quarter of the run's time.
check:
	@$(MAKE) --no-print-directory -j$$(nproc) check-build
	@O=$(O) tests/run-all

check-build: layers all $(UNIT_BINS) $(UNIT_SAN_BINS) $(TOOL_BINS) $(TOOL_SAN_BINS) fuzz-bins
	@:

# Every include of src/ and tools/ against the folder order written in
# docs/ARCHITECTURE.md ("Folders and their direction"): prints any that
# climbs, and fails.
layers:
	@python3 scripts/layers.py

unit: $(UNIT_BINS)
	@for t in $(UNIT_BINS); do $$t || exit 1; done

# Fuzz targets: libFuzzer + ASan + UBSan, the library built by clang.
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(O)/fuzzobj/%.o) $(O)/fuzzobj/gen/profile.pb-c.o
$(FUZZ_LIB_OBJS): | $(BPF_SKELS) $(BPF_LSKELS) $(BPF_MIN_BTF)
$(O)/fuzzobj/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(BASE_CFLAGS) $(PKG_CFLAGS) -g -O1 -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@
$(O)/fuzz/%: fuzz/%.c $(FUZZ_LIB_OBJS)
	@mkdir -p $(@D)
	$(CLANG) $(BASE_CFLAGS) $(PKG_CFLAGS) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_LIB_OBJS) $(LIBS)
# Fuzz targets that lay out a runtime's memory as the unit tests do share
# their layouts (tests/unit/*.h, included by path).
$(O)/fuzz/fuzz_v8_frames: tests/unit/v8_node20.h
$(O)/fuzz/fuzz_hotspot: tests/unit/hotspot_jdk17.h
.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BINS)
# `make fuzz FUZZ_SECONDS=600` for a longer run of every target.
FUZZ_SECONDS ?= 60
fuzz: $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p $(O)/fuzz-corpus/$$n; \
	  echo "== $$n ($(FUZZ_SECONDS)s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $(O)/fuzz-corpus/$$n fuzz/corpus/$$n || exit 1; done

$(O)/bench/%: bench/%.c $(O)/libstacksnap.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O2 -o $@ $< $(O)/libstacksnap.a $(LIBS) $(shell pkg-config --libs libunwind-ptrace libunwind-generic 2>/dev/null)
# What the benchmarks dump is built the way release code is: -O2 and no
# frame pointers, so every unwinder has to use the CFI.
BENCH_TARGET_CFLAGS := -std=gnu11 $(WARN) -g -O2 -fomit-frame-pointer
$(O)/bench/stall_target: bench/stall_target.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_TARGET_CFLAGS) -o $@ $< -lpthread -ldl
$(O)/bench/libhop.so: bench/hop.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_TARGET_CFLAGS) -fPIC -shared -o $@ $<
# Tools and helpers of the benchmarks (not run by bench/run on their own).
BENCH_TOOLS := $(O)/bench/stall_target $(O)/bench/libhop.so $(O)/bench/lu_dump $(O)/bench/snapsize
$(O)/bench/lu_dump $(BENCH_BINS): bench/lu_remote.h
bench: all $(BENCH_BINS) $(BENCH_TOOLS) $(O)/tests/ss_kunwind
	@O=$(O) bench/run

demo: all
	@O=$(O) scripts/demo.sh

install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGDIR)
	install -m 644 $(O)/libstacksnap.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(O)/libstacksnap.so $(DESTDIR)$(LIBDIR)/libstacksnap.so.$(VERSION)
	ln -sf libstacksnap.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libstacksnap.so.0
	ln -sf libstacksnap.so.0 $(DESTDIR)$(LIBDIR)/libstacksnap.so
	install -m 644 include/stacksnap.h $(DESTDIR)$(INCDIR)/
	install -m 644 include/stacksnap.bpf.h $(DESTDIR)$(INCDIR)/
	$(PC_SED) stacksnap.pc.in > $(DESTDIR)$(PKGDIR)/stacksnap.pc
	install -m 755 $(O)/stacksnap $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(O)/stacksnap.1 $(DESTDIR)$(MANDIR)/man1/

clean:
	rm -rf $(O)

# Objects built only on the way to the fuzz targets are kept (not deleted as
# intermediates): no rebuild next time, and no `rm` after make check's
# closing line.
.SECONDARY:

-include $(shell find $(O) -name '*.d' 2>/dev/null)

# The generated pprof encoder (see GEN_SRCS above). Every library build
# (plain, PIC, sanitized, fuzz) compiles it like a source of src/; the
# writer's objects wait for the generated header.
$(GEN_DIR)/profile.pb-c.c $(GEN_DIR)/profile.pb-c.h: src/profile/profile.proto $(DEPS_STAMP)
	@mkdir -p $(GEN_DIR)
	protoc-c --proto_path=src/profile --c_out=$(GEN_DIR) src/profile/profile.proto
$(O)/obj/gen/profile.pb-c.o: $(GEN_DIR)/profile.pb-c.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@
$(O)/pic/gen/profile.pb-c.o: $(GEN_DIR)/profile.pb-c.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@
$(O)/san/gen/profile.pb-c.o: $(GEN_DIR)/profile.pb-c.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -c $< -o $@
$(O)/fuzzobj/gen/profile.pb-c.o: $(GEN_DIR)/profile.pb-c.c
	@mkdir -p $(@D)
	$(CLANG) $(BASE_CFLAGS) $(PKG_CFLAGS) -g -O1 -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@
$(O)/obj/src/profile/pprof.o $(O)/pic/src/profile/pprof.o $(O)/san/src/profile/pprof.o \
$(O)/fuzzobj/src/profile/pprof.o: $(GEN_DIR)/profile.pb-c.h

# One source for --help and stacksnap(1): the help texts (see HELP_SRCS).
$(GEN_DIR)/help_text.c $(O)/stacksnap.1: $(HELP_SRCS) scripts/gen-help.py
	@mkdir -p $(GEN_DIR)
	scripts/gen-help.py tools/stacksnap/help $(GEN_DIR)/help_text.c $(O)/stacksnap.1 $(VERSION)
$(O)/obj/gen/help_text.o: $(GEN_DIR)/help_text.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itools/stacksnap -c $< -o $@
