/*
 * synchttp.c: the HTTP side of the synchronous engine: its libcurl multi
 * handle and the headers every request carries, one easy handle per try,
 * and what an answer's headers say (Retry-After, retry-after-ms,
 * x-should-retry, request ids, the rate-limit reset headers of OpenAI
 * and Anthropic: qb-providers(7), OPENAI "Headers" and "Errors",
 * ANTHROPIC "Errors"). The key lives only in the request headers; an
 * answer that quotes it has it blanked.
 * SPDX-License-Identifier: ISC
 */
#define _GNU_SOURCE	/* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/rfc3339.h"
#include "provider/provider.h"
#include "sync/synchttp.h"
#include "sync/syncint.h"

#ifndef QB_VERSION
#define QB_VERSION "0.0.0"
#endif

#define TIMEOUT		600L	/* s per try unless QB_HTTP_TIMEOUT, as the SDKs */
#define BODY_MAX	((size_t)64 << 20)	/* largest answer kept */

void
synchttp_header(struct sync_item *it, const char *p, size_t len)
{
	/* reset[0..1]: requests, tokens; left[0..1] their "remaining". */
	static const struct { const char *name; int slot; } want[] = {
		{ "x-ratelimit-reset-requests", 0 },
		{ "x-ratelimit-reset-tokens", 1 },
		{ "anthropic-ratelimit-requests-reset", 0 },
		{ "anthropic-ratelimit-tokens-reset", 1 },
		{ "x-ratelimit-remaining-requests", 2 },
		{ "x-ratelimit-remaining-tokens", 3 },
		{ "anthropic-ratelimit-requests-remaining", 2 },
		{ "anthropic-ratelimit-tokens-remaining", 3 },
	};
	size_t k, i;
	const char *c;
	char v[16];

	if (len > 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* A new response (after a 100) starts afresh. */
		c = memchr(p, ' ', len);
		it->status = c != NULL ? strtol(c + 1, NULL, 10) : 0;
		it->ra[0] = it->ra_ms[0] = it->rid[0] = '\0';
		memset(it->reset, 0, sizeof(it->reset));
		memset(it->left, 0, sizeof(it->left));
		it->should_retry = -1;
		return;
	}
	if ((c = memchr(p, ':', len)) == NULL)
		return;
	k = (size_t)(c - p);
	c++;
	len -= k + 1;
#define IS(s) (k == sizeof(s) - 1 && strncasecmp(p, s, k) == 0)
	if (IS("retry-after"))
		http_hval(it->ra, sizeof(it->ra), c, len);
	else if (IS("retry-after-ms"))
		http_hval(it->ra_ms, sizeof(it->ra_ms), c, len);
	else if (IS("x-request-id") || IS("request-id"))
		http_hval(it->rid, sizeof(it->rid), c, len);
	else if (IS("x-should-retry")) {
		http_hval(v, sizeof(v), c, len);
		it->should_retry = strcasecmp(v, "true") == 0 ? 1 :
		    strcasecmp(v, "false") == 0 ? 0 : -1;
	} else
		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			if (strlen(want[i].name) == k &&
			    strncasecmp(p, want[i].name, k) == 0) {
				if (want[i].slot < 2)
					http_hval(it->reset[want[i].slot],
					    sizeof(it->reset[0]), c, len);
				else
					http_hval(it->left[want[i].slot - 2],
					    sizeof(it->left[0]), c, len);
			}
#undef IS
}

static size_t
on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	synchttp_header(arg, p, size * nmemb);
	return size * nmemb;
}

static size_t
on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct sync_item *it = arg;
	size_t len = size * nmemb;

	if (it->resp.len + len > BODY_MAX) {
		it->big = 1;
		return 0;
	}
	buf_append(&it->resp, p, len);
	return len;
}

/* A Go duration ("1s", "6m0s", "20ms"), in seconds; -1 if not one. */
static double
godur(const char *s)
{
	double t = 0, v;
	char *end;

	if (*s == '\0')
		return -1;
	while (*s != '\0') {
		v = strtod(s, &end);
		if (end == s || v < 0)
			return -1;
		s = end;
		if (strncmp(s, "ms", 2) == 0)
			t += v / 1e3, s += 2;
		else if (strncmp(s, "us", 2) == 0)
			t += v / 1e6, s += 2;
		else if (strncmp(s, "ns", 2) == 0)
			t += v / 1e9, s += 2;
		else if (*s == 'h')
			t += v * 3600, s++;
		else if (*s == 'm')
			t += v * 60, s++;
		else if (*s == 's')
			t += v, s++;
		else
			return -1;
	}
	return t;
}

/*
 * The wait a 429 without Retry-After implies: the reset of each limit
 * (requests, tokens) the answer says is used up, the longest; -1 if none
 * says so. OpenAI gives durations, Anthropic RFC 3339 times.
 */
double
synchttp_reset_wait(const struct sync_item *it)
{
	double w = -1, v;
	long long t;
	int i;

	for (i = 0; i < 2; i++) {
		if (strcmp(it->left[i], "0") != 0 || it->reset[i][0] == '\0')
			continue;
		if (rfc3339_parse(it->reset[i], &t) == 0)
			v = t > time(NULL) ? (double)(t - time(NULL)) : 0;
		else if ((v = godur(it->reset[i])) < 0)
			continue;
		if (v > w)
			w = v;
	}
	return w;
}

/* Put the key nobody may see out of an answer: "[key]" instead. */
void
synchttp_scrub(const struct sync *s, struct buf *b)
{
	struct buf o = BUF_INIT;
	const char *p, *q;
	size_t n;

	if (s->h.secret == NULL || b->len == 0 ||
	    memmem(b->p, b->len, s->h.secret, strlen(s->h.secret)) == NULL)
		return;
	n = strlen(s->h.secret);
	for (p = b->p; (q = memmem(p, b->len - (size_t)(p - b->p),
	    s->h.secret, n)) != NULL; p = q + n) {
		buf_append(&o, p, (size_t)(q - p));
		buf_puts(&o, "[key]");
	}
	buf_append(&o, p, b->len - (size_t)(p - b->p));
	buf_free(b);
	*b = o;
}

CURL *
synchttp_easy(struct sync *s, struct sync_item *it)
{
	CURL *e;

	if ((e = curl_easy_init()) == NULL) {
		qb_fail(QB_EX_OSERR, "cannot make a libcurl handle");
		return NULL;
	}
	buf_reset(&it->resp);
	it->big = 0;
	it->status = 0;
	it->should_retry = -1;
	it->ra[0] = it->ra_ms[0] = it->rid[0] = it->ebuf[0] = '\0';
	memset(it->reset, 0, sizeof(it->reset));
	memset(it->left, 0, sizeof(it->left));
	curl_easy_setopt(e, CURLOPT_URL, it->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, it);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "qb/" QB_VERSION);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, s->timeout);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, it->ebuf);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->hdrs);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, it->line + it->boff);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->blen);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, it);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, it);
	/*
	 * Wait for a connection that may multiplex rather than open another,
	 * but only over TLS, where ALPN says soon whether it can: over plain
	 * http libcurl would hold the request until the first answer.
	 */
	if (strncasecmp(it->url, "https:", 6) == 0)
		curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	return e;
}

/* Add h to the headers every request carries. */
static void
hdr(struct sync *s, const char *h)
{
	struct curl_slist *l;

	/* On failure libcurl leaves the list as it was: nothing is lost. */
	if ((l = curl_slist_append(s->hdrs, h)) == NULL)
		qb_oom(0);
	s->hdrs = l;
}

int
synchttp_init(struct sync *s)
{
	const struct sync_opts *o = s->o;
	struct curl_slist *l;
	const char *v;
	int rc;

	if ((rc = provider_open(s->p, &s->h, o->base, o->keyfile)) != 0)
		return rc;
	/* A completion may take minutes: the SDKs wait 10 for one. */
	v = getenv("QB_HTTP_TIMEOUT");
	s->timeout = v != NULL && *v != '\0' ? s->h.json_timeout : TIMEOUT;
	for (l = s->h.hdrs; l != NULL; l = l->next)
		hdr(s, l->data);
	hdr(s, "Content-Type: application/json");
	hdr(s, "Accept: application/json");
	/* No "Expect: 100-continue" round trip before the body. */
	hdr(s, "Expect:");
	/* Azure's dated API wants its version on every request (azure.c). */
	if (strcmp(s->p->name, "azure") == 0 &&
	    (v = getenv("AZURE_OPENAI_API_VERSION")) != NULL && *v != '\0')
		snprintf(s->query, sizeof(s->query), "?api-version=%.64s", v);
	if ((s->multi = curl_multi_init()) == NULL)
		return qb_fail(QB_EX_OSERR, "cannot initialise libcurl");
	/* One connection per host carries many requests where HTTP/2 can. */
	curl_multi_setopt(s->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
	curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS,
	    (long)(o->concurrency > 8 ? o->concurrency + 4 : 12));
	return 0;
}

void
synchttp_free(struct sync *s)
{
	struct curl_slist *l;

	if (s->multi != NULL)
		curl_multi_cleanup(s->multi);
	/* The key is in there: wipe it before it goes. */
	for (l = s->hdrs; l != NULL; l = l->next)
		memset(l->data, 0, strlen(l->data));
	curl_slist_free_all(s->hdrs);
	http_free(&s->h);
}
