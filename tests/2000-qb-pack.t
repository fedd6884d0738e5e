#!/bin/sh
# qb-pack: items and native request lines to batch files (tests/data/cases),
# the real OpenAI and vLLM input files, options and exit statuses.
. "$(dirname "$0")/lib.sh"
C=$TOP/tests/data/cases
plan 119

# pack DIR ARGS...: run qb-pack into a fresh DIR; out/err/rc in $T
pack() {
	_d=$1
	shift
	rm -rf "$_d"
	mkdir -p "$_d"
	qb-pack -d "$_d" "$@" >"$T/out" 2>"$T/err"
	rc=$?
}
# ids DIR: the custom_ids of every file in DIR, in file-name then line order
ids() { cat "$1"/*.jsonl | jqr .custom_id | tr '\n' ' '; }

# options
check_exit 0 "-h" qb-pack -h
like "$(cat "$T/out")" "usage: qb-pack" "-h prints usage on stdout"
check_exit 0 "-V" qb-pack -V
like "$(cat "$T/out")" "qb-pack 0." "-V prints the version"
check_exit 64 "no -d is a usage error" qb-pack "$C/crlf.jsonl"
like "$(cat "$T/err")" "usage: qb-pack" "usage on stderr"
check_exit 64 "bad --max-requests" qb-pack -d "$T" -n 0 "$C/crlf.jsonl"
check_exit 64 "unknown provider" qb-pack -d "$T" -p nope "$C/crlf.jsonl"
check_exit 66 "missing input" qb-pack -d "$T" "$T/nonexistent.jsonl"
like "$(cat "$T/err")" "nonexistent.jsonl: No such file" "missing input named"

# dup-id: duplicate custom_id
pack "$T/d1" "$C/dup-id.jsonl"
is "$rc" 1 "dup-id: exit 1 (partial)"
is "$(cat "$T/err")" "qb-pack: $C/dup-id.jsonl:2: duplicate custom_id \"a1\" (first at $C/dup-id.jsonl:1)" "dup-id: line 2 refused, naming the line and the id"
is "$(ids "$T/d1")" "a1 " "dup-id: never a file with repeated ids"
is "$(jqr .requests "$T/out")" 1 "dup-id: pack record counts one request"

# split-caps: caps
pack "$T/d3" -n 2 -b 400 "$C/split-caps.jsonl"
is "$rc" 1 "split-caps: exit 1"
is "$(jqr .requests "$T/out" | tr '\n' ' ')" "2 2 1 " "split-caps: files of 2, 2 and 1 requests"
is "$(jqr '.bytes <= 400' "$T/out" | sort -u)" true "split-caps: each at most 400 bytes"
like "$(cat "$T/err")" "split-caps.jsonl:6: line (" "split-caps: s6 rejected"
like "$(cat "$T/err")" "bytes with its newline) exceeds the per-file byte cap (-b) of 400 bytes for id \"s6\"" "split-caps: the message names the cap"
ok_if "split-caps: record bytes equal the file sizes" \
    "$(jqr '"\(.bytes) \(.file)"' "$T/out" | while read -r b f; do [ "$(wc -c <"$f")" = "$b" ] || echo bad; done)" = ""
ok_if "split-caps: sha256 in the record is the file's" \
    "$(jqr '"\(.sha256)  \(.file)"' "$T/out" | sha256sum -c --quiet 2>&1)" = ""
is "$(jqr .file "$T/out" | xargs cat | jqr .custom_id | tr '\n' ' ')" "s1 s2 s3 s4 s5 " "split-caps: input order kept across files"

# mixed-model-endpoint: one file per (url, model)
pack "$T/d4" "$C/mixed-model-endpoint.jsonl"
is "$rc" 0 "mixed-model-endpoint: exit 0"
is "$(wc -l <"$T/out" | tr -d ' ')" 3 "mixed-model-endpoint: three files"
is "$(jqr '[.endpoint,.model,.requests]|@tsv' "$T/out" | sort | tr '\t\n' ', ')" \
    "/v1/chat/completions,m1,1 /v1/chat/completions,m2,1 /v1/embeddings,e-small,1 " "mixed-model-endpoint: groups"
ok_if "mixed-model-endpoint: each file's url equals its record's endpoint" \
    "$(jqr '"\(.endpoint) \(.file)"' "$T/out" | while read -r e f; do jqr .url "$f" | grep -vx "$e"; done)" = ""

# malformed-middle: malformed line in the middle
pack "$T/d5" "$C/malformed-middle.jsonl"
is "$rc" 1 "malformed-middle: exit 1 (partial)"
like "$(cat "$T/err")" "malformed-middle.jsonl:2: parse error:" "malformed-middle: line 2 reported with the parser's reason"
is "$(ids "$T/d5")" "g1 g3 " "malformed-middle: g1 and g3 go through"
check_exit 65 "malformed-middle: --strict stops with 65" qb-pack -d "$T/d5" --strict "$C/malformed-middle.jsonl"

# non-object: valid JSON that is not an object
pack "$T/d6" "$C/non-object.jsonl"
is "$(grep -c 'not a JSON object' "$T/err")" 3 "non-object: three lines reported"
like "$(cat "$T/err")" "non-object.jsonl:3: not a JSON object" "non-object: with line numbers"
is "$(ids "$T/d6")" "n1 " "non-object: n1 goes through"

# blank-lines: blank lines
pack "$T/d7" "$C/blank-lines.jsonl"
is "$rc:$(cat "$T/err")" "0:" "blank-lines: blank lines skipped silently"
is "$(ids "$T/d7")" "b1 b2 " "blank-lines: both items packed"
is "$(cat "$T"/d7/*.jsonl | grep -c '^$')" 0 "blank-lines: no blank line in the output"
printf '\n\n{"id":"x1","body":{"model":"m1"}}\n\n[1]\n' >"$T/blank2.jsonl"
pack "$T/d7b" "$T/blank2.jsonl"
like "$(cat "$T/err")" "blank2.jsonl:5: not a JSON object" "blank-lines: diagnostics keep physical line numbers"

# crlf: CRLF, also split across reads by a slow writer
pack "$T/d8" "$C/crlf.jsonl"
is "$(ids "$T/d8")" "w1 w2 " "crlf: CRLF accepted"
ok_if "crlf: output is LF only" "$(cat "$T"/d8/*.jsonl | tr -dc '\r' | wc -c)" -eq 0
( printf '{"custom_id":"p1","body":{"model":"m1"}}\r'; sleep 0.2; printf '\n{"custom_id":"p2","body":{"model":"m1"}}\r\n' ) >"$T/pipe.in"
( printf '{"custom_id":"p1","body":{"model":"m1"}}\r'; sleep 0.2; printf '\n{"custom_id":"p2","body":{"model":"m1"}}\r\n' ) |
	qb-pack -d "$T/d7b" - >"$T/out" 2>"$T/err"
is "$?:$(cat "$T/err")" "0:" "crlf: a CRLF pair split between two reads of a pipe"
is "$(jqr .file "$T/out" | xargs cat | jqr .custom_id | tr '\n' ' ')" "p1 p2 " "crlf: ids never carry CR"

# bom: BOM
pack "$T/d9" "$C/bom.jsonl"
is "$rc:$(ids "$T/d9")" "0:bom1 bom2 " "bom: BOM stripped"
ok_if "bom: never forwarded" "$(cat "$T"/d9/*.jsonl | grep -c "$(printf '\357\273\277')")" -eq 0
cat "$C/bom.jsonl" >"$T/bom2.jsonl"
sed 's/bom1/bom3/; s/bom2/bom4/' "$C/bom.jsonl" >>"$T/bom2.jsonl"
pack "$T/d9b" "$T/bom2.jsonl"
like "$(cat "$T/err")" "bom2.jsonl:3: lexical error" "bom: a BOM is stripped once, at the start of each input only"

# invalid-utf8: invalid UTF-8
pack "$T/d10" "$C/invalid-utf8.jsonl"
is "$rc" 1 "invalid-utf8: exit 1"
like "$(cat "$T/err")" "invalid-utf8.jsonl:2: lexical error: invalid bytes in UTF8 string at byte" "invalid-utf8: v2 rejected with its line and byte offset"
is "$(ids "$T/d10")" "v1 v3 " "invalid-utf8: v1 and v3 go through"

# huge-line: a 200 KB line
{
	printf '{"custom_id":"h1","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[{"role":"user","content":"'
	head -c 200000 /dev/zero | tr '\0' a
	printf '"}]}}\n{"custom_id":"h2","body":{"model":"m1"}}\n'
} >"$T/huge.jsonl"
pack "$T/d11" "$T/huge.jsonl"
is "$rc:$(ids "$T/d11")" "0:h1 h2 " "huge-line: a 200 KB line packs"
pack "$T/d11b" -b 100000 "$T/huge.jsonl"
like "$(cat "$T/err")" "huge.jsonl:1: line (" "huge-line: caps applied at pack time"

# items: id/body/endpoint, -e default, gz input, bad fields
cat >"$T/items.jsonl" <<'EOI'
{"id":"i1","body":{"model":"m1","messages":[]},"meta":{"k":1}}
{"id":"i2","endpoint":"/v1/embeddings","body":{"model":"e1","input":"x"}}
{"id":"bad id","body":{"model":"m1"}}
{"id":"i4","body":{"messages":[]}}
{"id":"i5","body":[1]}
{"id":7,"body":{"model":"m1"}}
{"custom_id":"i7","method":"GET","url":"/v1/chat/completions","body":{"model":"m1"}}
EOI
gzip -c "$T/items.jsonl" >"$T/items.jsonl.gz"
pack "$T/di" -e /v1/responses "$T/items.jsonl.gz"
is "$rc" 1 "items: exit 1"
is "$(jqr '[.endpoint,.model]|@tsv' "$T/out" | sort | tr '\t\n' ', ')" "/v1/embeddings,e1 /v1/responses,m1 " "items: endpoint from the item, else -e"
is "$(sed 's/^.*gz:\([0-9]*\): .*/\1/' "$T/err" | tr '\n' ' ')" "3 4 5 6 7 " "items: five bad lines, by line"
like "$(cat "$T/err")" "custom_id has a character other than" "items: bad id explained"
like "$(cat "$T/err")" "no model string" "items: missing model explained"
is "$(cat "$T"/di/*responses*.jsonl)" '{"custom_id":"i1","method":"POST","url":"/v1/responses","body":{"model":"m1","messages":[]}}' "items: OpenAI line written"

# the same content packs to the same file name (a re-run is idempotent)
pack "$T/dr" "$C/crlf.jsonl"
first=$(jqr .file "$T/out")
qb-pack -d "$T/dr" "$C/crlf.jsonl" >"$T/out2"
is "$(jqr .file "$T/out2"):$(ls "$T/dr" | wc -l | tr -d ' ')" "$first:1" "re-run gives the same file, no temporary left"

# embeddings: at most 50,000 inputs summed over a file (qb-providers(7) OPENAI Limits)
python3 -c '
import json
for i in range(3):
    print(json.dumps({"id": "e%d" % i, "endpoint": "/v1/embeddings",
                      "body": {"model": "e1", "input": ["w%d" % k for k in range(20000)]}}))
print(json.dumps({"id": "e9", "endpoint": "/v1/embeddings", "body": {"model": "e1", "input": ["x"] * 50001}}))
' >"$T/emb.jsonl"
pack "$T/de" "$T/emb.jsonl"
is "$rc:$(jqr .requests "$T/out" | tr '\n' ' ')" "1:2 1 " "embeddings: files split at 50,000 inputs"
like "$(cat "$T/err")" "emb.jsonl:4: 50001 embedding inputs exceed the per-file cap" "embeddings: one request over the cap refused"

# -p anthropic: params lines, default endpoint /v1/messages
printf '{"id":"w1","body":{"model":"m1","max_tokens":8,"messages":[{"role":"user","content":"one"}]}}\r\n' >"$T/a.jsonl"
pack "$T/da" -p anthropic "$T/a.jsonl"
is "$rc:$(jqr '[.provider, .endpoint] | @tsv' "$T/out")" "$(printf '0:anthropic\t/v1/messages')" "anthropic: provider and endpoint in the pack record"
is "$(head -n 1 "$T"/da/*.jsonl)" '{"custom_id":"w1","params":{"model":"m1","max_tokens":8,"messages":[{"role":"user","content":"one"}]}}' "anthropic: custom_id and params"

# a key given twice is refused: parsers disagree on which one counts
printf '%s\n' '{"id":"k1","body":{"model":"m1","model":"m2"}}' '{"id":"k2","id":"k3","body":{"model":"m1"}}' \
	'{"id":"k4","body":{"model":"m1"}}' >"$T/dupkey.jsonl"
pack "$T/dk" "$T/dupkey.jsonl"
is "$rc:$(ids "$T/dk")" "1:k4 " "duplicate keys: only the clean line packs"
like "$(cat "$T/err")" 'dupkey.jsonl:1: key "model" given twice in "body"' "duplicate model named"
like "$(cat "$T/err")" 'dupkey.jsonl:2: key "id" given twice' "duplicate id key named"

# many members in meta are no reason to refuse an item
python3 -c '
import json
print(json.dumps({"meta": {"k%d" % i: i for i in range(100)}, "id": "m1", "body": {"model": "m1"}}))' >"$T/meta.jsonl"
pack "$T/dm" "$T/meta.jsonl"
is "$rc:$(ids "$T/dm")" "0:m1 " "an item with 100 meta keys packs"

# nesting deep enough to exhaust a recursive parser's stack is refused
python3 -c 'n = 200000; print("{\"id\":\"d1\",\"body\":{\"model\":\"m1\",\"x\":" + "[" * n + "]" * n + "}}")' >"$T/deep.jsonl"
pack "$T/dd" "$T/deep.jsonl"
is "$rc" 1 "deep nesting: no crash, refused (qb-reconcile would not index it)"

# a damaged gzip stream is an I/O error, not a short input
python3 -c '
import json
for i in range(20000):
    print(json.dumps({"id": "z%d" % i, "body": {"model": "m1", "n": i * 7919}}))' | gzip >"$T/many.gz"
head -c 30000 "$T/many.gz" >"$T/cut.gz"
pack "$T/dz" "$T/cut.gz"
is "$rc:$(wc -c <"$T/out" | tr -d ' '):$(ls "$T/dz" | wc -l | tr -d ' ')" "74:0:0" "cut gzip: exit 74, no file, no record"
like "$(cat "$T/err")" "cut.gz: read error: unexpected end of file" "cut gzip: reported"
unlike "$(cat "$T/err")" "<fd:" "naming the file, not zlib's descriptor"

# more (endpoint, model) groups than files kept open: all packed, none lost
python3 -c '
import json
for i in range(60):
    print(json.dumps({"id": "g%d" % i, "body": {"model": "m%d" % (i % 30)}}))' >"$T/groups.jsonl"
pack "$T/dg" "$T/groups.jsonl"
is "$rc:$(cat "$T"/dg/*.jsonl | wc -l | tr -d ' '):$(jq -s 'map(.requests) | add' "$T/out")" "0:60:60" "30 models: every item in exactly one file"

# records name files absolutely; -v counts blank lines
(cd "$T" && mkdir -p rel && qb-pack -v -d rel "$C/blank-lines.jsonl" >"$T/out" 2>"$T/err")
like "$(jqr .file "$T/out")" "$T/rel/openai." "pack record names the file absolutely"
like "$(cat "$T/err")" "blank-lines.jsonl: 3 blank lines skipped" "-v counts skipped blank lines"

# bad-custom-id: ids the provider would refuse (65 characters; "/", space, "#")
# are rejected per line, with the reason, before anything is uploaded
pack "$T/d2" -p anthropic "$C/bad-custom-id.anthropic.jsonl"
is "$rc:$(wc -c <"$T/out" | tr -d ' ')" "1:0" "bad-custom-id: exit 1, no file"
like "$(cat "$T/err")" "bad-custom-id.anthropic.jsonl:1: custom_id longer than 64 characters" "bad-custom-id: the long id named by line"
like "$(cat "$T/err")" "bad-custom-id.anthropic.jsonl:2: custom_id has a character other than A-Z a-z 0-9 _ -" "bad-custom-id: the bad characters named by line"

# anthropic: model, messages and max_tokens are required of every request
printf '%s\n' '{"id":"n1","body":{"model":"m1","messages":[]}}' '{"id":"n2","body":{"model":"m1","max_tokens":4}}' >"$T/nomax.jsonl"
pack "$T/dn" -p anthropic "$T/nomax.jsonl"
is "$rc:$(sed 's/.*jsonl:\([0-9]\): no \("[a-z_]*"\).*/\1 \2/' "$T/err" | tr '\n' ' ')" '1:1 "max_tokens" 2 "messages" ' "anthropic: requests without max_tokens or messages refused"

# LF only: CRLF endings, a BOM and CR between tokens inside a body (JSON
# white space, copied otherwise byte for byte) never reach a batch file;
# an escaped "\r\n" inside a string is content and stays
for pv in openai azure anthropic; do
	pack "$T/dc-$pv" -p "$pv" "$C/crlf-cr-in-body.jsonl"
	if [ "$pv" = anthropic ]; then
		h='{"custom_id":"%s","params":'
	else
		h='{"custom_id":"%s","method":"POST","url":"/v1/chat/completions","body":'
	fi
	{
		printf "$h"'{"model":"m1","max_tokens":8,"messages":[{"role":"user","content":"a\\r\\nb"}]}}\n' c1
		printf "$h"'{"model":"m1","max_tokens":8,"messages":[{"role":"user","content":"two"}]}}\n' c2
		printf "$h"'{"model":"m1",\t"max_tokens":8,"messages":[]}}\n' c3
	} >"$T/want-$pv"
	is "$rc:$(cat "$T/err")" "0:" "LF only, $pv: every line packed"
	check_same "$T"/dc-$pv/*.jsonl "$T/want-$pv" "LF only, $pv: the exact lines, CR between tokens dropped"
	is "$(cat "$T"/dc-$pv/*.jsonl | tr -dc '\r' | wc -c | tr -d ' '):$(head -c 3 "$T"/dc-$pv/*.jsonl)" \
	    '0:{"c' "LF only, $pv: no CR byte anywhere, no BOM at the start"
done
is "$(jqr '[.bytes, .tokens] | @tsv' "$T/out")" "$(printf '%s\t7' "$(wc -c <"$T/want-anthropic" | tr -d ' ')")" \
    "LF only: record bytes count the written lines, tokens as without CR"

# VT and FF: yajl takes them as white space, RFC 8259 and the providers do
# not, and one such line fails a whole batch: refused, with the byte
printf '{"id":"v1","body":{"model":"m1",\v"messages":[]}}\n{"id":"v2","body":{"model":"m1","messages":[]\f}}\n{"id":"v3","body":{"model":"m1","messages":[]}}\n' >"$T/vtff.jsonl"
pack "$T/dv" "$T/vtff.jsonl"
is "$rc:$(cat "$T/err" | tr '\n' '|')" \
    "1:qb-pack: $T/vtff.jsonl:1: byte 33: a vertical tab is not JSON whitespace|qb-pack: $T/vtff.jsonl:2: byte 46: a form feed is not JSON whitespace|" \
    "VT and FF between tokens: refused, naming the byte"
is "$(jqr .custom_id "$T"/dv/*.jsonl)" v3 "VT and FF: the other line is packed"

# "params" alone is an Anthropic request: refused for openai; retry
# outcomes packed again are counted in "retries"
printf '%s\n' '{"id":"p1","params":{"model":"m1","max_tokens":4,"messages":[]}}' \
    '{"id":"p2","outcome":"retry","status":"missing","body":{"model":"m1","max_tokens":4,"messages":[]}}' \
    '{"id":"p3","outcome":"done","body":{"model":"m1","max_tokens":4,"messages":[]}}' >"$T/pr.jsonl"
pack "$T/dp" "$T/pr.jsonl"
is "$rc:$(cat "$T/err")" "1:qb-pack: $T/pr.jsonl:1: \"params\" is an Anthropic request, for id \"p1\"; use -p anthropic" \
    "params under openai: refused, saying to use -p anthropic"
is "$(jqr '[.requests, .retries] | @tsv' "$T/out")" "$(printf '2\t1')" "retries: the requests packed from retry outcomes"
printf '%s\n' '{"id":"q1","outcome":"retry","body":{"model":"m1","max_tokens":4,"messages":[]},"params":{"model":"m1","max_tokens":4,"messages":[]}}' >"$T/both.jsonl"
pack "$T/dq" "$T/both.jsonl"
is "$rc:$(cat "$T/err")" "1:qb-pack: $T/both.jsonl:1: \"params\" is an Anthropic request, for id \"q1\"; use -p anthropic" \
    "an Anthropic retry outcome (body and params): refused without -p anthropic"
pack "$T/dp" -p anthropic "$T/pr.jsonl"
is "$rc:$(jqr '[.requests, .retries] | @tsv' "$T/out")" "$(printf '0:3\t1')" "-p anthropic takes all three"

# --max-line-bytes: the written line, newline not counted, against the cap;
# the input's own spacing and CRLF do not count
fixed=$(printf '{"custom_id":"L1","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","p":""}}' | wc -c)
mline() { printf '{"id": "%s", "body": {"model":"m1","p":"' "$1"; head -c "$2" /dev/zero | tr '\0' a; printf '"}}\r\n'; }
{ mline L1 $((1000000 - fixed)); mline L2 $((1000001 - fixed)); mline L3 $((1000000 - fixed)); } >"$T/ml.jsonl"
toolong="qb-pack: $T/ml.jsonl:2: line of 1000001 bytes exceeds the line cap of 1000000 bytes for id \"L2\""
pack "$T/dl" --max-line-bytes 1M "$T/ml.jsonl"
is "$rc:$(cat "$T/err")" "1:$toolong" "--max-line-bytes 1M: the 1000001-byte line refused with its size and the cap, exit 1"
is "$(ids "$T/dl")" "L1 L3 " "--max-line-bytes 1M: the other lines still packed"
is "$(cat "$T"/dl/*.jsonl | awk '{ print length($0) }' | tr '\n' ' '):$(jqr .bytes "$T/out")" \
    "1000000 1000000 :2000002" "--max-line-bytes 1M: lines of exactly 1000000 bytes accepted"
pack "$T/dl" "$T/ml.jsonl"
is "$rc:$(ids "$T/dl")" "0:L1 L2 L3 " "no --max-line-bytes: no line cap beyond -b"
pack "$T/dl" --strict --max-line-bytes 1000000 "$T/ml.jsonl"
is "$rc:$(head -n 1 "$T/err"):$(wc -c <"$T/out" | tr -d ' '):$(ls "$T/dl" | wc -l | tr -d ' ')" \
    "65:$toolong:0:0" "--max-line-bytes --strict: exit 65 at the line, no file left"
pack "$T/dl" -b 1000001 --max-line-bytes 2MB "$T/ml.jsonl"
is "$rc:$(cat "$T/err"):$(ids "$T/dl")" \
    "1:qb-pack: $T/ml.jsonl:2: line (1000002 bytes with its newline) exceeds the per-file byte cap (-b) of 1000001 bytes for id \"L2\":L1 L3 " \
    "-b under --max-line-bytes: -b refuses, newline counted"
QB_MAX_LINE_BYTES=1000k pack "$T/dl" "$T/ml.jsonl"
is "$rc:$(cat "$T/err"):$(ids "$T/dl")" "1:$toolong:L1 L3 " "QB_MAX_LINE_BYTES is the default cap"
QB_MAX_LINE_BYTES=10 pack "$T/dl" --max-line-bytes 1M "$T/ml.jsonl"
is "$rc:$(cat "$T/err")" "1:$toolong" "--max-line-bytes overrides QB_MAX_LINE_BYTES"
QB_MAX_LINE_BYTES= pack "$T/dl" "$T/ml.jsonl"
is "$rc:$(ids "$T/dl")" "0:L1 L2 L3 " "QB_MAX_LINE_BYTES empty: no cap"
QB_MAX_LINE_BYTES=lots pack "$T/dl" "$T/ml.jsonl"
is "$rc:$(cat "$T/err"):$(ls "$T/dl" | wc -l | tr -d ' ')" \
    '78:qb-pack: QB_MAX_LINE_BYTES "lots" is invalid:0' "QB_MAX_LINE_BYTES bad: exit 78, nothing written"
QB_MAX_LINE_BYTES=0 pack "$T/dl" "$T/ml.jsonl"
is "$rc:$(cat "$T/err")" '78:qb-pack: QB_MAX_LINE_BYTES "0" is too small' "QB_MAX_LINE_BYTES 0: exit 78"
pack "$T/dl" --max-line-bytes 0 "$T/ml.jsonl"
is "$rc:$(cat "$T/err")" "64:qb-pack: --max-line-bytes 0: too small" "--max-line-bytes 0: usage error"
pack "$T/dl" --max-line-bytes 1X "$T/ml.jsonl"
is "$rc:$(cat "$T/err")" "64:qb-pack: --max-line-bytes 1X: invalid" "--max-line-bytes 1X: usage error"
# c1 is written as 105 bytes, with 4 CR fewer than its scanned body has
pack "$T/dl" --max-line-bytes 105 -p anthropic "$C/crlf-cr-in-body.jsonl"
is "$rc:$(ids "$T/dl")" "0:c1 c2 c3 " "--max-line-bytes: measured after CR between tokens is dropped"
pack "$T/dl" --max-line-bytes 104 -p anthropic "$C/crlf-cr-in-body.jsonl"
is "$rc:$(cat "$T/err"):$(ids "$T/dl")" \
    "1:qb-pack: $C/crlf-cr-in-body.jsonl:1: line of 105 bytes exceeds the line cap of 104 bytes for id \"c1\":c2 c3 " \
    "--max-line-bytes: the anthropic line as written is what counts"

# real files from ../shared/fixtures: bodies unchanged
if [ -e "$SHARED/fixtures/openai-batch-input-2024-05.jsonl" ]; then
	for f in openai-batch-input-2024-05 vllm-openai-example-batch; do
		pack "$T/df" "$SHARED/fixtures/$f.jsonl"
		python3 - "$SHARED/fixtures/$f.jsonl" "$T"/df/*.jsonl >"$T/cmp" <<'EOP'
import json, sys
def bodies(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        # the body's own bytes: from the value after "body" to the last '}'
        i = line.index('"body"') + len('"body"')
        raw = line[i:].lstrip()[1:].lstrip()
        out[d["custom_id"]] = (raw[:raw.rindex("}")].rstrip(), d["url"], d["body"]["model"])
    return out
a = bodies(sys.argv[1])
b = {}
for p in sys.argv[2:]:
    b.update(bodies(p))
print("same" if a == b else "differ: %r" % sorted(set(a.items()) ^ set(b.items()))[:2])
EOP
		is "$rc:$(cat "$T/cmp")" "0:same" "fixture $f: every body byte for byte, url and model kept"
	done
else
	skip "../shared/fixtures is absent (a plain clone has no ../shared)"
	skip "../shared/fixtures is absent (a plain clone has no ../shared)"
fi
# Nesting: qb-reconcile indexes request lines nested at most 512 levels
# deep (the record's own braces counted), so qb-pack refuses deeper ones,
# by line, and packs the others; a line at exactly 512 packs and is
# indexed. deepitem ID DEPTH: an item nested DEPTH levels in all.
deepitem() {
	python3 -c 'import sys; n = int(sys.argv[2]) - 2
print("{\"id\":\"%s\",\"body\":{\"model\":\"m\",\"x\":%s}}" % (sys.argv[1], "[" * n + "]" * n))' "$1" "$2"
}
{ deepitem d1 3; deepitem d2 600; deepitem d3 512; deepitem d4 10000000; deepitem d5 513; } >"$T/deep.jsonl"
mkdir "$T/deep"
check_exit 1 "lines nested past 512 levels are refused" qb-pack -d "$T/deep" "$T/deep.jsonl"
like "$(cat "$T/err")" "deep.jsonl:2: nested deeper than 512 levels" "600 levels: refused by line"
like "$(cat "$T/err")" "deep.jsonl:4: nested deeper than 512 levels" "10 million levels: refused by line"
like "$(cat "$T/err")" "deep.jsonl:5: nested deeper than 512 levels" "513 levels: refused"
is "$(grep -c nested "$T/err")" 3 "three lines refused"
is "$(jqr .requests "$T/out")" 2 "the other two packed"
f=$(jqr .file "$T/out")
# (jq itself stops at 256 levels)
is "$(grep -o '"custom_id":"d[0-9]"' "$f" | tr '\n' ' ')" '"custom_id":"d1" "custom_id":"d3" ' \
	"d3, at exactly 512 levels, is in the file"
for id in d1 d3; do
	printf '{"id":"%s","status":"succeeded","http_status":200,"response":{"body":{"choices":[]}}}\n' "$id"
done >"$T/deep.results"
qb-reconcile -r "$f" "$T/deep.results" >"$T/out" 2>"$T/err"
is "$?:$(jqr -s 'map(.id + "=" + .outcome) | join(" ")' "$T/out")" "0:d1=done d3=done" \
	"qb-reconcile indexes the 512-level line: both done"
unlike "$(cat "$T/err")" "nested" "qb-reconcile refused no line"
# SIGTERM (a cron timeout) mid-pack: the temporary files go with it.
mkdir "$T/sig"
mkfifo "$T/sig.fifo"
qb-pack -d "$T/sig" "$T/sig.fifo" >/dev/null 2>&1 &
pid=$!
exec 9>"$T/sig.fifo"
printf '{"id":"s1","body":{"model":"m1","messages":[]}}\n' >&9
k=0
while [ -z "$(ls -A "$T/sig")" ] && [ $k -lt 100 ]; do sleep 0.05; k=$((k + 1)); done
kill -TERM $pid
wait $pid
st=$?
exec 9>&-
is "$st" 143 "SIGTERM mid-pack: dies of the signal"
is "$(ls -A "$T/sig" | wc -l | tr -d ' ')" 0 "SIGTERM mid-pack: no temporary file left"
done_testing
