#!/bin/sh
# qb-reconcile -d and -l: each job's outcomes written once into an outcome
# directory (the custody of a run killed at any point and run again), a
# job not ended or not readable left for a later run, and a done or dead
# standing over a retry whatever order the results come in.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null 2>&1 || skip_all "jq is needed"
plan 34

cd "$T" || exit 1
fake_start --batch-seconds 0.3
i=1
while [ $i -le 6 ]; do
	case $i in
	4) extra=',"qb_fake":{"status":500}' ;;
	*) extra= ;;
	esac
	printf '{"id":"c%d","body":{"model":"m1","messages":[{"role":"user","content":"text %d"}]%s},"meta":{"n":%d}}\n' \
		$i $i "$extra" $i
	i=$((i + 1))
done >items.jsonl
mkdir b r o
qb-pack -d b -n 3 items.jsonl | qb-submit -q -l jobs.jsonl >/dev/null
check_exit 0 "-l: nothing ended yet" qb-reconcile -l jobs.jsonl -d o
is "$(wc -c <"$T/out" | tr -d ' '):$(ls o | wc -l | tr -d ' ')" "0:0" "-l: no outcome, no file for a running job"
like "$(cat "$T/err")" "jobs: 0 reconciled into o, 0 there already, 2 left for a later run" "-l: the jobs left are counted"
qb-poll -q -i jobs.jsonl -w --interval 0.1 -t 60 -d r >/dev/null
check_exit 1 "-l: the ended jobs" qb-reconcile -l jobs.jsonl -d o -r items.jsonl
cp "$T/out" first
is "$(ls o | wc -l | tr -d ' ')" 2 "-l: one outcome file per job"
is "$(cat o/*.outcomes.jsonl | jqr .id | sort | tr '\n' ' ')" "c1 c2 c3 c4 c5 c6 " "-l: every id once"
is "$(cat o/*.outcomes.jsonl | jqr 'select(.outcome=="retry") | .id')" c4 "-l: the 500 is a retry"
is "$(jqr 'select(.id=="c2") | .meta.n' first)" 2 "-l: -r joins the item's meta"
is "$(sort first | tr -d '\n' | wc -c)" "$(cat o/*.outcomes.jsonl | sort | tr -d '\n' | wc -c)" "-l: standard output has what the files hold"
like "$(cat "$T/err")" "6 requests: 5 done, 1 retry, 0 dead, 0 pending" "-l: the summary counts the requests of the jobs"
check_exit 0 "-l again" qb-reconcile -l jobs.jsonl -d o -r items.jsonl
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "-l again: nothing written twice"
like "$(cat "$T/err")" "0 reconciled into o, 2 there already" "-l again: both there already"

# The same through a pipe: job records on standard input, with -d.
mkdir o2
qb-poll -q -d r <jobs.jsonl >polled.jsonl 2>/dev/null
check_exit 1 "-d on job records piped in" qb-reconcile -d o2 polled.jsonl
is "$(cat o2/* | jqr .id | sort | tr '\n' ' ')" "c1 c2 c3 c4 c5 c6 " "-d: every id once"
check_exit 0 "-d: the same input again" qb-reconcile -d o2 polled.jsonl
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "-d again: nothing"

# A damaged results file leaves its job for a later run: no file.
mkdir o3
B=$(jqr 'select(.batch_id) | .batch_id' jobs.jsonl | head -n 1)
F=$(jqr "select(.batch_id==\"$B\") | .results[0]" jobs.jsonl)
cp "$F" saved
printf '{"custom_id":' >>"$F"
check_exit 1 "-d: a damaged results file" qb-reconcile -l jobs.jsonl -d o3
is "$(ls o3 | grep -c "$B")" 0 "-d: the damaged job gets no file"
like "$(cat "$T/err")" "job $B: not reconciled; a later run tries again" "-d: says so"
cp saved "$F"
qb-reconcile -q -l jobs.jsonl -d o3 >/dev/null
is "$(ls o3 | grep -c "$B")" 1 "-d: once mended, the next run writes it"
check_exit 64 "-l without -d" qb-reconcile -l jobs.jsonl
fake_stop

# A done stands over a retry whatever the order (a retry batch may end
# before the first batch's answers are read): both orders, one final.
printf '{"custom_id":"x1","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[]}}\n' >req.jsonl
printf '{"id":"batch_req_1","custom_id":"x1","response":{"status_code":500,"request_id":"r1","body":{"error":{"message":"boom","type":"server_error"}}},"error":null}\n' >err.jsonl
printf '{"id":"batch_req_2","custom_id":"x1","response":{"status_code":200,"request_id":"r2","body":{"id":"c","object":"chat.completion","model":"m1","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}},"error":null}\n' >ok.jsonl
qb-reconcile -r req.jsonl err.jsonl ok.jsonl >both 2>"$T/err"
is "$(jqr .outcome both | tr '\n' ' ')" "retry done " "retry first: the done is written after it"
like "$(cat "$T/err")" "1 retry stood over" "retry first: counted"
qb-reconcile -r req.jsonl ok.jsonl err.jsonl >both 2>"$T/err"
is "$(jqr .outcome both | tr '\n' ' ')" "done " "done first: the later retry is dropped"
# qb-pack: the retries of each batch pack into files of their own (an id
# may come back from each batch it ran in), the same files every time.
r() { printf '{"id":"%s","outcome":"retry","batch_id":"%s","endpoint":"/v1/chat/completions","body":{"model":"m1","messages":[{"role":"user","content":"%s"}]}}\n' "$1" "$2" "$1"; }
{ r y1 batch_A; r y2 batch_A; r y1 batch_B; r y3 batch_B; } >retries.jsonl
mkdir pk
check_exit 0 "pack: retries of two batches, one id in both" qb-pack -d pk retries.jsonl
is "$(jqr '"\(.requests)/\(.retries)"' "$T/out" | tr '\n' ' ')" "2/2 2/2 " "pack: one file per batch retried from"
jqr .sha256 "$T/out" >sha1
qb-pack -d pk retries.jsonl >again 2>/dev/null
is "$(jqr .sha256 again)" "$(cat sha1)" "pack: the same files again"
{ r y1 ""; r y1 ""; } >dup.jsonl
check_exit 1 "pack: a duplicate within one source is refused" qb-pack -d pk dup.jsonl
# Sorted by id within a batch's retries, and an id with a final outcome
# anywhere in the input left out: what the retry batch of batch_A gives
# back packs into the same file as batch_A's own retries.
{ r y3 batch_C; r y2 batch_C; r y1 batch_C; r y4 batch_C; } >c.jsonl
printf '{"id":"y4","outcome":"dead","batch_id":"batch_D"}\n' >d.jsonl
{ r y2 batch_D; r y1 batch_D; r y3 batch_D; } >>d.jsonl
check_exit 0 "pack: outcome files of two batches, one id dead" qb-pack -d pk c.jsonl d.jsonl
is "$(jqr .sha256 "$T/out" | sort -u | wc -l | tr -d ' '):$(jqr .requests "$T/out" | tr '\n' ' ')" "1:3 3 " \
    "pack: the same file from either batch, without the dead id"
is "$(cat "$(jqr .file "$T/out" | head -n 1)" | jqr .custom_id | tr '\n' ' ')" "y1 y2 y3 " "pack: sorted by id"
check_exit 0 "pack -n 2: the retries of one batch" qb-pack -n 2 -d pk c.jsonl
is "$(jqr .requests "$T/out")" 4 "pack -n 2: not split, only at the provider's caps"
done_testing
