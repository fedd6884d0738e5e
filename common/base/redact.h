/*
 * redact.h: credentials out of text that is shown: messages on standard
 * error, and the "error" members of records. Every qb message passes
 * through it (msg.c), and so does HTTP error text before it is kept.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_REDACT_H
#define QB_REDACT_H

#include <stddef.h>

/* What stands in for a credential. */
#define REDACT_MARK "[redacted]"

/* Where redact_to puts the text it keeps: n bytes at p, in order. */
typedef void (*redact_put)(void *arg, const char *p, size_t n);

/*
 * Pass the len bytes at s to put (with arg) with every credential replaced by
 * REDACT_MARK: the userinfo of a URL ("https://user:key@host/" gives
 * "https://[redacted]@host/"); the value of a query parameter that
 * carries a key or a signature (key, api-key, api_key, apikey,
 * access_token, token, sig, signature, x-goog-api-key and every
 * X-Amz-* but X-Amz-Date and X-Amz-Expires), up to '&', '#' or white
 * space; the rest of the line after a credential header name and its
 * colon (Authorization, Proxy-Authorization, api-key, x-api-key,
 * x-goog-api-key, X-Amz-Security-Token, Cookie, Set-Cookie); and the
 * word after "Bearer ". Names are matched without regard to case. Text
 * without any passes unchanged. Allocates nothing and cannot fail.
 */
void redact_to(redact_put put, void *arg, const char *s, size_t len);
/*
 * redact on the NUL-terminated string in s (a buffer of size bytes), in
 * place; the result is cut to size - 1 bytes if it grew past them. If the
 * copy it needs cannot be allocated, s is emptied rather than shown.
 */
void redact_str(char *s, size_t size);

#endif
