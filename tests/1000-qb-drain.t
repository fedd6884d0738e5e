#!/bin/sh
# qb-drain on a spool directory (dir:) and on standard input (-Q -):
# enqueue, windows by size and by deadline, leases that expire and come
# back with a higher receive count, settlement per item, --commit, and
# two drainers racing on one spool.
. "$(dirname "$0")/lib.sh"
plan 91

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
# The outcome's own "error" is kept; the settle's failure is "settle_error".
head -n 1 "$T/w1" | jq -c '. + {outcome:"retry", error:{code:"server_error"}}' >"$T/stale"
check_exit 1 "settling an expired lease" qb-drain --settle "$T/stale"
like "$(cat "$T/err")" "lease has expired" "reported as expired"
is "$(jqr .settled "$T/out")" expired "settled: expired"
is "$(jqr '[.error, .settle_error]' "$T/out")" '[{"code":"server_error"},"the lease has expired"]' \
	"the outcome's error kept, the settle's failure apart"
cp "$T/out" "$T/stale2"
check_exit 1 "a settled record settled again" qb-drain --settle "$T/stale2"
is "$(grep -o '"settle_error"' "$T/out" | wc -l | tr -d ' '):$(grep -o '"settled"' "$T/out" | wc -l | tr -d ' ')" \
	"1:1" "settled and settle_error replaced, not repeated"

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

# Case 16 on the queue: an account-level error (qb-reconcile marks it
# account_error) is a retry that is not the item's fault; --max-receives
# releases it instead of making it dead.
S=$T/acct
printf '{"id":"z2","params":{"model":"m1","max_tokens":5,"messages":[{"role":"user","content":"q"}]}}\n' |
	qb-drain --enqueue -Q dir:"$S"
qb-drain -Q dir:"$S" -t 0.2 >"$T/zw"
sed -n 2p "$TOP/tests/data/cases/anthropic-result-types.jsonl" >"$T/z2.res"
qb-reconcile -r "$T/zw" "$T/z2.res" >"$T/zo" 2>/dev/null
is "$?:$(jqr '[.outcome, .account_error, .receives]' "$T/zo")" '69:["retry",true,1]' \
	"account error: qb-reconcile marks z2's retry account_error (exit 69)"
check_exit 0 "account error: settled with --max-receives 1" \
	qb-drain -v --settle --retry-delay 0 --max-receives 1 --dead-letter "$T/zdl" "$T/zo"
is "$(jqr .settled "$T/out")" released "account error: released, not dead-lettered"
is "$(cat "$T/zdl")" "" "account error: nothing in the dead letter"
like "$(cat "$T/err")" "z2: received 1 times, --max-receives 1 not applied: not the item's fault (account_error" \
	"account error: -v says why"
is "$(jqr .error.message "$T/out")" "Your credit balance is too low" "account error: the outcome's error kept"
check_exit 0 "account error: z2 comes back" qb-drain -Q dir:"$S" -t 0.2
is "$(jqr '[.id, .receives]' "$T/out")" '["z2",2]' "account error: for another try"

# The batch-level codes: token_limit_exceeded (qb-providers(7) OPENAI Limits) and batch_failed
# are released too; any other retry at --max-receives is dead.
S=$T/codes
items 1 5 | qb-drain --enqueue -Q dir:"$S"
qb-drain -Q dir:"$S" -t 0.2 >"$T/cw"
{
	jq -c 'select(.id=="doc-1") + {outcome:"retry", error:{type:"invalid_request_error", code:"token_limit_exceeded"}}' "$T/cw"
	jq -c 'select(.id=="doc-2") + {outcome:"retry", error:{code:"batch_failed"}}' "$T/cw"
	jq -c 'select(.id=="doc-3") + {outcome:"retry", error:{code:"server_error"}}' "$T/cw"
	jq -c 'select(.id=="doc-4") + {outcome:"retry", account_error:false, error:{code:"rate_limit_exceeded"}}' "$T/cw"
	jq -c 'select(.id=="doc-5") + {outcome:"retry", error:"token_limit_exceeded"}' "$T/cw"
} >"$T/co"
check_exit 0 "batch-level retries at --max-receives" \
	qb-drain --settle --retry-delay 0 --max-receives 1 --dead-letter "$T/cdl" "$T/co"
is "$(jqr '[.id, .settled]' "$T/out" | tr '\n' ' ')" \
	'["doc-1","released"] ["doc-2","released"] ["doc-3","dead_lettered"] ["doc-4","dead_lettered"] ["doc-5","dead_lettered"] ' \
	"token_limit_exceeded and batch_failed released; the item's own retries dead"
is "$(jqr .id "$T/cdl" | tr '\n' ' ')" "doc-3 doc-4 doc-5 " "the dead ones in the dead letter"
is "$(cat "$T/err")" "" "nothing on stderr without -v"
qb-drain -Q dir:"$S" -t 0.2 >"$T/cw2"
jq -c '. + {outcome:"retry", error:{code:"token_limit_exceeded"}}' "$T/cw2" >"$T/co2"
check_exit 0 "-v at the second receive" \
	qb-drain -v --settle --retry-delay 0 --max-receives 1 --dead-letter "$T/cdl" "$T/co2"
like "$(cat "$T/err")" "doc-1: received 2 times, --max-receives 1 not applied: not the item's fault (token_limit_exceeded: the batch was refused" \
	"-v names the code and why"
like "$(cat "$T/err")" "doc-2: received 2 times" "for each item"

# Case 17 end to end: a batch failed for the enqueued-token limit; its
# items are settled as retries, none dead, the other batch's done.
if command -v python3 >/dev/null 2>&1; then
	fake_start --batch-seconds 0.5 --enqueued-token-limit 45
	S=$T/tok
	i=1
	while [ $i -le 10 ]; do
		printf '{"id":"t%02d","body":{"model":"m1","messages":[{"role":"user","content":"text %02d about work"}]}}\n' $i $i
		i=$((i + 1))
	done | qb-drain --enqueue -Q dir:"$S"
	mkdir -p "$T/tb" "$T/tr"
	qb-drain -Q dir:"$S" -n 10 -t 0.2 -o "$T/tw"
	qb-pack -d "$T/tb" -n 5 "$T/tw" | qb-submit -q -l "$T/tjobs" >/dev/null
	qb-poll -w --interval 0.1 --timeout 60 -d "$T/tr" "$T/tjobs" 2>/dev/null |
		qb-reconcile -r "$T/tw" 2>/dev/null >"$T/to"
	is "$(jqr 'select(.outcome=="retry") | .error.code' "$T/to" | sort | uniq -c | awk '{print $1, $2}')" \
		"5 token_limit_exceeded" "token limit: five retries for the token limit"
	check_exit 0 "token limit: settled with --max-receives 1" \
		qb-drain --settle --max-receives 1 --dead-letter "$T/tdl" "$T/to"
	is "$(jqr .settled "$T/out" | sort | uniq -c | awk '{print $1, $2}' | tr '\n' ' ')" \
		"5 deleted 5 released " "token limit: the refused batch's items released, none dead"
	is "$(count "$S/new") $(count "$S/cur") $(wc -c <"$T/tdl" | tr -d ' ')" "0 5 0" \
		"token limit: five leased for the backoff, nothing dead-lettered"
	fake_stop
else
	for i in 1 2 3 4; do skip "python3 is needed for the provider emulator"; done
fi

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
# dup-id.jsonl at the queue: an id twice is refused at --enqueue, or one item
# would be dropped later, after its message was deleted
qb-drain --enqueue -Q dir:"$T/dup" "$TOP/tests/data/cases/dup-id.jsonl" >"$T/out" 2>"$T/err"
is "$?:$(ls "$T/dup/new" | wc -l | tr -d ' ')" "1:1" "--enqueue: a duplicate id is refused, exit 1"
like "$(cat "$T/err")" 'dup-id.jsonl:2: duplicate id "a1"' "--enqueue: the duplicate named by line"
# What the tools after qb-drain refuse is refused before: a line nested
# past 512 levels at --enqueue, by line; a message (put there by another
# producer) whose id qb-pack would refuse is not handed on, and stays.
{ items 1 1; python3 -c 'n = 600; print("{\"id\":\"deep\",\"body\":{\"x\":" + "[" * n + "]" * n + "}}")'
  items 3 3; } >"$T/deep"
check_exit 1 "--enqueue: a line nested 600 levels" qb-drain --enqueue -Q dir:"$T/deepq" "$T/deep"
like "$(cat "$T/err")" "deep:2: nested deeper than 512 levels" "refused by line"
is "$(ls "$T/deepq/new" | wc -l | tr -d ' ')" 2 "the other two enqueued"
printf '{"id":"not a valid id","body":{"n":1}}\n' >"$T/deepq/new/zzz-other,R0"
check_exit 1 "a message with a bad id" qb-drain -Q dir:"$T/deepq" -n 10 -t 0.2 --commit -o "$T/w.jsonl"
like "$(cat "$T/err")" "message zzz-other: " "the message named"
is "$(jqr .id "$T/w.jsonl" | tr '\n' ' '):$(ls "$T/deepq/cur" | cut -d, -f1)" "doc-1 doc-3 :zzz-other" \
	"the others handed on and deleted; it stays leased"
# --enqueue is all or nothing per input: a cut gzip stream enqueues none
# of the lines it could read; the whole file then enqueues each id once,
# and enqueuing it again adds no copy (-v says so).
items 1 2000 | gzip >"$T/all.gz"
head -c "$(( $(wc -c <"$T/all.gz") / 2 ))" "$T/all.gz" >"$T/cut.gz"
check_exit 74 "--enqueue of a cut .gz" qb-drain --enqueue -Q dir:"$T/aon" "$T/cut.gz"
like "$(cat "$T/err")" "cut.gz: nothing of it enqueued" "said so"
is "$(count "$T/aon")" 0 "nothing enqueued, nothing left in tmp/"
check_exit 0 "--enqueue of the whole file" qb-drain --enqueue -Q dir:"$T/aon" "$T/all.gz"
cat "$T/aon"/new/* | jqr .id | sort >"$T/ids"
is "$(wc -l <"$T/ids" | tr -d ' '):$(uniq -d "$T/ids" | wc -l | tr -d ' ')" "2000:0" \
	"exactly 2000 messages, each id once"
qb-drain -Q dir:"$T/aon" -n 5 -t 0.2 >/dev/null
check_exit 0 "--enqueue of it again" qb-drain --enqueue -v -Q dir:"$T/aon" "$T/all.gz"
is "$(count "$T/aon/new"):$(count "$T/aon/cur"):$(count "$T/aon/tmp")" "1995:5:0" \
	"no second copy, whether waiting or leased"
like "$(cat "$T/err")" 'all.gz:1: id "doc-1" is already queued; skipped' "-v names the skipped"
# --strict stops at the first bad line with 65 and reads no further:
# --enqueue keeps the inputs before it and stages nothing of its own or
# of those after it; --settle settles the records before it (left
# leased, a done item would come back and be paid for again); on standard
# input the lines before it are passed on.
items 1 2 >"$T/st1"
printf '{"id":"st3"}\nnot json\n' >"$T/st2"
items 4 4 >"$T/st4"
check_exit 65 "--enqueue --strict: a bad line" \
	qb-drain --enqueue --strict -Q dir:"$T/strict" "$T/st1" "$T/st2" "$T/st4"
is "$(cat "$T/strict"/new/* | jqr .id | sort | tr '\n' ' '):$(count "$T/strict/tmp")" \
	"doc-1 doc-2 :0" "--enqueue --strict: the input before it enqueued, nothing after"
printf '{"id":"bad id"}\n' >"$T/st5"
check_exit 65 "--enqueue --strict: a bad id" \
	qb-drain --enqueue --strict -Q dir:"$T/strict" "$T/st4" "$T/st5" "$T/st4"
is "$(count "$T/strict/new"):$(count "$T/strict/tmp")" "3:0" \
	"--enqueue --strict: the first input enqueued, the second and third not"
qb-drain -Q dir:"$T/strict" -n 20 -t 0.2 >"$T/stw"
{
	jq -c '. + {outcome:"done"}' "$T/stw"
	echo 'not json'
} >"$T/sto"
check_exit 65 "--settle --strict: a bad line" qb-drain --settle --strict "$T/sto"
is "$(wc -l <"$T/out" | tr -d ' '):$(count "$T/strict/cur")" "3:0" \
	"--settle --strict: the records before it are settled, none left leased"
check_exit 65 "-Q - --strict: a bad line" sh -c "qb-drain -Q - --strict -t 5 <'$T/bad'"
is "$(jqr .id "$T/out")" "a" "-Q - --strict: the line before it passed on"
done_testing
