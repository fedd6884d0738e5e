#!/bin/sh
# C unit tests of the prices table (common/record/price.c).
exec "$(dirname "$0")/unit/price"
