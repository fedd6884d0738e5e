#!/bin/sh
# qb-reconcile: results joined to requests by id (tests/data/cases), job
# records, pending and failed batches, .gz and piped input, prices, items
# carried into outcomes, flat memory, the real fixtures.
. "$(dirname "$0")/lib.sh"
C=$TOP/tests/data/cases
D=$TOP/tests/data/reconcile
plan 150

# rec ARGS...: run qb-reconcile; stdout, stderr in $T/out, $T/err, status in $rc
rec() { qb-reconcile "$@" >"$T/out" 2>"$T/err"; rc=$?; }
# recin FILE ARGS...: the same with FILE on standard input
recin() { _f=$1; shift; qb-reconcile "$@" <"$_f" >"$T/out" 2>"$T/err"; rc=$?; }
# col FILTER: FILTER over every outcome, one line, space separated
col() { jqr "$1" "$T/out" | tr '\n' ' '; }
# of ID FILTER: FILTER over the outcome of ID
of() { jqr "select(.id == \"$1\") | $2" "$T/out"; }
# last: the summary line
last() { tail -n 1 "$T/err"; }
# job FILE ARGS...: a job record (jq -n arguments build the rest) into FILE
job() { _f=$1; shift; jq -nc "$@" >"$_f"; }

# options and exit statuses
check_exit 0 "-h" qb-reconcile -h
like "$(cat "$T/out")" "usage: qb-reconcile [-hquVv] [--strict] [-d dir [-l ledger]] [-r file]... [--prices file]" "-h prints the synopsis"
check_exit 0 "-V" qb-reconcile -V
like "$(cat "$T/out")" "qb-reconcile 0." "-V prints the version"
check_exit 64 "unknown option" qb-reconcile --nope
check_exit 66 "a -r file missing" qb-reconcile -r "$T/none.jsonl" "$C/out-of-order.output.jsonl"
is "$(cat "$T/err"):$(wc -c <"$T/out" | tr -d ' ')" "qb-reconcile: $T/none.jsonl: No such file or directory:0" "missing -r named, nothing written"
check_exit 66 "an operand missing" qb-reconcile -r "$C/out-of-order.input.jsonl" "$T/none.jsonl"
is "$(wc -c <"$T/out" | tr -d ' ')" 0 "missing operand: nothing written"
check_exit 64 "stdin twice" qb-reconcile -r - </dev/null
check_exit 66 "--prices file missing" qb-reconcile --prices "$T/none.jsonl" -r "$C/out-of-order.input.jsonl" /dev/null

# out-of-order: out of order, joined on custom_id only
rec -r "$C/out-of-order.input.jsonl" "$C/out-of-order.output.jsonl"
is "$rc" 0 "out-of-order: exit 0, every outcome done"
is "$(col '"\(.id)=\(.outcome)=\(.response.choices[0].message.content)"')" \
    "c3=done=three c1=done=one c2=done=two " "out-of-order: joined by id, streamed in result order"
is "$(col .request_id)" "q3 q1 q2 " "out-of-order: each result's own request_id"
is "$(cat "$T/err")" "qb-reconcile: 3 requests: 3 done, 0 retry, 0 dead, 0 pending; 0 unknown, 0 duplicate; tokens in 0 out 0" "out-of-order: summary"
is "$(col 'has("body")')" "false false false " "out-of-order: done outcomes carry no body"
rec -q --requests "$C/out-of-order.input.jsonl" "$C/out-of-order.output.jsonl"
is "$rc:$(cat "$T/err"):$(wc -l <"$T/out" | tr -d ' ')" "0::3" "--requests, -q: no summary"
qb-reconcile -r "$C/out-of-order.input.jsonl" "$C/out-of-order.output.jsonl" >/dev/full 2>"$T/err"
is "$?:$(tail -n 1 "$T/err")" "74:qb-reconcile: write error on standard output: No space left on device" "a write error: exit 74"

# expired: an expired batch: x1 done, x2 and x3 retry as items
rec -r "$D/expired.requests.jsonl" "$C/expired.output.jsonl" "$C/expired.errors.jsonl"
is "$rc" 1 "expired: exit 1 (retries)"
is "$(col '"\(.id)=\(.outcome)=\(.status)"')" "x1=done=succeeded x2=retry=expired x3=retry=expired " "expired: x1 done, x2 x3 retry, status expired"
is "$(of x2 .error.code)" batch_expired "expired: error code kept"
is "$(of x1 .usage.input_tokens):$(of x1 .usage.output_tokens)" "5:1" "expired: x1 usage from prompt/completion tokens"
jqr 'select(.outcome == "retry") | {id, endpoint, body}' "$T/out" >"$T/retry.items"
jqr '{id: .custom_id, endpoint: .url, body} | select(.id != "x1")' "$D/expired.requests.jsonl" >"$T/want.items"
check_same "$T/retry.items" "$T/want.items" "expired: retry outcomes carry the request's endpoint and body"
jqr 'select(.outcome == "retry")' "$T/out" >"$T/retry.jsonl"
mkdir "$T/repack"
qb-pack -d "$T/repack" "$T/retry.jsonl" >"$T/pack.out" 2>"$T/pack.err"
is "$?:$(jqr .requests "$T/pack.out")" "0:2" "expired: the retry outcomes are valid items (qb-pack takes them)"
grep -h '"body"' "$D/expired.requests.jsonl" | sed -n '2,3s/.*"body"://p' | sed 's/}$//' >"$T/want.bodies"
sed 's/.*"body"://; s/}$//' "$T/retry.jsonl" >"$T/got.bodies"
check_same "$T/got.bodies" "$T/want.bodies" "expired: bodies copied byte for byte"

# http-error-in-response: an HTTP error inside response with "error": null
rec -r "$D/http-error.requests.jsonl" "$C/http-error-in-response.jsonl"
is "$rc" 1 "http-error-in-response: exit 1"
is "$(of k1 '[.outcome,.status,.http_status,.error.type,.error.code,.error.param,.error.message]|@tsv')" \
    "dead	errored	400	invalid_request_error	context_length_exceeded	max_tokens	max_tokens is too large" \
    "http-error-in-response: k1 dead, type, code, param, message kept"
is "$(of k1 'has("body")')" false "http-error-in-response: a dead outcome carries no body"

# anthropic-result-types: the four Anthropic result types
rec -r "$D/anthropic.requests.jsonl" "$C/anthropic-result-types.jsonl"
is "$rc" 69 "anthropic-result-types: exit 69, the account refuses"
is "$(col '"\(.id)=\(.outcome)=\(.status)"')" "z1=done=succeeded z2=retry=errored z3=retry=expired z4=retry=canceled " "anthropic-result-types: z1 done, z3 z4 retry, z2 not dead"
is "$(of z2 .account_error)" true "anthropic-result-types: z2 marked as an account-level error"
like "$(cat "$T/err")" 'anthropic-result-types.jsonl:2: account-level error for id "z2": invalid_request_error: Your credit balance is too low; fix the account' "anthropic-result-types: said once, with the reason"
is "$(of z2 '[.error.type,.error.message]|@tsv')" "invalid_request_error	Your credit balance is too low" "anthropic-result-types: z2 keeps type and message"
is "$(of z1 '"\(.usage.input_tokens)/\(.usage.output_tokens)/\(.response.id)"')" "3/1/msg_1" "anthropic-result-types: z1 usage and message"
is "$(of z3 '"\(.endpoint) \(.params == .body) \(.body.messages[0].content)"')" "/v1/messages true hi z3" "anthropic-result-types: Anthropic retry carries endpoint, body and params"

# the bad-line files as request files: bad lines reported with FILE:LINE, the rest go through
rec -r "$C/malformed-middle.jsonl" -r "$C/non-object.jsonl" -r "$C/blank-lines.jsonl" \
    -r "$C/crlf.jsonl" -r "$C/bom.jsonl" -r "$C/invalid-utf8.jsonl" "$D/hygiene.results.jsonl"
is "$rc" 1 "bad lines: exit 1 (lines rejected)"
cat >"$T/want.err" <<EOF
qb-reconcile: $C/malformed-middle.jsonl:2: parse error: premature EOF at end of line
qb-reconcile: $C/non-object.jsonl:1: not a JSON object
qb-reconcile: $C/non-object.jsonl:2: not a JSON object
qb-reconcile: $C/non-object.jsonl:3: not a JSON object
qb-reconcile: $C/invalid-utf8.jsonl:2: lexical error: invalid bytes in UTF8 string at byte 126
qb-reconcile: 11 requests: 11 done, 0 retry, 0 dead, 0 pending; 0 unknown, 0 duplicate; tokens in 11 out 11
EOF
check_same "$T/err" "$T/want.err" "bad lines: each named with its line; blank lines silent"
is "$(col .id)" "g1 g3 n1 b1 b2 w1 w2 bom1 bom2 v1 v3 " "bad lines: every good request joined"
# re-read by offset: after a BOM, with CRLF endings, from a .gz and from a pipe
# One result line for another id: result lines without jobs are all there is,
# so the requests without a result are retries.
echo '{"custom_id":"zz","response":{"status_code":200,"body":{}},"error":null}' >"$T/other.res"
rec -r "$C/bom.jsonl" -r "$C/crlf.jsonl" -r "$C/blank-lines.jsonl" "$T/other.res"
is "$(col '"\(.id)=\(.body.messages[0].content)"')" "bom1=hi bom2=hi w1=one w2=two b1=one b2=two " "blank-lines, crlf, bom: retries re-read from the right offsets"
ok_if "crlf, bom: no BOM and no CR in the output" "$(grep -c "$(printf '\r\|\357\273\277')" "$T/out")" = 0
gzip -c "$D/expired.requests.jsonl" >"$T/req.jsonl.gz"
rec -r "$T/req.jsonl.gz" "$C/expired.output.jsonl"
is "$rc:$(col '"\(.id)=\(.outcome)=\(.body.messages[0].content)"')" "1:x1=done=null x2=retry=two x3=retry=three " ".gz request file: indexed and re-read"
recin "$D/expired.requests.jsonl" -r - "$C/expired.output.jsonl"
is "$rc:$(col '"\(.id)=\(.outcome)=\(.body.messages[0].content)"')" "1:x1=done=null x2=retry=two x3=retry=three " "requests on a pipe (-r -): indexed and re-read"

# a request the span scanner cannot record whole (over 64 members, a long key) still carries through
jq -nc '{meta: ([range(70) | {key: "k\(.)", value: .}] | from_entries), ("x" * 80): 1, body: {model: "m1", messages: []}, endpoint: "/v1/embeddings", custom_id: "wide"}' >"$T/wide.req"
rec -r "$T/wide.req" "$T/other.res"
is "$(col '"\(.id) \(.meta | length) \(.meta.k69) \(.endpoint) \(.body.model) \(has("x" * 80))"')" "wide 70 69 /v1/embeddings m1 true " "a wide request: indexed and carried whole"
# a "meta" of many members keeps the line on the byte-copy path: the body
# comes out as it was written, spacing and escapes included
jq -nc '{custom_id: "sp", meta: ([range(70) | {key: "k\(.)", value: .}] | from_entries), body: {model: "m1", messages: []}}' |
    sed 's/"messages":\[\]/"messages" : [ "\\u00e9\\\/" ]/' >"$T/spaced.req"
rec -r "$T/spaced.req" "$T/other.res"
is "$(sed 's/.*"body"://; s/}$//' "$T/out"):$(jqr '.meta | length' "$T/out")" '{"model":"m1","messages" : [ "\u00e9\/" ]}:70' "a retry's body copied byte for byte beside a big meta"

# dup-id.jsonl as requests: a duplicate id reported at its line
rec -r "$C/dup-id.jsonl" "$T/other.res"
is "$(head -n 1 "$T/err")" "qb-reconcile: $C/dup-id.jsonl:2: duplicate id \"a1\" (first at $C/dup-id.jsonl:1)" "duplicate request id reported at its line"
is "$rc:$(col '"\(.id)=\(.body.messages[0].content)"')" "1:a1=one " "the first request with the id stands"
check_exit 65 "--strict: a duplicate request id stops" qb-reconcile --strict -r "$C/dup-id.jsonl" /dev/null

# result lines of every kind of fault; unknown ids and duplicates
rec -r "$C/out-of-order.input.jsonl" "$D/bad.results.jsonl"
B=$D/bad.results.jsonl
cat >"$T/want.err" <<EOF
qb-reconcile: $B:3: parse error: premature EOF at end of line
qb-reconcile: $B:4: not a JSON object
qb-reconcile: $B:5: "response" is neither an object nor null
qb-reconcile: $B:6: "custom_id" is not a string
qb-reconcile: $B:7: neither a response nor an error
qb-reconcile: $B:8: unknown result type "weird"
qb-reconcile: $B:9: a request, not a result (requests go with -r)
qb-reconcile: $B:10: neither a result nor a job record
qb-reconcile: $B:11: result for unknown id "c9"
qb-reconcile: $B:13: duplicate result for id "c2"; the first one (done) stands
qb-reconcile: $B:14: lexical error: invalid bytes in UTF8 string at byte 68
qb-reconcile: 3 requests: 2 done, 1 retry, 0 dead, 0 pending; 1 unknown, 1 duplicate; tokens in 6 out 3
EOF
check_same "$T/err" "$T/want.err" "bad result lines: each named with FILE:LINE and its reason"
is "$rc" 1 "bad result lines: exit 1"
is "$(col '"\(.id)=\(.outcome)=\(.status)"')" "c1=done=succeeded c2=done=succeeded c3=retry=missing " "BOM and CRLF result lines read; one outcome per id; missing becomes retry"
is "$(of c3 '[.error.code,.error.message]|@tsv')" "missing_result	no result for this id" "missing result: error says so"
is "$(of c2 .response.choices[0].message.content)" two "duplicate: the first result wins"
rec --strict -r "$C/out-of-order.input.jsonl" "$D/bad.results.jsonl"
is "$rc:$(col .id)" "65:c1 " "--strict: stops at the first bad line with 65, earlier outcomes kept"
is "$(tail -n 1 "$T/err")" "qb-reconcile: stopped at the first rejected line (--strict)" "--strict: says why"
printf '%s\n' '{"custom_id":"c9","response":{"status_code":200,"body":{}},"error":null}' >"$T/unknown.jsonl"
check_exit 65 "--strict: an unknown id stops too" qb-reconcile --strict -r "$C/out-of-order.input.jsonl" "$T/unknown.jsonl"

# qb items: meta, queue, receipt, receives and unknown keys carried; prices
rec --prices "$D/prices.jsonl" -r "$D/items.jsonl" "$D/items.results.jsonl"
is "$rc" 1 "items: exit 1 (one dead, one retry)"
is "$(col '"\(.id)=\(.outcome)"')" "i2=done i1=done i4=dead i3=retry " "items: outcomes as results arrive, then the missing one"
is "$(of i1 '[.meta.doc,.queue,.receipt,.receives]|@tsv')" "41	dir:/var/spool/qb/in	cur/i1:2,lease	1" "items: meta, queue, receipt, receives carried"
is "$(of i2 .note)" carried "items: unknown item keys carried"
is "$(of i4 '[.meta.doc,.receipt,has("body")]|@tsv')" "44	cur/i4:2,lease	false" "items: a dead outcome carries the item but not its body"
is "$(of i3 '[.meta.doc,.endpoint,.body.messages[0].content,.status]|@tsv')" "43	/v1/chat/completions	item 3	missing" "items: a retry is the item again"
jqr 'select(.id == "i3") | del(.id, .outcome, .cost_usd, .status, .http_status, .error, .usage, .request_id, .batch_id, .response)' "$T/out" >"$T/got.item"
jqr 'select(.id == "i3") | del(.id)' "$D/items.jsonl" >"$T/want.item"
is "$(jq -S . "$T/got.item")" "$(jq -S . "$T/want.item")" "items: the retry holds every member of the item"
is "$(col .cost_usd)" "2.7e-06 2.85e-06 null null " "--prices: cost_usd at the batch price, null without usage"
is "$(last)" "qb-reconcile: 4 requests: 2 done, 1 retry, 1 dead, 0 pending; 0 unknown, 0 duplicate; tokens in 17 out 5; cost \$0.00000555" "--prices: cost in the summary"
jq -nc '{custom_id:"p1",method:"POST",url:"/v1/chat/completions",body:{model:"alias",messages:[]}}' >"$T/p.req"
jq -nc '{custom_id:"p1",response:{status_code:200,body:{model:"gpt-4o-2024-08-06",usage:{prompt_tokens:1000,completion_tokens:100}}},error:null}' >"$T/p.res"
rec --prices "$D/prices.jsonl" -r "$T/p.req" "$T/p.res"
is "$rc:$(col .cost_usd)" "0:0.0035 " "--prices: a dated model is priced by its base name"
sed 's/gpt-4o-2024-08-06/gpt-4o-mini/' "$T/p.res" >"$T/p2.res"
rec --prices "$D/prices.jsonl" -r "$T/p.req" "$T/p2.res"
is "$(col .cost_usd)" "null " "--prices: another model (gpt-4o-mini) is not priced as gpt-4o"
rec -r "$D/items.jsonl" "$D/items.results.jsonl"
is "$(col .cost_usd)" "null null null null " "no --prices: cost_usd null"
printf '%s\n' '{"model":"m1","input_per_mtok":"cheap","output_per_mtok":1}' >"$T/badprice.jsonl"
rec --prices "$T/badprice.jsonl" -r "$C/out-of-order.input.jsonl" "$C/out-of-order.output.jsonl"
is "$rc:$(head -n 1 "$T/err")" "1:qb-reconcile: $T/badprice.jsonl:1: expected \"model\" and numbers \"input_per_mtok\", \"output_per_mtok\" >= 0" "a bad price line is reported"

# vLLM run-batch output and qb result records
rec -r "$D/vllm.requests.jsonl" "$D/vllm.output.jsonl"
is "$(col '"\(.id)=\(.outcome)=\(.http_status)"')" "vl1=done=200 vl2=dead=400 vl3=retry=503 vl4=done=null " "vllm: status_code decides; old bare completion done"
is "$(of vl2 .error.message)" "This model's maximum context length is 8 tokens" "vllm: a string error is the message"
rec -r "$C/out-of-order.input.jsonl" "$D/sync.results.jsonl"
is "$(col '"\(.id)=\(.outcome)"')" "c1=done c2=retry c3=dead " "qb result records classified"
is "$(of c2 .error.retry_after)" 20 "qb result records: the error object carried whole"

# job records on stdin, pointing at result files in $T
cp "$D/expired.requests.jsonl" "$C/expired.output.jsonl" "$T/"
gzip -c "$C/expired.errors.jsonl" >"$T/expired.errors.jsonl.gz"
job "$T/job.x" --arg t "$T" '{provider:"openai",batch_id:"batch_x",file:"\($t)/expired.requests.jsonl",sha256:"0",status:"expired",ended:true,results:["\($t)/expired.output.jsonl","\($t)/expired.errors.jsonl.gz"]}'
recin "$T/job.x"
is "$rc" 1 "job: exit 1"
is "$(col '"\(.id)=\(.outcome)=\(.status)=\(.batch_id)"')" "x1=done=succeeded=batch_x x2=retry=expired=batch_x x3=retry=expired=batch_x " "job: its file indexed, its results (one .gz) read, batch_id set"
is "$(of x3 .body.messages[0].content)" three "job: a retry from the job's own file is an item"
job "$T/job.p" --arg t "$T" '{provider:"openai",batch_id:"batch_p",file:"\($t)/expired.requests.jsonl",status:"in_progress",ended:false,results:["\($t)/expired.output.jsonl"]}'
recin "$T/job.p"
is "$rc:$(col .id)" "0:x1 " "job not ended: results that came are outcomes, exit 0"
is "$(last)" "qb-reconcile: 3 requests: 1 done, 0 retry, 0 dead, 2 pending; 0 unknown, 0 duplicate; tokens in 5 out 1" "job not ended: the rest pending, no outcome"
job "$T/job.q" --arg t "$T" '{batch_id:"batch_q",file:"\($t)/expired.requests.jsonl",status:"validating"}'
recin "$T/job.q"
is "$rc:$(wc -c <"$T/out" | tr -d ' '):$(last)" "0:0:qb-reconcile: 3 requests: 0 done, 0 retry, 0 dead, 3 pending; 0 unknown, 0 duplicate; tokens in 0 out 0" "job with no ended and a live status: pending"
job "$T/job.f" --arg t "$T" '{provider:"openai",batch_id:"batch_f",file:"\($t)/expired.requests.jsonl",status:"failed",ended:true,errors:[{code:"token_limit_exceeded",line:null,param:null,message:"Enqueued token limit reached for m1"}],results:[]}'
recin "$T/job.f"
is "$rc" 1 "failed job: exit 1"
is "$(col '"\(.id)=\(.outcome)=\(.error.code)"')" "x1=retry=token_limit_exceeded x2=retry=token_limit_exceeded x3=retry=token_limit_exceeded " "failed job: every request retry with the batch's error"
is "$(of x1 '[.status,.error.message,.batch_id,.endpoint]|@tsv')" "missing	Enqueued token limit reached for m1	batch_f	/v1/chat/completions" "failed job: message, batch_id and endpoint"
job "$T/job.o" --arg t "$T" '{batch_id:"batch_o",file:"\($t)/expired.requests.jsonl",status:"failed",ended:true,errors:{object:"list",data:[{code:"invalid_json_line",message:"bad line"}]}}'
recin "$T/job.o"
is "$(of x2 .error.code)" invalid_json_line "failed job: errors.data[0] as OpenAI nests it"
# a batch failed by validation of some of its lines (qb-providers(7) OPENAI Errors):
# the request at each line named is dead with that line's error, the
# others retry with an error naming the lines; every request once
vj() { jq -nc --arg f "$(jqr .file "$T/vp.pack")" '{provider:"openai",batch_id:"batch_v",file:$f,status:"failed",ended:true,errors:[{code:"invalid_request",message:"stream is not supported",param:"body.stream",line:2}],results:[]}'; }
mkdir "$T/vp"
qb-pack -p openai -e /v1/chat/completions -d "$T/vp" "$D/stream.items.jsonl" >"$T/vp.pack"
vj >"$T/job.v"
recin "$T/job.v" -r "$D/stream.items.jsonl"
is "$rc:$(col '"\(.id)=\(.outcome)=\(.status)"')" "1:v2=dead=errored v1=retry=missing " "failed at line 2: v2 dead at once, v1 retry at the end"
is "$(of v2 '"\(.error.type)|\(.error.code)|\(.error.message)|\(.error.param)|\(.http_status)|\(.batch_id)|\(has("body"))"')" \
    "null|invalid_request|stream is not supported|body.stream|null|batch_v|false" "failed at line 2: dead with the line's code, message and param"
is "$(of v1 '"\(.error.code)|\(.error.message)|\(.error.param)|\(.batch_id)|\(.body.messages[0].content)"')" \
    "batch_failed|the batch failed: line 2: invalid_request: stream is not supported|null|batch_v|a" "failed at line 2: v1 retry, told which line failed the batch, an item again"
is "$(cat "$T/err")" "qb-reconcile: 2 requests: 0 done, 1 retry, 1 dead, 0 pending; 0 unknown, 0 duplicate; tokens in 0 out 0" "failed at line 2: nothing unmatched"
cp "$T/out" "$T/v.outcomes"
rec -r "$D/stream.items.jsonl" "$T/v.outcomes"
is "$(col '"\(.id)=\(.outcome)=\(.error.code)"')" "v2=dead=invalid_request v1=retry=batch_failed " "failed at line 2: the outcomes, read as results, give the same outcomes"
recin "$T/job.v"
is "$(col '"\(.id)=\(.outcome)=\(.endpoint)"')" "v2=dead=null v1=retry=/v1/chat/completions " "failed at line 2: from the batch file alone too"
cp "$D/failed.batch.jsonl" "$T/fb.jsonl"
# fjob NAME ERRORS [STATUS [ENDED]]: job batch_NAME over $T/fb.jsonl, failed with ERRORS
fjob() { jq -nc --arg n "$1" --arg f "$T/fb.jsonl" --argjson e "$2" --arg s "${3:-failed}" --argjson d "${4:-true}" \
    '{provider:"openai",batch_id:"batch_\($n)",file:$f,status:$s,ended:$d,errors:$e,results:[]}' >"$T/job.$1"; }
fjob two '{"object":"list","data":[{"code":"model_mismatch","message":"The provided model m2 does not match","param":"body.model","line":2},{"code":"url_mismatch","message":"The provided URL does not match","param":"url","line":5}]}'
recin "$T/job.two"
is "$rc:$(col '"\(.id)=\(.outcome)=\(.error.code)=\(.error.param)"')" \
    "1:f2=dead=model_mismatch=body.model f5=dead=url_mismatch=url f1=retry=batch_failed=null f3=retry=batch_failed=null f4=retry=batch_failed=null f6=retry=batch_failed=null " \
    "two bad lines (errors.data): both dead, the rest retry"
is "$(of f6 .error.message)" \
    "the batch failed: line 2: model_mismatch: The provided model m2 does not match; line 5: url_mismatch: The provided URL does not match" "two bad lines: the retries name both"
is "$(last)" "qb-reconcile: 6 requests: 0 done, 4 retry, 2 dead, 0 pending; 0 unknown, 0 duplicate; tokens in 0 out 0" "two bad lines: summary"
fjob tok '[{"code":"token_limit_exceeded","message":"Enqueued token limit reached for m1","param":null,"line":null},{"code":"invalid_request","message":"Streaming is not supported in the Batch API.","param":"body.stream","line":4}]'
recin "$T/job.tok"
is "$(col '"\(.id)=\(.outcome)=\(.status)=\(.error.code)"')" \
    "f4=dead=errored=invalid_request f1=retry=missing=token_limit_exceeded f2=retry=missing=token_limit_exceeded f3=retry=missing=token_limit_exceeded f5=retry=missing=token_limit_exceeded f6=retry=missing=token_limit_exceeded " \
    "bad line and token_limit_exceeded (line null): the line dead, the rest retry with the batch's error"
is "$(of f1 .error.message)" "Enqueued token limit reached for m1; also line 4: invalid_request: Streaming is not supported in the Batch API." "bad line and token limit: the message says both"
fjob far '[{"code":"invalid_request","message":"bad","param":null,"line":9}]'
recin "$T/job.far"
is "$rc:$(head -n 1 "$T/err")" "1:qb-reconcile: <stdin>:1: job batch_far: line 9 (invalid_request) matches no request in $T/fb.jsonl" "a line past the end: reported"
is "$(col '"\(.id)=\(.outcome)"'):$(of f1 .error.message)" "f1=retry f2=retry f3=retry f4=retry f5=retry f6=retry :the batch failed: line 9: invalid_request: bad" \
    "a line past the end: every request one retry"
fjob many "$(jq -nc '[1,2,3,5,4] | map({code:"invalid_request",message:"m\(.)",line:.})')"
recin "$T/job.many"
is "$(col '"\(.id)=\(.outcome)=\(.error.message)"')" "f1=dead=m1 f2=dead=m2 f3=dead=m3 f5=dead=m5 f4=dead=m4 f6=retry=the batch failed: line 1: invalid_request: m1; line 2: invalid_request: m2; line 3: invalid_request: m3; and 2 more " \
    "five bad lines: each dead with its own error; the retry names three and counts the rest"
fjob same '[{"code":"model_mismatch","message":"a","line":2},{"code":"url_mismatch","message":"b","line":2}]'
recin "$T/job.same"
is "$(jqr .id "$T/out" | sort | uniq -d | wc -l | tr -d ' '):$(wc -l <"$T/out" | tr -d ' '):$(of f2 .error.code)" "0:6:model_mismatch" "two errors for one line: one dead outcome, the first error's"
fjob cap '[{"code":"invalid_request","message":"bad","line":3}]' Failed null
recin "$T/job.cap"
is "$(col '"\(.id)=\(.outcome)"')" "f3=dead f1=retry f2=retry f4=retry f5=retry f6=retry " "\"Failed\" (Azure), ended absent: the same"
fjob live '[{"code":"invalid_request","message":"bad","line":3}]' failed false
recin "$T/job.live"
is "$rc:$(wc -c <"$T/out" | tr -d ' '):$(last)" "0:0:qb-reconcile: 6 requests: 0 done, 0 retry, 0 dead, 6 pending; 0 unknown, 0 duplicate; tokens in 0 out 0" "failed but \"ended\": false: no outcome, pending"
job "$T/job.gone" --arg t "$T" '{batch_id:"batch_gone",file:"\($t)/gone.batch.jsonl",status:"failed",ended:true,errors:[{code:"invalid_request",message:"bad",line:2}]}'
recin "$T/job.gone" -r "$T/fb.jsonl"
cat >"$T/want.err" <<EOF2
qb-reconcile: <stdin>:1: job batch_gone: $T/gone.batch.jsonl: No such file or directory
qb-reconcile: <stdin>:1: job batch_gone: line 2 (invalid_request) matches no request: its file could not be read
qb-reconcile: 6 requests: 0 done, 0 retry, 0 dead, 0 pending; 0 unknown, 0 duplicate; tokens in 0 out 0; 6 in no job read, left without outcome
EOF2
check_same "$T/err" "$T/want.err" "the job's file missing: the line reported, no request claimed"
is "$rc:$(wc -c <"$T/out" | tr -d ' ')" "1:0" "the job's file missing: exit 1, no outcome"
# the emulator's own validation cases: a repeated custom_id, a line that is not JSON
cp "$C/dup-id.jsonl" "$C/malformed-middle.jsonl" "$T/"
job "$T/job.dup" --arg t "$T" '{batch_id:"batch_dup",file:"\($t)/dup-id.jsonl",status:"failed",ended:true,errors:[{code:"duplicate_custom_id",message:"The custom_id for this request is a duplicate of another request.",param:"custom_id",line:2}]}'
recin "$T/job.dup"
is "$(col '"\(.id)=\(.outcome)=\(.error.code)=\(.body.messages[0].content)"'):$(sed -n 2p "$T/err")" \
    "a1=retry=batch_failed=one :qb-reconcile: <stdin>:1: job batch_dup: line 2 (duplicate_custom_id) matches no request in $T/dup-id.jsonl" \
    "duplicate_custom_id at line 2: the first a1 is not dead; line 2 reported"
job "$T/job.mal" --arg t "$T" '{batch_id:"batch_mal",file:"\($t)/malformed-middle.jsonl",status:"failed",ended:true,errors:[{code:"invalid_json_line",message:"This line is not parseable as valid JSON.",line:2}]}'
recin "$T/job.mal"
is "$(col '"\(.id)=\(.outcome)=\(.error.code)"'):$(sed -n 2p "$T/err")" \
    "g1=retry=batch_failed g3=retry=batch_failed :qb-reconcile: <stdin>:1: job batch_mal: line 2 (invalid_json_line) matches no request in $T/malformed-middle.jsonl" \
    "invalid_json_line at line 2: no request there, the others retry"
# end to end: qb-pack, qb-submit, qb-poll against the emulator, which
# refuses "stream": true as OpenAI does
if command -v python3 >/dev/null 2>&1; then
	fake_start --batch-seconds 0.2
	mkdir "$T/eb" "$T/er"
	qb-pack -p openai -e /v1/chat/completions -d "$T/eb" "$D/stream.items.jsonl" 2>/dev/null |
	    qb-submit --ledger "$T/e.ledger" 2>/dev/null |
	    qb-poll --wait --interval 0.1 --timeout 60 -d "$T/er" >"$T/e.polled" 2>/dev/null
	recin "$T/e.polled" -r "$D/stream.items.jsonl"
	is "$rc:$(col '"\(.id)=\(.outcome)=\(.error.code)=\(.error.param)"')" "1:v2=dead=invalid_request=body.stream v1=retry=batch_failed=null " \
	    "end to end: the emulator's failed batch, v2 dead, v1 retry"
	is "$(of v1 .error.message)" "the batch failed: line 2: invalid_request: Streaming is not supported in the Batch API." "end to end: the retry names the line"
	fake_stop
else
	skip "python3 is needed for the provider emulator"
	skip "python3 is needed for the provider emulator"
fi
job "$T/job.c" --arg t "$T" '{batch_id:"batch_c",file:"\($t)/expired.requests.jsonl",status:"completed",ended:true,results:["\($t)/expired.output.jsonl"]}'
recin "$T/job.c"
is "$(col '"\(.id)=\(.outcome)=\(.status)=\(.error.code)"')" "x1=done=succeeded=null x2=retry=missing=missing_result x3=retry=missing=missing_result " "completed job: requests without a line retry, missing_result"
job "$T/job.e" --arg t "$T" '{batch_id:"batch_e",file:"\($t)/expired.requests.jsonl",status:"expired",ended:true,results:["\($t)/expired.output.jsonl"]}'
recin "$T/job.e"
is "$(of x2 '[.status,.error.code]|@tsv')" "expired	batch_expired" "expired job without error lines: status expired"
job "$T/job.m" --arg t "$T" '{batch_id:"batch_m",file:"\($t)/expired.requests.jsonl",status:"completed",ended:true,results:["\($t)/gone.jsonl"]}'
recin "$T/job.m"
is "$rc:$(wc -c <"$T/out" | tr -d ' ')" "1:0" "a results file missing: exit 1, no retry written"
is "$(head -n 1 "$T/err")" "qb-reconcile: <stdin>:1: job batch_m: results $T/gone.jsonl: No such file or directory; its requests stay pending" "a results file missing: reported, requests pending"
# cron: qb-poll -i prints only the jobs that ended; the -r window also
# holds requests of batches still running, which must get no outcome
cp "$D/items.jsonl" "$T/window.jsonl"
recin "$T/job.x" -r "$T/window.jsonl"
is "$(col .id)" "x1 x2 x3 " "jobs read: requests of no job get no outcome"
like "$(last)" "in no job read, left without outcome" "jobs read: the unclaimed counted in the summary"
# a cron run in which no batch ended reads nothing: no outcome at all
rec -r "$T/window.jsonl" /dev/null
is "$rc:$(wc -c <"$T/out" | tr -d ' ')" "0:0" "nothing read: no outcome, exit 0"
like "$(last)" "in no job read, left without outcome" "nothing read: the requests counted as unclaimed"
# Azure spells statuses with a capital
job "$T/job.z" --arg t "$T" '{batch_id:"batch_z",file:"\($t)/expired.requests.jsonl",status:"Completed",results:["\($t)/expired.output.jsonl"]}'
recin "$T/job.z"
is "$(col '"\(.id)=\(.outcome)"')" "x1=done x2=retry x3=retry " "\"Completed\" (Azure) is an ended status"
# nesting deep enough to exhaust a recursive parser is refused, not a crash
python3 -c 'n = 200000; print("{\"batch_id\":\"b\",\"file\":\"x\",\"d\":" + "[" * n + "]" * n + "}")' >"$T/deep.job"
recin "$T/deep.job"
is "$rc:$(head -n 1 "$T/err")" "1:qb-reconcile: <stdin>:1: job record: nested deeper than 512 levels" "deep job record: reported, exit 1"
# a ledger (qb-poll -i, or the file itself) holds qb-submit's intent lines
{ printf '{"intent":"%s","file":"%s","at":"2026-11-30T16:00:00Z","provider":"openai"}\n' 0 "$T/expired.requests.jsonl"; cat "$T/job.x"; } >"$T/ledger.jsonl"
rec "$T/ledger.jsonl"
is "$rc:$(col '"\(.id)=\(.outcome)"'):$(grep -c intent "$T/err")" "1:x1=done x2=retry x3=retry :0" "intent lines are skipped quietly, not taken for jobs"
# the job's file is a -r file (named another way): not indexed twice
job "$T/job.s" --arg t "$T" '{batch_id:"batch_s",file:"\($t)/./expired.requests.jsonl",status:"in_progress",ended:false}'
recin "$T/job.s" -r "$T/expired.requests.jsonl"
is "$rc:$(cat "$T/err")" "0:qb-reconcile: 3 requests: 0 done, 0 retry, 0 dead, 3 pending; 0 unknown, 0 duplicate; tokens in 0 out 0" "job file = -r file: no duplicates, pending"
# the job's file is the batch packed from the -r items: the items' members win
cp "$D/items.batch.jsonl" "$D/items.results.jsonl" "$T/"
job "$T/job.i" --arg t "$T" '{batch_id:"batch_i",file:"\($t)/items.batch.jsonl",status:"completed",ended:true,results:["\($t)/items.results.jsonl"]}'
recin "$T/job.i" -r "$D/items.jsonl"
is "$rc:$(grep -c duplicate "$T/err")" "1:1" "job over items: no duplicate reported for the batch file's ids"
is "$(col '"\(.id)=\(.outcome)=\(.batch_id)=\(.meta.doc)"')" "i2=done=batch_i=42 i1=done=batch_i=41 i4=dead=batch_i=44 i3=retry=batch_i=43 " "job over items: outcomes carry the items' meta and the batch id"
is "$(of i3 '[.receipt,.body.messages[0].content]|@tsv')" "cur/i3:2,lease	item 3" "job over items: the retry is the queue item"
# job records and result lines mixed in one stream
cat "$T/job.p" "$C/expired.errors.jsonl" >"$T/mixed"
recin "$T/mixed"
is "$rc:$(col '"\(.id)=\(.outcome)"')" "1:x1=done x2=retry x3=retry " "job records and raw result lines mixed"
printf '%s\n' '{"batch_id":"b","file":3}' >"$T/job.bad"
recin "$T/job.bad"
is "$rc:$(head -n 1 "$T/err")" "1:qb-reconcile: <stdin>:1: job record: \"file\" is not a string or \"results\" not an array" "a bad job record is reported"

# flat memory: memory stays flat however large the requests are
awk 'BEGIN { s = sprintf("%4000s", ""); gsub(/ /, "x", s);
	for (i = 0; i < 20000; i++) printf "{\"custom_id\":\"r%d\",\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}}\n", i, s }' >"$T/big.req"
awk 'BEGIN { for (i = 19999; i >= 0; i -= 2) printf "{\"custom_id\":\"r%d\",\"response\":{\"status_code\":200,\"body\":{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}},\"error\":null}\n", i }' >"$T/big.res"
rec -r "$T/big.req" "$T/big.res"
is "$rc:$(wc -l <"$T/out" | tr -d ' '):$(last)" "1:20000:qb-reconcile: 20000 requests: 10000 done, 10000 retry, 0 dead, 0 pending; 0 unknown, 0 duplicate; tokens in 10000 out 10000" "flat memory: 20,000 requests of 4 KB joined"
is "$(tail -n 1 "$T/out" | jqr '"\(.id) \(.body.messages[0].content | length)"')" "r19998 4000" "flat memory: the last retry re-read whole"
if [ -x /usr/bin/time ] && ! grep -q __asan_init "$TOP/cmd/qb-reconcile"; then
	/usr/bin/time -f %M qb-reconcile -q -r "$T/big.req" "$T/big.res" >/dev/null 2>"$T/rss"
	rss=$(tail -n 1 "$T/rss")
	ok_if "flat memory: at most 24 MB resident for 80 MB of requests (got ${rss} KB)" "$rss" -lt 24576
else
	skip "no /usr/bin/time, or a sanitizer build"
fi
gzip -c "$T/big.req" >"$T/big.req.gz"
rec -r "$T/big.req.gz" "$T/big.res"
is "$rc:$(tail -n 1 "$T/out" | jqr '"\(.id) \(.body.messages[0].content | length)"')" "1:r19998 4000" "flat memory: a .gz request file re-read from its spool"

# results of qb-submit --sync carry their request: joined to themselves
printf '%s\n' \
    '{"id":"s1","status":"succeeded","http_status":200,"error":null,"usage":{"input_tokens":6,"output_tokens":1},"request_id":"req_1","batch_id":null,"response":{"model":"m1","choices":[]},"body":{"model":"m1","messages":[]},"meta":{"k":1},"queue":"dir:q","receipt":"r1","endpoint":"/v1/chat/completions"}' \
    '{"id":"s2","status":"errored","http_status":429,"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow","param":null},"usage":null,"request_id":null,"batch_id":null,"response":{"error":{}},"url":"/v1/embeddings","body":{"model":"e",  "input":["a"]},"meta":2}' \
    '{"id":"s3","status":"errored","http_status":400,"error":{"type":"invalid_request_error","code":"bad","message":"no","param":null},"usage":null,"request_id":null,"batch_id":null,"response":null,"body":{"model":"m1"},"meta":3}' \
    '{"id":"s4","status":"errored","http_status":null,"error":{"type":"connection_error","code":"outcome_unknown","message":"timed out","param":null},"usage":null,"request_id":null,"batch_id":null,"response":null,"body":{"model":"m1"}}' \
    '{"id":"s5","status":"errored","http_status":529,"error":{"type":"overloaded_error","code":null,"message":"Overloaded","param":null},"usage":null,"request_id":null,"batch_id":null,"response":null,"params":{"model":"c","max_tokens":5,"messages":[]}}' \
    '{"id":"s6","status":"errored","http_status":401,"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"Incorrect API key provided.","param":null},"usage":null,"request_id":null,"batch_id":null,"response":null,"account_error":true,"body":{"model":"m1"}}' \
    '{"id":"s1","status":"succeeded","http_status":200,"body":{"model":"m1"}}' \
    '{"id":"s7","status":"succeeded","http_status":200}' >"$T/sync.res"
rec "$T/sync.res"
is "$rc" 69 "sync results alone: exit 69 (s6 failed for the account)"
is "$(col '"\(.id)=\(.outcome)"')" "s1=done s2=retry s3=dead s4=retry s5=retry s6=retry " "sync results joined to themselves, once each"
is "$(of s1 '[.meta.k,.queue,.receipt,.usage.input_tokens,has("body"),.endpoint]|@tsv')" "$(printf '1\tdir:q\tr1\t6\tfalse\t/v1/chat/completions')" \
    "sync: a done outcome carries the item's members, not its body"
is "$(of s2 '[.endpoint,.meta,has("url")]|@tsv')" "$(printf '/v1/embeddings\t2\tfalse')" "sync: a retry's endpoint from its url"
like "$(grep '"id":"s2"' "$T/out")" '"body":{"model":"e",  "input":["a"]}' "sync: a retry's body byte for byte"
is "$(of s5 '[.endpoint,.body.model,.params.model]|@tsv')" "$(printf '/v1/messages\tc\tc')" "sync: an Anthropic retry is an item again"
is "$(of s6 .account_error)" true "sync: a 401 marked account_error is a retry, not dead"
like "$(cat "$T/err")" 'sync.res:7: duplicate result for id "s1"' "sync: a second result for an id is rejected"
like "$(cat "$T/err")" 'sync.res:8: result for unknown id "s7"' "sync: a result without its request is still unknown"
like "$(last)" "6 requests: 1 done, 4 retry, 1 dead" "sync: summary"
printf '%s\n' '{"id":"s3","body":{"model":"m1"},"meta":"from -r"}' >"$T/sync.req"
rec -r "$T/sync.req" "$T/sync.res"
is "$(of s3 .meta)" "from -r" "sync: an id a -r request claims is joined to that request"

# real files from ../shared/fixtures
F=$SHARED/fixtures
if [ -e "$F/openai-batch-output-2024-05.jsonl" ]; then
	jqr '{custom_id, method: "POST", url: "/v1/chat/completions", body: {model: "gpt-4o", messages: []}}' \
	    "$F/openai-batch-output-2024-05.jsonl" >"$T/oa.req"
	rec -r "$T/oa.req" "$F/openai-batch-output-2024-05.jsonl"
	is "$rc:$(jqr .outcome "$T/out" | sort | uniq -c | awk '{ print $1, $2 }')" "0:45 done" "OpenAI output fixture: 45 done, exit 0"
	tin=$(jq -s 'map(.response.body.usage.prompt_tokens) | add' "$F/openai-batch-output-2024-05.jsonl")
	tout=$(jq -s 'map(.response.body.usage.completion_tokens) | add' "$F/openai-batch-output-2024-05.jsonl")
	is "$(last)" "qb-reconcile: 45 requests: 45 done, 0 retry, 0 dead, 0 pending; 0 unknown, 0 duplicate; tokens in $tin out $tout" "OpenAI output fixture: token sums"
	is "$(jq -s 'map({(.custom_id): .response.body}) | add' "$F/openai-batch-output-2024-05.jsonl" | jq -S -c .)" \
	    "$(jq -s 'map({(.id): .response}) | add' "$T/out" | jq -S -c .)" "OpenAI output fixture: every response body kept"
	rec "$F/openai-batch-output-2024-05.jsonl"
	is "$rc:$(grep -c 'result for unknown id' "$T/err")" "1:45" "OpenAI output fixture without requests: 45 unknown"
	rec -r "$F/groq-batch-input.jsonl" "$F/groq-batch-output.jsonl"
	is "$rc:$(col .id)" "0:request-2 request-3 request-1 " "Groq pair: out of order, all done"
	is "$(of request-2 .usage.input_tokens):$(of request-1 .response.x_groq.id | cut -c1-4)" "55:req_" "Groq pair: usage and Groq extras kept"
	jqr '{custom_id, params: {model: "m", max_tokens: 8, messages: [{role: "user", content: "hi"}]}}' \
	    "$F/anthropic-results.live-capture.jsonl" >"$T/an.req"
	rec -r "$T/an.req" "$F/anthropic-results.live-capture.jsonl"
	is "$rc:$(col '"\(.id)=\(.outcome)"')" "1:probe-bad=dead probe-beta=done probe-alpha=done " "Anthropic live capture: errored dead, succeeded done"
	is "$(of probe-bad '[.error.type,.error.details.error_visibility,.request_id == null]|@tsv')" \
	    "invalid_request_error	user_facing	true" "Anthropic live capture: type, details, null request_id"
	is "$(of probe-alpha '"\(.usage.input_tokens)/\(.usage.output_tokens)/\(.response.content[0].text)"')" "14/5/ALPHA" "Anthropic live capture: usage and message"
	jqr '{custom_id, params: {model: "m", max_tokens: 8, messages: []}}' \
	    "$F/anthropic-results.docs-example.jsonl" >"$T/ad.req"
	rec -r "$T/ad.req" "$F/anthropic-results.docs-example.jsonl"
	is "$rc:$(col '"\(.id)=\(.usage.output_tokens)"')" "0:my-second-request=36 my-first-request=34 " "Anthropic docs example: both done"
else
	for i in 1 2 3 4 5 6 7 8 9 10; do
		skip "../shared/fixtures is absent (a plain clone has no ../shared)"
	done
fi
# OpenAI result lines that fail for the account (quota, billing): retry
# marked account_error, exit 69, as Anthropic's (qb-providers(7) HTTP Failure classes)
rec -r "$D/account.requests.jsonl" "$D/account.openai.jsonl"
is "$rc:$(col '"\(.id)=\(.outcome)=\(.account_error)"')" "69:a1=retry=true a2=retry=true a3=dead=null " \
    "OpenAI insufficient_quota in a response and in an error line: account errors, retried; a plain 400 dead"

# a damaged results file: what it holds counts, the rest stays pending
# (never retried: those requests may have run)
cp "$D/account.requests.jsonl" "$T/dmg.requests.jsonl"
{ sed -n 1p "$D/account.openai.jsonl" | sed 's/"status_code":429/"status_code":200/'; echo '{"id":"batch_req_2","custom_id":"a2","resp'; } >"$T/dmg.output.jsonl"
job "$T/dmg.job" --arg t "$T" '{provider:"openai",batch_id:"batch_dmg",file:"\($t)/dmg.requests.jsonl",status:"completed",ended:true,results:["\($t)/dmg.output.jsonl"]}'
rec "$T/dmg.job"
is "$rc:$(col '"\(.id)=\(.outcome)"')" "1:a1=done " "damaged results file: a1 done, a2 and a3 pending"
like "$(cat "$T/err")" "job batch_dmg: its requests without a result stay pending" "says so"

done_testing
