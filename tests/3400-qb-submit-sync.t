#!/bin/sh
# qb-submit --sync against the provider emulator: a result per item with
# the item's members, joined by qb-reconcile with no -r; bad lines; retries;
# the server's waits held for the whole model (qb-providers(7) HTTP
# Retries); the concurrency cap and the tokens-per-minute window; unknown
# outcomes retried within their budget; a 401 stops; standard output closed.
. "$(dirname "$0")/lib.sh"
plan 125

QB_MAX_RETRIES=4
export QB_MAX_RETRIES
fake_start

script() { printf '%s\n' "$@" | curl -s -X POST --data-binary @- "$FAKE_URL/_qb/script" >/dev/null; }
reset() { curl -s -X POST "$FAKE_URL/_qb/reset" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }
# sub ARGS...: qb-submit --sync; stdout, stderr in $T/out, $T/err, status in $rc
sub() { qb-submit --sync "$@" >"$T/out" 2>"$T/err"; rc=$?; }
# of ID FILTER: FILTER over the result of ID
of() { jqr "select(.id == \"$1\") | $2" "$T/out"; }
last() { tail -n 1 "$T/err"; }
now() { date +%s.%N; }
# ge A B: A >= B, as decimals
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
# chat ID TEXT [MODEL]: a chat item
chat() { printf '{"id":"%s","body":{"model":"%s","messages":[{"role":"user","content":"%s"}]},"meta":{"for":"%s"}}\n' "$1" "${3:-m1}" "$2" "$1"; }
# until_idle: wait (up to 10 s) until the emulator holds no call
until_idle() {
	_w=0
	while [ "$(stat_of .sync_inflight)" != 0 ] && [ $_w -lt 200 ]; do sleep 0.05; _w=$((_w + 1)); done
}

cd "$T" || exit 1
{ chat c1 "I love dogs"; chat c2 "my job"; chat c3 "the science of cats"
  chat c4 "a joke"; chat c5 "what to cook"; } >items.jsonl

# options
check_exit 0 "-h" qb-submit -h
like "$(cat "$T/out")" "qb-submit --sync [-hqVv]" "-h shows the --sync synopsis"
check_exit 64 "--rpm without --sync" qb-submit --rpm 5 items.jsonl
check_exit 64 "--sync with a ledger" qb-submit --sync -l led.jsonl items.jsonl
check_exit 64 "--concurrency 0" qb-submit --sync --concurrency 0 items.jsonl
check_exit 78 "no key" env -u OPENAI_API_KEY qb-submit --sync items.jsonl
check_exit 66 "missing input" qb-submit --sync none.jsonl

# basics: a result per item, with the item's members
sub --metrics m.prom items.jsonl
is "$rc" 0 "five chat items: exit 0"
is "$(jqr .id "$T/out" | sort | tr '\n' ' ')" "c1 c2 c3 c4 c5 " "one result per item"
is "$(jqr '[.status,.http_status,.error,.batch_id]|@tsv' "$T/out" | sort -u)" "$(printf 'succeeded\t200\t\t')" \
    "succeeded, 200, no error"
is "$(jqr '.usage == {input_tokens: .response.usage.prompt_tokens, output_tokens: .response.usage.completion_tokens}' "$T/out" | sort -u)" \
    true "usage from prompt_tokens and completion_tokens"
is "$(of c3 .meta.for)" c3 "meta carried"
is "$(of c2 .body)" "$(jqr 'select(.id == "c2") | .body' items.jsonl)" "body carried"
ok_if "request_id from the answer's header" -n "$(of c1 .request_id | grep '^req_')"
is "$(stat_of '.requests["POST /v1/chat/completions"]."200"')" 5 "five calls"
is "$(of c1 .endpoint)" /v1/chat/completions "the endpoint called, when the item names none"
curl -s -H 'Authorization: Bearer sk-test' -H 'Content-Type: application/json' \
    -d "$(jqr 'select(.id == "c1") | .body' items.jsonl)" "$OPENAI_BASE_URL/chat/completions" >direct.json
is "$(of c1 '.response|del(.id,.created,.system_fingerprint)')" "$(jqr 'del(.id,.created,.system_fingerprint)' direct.json)" \
    "the response is the emulator's answer"
grep '"id":"c4"' "$T/out" | sed 's/.*"response"://; s/,"body".*//' >got.resp
is "$(jqr -S . got.resp | jqr .choices[0].message.content)" "$(of c4 .response.choices[0].message.content)" \
    "the response is copied as bytes"
is "$(last)" "qb-submit: 5 items: 5 succeeded, 0 failed, 0 for later; 0 retries, 0 possible double spends (retried after an unknown outcome); 0 rejected" \
    "summary"
like "$(cat m.prom)" "# TYPE qb_sync_inflight gauge" "metrics file in the text format"
like "$(cat m.prom)" 'qb_sync_requests_total{provider="openai",model="m1",code="200"} 5' "requests counted by code"
like "$(cat m.prom)" 'qb_sync_inflight{provider="openai",model="m1"} 0' "nothing in flight at the end"

# the pipeline of qb-submit(1) SYNCHRONOUS MODE: qb-reconcile joins each result to itself
qb-submit --sync items.jsonl 2>/dev/null | qb-reconcile >rec.jsonl 2>rec.err
is "$?" 0 "| qb-reconcile with no -r: exit 0"
is "$(jqr '"\(.id)=\(.outcome)=\(.meta.for)"' rec.jsonl | sort | tr '\n' ' ')" \
    "c1=done=c1 c2=done=c2 c3=done=c3 c4=done=c4 c5=done=c5 " "five done outcomes, with meta"
is "$(jqr 'has("body")' rec.jsonl | sort -u)" false "done outcomes carry no body"
like "$(cat rec.err)" "5 requests: 5 done, 0 retry, 0 dead" "reconcile summary"

# the synchronous worker the README shows, on a spool: settled per item
reset
{ chat q1 "I love dogs"
  echo '{"id":"q2","body":{"model":"m1","messages":[],"qb_fake":{"status":400}}}'
  echo '{"id":"q3","body":{"model":"m1","messages":[{"role":"user","content":"y"}],"qb_fake":{"status":503}}}'; } >q.jsonl
qb-drain --enqueue -Q dir:spool q.jsonl 2>/dev/null
QB_MAX_RETRIES=1 sh -c 'qb-drain -Q dir:spool -n 3 -t 5 | qb-submit --sync | qb-reconcile |
    qb-drain -Q dir:spool --settle --dead-letter dead.jsonl' >settled.jsonl 2>settle.err
is "$?" 0 "drain | submit --sync | reconcile | drain --settle: exit 0"
is "$(jqr '"\(.id)=\(.outcome)=\(.settled)"' settled.jsonl | sort | tr '\n' ' ')" \
    "q1=done=deleted q2=dead=dead_lettered q3=retry=released " "each item settled by its outcome"
is "$(jqr .id dead.jsonl):$(find spool -type f | wc -l | tr -d ' ')" "q2:1" "q2 dead-lettered, q3 back on the spool"

# Anthropic
printf '%s\n' '{"id":"a1","params":{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"I love dogs"}]},"meta":7}' \
    '{"id":"a2","body":{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"my job"}]}}' \
    '{"id":"a3","params":{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}}' >anth.jsonl
ANTHROPIC_API_KEY=sk-test ANTHROPIC_BASE_URL=$FAKE_URL qb-submit --sync -p anthropic anth.jsonl >"$T/out" 2>"$T/err"
is "$?" 1 "-p anthropic: exit 1 (one bad item)"
is "$(jqr '"\(.id)=\(.status)=\(.response.type)"' "$T/out" | sort | tr '\n' ' ')" "a1=succeeded=message a2=succeeded=message " \
    "POST /v1/messages answered"
is "$(of a1 '.usage == {input_tokens: .response.usage.input_tokens, output_tokens: .response.usage.output_tokens}')" true \
    "usage from input_tokens and output_tokens"
is "$(of a1 .meta):$(of a1 .params.model)" "7:claude-x" "meta and params carried"
like "$(cat "$T/err")" 'anth.jsonl:3: no "max_tokens" in "params" for id "a3" (anthropic requires it)' "a3 refused before sending"
is "$(stat_of '.requests["POST /v1/messages"]."200"')" 2 "two calls to /v1/messages"

# bad lines are reported FILE:LINE, the others go on
{ chat g1 "one"; echo 'not json'; echo '{"body":{"model":"m1"}}'; chat g1 "again"
  echo '{"id":"g5","params":{"model":"m1","messages":[]}}'; echo '{"id":"bad id","body":{"model":"m1"}}'
  echo '{"id":"g7","body":{"messages":[]}}'; chat g8 "eight"; } >bad.jsonl
sub bad.jsonl
is "$rc" 1 "bad lines: exit 1"
is "$(jqr .id "$T/out" | sort | tr '\n' ' ')" "g1 g8 " "the good items go"
like "$(cat "$T/err")" "bad.jsonl:2: " "line 2 located"
like "$(cat "$T/err")" 'bad.jsonl:3: no "id" or "custom_id"' "line 3: no id"
like "$(cat "$T/err")" 'bad.jsonl:4: duplicate id "g1"' "line 4: a repeated id"
like "$(cat "$T/err")" 'bad.jsonl:5: "params" is an Anthropic request' "line 5: params for openai"
like "$(cat "$T/err")" 'bad.jsonl:6: custom_id' "line 6: a bad id"
like "$(cat "$T/err")" 'bad.jsonl:7: no model string' "line 7: no model"
like "$(last)" "2 items: 2 succeeded, 0 failed, 0 for later; 0 retries, 0 possible double spends (retried after an unknown outcome); 6 rejected" "summary counts them"
sub --strict bad.jsonl
is "$rc" 65 "--strict: exit 65"
is "$(jqr .id "$T/out")" g1 "--strict: the item before the bad line goes, nothing after it"

# nested past 512 levels: refused by line, as qb-pack refuses it and
# qb-reconcile would
{ chat n1 "one"
  python3 -c 'n = 600; print("{\"id\":\"n2\",\"body\":{\"model\":\"m1\",\"x\":" + "[" * n + "]" * n + "}}")'
  chat n3 "three"; } >deep.jsonl
sub deep.jsonl
is "$rc:$(jqr .id "$T/out" | sort | tr '\n' ' ')" "1:n1 n3 " "600 levels: exit 1, the others answered, no result for it"
like "$(cat "$T/err")" "deep.jsonl:2: nested deeper than 512 levels" "600 levels: refused by line"

# provider batch lines and retry outcomes are items too
printf '%s\n' '{"custom_id":"e1","method":"POST","url":"/v1/embeddings","body":{"model":"emb","input":["a","b"]}}' \
    '{"id":"r1","outcome":"retry","status":"errored","http_status":429,"error":{"code":"rate_limit_exceeded"},"usage":null,"request_id":"x","batch_id":"b","response":null,"cost_usd":null,"account_error":true,"endpoint":"/v1/chat/completions","body":{"model":"m1","messages":[{"role":"user","content":"again"}]},"meta":1}' >kinds.jsonl
sub kinds.jsonl
is "$rc" 0 "a batch line and a retry outcome: exit 0"
is "$(of e1 '[.status,(.response.data|length),.url,has("custom_id")]|@tsv')" "$(printf 'succeeded\t2\t/v1/embeddings\tfalse')" \
    "a batch line: /v1/embeddings, id from custom_id"
is "$(of r1 '[.status,.http_status,.error,.batch_id,.request_id != "x",has("outcome"),has("cost_usd"),has("account_error"),.meta]|@tsv')" \
    "$(printf 'succeeded\t200\t\t\ttrue\tfalse\tfalse\tfalse\t1')" "a retry outcome: its old result members replaced"

# errors: a 400 is dead, a 500 is tried again, x-should-retry is obeyed
reset
printf '%s\n' '{"id":"k1","body":{"model":"m1","messages":[{"role":"user","content":"x"}],"qb_fake":{"status":400,"code":"bad_thing","param":"messages"}}}' >k1.jsonl
sub k1.jsonl
is "$rc" 1 "a 400: exit 1"
is "$(of k1 '[.status,.http_status,.error.type,.error.code,.error.param]|@tsv')" "$(printf 'errored\t400\tinvalid_request_error\tbad_thing\tmessages')" \
    "the error's type, code and param"
is "$(of k1 .response.error.code)" bad_thing "the error body is the response"
like "$(cat "$T/err")" 'k1.jsonl:1: id "k1": HTTP 400' "reported with its line"
is "$(qb-reconcile "$T/out" 2>/dev/null | jqr .outcome)" dead "qb-reconcile: dead"
script '{"on":"POST /v1/chat/completions","status":500,"error":true}'
sub -v items.jsonl
is "$rc" 0 "a 500, then answers: exit 0"
is "$(stat_of '.requests["POST /v1/chat/completions"]|[."500",."200"]|@tsv')" "$(printf '1\t5')" "the 500 is tried again"
like "$(last)" "1 retry, 0 possible double spends" "the retry counted"
reset
script '{"on":"POST /v1/chat/completions","status":503,"headers":{"x-should-retry":"false"},"error":true}'
chat s1 "no retry" >s1.jsonl
sub s1.jsonl
is "$rc:$(of s1 .http_status)" "75:503" "x-should-retry: false: not tried again, left for later"
is "$(stat_of '.requests["POST /v1/chat/completions"]."503"')" 1 "one call"
reset
script '{"on":"POST /v1/chat/completions","status":429,"headers":{"x-ratelimit-remaining-requests":"9","x-ratelimit-reset-requests":"20s","x-ratelimit-remaining-tokens":"0","x-ratelimit-reset-tokens":"1.5s"},"error":true}'
sub -v s1.jsonl
is "$rc" 0 "a 429 without retry-after: exit 0"
like "$(cat "$T/err")" "try 2 in 1.50 s (the server's wait" "a 429 without retry-after: the reset of the limit used up"
reset
script '{"on":"POST /v1/chat/completions","status":400,"body":{"error":{"message":"bad key sk-test here","type":"invalid_request_error","param":null,"code":null}}}'
sub s1.jsonl
unlike "$(cat "$T/out" "$T/err")" "sk-test" "a key the answer quotes is never printed"
is "$(of s1 .error.message)" "bad key [key] here" "it is blanked as [key]"
sub --base-url http://127.0.0.1:1/v1 s1.jsonl
is "$rc:$(of s1 .error.code)" "75:connection_failed" "no connection: connection_failed, for later"
like "$(last)" "4 retries, 0 possible double spends" "not sent: retried freely, no double spend"
is "$(qb-reconcile "$T/out" 2>/dev/null | jqr '[.outcome,.endpoint,.body.messages[0].content,.meta.for]|@tsv')" \
    "$(printf 'retry\t/v1/chat/completions\tno retry\ts1')" "qb-reconcile: a retry outcome that is an item again"

# server wait: the server's wait, the latest one, for the whole model
reset
script '{"on":"POST /v1/chat/completions","status":429,"headers":{"retry-after":"1"},"error":true}' \
    '{"on":"POST /v1/chat/completions","status":429,"headers":{"retry-after":"2"},"error":true}'
{ chat w1 "first"; chat w2 "second"; } >w.jsonl
t0=$(now)
sub -v --concurrency 1 w.jsonl
is "$rc" 0 "server wait: 429, 429, then answers: exit 0"
like "$(cat "$T/err")" 'id "w1": HTTP 429: Rate limit reached for requests (injected by qb-fake).; try 2 in 1.00 s (the server' \
    "server wait: waits the first retry-after"
like "$(cat "$T/err")" 'id "w1": HTTP 429: Rate limit reached for requests (injected by qb-fake).; try 3 in 2.00 s' \
    "server wait: then the latest one"
a1=$(stat_of '[.sync_admitted[][0]]|min')
ok_if "server wait: w1 answered at least 3 s after the start" "$(ge "$a1" "$(echo "$t0 + 3" | bc)" && echo y)" = y
is "$(stat_of '.sync_admitted|length')" 2 "server wait: two calls admitted"
like "$(last)" "2 retries" "server wait: two retries"
reset
script '{"on":"POST /v1/chat/completions","status":429,"headers":{"retry-after-ms":"1500","retry-after":"30"},"error":true}'
t0=$(now)
sub -v --concurrency 1 w.jsonl
is "$rc" 0 "server wait: retry-after-ms: exit 0"
like "$(cat "$T/err")" "try 2 in 1.50 s" "server wait: retry-after-ms wins over retry-after"
a1=$(stat_of '[.sync_admitted[][0]]|min')
ok_if "server wait: no call admitted before the wait is over" "$(ge "$a1" "$(echo "$t0 + 1.5" | bc)" && echo y)" = y
reset
when=$(date -u -d "@$(($(date +%s) + 4))" '+%a, %d %b %Y %H:%M:%S GMT')
script "{\"on\":\"POST /v1/chat/completions\",\"status\":429,\"headers\":{\"retry-after\":\"$when\"},\"error\":true}"
sub -v s1.jsonl
wait=$(sed -n 's/.*try 2 in \([0-9.]*\) s.*/\1/p' "$T/err")
is "$rc" 0 "server wait: an HTTP-date: exit 0"
ok_if "server wait: an HTTP-date 4 s ahead is a wait of 1 to 4 s (got $wait)" "$(ge "$wait" 1 && ge 4 "$wait" && echo y)" = y
reset
script '{"on":"POST /v1/chat/completions","status":429,"headers":{"retry-after":"500"},"error":true}'
t0=$(now)
sub --concurrency 1 w.jsonl
t1=$(now)
is "$rc" 75 "server wait: a wait past the cap: exit 75"
is "$(of w1 '[.http_status,.error.code]|@tsv')" "$(printf '429\trate_limit_exceeded')" "server wait: w1 keeps its 429"
like "$(cat "$T/err")" 'id "w1": HTTP 429: Rate limit reached for requests (injected by qb-fake).; the server asks to wait 500 s, past the 120 s qb waits' \
    "server wait: said so"
is "$(of w2 '[.status,.http_status,.error.type]|@tsv')" "$(printf 'errored\t\trate_limit_error')" "server wait: w2 not sent either: the hold is the model's"
like "$(of w2 .error.message)" "model m1 is held 500 s" "server wait: w2 says why"
is "$(stat_of '.requests["POST /v1/chat/completions"]|[."429",."200"]|@tsv')" "$(printf '1\t')" "server wait: one call only"
ok_if "server wait: nothing waited" "$(ge "$t0" "$(echo "$t1 - 3" | bc)" && echo y)" = y
is "$(qb-reconcile "$T/out" 2>/dev/null | jqr .outcome | sort -u)" retry "server wait: both retry outcomes"

# unknown outcome: a request sent whole and never answered may have been billed
reset
script '{"on":"POST /v1/chat/completions","delay":2,"times":-1}'
QB_HTTP_TIMEOUT=1 sub --unknown-retries 0 s1.jsonl
is "$rc" 75 "unknown outcome: no answer within the timeout, no unknown retries: exit 75"
is "$(of s1 '[.status,.http_status,.error.type,.error.code]|@tsv')" "$(printf 'errored\t\tconnection_error\toutcome_unknown')" \
    "unknown outcome: error code outcome_unknown"
like "$(of s1 .error.message)" "it may have been billed" "unknown outcome: the message says why"
like "$(last)" "0 retries, 0 possible double spends" "unknown outcome: not sent again"
until_idle
is "$(stat_of '.requests["POST /v1/chat/completions"]."200"')" 1 "unknown outcome: exactly one request reached the emulator"
is "$(qb-reconcile "$T/out" 2>/dev/null | jqr .outcome)" retry "unknown outcome: qb-reconcile: retry"
reset
script '{"on":"POST /v1/chat/completions","delay":2,"times":-1}'
QB_HTTP_TIMEOUT=1 sub --metrics m20.prom s1.jsonl
is "$rc:$(of s1 .error.code)" "75:outcome_unknown" "unknown outcome: held every time: outcome_unknown"
like "$(last)" "2 retries, 2 possible double spends" "unknown outcome: retried --unknown-retries times (2), each counted"
like "$(cat m20.prom)" 'qb_sync_unknown_total{provider="openai",model="m1"} 2' "unknown outcome: in the metrics too"
until_idle
is "$(stat_of '.requests["POST /v1/chat/completions"]."200"')" 3 "unknown outcome: three requests in all"
reset
script '{"on":"POST /v1/chat/completions","delay":2}'
QB_HTTP_TIMEOUT=1 sub w.jsonl
is "$rc" 0 "unknown outcome: held once, then answered: exit 0"
like "$(last)" "2 items: 2 succeeded, 0 failed, 0 for later; 1 retry, 1 possible double spend" "unknown outcome: one possible double spend"
reset
script '{"on":"POST /v1/chat/completions","close":true}'
sub --unknown-retries 1 s1.jsonl
is "$rc:$(of s1 .status)" "0:succeeded" "unknown outcome: a connection dropped after the request: tried again"
like "$(last)" "1 retry, 1 possible double spend" "unknown outcome: and counted"
until_idle

# a 401 stops at once; the key is never shown
reset
check_exit 77 "a wrong key: exit 77" env OPENAI_API_KEY=sk-wrong-SECRET-4242 qb-submit --sync --concurrency 1 -vv items.jsonl
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "one result, no more calls"
is "$(jqr '[.http_status,.account_error]|@tsv' "$T/out")" "$(printf '401\ttrue')" "marked an account-level error"
like "$(cat "$T/err")" "stopped: HTTP 401" "says it stopped"
like "$(last)" "4 not sent (stopped)" "the others not sent"
unlike "$(cat "$T/err" "$T/out")" "SECRET" "the key is never printed"
is "$(stat_of '.requests["POST /v1/chat/completions"]."401"')" 1 "one call"
qb-reconcile "$T/out" >rec401.jsonl 2>/dev/null
is "$?:$(jqr .outcome rec401.jsonl)" "69:retry" "qb-reconcile: a retry, not dead; exit 69"

# standard output closed or gone: exit 74
reset
qb-submit --sync items.jsonl >&- 2>"$T/err"
is "$?" 74 "standard output closed: exit 74"
is "$(stat_of '.requests["POST /v1/chat/completions"]')" null "nothing sent"
{ (sleep 0.3; cat items.jsonl) | qb-submit --sync 2>"$T/err"; echo $? >rc74; } | true
is "$(cat rc74)" 74 "standard output a closed pipe: exit 74"
like "$(cat "$T/err")" "write error on standard output" "said so"

# admission: never more than 3 in flight, at most 9 items of 6,500 tokens in a minute
fake_stop
fake_start --slow-above 3 --slow-seconds 2
# 6,500 tokens each: (2 + 4 + 25994 characters of strings) / 4
text=$(head -c 25994 /dev/zero | tr '\0' a)
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do chat "t$i" "$text"; done >big.jsonl
t0=$(now)
sub --concurrency 3 --tpm 60000 --deadline 3 --metrics m19.prom big.jsonl
t1=$(now)
is "$rc" 75 "admission: exit 75 (three left for later)"
is "$(jqr .status "$T/out" | sort | uniq -c | awk '{ printf "%s %s ", $1, $2 }')" "3 expired 9 succeeded " "admission: nine answered, three expired"
is "$(jqr 'select(.status == "expired") | .error.code' "$T/out" | sort -u)" deadline_exceeded "admission: error code deadline_exceeded"
is "$(stat_of .sync_admitted|jqr length)" 9 "admission: the emulator admitted nine"
ok_if "admission: never more than 3 in flight" "$(stat_of .sync_max_inflight)" -le 3
ok_if "admission: the nine within 3 s: the tenth would have needed the window" \
    "$(stat_of '(.sync_admitted|map(.[0])|max - min) < 3')" = true
like "$(cat m19.prom)" 'qb_sync_admitted_tokens_total{provider="openai",model="m1"} 58500' "admission: 9 x 6,500 tokens admitted"
ok_if "admission: given up at once, not at the end of the window" "$(ge "$t0" "$(echo "$t1 - 8" | bc)" && echo y)" = y
fake_stop
fake_start --rpm 2
{ chat p1 a; chat p2 b; chat p3 c; chat p4 d; } >rpm.jsonl
sub --concurrency 4 --deadline 3 --metrics m19b.prom rpm.jsonl
is "$rc" 75 "admission: --rpm 2 at the emulator: exit 75"
is "$(jqr .http_status "$T/out" | sort | tr '\n' ' ')" "200 200 429 429 " "admission: two answered, two 429s left for later"
like "$(cat m19b.prom)" 'qb_sync_requests_total{provider="openai",model="m1",code="429"} 2' "admission: 429s in the metrics"
win=$(sed -n 's/^qb_sync_window{provider="openai",model="m1"} //p' m19b.prom)
ok_if "admission: the 429s cut the window (4 -> $win)" "$(ge 3 "$win" && echo y)" = y

done_testing
