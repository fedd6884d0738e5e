#!/bin/sh
# Keys never reach a log or a record: a key in the base URL's userinfo
# (--base-url or OPENAI_BASE_URL) and the key from the environment appear
# nowhere in the standard output or error of qb-submit (batch and --sync),
# qb-poll and qb-reap at -vv, against the emulator, nor in the messages
# and records of a connection that fails.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null 2>&1 || skip_all "jq is needed"
ENVKEY=sk-env-secret-4c1d8e
URLKEY=sk-userinfo-secret-9e2b7a
fake_start --key "$ENVKEY" --batch-seconds 1
OPENAI_API_KEY=$ENVKEY
QB_MAX_RETRIES=1
export OPENAI_API_KEY QB_MAX_RETRIES
plan 14
BASE="http://qbuser:$URLKEY@127.0.0.1:$FAKE_PORT/v1"

# clean DESC FILE...: neither key in the files
clean() {
	_d=$1
	shift
	if cat "$@" | grep -q -e "$ENVKEY" -e "$URLKEY"; then
		ok 1 "$_d"
		cat "$@" | grep -e "$ENVKEY" -e "$URLKEY" | head -n 3 | sed 's/^/# leaked: /'
	else
		ok 0 "$_d"
	fi
}

cd "$T" || exit 1
printf '{"id":"r1","body":{"model":"m1","messages":[{"role":"user","content":"hi"}]}}\n' >items.jsonl

qb-submit --sync -vv --base-url "$BASE" items.jsonl >out 2>err
is "$?:$(jqr .status out)" "0:succeeded" "--sync through a base URL with userinfo"
like "$(cat err)" "POST http://[redacted]@127.0.0.1:$FAKE_PORT/" "-vv shows the URL, its userinfo redacted"
clean "--sync -vv: no key in stdout or stderr" out err

OPENAI_BASE_URL=$BASE qb-submit --sync -vv items.jsonl >out 2>err
is "$?" 0 "--sync through OPENAI_BASE_URL with userinfo"
clean "OPENAI_BASE_URL: no key in stdout or stderr" out err

mkdir d
qb-pack -d d items.jsonl >packs 2>/dev/null
qb-submit -vv --base-url "$BASE" packs >jobs 2>err
is "$?:$(jqr .status jobs | wc -l | tr -d ' ')" "0:1" "a batch submitted"
clean "batch submit -vv: no key" jobs err
sleep 1.5
qb-poll -vv --base-url "$BASE" -d d jobs >polled 2>err
is "$?" 0 "qb-poll -vv"
clean "qb-poll -vv: no key" polled err
qb-reap -vv --base-url "$BASE" polled >reaped 2>err
clean "qb-reap -vv: no key" reaped err

# Nothing listens on port 1: the connect failure names the URL.
DEAD="http://qbuser:$URLKEY@127.0.0.1:1/v1"
qb-submit --sync -vv --base-url "$DEAD" items.jsonl >out 2>err
like "$(cat err)" "http://[redacted]@127.0.0.1:1/" "a connect failure names the URL, redacted"
like "$(jqr .error.message out)" "http://[redacted]@127.0.0.1:1/" "and so does the result's error"
clean "connect failure: no key in stdout or stderr" out err
qb-submit -vv --base-url "$DEAD" packs >out 2>err
clean "batch connect failure: no key" out err
done_testing
