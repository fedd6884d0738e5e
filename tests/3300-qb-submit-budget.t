#!/bin/sh
# qb-submit --token-budget (qb-providers(7) OPENAI Limits): three packed files of
# about 40,000 estimated tokens for one model against an enqueued-token
# limit of 90,000: the third is held (exit 75) until the first two end,
# by a later run or by --wait-budget; no batch fails token_limit_exceeded.
. "$(dirname "$0")/lib.sh"
plan 20

fake_start --batch-seconds 100 --enqueued-token-limit 90000

reset() { curl -s -X POST "$FAKE_URL/_qb/reset" >/dev/null; }
advance() { curl -s -X POST -d "{\"advance\":$1}" "$FAKE_URL/_qb/clock" >/dev/null; }
stat_of() { fake_stats | jqr "$1"; }
failed() {
	curl -s -H 'Authorization: Bearer sk-test' "$OPENAI_BASE_URL/batches?limit=100" |
	    jqr '[.data[]|select(.status=="failed")]|length'
}

cd "$T" || exit 1
mkdir b
# 30 items of 4002 tokens each (16000 + 2 + 4 characters): 3 files of 10
python3 -c '
import json
for i in range(30):
    print(json.dumps({"id": "i%d" % i, "body": {"model": "m1",
        "messages": [{"role": "user", "content": "x" * 16000}]}}))' >items.jsonl
check_exit 0 "pack three files" qb-pack -n 10 -d b items.jsonl
cp "$T/out" pack.jsonl
is "$(jqr -s 'map(.tokens)|@tsv' pack.jsonl)" "$(printf '40020\t40020\t40020')" \
    "pack records carry the emulator's token count"

# held without waiting
check_exit 75 "the third file is held" qb-submit --token-budget 90000 -l led.jsonl pack.jsonl
is "$(wc -l <"$T/out" | tr -d ' ')" 2 "two job records printed"
is "$(stat_of .batches_created)" 2 "two batches created"
like "$(cat "$T/err")" "held: 40020 tokens for m1 would pass the budget 90000 (80040 enqueued)" \
    "the held file is reported"
like "$(cat "$T/err")" "1 held" "the summary counts it"
check_exit 75 "still held while the batches run" qb-submit --token-budget 90000 -l led.jsonl pack.jsonl
is "$(stat_of .batches_created)" 2 "still two batches"

# room frees once the first two end
advance 200
check_exit 0 "a re-run submits the third" qb-submit --token-budget 90000 -l led.jsonl pack.jsonl
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "one job record printed"
is "$(stat_of .batches_created)" 3 "three batches created"
is "$(failed)" 0 "no batch failed"

# QB_TOKEN_BUDGET; a file bigger than the whole budget goes anyway
reset
rm -f led.jsonl
QB_TOKEN_BUDGET=30000 qb-submit -l led.jsonl pack.jsonl >out1 2>err1
is "$?" 0 "a file over the whole budget is submitted anyway (exit 0)"
like "$(cat err1)" "pass the budget 30000 on their own; submitted anyway" "with a warning"
check_exit 78 "bad QB_TOKEN_BUDGET" env QB_TOKEN_BUDGET=lots qb-submit pack.jsonl

# --wait-budget: the same in one run
reset
rm -f led.jsonl
qb-submit --token-budget 90000 --wait-budget 60 -l led.jsonl pack.jsonl >out2 2>err2 &
subpid=$!
w=0
while [ "$(stat_of .batches_created)" != 2 ] && [ $w -lt 200 ]; do sleep 0.05; w=$((w + 1)); done
sleep 1.5
is "$(stat_of .batches_created)" 2 "waiting: two batches created"
advance 200
wait "$subpid"
is "$?" 0 "--wait-budget submits the third in the same run (exit 0)"
is "$(stat_of .batches_created)" 3 "three batches created"
is "$(failed)" 0 "no batch failed"

done_testing
