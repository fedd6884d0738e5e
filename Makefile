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
COMMON_SRC = $(wildcard common/*.c)
COMMON_OBJ = $(COMMON_SRC:.c=.o)
HDRS = $(wildcard common/*.h)
UNIT_SRC = $(wildcard tests/unit/*.c)
PROVEFLAGS ?=
PROVIDER ?= openai
UNIT = $(UNIT_SRC:.c=)
MAN1 = $(TOOLS:%=man/%.1)

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

all: $(BINS)

common/libqb.a: $(COMMON_OBJ)
	rm -f $@
	$(AR) rcs $@ $(COMMON_OBJ)

common/%.o: common/%.c $(HDRS)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

cmd/%: cmd/%.c common/libqb.a $(HDRS)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< common/libqb.a $(LDLIBS)

tests/unit/%: tests/unit/%.c common/libqb.a $(HDRS)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< common/libqb.a $(LDLIBS)

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

demo: deps all
	@PROVIDER=$(PROVIDER) sh scripts/demo

bench: deps all
	python3 scripts/bench/pack
	python3 scripts/bench/reconcile
	python3 scripts/bench/drain

lint:
	mandoc -Tlint -W warning man/*.1 man/qb.7

install: all
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	install -m0755 $(BINS) $(DESTDIR)$(BINDIR)
	install -m0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1
	install -m0644 man/qb.7 $(DESTDIR)$(MANDIR)/man7

uninstall:
	for t in $(TOOLS); do rm -f $(DESTDIR)$(BINDIR)/$$t $(DESTDIR)$(MANDIR)/man1/$$t.1; done
	rm -f $(DESTDIR)$(MANDIR)/man7/qb.7

clean:
	rm -f $(BINS) $(UNIT) common/*.o common/libqb.a

.PHONY: all check check-sanitize clean demo bench deps install lint uninstall
.PRECIOUS: common/%.o
