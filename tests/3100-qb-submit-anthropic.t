#!/bin/sh
# qb-submit and qb-poll against the emulator's Anthropic Message Batches
# API: pack -p anthropic | submit | poll -w | reconcile, the job record, the
# key and its headers, retries (529, 429), permanent refusals (400, 413 in
# HTML), an unknown create outcome and the ledger after it, a batch with
# no request succeeded submitted again, results redirected to another host
# fetched without the key, a create body streamed from the file, not held
# in memory.
. "$(dirname "$0")/lib.sh"
plan 82

QB_MAX_RETRIES=2
export QB_MAX_RETRIES
fake_start --batch-seconds 3
unset OPENAI_BASE_URL OPENAI_API_KEY
ANTHROPIC_BASE_URL=$FAKE_URL
ANTHROPIC_API_KEY=sk-test
export ANTHROPIC_BASE_URL ANTHROPIC_API_KEY

script() { printf '%s\n' "$@" | curl -s -X POST --data-binary @- "$FAKE_URL/_qb/script" >/dev/null; }
reset() { curl -s -X POST "$FAKE_URL/_qb/reset" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }
jobs() { jq -c 'select(.batch_id)' "$1"; }
# batch ID: the emulator's MessageBatch
batch() { curl -s -H "x-api-key: sk-test" -H "anthropic-version: 2023-06-01" "$FAKE_URL/v1/messages/batches/$1"; }
RFC='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$'
CREATE='POST /v1/messages/batches'

cd "$T" || exit 1
mkdir b
printf '%s\n' \
    '{"id":"a1","body":{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"I love dogs"}]}}' \
    '{"id":"a2","body":{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"my job"}]}}' \
    '{"id":"a3","body":{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"x"}],"qb_fake":{"error":"api_error"}}}' >items.jsonl
qb-pack -p anthropic -d b items.jsonl >pack.jsonl 2>/dev/null
F1=$(jqr .file pack.jsonl)
S1=$(jqr .sha256 pack.jsonl)

# the pipeline
check_exit 0 "submit an Anthropic pack record" qb-submit -l led.jsonl pack.jsonl
cp "$T/out" job.jsonl
is "$(wc -l <job.jsonl | tr -d ' ')" 1 "one job record"
is "$(jqr '[.provider,.status,.ended,.file,.sha256,.requests,.endpoint]|@tsv' job.jsonl)" \
    "$(printf 'anthropic\tin_progress\tfalse\t%s\t%s\t3\t/v1/messages' "$F1" "$S1")" \
    "provider, status and the pack record's keys"
B1=$(jqr .batch_id job.jsonl)
like "$B1" "msgbatch_" "batch_id"
is "$(jqr 'has("input_file_id")' job.jsonl)" false "no input_file_id"
is "$(jqr '.counts|[.total,.completed,.failed]|@tsv' job.jsonl)" "$(printf '3\t0\t0')" \
    "counts: total from request_counts, nothing done yet"
ok_if "created_at is RFC 3339 UTC" -n "$(jqr .created_at job.jsonl | grep -E "$RFC")"
ok_if "expires_at is RFC 3339 UTC" -n "$(jqr .expires_at job.jsonl | grep -E "$RFC")"
is "$(jqr '.results|length' job.jsonl)" 0 "results empty"
is "$(batch "$B1" | jqr '.request_counts.processing')" 3 "the batch holds the file's three requests"
jobs led.jsonl >ledjobs.jsonl
check_same ledjobs.jsonl job.jsonl "the ledger holds the printed record"
is "$(head -n 1 led.jsonl | jqr '[.intent,.provider]|@tsv')" "$(printf '%s\tanthropic' "$S1")" \
    "an intent line comes before it"

check_exit 0 "re-run with the ledger" qb-submit -l led.jsonl pack.jsonl
is "$(cat "$T/out")" "" "nothing printed"
like "$(cat "$T/err")" "already submitted as $B1 (in_progress); skipped" "the running batch is not submitted again"
is "$(stat_of '.message_batches_created')" 1 "one batch made"

check_exit 0 "qb-poll -v on a running batch" qb-poll -v -d b job.jsonl
like "$(cat "$T/err")" "$B1: in_progress, 0h00m of 24h" "-v: time since it was made, not the counts, which stay 0"
check_exit 0 "qb-poll -w" qb-poll -w --interval 0.1 -d b job.jsonl
cp "$T/out" polled.jsonl
is "$(jqr '[.status,.ended]|@tsv' polled.jsonl)" "$(printf 'ended\ttrue')" "the job ended"
is "$(jqr '.counts|[.total,.completed,.failed]|@tsv' polled.jsonl)" "$(printf '3\t2\t1')" \
    "counts: succeeded and errored"
ok_if "ended_at is RFC 3339 UTC" -n "$(jqr .ended_at polled.jsonl | grep -E "$RFC")"
is "$(jqr '.results|length' polled.jsonl)" 1 "one results file"
R1=$(jqr '.results[0]' polled.jsonl)
is "$R1" "$(cd b && pwd)/$B1.output.jsonl" "named after the batch"
is "$(jqr -s 'map(.result.type)|sort|join(",")' "$R1")" "errored,succeeded,succeeded" "its result lines"
is "$(stat_of '.requests["GET /v1/messages/batches/{id}/results"]["200"]')" 1 "results fetched once"
check_exit 1 "qb-reconcile: one retry" qb-reconcile -r items.jsonl polled.jsonl
is "$(jqr -s 'map(.id+":"+.outcome)|sort|join(",")' "$T/out")" "a1:done,a2:done,a3:retry" \
    "outcomes: the api_error result is retried"
qb-poll -w --interval 0.1 -d b job.jsonl 2>/dev/null | jq -c . >/dev/null
check_exit 0 "after the batch ended, re-run with the ledger" qb-submit -l led.jsonl pack.jsonl
like "$(cat "$T/err")" "already submitted as $B1 (ended); skipped" "an ended batch that ran is not submitted again"

# a results redirect: followed with the key on the same origin, without it
# to another one (libcurl itself would drop only Authorization and Cookie)
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[1], "a") as f:
            f.write("".join("%s: %s\n" % kv for kv in self.headers.items()))
        b = b"{\"custom_id\":\"moved\"}\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$T/seen" >"$T/rec.port" 2>/dev/null &
_pids="$_pids $!"
i=0
while [ ! -s "$T/rec.port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
REC=http://127.0.0.1:$(cat "$T/rec.port")
RESULTS="GET /v1/messages/batches/*/results"
mkdir moved same
script "{\"on\":\"$RESULTS\",\"status\":302,\"headers\":{\"Location\":\"$FAKE_URL/v1/messages/batches/$B1/results\"}}"
check_exit 0 "results redirected on the same origin" qb-poll -d same job.jsonl
is "$(jqr -s 'map(.result.type)|sort|join(",")' "same/$B1.output.jsonl")" "errored,succeeded,succeeded" \
    "fetched with the key"
script "{\"on\":\"$RESULTS\",\"status\":302,\"headers\":{\"Location\":\"$REC/elsewhere\"}}"
check_exit 0 "results redirected to another host" qb-poll -d moved job.jsonl
is "$(cat "moved/$B1.output.jsonl")" '{"custom_id":"moved"}' "fetched from there"
ok_if "that host was asked" -s "$T/seen"
unlike "$(cat "$T/seen")" "sk-test" "without the key"
unlike "$(tr A-Z a-z <"$T/seen")" "anthropic-version" "or the provider's other headers"

# the key
check_exit 78 "no key" env -u ANTHROPIC_API_KEY qb-submit pack.jsonl
like "$(cat "$T/err")" "ANTHROPIC_API_KEY is not set" "names the variable"
check_exit 77 "wrong key" env ANTHROPIC_API_KEY=sk-wrong-secret qb-submit pack.jsonl
like "$(cat "$T/err")" "HTTP 401: invalid x-api-key (authentication_error)" "the provider's reason"
unlike "$(cat "$T/err")" "sk-wrong-secret" "the key is not shown"
echo sk-test >key
check_exit 0 "--key-file" env -u ANTHROPIC_API_KEY qb-submit --key-file key pack.jsonl
check_exit 77 "qb-poll with a wrong key" env ANTHROPIC_API_KEY=sk-wrong qb-poll job.jsonl
env ANTHROPIC_BASE_URL="$ANTHROPIC_BASE_URL/v1/" qb-poll job.jsonl >/dev/null 2>v1.err
like "$(cat v1.err)" "ends in /v1, and anthropic adds its own: give it without the version path" \
    "a base URL with /v1: said so"

# retries
reset
script "{\"on\":\"$CREATE\",\"status\":529,\"body\":{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}"
check_exit 0 "529 overloaded_error, then success" qb-submit -v pack.jsonl
like "$(cat "$T/err")" "HTTP 529: Overloaded (overloaded_error)" "the 529 is reported"
like "$(cat "$T/err")" "retry 1 of 2" "and retried"
is "$(stat_of '.requests["POST /v1/messages/batches"]|[."529",."200"]|@tsv')" "$(printf '1\t1')" \
    "one 529, one batch made"
reset
script "{\"on\":\"$CREATE\",\"status\":429,\"times\":-1,\"body\":{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}}"
check_exit 75 "429 every time: temporary failure" qb-submit pack.jsonl
is "$(stat_of '.requests["POST /v1/messages/batches"]["429"]')" 3 "tried 1 + QB_MAX_RETRIES times"

# refusals
reset
script "{\"on\":\"$CREATE\",\"status\":400,\"body\":{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"requests.0: bad\"}}}"
check_exit 69 "400 invalid_request_error: refused for good" qb-submit pack.jsonl
like "$(cat "$T/err")" "HTTP 400: requests.0: bad (invalid_request_error)" "the reason"
is "$(stat_of '.requests["POST /v1/messages/batches"]["400"]')" 1 "not retried"
script "{\"on\":\"$CREATE\",\"status\":413,\"headers\":{\"Content-Type\":\"text/html\"},\"body\":\"<html><body>413 Request Entity Too Large</body></html>\"}"
check_exit 69 "413 in HTML: refused for good" qb-submit pack.jsonl
like "$(cat "$T/err")" "HTTP 413: batch too large" "a clear reason"

# an unknown outcome: the create times out once sent, the batch is made
reset
script "{\"on\":\"$CREATE\",\"delay\":2.5}"
check_exit 75 "a create that timed out after it was sent" env QB_HTTP_TIMEOUT=1 qb-submit -l led2.jsonl pack.jsonl
like "$(cat "$T/err")" "outcome unknown" "its outcome is unknown"
like "$(cat "$T/err")" "a run with ledger led2.jsonl looks for it (anthropic batches made since about" \
    "says how a re-run deals with it"
unlike "$(cat "$T/err")" "qb_sha256" "not OpenAI's metadata"
sleep 2
is "$(stat_of '.message_batches_created')" 1 "the create was not sent again"
check_exit 69 "re-run: a batch not in the ledger may be the file's" qb-submit -l led2.jsonl pack.jsonl
like "$(cat "$T/err")" "Anthropic batches carry no digest" "says why it cannot tell"
is "$(stat_of '.message_batches_created')" 1 "nothing was submitted blindly"
reset
script "{\"on\":\"$CREATE\",\"close\":true}"
qb-submit -l led3.jsonl pack.jsonl >/dev/null 2>&1
check_exit 75 "an immediate re-run after a create cut off once sent" qb-submit -l led3.jsonl pack.jsonl
like "$(cat "$T/err")" "no batch yet from the unrecorded submit of" "waits: a late create may still make it"
# ten minutes on (the intent's time moved back), nothing was made: submitted
past=$(date -u -d '-11 min' +%Y-%m-%dT%H:%M:%SZ)
jq -c --arg t "$past" 'if .intent then .at = $t else . end' led3.jsonl >led3.tmp && mv led3.tmp led3.jsonl
check_exit 0 "re-run after a create that made nothing: submitted" qb-submit -l led3.jsonl pack.jsonl
is "$(jobs led3.jsonl | wc -l | tr -d ' ')" 1 "its job in the ledger"
reset
script "{\"on\":\"$CREATE\",\"delay\":2.5}"
check_exit 75 "without a ledger" env QB_HTTP_TIMEOUT=1 qb-submit pack.jsonl
like "$(cat "$T/err")" "may exist (anthropic batches made since about" "says when it was made"
sleep 2

# a batch that ended with no request succeeded: submitted again
reset
mkdir bad
printf '%s\n' \
    '{"id":"e1","body":{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"x"}],"qb_fake":{"error":"api_error"}}}' \
    '{"id":"e2","body":{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"y"}],"qb_fake":{"error":"api_error"}}}' >bad.jsonl
qb-pack -p anthropic -d bad bad.jsonl >badpack.jsonl 2>/dev/null
qb-submit -l led4.jsonl badpack.jsonl >badjob.jsonl 2>/dev/null
qb-poll -w --interval 0.1 -i led4.jsonl -d bad >badpolled.jsonl 2>/dev/null
is "$(jqr '[.status,.counts.completed,.counts.failed]|@tsv' badpolled.jsonl)" "$(printf 'ended\t0\t2')" \
    "every request errored"
check_exit 0 "re-run of the same pack record" qb-submit -v -l led4.jsonl badpack.jsonl
like "$(cat "$T/err")" "(ended); skipped: qb-reconcile gives its requests their outcomes" "is skipped"
qb-reconcile -r bad.jsonl badpolled.jsonl 2>/dev/null | jq -c 'select(.outcome == "retry")' >badretry.jsonl
qb-pack -p anthropic -d bad badretry.jsonl >badrpack.jsonl 2>/dev/null
is "$(jqr '[.retries, .requests] | @tsv' badrpack.jsonl)" "$(printf '2\t2')" "every request of the new file a retry"
# in the order of the results, or of the requests: then it is the same
# file, and the ledger's batch for it ran nothing
jq -c 'select(.outcome == "retry")' badretry.jsonl | jq -sc 'sort_by(.id)[]' >badretry2.jsonl
qb-pack -p anthropic -d bad badretry2.jsonl >badrpack.jsonl 2>/dev/null
is "$(jqr '.sha256 == input.sha256' badrpack.jsonl badpack.jsonl)" true "in request order, the same file"
check_exit 0 "the retries, with the ledger" qb-submit -v -l led4.jsonl badrpack.jsonl
like "$(cat "$T/err")" "ended with nothing run; its retries are submitted again" "submitted again, and -v says why"
is "$(stat_of '.message_batches_created')" 2 "a second batch made"
is "$(jobs led4.jsonl | jqr .batch_id | sort -u | wc -l | tr -d ' ')" 2 "a new job line; the old one stays"

# the body is streamed from the file
reset
pad=$(printf '%0600d' 0)
awk -v pad="$pad" 'BEGIN { for (i = 1; i <= 20000; i++)
    printf "{\"id\":\"r%d\",\"body\":{\"model\":\"claude-x\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"%s %d\"}]}}\n", i, pad, i }' >big.jsonl
mkdir big
qb-pack -p anthropic -d big big.jsonl >bigpack.jsonl 2>/dev/null
if [ -x /usr/bin/time ]; then
	check_exit 0 "submit a 20,000-request file" /usr/bin/time -o rss -f %M qb-submit bigpack.jsonl
	/usr/bin/time -o rss0 -f %M qb-submit -h >/dev/null
	bytes=$(jqr .bytes bigpack.jsonl)
	grow=$(( ($(tail -n 1 rss) - $(tail -n 1 rss0)) * 1024 ))
	ok_if "peak RSS grows by $grow bytes for a $bytes-byte file" "$grow" -lt $((bytes / 2))
else
	skip "no /usr/bin/time"
	qb-submit bigpack.jsonl >"$T/out" 2>/dev/null
	skip "no /usr/bin/time"
fi
is "$(batch "$(jqr .batch_id "$T/out")" | jqr .request_counts.processing)" 20000 "the batch holds 20,000 requests"

done_testing
