# qb: small Unix filters for LLM batch work. See README.
VERSION = 0.1.0

CC ?= cc
CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
LDLIBS = -lcurl -lyajl -lz -lm -lpthread
override CFLAGS += -pthread -std=c99 -Wall -Wextra -Wno-unused-parameter
override CPPFLAGS += -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DQB_VERSION='"$(VERSION)"' -Icommon

TOOLS = qb-pack qb-submit qb-poll qb-reconcile qb-reap qb-drain
BINS = $(TOOLS:%=cmd/%)
COMMON_SRC = $(wildcard common/*/*.c)
COMMON_OBJ = $(COMMON_SRC:.c=.o)
HDRS = $(wildcard common/*/*.h) cmd/opt.h
UNIT_SRC = $(wildcard tests/unit/*.c)
PROVEFLAGS ?=
PROVIDER ?= openai
UNIT = $(UNIT_SRC:.c=)
MAN1 = $(TOOLS:%=man/%.1)
MAN7 = man/qb.7 man/qb-providers.7

# check-sanitize: the whole suite built with ASan and UBSan. Every report is
# fatal and exits 86, a status no tool uses, so a test asserting a tool's
# status (often 1) cannot mistake a report for the tool's own answer. The
# reports also go to files in SANITIZE_LOGS, so that one from a tool whose
# status a test does not look at (inside a pipeline) fails the run too.
SANITIZE_CFLAGS = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
SANITIZE_LOGS = $(CURDIR)/tests/sanitize-logs
SANITIZE_ENV = \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86:log_path=$(SANITIZE_LOGS)/asan \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=86:log_path=$(SANITIZE_LOGS)/ubsan

# fuzz: the libFuzzer harnesses of tests/fuzz, run FUZZ_SECONDS each. They
# and a copy of common/ built for them live in FUZZ_DIR, apart from the
# normal objects; they need clang (tests/0300-fuzz.t skips without it).
FUZZ_CC = clang
FUZZ_SECONDS = 60
FUZZ_CFLAGS = -O1 -g -fno-omit-frame-pointer -pthread -std=c99 \
	-fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ = jsonl jscan item job result reqindex ratelim
FUZZ_DIR = tests/fuzz/build
FUZZ_BINS = $(FUZZ:%=$(FUZZ_DIR)/fuzz-%)
FUZZ_OBJ = $(COMMON_SRC:common/%.c=$(FUZZ_DIR)/%.o)

all: $(BINS)

common/libqb.a: $(COMMON_OBJ)
	rm -f $@
	$(AR) rcs $@ $(COMMON_OBJ)

common/%.o: common/%.c $(HDRS)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

cmd/opt.o: cmd/opt.c $(HDRS)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ cmd/opt.c

cmd/%: cmd/%.c cmd/opt.o common/libqb.a $(HDRS)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< cmd/opt.o common/libqb.a $(LDLIBS)

tests/unit/%: tests/unit/%.c common/libqb.a $(HDRS)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< common/libqb.a $(LDLIBS)

$(FUZZ_DIR)/%.o: common/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_DIR)/libqb.a: $(FUZZ_OBJ)
	rm -f $@
	$(AR) rcs $@ $(FUZZ_OBJ)

$(FUZZ_DIR)/fuzz-%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_DIR)/libqb.a $(HDRS)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< \
	    $(FUZZ_DIR)/libqb.a $(LDLIBS)

deps:
	@sh scripts/deps

check: deps all $(UNIT)
	@if command -v prove >/dev/null 2>&1; then \
		prove $(PROVEFLAGS) tests/*.t; \
	else \
		rc=0; for t in tests/*.t; do sh $$t || rc=1; done; exit $$rc; \
	fi

# The tree is cleaned before and after, so sanitizer objects never mix
# with a normal build. Any report fails the run, and is shown at the end.
check-sanitize:
	$(MAKE) clean
	rm -rf $(SANITIZE_LOGS)
	mkdir -p $(SANITIZE_LOGS)
	rc=0; $(SANITIZE_ENV) $(MAKE) check CFLAGS='$(SANITIZE_CFLAGS)' || rc=$$?; \
	$(MAKE) clean; \
	for f in $(SANITIZE_LOGS)/*; do \
		[ -e "$$f" ] || continue; echo "== $$f"; cat "$$f"; rc=1; \
	done; \
	[ $$rc = 0 ] || echo "check-sanitize: FAILED" >&2; exit $$rc

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@sh tests/fuzz/run $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ)

demo: deps all
	@PROVIDER=$(PROVIDER) sh scripts/demo

bench: deps all
	python3 scripts/bench/pack
	python3 scripts/bench/reconcile
	python3 scripts/bench/drain

lint:
	mandoc -Tlint -W warning man/*.1 $(MAN7)

install: all
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	install -m0755 $(BINS) $(DESTDIR)$(BINDIR)
	install -m0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1
	install -m0644 $(MAN7) $(DESTDIR)$(MANDIR)/man7

uninstall:
	for t in $(TOOLS); do rm -f $(DESTDIR)$(BINDIR)/$$t $(DESTDIR)$(MANDIR)/man1/$$t.1; done
	rm -f $(MAN7:man/%=$(DESTDIR)$(MANDIR)/man7/%)

clean:
	rm -f $(BINS) $(UNIT) common/*/*.o cmd/*.o common/libqb.a
	rm -rf $(FUZZ_DIR)

.PHONY: all check check-sanitize clean demo bench deps fuzz fuzz-build install lint \
	uninstall
.PRECIOUS: common/%.o $(FUZZ_DIR)/%.o
