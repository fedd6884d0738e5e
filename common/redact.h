/*
 * redact.h: credentials out of text that is shown: messages on standard
 * error, and the "error" members of records. Every qb message passes
 * through it (msg.c), and so does HTTP error text before it is kept.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_REDACT_H
#define QB_REDACT_H

#include <stddef.h>

#include "buf.h"

/* What stands in for a credential. */
#define REDACT_MARK "[redacted]"

/*
 * Append the len bytes at s to out with every credential replaced by
 * REDACT_MARK: the userinfo of a URL ("https://user:key@host/" gives
 * "https://[redacted]@host/"); the value of a query parameter that
 * carries a key or a signature (key, api-key, api_key, apikey,
 * access_token, token, sig, signature, x-goog-api-key and every
 * X-Amz-* but X-Amz-Date and X-Amz-Expires), up to '&', '#' or white
 * space; the rest of the line after a credential header name and its
 * colon (Authorization, Proxy-Authorization, api-key, x-api-key,
 * x-goog-api-key, X-Amz-Security-Token, Cookie, Set-Cookie); and the
 * word after "Bearer ". Names are matched without regard to case. Text
 * without any is appended unchanged. Dies QB_EX_OSERR if out of memory.
 */
void redact(struct buf *out, const char *s, size_t len);
/*
 * redact on the NUL-terminated string in s (a buffer of size bytes), in
 * place; the result is cut to size - 1 bytes if it grew past them.
 */
void redact_str(char *s, size_t size);

#endif
