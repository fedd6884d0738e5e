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

.PHONY: all check clean demo bench deps install lint uninstall
.PRECIOUS: common/%.o
