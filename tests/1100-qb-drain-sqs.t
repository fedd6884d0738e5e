#!/bin/sh
# qb-drain against Amazon SQS, emulated by local-aws-sqs behind a proxy
# that checks every SigV4 signature: messages sent with the AWS SDK,
# windows by size and by deadline, visibility that expires and brings a
# message back with a higher count, settlement of done/retry/dead with a
# dead-letter queue, a batch with a failed entry, a wrong secret; several
# receivers in flight, which never hand a message on twice nor more than
# -n in a window, and a server that sends more than asked (released).
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/peers/sqs.sh"
sqs_start
plan 60

items() {
	i=$1
	while [ "$i" -le "$2" ]; do
		printf '{"id":"doc-%d","body":{"n":%d}}\n' "$i" "$i"
		i=$((i + 1))
	done
}
q=$(sqs_create "drain-$$")
dlq=$(sqs_create "drain-dlq-$$")
items 1 25 >"$T/in"
sqs_send "$q" "$T/in"
is "$(sqs_count "$q")" "25 0" "25 messages sent with the AWS SDK"

t0=$(date +%s%N)
check_exit 0 "a window of 10" qb-drain -Q "$q" -n 10 -t 10 --wait 1
t1=$(date +%s%N)
cp "$T/out" "$T/w1"
is "$(wc -l <"$T/w1" | tr -d ' ')" 10 "ten items"
ok_if "the size closed the window" $(( (t1 - t0) / 1000000 )) -lt 3000
is "$(jqr '[.queue, .receives, (.receipt|length > 0)]' "$T/w1" | sort -u)" "[\"$q\",1,true]" \
	"queue, receives 1 and a receipt on each"
is "$(jqr '.body.n' "$T/w1" | sort -n | head -n 1)" 1 "bodies carried"
jqr .id "$T/w1" | grep -v '^doc-' >"$T/x"
is "$(cat "$T/x")" "" "the id comes from the body"

t0=$(date +%s%N)
check_exit 0 "a window by deadline" qb-drain -Q "$q" -n 100 -t 2 --wait 1
t1=$(date +%s%N)
cp "$T/out" "$T/w2"
is "$(wc -l <"$T/w2" | tr -d ' ')" 15 "the other fifteen"
ms=$(( (t1 - t0) / 1000000 ))
ok_if "the deadline closed it ($ms ms)" $ms -ge 1900 -a $ms -lt 5000
is "$(cat "$T/w1" "$T/w2" | jqr .id | sort -u | wc -l | tr -d ' ')" 25 "every message once"
is "$(sqs_count "$q" | cut -d' ' -f2)" 25 "all in flight"

# Settle: done, retry, dead (to the dead-letter queue); a bad receipt fails alone.
{
	sed -n 1,8p "$T/w1" | jq -c '. + {outcome:"done"}'
	sed -n 9p "$T/w1" | jq -c '. + {outcome:"retry"}'
	sed -n 10p "$T/w1" | jq -c '. + {outcome:"dead"}'
	sed -n 1p "$T/w2" | jq -c '. + {outcome:"done", receipt:"junk"}'
	sed -n 2,3p "$T/w2" | jq -c '. + {outcome:"done"}'
} >"$T/outcomes"
check_exit 1 "--settle a mix with one bad receipt" \
	qb-drain --settle --retry-delay 0 --dead-letter-queue "$dlq" "$T/outcomes"
is "$(jqr .settled "$T/out" | sort | uniq -c | awk '{print $1, $2}' | tr '\n' ' ')" \
	"1 dead_lettered 10 deleted 1 null 1 released " "each entry on its own"
like "$(cat "$T/err")" "ReceiptHandleIsInvalid" "the failed entry is named"
like "$(jqr 'select(.settled == null) | .settle_error' "$T/out")" "ReceiptHandleIsInvalid" \
	"and its record says why in settle_error"
is "$(sqs_count "$q" | cut -d' ' -f2)" 13 "13 still in flight, the retry visible again"
check_exit 0 "drain the dead-letter queue" qb-drain -Q "$dlq" -n 1 -t 2 --wait 1
is "$(jqr '[.id, .outcome, .receives]' "$T/out")" "[\"$(sed -n 10p "$T/w1" | jqr .id)\",\"dead\",1]" \
	"the dead item, as an item again"
check_exit 0 "the retried message comes back" qb-drain -Q "$q" -n 1 -t 2 --wait 1 --visibility 1
is "$(jqr .id "$T/out")" "$(sed -n 9p "$T/w1" | jqr .id)" "the same message"
# AWS says 2; local-aws-sqs also counts the ChangeMessageVisibility as a receive.
ok_if "with a higher receive count" "$(jqr .receives "$T/out")" -ge 2
cp "$T/out" "$T/w3"

# Its visibility (window 2 s + 1 s) runs out; it comes back again.
sleep 3.2
check_exit 0 "visibility expired" qb-drain -Q "$q" -n 1 -t 2 --wait 1 --visibility 30 \
	--max-receives 2 --dead-letter "$T/dl"
is "$(jqr .id "$T/dl")" "$(sed -n 9p "$T/w1" | jqr .id)" "received 3 times: dead-lettered"
is "$(cat "$T/out")" "" "and not handed on"

# Retries that are not the item's fault (an account error, the token limit) are released
# at --max-receives as on a spool: the receive count comes from
# ApproximateReceiveCount, the rule from the outcome. The dead one goes to
# a dead-letter queue named sqs://REGION/ACCOUNT/NAME (qb-drain(1) EXAMPLES).
qa=$(sqs_create "acct-$$")
sqs_create "acct-dlq-$$" >/dev/null
items 1 3 >"$T/ain"
sqs_send "$qa" "$T/ain"
check_exit 0 "three to settle" qb-drain -Q "$qa" -n 3 -t 3 --wait 1
cp "$T/out" "$T/aw"
{
	jq -c 'select(.id=="doc-1") + {outcome:"retry", account_error:true,
	    error:{type:"invalid_request_error", code:null, message:"Your credit balance is too low"}}' "$T/aw"
	jq -c 'select(.id=="doc-2") + {outcome:"retry", error:{code:"token_limit_exceeded"}}' "$T/aw"
	jq -c 'select(.id=="doc-3") + {outcome:"retry", error:{code:"server_error"}}' "$T/aw"
} >"$T/ao"
check_exit 0 "--max-receives 1 on SQS" qb-drain -v --settle --retry-delay 0 --max-receives 1 \
	--dead-letter-queue "sqs://us-east-1/123456789012/acct-dlq-$$" "$T/ao"
is "$(jqr '[.id, .settled]' "$T/out" | tr '\n' ' ')" \
	'["doc-1","released"] ["doc-2","released"] ["doc-3","dead_lettered"] ' \
	"account_error and token_limit_exceeded released, server_error dead"
like "$(cat "$T/err")" "doc-1: received 1 times, --max-receives 1 not applied: not the item's fault (account_error" \
	"-v says why for the account"
like "$(cat "$T/err")" "doc-2: received 1 times, --max-receives 1 not applied: not the item's fault (token_limit_exceeded" \
	"and for the token limit"
check_exit 0 "the two come back" qb-drain -Q "$qa" -n 3 -t 2 --wait 1
is "$(jqr .id "$T/out" | sort | tr '\n' ' ')" "doc-1 doc-2 " "for another try"
check_exit 0 "the dead one" qb-drain -Q "sqs://us-east-1/123456789012/acct-dlq-$$" -n 1 -t 2 --wait 1
is "$(jqr '[.id, .error.code]' "$T/out")" '["doc-3","server_error"]' "in the dead-letter queue, its error kept"

# --commit: custody to a file, then the messages go.
q2=$(sqs_create "commit-$$")
# A cut .gz enqueues nothing: the input is read to its end before any send.
items 1 2000 | gzip >"$T/all.gz"
head -c "$(( $(wc -c <"$T/all.gz") / 2 ))" "$T/all.gz" >"$T/cut.gz"
check_exit 74 "--enqueue of a cut .gz" qb-drain --enqueue -Q "$q2" "$T/cut.gz"
is "$(sqs_count "$q2")" "0 0" "nothing sent"
items 100 112 | qb-drain --enqueue -Q "$q2"
is "$(sqs_count "$q2")" "13 0" "--enqueue sends in batches"
check_exit 0 "--commit -o file" qb-drain -Q "$q2" -n 13 -t 3 --wait 1 --commit -o "$T/window.jsonl"
is "$(jqr .id "$T/window.jsonl" | sort | tr '\n' ' ')" \
	"doc-100 doc-101 doc-102 doc-103 doc-104 doc-105 doc-106 doc-107 doc-108 doc-109 doc-110 doc-111 doc-112 " \
	"the window file"
is "$(sqs_count "$q2")" "0 0" "the queue is empty"

# sqs:// names the same queue.
items 200 200 | qb-drain --enqueue -Q "sqs://us-east-1/123456789012/commit-$$"
check_exit 0 "sqs://REGION/ACCOUNT/NAME" qb-drain -Q "sqs://us-east-1/123456789012/commit-$$" -n 1 -t 2 --wait 1
is "$(jqr .id "$T/out")" doc-200 "through AWS_ENDPOINT_URL_SQS"

# Several receivers: 57 messages, windows of at most 25 with 16 calls in flight.
q3=$(sqs_create "recv-$$")
items 300 356 >"$T/in3"
sqs_send "$q3" "$T/in3"
: >"$T/all3"
for w in 1 2 3; do
	check_exit 0 "window $w with --receivers 16" \
		qb-drain -Q "$q3" -n 25 -t 3 --wait 1 --receivers 16
	wc -l <"$T/out" | tr -d ' ' >>"$T/sizes3"
	cat "$T/out" >>"$T/all3"
done
is "$(tr '\n' ' ' <"$T/sizes3")" "25 25 7 " "never more than -n in a window"
is "$(jqr .id "$T/all3" | sort | uniq -d)" "" "no message handed on twice"
is "$(jqr .id "$T/all3" | sort -u | wc -l | tr -d ' ')" 57 "every message handed on"
# The emulator counts in-flight messages as visible too (peers/README.md, 4).
is "$(sqs_count "$q3")" "57 57" "all 57 in flight"

# A server that sends two more than asked, and one message in every answer.
cat >"$T/over.js" <<'JS'
const http = require("http");
let n = 0;
const srv = http.createServer((req, res) => {
  let b = "";
  req.on("data", (c) => (b += c));
  req.on("end", () => {
    const op = String(req.headers["x-amz-target"]).split(".")[1], r = JSON.parse(b);
    let out = {};
    if (op === "ReceiveMessage") {
      const ms = [];
      for (let i = 0; i < r.MaxNumberOfMessages + 2; i++) {
        const id = i === 0 ? "twice" : `m${++n}`;
        ms.push({ MessageId: id, ReceiptHandle: `rh-${id}-${++n}`, Body: `{"k":"${id}"}`,
          Attributes: { ApproximateReceiveCount: "1" } });
      }
      out = { Messages: ms };
    } else {
      console.log(JSON.stringify({ op, Entries: r.Entries }));
      out = { Successful: r.Entries.map((e) => ({ Id: e.Id })) };
    }
    setTimeout(() => res.end(JSON.stringify(out)), 30);
  });
});
srv.listen(0, "127.0.0.1", () => console.error("READY " + srv.address().port));
JS
node "$T/over.js" >"$T/over.log" 2>"$T/over.port" &
_pids="$_pids $!"
_wait_ready "$T/over.port" "the oversending server"
op=$(sed 's/READY //' "$T/over.port")
check_exit 0 "a server sending more than asked" env AWS_ENDPOINT_URL_SQS=http://127.0.0.1:$op \
	qb-drain -Q "http://127.0.0.1:$op/123456789012/over" -n 25 -t 5 --wait 1 --receivers 3
jqr .id "$T/out" >"$T/over.ids"
is "$(wc -l <"$T/over.ids" | tr -d ' ')" 23 "25 taken, the one received three times handed on once"
is "$(sort "$T/over.ids" | uniq -d)" "" "no id twice"
is "$(jqr -s '[.[] | select(.op == "ChangeMessageVisibilityBatch") | .Entries[]] |
	[length, ([.[].VisibilityTimeout] | unique)]' "$T/over.log")" "[6,[0]]" \
	"the 6 beyond -n released at once"
jqr '.receipt' "$T/out" >"$T/over.kept"
jqr '.Entries[].ReceiptHandle' "$T/over.log" >"$T/over.rel"
is "$(sort "$T/over.kept" "$T/over.rel" | uniq -d)" "" "none both handed on and released"
is "$(cat "$T/over.kept" "$T/over.rel" | sed 's/^rh-//; s/-[0-9]*$//' | grep -v twice | sort -u | wc -l | tr -d ' ')" \
	"$(( 31 - 3 ))" "every other message handed on or released"

check_exit 77 "a wrong secret" env AWS_SECRET_ACCESS_KEY=wrong qb-drain -Q "$q" -n 1 -t 1 --wait 0
like "$(cat "$T/err")" "HTTP 403" "a clear message"
unlike "$(cat "$T/err")" "wrong" "the secret is not shown"
check_exit 78 "no credentials" env -u AWS_ACCESS_KEY_ID qb-drain -Q "$q" -n 1 -t 1
# Visibility covers the whole window: a message taken at its start is not
# seen by another drainer while the window is still open, even though
# --visibility alone (1 s) would have let it go.
qv=$(sqs_create "drain-vis-$$")
items 1 3 >"$T/vin"
sqs_send "$qv" "$T/vin"
qb-drain -Q "$qv" -n 100 -t 4 --wait 1 --visibility 1 >"$T/va" 2>"$T/vae" &
va=$!
sleep 2.5
qb-drain -Q "$qv" -n 100 -t 1 --wait 1 --visibility 1 >"$T/vb" 2>/dev/null
wait $va
is "$(wc -l <"$T/va" | tr -d ' '):$(wc -l <"$T/vb" | tr -d ' ')" "3:0" "a window's messages stay leased until it closes"
done_testing
