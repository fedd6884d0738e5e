#!/bin/sh
# The proof that nothing is lost or paid twice under kill -9: the nightly
# pipeline run as cron runs it, a random stage killed at a random moment
# (SIGKILL, SIGTERM, SIGINT), cron runs overlapping, and every run
# checked (tests/killtest says what). QB_KILL_ROUNDS=N for more rounds,
# QB_KILL_SEED=S to start at (or replay) seed S.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null 2>&1 || skip_all "jq is needed"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
exec python3 "$TOP/tests/killtest" --rounds "${QB_KILL_ROUNDS:-50}" --seed "${QB_KILL_SEED:-1}"
