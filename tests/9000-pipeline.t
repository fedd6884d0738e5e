#!/bin/sh
# The whole batch pipeline against the emulator: pack -> submit -> poll
# -> reconcile, with a request the provider refuses (400), one it fails
# (500), an expired batch (end to end), a re-run from cron, and a
# batch failed for the enqueued-token limit whose retries pack into the
# very same file, which must go again.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null 2>&1 || skip_all "jq is needed"
plan 27

# 12 items; i05 is refused (400), i09 fails on the server side (500).
i=1
while [ $i -le 12 ]; do
	id=$(printf 'i%02d' $i)
	case $id in
	i05) extra=',"qb_fake":{"status":400,"code":"context_length_exceeded"}' ;;
	i09) extra=',"qb_fake":{"status":500}' ;;
	*) extra= ;;
	esac
	printf '{"id":"%s","body":{"model":"m1","messages":[{"role":"user","content":"text %d about work"}]%s},"meta":{"n":%d}}\n' \
		"$id" $i "$extra" $i
	i=$((i + 1))
done >"$T/items.jsonl"
gzip -c "$T/items.jsonl" >"$T/items.jsonl.gz"

fake_start --batch-seconds 0.5
mkdir -p "$T/b" "$T/r"
qb-pack -p openai -e /v1/chat/completions -d "$T/b" -n 5 "$T/items.jsonl.gz" >"$T/packs"
is "$?:$(wc -l <"$T/packs" | tr -d ' ')" "0:3" "pack: 12 items in files of at most 5"
qb-submit --ledger "$T/jobs" <"$T/packs" >"$T/submitted" 2>"$T/err"
is "$?:$(wc -l <"$T/submitted" | tr -d ' ')" "0:3" "submit: three batches"
is "$(jqr 'select(.batch_id) | .batch_id' "$T/jobs" | sort | tr '\n' ' ')" "$(jqr .batch_id "$T/submitted" | sort | tr '\n' ' ')" "submit: the ledger holds every job printed"
qb-poll --wait --interval 0.1 --timeout 60 -d "$T/r" <"$T/submitted" >"$T/polled" 2>"$T/err"
is "$?:$(jqr 'select(.ended) | .status' "$T/polled" | sort -u)" "0:completed" "poll: every batch ended, completed"
qb-reconcile -r "$T/items.jsonl.gz" <"$T/polled" >"$T/outcomes" 2>"$T/err"
is "$?" 1 "reconcile: exit 1, as not every outcome is done"
is "$(wc -l <"$T/outcomes" | tr -d ' '):$(jqr .id "$T/outcomes" | sort -u | wc -l | tr -d ' ')" "12:12" "one outcome per item"
is "$(jqr '"\(.id)=\(.outcome)"' "$T/outcomes" | sort | grep -v '=done' | tr '\n' ' ')" "i05=dead i09=retry " "i05 dead, i09 retry, the rest done"
is "$(jqr 'select(.id=="i05") | [.http_status, .error.code] | @tsv' "$T/outcomes")" "$(printf '400\tcontext_length_exceeded')" "dead: status and provider code kept"
is "$(jqr 'select(.id=="i03") | .meta.n' "$T/outcomes")" 3 "done: the item's meta joined"
like "$(cat "$T/err")" "12 requests: 10 done, 1 retry, 1 dead" "reconcile summary"

# The retry outcome is an item: it packs again, alone.
jqr 'select(.outcome=="retry")' "$T/outcomes" >"$T/retry.jsonl"
mkdir -p "$T/b2"
qb-pack -d "$T/b2" "$T/retry.jsonl" >"$T/packs2"
is "$?:$(jqr .requests "$T/packs2"):$(cat "$T"/b2/*.jsonl | jqr .custom_id)" "0:1:i09" "retry outcome packs again as an item"

# cron runs the submit again: nothing is uploaded or created twice.
before=$(fake_stats | jqr '[.uploads, .batches_created] | @tsv')
qb-submit --ledger "$T/jobs" <"$T/packs" >"$T/again" 2>"$T/err"
is "$?:$(wc -l <"$T/again" | tr -d ' ')" "0:0" "re-run: no new job"
is "$(fake_stats | jqr '[.uploads, .batches_created] | @tsv')" "$before" "re-run: no upload, no create"
like "$(cat "$T/err")" "3 skipped" "re-run: skips reported"
fake_stop

# Case 14 end to end: a batch expires after 2 of its 3 requests.
fake_start --batch-seconds 0.5 --expire-after-requests 2
printf '{"custom_id":"x%d","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[{"role":"user","content":"q%d"}]}}\n' \
	1 1 2 2 3 3 >"$T/x.jsonl"
mkdir -p "$T/b3" "$T/r3"
qb-pack -d "$T/b3" "$T/x.jsonl" | qb-submit -q >"$T/sub3"
qb-poll --wait --interval 0.1 --timeout 60 -d "$T/r3" <"$T/sub3" >"$T/polled3"
is "$(jqr '[.status, .ended, (.results | length)] | @tsv' "$T/polled3")" "$(printf 'expired\ttrue\t2')" "expired batch: expired is terminal, both files downloaded"
qb-reconcile -r "$T/x.jsonl" <"$T/polled3" >"$T/out3" 2>/dev/null
is "$(jqr '"\(.id)=\(.outcome)"' "$T/out3" | sort | tr '\n' ' ')" "x1=done x2=done x3=retry " "expired batch: paid results kept, the expired one retried"
jqr 'select(.outcome=="retry")' "$T/out3" >"$T/retry3.jsonl"
mkdir -p "$T/b4"
qb-pack -d "$T/b4" "$T/retry3.jsonl" >/dev/null
is "$(cat "$T"/b4/*.jsonl | jqr .custom_id | tr '\n' ' ')" "x3 " "expired batch: what finished is never run again"
is "$(jqr 'select(.outcome=="retry") | .status' "$T/out3")" "expired" "expired batch: the retry says why"
fake_stop

# token_limit_exceeded: the second file fails, its items come back as
# retries, pack into the same file (same sha256), and are submitted again.
fake_start --batch-seconds 0.5 --enqueued-token-limit 45
i=1
while [ $i -le 10 ]; do
	printf '{"id":"t%02d","body":{"model":"m1","messages":[{"role":"user","content":"text %02d about work"}]}}\n' $i $i
	i=$((i + 1))
done >"$T/t.jsonl"
mkdir -p "$T/b5" "$T/r5"
qb-pack -d "$T/b5" -n 5 "$T/t.jsonl" | qb-submit -q -l "$T/jobs5" >"$T/sub5"
qb-poll -w --interval 0.1 --timeout 60 -d "$T/r5" <"$T/sub5" >"$T/polled5"
is "$(jqr 'select(.status=="failed") | .errors[0].code' "$T/polled5")" token_limit_exceeded "token limit: one batch failed"
qb-reconcile -r "$T/t.jsonl" <"$T/polled5" 2>/dev/null | jqr 'select(.outcome=="retry")' >"$T/retry5.jsonl"
qb-pack -d "$T/b5" "$T/retry5.jsonl" >"$T/packs5"
is "$(jqr .sha256 "$T/packs5")" "$(jqr 'select(.status=="failed") | .sha256' "$T/polled5")" "token limit: the retries pack into the same file"
U=$(fake_stats | jqr .uploads)
qb-submit -v -l "$T/jobs5" <"$T/packs5" >"$T/sub6" 2>"$T/err"
is "$?:$(wc -l <"$T/sub6" | tr -d ' ')" "0:1" "token limit: the file is submitted again"
is "$(fake_stats | jqr .uploads):$(jqr .input_file_id "$T/sub6")" "$U:$(jqr 'select(.status=="failed") | .input_file_id' "$T/polled5")" \
    "token limit: from the file uploaded before, not uploaded again"
like "$(cat "$T/err")" "ended failed with nothing run; its retries are submitted again" "token limit: -v says why"
qb-poll -w --interval 0.1 --timeout 60 -d "$T/r5" <"$T/sub6" >"$T/polled6"
is "$(qb-reconcile -r "$T/retry5.jsonl" <"$T/polled6" 2>/dev/null | jqr .outcome | sort | uniq -c | tr -s ' ')" " 5 done" \
    "token limit: the retried items are done"
is "$(jqr 'select(.batch_id) | .sha256' "$T/jobs5" | wc -l | tr -d ' '):$(jqr 'select(.batch_id) | .sha256' "$T/jobs5" | grep -c "$(jqr .sha256 "$T/packs5")")" "3:2" \
    "token limit: the ledger keeps the failed job and adds the new one"
fake_stop

# A batch that expires before running anything: its retries pack into the
# same file, which is submitted again (the emulator counts the expired
# requests as failed, so only completed requests may count as run).
fake_start --batch-seconds 0.5 --expire-after-requests 0
mkdir -p "$T/b7" "$T/r7"
qb-pack -d "$T/b7" "$T/x.jsonl" | qb-submit -q -l "$T/jobs7" >"$T/sub7"
qb-poll -w --interval 0.1 --timeout 60 -i "$T/jobs7" -d "$T/r7" >"$T/polled7"
qb-reconcile -r "$T/x.jsonl" <"$T/polled7" 2>/dev/null | jqr 'select(.outcome=="retry")' >"$T/retry7.jsonl"
qb-pack -d "$T/b7" "$T/retry7.jsonl" | qb-submit -l "$T/jobs7" >"$T/sub8" 2>"$T/err"
is "$(jqr .status "$T/polled7"):$(wc -l <"$T/sub8" | tr -d ' ')" "expired:1" "expired with nothing run: submitted again"
fake_stop

# A wrong key stops at the first call with 77 and keeps the pack records.
fake_start --batch-seconds 0.5
OPENAI_API_KEY=sk-wrong qb-submit <"$T/packs" >"$T/out" 2>"$T/err"
is "$?:$(wc -l <"$T/out" | tr -d ' ')" "77:0" "wrong key: exit 77, no job invented"
done_testing
