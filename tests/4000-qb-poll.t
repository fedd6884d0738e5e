#!/bin/sh
# qb-poll against the provider emulator: status updates, --wait, result
# downloads, failed and expired batches, transient and permanent errors,
# and -i on a ledger.
. "$(dirname "$0")/lib.sh"
plan 67

QB_MAX_RETRIES=2
export QB_MAX_RETRIES
# Batches take 3 s; tests move the emulator's clock instead of sleeping.
fake_start --batch-seconds 3

clock() { curl -s -X POST -d "{\"advance\":$1}" "$FAKE_URL/_qb/clock" >/dev/null; }
script() { printf '%s\n' "$@" | curl -s -X POST --data-binary @- "$FAKE_URL/_qb/script" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }
# packrec FILE: a pack record for a batch file written by hand
packrec() {
	jq -nc --arg f "$1" --arg s "$(sha256sum "$1" | cut -d' ' -f1)" \
	    '{file:$f,provider:"openai",endpoint:"/v1/chat/completions",model:"m1",requests:2,sha256:$s}'
}
# line MODEL ID: one OpenAI batch input line
line() {
	printf '{"custom_id":"%s","method":"POST","url":"/v1/chat/completions","body":{"model":"%s","messages":[{"role":"user","content":"I love dogs"}]}}\n' "$2" "$1"
}

cd "$T" || exit 1
mkdir res
{ line m1 a1; line m1 a2; } >ok.jsonl
{ line m1 d1; line m1 d1; } >dup.jsonl
packrec ok.jsonl >ok.pack
packrec dup.jsonl >dup.pack

# options
check_exit 0 "-h" qb-poll -h
like "$(cat "$T/out")" "usage: qb-poll" "-h prints usage"
check_exit 64 "-i with operands" qb-poll -i led.jsonl job.jsonl
check_exit 66 "-i on a missing ledger" qb-poll -i nonexistent.jsonl
check_exit 66 "missing result dir" qb-poll -d nodir /dev/null
check_exit 64 "bad --interval" qb-poll --interval 0 /dev/null

# a running batch: updated, printed, not ended
qb-submit ok.pack 2>/dev/null | jq -c '.note="keep me"' >job.jsonl
B=$(jqr .batch_id job.jsonl)
check_exit 0 "poll a running batch" qb-poll -d res job.jsonl
cp "$T/out" p1.jsonl
is "$(jqr .ended p1.jsonl)" false "not ended yet"
is "$(jqr .note p1.jsonl)" "keep me" "unknown keys carried"
is "$(jqr .batch_id p1.jsonl)" "$B" "same batch"
is "$(jqr '.results|length' p1.jsonl)" 0 "no results yet"

# --wait: until completed (about 0.4 s from now), files downloaded
clock 2.6
check_exit 0 "--wait until it ends" qb-poll -w --interval 0.2 -t 30 -d res p1.jsonl
cp "$T/out" done.jsonl
is "$(jqr '[.status,.ended]|@tsv' done.jsonl)" "$(printf 'completed\ttrue')" "completed, ended"
is "$(jqr '.results|join(" ")' done.jsonl)" "res/$B.output.jsonl" "results lists the output file"
is "$(wc -l <"res/$B.output.jsonl" | tr -d ' ')" 2 "output file has both lines"
is "$(jqr .custom_id "res/$B.output.jsonl" | sort | tr '\n' ' ')" "a1 a2 " "both ids in it"
ok_if "no error file for an all-good batch" ! -e "res/$B.errors.jsonl"
is "$(jqr '.counts|[.total,.completed,.failed]|@tsv' done.jsonl)" "$(printf '2\t2\t0')" "counts"
ok_if "completed_at is RFC 3339" -n "$(jqr .completed_at done.jsonl | grep -E '^[0-9-]{10}T[0-9:]{8}Z$')"
is "$(jqr .note done.jsonl)" "keep me" "unknown keys still carried"
is "$(ls res | grep -c tmp)" 0 "no temporary files left"

# an ended job is printed unchanged, with no request
n0=$(stat_of '.requests["GET /v1/batches/{id}"]."200"')
check_exit 0 "poll an ended job" env -u OPENAI_API_KEY qb-poll -d res done.jsonl
check_same "$T/out" done.jsonl "printed byte for byte"
is "$(stat_of '.requests["GET /v1/batches/{id}"]."200"')" "$n0" "no request made"

# a failed batch: errors kept, no files
qb-submit dup.pack >djob.jsonl 2>/dev/null
D=$(jqr .batch_id djob.jsonl)
clock 5
check_exit 0 "--wait on a batch that fails validation" qb-poll -w --interval 0.2 -t 30 -d res djob.jsonl
cp "$T/out" dfail.jsonl
is "$(jqr '[.status,.ended]|@tsv' dfail.jsonl)" "$(printf 'failed\ttrue')" "failed, ended"
is "$(jqr '.errors[0].code' dfail.jsonl)" duplicate_custom_id "errors kept as given"
is "$(jqr '.errors[0].line' dfail.jsonl)" 2 "with the line number"
is "$(jqr '.results|length' dfail.jsonl)" 0 "no results"
ok_if "failed_at set" -n "$(jqr '.failed_at // empty' dfail.jsonl)"
is "$(ls res | grep -c "$D")" 0 "no files written"

# 404: reported, job printed with an error member
jq -c '.batch_id="batch_nope"' job.jsonl >nope.jsonl
check_exit 1 "an unknown batch" qb-poll -d res nope.jsonl
is "$(jqr '.error.http_status' "$T/out")" 404 "error member with the status"
is "$(jqr 'del(.error)' "$T/out")" "$(jqr . nope.jsonl)" "otherwise unchanged"
like "$(cat "$T/err")" "nope.jsonl:1: batch_nope:" "located report"

# 500 beyond the retries: printed unchanged, exit 75
qb-submit ok.pack >job2.jsonl 2>/dev/null
script '{"on":"GET /v1/batches/*","status":500,"times":3}'
check_exit 75 "GET answers 500 past the retries" qb-poll -d res job2.jsonl
check_same "$T/out" job2.jsonl "the job is printed unchanged"
is "$(stat_of '.requests["GET /v1/batches/{id}"]."500"')" 3 "three tries (QB_MAX_RETRIES=2)"

# a download that fails for now: not ended, retried next time
clock 5
script '{"on":"GET /v1/files/*/content","status":503,"times":3}'
check_exit 75 "result download fails past the retries" qb-poll -d res job2.jsonl
cp "$T/out" half.jsonl
is "$(jqr '[.status,.ended]|@tsv' half.jsonl)" "$(printf 'completed\tfalse')" "status updated, not ended"
B2=$(jqr .batch_id job2.jsonl)
ok_if "no partial file" ! -e "res/$B2.output.jsonl"
check_exit 0 "the next poll fetches it" qb-poll -d res half.jsonl
is "$(jqr .ended "$T/out")" true "now ended"
ok_if "file there" -s "res/$B2.output.jsonl"

# the wait times out
qb-submit ok.pack >job3.jsonl 2>/dev/null
check_exit 75 "--wait past --timeout" qb-poll -w --interval 0.1 -t 0.3 -d res job3.jsonl
is "$(jqr .ended "$T/out")" false "the unfinished job is printed"
like "$(cat "$T/err")" "still running" "says so"

# missing key is a configuration error once a request is needed
check_exit 78 "no key" env -u OPENAI_API_KEY qb-poll -d res job3.jsonl
like "$(cat "$T/err")" "OPENAI_API_KEY is not set" "says which variable"

# -i: ledger rewritten in place, only jobs that ended printed
cat done.jsonl job3.jsonl >led.jsonl
echo 'not json' >>led.jsonl
clock 5
check_exit 1 "-i --wait (a bad ledger line: exit 1)" qb-poll -i led.jsonl -w --interval 0.2 -t 30 -d res
like "$(cat "$T/err")" "led.jsonl:3: " "the bad line is reported"
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "prints only the job that ended now"
is "$(jqr .batch_id "$T/out")" "$(jqr .batch_id job3.jsonl)" "that one"
is "$(wc -l <led.jsonl | tr -d ' ')" 3 "ledger keeps every line"
is "$(head -n 1 led.jsonl)" "$(cat done.jsonl)" "the ended job is untouched"
is "$(sed -n 2p led.jsonl | jqr .ended)" true "the other is ended in the ledger"
is "$(sed -n 3p led.jsonl)" "not json" "a bad line is kept as it was"
flock -o led.jsonl sh -c ': >locked; while [ ! -e unlock ]; do sleep 0.05; done' >/dev/null 2>&1 &
lockpid=$!
while [ ! -e locked ]; do sleep 0.05; done
cp led.jsonl led.before
check_exit 75 "-i on a ledger locked past QB_LOCK_WAIT" env QB_LOCK_WAIT=0.2 qb-poll -i led.jsonl -d res
check_same led.jsonl led.before "ledger untouched"
: >unlock
wait "$lockpid"
check_exit 1 "-i again: nothing to do" qb-poll -i led.jsonl -d res
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "prints nothing"
is "$(ls | grep -c 'led.jsonl.tmp')" 0 "no temporary ledger left"

# an expired batch: both files
fake_start --batch-seconds 3 --expire-after-requests 1
qb-submit ok.pack >ejob.jsonl 2>/dev/null
clock 5
E=$(jqr .batch_id ejob.jsonl)
check_exit 0 "--wait on a batch that expires" qb-poll -w --interval 0.2 -t 30 -d res ejob.jsonl
cp "$T/out" exp.jsonl
is "$(jqr '[.status,.ended]|@tsv' exp.jsonl)" "$(printf 'expired\ttrue')" "expired, ended"
is "$(jqr '.results|join(" ")' exp.jsonl)" "res/$E.output.jsonl res/$E.errors.jsonl" "both files listed"
is "$(wc -l <"res/$E.output.jsonl" | tr -d ' ')" 1 "one answered"
is "$(jqr .error.code "res/$E.errors.jsonl")" batch_expired "one expired"
