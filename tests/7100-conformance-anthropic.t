#!/bin/sh
# Conformance with the official Anthropic OpenAPI spec
# (../shared/specs/anthropic), the Message Batches part, so that neither
# qb nor its emulator can drift from the real service:
# (a) every request qb-submit, qb-poll and qb-reap send (create, list,
#     get, cancel, results) validates in Prism, a mock built from the spec
#     (tests/peers/prism.sh, PRISM_API=anthropic); Prism's answers are
#     placeholders (results even fail), so only the requests are judged;
# (b) every JSON answer of tests/fake/qb-fake, over Anthropic batch life
#     cycles driven with curl, and every results line, validates against
#     the spec's schemas (tests/peers/schemacheck.py, stdlib only).
. "$(dirname "$0")/lib.sh"
PRISM_API=anthropic
. "$(dirname "$0")/peers/prism.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is absent"
command -v jq >/dev/null 2>&1 || skip_all "jq is absent"
prism_install
plan 77

# todo_ok RC DESC REASON: a TAP TODO test (a known mismatch, reported).
todo_ok() {
	_n=$((_n + 1))
	if [ "$1" = 0 ]; then echo "ok $_n - $2 # TODO $3"; else echo "not ok $_n - $2 # TODO $3"; fi
}

# ---------------------------------------------------------------------
# (a) qb's requests against Prism

# GET of a batch answers an ended MessageBatch whose results_url is the
# spec's example, so that qb-poll goes on to fetch results.
prism_start completed
ANTHROPIC_BASE_URL=$PRISM_URL
ANTHROPIC_API_KEY=sk-ant-prism
QB_MAX_RETRIES=0
export ANTHROPIC_BASE_URL ANTHROPIC_API_KEY QB_MAX_RETRIES

# settle NAME N: wait until Prism has logged N requests since the mark
# taken by the caller in _mark (it logs after it answers); leaves
# $T/NAME.reqs (prism_requests: "METHOD PATH STATUS valid|invalid why").
settle() {
	_i=0
	while :; do
		prism_requests "$_mark" >"$T/$1.reqs"
		[ "$(wc -l <"$T/$1.reqs")" -ge "$2" ] &&
		    ! grep -q '^[A-Z]* [^ ]* ? ' "$T/$1.reqs" && break
		[ $_i -ge 50 ] && break
		sleep 0.1
		_i=$((_i + 1))
	done
}

# qbrun NAME CMD...: run a qb tool with -vv (CMD holds it) against Prism.
# Leaves $T/NAME.err (qb's log), $T/NAME.qb ("METHOD PATH STATUS" for each
# request qb logged) and $T/NAME.reqs (Prism's view).
qbrun() {
	_name=$1
	shift
	_mark=$(prism_mark)
	"$@" >"$T/$_name.out" 2>"$T/$_name.err"
	echo $? >"$T/$_name.rc"
	# The create's line ends at the status when there is no request-id.
	sed -n -E 's|^qb-[a-z]+: ([A-Z]+) https?://[^/]+(/[^ ]*) -> ([0-9]+)( .*)?$|\1 \2 \3|p' \
	    "$T/$_name.err" >"$T/$_name.qb"
	settle "$_name" "$(wc -l <"$T/$_name.qb")"
}

# probe NAME CURL-ARGS...: one request by hand; $T/NAME.reqs as above.
probe() {
	_name=$1
	shift
	_mark=$(prism_mark)
	curl -s -o /dev/null "$@"
	settle "$_name" 1
}

# diag NAME: what qb and Prism saw, as TAP diagnostics.
diag() {
	[ -f "$T/$1.rc" ] && echo "# $1: exit $(cat "$T/$1.rc"); Prism saw:"
	sed 's/^/#   /' "$T/$1.reqs"
	[ -f "$T/$1.err" ] &&
	    grep -v -E '^qb-[a-z]+: [A-Z]+ https?://' "$T/$1.err" | head -n 5 | sed 's/^/#   qb: /'
}

# conform NAME DESC: Prism refused none of the run's requests (a 422
# names the failing field, shown by diag), and saw the same requests, with
# the same statuses, as qb logged.
conform() {
	_bad=$(grep -v '^[A-Z]* [^ ]* [0-9?]* valid' "$T/$1.reqs")
	if [ -s "$T/$1.reqs" ] && [ -z "$_bad" ]; then
		ok 0 "$2: every request validates against the spec"
	else
		ok 1 "$2: every request validates against the spec"
		diag "$1"
	fi
	# Prism logs paths without their query.
	is "$(cut -d' ' -f1-3 "$T/$1.reqs")" "$(sed 's/?[^ ]*//' "$T/$1.qb")" \
	    "$2: Prism saw each request qb logged, with the status qb got"
	# 406: the spec gives results as application/x-jsonl only, and qb,
	# like the official SDK, asks for application/binary (qb-providers(7)
	# ANTHROPIC Results). Prism then cannot pick an answer; the request
	# itself passed.
	# 500: Prism cannot make application/x-jsonl at all.
	grep -E ' (406|500) ' "$T/$1.reqs" | sort -u |
	    sed 's/^/# note: Prism cannot answer this (not the request'"'"'s fault): /'
}

# has NAME "METHOD PATH": the run made this request
has() { grep -q "^$2 " "$T/$1.reqs"; }

cd "$T" || exit 1
mkdir b res
ID64=$(printf 'x%.0s' $(seq 1 31))-$(printf 'Y%.0s' $(seq 1 29))_09
printf '%s\n' \
    '{"id":"c1","body":{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"I love dogs"}]}}' \
    "{\"id\":\"$ID64\",\"body\":{\"model\":\"claude-x\",\"max_tokens\":1,\"system\":\"be brief\",\"temperature\":0,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"my job\"}]},{\"role\":\"assistant\",\"content\":\"it is\"},{\"role\":\"user\",\"content\":\"and?\"}]}}" \
    '{"custom_id":"y_2","params":{"model":"claude-y","max_tokens":8,"stop_sequences":["\n"],"metadata":{"user_id":"u1"},"messages":[{"role":"user","content":"hi \"there\" \u00e9"}]}}' \
    >items.jsonl
qb-pack -p anthropic -d b items.jsonl >pack.jsonl 2>pack.err
is "$(jq -s -c 'map(.requests)' pack.jsonl)" "[2,1]" "qb-pack -p anthropic: two files (two models), with a 64-character custom_id"

# Prism validates at all (validation of an operation is silently off when
# Prism cannot compile one of its schemas; see ../shared/peers/README.md):
# a bad custom_id, a missing max_tokens and a limit out of range get 422,
# and Prism's log names the field.
probe v-id -H 'Content-Type: application/json' \
    -d '{"requests":[{"custom_id":"a.b","params":{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]}}]}' \
    "$PRISM_URL/v1/messages/batches"
like "$(cat v-id.reqs)" '422 invalid Request body property requests.0.custom_id must match pattern' \
    "Prism validates creates (422 names requests.0.custom_id)"
probe v-mt -H 'Content-Type: application/json' \
    -d '{"requests":[{"custom_id":"a","params":{"model":"m","messages":[{"role":"user","content":"x"}]}}]}' \
    "$PRISM_URL/v1/messages/batches"
like "$(cat v-mt.reqs)" "422 invalid Request body property requests.0.params must have required property 'max_tokens'" \
    "Prism validates each request's params (422 names max_tokens)"
probe v-lim "$PRISM_URL/v1/messages/batches?limit=1001"
like "$(cat v-lim.reqs)" '422 invalid Request query parameter limit must be <= 1000' \
    "Prism validates list queries (422 names limit)"

# qb-submit: one streamed create per pack record
qbrun submit qb-submit -vv -l led.jsonl pack.jsonl
conform submit "qb-submit"
is "$(grep -c '^POST /v1/messages/batches ' submit.reqs)" 2 "one create per pack record (two models)"
is "$(jqr -s 'map(select(.batch_id))|map(.provider+":"+.status)|join(",")' led.jsonl)" \
    "anthropic:in_progress,anthropic:in_progress" "qb-submit took Prism's answers as batches"

# qb-submit, on an intent with no job record, lists batches
# (GET /v1/messages/batches?limit=) to see whether the create went through.
S1=$(head -n 1 pack.jsonl | jqr .sha256)
F1=$(head -n 1 pack.jsonl | jqr .file)
jq -nc --arg s "$S1" --arg f "$F1" --arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    '{intent:$s,file:$f,at:$at,provider:"anthropic"}' >led2.jsonl
head -n 1 pack.jsonl >one.jsonl
qbrun adopt qb-submit -vv -l led2.jsonl one.jsonl
if grep -q '^GET /v1/messages/batches' adopt.reqs; then
	conform adopt "qb-submit, looking for an unrecorded batch"
	_lim=$(sed -n 's/^GET \/v1\/messages\/batches?.*limit=\([0-9]*\).*/\1/p' adopt.qb | sort -u)
	ok_if "GET /v1/messages/batches?limit=$_lim is within the spec's 1 to 1000" \
	    -n "$_lim" -a "${_lim:-0}" -ge 1 -a "${_lim:-0}" -le 1000
else
	skip "qb-submit made no list request for a ledger intent (no adoption in this build)"
	skip "qb-submit made no list request for a ledger intent"
	skip "qb-submit made no list request for a ledger intent"
fi

# qb-poll: GET the batch (ended, see above), then its results_url. Only
# the path of results_url is used, against the base URL.
jq -c 'select(.batch_id)' led.jsonl >jobs.jsonl
qbrun poll qb-poll -vv -d res jobs.jsonl
conform poll "qb-poll"
has poll "GET /v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF"
ok $? "qb-poll asked for the batch"
has poll "GET /v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/results"
ok $? "qb-poll asked for the results (the path of the spec's results_url example)"

# qb-reap --older-than 0: the jobs (Prism's batches, made in 2024) are
# not ended, so each is cancelled: POST /v1/messages/batches/{id}/cancel.
qbrun reap qb-reap -vv --older-than 0 jobs.jsonl
conform reap "qb-reap"
has reap "POST /v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/cancel"
ok $? "qb-reap asked to cancel the batch"
is "$(cat reap.rc) $(jqr -s 'map(has("cancel_requested_at"))|all' reap.out)" "0 true" \
    "qb-reap took Prism's answers as cancels"

# qb-submit --sync -p anthropic: each item POSTed to /v1/messages
qbrun sync qb-submit --sync -p anthropic -vv items.jsonl
conform sync "qb-submit --sync"
has sync "POST /v1/messages"
ok $? "qb-submit --sync called /v1/messages"

# A record qb-pack accepts must make a create the spec accepts. The spec
# requires model, messages and max_tokens in every params
# (CreateMessageParams.required); qb-pack checks only model.
printf '%s\n' '{"id":"n1","body":{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}}' >nomax.jsonl
mkdir nb
if qb-pack -p anthropic -d nb nomax.jsonl >nomaxpack.jsonl 2>nomax.err; then
	qbrun nomax qb-submit -vv nomaxpack.jsonl
	_bad=$(grep -v '^[A-Z]* [^ ]* [0-9?]* valid' nomax.reqs)
	[ -z "$_bad" ]
	todo_ok $? "qb-pack -p anthropic refuses params without max_tokens, or qb's create validates" \
	    "params.max_tokens: the spec's CreateMessageParams.required has it; qb-pack checks only model (cmd/qb-pack.c pack_line, 'no model string'), so the whole create is refused"
	[ -n "$_bad" ] && echo "# Prism: $_bad"
else
	ok 0 "qb-pack -p anthropic refuses params without max_tokens"
fi

kill "$PRISM_PID" 2>/dev/null
wait "$PRISM_PID" 2>/dev/null

# ---------------------------------------------------------------------
# (b) the emulator's answers against the spec's schemas

# Batches of 100 s on a clock moved by hand: every state is reached at a
# known moment, with no sleeping. Batches of more than 4 requests expire.
fake_start --batch-seconds 100 --expire-after-requests 4
V=$FAKE_URL/v1/messages/batches
AK='x-api-key: sk-test'
AV='anthropic-version: 2023-06-01'
mkdir ans
: >manifest
clock() { curl -s -X POST -d "{\"advance\":$1}" "$FAKE_URL/_qb/clock" >/dev/null; }
# call NAME SCHEMA STATUS CURL-ARGS...: ask the emulator; the answer
# (ans/NAME.json) is checked later against components.schemas.SCHEMA and
# HTTP STATUS.
call() {
	_nm=$1 _sc=$2 _want=$3
	shift 3
	_got=$(curl -s -o "ans/$_nm.json" -w '%{http_code}' "$@")
	printf '%s\t%s\t%s\t%s\n' "$_nm" "$_sc" "$_want" "$_got" >>manifest
}
# results NAME ID: the results of batch ID, as ans/NAME.jsonl; each line
# is a MessageBatchIndividualResponse.
results() {
	_got=$(curl -s -o "ans/$1.jsonl" -w '%{http_code} %{content_type}' -H "$AK" -H "$AV" "$V/$2/results")
	printf '%s\tMessageBatchIndividualResponse\t200\t%s\n' "$1" "${_got%% *}" >>manifest
	echo "${_got#* }" >"ans/$1.ctype"
}
id_of() { jqr .id "ans/$1.json"; }
# req ID [PARAMS-EXTRA]: one request of a create body
req() {
	printf '{"custom_id":"%s","params":{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"hi %s"}]%s}}' \
	    "$1" "$1" "${2:-}"
}
mk() {
	_n1=$1
	shift
	_b=
	for r in "$@"; do _b="$_b${_b:+,}$r"; done
	call "$_n1" MessageBatch 200 -H "$AK" -H "$AV" -H 'Content-Type: application/json' \
	    -d "{\"requests\":[$_b]}" "$V"
}

# A: succeeded, errored (invalid_request_error: no messages; api_error
# injected), and one cut by max_tokens. C: cancelled half-way. E: five
# requests, the fifth expires.
mk create-a "$(req a1)" "$(req a2 ',"qb_fake":{"error":"api_error"}')" \
    '{"custom_id":"a3","params":{"model":"claude-x","max_tokens":16,"messages":[]}}' \
    '{"custom_id":"a4","params":{"model":"claude-x","max_tokens":1,"messages":[{"role":"user","content":"my laptop"}]}}'
mk create-c "$(req c1)" "$(req c2)" "$(req c3)" "$(req c4)"
mk create-e "$(req e1)" "$(req e2)" "$(req e3)" "$(req e4)" "$(req e5)"
BA=$(id_of create-a) BC=$(id_of create-c) BE=$(id_of create-e)
call get-in_progress MessageBatch 200 -H "$AK" -H "$AV" "$V/$BA"
call list ListResponse_MessageBatch_ 200 -H "$AK" -H "$AV" "$V"
call list-page ListResponse_MessageBatch_ 200 -H "$AK" -H "$AV" "$V?limit=2"
call list-after ListResponse_MessageBatch_ 200 -H "$AK" -H "$AV" "$V?limit=2&after_id=$(jqr .last_id ans/list-page.json)"
call list-before ListResponse_MessageBatch_ 200 -H "$AK" -H "$AV" "$V?before_id=$BA"
call list-empty ListResponse_MessageBatch_ 200 -H "$AK" -H "$AV" "$V?after_id=msgbatch_unknown"
call err-results-early ErrorResponse 400 -H "$AK" -H "$AV" "$V/$BA/results"
call err-delete-early ErrorResponse 400 -H "$AK" -H "$AV" -X DELETE "$V/$BA"
clock 50
call cancel MessageBatch 200 -H "$AK" -H "$AV" -X POST "$V/$BC/cancel"
call cancel-again MessageBatch 200 -H "$AK" -H "$AV" -X POST "$V/$BC/cancel"
call get-canceling MessageBatch 200 -H "$AK" -H "$AV" "$V/$BC"
clock 55
call get-ended MessageBatch 200 -H "$AK" -H "$AV" "$V/$BA"
call get-ended-cancelled MessageBatch 200 -H "$AK" -H "$AV" "$V/$BC"
call get-ended-expired MessageBatch 200 -H "$AK" -H "$AV" "$V/$BE"
call list-ended ListResponse_MessageBatch_ 200 -H "$AK" -H "$AV" "$V?limit=20"
results results-a "$BA"
results results-c "$BC"
results results-e "$BE"
call err-cancel-ended ErrorResponse 400 -H "$AK" -H "$AV" -X POST "$V/$BA/cancel"
call delete DeleteMessageBatchResponse 200 -H "$AK" -H "$AV" -X DELETE "$V/$BA"
call err-get-deleted ErrorResponse 404 -H "$AK" -H "$AV" "$V/$BA"

# Errors: all in the spec's ErrorResponse shape
call err-no-key ErrorResponse 401 -H "$AV" "$V"
call err-wrong-key ErrorResponse 401 -H 'x-api-key: sk-wrong' -H "$AV" "$V"
call err-bearer ErrorResponse 401 -H 'Authorization: Bearer sk-test' -H "$AV" "$V"
call err-no-version ErrorResponse 400 -H "$AK" "$V"
call err-404 ErrorResponse 404 -H "$AK" -H "$AV" "$V/msgbatch_nope"
call err-results-404 ErrorResponse 404 -H "$AK" -H "$AV" "$V/msgbatch_nope/results"
call err-create-id ErrorResponse 400 -H "$AK" -H "$AV" -H 'Content-Type: application/json' \
    -d "{\"requests\":[$(req a.b)]}" "$V"
call err-create-empty ErrorResponse 400 -H "$AK" -H "$AV" -H 'Content-Type: application/json' \
    -d '{"requests":[]}' "$V"
call err-create-json ErrorResponse 400 -H "$AK" -H "$AV" -H 'Content-Type: application/json' \
    -d '{"requests":' "$V"
call err-route ErrorResponse 404 -H "$AK" -H "$AV" "$FAKE_URL/v1/messages/nothing"
call err-method ErrorResponse 405 -H "$AK" -H "$AV" -X PUT "$V"

# The synchronous endpoint (qb-submit --sync -p anthropic calls it)
M=$FAKE_URL/v1/messages
JS='Content-Type: application/json'
call sync-message Message 200 -H "$AK" -H "$AV" -H "$JS" \
    -d '{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}' "$M"
call err-sync-400 ErrorResponse 400 -H "$AK" -H "$AV" -H "$JS" \
    -d '{"model":"claude-x","max_tokens":16,"messages":[]}' "$M"
call err-sync-529 ErrorResponse 529 -H "$AK" -H "$AV" -H "$JS" \
    -d '{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"qb_fake":{"error":"overloaded_error"}}' "$M"

# 29 days on, results are archived.
clock 2505600
call get-archived MessageBatch 200 -H "$AK" -H "$AV" "$V/$BC"
call err-results-archived ErrorResponse 404 -H "$AK" -H "$AV" "$V/$BC/results"

# The states reached, so that each schema check meant what it says.
is "$(for n in create-a get-in_progress get-canceling get-ended get-ended-cancelled get-ended-expired; do
	jqr .processing_status "ans/$n.json"; done | tr '\n' ' ')" \
    "in_progress in_progress canceling ended ended ended " \
    "emulator: the batches went through every processing_status"
is "$(jq -r -s 'map(.result.type)|unique|join(" ")' ans/results-a.jsonl ans/results-c.jsonl ans/results-e.jsonl)" \
    "canceled errored expired succeeded" "emulator: the results hold all four result types"
is "$(jq -r -s 'map(.result.error.error.type // empty)|unique|join(" ")' ans/results-a.jsonl)" \
    "api_error invalid_request_error" "emulator: errored results of both kinds"
is "$(jq -r -s 'map(.result.message.stop_reason // empty)|unique|join(" ")' ans/results-a.jsonl)" \
    "end_turn max_tokens" "emulator: succeeded results stopped by end_turn and by max_tokens"
is "$(jqr '[.request_counts[]]|add' ans/get-ended-expired.json) $(jqr '[.request_counts[]]|add' ans/get-canceling.json)" \
    "5 4" "emulator: request_counts sum to the batch size (the spec's RequestCounts description)"
is "$(jqr '[(.archived_at|type), (.results_url|type)]|join(" ")' ans/get-archived.json) $(jqr '.results_url|type' ans/get-in_progress.json)" \
    "string string null" "emulator: archived_at once archived; results_url only once ended"
is "$(cat ans/results-a.ctype)" "application/x-jsonl" "emulator: results are application/x-jsonl, the spec's media type"
is "$(jqr '[.has_more, (.data|length), .first_id, .last_id]|@tsv' ans/list-empty.json)" \
    "$(printf 'false\t0\t\t')" "emulator: an empty page has first_id and last_id null (the spec allows null)"

python3 "$TOP/tests/peers/schemacheck.py" "$PRISM_SPEC" manifest ans >checked 2>&1 ||
    { echo "Bail out! schemacheck.py failed"; sed 's/^/# /' checked; exit 1; }

# The checker finds what is wrong, and names it: a broken MessageBatch
# and a broken results line.
mkdir bad
jq -c '.processing_status = "done" | del(.type) | .request_counts.processing = "2" | .created_at = "yesterday"' \
    ans/get-ended.json >bad/batch.json
grep '"errored"' ans/results-a.jsonl | head -n 1 |
    jq -c '.result.error.error.type = "nope_error" | .custom_id = 7' >bad/line.jsonl
printf 'batch\tMessageBatch\t200\t200\nline\tMessageBatchIndividualResponse\t200\t200\n' >manifest.bad
python3 "$TOP/tests/peers/schemacheck.py" "$PRISM_SPEC" manifest.bad bad >checked.bad 2>&1
is "$(sed 's/line [0-9]*: //' checked.bad | sed -n 's/^#   [A-Za-z_]* \(\$[^:]*\):.*/\1/p' | sort | tr '\n' ' ')" \
    '$.created_at $.custom_id $.processing_status $.request_counts.processing $.result.error.error $.type ' \
    "the schema checker names each wrong field (a broken MessageBatch and results line)"
grep -q 'line 1: \$\.result\.error\.error: .*nope_error' checked.bad
ok $? "the checker says where a results line fails (line 1: an unknown error type)"

# Known mismatches between the spec and the real service: the spec's
# Message requires container, its Usage server_tool_use and its
# ResponseTextBlock citations (all nullable), but the live capture
# (../shared/fixtures/anthropic-results.live-capture.jsonl) has none of
# them, and the emulator copies the live capture (tests/fake/qb-fake
# an_result, and the synchronous answer, the same message). Each is a TODO
# test of its own, checked on the succeeded results; every other problem
# still fails.
KNOWN='(\.result\.message|\$)\.container: missing|(\.result\.message|\$)\.usage\.server_tool_use: missing|(\.result\.message|\$)\.content\[[0-9]+\]\.citations: missing'
# known FIELD JQ-TEST WHY
known() {
	_miss=$(grep -h '"succeeded"' ans/results-*.jsonl | jq -r "$2" | grep -c false)
	[ "$_miss" = 0 ]
	todo_ok $? "emulator: every succeeded result has $1" "$3"
	[ "$_miss" = 0 ] || echo "# $_miss succeeded lines lack it"
}
known result.message.container '.result.message|has("container")' \
    "result.message.container: required (nullable) in the spec's Message; absent in the live capture and in tests/fake/qb-fake an_result (the msg dict)"
known result.message.usage.server_tool_use '.result.message.usage|has("server_tool_use")' \
    "result.message.usage.server_tool_use: required (nullable) in the spec's Usage; absent in the live capture and in tests/fake/qb-fake an_result"
known 'result.message.content[].citations' '.result.message.content|all(has("citations"))' \
    "result.message.content[].citations: required (nullable) in the spec's ResponseTextBlock; absent in the live capture and in tests/fake/qb-fake an_result"
_live=$SHARED/fixtures/anthropic-results.live-capture.jsonl
if [ -f "$_live" ]; then
	mkdir live
	cp "$_live" live/capture.jsonl
	printf 'capture\tMessageBatchIndividualResponse\t200\t200\n' >manifest.live
	python3 "$TOP/tests/peers/schemacheck.py" "$PRISM_SPEC" manifest.live live >checked.live 2>&1
	is "$(grep '^#   ' checked.live | grep -v -E -c "$KNOWN")" 0 \
	    "the real service's results (live capture) differ from the spec only in those three fields"
	grep '^#   ' checked.live | grep -v -E "$KNOWN" | head -n 5
else
	skip "../shared/fixtures/anthropic-results.live-capture.jsonl is absent"
fi

while IFS= read -r l; do
	case $l in
	'#'*) ;;
	NOTE\ *) echo "# note: ${l#NOTE }" ;;
	PASS\ * | FAIL\ *)
		set -- $l
		# The problems of this answer, known mismatches left out.
		_errs=$(awk -v n="$2" '$1 ~ /^(PASS|FAIL|NOTE)$/ { on = ($1 != "NOTE" && $2 == n); next } on' checked |
		    grep -v -E "$KNOWN")
		if [ -z "$_errs" ]; then
			ok 0 "emulator: $2 is a valid $3"
		else
			ok 1 "emulator: $2 is a valid $3"
			echo "$_errs" | head -n 10
		fi
		;;
	*) echo "# $l" ;;
	esac
done <checked
if grep -q -E "$KNOWN" checked; then
	echo "# note: known mismatches (TODO above) left out of the results checks:"
	grep -E "$KNOWN" checked | sed 's/line [0-9]*: //; s/\[[0-9]*\]/[]/g' | sort -u
fi

fake_stop
done_testing
