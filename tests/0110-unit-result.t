#!/bin/sh
# C unit tests of result normalisation and classification.
exec "$(dirname "$0")/unit/result"
