#!/bin/sh
# The provider emulator's own checks, so that it cannot drift from the
# wire formats the tools are tested against.
TOP=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${QB_SHARED:-$TOP/../shared}
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP python3 is absent"; exit 0; }
exec python3 "$TOP/tests/fake/selftest.py" "$SHARED"
