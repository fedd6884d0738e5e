#!/bin/sh
# C unit tests of the JSONL reader, span scanner, id map and SHA-256.
exec "$(dirname "$0")/unit/jsonl"
