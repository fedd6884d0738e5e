#!/bin/sh
# qb-submit --sync --array: embeddings items packed into array requests,
# answers split back by index, usage shared out; a refused array bisected
# down to the poison input, which alone is dead; a stalled array an
# unknown outcome; what is not combined.
. "$(dirname "$0")/lib.sh"
plan 46

fake_start --max-input-tokens 8192

script() { printf '%s\n' "$@" | curl -s -X POST --data-binary @- "$FAKE_URL/_qb/script" >/dev/null; }
reset() { curl -s -X POST "$FAKE_URL/_qb/reset" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }
sub() { qb-submit --sync "$@" >"$T/out" 2>"$T/err"; rc=$?; }
of() { jqr "select(.id == \"$1\") | $2" "$T/out"; }
# emb ID INPUT-JSON [MODEL] [EXTRA]: an embeddings item
emb() { printf '{"id":"%s","endpoint":"/v1/embeddings","body":{"model":"%s","input":%s%s},"meta":{"for":"%s"}}\n' "$1" "${3:-e1}" "$2" "${4:-}" "$1"; }
EMB='.requests["POST /v1/embeddings"]'

cd "$T" || exit 1
check_exit 64 "--array 0" qb-submit --sync --array 0 /dev/null
check_exit 64 "--array without --sync" qb-submit --array 5 /dev/null

# 250 one-input items, --array 100: three requests
i=0; while [ $i -lt 250 ]; do emb "e$i" "\"text number $i\""; i=$((i + 1)); done >many.jsonl
sub --array 100 many.jsonl
is "$rc" 0 "250 items, --array 100: exit 0"
is "$(stat_of "$EMB.\"200\"")" 3 "three requests"
is "$(jqr .id "$T/out" | sort -u | wc -l | tr -d ' ')" 250 "250 results, one per id"
is "$(wc -l <"$T/out" | tr -d ' ')" 250 "250 lines"
is "$(jqr '[.status,.http_status,(.response.data|length),.response.data[0].index,.response.object,.response.model]|@tsv' "$T/out" | sort -u)" \
    "$(printf 'succeeded\t200\t1\t0\tlist\te1')" "each a succeeded list of its own vector"
is "$(of e7 .meta.for)" e7 "meta carried"
reset
sub many.jsonl
is "$(stat_of "$EMB.\"200\"")" 250 "without --array: one request per item"
jqr '"\(.id) \(.response.data[0].embedding) \(.usage.input_tokens)"' "$T/out" | sort >one.txt
sub --array 100 many.jsonl
jqr '"\(.id) \(.response.data[0].embedding) \(.usage.input_tokens)"' "$T/out" | sort >arr.txt
check_same one.txt arr.txt "vectors and usage equal those of one-item calls"
is "$(jqr -s 'map(.usage.input_tokens)|add' "$T/out")" "$(awk '{s+=$3} END {print s}' one.txt)" "usage sums to the requests' prompt_tokens"
is "$(of e3 '.response.usage.prompt_tokens == .usage.input_tokens')" true "the response's usage is the item's share"

# shares of one request's prompt_tokens by token estimate
reset
{ emb u1 '"aaaa"'; emb u2 '"bbbbbbbbbbbbbbbbbbb"'; emb u3 '["cc","dddddddd"]'; } >u.jsonl
sub --array 10 u.jsonl
is "$(stat_of "$EMB.\"200\"")" 1 "three items, one request"
is "$(jqr -s 'map(.usage.input_tokens)|add' "$T/out")" 9 "shares sum to the request's prompt_tokens"
is "$(of u3 '[.response.data[].index]|@csv')" "0,1" "a two-input item: indices 0, 1"
is "$(of u3 .response.data[1].embedding)" "$(emb x '"dddddddd"' | qb-submit --sync 2>/dev/null | jqr .response.data[0].embedding)" \
    "its second vector is that of its second input"

# an answer with usage but no vector to place: each input fails, once
reset
script '{"on":"POST /v1/embeddings","status":200,"body":{"object":"list","data":[],"model":"e1","usage":{"prompt_tokens":7,"total_tokens":7}}}'
{ emb n1 '"one"'; emb n2 '"two"'; } >novec.jsonl
timeout 30 qb-submit --sync --array 10 novec.jsonl >"$T/out" 2>"$T/err"; rc=$?
is "$rc" 75 "usage but no vectors: exit 75 (for later), no hang"
is "$(jqr .error.code "$T/out" | sort | uniq -c | tr -s ' ')" " 2 missing_result" "both items: missing_result"

# poison input: a poison input, bisected; the rest go through
reset
big=$(awk 'BEGIN { for (i = 0; i < 36000; i++) printf "x" }')
{ emb p1 "[\"short one\",\"$big\",\"short two\"]"; emb p2 '"plain two"'; emb p3 '"plain three"'; } >poison.jsonl
sub --array 2 --array-tokens 20000 poison.jsonl
is "$rc" 1 "poison input: exit 1 (an item failed)"
is "$(wc -l <"$T/out" | tr -d ' ')" 3 "three results"
is "$(of p1 '[.status,.outcome // "",.http_status,.error.code,.error.param]|@tsv')" \
    "$(printf 'errored\t\t400\tcontext_length_exceeded\tinput[1]')" "the poison's item is errored 400, naming input[1]"
like "$(of p1 .error.message)" "input[1] has 9000 tokens" "the message names input[1]"
is "$(of p1 '[.response.data[].index]|@csv')" "0,2" "its other vectors, with their original indices"
is "$(of p1 .response.data[0].embedding)" "$(emb x '"short one"' | qb-submit --sync 2>/dev/null | jqr .response.data[0].embedding)" \
    "input 0's vector"
is "$(of p1 .response.data[1].embedding)" "$(emb x '"short two"' | qb-submit --sync 2>/dev/null | jqr .response.data[0].embedding)" \
    "input 2's vector"
is "$(jqr 'select(.id != "p1") | .status' "$T/out" | sort -u)" succeeded "the other items succeeded"
qb-submit --sync --array 2 --array-tokens 20000 poison.jsonl 2>/dev/null | qb-reconcile >rec.jsonl 2>/dev/null
is "$(jqr 'select(.id == "p1") | .outcome' rec.jsonl)" dead "its outcome is dead"
reset
sub --array 2 --array-tokens 20000 poison.jsonl
is "$(stat_of "$EMB.\"400\"")" 2 "bisect: the array refused, then the poison alone"
is "$(stat_of "$EMB.\"200\"")" 3 "bisect: the other half, and the rest in two requests"
like "$(tail -n 1 "$T/err")" "0 retries" "bisect requests are not retries"
is "$(of p1 .usage.input_tokens)" 6 "the dead item's usage: its two vectors' share"

# --array-tokens splits
reset
t=$(awk 'BEGIN { for (i = 0; i < 400; i++) printf "y" }')
i=0; while [ $i -lt 10 ]; do emb "t$i" "\"$i$t\""; i=$((i + 1)); done >tok.jsonl
sub --array 100 --array-tokens 300 tok.jsonl
is "$(stat_of "$EMB.\"200\"")" 5 "ten 101-token inputs, 300 tokens a request: two a request, five requests"
is "$(jqr .status "$T/out" | sort -u)" succeeded "all succeeded"
reset
emb big1 "[\"a$t\",\"b$t\",\"c$t\",\"d$t\",\"e$t\"]" >split.jsonl
sub --array 2 split.jsonl
is "$(stat_of "$EMB.\"200\"")" 3 "an item of five inputs, --array 2: three requests"
is "$(of big1 '[.response.data[].index]|@csv')" "0,1,2,3,4" "one result with all five, in order"
is "$(of big1 .response.data[4].embedding)" "$(emb x "\"e$t\"" | qb-submit --sync 2>/dev/null | jqr .response.data[0].embedding)" \
    "the fifth vector is the fifth input's"

# mixed models and bodies are not combined
reset
{ emb m1 '"one"'; emb m2 '"two"' e2; emb m3 '"three"' e1 ',"dimensions":8'; emb m4 '"four"'; } >mixed.jsonl
sub --array 10 mixed.jsonl
is "$(stat_of "$EMB.\"200\"")" 3 "models and other members apart: three requests"
is "$(of m2 .response.model)" e2 "model copied"
is "$(jqr .status "$T/out" | sort -u)" succeeded "all succeeded"

# a non-embeddings endpoint: one request per item
reset
{ printf '{"id":"c1","body":{"model":"m1","messages":[{"role":"user","content":"hi"}]}}\n'
  printf '{"id":"c2","body":{"model":"m1","messages":[{"role":"user","content":"yo"}]}}\n'; } >chat.jsonl
sub --array 10 chat.jsonl
is "$(stat_of '.requests["POST /v1/chat/completions"]."200"')" 2 "chat items: one request each"
is "$rc" 0 "exit 0"

# stalled array: a stalled array is an unknown outcome
reset
script '{"on":"POST /v1/embeddings","match":"text number 150\"","delay":4,"close":true}'
QB_HTTP_TIMEOUT=1 qb-submit --sync --array 100 --unknown-retries 0 many.jsonl >"$T/out" 2>"$T/err"; rc=$?
is "$rc" 75 "stalled array: exit 75 (items for later)"
is "$(wc -l <"$T/out" | tr -d ' ')" 250 "250 results"
is "$(jqr 'select(.status != "succeeded") | .error.code' "$T/out" | sort | uniq -c | tr -s ' ')" " 100 outcome_unknown" \
    "the stalled array's 100 items: outcome unknown"
is "$(of e150 .error.type)" connection_error "a connection error"
is "$(jqr 'select(.status == "succeeded") | .id' "$T/out" | wc -l | tr -d ' ')" 150 "the other 150 succeeded"

fake_stop
done_testing
