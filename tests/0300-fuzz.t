#!/bin/sh
# tests/0300-fuzz.t: a short run of each libFuzzer harness (tests/fuzz):
# every committed regression input and seed once, then a few seconds
# (QB_FUZZ_SECONDS, 4) of fuzzing from them. make fuzz runs them longer.
# Needs clang with libFuzzer; skipped without.
# SPDX-License-Identifier: ISC
. "$(dirname "$0")/lib.sh"

names="jsonl jscan item job result reqindex ratelim"
command -v clang >/dev/null 2>&1 || skip_all "no clang"
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' \
    >"$T/probe.c"
clang -fsanitize=fuzzer -o "$T/probe" "$T/probe.c" >/dev/null 2>&1 ||
	skip_all "clang without libFuzzer (libclang-rt-dev)"
plan 15

# Not the caller's make: check-sanitize passes its CFLAGS down in MAKEFLAGS.
(unset MAKEFLAGS MFLAGS MAKELEVEL; make -s -C "$TOP" fuzz-build) >"$T/build" 2>&1
rc=$?
ok $rc "the harnesses build"
[ $rc = 0 ] || sed 's/^/# /' "$T/build" | tail -n 20

dir=$TOP/tests/fuzz/build
FUZZ_WORK=$T/work
export FUZZ_WORK
for n in $names; do
	sh "$TOP/tests/fuzz/run" "$dir" 0 "$n" >"$T/out" 2>&1
	rc=$?
	ok $rc "fuzz-$n: every regression input and seed ($(cat "$T/out" | head -n 1))"
	[ $rc = 0 ] || sed 's/^/# /' "$T/out"
	sh "$TOP/tests/fuzz/run" "$dir" "${QB_FUZZ_SECONDS:-4}" "$n" >"$T/out" 2>&1
	rc=$?
	ok $rc "fuzz-$n: ${QB_FUZZ_SECONDS:-4} s ($(cat "$T/out" | head -n 1))"
	[ $rc = 0 ] || sed 's/^/# /' "$T/out"
done
