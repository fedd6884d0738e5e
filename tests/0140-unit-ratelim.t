#!/bin/sh
# C unit tests of the synchronous engine's admission control.
exec "$(dirname "$0")/unit/ratelim"
