#!/bin/sh
# Conformance with the official OpenAI OpenAPI spec (../shared/specs/openai),
# so that neither qb nor its emulator can drift from the real service:
# (a) every request qb-submit, qb-poll and qb-reap send validates in Prism,
#     a mock built from the spec (tests/peers/prism.sh); Prism's answers are
#     placeholders, so only the requests are judged;
# (b) every JSON answer of tests/fake/qb-fake, over whole batch life cycles
#     driven with curl, validates against the spec's schemas (a small
#     stdlib checker below: $ref, type, required, enum, properties, items,
#     anyOf/oneOf/allOf, nullable, bounds).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/peers/prism.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is absent"
prism_install
plan 64

# todo_ok RC DESC REASON: a TAP TODO test (a known mismatch, reported).
todo_ok() {
	_n=$((_n + 1))
	if [ "$1" = 0 ]; then echo "ok $_n - $2 # TODO $3"; else echo "not ok $_n - $2 # TODO $3"; fi
}

# ---------------------------------------------------------------------
# (a) qb's requests against Prism

prism_start completed
OPENAI_BASE_URL=$PRISM_URL
OPENAI_API_KEY=sk-prism
QB_MAX_RETRIES=0
export OPENAI_BASE_URL OPENAI_API_KEY QB_MAX_RETRIES
unset OPENAI_ORG_ID OPENAI_PROJECT_ID

# qbrun NAME CMD...: run a qb tool with -vv (CMD holds it) against Prism.
# Leaves $T/NAME.err (qb's log), $T/NAME.qb ("METHOD PATH STATUS" for each
# request qb logged) and $T/NAME.reqs (prism_requests: Prism's view).
qbrun() {
	_name=$1
	shift
	_mark=$(prism_mark)
	"$@" >"$T/$_name.out" 2>"$T/$_name.err"
	echo $? >"$T/$_name.rc"
	sed -n -E 's|^qb-[a-z]+: ([A-Z]+) https?://[^/]+(/[^ ]*) -> ([0-9]+) .*|\1 \2 \3|p' \
	    "$T/$_name.err" >"$T/$_name.qb"
	# Prism logs after it answers: wait until it has logged them all.
	_i=0
	while :; do
		prism_requests "$_mark" >"$T/$_name.reqs"
		[ "$(wc -l <"$T/$_name.reqs")" -ge "$(wc -l <"$T/$_name.qb")" ] &&
		    ! grep -q '^[A-Z]* [^ ]* ? ' "$T/$_name.reqs" && break
		[ $_i -ge 50 ] && break
		sleep 0.1
		_i=$((_i + 1))
	done
}

# diag NAME: what qb and Prism saw, as TAP diagnostics.
diag() {
	echo "# $1: exit $(cat "$T/$1.rc"); Prism saw:"
	sed 's/^/#   /' "$T/$1.reqs"
	grep -v -E '^qb-[a-z]+: [A-Z]+ https?://' "$T/$1.err" | head -n 5 | sed 's/^/#   qb: /'
}

# conform NAME DESC: Prism refused none of the run's requests, and saw
# the same requests, with the same statuses, as qb logged.
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
	# 406: the spec gives file content as application/json only, and qb,
	# like the official SDK, asks for application/binary (qb-providers(7)
	# OPENAI Files). Prism then cannot pick an answer; the request itself
	# passed.
	grep ' 406 ' "$T/$1.reqs" | sort -u |
	    sed 's/^/# note: not acceptable (the spec has application\/json only): /'
}

# has NAME "METHOD PATH": the run made this request
has() { grep -q "^$2 " "$T/$1.reqs"; }

cd "$T" || exit 1
mkdir b res
printf '%s\n' \
    '{"id":"c1","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"I love dogs"}]}}' \
    '{"id":"c2","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"my job"}]}}' \
    '{"id":"e1","url":"/v1/embeddings","body":{"model":"text-embedding-3-small","input":["a","b"]}}' \
    >items.jsonl
qb-pack -d b items.jsonl >pack.jsonl 2>pack.err

# Prism validates at all: a bad body and a bad multipart field get 422,
# naming the field (validation of an operation is silently off when Prism
# cannot compile one of its schemas; see ../shared/peers/README.md).
like "$(curl -s -H 'Authorization: Bearer sk-prism' -H 'Content-Type: application/json' \
    -d '{"endpoint":"/v1/chat/completions","completion_window":"1h"}' "$PRISM_URL/batches")" \
    "must have required property 'input_file_id'" "Prism validates batch creates (422 names input_file_id)"
like "$(curl -s -H 'Authorization: Bearer sk-prism' -F purpose=nope -F "file=@items.jsonl" \
    "$PRISM_URL/files")" "property purpose must be equal to one of the allowed values" \
    "Prism validates multipart uploads (422 names purpose)"

# qb-submit: upload (multipart, purpose=batch) and create (with metadata)
qbrun submit qb-submit -vv -l led.jsonl pack.jsonl
conform submit "qb-submit"
has submit "POST /files" && has submit "POST /batches"
ok $? "qb-submit uploaded and created batches"
is "$(grep -c '^POST /batches ' submit.reqs)" 2 "one create per pack record (two endpoints)"

# qb-submit adopting an unrecorded create lists batches (GET /batches?limit=)
S1=$(head -n 1 pack.jsonl | jqr .sha256)
F1=$(head -n 1 pack.jsonl | jqr .file)
jq -nc --arg s "$S1" --arg f "$F1" --arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    '{intent:$s,file:$f,at:$at,provider:"openai"}' >led2.jsonl
head -n 1 pack.jsonl >one.jsonl
qbrun adopt qb-submit -vv -l led2.jsonl one.jsonl
if grep -q '^GET /batches' adopt.reqs; then
	conform adopt "qb-submit, looking for an unrecorded batch"
	# The spec gives limit's range (1 to 100) only in words: Prism checks
	# it is an integer, this checks the range.
	_lim=$(sed -n 's/^GET \/batches?.*limit=\([0-9]*\).*/\1/p' adopt.qb | sort -u)
	ok_if "GET /batches?limit=$_lim is within the spec's 1 to 100" \
	    -n "$_lim" -a "${_lim:-0}" -ge 1 -a "${_lim:-0}" -le 100
else
	skip "qb-submit made no GET /batches for a ledger intent (no adoption in this build)"
	skip "qb-submit made no GET /batches for a ledger intent"
	skip "qb-submit made no GET /batches for a ledger intent"
fi

# qb-submit: a create the spec refuses (an endpoint outside its enum); qb
# then deletes the upload, and that DELETE must validate.
printf '%s\n' '{"id":"x1","body":{"model":"m","prompt":"x"}}' >bad.jsonl
qb-pack -d b -e /v1/not-an-endpoint bad.jsonl >badpack.jsonl 2>/dev/null
qbrun refused qb-submit -vv badpack.jsonl
like "$(grep '^POST /batches ' refused.reqs)" "422 invalid Request body property endpoint must be equal to one of the allowed values" \
    "an endpoint outside the spec's enum is refused, naming endpoint"
if has refused "DELETE /files/string"; then
	like "$(grep '^DELETE ' refused.reqs)" "DELETE /files/string 200 valid" \
	    "qb-submit deletes the upload of a refused create with a valid request"
else
	ok 1 "qb-submit deletes the upload of a refused create with a valid request"
	diag refused
fi
is "$(grep -v '^POST /batches ' refused.reqs | grep -c -v ' valid')" 0 \
    "qb-submit: every other request of the refused submit validates"

# qb-poll: GET the batch (Prism answers the spec's own example of a
# completed Batch), then ask for its output file (Prism answers 406: see
# conform).
jq -c 'select(.batch_id)' led.jsonl >jobs.jsonl
qbrun poll qb-poll -vv -d res jobs.jsonl
conform poll "qb-poll"
has poll "GET /batches/string"
ok $? "qb-poll asked for the batch"
grep -q '^GET /files/file-cvaTdG/content ' poll.reqs
ok $? "qb-poll asked for the output file's content"

# qb-reap --older-than 0: the jobs (Prism's batches, made in 1970) are
# not ended, so each is cancelled: POST /batches/{batch_id}/cancel.
qbrun reap qb-reap -vv --older-than 0 jobs.jsonl
conform reap "qb-reap"
has reap "POST /batches/string/cancel"
ok $? "qb-reap asked to cancel the batch"
is "$(cat reap.rc) $(jqr -s 'map(has("cancel_requested_at"))|all' reap.out)" "0 true" \
    "qb-reap took Prism's answers as cancels"

# qb-submit --sync: each item POSTed to its own endpoint
qbrun sync qb-submit --sync -vv items.jsonl
conform sync "qb-submit --sync"
has sync "POST /chat/completions" && has sync "POST /embeddings"
ok $? "qb-submit --sync called the chat and embeddings endpoints"

kill "$PRISM_PID" 2>/dev/null
wait "$PRISM_PID" 2>/dev/null

# ---------------------------------------------------------------------
# (b) the emulator's answers against the spec's schemas

# Long batches (100 s) on a clock moved by hand: every state is reached
# at a known moment, with no sleeping. Batches of more than 2 requests
# expire.
fake_start --batch-seconds 100 --expire-after-requests 2
V=$FAKE_URL/v1
AUTH='Authorization: Bearer sk-test'
mkdir ans
: >manifest
clock() { curl -s -X POST -d "{\"advance\":$1}" "$FAKE_URL/_qb/clock" >/dev/null; }
# call NAME SCHEMA STATUS CURL-ARGS...: ask the emulator; the answer is
# checked later against components.schemas.SCHEMA and HTTP STATUS.
call() {
	_nm=$1 _sc=$2 _want=$3
	shift 3
	_got=$(curl -s -o "ans/$_nm.json" -w '%{http_code}' "$@")
	printf '%s\t%s\t%s\t%s\n' "$_nm" "$_sc" "$_want" "$_got" >>manifest
}
id_of() { jqr .id "ans/$1.json"; }
# line ID MODEL [EXTRA-BODY]: one batch input line
line() {
	printf '{"custom_id":"%s","method":"POST","url":"/v1/chat/completions","body":{"model":"%s","messages":[{"role":"user","content":"hi %s"}]%s}}\n' \
	    "$1" "$2" "$1" "${3:-}"
}
{ line a1 gpt-4o-mini; line a2 gpt-4o-mini ',"qb_fake":{"status":400}'; } >a.jsonl
{ line c1 gpt-4o-mini; line c2 gpt-4o-mini; } >c.jsonl
{ echo '{"custom_id":"f1","method":"POST","url":"/v1/chat/completions","body":'; line f2 gpt-4o-mini; } >f.jsonl
{ line e1 gpt-4o-mini; line e2 gpt-4o-mini; line e3 gpt-4o-mini; } >e.jsonl

# Files
call file-upload OpenAIFile 200 -H "$AUTH" -F purpose=batch -F file=@a.jsonl "$V/files"
FA=$(id_of file-upload)
for x in c f e; do
	call "file-upload-$x" OpenAIFile 200 -H "$AUTH" -F purpose=batch -F "file=@$x.jsonl" "$V/files"
done
call file-get OpenAIFile 200 -H "$AUTH" "$V/files/$FA"
call files-list ListFilesResponse 200 -H "$AUTH" "$V/files?limit=2&order=asc"
call files-list-empty ListFilesResponse 200 -H "$AUTH" "$V/files?purpose=vision"

# Batches: create four, with metadata; cancel one at once
mk() {
	call "$1" Batch 200 -H "$AUTH" -H 'Content-Type: application/json' -d \
	    "{\"input_file_id\":\"$2\",\"endpoint\":\"/v1/chat/completions\",\"completion_window\":\"24h\",\"metadata\":{\"qb_sha256\":\"x\",\"qb_file\":\"$1\"}}" \
	    "$V/batches"
}
mk batch-create "$FA"
BA=$(id_of batch-create)
mk batch-create-c "$(id_of file-upload-c)"
mk batch-create-f "$(id_of file-upload-f)"
mk batch-create-e "$(id_of file-upload-e)"
BC=$(id_of batch-create-c) BF=$(id_of batch-create-f) BE=$(id_of batch-create-e)
call batch-validating Batch 200 -H "$AUTH" "$V/batches/$BA"
call batch-cancel Batch 200 -H "$AUTH" -X POST "$V/batches/$BC/cancel"
clock 20
call batch-in_progress Batch 200 -H "$AUTH" "$V/batches/$BA"
call batch-cancelled Batch 200 -H "$AUTH" "$V/batches/$BC"
call batch-failed Batch 200 -H "$AUTH" "$V/batches/$BF"
clock 75
call batch-finalizing Batch 200 -H "$AUTH" "$V/batches/$BA"
call batch-expired Batch 200 -H "$AUTH" "$V/batches/$BE"
clock 10
call batch-completed Batch 200 -H "$AUTH" "$V/batches/$BA"
call batches-list ListBatchesResponse 200 -H "$AUTH" "$V/batches"
call batches-list-page ListBatchesResponse 200 -H "$AUTH" "$V/batches?limit=2&after=$BE"
call batches-list-empty ListBatchesResponse 200 -H "$AUTH" "$V/batches?after=batch_unknown"

# Results
OUT=$(jqr .output_file_id ans/batch-completed.json)
ERR=$(jqr .error_file_id ans/batch-completed.json)
call output-file OpenAIFile 200 -H "$AUTH" "$V/files/$OUT"
call error-file OpenAIFile 200 -H "$AUTH" "$V/files/$ERR"
_c=$(curl -s -o content.jsonl -w '%{http_code}' -H "$AUTH" "$V/files/$OUT/content")
is "$_c $(jq -c -r .custom_id content.jsonl 2>&1 | tr '\n' ' ')" "200 a1 " \
    "emulator: GET /files/{id}/content gives the output file's JSONL (the spec's 'application/json string' stands for raw bytes)"
call file-delete DeleteFileResponse 200 -H "$AUTH" -X DELETE "$V/files/$OUT"

# Errors: all in the spec's ErrorResponse shape
call err-no-key ErrorResponse 401 "$V/batches"
call err-batch-404 ErrorResponse 404 -H "$AUTH" "$V/batches/batch_nope"
call err-file-404 ErrorResponse 404 -H "$AUTH" "$V/files/$OUT"
call err-create-400 ErrorResponse 400 -H "$AUTH" -H 'Content-Type: application/json' \
    -d "{\"input_file_id\":\"$FA\",\"endpoint\":\"/v1/chat/completions\",\"completion_window\":\"1h\"}" "$V/batches"
call err-upload-400 ErrorResponse 400 -H "$AUTH" -F purpose=nope -F file=@a.jsonl "$V/files"
call err-cancel-409 ErrorResponse 409 -H "$AUTH" -X POST "$V/batches/$BA/cancel"
call err-route-404 ErrorResponse 404 -H "$AUTH" "$V/nothing"

# Synchronous endpoints (qb-submit --sync calls them)
J='Content-Type: application/json'
call sync-chat CreateChatCompletionResponse 200 -H "$AUTH" -H "$J" \
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}' "$V/chat/completions"
call sync-embeddings CreateEmbeddingResponse 200 -H "$AUTH" -H "$J" \
    -d '{"model":"text-embedding-3-small","input":["one","two"]}' "$V/embeddings"
call sync-completions CreateCompletionResponse 200 -H "$AUTH" -H "$J" \
    -d '{"model":"gpt-3.5-turbo-instruct","prompt":"hi"}' "$V/completions"
call sync-responses Response 200 -H "$AUTH" -H "$J" -d '{"model":"gpt-4o-mini","input":"hi"}' "$V/responses"
call err-sync-400 ErrorResponse 400 -H "$AUTH" -H "$J" -d '{"model":"gpt-4o-mini","messages":[]}' "$V/chat/completions"

# The states reached, so that each schema check above meant what it says.
is "$(for s in validating in_progress finalizing completed cancelled failed expired; do
	jqr .status "ans/batch-$s.json"; done | tr '\n' ' ')" \
    "validating in_progress finalizing completed cancelled failed expired " \
    "emulator: the batches went through every state"
is "$(jqr .status ans/batch-cancel.json)" cancelling "emulator: cancel answers cancelling"

python3 "$TOP/tests/peers/schemacheck.py" "$PRISM_SPEC" manifest >checked 2>&1 || { echo "Bail out! schemacheck.py failed"; sed 's/^/# /' checked; exit 1; }

# The checker finds what is wrong, and names it: a broken Batch.
jq -c '.status = "done" | del(.object) | .request_counts.total = "2" | .metadata.qb_file = 7' \
    ans/batch-completed.json >ans/broken.json
printf 'broken\tBatch\t200\t200\n' >manifest.broken
python3 "$TOP/tests/peers/schemacheck.py" "$PRISM_SPEC" manifest.broken >checked.broken 2>&1
is "$(sed -n 's/^#   Batch \(\$[^:]*\):.*/\1/p' checked.broken | sort | tr '\n' ' ')" \
    '$.metadata $.object $.request_counts.total $.status ' \
    "the schema checker names each wrong field of a broken Batch"

# Known mismatches, reported (name: reason).
todo_for() {
	case $1 in
	files-list-empty) echo "qb-fake sends first_id/last_id null for an empty list; ListFilesResponse requires strings (tests/fake/qb-fake page()); the real service is not documented" ;;
	sync-chat) echo "qb-fake's chat answer keeps the shape of the real 2024 batch output (fixtures/openai-batch-output-2024-05.jsonl), which has no message.refusal; CreateChatCompletionResponse now requires it" ;;
	esac
}
while IFS= read -r l; do
	case $l in
	'#'*) echo "$l" ;;
	NOTE\ *) echo "# note: ${l#NOTE }" ;;
	PASS\ * | FAIL\ *)
		set -- $l
		[ "$1" = PASS ]
		_r=$?
		_t=$(todo_for "$2")
		if [ -n "$_t" ]; then
			todo_ok $_r "emulator: $2 is a valid $3" "$_t"
		else
			ok $_r "emulator: $2 is a valid $3"
		fi
		;;
	*) echo "# $l" ;;
	esac
done <checked

done_testing
