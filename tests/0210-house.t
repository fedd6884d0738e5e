#!/bin/sh
# The house rules of common/ (common/README): each folder includes only
# itself and the folders its README allows, modules include each other in
# one direction, the tools that never talk to a provider do not link
# libcurl, only base/msg.c ends the process, no function is over 100
# lines, and comments cite nothing outside the repository.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1
ROOMS=$(for d in common/*/; do basename "$d"; done)
plan $(($(echo $ROOMS | wc -w) + 6))

# Each room's includes, against the "May include:" line of its README.
for r in $ROOMS; do
	may=$(sed -n 's/^May include: *//p' "common/$r/README" 2>/dev/null)
	bad=
	for f in common/$r/*.[ch]; do
		for inc in $(sed -n 's|^#include "\([a-z0-9_]*\)/[a-z0-9_]*\.h".*|\1|p' "$f"); do
			case " $r $may " in
			*" $inc "*) ;;
			*) bad="$bad $f:$inc" ;;
			esac
		done
		if grep -q '^#include "[a-z0-9_]*\.h"' "$f"; then
			bad="$bad $f:unqualified"
		fi
	done
	is "${may:+yes}$bad" yes "common/$r includes only: $may"
done

# The module graph: a module is a .c and the .h of its name (or a header
# alone); it depends on the modules whose headers it includes.
edges=$(for f in common/*/*.[ch]; do
	m=${f%.[ch]}
	sed -n 's|^#include "\([a-z0-9_]*/[a-z0-9_]*\)\.h".*|\1|p' "$f" |
	while read -r h; do
		[ "common/$h" = "$m" ] || echo "$m common/$h"
	done
done)
loop=$(echo "$edges" | tsort 2>&1 >/dev/null | grep -v '^tsort: -: input contains a loop:$' | tr '\n' ' ')
is "$loop" "" "the modules of common/ include each other without a cycle"

n=0
for t in qb-pack qb-reconcile; do
	n=$((n + $(nm "cmd/$t" | grep -c ' U curl_')))
done
is "$n" 0 "qb-pack and qb-reconcile do not link libcurl"

got=$(grep -rn 'exit(\|qb_die' common --include='*.c' --include='*.h' | grep -v '^common/base/msg\.[ch]:' | wc -l)
is "$got" 0 "only base/msg.c ends the process in common/"

# A function is its body from a "{" in column 1 to the "}" in column 1.
long=$(awk 'FNR == 1 { open = 0 }
	/^{/ { open = FNR; name = prev }
	/^}/ && open { if (FNR - open > 100) print FILENAME ":" open ": " name " " FNR - open; open = 0 }
	{ prev = $0 }' common/*/*.c cmd/*.c)
is "$long" "" "no function in common/ or cmd/ is over 100 lines"

cites=$(grep -rnE 'PROVIDERS\.md|DESIGN\.md|GEMINI\.md|STYLE\.md|\.\./shared|\(case [0-9]+\)|\bcase [0-9]+[^0-9:]' \
	common cmd tests/fake/README 2>/dev/null | wc -l)
is "$cites" 0 "comments cite only what is in the repository"

ok_if "every room has a README" "$(ls common/*/README | wc -l)" = "$(echo $ROOMS | wc -w)"
done_testing
