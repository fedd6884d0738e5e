/*
 * synchttp.h: the HTTP side of the synchronous engine: the connection
 * of a run, a libcurl handle for each try, and what an answer's headers
 * say (qb-providers(7), OPENAI "Headers" and "Errors", ANTHROPIC
 * "Errors").
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCHTTP_H
#define QB_SYNCHTTP_H

#include <stddef.h>
#include <curl/curl.h>

struct buf;
struct sync;
struct sync_item;

/*
 * Open s->p for the run (provider_open: base URL, key, timeouts,
 * retries), make the headers every request carries and the multi
 * handle. Returns 0, or QB_EX_OSERR (reported) when libcurl cannot
 * start; synchttp_free undoes what was done either way. (A bad key or
 * base URL still ends the process in provider_open, with QB_EX_CONFIG.)
 */
int synchttp_init(struct sync *s);
void synchttp_free(struct sync *s);

/* A handle for a try of it: its body, headers and callbacks set, its
 * answer's fields cleared. NULL (reported, QB_EX_OSERR) if libcurl cannot
 * make one. */
CURL *synchttp_easy(struct sync *s, struct sync_item *it);

/*
 * Take one header line of an answer to it (len bytes at p, its line end
 * included or not): a status line starts the answer afresh; Retry-After,
 * retry-after-ms, the request id, x-should-retry and the rate-limit reset
 * and remaining headers are kept in it, each cut to its field's size.
 * Other lines are ignored.
 */
void synchttp_header(struct sync_item *it, const char *p, size_t len);
/* The wait a 429 without Retry-After implies from the rate-limit reset
 * headers, in seconds; -1 if they say nothing. */
double synchttp_reset_wait(const struct sync_item *it);
/* Replace the key, wherever it appears in b, by "[key]". */
void synchttp_scrub(const struct sync *s, struct buf *b);

#endif
