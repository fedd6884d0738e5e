# tests/peers/prism.sh: Stainless's Prism (a mock server built from an
# OpenAPI spec) on the official OpenAI or Anthropic spec, for conformance
# tests. Source it from a test after lib.sh, or run it alone to get a mock
# by hand:
#   sh tests/peers/prism.sh [openai|anthropic] [completed]
#                       prints "PORT PID DIR" and leaves Prism running;
#                       kill PID when done
# PRISM_API (set it before calling the functions) picks the spec: openai
# (the default) or anthropic.
# prism_install installs @stainless-api/prism-cli and js-yaml with npm into
# a cache folder ($QB_PEERS_CACHE/prism, default $HOME/.cache/qb-peers/prism;
# never into the tree). prism_start repairs ../shared/specs/openai/openapi.yaml
# (or, with PRISM_API=anthropic, ../shared/specs/anthropic/anthropic-openapi.json)
# with ../shared/peers/fix-spec-for-prism.mjs into $T, trimmed to the paths
# qb uses, starts `prism mock` on a free loopback port, waits until it
# answers and sets PRISM_PORT, PRISM_URL (no /v1: the OpenAI spec's paths
# have none, the Anthropic spec's start with it), PRISM_LOG and PRISM_SPEC
# (the whole repaired spec, as JSON, for schema checks). The test is
# skipped when ../shared, node or npm are absent or npm cannot install.
# Nothing from ../shared is copied here.
# SPDX-License-Identifier: ISC

PEERS_CACHE=${QB_PEERS_CACHE:-${HOME:-/tmp}/.cache/qb-peers}
PRISM_DIR=$PEERS_CACHE/prism
PRISM_PKG=@stainless-api/prism-cli@5.16.1
PRISM_YAML_PKG=js-yaml@4.1.0
PRISM_API=${PRISM_API:-openai}
# The operations qb uses, or may use (qb-providers(7) OPENAI).
PRISM_PATHS='/batches,/batches/{batch_id},/batches/{batch_id}/cancel,/files,/files/{file_id},/files/{file_id}/content,/chat/completions,/embeddings,/completions,/responses'
# The same for Anthropic (qb-providers(7) ANTHROPIC); the spec's paths carry /v1.
PRISM_ANTHROPIC_PATHS='/v1/messages,/v1/messages/batches,/v1/messages/batches/{message_batch_id},/v1/messages/batches/{message_batch_id}/cancel,/v1/messages/batches/{message_batch_id}/results'

# _prism_specfile: the spec of PRISM_API, under ../shared
_prism_specfile() {
	case $PRISM_API in
	anthropic) echo specs/anthropic/anthropic-openapi.json ;;
	*) echo specs/openai/openapi.yaml ;;
	esac
}

_prism_skip() {
	if command -v skip_all >/dev/null 2>&1; then
		skip_all "$*"
	fi
	echo "prism.sh: skipped: $*" >&2
	exit 2
}

_prism_free_port() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

prism_install() {
	for _f in "$(_prism_specfile)" peers/fix-spec-for-prism.mjs; do
		[ -e "$SHARED/$_f" ] ||
		    _prism_skip "../shared/$_f is absent (a plain clone has no ../shared)"
	done
	command -v node >/dev/null 2>&1 || _prism_skip "node is absent (apt-get install nodejs npm)"
	command -v npm >/dev/null 2>&1 || _prism_skip "npm is absent (apt-get install npm)"
	# The engines field of prism-cli 5.16.1; Debian 12 has 18.20.4.
	node -e 'const [a, b, c] = process.versions.node.split(".").map(Number);
	    process.exit(a > 18 || (a == 18 && (b > 20 || (b == 20 && c >= 1))) ? 0 : 1)' ||
	    _prism_skip "node $(node --version) is too old for Prism (18.20.1 or later)"
	if ! grep -q '"version": *"5\.16\.1"' \
	    "$PRISM_DIR/node_modules/@stainless-api/prism-cli/package.json" 2>/dev/null ||
	    [ ! -f "$PRISM_DIR/node_modules/js-yaml/package.json" ]; then
		mkdir -p "$PRISM_DIR" || _prism_skip "cannot make $PRISM_DIR"
		# One install at a time: parallel test runs share the cache.
		_lock=
		command -v flock >/dev/null 2>&1 && _lock="flock $PRISM_DIR.lock"
		$_lock npm install --prefix "$PRISM_DIR" --no-audit --no-fund \
		    --silent "$PRISM_PKG" "$PRISM_YAML_PKG" >/dev/null 2>&1 ||
		    _prism_skip "npm install $PRISM_PKG $PRISM_YAML_PKG failed (offline?)"
	fi
	[ -x "$PRISM_DIR/node_modules/.bin/prism" ] ||
	    _prism_skip "npm installed no prism binary in $PRISM_DIR"
}

# prism_spec: write $T/openai-spec.json (the whole spec, repaired, as JSON)
# and $T/openai-prism.json (only PRISM_PATHS and what they reach); with
# PRISM_API=anthropic, $T/anthropic-spec.json and $T/anthropic-prism.json
# (only PRISM_ANTHROPIC_PATHS). PRISM_MOCK is the file Prism serves.
prism_spec() {
	if [ "$PRISM_API" = anthropic ]; then
		PRISM_SPEC=$T/anthropic-spec.json
		PRISM_MOCK=$T/anthropic-prism.json
		node "$SHARED/peers/fix-spec-for-prism.mjs" \
		    "$SHARED/$(_prism_specfile)" "$PRISM_SPEC" >"$T/fix-spec.log" 2>&1 &&
		node "$SHARED/peers/fix-spec-for-prism.mjs" "$PRISM_SPEC" \
		    "$PRISM_MOCK" "$PRISM_ANTHROPIC_PATHS" >>"$T/fix-spec.log" 2>&1 ||
		    { echo "Bail out! fix-spec-for-prism.mjs failed"; sed 's/^/# /' "$T/fix-spec.log"; exit 1; }
		return 0
	fi
	PRISM_SPEC=$T/openai-spec.json
	PRISM_MOCK=$T/openai-prism.json
	JS_YAML=$PRISM_DIR/node_modules/js-yaml node \
	    "$SHARED/peers/fix-spec-for-prism.mjs" \
	    "$SHARED/specs/openai/openapi.yaml" "$PRISM_SPEC" >"$T/fix-spec.log" 2>&1 &&
	node "$SHARED/peers/fix-spec-for-prism.mjs" "$PRISM_SPEC" \
	    "$T/openai-prism.json" "$PRISM_PATHS" >>"$T/fix-spec.log" 2>&1 ||
	    { echo "Bail out! fix-spec-for-prism.mjs failed"; sed 's/^/# /' "$T/fix-spec.log"; exit 1; }
}

# prism_completed: make GET /batches/{batch_id} answer the spec's own
# example of a Batch object (status "completed", with output and error
# files), so that qb-poll goes on to download results. Only what Prism
# answers changes; how it validates requests does not. The example sits in
# x-oaiMeta as text with a trailing comma, which is dropped here.
prism_completed() {
	node - "$T/openai-prism.json" <<'JS' || { echo "Bail out! cannot set the Batch example"; exit 1; }
const fs = require("fs");
const f = process.argv[2], spec = JSON.parse(fs.readFileSync(f, "utf8"));
const text = spec.components.schemas.Batch["x-oaiMeta"].example;
const value = JSON.parse(text.replace(/,(\s*[}\]])/g, "$1"));
const media = spec.paths["/batches/{batch_id}"].get.responses["200"].content["application/json"];
media.examples = { completed: { value } };
fs.writeFileSync(f, JSON.stringify(spec));
JS
}

# prism_anthropic_ended: make GET /v1/messages/batches/{message_batch_id}
# answer an ended MessageBatch (PRISM_API=anthropic), so that qb-poll goes
# on to fetch its results_url. The spec has no whole example of one: it is
# made of the examples of each field (results_url among them), with
# processing_status "ended", nothing archived or cancelled, and the counts
# of an ended batch. Only what Prism answers changes.
prism_anthropic_ended() {
	node - "$PRISM_MOCK" <<'JS' || { echo "Bail out! cannot set the MessageBatch example"; exit 1; }
const fs = require("fs");
const f = process.argv[2], spec = JSON.parse(fs.readFileSync(f, "utf8"));
const S = spec.components.schemas, value = {};
for (const [k, p] of Object.entries(S.MessageBatch.properties))
  if (p.examples) value[k] = p.examples[0];
Object.assign(value, { type: "message_batch", processing_status: "ended",
  archived_at: null, cancel_initiated_at: null,
  request_counts: { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 } });
if (!/^https:\/\/[^/]+\/v1\/messages\/batches\/[^/]+\/results$/.test(value.results_url))
  throw new Error("no results_url example: " + value.results_url);
const media = spec.paths["/v1/messages/batches/{message_batch_id}"].get.responses["200"].content["application/json"];
media.examples = { ended: { value } };
fs.writeFileSync(f, JSON.stringify(spec));
JS
}

# prism_start [completed]: start the mock; see the top of this file.
# completed: a batch read back has ended, with results to fetch.
prism_start() {
	prism_install
	prism_spec
	if [ "${1:-}" = completed ]; then
		if [ "$PRISM_API" = anthropic ]; then prism_anthropic_ended; else prism_completed; fi
	fi
	PRISM_LOG=$T/prism.log
	if [ "$PRISM_API" = anthropic ]; then
		# Anthropic routes check no auth (../shared/peers/README.md).
		_ready=/v1/messages/batches/msgbatch_ready
	else
		_ready=/batches/batch_ready
	fi
	for _try in 1 2 3; do
		PRISM_PORT=$(_prism_free_port)
		"$PRISM_DIR/node_modules/.bin/prism" mock "$PRISM_MOCK" \
		    -h 127.0.0.1 -p "$PRISM_PORT" >"$PRISM_LOG" 2>&1 &
		PRISM_PID=$!
		_pids="$_pids $PRISM_PID"
		PRISM_URL=http://127.0.0.1:$PRISM_PORT
		_i=0
		while [ $_i -lt 300 ] && kill -0 "$PRISM_PID" 2>/dev/null; do
			[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' \
			    -H 'Authorization: Bearer sk-prism' \
			    "$PRISM_URL$_ready")" = 200 ] && return 0
			sleep 0.1
			_i=$((_i + 1))
		done
		kill "$PRISM_PID" 2>/dev/null
		wait "$PRISM_PID" 2>/dev/null
		# Another process may have taken the port: try another.
		grep -q EADDRINUSE "$PRISM_LOG" || break
	done
	echo "Bail out! Prism did not start"
	sed 's/^/# /' "$PRISM_LOG" | tail -n 20
	exit 1
}

# prism_mark: the log's size now; prism_requests MARK lists what came after.
prism_mark() { wc -c <"$PRISM_LOG" | tr -d ' '; }

# prism_requests MARK: Prism's log since MARK, one line per request:
#   METHOD PATH STATUS valid|invalid [violation | ...]
# STATUS is what Prism answered: 422 for a request that fails validation,
# 401 without a bearer key, 404 or 405 for a route the spec lacks, 406 when
# the spec has no answer in the media type the request accepts, 500 when
# Prism itself fails (it cannot make application/x-jsonl, the Anthropic
# results): the request passed, and Prism's error follows "valid". Prism
# also checks its own answers ("Violation: response..."): those are left out.
prism_requests() {
	tail -c +"$(($1 + 1))" "$PRISM_LOG" | python3 -c '
import re, sys
codes = {"UNPROCESSABLE_ENTITY": "422", "UNAUTHORIZED": "401", "FORBIDDEN": "403",
         "NO_PATH_MATCHED_ERROR": "404", "NO_METHOD_MATCHED_ERROR": "405",
         "NOT_ACCEPTABLE": "406", "NO_SERVER_MATCHED_ERROR": "404"}
reqs = []
for line in sys.stdin:
    line = re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip("\n")
    m = re.search(r"\[HTTP SERVER\] (\w+) (\S+) .*Request received", line)
    if m:
        reqs.append({"m": m.group(1).upper(), "p": m.group(2), "st": "?", "ok": None, "v": []})
        continue
    if not reqs:
        continue
    r = reqs[-1]
    if "passed the validation rules" in line:
        r["ok"] = True
    elif "did not pass the validation rules" in line:
        r["ok"] = False
    elif "[VALIDATOR]" in line and "Violation: response" not in line:
        m = re.search(r"\[VALIDATOR\]\s+\S+\s+(?:error|warning)\s+(.*)", line)
        if m:
            r["v"].append(m.group(1).strip())
    m = re.search(r"Responding with \"(\d+)\"", line)
    if m:
        r["st"] = m.group(1)
    m = re.search(r"Request terminated with error: \S*#(\w+): (.*)", line)
    if m:
        r["st"] = codes.get(m.group(1), m.group(1))
        if r["ok"] is None and r["st"] != "406":
            r["v"].append(m.group(2).strip())
    elif "Request terminated with error:" in line:
        # Prism failed making its answer (500), e.g. "Error: Cannot find
        # serializer for application/x-jsonl": the request is not at fault.
        r["st"] = "500"
        r["n"] = "Prism: " + line.split("Request terminated with error:", 1)[1].strip()
for r in reqs:
    ok = r["ok"] is True and not r["v"] and r["st"] not in ("401", "404", "405", "422")
    print(r["m"], r["p"], r["st"], "valid" if ok else "invalid",
          " | ".join(r["v"] + ([r["n"]] if r.get("n") else [])))
'
}

# Run alone: start Prism, print "PORT PID DIR", leave it running.
case ${0##*/} in
prism.sh)
	TOP=$(cd "$(dirname "$0")/../.." && pwd)
	SHARED=${QB_SHARED:-$TOP/../shared}
	T=$(mktemp -d "${TMPDIR:-/tmp}/qb-prism.XXXXXX")
	_pids=
	case ${1:-} in
	openai | anthropic) PRISM_API=$1; shift ;;
	esac
	prism_start "${1:-}" >&2
	echo "$PRISM_PORT $PRISM_PID $T"
	;;
esac
