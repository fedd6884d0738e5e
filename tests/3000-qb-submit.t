#!/bin/sh
# qb-submit against the provider emulator: job records, the ledger, keys,
# retries (scripted 5xx and 429), create timeouts, permanent refusals.
. "$(dirname "$0")/lib.sh"
plan 70

QB_MAX_RETRIES=2
export QB_MAX_RETRIES
fake_start --batch-seconds 1

# script RULE...: add canned answers to the running emulator
script() { printf '%s\n' "$@" | curl -s -X POST --data-binary @- "$FAKE_URL/_qb/script" >/dev/null; }
# reset: forget files, batches, counters and scripted rules
reset() { curl -s -X POST "$FAKE_URL/_qb/reset" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }

cd "$T" || exit 1
mkdir b
printf '%s\n' \
    '{"id":"a1","body":{"model":"m1","messages":[{"role":"user","content":"I love dogs"}]}}' \
    '{"id":"a2","body":{"model":"m1","messages":[{"role":"user","content":"my job"}]}}' \
    '{"id":"a3","body":{"model":"m2","messages":[{"role":"user","content":"cats"}]}}' >items.jsonl
qb-pack -d b items.jsonl >pack.jsonl 2>/dev/null
head -n 1 pack.jsonl >one.jsonl
F1=$(jqr .file one.jsonl)
S1=$(jqr .sha256 one.jsonl)

# options
check_exit 0 "-h" qb-submit -h
like "$(cat "$T/out")" "usage: qb-submit" "-h prints usage"
check_exit 0 "-V" qb-submit -V
like "$(cat "$T/out")" "qb-submit 0." "-V prints the version"
check_exit 64 "unknown option" qb-submit --nope
check_exit 64 "unknown provider" qb-submit -p nope one.jsonl

# one submit
check_exit 0 "submit one pack record" qb-submit -l led.jsonl one.jsonl
cp "$T/out" job.jsonl
is "$(wc -l <job.jsonl | tr -d ' ')" 1 "one job record"
is "$(jqr '[.provider,.status,.ended,.file,.sha256,.model,.requests,.endpoint]|@tsv' job.jsonl)" \
    "$(printf 'openai\tvalidating\tfalse\t%s\t%s\tm1\t2\t/v1/chat/completions' "$F1" "$S1")" \
    "provider, status, ended and the pack record's keys"
like "$(jqr .batch_id job.jsonl)" "batch_" "batch_id"
like "$(jqr .input_file_id job.jsonl)" "file-" "input_file_id"
is "$(jqr '.bytes == input.bytes' job.jsonl one.jsonl)" true "unknown keys carried (bytes)"
is "$(jqr '.counts|[.total,.completed,.failed]|@tsv' job.jsonl)" "$(printf '0\t0\t0')" "counts"
is "$(jqr '.results|length' job.jsonl)" 0 "results empty"
ok_if "created_at is RFC 3339 UTC" -n "$(jqr .created_at job.jsonl | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$')"
ok_if "expires_at is RFC 3339 UTC" -n "$(jqr .expires_at job.jsonl | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$')"
check_same led.jsonl job.jsonl "the ledger holds the printed record"
is "$(cat "$T/err")" "qb-submit: 1 submitted, 0 skipped (already in ledger), 0 rejected" "summary line"
B1=$(jqr .batch_id job.jsonl)
is "$(curl -s -H 'Authorization: Bearer sk-test' "$OPENAI_BASE_URL/batches/$B1" | jqr .metadata.qb_sha256)" "$S1" \
    "batch metadata carries the file's sha256"

# the ledger makes a re-run safe
check_exit 0 "re-run with the ledger" qb-submit -l led.jsonl one.jsonl
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "nothing printed for a skipped file"
like "$(cat "$T/err")" "already submitted as $B1" "skip names the batch"
like "$(cat "$T/err")" "0 submitted, 1 skipped (already in ledger)" "summary counts the skip"
is "$(stat_of .uploads)" 1 "no second upload"
is "$(wc -l <led.jsonl | tr -d ' ')" 1 "ledger unchanged"
check_exit 0 "the whole pack: only the new file goes" qb-submit -l led.jsonl pack.jsonl
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "one new job"
is "$(wc -l <led.jsonl | tr -d ' ')" 2 "ledger has both"
check_exit 0 "the same file twice in one run without a ledger" qb-submit one.jsonl one.jsonl
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "submitted once"

# a ledger locked by another process for too long: nothing uploaded
n0=$(stat_of .uploads)
flock -o led.jsonl sh -c ': >locked; while [ ! -e unlock ]; do sleep 0.05; done' >/dev/null 2>&1 &
lockpid=$!
while [ ! -e locked ]; do sleep 0.05; done
check_exit 75 "ledger locked past QB_LOCK_WAIT" env QB_LOCK_WAIT=0.3 qb-submit -l led.jsonl pack.jsonl
like "$(cat "$T/err")" "led.jsonl is locked by another process" "says so"
is "$(stat_of .uploads)" "$n0" "nothing uploaded"
: >unlock
wait "$lockpid"

# keys
check_exit 78 "no key" env -u OPENAI_API_KEY qb-submit one.jsonl
is "$(cat "$T/err")" "qb-submit: OPENAI_API_KEY is not set" "says which variable"
check_exit 77 "wrong key" env OPENAI_API_KEY=sk-wrong-SECRET qb-submit -vv one.jsonl
unlike "$(cat "$T/err")" "SECRET" "the key never appears, even with -vv"
like "$(cat "$T/err")" "401" "the status is reported"
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "no job printed"
echo sk-test >key
check_exit 0 "--key-file" env OPENAI_API_KEY=sk-wrong qb-submit --key-file key one.jsonl
check_exit 78 "unreadable key file" qb-submit --key-file nokey one.jsonl
check_exit 0 "--base-url with a trailing /" env -u OPENAI_BASE_URL qb-submit --base-url "$FAKE_URL/v1/" one.jsonl

# bad records
cp "$F1" changed.jsonl
jq -c --arg f changed.jsonl '.file=$f' one.jsonl >chg.jsonl
echo '{"x":1}' >>changed.jsonl
check_exit 1 "a file changed since packing is rejected" qb-submit chg.jsonl
like "$(cat "$T/err")" "chg.jsonl:1: changed.jsonl: file changed since it was packed" "located reason"
{ echo '{"file": 1}'; echo 'not json'; cat one.jsonl; } >bad.jsonl
check_exit 1 "bad lines are skipped" qb-submit bad.jsonl
like "$(cat "$T/err")" 'bad.jsonl:1: expected string for "file"' "missing key located"
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "the good record still submitted"
check_exit 65 "--strict stops" qb-submit --strict bad.jsonl
check_exit 1 "-p against the record's provider" qb-submit -p anthropic one.jsonl
check_exit 66 "missing input" qb-submit nonexistent.jsonl

# retries
reset
script '{"on":"POST /v1/batches","status":500,"times":2}'
check_exit 0 "500 twice, then the create works" qb-submit -v one.jsonl
is "$(stat_of '.requests["POST /v1/batches"]|[."500",."200"]|@tsv')" "$(printf '2\t1')" "two 500s, one 200"
like "$(cat "$T/err")" "retry 2 of 2" "-v notes each retry"
reset
script '{"on":"POST /v1/files","status":429,"headers":{"retry-after-ms":"20"},"times":1}'
check_exit 0 "429 with retry-after-ms, then OK" qb-submit -v one.jsonl
like "$(cat "$T/err")" "in 0.02 s" "waits what the server asks"
reset
script '{"on":"POST /v1/files","status":429,"headers":{"retry-after":"600"},"times":1}'
check_exit 75 "429 asking for 10 minutes: not waited for" qb-submit one.jsonl
like "$(cat "$T/err")" "the server asks to wait 600 s" "says why"
reset
script '{"on":"POST /v1/batches","status":500,"times":-1}'
check_exit 75 "500 always: temporary failure" qb-submit -l led75.jsonl pack.jsonl
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "nothing printed"
like "$(cat "$T/err")" "not submitted (stopped after an earlier failure)" "the rest are named"
like "$(cat "$T/err")" "0 submitted, 0 skipped (already in ledger), 0 rejected, 2 not submitted" "summary counts them"
ok_if "nothing ledgered" ! -s led75.jsonl
reset
script '{"on":"POST /v1/batches","status":503,"headers":{"x-should-retry":"false"}}'
check_exit 75 "x-should-retry: false is obeyed" qb-submit one.jsonl
is "$(stat_of '.requests["POST /v1/batches"]."503"')" 1 "one try only"
reset
script '{"on":"POST /v1/batches","delay":2}'
check_exit 75 "create timed out after sending" env QB_HTTP_TIMEOUT=1 qb-submit -v -l ledto.jsonl one.jsonl
like "$(cat "$T/err")" "outcome unknown" "reported as outcome unknown"
unlike "$(cat "$T/err")" "retry" "never retried"
reset
script '{"on":"POST /v1/batches","status":400,"body":{"error":{"message":"bad endpoint","type":"invalid_request_error","param":null,"code":null}}}'
check_exit 69 "a permanent refusal" qb-submit one.jsonl
like "$(cat "$T/err")" "HTTP 400: bad endpoint" "the provider's message"
is "$(stat_of '.requests["DELETE /v1/files/{id}"]."200"')" 1 "the orphan upload is deleted"
