#!/bin/sh
# qb-reap against the provider emulator: stale OpenAI and Anthropic
# batches cancelled once, then ended by qb-poll and reconciled (done for
# what ran, retry for the rest); young batches and runs without
# --older-than left alone; cancels refused because the batch ended; jobs
# that will never finish (batch 404, result file 404 or 410) reaped and
# reconciled; --dry-run; bad lines; the ledger kept whole when another
# tool changes it during a run; exit statuses; the key never shown.
. "$(dirname "$0")/lib.sh"
plan 110

QB_MAX_RETRIES=1
export QB_MAX_RETRIES
# Batches take 100 s on a clock moved by hand: every state is reached at
# a known moment. OpenAI runs the requests from 10 s to 90 s, Anthropic
# from 0 to 90 s, one after the other: at 55 s two of four have run.
fake_start --batch-seconds 100
ANTHROPIC_BASE_URL=$FAKE_URL
ANTHROPIC_API_KEY=sk-test
export ANTHROPIC_BASE_URL ANTHROPIC_API_KEY

clock() { curl -s -X POST -d "{\"advance\":$1}" "$FAKE_URL/_qb/clock" >/dev/null; }
script() { printf '%s\n' "$@" | curl -s -X POST --data-binary @- "$FAKE_URL/_qb/script" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }
posts() { stat_of '[.requests|to_entries[]|select(.key|endswith("/cancel"))|.value[]]|add // 0'; }
gets() { stat_of '[.requests|to_entries[]|select(.key|test("^GET .*batches/\\{id\\}$"))|.value[]]|add // 0'; }
jobs() { jq -c 'select(.batch_id)' "$1"; }
# outcomes FILE: "id:outcome:status" of each outcome, sorted
outcomes() { jqr '.id+":"+.outcome+":"+.status' "$1" | sort | tr '\n' ' '; }
# item ID TEXT [EXTRA]: one item
item() {
	printf '{"id":"%s","body":{"model":"m1","max_tokens":16,"messages":[{"role":"user","content":"%s"}]%s}}\n' "$1" "$2" "${3:-}"
}
RFC='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
OLD=2020-01-01T00:00:00Z

cd "$T" || exit 1
mkdir b res
R=$(cd res && pwd -P)
for i in 1 2 3 4; do item "o$i" "openai $i"; done >o.jsonl
for i in 1 2 3 4; do item "a$i" "anthropic $i"; done >a.jsonl
qb-pack -d b o.jsonl | qb-submit -l led.jsonl >/dev/null 2>&1
qb-pack -p anthropic -d b a.jsonl | qb-submit -l led.jsonl >/dev/null 2>&1
OB=$(jobs led.jsonl | jqr 'select(.provider=="openai").batch_id')
AB=$(jobs led.jsonl | jqr 'select(.provider=="anthropic").batch_id')
is "$(jobs led.jsonl | jqr .status | tr '\n' ' ')" "validating in_progress " "two running batches in the ledger"
jobs led.jsonl >jobs.before

# options
check_exit 0 "-h" qb-reap -h
like "$(cat "$T/out")" "usage: qb-reap" "-h prints usage"
check_exit 64 "a bad --older-than" qb-reap --older-than soon led.jsonl
check_exit 64 "-i with operands" qb-reap -i led.jsonl jobs.before
check_exit 66 "-i on a missing ledger" qb-reap -i nonexistent.jsonl
check_exit 66 "a missing input file" qb-reap nonexistent.jsonl

# young batches, and no --older-than: nothing cancelled, nothing changed
cp led.jsonl led.before
check_exit 0 "--older-than 1h on batches just made" qb-reap -i led.jsonl --older-than 1h
check_same led.jsonl led.before "the ledger is unchanged"
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "nothing printed"
is "$(posts)" 0 "no cancel sent"
check_exit 0 "no --older-than" qb-reap -i led.jsonl
check_same led.jsonl led.before "the ledger is unchanged"
is "$(posts)" 0 "no cancel sent"

# --dry-run: GETs only, says what it would do, changes nothing
clock 55
g0=$(gets)
check_exit 0 "--dry-run --older-than 0" qb-reap -i led.jsonl --older-than 0 --dry-run
check_same led.jsonl led.before "the ledger's bytes are unchanged"
is "$(posts)" 0 "no POST"
is "$(($(gets) - g0))" 2 "one GET per job"
like "$(cat "$T/err")" "led.jsonl:2: $OB: would cancel" "says which OpenAI batch would be cancelled"
like "$(cat "$T/err")" "led.jsonl:4: $AB: would cancel" "and which Anthropic one"
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "nothing printed"
flock -o led.jsonl.poll.lock sh -c ': >held; while [ ! -e release ]; do sleep 0.05; done' >/dev/null 2>&1 &
hp=$!
while [ ! -e held ]; do sleep 0.05; done
check_exit 0 "--dry-run while a qb-poll -i or qb-reap -i holds the ledger's poll lock" env QB_LOCK_WAIT=0.2 qb-reap -i led.jsonl --dry-run
check_exit 75 "but not a real run" env QB_LOCK_WAIT=0.2 qb-reap -i led.jsonl
like "$(cat "$T/err")" "another qb-poll -i or qb-reap -i holds led.jsonl" "says so"
: >release
wait "$hp"

# stale batches: cancelled, recorded, not printed
check_exit 0 "--older-than 0: cancel both" qb-reap -i led.jsonl --older-than 0 -v
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "nothing printed (the batches end by themselves)"
is "$(stat_of '.requests["POST /v1/batches/{id}/cancel"]."200"')" 1 "the emulator saw POST /v1/batches/ID/cancel"
is "$(stat_of '.requests["POST /v1/messages/batches/{id}/cancel"]."200"')" 1 "and POST /v1/messages/batches/ID/cancel"
is "$(jobs led.jsonl | jqr '[.status,.ended]|@tsv' | tr '\n' ' ')" \
    "$(printf 'cancelling\tfalse canceling\tfalse ')" "ledger: cancelling / canceling, not ended"
is "$(jobs led.jsonl | jqr .cancel_requested_at | grep -c -E "$RFC")" 2 "both have cancel_requested_at (RFC 3339)"
is "$(jobs led.jsonl | jqr .batch_id | tr '\n' ' ')" "$OB $AB " "same jobs, same order"
is "$(grep -c '"intent"' led.jsonl)" 2 "intent lines kept"
like "$(cat "$T/err")" "$OB: cancel requested: cancelling" "-v notes the cancel"
ok_if "the poll lock beside the ledger" -e led.jsonl.poll.lock

check_exit 0 "again" qb-reap -i led.jsonl --older-than 0
is "$(posts)" 2 "not cancelled twice"

# qb-poll ends them; qb-reconcile: done for what ran, retry for the rest
clock 11
qb-poll -i led.jsonl -d res >ended.jsonl 2>/dev/null
is "$(jqr '[.status,.ended]|@tsv' ended.jsonl | tr '\n' ' ')" \
    "$(printf 'cancelled\ttrue ended\ttrue ')" "qb-poll -i ends both"
is "$(jqr .result.type "$R/$AB.output.jsonl" | sort | uniq -c | tr -s ' ' | tr '\n' ';')" \
    " 2 canceled; 2 succeeded;" "Anthropic results: two succeeded, two canceled"
qb-reconcile -r o.jsonl -r a.jsonl ended.jsonl >out.jsonl 2>/dev/null
is "$(outcomes out.jsonl)" \
    "a1:done:succeeded a2:done:succeeded a3:retry:canceled a4:retry:canceled o1:done:succeeded o2:done:succeeded o3:retry:canceled o4:retry:canceled " \
    "qb-reconcile: done for what ran, retry for the rest"
is "$(jqr 'select(.outcome=="retry")|.body.messages[0].content' out.jsonl | sort | tr '\n' ' ')" \
    "anthropic 3 anthropic 4 openai 3 openai 4 " "the retries are items again"

# a cancel refused because the batch has ended: a note, nothing changed
jq -c ".created_at=\"$OLD\"" jobs.before >stale.jsonl
check_exit 0 "--older-than 0 on ended batches" qb-reap -v --older-than 0 stale.jsonl
check_same "$T/out" stale.jsonl "printed unchanged"
is "$(stat_of '.requests["POST /v1/batches/{id}/cancel"]."409"') $(stat_of '.requests["POST /v1/messages/batches/{id}/cancel"]."400"')" \
    "1 1" "OpenAI answered 409 (a cancel is not retried on it), Anthropic 400"
like "$(cat "$T/err")" "$OB: not cancelled: it has ended (cancelled)" "-v: OpenAI's refusal is a note"
like "$(cat "$T/err")" "$AB: not cancelled: it has ended (ended)" "so is Anthropic's"

# a cancel refused for another reason
qb-pack -d b -e /v1/embeddings o.jsonl 2>/dev/null | qb-submit >run.jsonl 2>/dev/null
jq -c ".created_at=\"$OLD\"" run.jsonl >runold.jsonl
RB=$(jqr .batch_id run.jsonl)
script '{"on":"POST /v1/batches/*/cancel","status":400,"body":{"error":{"message":"no","type":"invalid_request_error","param":null,"code":null}}}'
check_exit 1 "a running batch whose cancel is refused" qb-reap --older-than 0 runold.jsonl
check_same "$T/out" runold.jsonl "printed unchanged"
like "$(cat "$T/err")" "runold.jsonl:1: $RB: cancel refused: POST /batches/$RB/cancel: HTTP 400: no" "reported"

# a batch the provider does not know, alone: a wrong key, project or base
# URL would say 404 to every batch too, so it is not reaped
jq -c 'select(.provider=="openai")|.batch_id="batch_gone"' jobs.before >gone.jsonl
check_exit 1 "a lone job whose batch is gone (404)" qb-reap gone.jsonl
check_same "$T/out" gone.jsonl "is not reaped"
like "$(cat "$T/err")" "not reaped: no other openai batch answered in this run" "says why"
# with another batch of that provider answering, or --reap-unknown: reaped,
# printed, reconciled
check_exit 0 "with a batch that answers" qb-reap run.jsonl gone.jsonl
is "$(jqr '[.batch_id,.ended]|@tsv' "$T/out" | tr '\n' ' ')" "$(printf '%s\tfalse batch_gone\ttrue ' "$RB")" "it is reaped"
g0=$(gets) p0=$(posts)
check_exit 0 "--reap-unknown: a job whose batch is gone (404)" qb-reap --reap-unknown gone.jsonl
cp "$T/out" reaped.jsonl
is "$(jqr '[.batch_id,.status,.ended]|@tsv' reaped.jsonl)" "$(printf 'batch_gone\tvalidating\ttrue')" \
    "ended, its status word kept"
like "$(jqr .reaped.reason reaped.jsonl)" "GET /batches/batch_gone: HTTP 404: No batch found" "reaped.reason says why"
ok_if "reaped.at is RFC 3339" -n "$(jqr .reaped.at reaped.jsonl | grep -E "$RFC")"
is "$(jqr 'del(.ended,.reaped)' reaped.jsonl)" "$(jqr 'del(.ended)' gone.jsonl)" "otherwise unchanged"
is "$(($(gets) - g0))" 1 "one GET"
is "$(posts)" "$p0" "no cancel (no --older-than)"
qb-reconcile -r o.jsonl reaped.jsonl >out.jsonl 2>/dev/null
is "$(outcomes out.jsonl)" "o1:retry:missing o2:retry:missing o3:retry:missing o4:retry:missing " \
    "qb-reconcile: each request exactly one outcome, retry"
jq -c '.created_at="2020-01-01T00:00:00Z"' gone.jsonl >gone-stale.jsonl
check_exit 0 "a stale job whose batch is gone: the cancel's 404 reaps it" qb-reap --reap-unknown --older-than 0 gone-stale.jsonl
like "$(jqr '[.ended,.reaped.reason]|@tsv' "$T/out")" "$(printf 'true\tPOST /batches/batch_gone/cancel: HTTP 404')" \
    "reaped"

# a result file that is gone (qb-poll's "error"): reaped once a GET shows
# the batch is there; the results it has are done, the rest retry
jq -c 'select(.provider=="openai")|.ended=false|.error={message:"errors file file-x: GET /files/file-x/content: HTTP 404: No such File object",http_status:404}' \
    ended.jsonl >f404.jsonl
# A 404 that passes is no reason: the batch has ended and its files answer.
check_exit 0 "a job with a 404 fetch error that has passed" qb-reap -v f404.jsonl
is "$(jqr .ended "$T/out")" false "not reaped: the results are paid for"
like "$(cat "$T/err")" "its result files answer now; qb-poll fetches them" "says so"
# From here on the emulator has lost every result file.
script '{"on":"GET /v1/files/*/content","status":404,"times":-1,"body":{"error":{"message":"No such File object","type":"invalid_request_error","param":null,"code":null}}}'
g0=$(gets)
check_exit 0 "a job with a 404 fetch error" qb-reap -v f404.jsonl
cp "$T/out" f404r.jsonl
is "$(jqr '[.ended,.status,.error.http_status,(.results|length)]|@tsv' f404r.jsonl)" "$(printf 'true\tcancelled\t404\t1')" \
    "ended; status, error and results kept"
like "$(jqr .reaped.reason f404r.jsonl)" "HTTP 404): errors file file-x" "the reason quotes the error"
is "$(($(gets) - g0)):$(posts)" "1:$(posts)" "one GET of the batch (and one of its file), no cancel"
qb-reconcile -r o.jsonl f404r.jsonl >out.jsonl 2>/dev/null
is "$(outcomes out.jsonl)" "o1:done:succeeded o2:done:succeeded o3:retry:canceled o4:retry:canceled " \
    "qb-reconcile: done where a result file was fetched, retry for the rest"
jq -c '.error.http_status=410' f404.jsonl >f410.jsonl
check_exit 0 "410" qb-reap f410.jsonl
is "$(jqr .ended "$T/out")" true "reaped too"
jq -c '.error.http_status=500' f404.jsonl >f500.jsonl
check_exit 0 "a 500 fetch error" qb-reap f500.jsonl
check_same "$T/out" f500.jsonl "is not a reason to reap"

# end to end: qb-poll -i records a 404 download; qb-reap -i reaps it
for i in 5 6; do item "o$i" "openai $i"; done >o2.jsonl
qb-pack -d b o2.jsonl >b2pack.jsonl 2>/dev/null
qb-submit -l led2.jsonl b2pack.jsonl >/dev/null 2>&1
B2=$(jobs led2.jsonl | jqr .batch_id)
clock 101
script '{"on":"GET /v1/files/*/content","status":404,"body":{"error":{"message":"No such File object","type":"invalid_request_error","param":null,"code":null}}}'
qb-poll -i led2.jsonl -d res >/dev/null 2>&1
is "$(jobs led2.jsonl | jqr '[.status,.ended,.error.http_status]|@tsv')" "$(printf 'completed\tfalse\t404')" \
    "qb-poll -i: completed, not ended, a 404 error"
cat jobs.before >>led2.jsonl
check_exit 0 "qb-reap -i on that ledger" qb-reap -i led2.jsonl
cp "$T/out" reaped2.jsonl
is "$(jqr .batch_id reaped2.jsonl)" "$B2" "prints only the job reaped"
is "$(jobs led2.jsonl | jqr '[.batch_id,.ended]|@tsv' | tr '\n' ' ')" \
    "$(printf '%s\ttrue %s\tfalse %s\tfalse ' "$B2" "$OB" "$AB")" "the ledger: reaped, the others untouched"
is "$(jobs led2.jsonl | sed -n 2,3p)" "$(cat jobs.before)" "byte for byte"
is "$(grep -c . led2.jsonl)" 4 "every line kept (the intent too)"
qb-reconcile -r o2.jsonl reaped2.jsonl >out.jsonl 2>/dev/null
is "$(outcomes out.jsonl)" "o5:retry:missing o6:retry:missing " "qb-reconcile: every request one outcome"
# the retries pack into the very same file; the ledger's batch for it ran,
# but its job was reaped (its results are gone): submitted again
jq -c 'select(.outcome == "retry")' out.jsonl | qb-pack -d b >rpack.jsonl 2>/dev/null
is "$(jqr '[.sha256 == input.sha256, .retries] | @tsv' rpack.jsonl b2pack.jsonl)" "$(printf 'true\t2')" \
    "the retries of a reaped job pack into the same file"
c0=$(stat_of .batches_created)
check_exit 0 "qb-submit with the ledger" qb-submit -v -l led2.jsonl rpack.jsonl
like "$(cat "$T/err")" "was reaped, its results gone; its retries are submitted again" "submits them again"
is "$(stat_of .batches_created)" "$((c0 + 1))" "one new batch"
check_exit 0 "the first pack record again" qb-submit -l led2.jsonl b2pack.jsonl
is "$(stat_of .batches_created)" "$((c0 + 1))" "is skipped: no batch"
check_exit 0 "qb-reap -i again" qb-reap -i led2.jsonl
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "a reaped job is not printed again"

# without -i: every job read, in order; intent lines skipped
{ cat led.before; cat gone.jsonl; } >mixed.jsonl
check_exit 0 "without -i" qb-reap mixed.jsonl
is "$(jqr .batch_id "$T/out" | tr '\n' ' ')" "$OB $AB batch_gone " "every job printed, in input order"
is "$(sed -n 1,2p "$T/out")" "$(jobs led.before)" "unchanged jobs byte for byte"

# bad lines: reported with FILE:LINE, the rest processed
{ echo 'not json'; echo '{"status":"x"}'; cat gone.jsonl; } >bad.jsonl
check_exit 1 "bad lines" qb-reap --reap-unknown bad.jsonl
like "$(cat "$T/err")" "bad.jsonl:1: " "line 1 reported"
like "$(cat "$T/err")" "bad.jsonl:2: expected string for \"batch_id\"" "line 2 reported"
is "$(jqr '[.batch_id,.ended]|@tsv' "$T/out")" "$(printf 'batch_gone\ttrue')" "the good line reaped"
check_exit 1 "bad lines on stdin" sh -c 'cat bad.jsonl | qb-reap'
like "$(cat "$T/err")" "<stdin>:2: " "named <stdin>"

# a temporary failure: exit 75, the job printed unchanged
script '{"on":"GET /v1/batches/*","status":503,"times":2}'
check_exit 75 "503 past the retries" qb-reap run.jsonl
check_same "$T/out" run.jsonl "printed unchanged"

# the ledger changed by another tool during the run is kept whole
mk() { qb-pack -d b -e "$1" o2.jsonl 2>/dev/null | qb-submit 2>/dev/null | jq -c ".created_at=\"$OLD\""; }
mk /v1/completions >led3.jsonl
B3=$(jqr .batch_id led3.jsonl)
script '{"on":"POST /v1/batches/*/cancel","delay":1}'
qb-reap -i led3.jsonl --older-than 0 >reap3.out 2>reap3.err &
rp=$!
sleep 0.4
clock 95
qb-poll -i led3.jsonl -d res >/dev/null 2>&1
mk /v1/responses >>led3.jsonl
wait $rp
is "$?" 0 "qb-reap -i while qb-poll -i and an append change the ledger"
is "$(sed -n 1p led3.jsonl | jqr '[.batch_id,.status,.ended,has("cancel_requested_at"),has("finalizing_at")]|@tsv')" \
    "$(printf '%s\tcancelling\tfalse\ttrue\ttrue' "$B3")" "the cancel applied over qb-poll's update"
is "$(grep -c . led3.jsonl)" 2 "the job appended meanwhile is kept"

# keys: from a file, never shown
echo sk-test >key
check_exit 0 "--key-file" env -u OPENAI_API_KEY qb-reap -vv --reap-unknown --key-file key gone.jsonl
unlike "$(cat "$T/out" "$T/err")" "sk-test" "the key is in no output"
echo sk-wrong-SECRET123 >badkey
check_exit 77 "a refused key" qb-reap -vv --key-file badkey run.jsonl
unlike "$(cat "$T/out" "$T/err")" "SECRET123" "the refused key is in no output either"
check_exit 78 "no key" env -u OPENAI_API_KEY qb-reap run.jsonl
like "$(cat "$T/err")" "OPENAI_API_KEY is not set" "says which variable"

done_testing
