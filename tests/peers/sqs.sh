# tests/peers/sqs.sh: source from a test after lib.sh. sqs_start installs
# local-aws-sqs and @aws-sdk/client-sqs with npm into a cache folder
# ($QB_PEERS_CACHE, default $HOME/.cache/qb-peers; never into the tree),
# starts the emulator and ../shared/peers/sigv4-check-proxy.mjs in front
# of it on free loopback ports, and exports the AWS_* variables qb-drain
# reads. The whole test is skipped when ../shared/peers, node or npm are
# absent. sqs_send QUEUE_URL FILE sends FILE's lines with the AWS SDK.
# SPDX-License-Identifier: ISC

PEERS_CACHE=${QB_PEERS_CACHE:-${HOME:-/tmp}/.cache/qb-peers}

_free_port() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

_wait_ready() { # FILE: wait for a READY line
	_i=0
	while ! grep -q READY "$1" 2>/dev/null && [ $_i -lt 200 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	grep -q READY "$1" || { echo "Bail out! $2 did not start"; cat "$1" "$1.err"; exit 1; }
}

sqs_start() {
	need_shared peers/sqs-server.mjs peers/sigv4-check-proxy.mjs
	command -v node >/dev/null 2>&1 || skip_all "node is absent (apt-get install nodejs npm)"
	command -v npm >/dev/null 2>&1 || skip_all "npm is absent (apt-get install npm)"
	if [ ! -d "$PEERS_CACHE/node_modules/local-aws-sqs" ] ||
	    [ ! -d "$PEERS_CACHE/node_modules/@aws-sdk/client-sqs" ]; then
		mkdir -p "$PEERS_CACHE" &&
		npm install --prefix "$PEERS_CACHE" --no-audit --no-fund --silent \
		    local-aws-sqs@2.0.2 @aws-sdk/client-sqs >/dev/null 2>&1 ||
		    skip_all "npm install local-aws-sqs @aws-sdk/client-sqs failed (offline?)"
	fi
	SQS_PORT=$(_free_port)
	PROXY_PORT=$(_free_port)
	(cd "$PEERS_CACHE" && exec node "$SHARED/peers/sqs-server.mjs" "$SQS_PORT") \
	    >"$T/sqs.log" 2>"$T/sqs.log.err" &
	_pids="$_pids $!"
	_wait_ready "$T/sqs.log" "the SQS emulator"
	AK=AKIDEXAMPLE SK=secret node "$SHARED/peers/sigv4-check-proxy.mjs" \
	    "$PROXY_PORT" "$SQS_PORT" >"$T/proxy.log" 2>"$T/proxy.log.err" &
	_pids="$_pids $!"
	_wait_ready "$T/proxy.log" "the SigV4 proxy"
	AWS_ACCESS_KEY_ID=AKIDEXAMPLE
	AWS_SECRET_ACCESS_KEY=secret
	AWS_REGION=us-east-1
	AWS_ENDPOINT_URL_SQS=http://127.0.0.1:$PROXY_PORT
	export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION AWS_ENDPOINT_URL_SQS
	unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_DEFAULT_REGION AWS_PROFILE
}

# sqs_sdk SCRIPT [ARGS]: run a Node ES module (stdin) with the SDK at hand.
sqs_sdk() {
	(cd "$PEERS_CACHE" && NODE_NO_WARNINGS=1 node --input-type=module - "$@")
}

# sqs_create NAME [ATTRIBUTES-JSON]: print the new queue's URL.
sqs_create() {
	sqs_sdk "$1" "${2:-{\}}" <<'JS'
import { createRequire } from "node:module";
const require = createRequire(process.cwd() + "/noop.js");
const { SQSClient, CreateQueueCommand } = require("@aws-sdk/client-sqs");
const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
const r = await sqs.send(new CreateQueueCommand({ QueueName: process.argv[2],
  Attributes: JSON.parse(process.argv[3]) }));
console.log(r.QueueUrl);
JS
}

# sqs_send URL FILE: send each line of FILE as one message (10 per call).
sqs_send() {
	sqs_sdk "$1" "$2" <<'JS'
import { createRequire } from "node:module";
import fs from "node:fs";
const require = createRequire(process.cwd() + "/noop.js");
const { SQSClient, SendMessageBatchCommand } = require("@aws-sdk/client-sqs");
const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
const lines = fs.readFileSync(process.argv[3], "utf8").split("\n").filter((l) => l);
for (let i = 0; i < lines.length; i += 10) {
  const r = await sqs.send(new SendMessageBatchCommand({ QueueUrl: process.argv[2],
    Entries: lines.slice(i, i + 10).map((b, k) => ({ Id: `m${i + k}`, MessageBody: b })) }));
  if (r.Failed && r.Failed.length) { console.error(JSON.stringify(r.Failed)); process.exit(1); }
}
JS
}

# sqs_count URL: visible and in-flight counts, "V F".
sqs_count() {
	sqs_sdk "$1" <<'JS'
import { createRequire } from "node:module";
const require = createRequire(process.cwd() + "/noop.js");
const { SQSClient, GetQueueAttributesCommand } = require("@aws-sdk/client-sqs");
const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
const r = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: process.argv[2],
  AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }));
const a = r.Attributes;
console.log(`${a.ApproximateNumberOfMessages} ${a.ApproximateNumberOfMessagesNotVisible}`);
JS
}
