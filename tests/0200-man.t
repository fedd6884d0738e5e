#!/bin/sh
# The manual: every page lints clean under mandoc, and each tool's usage
# (from -h) matches its page's SYNOPSIS word for word.
. "$(dirname "$0")/lib.sh"
command -v mandoc >/dev/null 2>&1 || skip_all "mandoc is absent (apt-get install mandoc)"
TOOLS="qb-pack qb-submit qb-poll qb-reconcile qb-reap qb-drain"
plan 14
for p in qb.7 qb-providers.7; do
	out=$(mandoc -Tlint -W warning "$TOP/man/$p" 2>&1)
	is "$out" "" "$p lints clean"
done
for t in $TOOLS; do
	out=$(mandoc -Tlint -W warning "$TOP/man/$t.1" 2>&1)
	is "$out" "" "$t.1 lints clean"
	# SYNOPSIS as rendered, against "usage: ..." from -h, both squeezed.
	syn=$(mandoc -Tascii -O width=200 "$TOP/man/$t.1" | sed "s/.\x08//g" |
		sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | sed '1d;$d' | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	use=$("$t" -h | sed -n '1,/^ *-/p' | sed '$d' | sed 's/^usage: //' | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	is "$syn" "$use" "$t: SYNOPSIS matches -h"
done
done_testing
