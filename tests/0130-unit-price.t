#!/bin/sh
# C unit tests of the prices table (common/price.c).
exec "$(dirname "$0")/unit/price"
