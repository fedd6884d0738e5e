#!/bin/sh
# qb-poll against the provider emulator: status updates, --wait, result
# downloads, failed and expired batches, transient and permanent errors,
# -t as a deadline, Azure's status words and times, and -i on a ledger
# (its run lock, intent lines).
. "$(dirname "$0")/lib.sh"
plan 107

QB_MAX_RETRIES=2
export QB_MAX_RETRIES
# Batches take 3 s; tests move the emulator's clock instead of sleeping.
fake_start --batch-seconds 3

clock() { curl -s -X POST -d "{\"advance\":$1}" "$FAKE_URL/_qb/clock" >/dev/null; }
script() { printf '%s\n' "$@" | curl -s -X POST --data-binary @- "$FAKE_URL/_qb/script" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }
# hold FILE: flock FILE from another process until release is called
hold() {
	rm -f "$T/held" "$T/release"
	flock -o "$1" sh -c ": >'$T/held'; while [ ! -e '$T/release' ]; do sleep 0.05; done" >/dev/null 2>&1 &
	holdpid=$!
	while [ ! -e "$T/held" ]; do sleep 0.05; done
}
release() { : >"$T/release"; wait "$holdpid"; }
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
R=$(cd res && pwd -P)
{ line m1 a1; line m1 a2; } >ok.jsonl
{ line m1 d1; line m1 d1; } >dup.jsonl
packrec ok.jsonl >ok.pack
packrec dup.jsonl >dup.pack

# options
check_exit 0 "-h" qb-poll -h
like "$(cat "$T/out")" "usage: qb-poll" "-h prints usage"
like "$(cat "$T/out")" "print only the jobs that
                         ended in this run" "-h: -i prints only the jobs that ended in this run"
check_exit 64 "-i with operands" qb-poll -i led.jsonl job.jsonl
check_exit 66 "-i on a missing ledger" qb-poll -i nonexistent.jsonl
check_exit 66 "missing result dir" qb-poll -d nodir /dev/null
check_exit 64 "bad --interval" qb-poll --interval 0 /dev/null

# a running batch: updated, printed, not ended
qb-submit --lookback 0 ok.pack 2>/dev/null | jq -c '.note="keep me"' >job.jsonl
B=$(jqr .batch_id job.jsonl)
check_exit 0 "poll a running batch" qb-poll -d res job.jsonl
cp "$T/out" p1.jsonl
is "$(jqr .ended p1.jsonl)" false "not ended yet"
is "$(jqr .note p1.jsonl)" "keep me" "unknown keys carried"
is "$(jqr .batch_id p1.jsonl)" "$B" "same batch"
is "$(jqr '.results|length' p1.jsonl)" 0 "no results yet"
check_exit 0 "-v on a running batch" qb-poll -v -d res job.jsonl
like "$(sed 's/: [a-z_]*, /: STATUS, /' "$T/err")" "$B: STATUS, 0h00m of 24h" "-v: time since it was made, of its window"

# --wait: until completed (about 0.4 s from now), files downloaded
clock 2.6
check_exit 0 "--wait until it ends" qb-poll -w --interval 0.2 -t 30 -d res p1.jsonl
cp "$T/out" done.jsonl
is "$(jqr '[.status,.ended]|@tsv' done.jsonl)" "$(printf 'completed\ttrue')" "completed, ended"
is "$(jqr '.results|join(" ")' done.jsonl)" "$R/$B.output.jsonl" "results lists the output file, by absolute path"
is "$(wc -l <"res/$B.output.jsonl" | tr -d ' ')" 2 "output file has both lines"
is "$(jqr .custom_id "res/$B.output.jsonl" | sort | tr '\n' ' ')" "a1 a2 " "both ids in it"
# the output file deleted at the provider after it was fetched (a run whose
# ledger was not rewritten): the file already here is used, not lost
OF=$(curl -s -H 'Authorization: Bearer sk-test' "$OPENAI_BASE_URL/batches/$B" | jqr .output_file_id)
curl -s -X DELETE -H 'Authorization: Bearer sk-test' "$OPENAI_BASE_URL/files/$OF" >/dev/null
check_exit 0 "its output file gone at the provider, polled again" qb-poll -v -d res p1.jsonl
is "$(jqr '[.ended, (.results|join(" ")), has("error")]|@tsv' "$T/out")" "$(printf 'true\t%s\tfalse' "$R/$B.output.jsonl")" \
    "ended with the file fetched before"
like "$(cat "$T/err")" "output file gone at the provider; $R/$B.output.jsonl, fetched before, is kept" "-v says so"
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
qb-submit --lookback 0 dup.pack >djob.jsonl 2>/dev/null
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
qb-submit --lookback 0 ok.pack >job2.jsonl 2>/dev/null
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

# a result file that cannot be had: not ended, and tried again next time
qb-submit --lookback 0 ok.pack >job4.jsonl 2>/dev/null
clock 5
script '{"on":"GET /v1/files/*/content","status":404,"body":{"error":{"message":"No such File object","type":"invalid_request_error","param":null,"code":null}}}'
check_exit 1 "a result file answers 404" qb-poll -d res job4.jsonl
cp "$T/out" f404.jsonl
is "$(jqr '[.status,.ended,(.results|length)]|@tsv' f404.jsonl)" "$(printf 'completed\tfalse\t0')" "completed, but not ended"
like "$(jqr .error.message f404.jsonl)" "output file file-" "the error names the file"
like "$(jqr .error.message f404.jsonl)" "HTTP 404: No such File object" "and the reason"
is "$(jqr .error.http_status f404.jsonl)" 404 "with its status"
check_exit 0 "the next poll" qb-poll -d res f404.jsonl
is "$(jqr '[.ended,has("error"),(.results|length)]|@tsv' "$T/out")" "$(printf 'true\tfalse\t1')" "fetches it: ended, error gone"

# a server that never answers: -t is a deadline, not a wish
qb-submit --lookback 0 ok.pack >job5.jsonl 2>/dev/null
qb-submit --lookback 0 ok.pack >>job5.jsonl 2>/dev/null
n0=$(stat_of '.requests["GET /v1/batches/{id}"]."200"')
script '{"on":"GET /v1/batches/*","delay":30}'
t0=$(date +%s)
check_exit 75 "a server that never answers (-w -t 1)" timeout 20 qb-poll -w --interval 0.1 -t 1 -d res job5.jsonl
ok_if "it gives up at the deadline" $(($(date +%s) - t0)) -le 4
is "$(jqr .ended "$T/out" | tr '\n' ' ')" "false false " "both jobs printed, not ended"
is "$(stat_of '.requests["GET /v1/batches/{id}"]."200"')" "$n0" "no request started after the deadline"
like "$(cat "$T/err")" "2 jobs still running" "says so"

# Azure and older compatible hosts: capitalised statuses, string times
qb-submit --lookback 0 ok.pack >az.jsonl 2>/dev/null
AZ=$(jqr .batch_id az.jsonl)
FID=$(jqr .input_file_id az.jsonl)
script "$(jq -nc --arg id "$AZ" --arg f "$FID" '{on:("GET /v1/batches/"+$id),status:200,body:{id:$id,object:"batch",
    endpoint:"/v1/chat/completions",input_file_id:$f,completion_window:"24h",status:"Completed",output_file_id:$f,
    error_file_id:"",created_at:"2026-11-30T16:00:00Z",in_progress_at:"2026-11-30T16:00:10.5Z",
    completed_at:"2026-11-30T17:00:00.123456+01:00",expires_at:null,request_counts:{total:2,completed:2,failed:0}}}')"
check_exit 0 "an Azure batch" qb-poll -d res az.jsonl
is "$(jqr '[.status,.ended,(.results|length)]|@tsv' "$T/out")" "$(printf 'Completed\ttrue\t1')" \
    "\"Completed\" is ended; the word is kept; its file fetched"
is "$(jqr '[.created_at,.in_progress_at,.completed_at]|@tsv' "$T/out")" \
    "$(printf '2026-11-30T16:00:00Z\t2026-11-30T16:00:10.5Z\t2026-11-30T16:00:00Z')" \
    "RFC 3339 times kept, or made UTC when too long"

# one result file fetched, the other gone: not ended, the first listed
script "$(jq -nc --arg id "$AZ" --arg f "$FID" '{on:("GET /v1/batches/"+$id),status:200,body:{id:$id,object:"batch",
    endpoint:"/v1/chat/completions",input_file_id:$f,completion_window:"24h",status:"completed",output_file_id:$f,
    error_file_id:"file-gone",created_at:1764518400,request_counts:{total:2,completed:1,failed:1}}}')"
check_exit 1 "an output file fetched and an error file gone" qb-poll -d res az.jsonl
is "$(jqr '[.ended,.error.http_status,(.results|join(" "))]|@tsv' "$T/out")" "$(printf 'false\t404\t%s' "$R/$AZ.output.jsonl")" \
    "not ended, the 404 kept, the fetched file listed"

# the wait times out
qb-submit --lookback 0 ok.pack >job3.jsonl 2>/dev/null
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
hold led.jsonl.poll.lock
cp led.jsonl led.before
check_exit 75 "-i while another qb-poll -i runs on the ledger" env QB_LOCK_WAIT=0.2 qb-poll -i led.jsonl -d res
like "$(cat "$T/err")" "another qb-poll -i or qb-reap -i holds led.jsonl" "says so"
check_same led.jsonl led.before "ledger untouched"
release

# intent lines of qb-submit are not jobs: skipped quietly, kept
{ cat job3.jsonl; printf '{"intent":"%064d","file":"x.jsonl","at":"2026-11-30T16:00:00Z","provider":"openai"}\n' 0; } >led2.jsonl
check_exit 0 "-i on a ledger with an intent line" qb-poll -i led2.jsonl -d res
is "$(cat "$T/err")" "" "nothing said about it"
is "$(sed -n 2p led2.jsonl | jqr .file)" x.jsonl "the intent line is kept"
check_exit 0 "the same as operand" qb-poll -d res led2.jsonl
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "only the job is printed"

# -i: the ledger first, then the output. A rewrite that fails (here a
# file-size limit, as a full disk would) prints nothing, so a run killed
# or failed between the two never hands a job on twice.
qb-submit --lookback 0 ok.pack >big.jsonl 2>/dev/null
jq -c --arg pad "$(head -c 100000 /dev/zero | tr '\0' x)" '.pad=$pad' big.jsonl >big.tmp && mv big.tmp big.jsonl
clock 5
cp big.jsonl big.before
(trap '' XFSZ; ulimit -f 100; exec qb-poll -i big.jsonl -d res) >"$T/out" 2>"$T/err"
is "$?" 74 "-i: the ledger cannot be rewritten (exit 74)"
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "-i: nothing printed before the ledger has it"
check_same big.jsonl big.before "-i: the ledger as it was"
check_exit 0 "-i: the next run" qb-poll -i big.jsonl -d res
is "$(jqr '[.ended, (.results|length)]|@tsv' "$T/out")" "$(printf 'true\t1')" "-i: prints the job once, ended, with its file"
# A ledger an earlier qb wrote with a batch adopted after it ended: ended,
# no result file, though requests ran. Polled again, its files fetched.
jq -c '.results=[] | del(.pad)' big.jsonl >old.jsonl
check_exit 0 "-i: an ended job with no result file" qb-poll -i old.jsonl -d res
is "$(jqr '[.ended, (.results|length)]|@tsv' old.jsonl)" "$(printf 'true\t1')" "-i: its results fetched"
# A result file deleted after qb-poll listed it: fetched again.
rm "$(jqr '.results[0]' old.jsonl)"
check_exit 0 "-i: an ended job whose result file is gone from disk" qb-poll -i old.jsonl -d res
ok_if "-i: fetched again" -s "$(jqr '.results[0]' old.jsonl)"

# an expired batch: both files
fake_start --batch-seconds 3 --expire-after-requests 1
qb-submit --lookback 0 ok.pack >ejob.jsonl 2>/dev/null
clock 5
E=$(jqr .batch_id ejob.jsonl)
check_exit 0 "--wait on a batch that expires" qb-poll -w --interval 0.2 -t 30 -d res ejob.jsonl
cp "$T/out" exp.jsonl
is "$(jqr '[.status,.ended]|@tsv' exp.jsonl)" "$(printf 'expired\ttrue')" "expired, ended"
is "$(jqr '.results|join(" ")' exp.jsonl)" "$R/$E.output.jsonl $R/$E.errors.jsonl" "both files listed"
is "$(wc -l <"res/$E.output.jsonl" | tr -d ' ')" 1 "one answered"
is "$(jqr .error.code "res/$E.errors.jsonl")" batch_expired "one expired"
