#!/bin/sh
# qb-submit against the provider emulator: job records, the ledger, keys,
# retries (scripted 5xx and 429), create timeouts, permanent refusals; the
# run lock, intents and adoption of batches whose job was never recorded,
# submitting again a file whose batch ran nothing, configuration errors.
. "$(dirname "$0")/lib.sh"
plan 154

QB_MAX_RETRIES=2
export QB_MAX_RETRIES
fake_start --batch-seconds 1

# script RULE...: add canned answers to the running emulator
script() { printf '%s\n' "$@" | curl -s -X POST --data-binary @- "$FAKE_URL/_qb/script" >/dev/null; }
# reset: forget files, batches, counters and scripted rules
reset() { curl -s -X POST "$FAKE_URL/_qb/reset" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }
# jobs LEDGER: the job lines of a ledger (intent lines left out)
jobs() { jq -c 'select(.batch_id)' "$1"; }
# until_stat FILTER VALUE: wait (up to 10 s) for an emulator counter
until_stat() {
	_w=0
	while [ "$(stat_of "$1")" != "$2" ] && [ $_w -lt 200 ]; do sleep 0.05; _w=$((_w + 1)); done
}
# hold FILE: flock FILE from another process until release is called
hold() {
	rm -f "$T/held" "$T/release"
	flock -o "$1" sh -c ": >'$T/held'; while [ ! -e '$T/release' ]; do sleep 0.05; done" >/dev/null 2>&1 &
	holdpid=$!
	while [ ! -e "$T/held" ]; do sleep 0.05; done
}
release() { : >"$T/release"; wait "$holdpid"; }

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
jobs led.jsonl >ledjobs.jsonl
check_same ledjobs.jsonl job.jsonl "the ledger holds the printed record"
is "$(head -n 1 led.jsonl | jqr '[.intent,.file,.provider]|@tsv')" "$(printf '%s\t%s\topenai' "$S1" "$F1")" \
    "an intent line for the file comes before it"
ok_if "the intent's time is RFC 3339 UTC" -n "$(head -n 1 led.jsonl | jqr .at | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$')"
is "$(cat "$T/err")" "qb-submit: 1 submitted, 0 skipped (already in ledger), 0 rejected" "summary line"
ok_if "the run lock file is beside the ledger" -e led.jsonl.submit.lock
B1=$(jqr .batch_id job.jsonl)
is "$(curl -s -H 'Authorization: Bearer sk-test' "$OPENAI_BASE_URL/batches/$B1" | jqr .metadata.qb_sha256)" "$S1" \
    "batch metadata carries the file's sha256"

# the ledger makes a re-run safe
cp led.jsonl led.before
check_exit 0 "re-run with the ledger" qb-submit -l led.jsonl one.jsonl
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "nothing printed for a skipped file"
like "$(cat "$T/err")" "already submitted as $B1" "skip names the batch"
like "$(cat "$T/err")" "0 submitted, 1 skipped (already in ledger)" "summary counts the skip"
is "$(stat_of .uploads)" 1 "no second upload"
check_same led.jsonl led.before "ledger unchanged"
check_exit 0 "the whole pack: only the new file goes" qb-submit -l led.jsonl pack.jsonl
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "one new job"
is "$(jobs led.jsonl | wc -l | tr -d ' ')" 2 "ledger has both"
check_exit 0 "the same file twice in one run without a ledger" qb-submit --lookback 0 one.jsonl one.jsonl
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "submitted once"
is "$(cat "$T/err" | tail -n 1)" "qb-submit: 1 submitted, 1 skipped (repeated in this run), 0 rejected" \
    "no ledger: the skip is not said to be in a ledger"
BN=$(jqr .batch_id "$T/out")

# The ledger is not the only memory: the same pack output with another
# ledger, then with none, adopts the batch the provider made for its digest.
S1=$(jqr .sha256 one.jsonl)
n0=$(stat_of ".created_by_sha256[\"$S1\"]")
check_exit 0 "the same file with a second ledger" qb-submit -l led2.jsonl one.jsonl
is "$(jqr .batch_id "$T/out")" "$BN" "second ledger: the newest batch for the digest adopted"
like "$(cat "$T/err")" "made for the same file by a submit this ledger does not hold" \
    "second ledger: says so"
is "$(jobs led2.jsonl | jqr .batch_id)" "$BN" "second ledger: holds the adopted job"
check_exit 0 "the same file with no ledger" qb-submit one.jsonl
is "$(jqr .batch_id "$T/out"):$(stat_of ".created_by_sha256[\"$S1\"]")" "$BN:$n0" "no ledger: adopted, no create"
is "$(jqr .ended "$T/out"):$(jqr '.results | length' "$T/out")" "false:0" \
    "adopted after it ended: not ended until qb-poll has its files"
check_exit 0 "--lookback 0: no search" qb-submit --lookback 0 one.jsonl
is "$(stat_of ".created_by_sha256[\"$S1\"]")" "$((n0 + 1))" "--lookback 0 creates"

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
script '{"on":"POST /v1/batches","status":503,"times":2}'
check_exit 0 "503 twice, then the create works" qb-submit -v one.jsonl
is "$(stat_of '.requests["POST /v1/batches"]|[."503",."200"]|@tsv')" "$(printf '2\t1')" "two 503s, one 200"
like "$(cat "$T/err")" "retry 2 of 2" "-v notes each retry"
reset
script '{"on":"POST /v1/batches","status":504,"times":1}'
check_exit 75 "a 504 to a create: the gateway may have passed it on" qb-submit -l led504.jsonl one.jsonl
is "$(stat_of '.requests["POST /v1/batches"]|[."504",."200"]|@tsv')" "$(printf '1\t')" "not sent again"
like "$(cat "$T/err")" "outcome unknown: the server may have made it" "says why"
check_exit 75 "an immediate re-run" qb-submit -l led504.jsonl one.jsonl
like "$(cat "$T/err")" "no batch yet from the unrecorded submit of" "waits: the batch may still be made"
is "$(stat_of '.requests["POST /v1/batches"]|[."504",."200"]|@tsv')" "$(printf '1\t')" "still one create"
reset
script '{"on":"POST /v1/files","status":429,"headers":{"retry-after-ms":"20"},"times":1}'
check_exit 0 "429 with retry-after-ms, then OK" qb-submit -v one.jsonl
like "$(cat "$T/err")" "in 0.02 s" "waits what the server asks"
reset
script '{"on":"POST /v1/files","status":429,"headers":{"retry-after":"600"},"times":1}'
check_exit 75 "429 asking for 10 minutes: not waited for" qb-submit one.jsonl
like "$(cat "$T/err")" "the server asks to wait 600 s" "says why"
reset
script '{"on":"POST /v1/batches","status":503,"times":-1}'
check_exit 75 "503 always: temporary failure" qb-submit -l led75.jsonl pack.jsonl
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "nothing printed"
like "$(cat "$T/err")" "not submitted (stopped after an earlier failure)" "the rest are named"
like "$(cat "$T/err")" "0 submitted, 0 skipped (already in ledger), 0 rejected, 2 not submitted" "summary counts them"
is "$(jobs led75.jsonl)" "" "no job ledgered"
is "$(jqr '[.intent, .withdrawn] | @tsv' led75.jsonl)" "$(printf '%s\t\n%s\ttrue' "$(jqr .sha256 pack.jsonl | head -n 1)" "$(jqr .sha256 pack.jsonl | head -n 1)")" \
    "only the intent of the file tried, withdrawn: nothing was made"
reset
check_exit 0 "the next run, the provider well again" qb-submit -l led75.jsonl pack.jsonl
is "$(jobs led75.jsonl | wc -l | tr -d ' '):$(stat_of .batches_created)" "2:2" "submits both files: a withdrawn intent is no job"
# the create's connection dropped after the request went out: libcurl must
# not send it again on a new connection (the upload's kept one is not used)
reset
script '{"on":"POST /v1/batches","close":true,"times":1}'
check_exit 75 "a create whose connection dropped once sent" qb-submit -l ledc.jsonl one.jsonl
is "$(stat_of '.requests["POST /v1/batches"]|keys|join(",")')" "closed" "sent once, never again"
like "$(cat "$T/err")" "outcome unknown" "its outcome is unknown"
reset
script '{"on":"POST /v1/batches","status":503,"headers":{"x-should-retry":"false"}}'
check_exit 75 "x-should-retry: false is obeyed" qb-submit one.jsonl
is "$(stat_of '.requests["POST /v1/batches"]."503"')" 1 "one try only"
reset
script '{"on":"POST /v1/batches","delay":2}'
check_exit 75 "create timed out after sending" env QB_HTTP_TIMEOUT=1 qb-submit -v -l ledto.jsonl one.jsonl
like "$(cat "$T/err")" "outcome unknown" "reported as outcome unknown"
like "$(cat "$T/err")" "a run with ledger ledto.jsonl looks for it (metadata qb_sha256 " \
    "says how it is found"
unlike "$(cat "$T/err")" "retry" "never retried"
# The emulator made the batch all the same: the next run finds and adopts it.
until_stat .batches_created 1
check_exit 0 "a re-run after an unknown outcome" qb-submit -l ledto.jsonl one.jsonl
is "$(stat_of '[.uploads,.batches_created]|@tsv')" "$(printf '1\t1')" "adopted: no second upload or create"
is "$(jqr .batch_id "$T/out")" "$(curl -s -H 'Authorization: Bearer sk-test' "$OPENAI_BASE_URL/batches" | jqr '.data[0].id')" \
    "the job printed is the batch made"
is "$(jobs ledto.jsonl | jqr .batch_id)" "$(jqr .batch_id "$T/out")" "and ledgered"
like "$(cat "$T/err")" "adopted batch" "says so"
like "$(cat "$T/err")" "0 submitted, 1 adopted" "summary counts it"
n0=$(stat_of '.requests["GET /v1/batches"]."200"')
check_exit 0 "a third run skips it" qb-submit -l ledto.jsonl one.jsonl
is "$(stat_of '.requests["GET /v1/batches"]."200"')" "$n0" "without listing again"
reset
script '{"on":"POST /v1/batches","status":400,"body":{"error":{"message":"bad endpoint","type":"invalid_request_error","param":null,"code":null}}}'
check_exit 69 "a permanent refusal" qb-submit one.jsonl
like "$(cat "$T/err")" "HTTP 400: bad endpoint" "the provider's message"
is "$(stat_of '.requests["DELETE /v1/files/{id}"]."200"')" 1 "the orphan upload is deleted"

clock() { curl -s -X POST -d "{\"advance\":$1}" "$FAKE_URL/_qb/clock" >/dev/null; }

# the ledger is made and locked before anything is uploaded
reset
check_exit 66 "a ledger in a missing directory" qb-submit -l nodir/led.jsonl one.jsonl
is "$(stat_of .uploads)" 0 "fails before the upload"
qb-submit one.jsonl >&- 2>"$T/err"
is "$?" 74 "closed standard output, no ledger: exit 74"
like "$(cat "$T/err")" "standard output is not open for writing" "says why"
is "$(stat_of .uploads)" 0 "fails before the upload"

# two runs at once on one ledger: the second waits, then skips
reset
script '{"on":"POST /v1/batches","delay":0.4,"times":-1}'
qb-submit -l conc.jsonl pack.jsonl >conc1.out 2>conc1.err &
p1=$!
qb-submit -l conc.jsonl pack.jsonl >conc2.out 2>conc2.err
rc2=$?
wait "$p1"
rc1=$?
is "$rc1:$rc2" "0:0" "both runs succeed"
is "$(stat_of '[.uploads,.batches_created]|@tsv')" "$(printf '2\t2')" "each file uploaded and created once"
is "$(jobs conc.jsonl | wc -l | tr -d ' ')" 2 "two jobs ledgered"
is "$(cat conc1.out conc2.out | wc -l | tr -d ' ')" 2 "two jobs printed in all"
hold conc.jsonl.submit.lock
check_exit 75 "the run lock held past QB_LOCK_WAIT" env QB_LOCK_WAIT=0.2 qb-submit -l conc.jsonl pack.jsonl
like "$(cat "$T/err")" "another qb-submit holds conc.jsonl" "says who holds it"
release

# killed between the create and the ledger: the next run adopts the batch
reset
script '{"on":"POST /v1/batches","delay":1}'
qb-submit -l kill.jsonl one.jsonl >/dev/null 2>&1 &
kp=$!
until_stat '.requests["POST /v1/files"]."200"' 1
sleep 0.3
kill -9 "$kp"
wait "$kp" 2>/dev/null
until_stat .batches_created 1
is "$(jobs kill.jsonl)" "" "nothing but the intent was ledgered"
check_exit 0 "the run after the kill" qb-submit -l kill.jsonl one.jsonl
is "$(stat_of '[.uploads,.batches_created]|@tsv')" "$(printf '1\t1')" "adopted, not submitted again"
is "$(jobs kill.jsonl | jqr .sha256)" "$S1" "the job is in the ledger"

# the ledger stays locked after the create: the job is printed, then adopted
reset
script '{"on":"POST /v1/batches","delay":0.5}'
QB_LOCK_WAIT=0.2 qb-submit -l late.jsonl one.jsonl >late.out 2>late.err &
lp=$!
_w=0
while ! grep -q intent late.jsonl 2>/dev/null && [ $_w -lt 200 ]; do sleep 0.02; _w=$((_w + 1)); done
hold late.jsonl
wait "$lp"
is "$?" 75 "the ledger locked after the create: exit 75"
is "$(jqr .sha256 late.out)" "$S1" "the job record is printed all the same"
like "$(cat late.err)" "run again with this ledger to adopt" "says how to recover"
release
check_exit 0 "the next run" qb-submit -l late.jsonl one.jsonl
is "$(jqr .batch_id "$T/out")" "$(jqr .batch_id late.out)" "adopts that batch"
is "$(stat_of .batches_created)" 1 "no second create"

# a batch that failed, or ended with no request completed: the same pack
# record is skipped (its items come back from qb-reconcile as retries);
# the file packed again from those retries ("retries" == "requests") is
# submitted again
reset
printf '%s\n' '{"custom_id":"d1","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[]}}' \
    '{"custom_id":"d1","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[]}}' >dup.jsonl
jq -nc --arg s "$(sha256sum dup.jsonl | cut -d' ' -f1)" \
    '{file:"dup.jsonl",provider:"openai",endpoint:"/v1/chat/completions",model:"m1",requests:2,sha256:$s}' >dup.pack
jq -c '.retries=2' dup.pack >dupr.pack
qb-submit -l again.jsonl dup.pack >/dev/null 2>&1
clock 2
check_exit 0 "the pack record of a file whose batch failed, again" qb-submit -v -l again.jsonl dup.pack
like "$(cat "$T/err")" "(failed); skipped: qb-reconcile gives its requests their outcomes" "is skipped, saying where its items went"
check_exit 0 "the file packed again from retries" qb-submit -v -l again.jsonl dupr.pack
like "$(cat "$T/err")" "ended failed with nothing run; its retries are submitted again" "-v says why"
like "$(cat "$T/err")" "dup.jsonl: created from file file-" "-v says it reuses the input file"
is "$(stat_of '[.uploads,.batches_created]|@tsv')" "$(printf '1\t2')" "created again from the file uploaded before"
is "$(jobs again.jsonl | jqr .batch_id | sort -u | wc -l | tr -d ' ')" 2 "a new job line; the old one stays"
jq -c '.retries=.requests' one.jsonl >oner.jsonl
check_exit 0 "another file" qb-submit -l again.jsonl one.jsonl
B=$(jqr .batch_id "$T/out")
check_exit 0 "while its batch runs" qb-submit -l again.jsonl oner.jsonl
like "$(cat "$T/err")" "already submitted as $B (" "it is skipped"
is "$(stat_of .batches_created)" 3 "no second create for it"
curl -s -X POST -H 'Authorization: Bearer sk-test' "$OPENAI_BASE_URL/batches/$B/cancel" >/dev/null
clock 2
F=$(jobs again.jsonl | jqr "select(.batch_id==\"$B\") | .input_file_id")
curl -s -X DELETE -H 'Authorization: Bearer sk-test' "$OPENAI_BASE_URL/files/$F" >/dev/null
U=$(stat_of .uploads)
check_exit 0 "a file whose batch was cancelled before running" qb-submit -v -l again.jsonl oner.jsonl
is "$(jqr .batch_id "$T/out" | grep -c batch_)" 1 "is submitted again"
like "$(cat "$T/err")" "file $F not taken again (" "its deleted input file is refused: -v says so"
is "$(stat_of .uploads)" "$((U + 1))" "and the file is uploaded again"
clock 2
check_exit 0 "a file whose batch completed" qb-submit -l again.jsonl oner.jsonl
like "$(cat "$T/err")" "(completed); skipped" "is skipped"
printf '%s\n' '{"custom_id":"f1","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[],"qb_fake":{"status":500}}}' >allfail.jsonl
jq -nc --arg s "$(sha256sum allfail.jsonl | cut -d' ' -f1)" \
    '{file:"allfail.jsonl",provider:"openai",endpoint:"/v1/chat/completions",model:"m1",requests:1,retries:1,sha256:$s}' >allfail.pack
qb-submit -l again.jsonl allfail.pack >/dev/null 2>&1
clock 2
check_exit 0 "its failures not read yet: it waits" qb-submit -v -l again.jsonl allfail.pack
like "$(cat "$T/err")" "(completed); skipped" "is skipped until qb-poll has its files"
mkdir -p allres
qb-poll -q -i again.jsonl -d allres >/dev/null
check_exit 0 "a file whose batch completed with no request succeeded" qb-submit -v -l again.jsonl allfail.pack
like "$(cat "$T/err")" "ended completed with nothing run; its retries are submitted again" "is submitted again, as with Anthropic"
# A file of retries whose batch failed a request for good (400: dead) is
# not sent again: that would give the id a second dead outcome.
printf '%s\n' '{"custom_id":"f2","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[],"qb_fake":{"status":400}}}' >deadone.jsonl
jq -nc --arg s "$(sha256sum deadone.jsonl | cut -d' ' -f1)" \
    '{file:"deadone.jsonl",provider:"openai",endpoint:"/v1/chat/completions",model:"m1",requests:1,retries:1,sha256:$s}' >deadone.pack
qb-submit -l again.jsonl deadone.pack >/dev/null 2>&1
clock 2
qb-poll -q -i again.jsonl -d allres >/dev/null
check_exit 0 "a file of retries whose batch gave a dead outcome" qb-submit -v -l again.jsonl deadone.pack
like "$(cat "$T/err")" "(completed); skipped" "is not sent again"

# configuration errors come first
check_exit 78 "an ftp base URL" qb-submit --base-url ftp://example.com/v1 bad.jsonl
is "$(cat "$T/err")" 'qb-submit: --base-url "ftp://example.com/v1": not an http or https URL' \
    "said once, before any record"
check_exit 78 "an unparseable OPENAI_BASE_URL" env OPENAI_BASE_URL='http://' qb-submit one.jsonl
like "$(cat "$T/err")" 'OPENAI_BASE_URL "http://": cannot be parsed' "says which variable"
check_exit 78 "an empty key" env OPENAI_API_KEY= qb-submit one.jsonl
is "$(cat "$T/err")" "qb-submit: OPENAI_API_KEY is empty" "says it is empty"
