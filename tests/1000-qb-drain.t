#!/bin/sh
# qb-drain on a spool directory (dir:) and on standard input (-Q -):
# enqueue, windows by size and by deadline, leases that expire and come
# back with a higher receive count, settlement per item, --commit, and
# two drainers racing on one spool.
. "$(dirname "$0")/lib.sh"
plan 47

S=$T/spool
items() { # items FIRST LAST: item records doc-FIRST..doc-LAST
	i=$1
	while [ "$i" -le "$2" ]; do
		printf '{"id":"doc-%d","body":{"n":%d},"meta":{"k":"v%d"}}\n' "$i" "$i" "$i"
		i=$((i + 1))
	done
}
count() { find "$1" -type f | wc -l | tr -d ' '; }

check_exit 0 "-h" qb-drain -h
like "$(cat "$T/out")" "usage: qb-drain" "-h prints the usage"
check_exit 64 "no queue is a usage error" env -u QB_QUEUE qb-drain -t 0
check_exit 66 "a missing spool" qb-drain -Q dir:"$T/nope" -t 0

items 1 5 >"$T/in"
check_exit 0 "--enqueue makes the spool" qb-drain --enqueue -Q dir:"$S" "$T/in"
is "$(count "$S/new")" 5 "five messages in new/"
is "$(count "$S/tmp")" 0 "nothing left in tmp/"

# A window by size: -n 3 returns at once with three items.
t0=$(date +%s%N)
check_exit 0 "a window of 3" qb-drain -Q dir:"$S" -n 3 -t 5 --visibility 1
t1=$(date +%s%N)
cp "$T/out" "$T/w1"
is "$(jqr .id "$T/w1" | tr '\n' ' ')" "doc-1 doc-2 doc-3 " "oldest first, ids from the bodies"
is "$(jqr '[.receives, .queue, .meta.k, .body.n]' "$T/w1" | head -n 1)" "[1,\"dir:$S\",\"v1\",1]" \
	"receives, queue added; meta and body carried"
ok_if "the size closed the window, not the deadline" $(( (t1 - t0) / 1000000 )) -lt 2000
is "$(count "$S/cur")" 3 "three leases in cur/"

# A window by deadline: only two are left; -t 0.5 closes it.
t0=$(date +%s%N)
check_exit 0 "a window by deadline" qb-drain -Q dir:"$S" -n 10 -t 0.5 --visibility 60
t1=$(date +%s%N)
cp "$T/out" "$T/w2"
is "$(jqr .id "$T/w2" | tr '\n' ' ')" "doc-4 doc-5 " "the other two"
ms=$(( (t1 - t0) / 1000000 ))
ok_if "the deadline closed it ($ms ms)" $ms -ge 450 -a $ms -lt 3000

# Leases expire and come back with a higher count (their own spool).
S=$T/spool2
items 1 4 | qb-drain --enqueue -Q dir:"$S"
check_exit 0 "a short lease" qb-drain -Q dir:"$S" -n 4 -t 0.2 --visibility 0.3
cp "$T/out" "$T/w1"
sleep 0.8
check_exit 0 "expired leases come back" qb-drain -Q dir:"$S" -n 3 -t 1 --visibility 60
is "$(jqr '[.id, .receives]' "$T/out" | tr '\n' ' ')" '["doc-1",2] ["doc-2",2] ["doc-3",2] ' \
	"same messages, receives 2"
cp "$T/out" "$T/w3"

# The old receipt of doc-1 is gone: settling it is reported, not fatal.
head -n 1 "$T/w1" | jq -c '. + {outcome:"done"}' >"$T/stale"
check_exit 1 "settling an expired lease" qb-drain --settle "$T/stale"
like "$(cat "$T/err")" "lease has expired" "reported as expired"
is "$(jqr .settled "$T/out")" expired "settled: expired"

# Settle a mix: doc-1 done, doc-2 retry (no delay), doc-3 dead.
{
	jq -c 'select(.id=="doc-1") + {outcome:"done"}' "$T/w3"
	jq -c 'select(.id=="doc-2") + {outcome:"retry"}' "$T/w3"
	jq -c 'select(.id=="doc-3") + {outcome:"dead"}' "$T/w3"
} >"$T/outcomes"
check_exit 0 "--settle a mix" qb-drain --settle --retry-delay 0 --dead-letter "$T/dl" "$T/outcomes"
is "$(jqr '[.id, .settled]' "$T/out" | tr '\n' ' ')" \
	'["doc-1","deleted"] ["doc-2","released"] ["doc-3","dead_lettered"] ' \
	"each item settled"
is "$(jqr '[.id, .outcome]' "$T/dl")" '["doc-3","dead"]' "the dead item is in the dead letter file"
is "$(count "$S/cur")" 0 "no lease is left"
check_exit 0 "the retried item comes back" qb-drain -Q dir:"$S" -n 5 -t 0.3
is "$(jqr '[.id, .receives]' "$T/out" | tr '\n' ' ')" '["doc-2",3] ["doc-4",2] ' \
	"doc-2 with receives 3, and doc-4 whose lease expired"

# A retry with a delay stays hidden until the delay has passed.
jq -c '. + {outcome:"retry"}' "$T/out" >"$T/retry"
check_exit 0 "retry with a backoff" qb-drain --settle --retry-delay 0.3 "$T/retry"
check_exit 0 "hidden during the backoff" qb-drain -Q dir:"$S" -n 5 -t 0.1
is "$(cat "$T/out")" "" "nothing to receive"
sleep 1.3	# receives 3: 0.3 * 2^2
check_exit 0 "back after the backoff" qb-drain -Q dir:"$S" -n 5 -t 0.3 --max-receives 3 --dead-letter "$T/dl"
is "$(jqr .id "$T/dl" | tr '\n' ' ')" "doc-3 doc-2 " "over --max-receives: dead-lettered at receive"
is "$(jqr .id "$T/out")" "doc-4" "the others handed on"
like "$(cat "$T/err")" "received 4 times" "and said so"

# --commit: the items are in the file, the messages are gone.
items 6 8 | qb-drain --enqueue -Q dir:"$S"
cur=$(count "$S/cur")
check_exit 0 "--commit -o file" qb-drain -Q dir:"$S" -n 10 -t 0.2 --commit -o "$T/window.jsonl"
is "$(jqr .id "$T/window.jsonl" | tr '\n' ' ')" "doc-6 doc-7 doc-8 " "the window file"
is "$(count "$S/new") $(count "$S/cur")" "0 $cur" "and gone from the spool"
qb-drain -Q dir:"$S" -n 10 -t 0 --commit 2>"$T/err" | cat >/dev/null
is "$(sed -n 1p "$T/err" | grep -c 'standard output a pipe')" 1 "--commit refused with a pipe on stdout"

# Two drainers racing on one spool never take the same message.
items 1000 1399 | qb-drain --enqueue -Q dir:"$T/race"
qb-drain -Q dir:"$T/race" -n 400 -t 1 >"$T/r1" &
p1=$!
qb-drain -Q dir:"$T/race" -n 400 -t 1 >"$T/r2" &
p2=$!
wait $p1
wait $p2
is "$(cat "$T/r1" "$T/r2" | jqr .id | sort | uniq | wc -l | tr -d ' ')" 400 "400 distinct items"
is "$(cat "$T/r1" "$T/r2" | wc -l | tr -d ' ')" 400 "none twice"

# Standard input: windows by size and deadline, lines carried as written.
items 1 5 | qb-drain -Q - -n 2 -t 5 >"$T/out"
check_same "$T/out" "$T/in" "-Q -: every item, as written"
{ items 1 1; sleep 1; items 2 2; } | qb-drain -Q - -n 10 -t 0.2 |
	while read -r l; do echo "$(date +%s%N) $l"; done >"$T/times"
a=$(sed -n 1p "$T/times" | cut -d' ' -f1)
b=$(sed -n 2p "$T/times" | cut -d' ' -f1)
ok_if "a quiet pipe does not hold a half-full window" $(( (b - a) / 1000000 )) -ge 600
printf '{"id":"a"}\nnot json\n[1]\n{"id":"b"}\n' >"$T/bad"
check_exit 1 "bad lines on stdin" sh -c "qb-drain -Q - <'$T/bad'"
is "$(jqr .id "$T/out" | tr '\n' ' ')" "a b " "good lines pass"
like "$(cat "$T/err")" "<stdin>:3: not a JSON object" "bad lines located"
# case 1 at the queue: an id twice is refused at --enqueue, or one item
# would be dropped later, after its message was deleted
qb-drain --enqueue -Q dir:"$T/dup" "$TOP/tests/data/cases/dup-id.jsonl" >"$T/out" 2>"$T/err"
is "$?:$(ls "$T/dup/new" | wc -l | tr -d ' ')" "1:1" "--enqueue: a duplicate id is refused, exit 1"
like "$(cat "$T/err")" 'dup-id.jsonl:2: duplicate id "a1"' "--enqueue: the duplicate named by line"
done_testing
