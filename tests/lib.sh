# tests/lib.sh: TAP helpers for qb's end-to-end tests (POSIX sh).
# Source it from a test: . "$(dirname "$0")/lib.sh"
# SPDX-License-Identifier: ISC

TOP=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${QB_SHARED:-$TOP/../shared}
PATH=$TOP/cmd:$PATH
export PATH
LC_ALL=C
export LC_ALL
# Keys and endpoints never come from the caller's environment into a test.
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
QB_BACKOFF_BASE=${QB_BACKOFF_BASE:-0.01}
export QB_BACKOFF_BASE

T=$(mktemp -d "${TMPDIR:-/tmp}/qb-test.XXXXXX")
_n=0
_fail=0
_pids=

_cleanup() {
	for p in $_pids; do kill "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap _cleanup EXIT
trap 'exit 130' INT TERM

plan() { echo "1..$1"; }

skip_all() { echo "1..0 # SKIP $*"; exit 0; }

ok() {
	_n=$((_n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $_n - $2"
	else
		echo "not ok $_n - $2"
		_fail=1
	fi
}

# ok_if "desc" test-args...: ok when test(1) succeeds on the arguments.
ok_if() {
	_d=$1
	shift
	if test "$@"; then ok 0 "$_d"; else ok 1 "$_d"; echo "# test failed: $*"; fi
}

# is GOT EXPECTED DESC
is() {
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		printf '# got:      %s\n# expected: %s\n' "$1" "$2" | sed '3,$s/^/# /'
	fi
}

# like GOT PATTERN DESC: GOT contains the fixed string PATTERN
like() {
	case $1 in
	*"$2"*) ok 0 "$3" ;;
	*) ok 1 "$3"; printf '# got:      %s\n# wanted in it: %s\n' "$1" "$2" ;;
	esac
}

# unlike GOT PATTERN DESC
unlike() {
	case $1 in
	*"$2"*) ok 1 "$3"; printf '# got: %s\n# unwanted: %s\n' "$1" "$2" ;;
	*) ok 0 "$3" ;;
	esac
}

# check_exit CODE DESC cmd...: run cmd (stdout to $T/out, stderr to $T/err)
check_exit() {
	_want=$1
	_d=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	_rc=$?
	if [ "$_rc" = "$_want" ]; then
		ok 0 "$_d (exit $_want)"
	else
		ok 1 "$_d (exit $_rc, wanted $_want)"
		sed 's/^/# stderr: /' "$T/err" | head -n 20
	fi
}

# check_same FILE1 FILE2 DESC
check_same() {
	if cmp -s "$1" "$2"; then
		ok 0 "$3"
	else
		ok 1 "$3"
		diff "$1" "$2" | head -n 20 | sed 's/^/# /'
	fi
}

# need_shared PATH...: skip the whole test unless ../shared has these files
need_shared() {
	for _f in "$@"; do
		[ -e "$SHARED/$_f" ] || skip_all "../shared/$_f is absent (a plain clone has no ../shared)"
	done
}

# fake_start [qb-fake options]: start the provider emulator on a free port;
# sets FAKE_PORT and FAKE_URL and exports OPENAI_BASE_URL, OPENAI_API_KEY.
fake_start() {
	command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed for the provider emulator"
	_fifo=$T/fake.port.$_n.$$
	python3 "$TOP/tests/fake/qb-fake" --port 0 "$@" >"$_fifo" 2>"$T/fake.err" &
	_p=$!
	_pids="$_pids $_p"
	FAKE_PID=$_p
	_i=0
	while [ ! -s "$_fifo" ] && [ $_i -lt 100 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	FAKE_PORT=$(head -n 1 "$_fifo")
	[ -n "$FAKE_PORT" ] || { echo "Bail out! qb-fake did not start"; cat "$T/fake.err"; exit 1; }
	FAKE_URL=http://127.0.0.1:$FAKE_PORT
	OPENAI_BASE_URL=$FAKE_URL/v1
	OPENAI_API_KEY=sk-test
	export OPENAI_BASE_URL OPENAI_API_KEY
}

fake_stop() {
	kill "$FAKE_PID" 2>/dev/null
	wait "$FAKE_PID" 2>/dev/null
}

# fake_stats: the emulator's counters as JSON on stdout
fake_stats() { curl -s "$FAKE_URL/_qb/stats"; }

# jqr FILTER [FILE]: jq -c -r, for assertions
jqr() { jq -c -r "$@"; }

done_testing() { exit $_fail; }

# skip REASON: one skipped test
skip() { _n=$((_n + 1)); echo "ok $_n # SKIP $*"; }
