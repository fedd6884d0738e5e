#!/bin/sh
# C unit tests of HTTP error classification and Retry-After parsing.
exec "$(dirname "$0")/unit/http"
