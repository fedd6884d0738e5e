#!/bin/sh
# qb -p azure (Azure OpenAI, qb-providers(7) AZURE OPENAI) against the emulator's --azure
# face: pack -p azure | submit | poll -w | reconcile; the key goes in an
# api-key header, never in Authorization; AZURE_OPENAI_API_VERSION goes on
# every request; the older API's "Completed" and string times are read;
# qb-pack splits at 100,000 requests; a wrong key is 77, no endpoint 78.
. "$(dirname "$0")/lib.sh"
plan 27

QB_MAX_RETRIES=1
export QB_MAX_RETRIES
unset AZURE_OPENAI_API_KEY AZURE_OPENAI_ENDPOINT AZURE_OPENAI_API_VERSION
fake_start --azure --batch-seconds 1
unset OPENAI_BASE_URL OPENAI_API_KEY
AZURE_OPENAI_ENDPOINT=$FAKE_URL/v1
AZURE_OPENAI_API_KEY=sk-test
export AZURE_OPENAI_ENDPOINT AZURE_OPENAI_API_KEY
stat_of() { fake_stats | jqr "$1"; }
reset() { curl -s -X POST "$FAKE_URL/_qb/reset" >/dev/null; }

cd "$T" || exit 1
mkdir b
printf '%s\n' \
    '{"id":"z1","body":{"model":"my-deployment","messages":[{"role":"user","content":"I love dogs"}]}}' \
    '{"id":"z2","body":{"model":"my-deployment","messages":[{"role":"user","content":"my job"}]}}' \
    '{"id":"z3","body":{"model":"my-deployment","messages":[{"role":"user","content":"x"}],"qb_fake":{"status":400}}}' >items.jsonl
check_exit 0 "qb-pack -p azure" qb-pack -p azure -d b items.jsonl
cp "$T/out" pack.jsonl
is "$(jqr '[.provider,.endpoint,.requests]|@tsv' pack.jsonl)" "$(printf 'azure\t/v1/chat/completions\t3')" \
    "pack record: provider azure, the OpenAI endpoint"
is "$(jq -r .url "$(jqr .file pack.jsonl)" | sort -u)" /v1/chat/completions "lines say /v1/chat/completions"

# the pipeline, v1 API: no api-version
check_exit 0 "submit" qb-submit pack.jsonl
cp "$T/out" job.jsonl
is "$(jqr '[.provider,.status]|@tsv' job.jsonl)" "$(printf 'azure\tvalidating')" "job record"
is "$(stat_of '.requests["POST /v1/batches"]["200"]')" 1 "one create, with the api-key header"
is "$(stat_of '[.requests|to_entries[]|select(.value["401"])]|length')" 0 \
    "no 401: no Authorization header went out"
is "$(stat_of '.requests["api-version -"]|keys|sort|join(",")')" "GET /v1/batches,POST /v1/batches,POST /v1/files" \
    "no api-version when AZURE_OPENAI_API_VERSION is unset"
check_exit 0 "qb-poll -w" qb-poll -w --interval 0.1 -d b job.jsonl
cp "$T/out" polled.jsonl
is "$(jqr '[.status,.ended,(.results|length)]|@tsv' polled.jsonl)" "$(printf 'completed\ttrue\t2')" \
    "completed, output and error files fetched"
az() { curl -s -H "api-key: sk-test" "$AZURE_OPENAI_ENDPOINT/$1"; }
ttl() { az "files/$1" | jqr '.expires_at - .created_at'; }
OUT=$(az "batches/$(jqr .batch_id polled.jsonl)" | jqr .output_file_id)
is "$(ttl "$(jqr .input_file_id polled.jsonl)") $(ttl "$OUT")" "2592000 2592000" \
    "input and output files expire after 30 days (500 files per resource, 10,000 that expire)"
check_exit 1 "qb-reconcile: the 400 is a failure" qb-reconcile -r items.jsonl polled.jsonl
is "$(jq -r '.id' "$T/out" | sort | tr '\n' ' ')" "z1 z2 z3 " "one result per item"

# an older dated API: api-version on every request, "Completed" and string times
fake_stop
fake_start --azure-old --batch-seconds 1
unset OPENAI_BASE_URL OPENAI_API_KEY
AZURE_OPENAI_ENDPOINT=$FAKE_URL/v1
AZURE_OPENAI_API_VERSION=2024-10-21
export AZURE_OPENAI_ENDPOINT AZURE_OPENAI_API_VERSION
check_exit 0 "submit with AZURE_OPENAI_API_VERSION" qb-submit pack.jsonl
cp "$T/out" job2.jsonl
is "$(jqr '[.provider,.status]|@tsv' job2.jsonl)" "$(printf 'azure\tValidating')" \
    "the status word as the older API spells it"
like "$(jqr .created_at job2.jsonl)" "Z" "a string created_at passes as RFC 3339"
check_exit 0 "qb-poll -w, older API" qb-poll -w --interval 0.1 -d b job2.jsonl
cp "$T/out" polled2.jsonl
is "$(jqr '[.status,.ended,(.results|length)]|@tsv' polled2.jsonl)" "$(printf 'Completed\ttrue\t2')" \
    "\"Completed\" ends the job"
is "$(stat_of '.requests|keys|map(select(startswith("api-version")))|join(",")')" "api-version 2024-10-21" \
    "every request carried api-version=2024-10-21"
is "$(stat_of '.requests["api-version 2024-10-21"]|keys|sort|join(",")')" \
    "GET /v1/batches,GET /v1/batches/{id},GET /v1/files/{id}/content,POST /v1/batches,POST /v1/files" \
    "upload, create, get and both downloads"
check_exit 78 "a bad AZURE_OPENAI_API_VERSION" env AZURE_OPENAI_API_VERSION='x y' qb-poll job2.jsonl
unset AZURE_OPENAI_API_VERSION

# keys and endpoints
check_exit 77 "a wrong key" env AZURE_OPENAI_API_KEY=sk-wrong qb-poll job2.jsonl
is "$(curl -s -o /dev/null -w '%{http_code}' -H 'api-key: sk-test' -H 'Authorization: Bearer sk-test' \
    "$FAKE_URL/v1/batches")" 401 "the emulator refuses an Authorization header: the 200s above had none"
check_exit 78 "no AZURE_OPENAI_ENDPOINT" env -u AZURE_OPENAI_ENDPOINT qb-poll job2.jsonl
like "$(cat "$T/err")" "AZURE_OPENAI_ENDPOINT is not set" "and says so"
check_exit 78 "no AZURE_OPENAI_API_KEY" env -u AZURE_OPENAI_API_KEY qb-poll job2.jsonl

# 100,000 requests per file (qb-providers(7) AZURE OPENAI)
awk 'BEGIN { for (i = 0; i <= 100000; i++)
    printf "{\"id\":\"r%d\",\"body\":{\"model\":\"d\",\"messages\":[]}}\n", i }' >big.jsonl
mkdir big
qb-pack -p azure -d big big.jsonl >bigpack.jsonl 2>/dev/null
is "$(jqr .requests bigpack.jsonl | tr '\n' ' ')" "100000 1 " "100,001 items: two files, split at 100,000"
