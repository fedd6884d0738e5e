/*
 * http.h: a small libcurl easy wrapper. One handle per service, reused so
 * that connections are kept alive; requests with a body from memory or
 * streamed from a callback, streamed multipart uploads and streamed
 * downloads; every failure classified as temporary,
 * auth, permanent or protocol, and temporary ones retried with backoff
 * (http.c; the classes, exit statuses, Retry-After and URL checks are in
 * httpclass.c).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_HTTP_H
#define QB_HTTP_H

#include <stdio.h>
#include <time.h>
#include <curl/curl.h>

#include "base/buf.h"

enum http_class { HTTP_OK, HTTP_TEMP, HTTP_AUTH, HTTP_PERM, HTTP_PROTO };

struct http {
	CURL		*curl;		/* one easy handle: keeps connections */
	char		*base;		/* base URL without a trailing '/'; owned */
	char		*secret;	/* the key, scrubbed from messages; owned */
	struct curl_slist *hdrs;	/* headers sent on every request; owned */
	long		 json_timeout;	/* seconds per JSON request (QB_HTTP_TIMEOUT, 60) */
	long		 timeout;	/* stall limit of uploads and downloads (QB_HTTP_TIMEOUT, 300) */
	double		 deadline;	/* qtime_mono() time after which no try starts; 0: none */
	int		 retries;	/* retries after the first try (QB_MAX_RETRIES, 4) */
	double		 backoff;	/* first backoff step, seconds (QB_BACKOFF_BASE, 0.5) */
	double		 cap;		/* largest backoff step, seconds (30) */
	unsigned long long rng;		/* jitter state */
	long		 status;	/* HTTP status of the last request, 0 if none */
	char		 err[512];	/* why the last call failed, for messages */
};

/* What came back from one request (after any retries). */
struct http_resp {
	CURLcode	 cc;		/* libcurl result of the last try */
	long		 status;	/* HTTP status of the last try, 0 if none */
	struct buf	 body;		/* response body (JSON calls, error bodies); owned */
	char		 retry_after[64], retry_after_ms[32];	/* raw headers, "" if absent */
	char		 request_id[128];	/* x-request-id or request-id, "" if absent */
	int		 should_retry;	/* x-should-retry: -1 absent, 0 false, 1 true */
	int		 unknown;	/* a create timed out after sending: outcome unknown */
	int		 tries;		/* attempts made */
};

/*
 * Set up h for base (a URL; a trailing '/' is stripped) with the header
 * lines in hdrs (NULL-terminated, copied; may be NULL). secret, if not
 * NULL, is never shown: it is replaced by "[key]" in every message.
 * Reads QB_MAX_RETRIES (0..100), QB_BACKOFF_BASE and QB_HTTP_TIMEOUT
 * (seconds). Returns 0 (release h with http_free), or, reported,
 * QB_EX_CONFIG for a bad value or a base that http_check_url refuses and
 * QB_EX_OSERR when libcurl cannot start; h then holds nothing.
 */
int http_init(struct http *h, const char *base, const char *const *hdrs,
    const char *secret);
/*
 * Check that url is an http or https URL with a host. Returns 0, or -1
 * with the reason ("not an http or https URL", libcurl's parse error) in
 * why (whylen bytes).
 */
int http_check_url(const char *url, char *why, size_t whylen);
/* Close h's connections and free (and wipe) what http_init made. */
void http_free(struct http *h);
/* Make r empty; do this once before r's first use. */
void http_resp_init(struct http_resp *r);
/* Free r's body; r is empty again and may be reused. */
void http_resp_free(struct http_resp *r);

/*
 * A request body: the len bytes at p or, when read is set, the len bytes
 * (Content-Length) that read, a CURLOPT_READFUNCTION, produces from ctx.
 * rewind(ctx) starts the body over; it is called before every try and
 * returns 0 or an errno value. read returns CURL_READFUNC_ABORT with errno
 * set after a read error.
 */
struct http_body {
	const char	*p;
	size_t		 len;
	size_t		(*read)(char *, size_t, size_t, void *);
	void		*ctx;
	int		(*rewind)(void *);
};

/*
 * Send method ("GET", "POST") to path (relative to the base URL, starting
 * with '/', or an absolute http(s) URL) with the JSON in body (NULL for
 * none). The response body lands in r->body. Temporary failures are
 * retried; when create is set the request makes something that must not
 * exist twice, so it is retried only after a connection failure before
 * anything was sent, or a 429, 503 or 529 answer; a failure after
 * sending, or a 500, 502 or 504 answer, sets r->unknown. A body from memory may take h->json_timeout seconds for the
 * whole try, and no longer than h->deadline allows; a streamed one may not
 * stall for h->timeout seconds, nor its answer take h->json_timeout once it
 * is sent. No try starts after the deadline. A read error gives HTTP_PERM
 * with r->cc CURLE_READ_ERROR; a streamed body of another length than len
 * gives HTTP_PERM. Returns the class of the final result; h->err says why
 * when it is not HTTP_OK. r must be initialised (http_resp_init); it is
 * reset.
 */
enum http_class http_send(struct http *h, const char *method, const char *path,
    const struct http_body *body, int create, struct http_resp *r);
/* http_send with the len bytes of JSON at body (NULL for none). */
enum http_class http_json(struct http *h, const char *method, const char *path,
    const char *body, size_t len, int create, struct http_resp *r);
/*
 * POST a multipart form to path: the name/value pairs in fields
 * (NULL-terminated, may be NULL) and the file at file as part "file",
 * streamed from disk, never held in memory. No total timeout; a transfer
 * slower than 1 byte/s for h->timeout seconds fails. Retried like a GET.
 */
enum http_class http_upload(struct http *h, const char *path,
    const char *const *fields, const char *file, struct http_resp *r);
/*
 * GET path (relative or absolute, as above) and stream a 2xx body into
 * out, a regular file opened for writing: on a retry it is truncated and
 * rewritten. An error body goes to r->body instead. A write error on out
 * gives HTTP_PERM with errno's reason in h->err and r->cc CURLE_WRITE_ERROR.
 * Redirects are followed, but to another origin (scheme, host, port) than
 * the base URL's without h->hdrs: the key goes to no other host.
 */
enum http_class http_download(struct http *h, const char *path, FILE *out,
    struct http_resp *r);

/*
 * Classify a libcurl result and an HTTP status: HTTP_OK for 2xx;
 * HTTP_TEMP for connection failures, timeouts, 408, 409, 429 and 5xx;
 * HTTP_AUTH for 401 and 403; HTTP_PERM for other 4xx and for requests that
 * can never work (bad URL, TLS verification); HTTP_PROTO for anything else.
 */
enum http_class http_class(CURLcode cc, long status);
/* The exit status for a class: 0, 75, 77, 69, 76 (base/exits.h). */
int http_exitcode(enum http_class c);
/*
 * The server's requested delay in seconds from the retry-after-ms value ms
 * (milliseconds) or, failing that, the Retry-After value ra (seconds,
 * fractions allowed, or an HTTP-date compared with now). Either may be
 * NULL or "". Returns -1 when neither gives a usable delay; a date in the
 * past gives 0.
 */
double http_retry_after(const char *ms, const char *ra, time_t now);

/*
 * The header value at v (n bytes), blanks and line ending trimmed, into
 * dst (dstlen bytes, NUL-terminated, cut to fit). (httpclass.c)
 */
void http_hval(char *dst, size_t dstlen, const char *v, size_t n);
/*
 * Seconds to wait before retry attempt (0 first): full jitter, a random
 * time up to h->backoff doubled per attempt, at most h->cap; h->rng is
 * its state.
 */
double http_jitter(struct http *h, int attempt);

#endif
