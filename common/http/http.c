/*
 * http.c: libcurl easy wrapper with failure classes and retries.
 *
 * One easy handle per struct http, reset before each request (which keeps
 * its connection cache), so a run of GETs to one host reuses one
 * connection. Retries use exponential backoff with full jitter and obey
 * the server's retry-after-ms, Retry-After and x-should-retry headers the
 * way the OpenAI SDK does (qb-providers(7), HTTP "Retries"). A request
 * body comes from memory or from a read callback (a streamed create),
 * under the same rules. Nothing here ever prints a request header: the key travels only
 * in h->hdrs, and never to another origin than the base URL's.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/num.h"
#include "base/qtime.h"
#include "base/redact.h"
#include "base/xmem.h"
#include "http/http.h"
#include "json/jtree.h"

#ifndef QB_VERSION
#define QB_VERSION "0.0.0"
#endif

#define CONNECT_TIMEOUT	10L		/* seconds */
#define JSON_TIMEOUT	60L		/* seconds for one JSON request: a batch object is small */
#define XFER_TIMEOUT	300L		/* seconds an upload or download may stall */
#define RETRY_AFTER_MAX	120.0		/* seconds; a longer wait is not waited for */
#define BODY_MAX	((size_t)64 << 20)	/* largest response kept in memory */
#define MAX_REDIRS	5

enum kind { K_JSON, K_UPLOAD, K_DOWNLOAD };

struct req {
	enum kind	 kind;
	const char	*method, *path;
	const struct http_body *body;	/* K_JSON: NULL for none */
	const char *const *fields;
	const char	*file;
	FILE		*out;
	int		 create;
};

/* State the callbacks share during one try. */
struct xfer {
	struct http	*h;
	const struct req *q;
	struct http_resp *r;
	FILE		*out;
	int		 werr;		/* errno of a failed write to out */
	int		 rerr;		/* errno of a failed body read; -1: wrong length */
	int		 sent;		/* some of the request went out */
	int		 big;		/* response body over BODY_MAX */
	int		 stalled;	/* seconds of silence that ended a streamed try */
	size_t		 nread;		/* bytes of a streamed body handed to libcurl */
	curl_off_t	 ul, dl;	/* bytes moved at the last progress */
	double		 last;		/* qtime_mono() of the last progress */
};

/*
 * The settings QB_MAX_RETRIES, QB_BACKOFF_BASE and QB_HTTP_TIMEOUT, when
 * set, into h. Returns 0 or QB_EX_CONFIG, reported.
 */
static int
settings(struct http *h)
{
	const char *s, *e;
	double t;

	if ((s = getenv("QB_MAX_RETRIES")) != NULL && *s != '\0') {
		h->retries = (int)num_strtonum(s, 0, 100, &e);
		if (e != NULL)
			return qb_fail(QB_EX_CONFIG,
			    "QB_MAX_RETRIES \"%s\" is %s", s, e);
	}
	if ((s = getenv("QB_BACKOFF_BASE")) != NULL && *s != '\0') {
		h->backoff = num_seconds(s, &e);
		if (e != NULL)
			return qb_fail(QB_EX_CONFIG,
			    "QB_BACKOFF_BASE \"%s\" is %s", s, e);
	}
	if ((s = getenv("QB_HTTP_TIMEOUT")) != NULL && *s != '\0') {
		t = num_seconds(s, &e);
		if (e == NULL && (t < 1 || t > 86400))
			e = "out of range (1 s to 1 day)";
		if (e != NULL)
			return qb_fail(QB_EX_CONFIG,
			    "QB_HTTP_TIMEOUT \"%s\" is %s", s, e);
		h->timeout = h->json_timeout = (long)ceil(t);
	}
	return 0;
}

int
http_init(struct http *h, const char *base, const char *const *hdrs,
    const char *secret)
{
	char why[160];
	size_t n;
	int rc;

	memset(h, 0, sizeof(*h));
	if (http_check_url(base, why, sizeof(why)) != 0)
		return qb_fail(QB_EX_CONFIG, "base URL \"%s\": %s", base, why);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return qb_fail(QB_EX_OSERR, "cannot initialise libcurl");
	if ((h->curl = curl_easy_init()) == NULL) {
		curl_global_cleanup();
		return qb_fail(QB_EX_OSERR, "cannot initialise libcurl");
	}
	n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	h->base = xstrndup(base, n);
	h->secret = secret != NULL && *secret != '\0' ? xstrdup(secret) : NULL;
	for (; hdrs != NULL && *hdrs != NULL; hdrs++)
		if ((h->hdrs = curl_slist_append(h->hdrs, *hdrs)) == NULL)
			qb_oom(0);
	h->json_timeout = JSON_TIMEOUT;
	h->timeout = XFER_TIMEOUT;
	h->retries = 4;
	h->backoff = 0.5;
	h->cap = 30;
	if ((rc = settings(h)) != 0) {
		http_free(h);
		return rc;
	}
	h->rng = (unsigned long long)time(NULL) * 2654435761ULL ^
	    (unsigned long long)getpid() << 32 ^ (unsigned long long)(size_t)h;
	if (h->rng == 0)
		h->rng = 1;
	return 0;
}

void
http_free(struct http *h)
{
	if (h->curl != NULL) {
		curl_easy_cleanup(h->curl);
		curl_global_cleanup();
	}
	curl_slist_free_all(h->hdrs);
	if (h->secret != NULL)
		memset(h->secret, 0, strlen(h->secret));
	free(h->secret);
	free(h->base);
	memset(h, 0, sizeof(*h));
}

void
http_resp_init(struct http_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->should_retry = -1;
}

void
http_resp_free(struct http_resp *r)
{
	buf_free(&r->body);
	http_resp_init(r);
}

/*
 * Replace every copy of the key in h->err by "[key]", and every other
 * credential (a URL's userinfo, a key parameter: redact.h) by the mark:
 * h->err goes into records as well as messages.
 */
static void
scrub(struct http *h)
{
	char tmp[sizeof(h->err)], *p;
	size_t n;

	redact_str(h->err, sizeof(h->err));
	if (h->secret == NULL)
		return;
	n = strlen(h->secret);
	while ((p = strstr(h->err, h->secret)) != NULL) {
		snprintf(tmp, sizeof(tmp), "%.*s[key]%s", (int)(p - h->err),
		    h->err, p + n);
		memcpy(h->err, tmp, sizeof(tmp));
	}
}

static size_t
on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	struct http_resp *r = x->r;
	size_t len = size * nmemb, k;
	const char *c;

	if (len > 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* A new response (after a 100 or a redirect) starts afresh. */
		c = memchr(p, ' ', len);
		r->status = c != NULL ? strtol(c + 1, NULL, 10) : 0;
		r->retry_after[0] = r->retry_after_ms[0] = '\0';
		r->request_id[0] = '\0';
		r->should_retry = -1;
		return len;
	}
	if ((c = memchr(p, ':', len)) == NULL)
		return len;
	k = (size_t)(c - p);
	c++;
	if (k == 11 && strncasecmp(p, "retry-after", k) == 0)
		http_hval(r->retry_after, sizeof(r->retry_after), c, len - k - 1);
	else if (k == 14 && strncasecmp(p, "retry-after-ms", k) == 0)
		http_hval(r->retry_after_ms, sizeof(r->retry_after_ms), c,
		    len - k - 1);
	else if ((k == 12 && strncasecmp(p, "x-request-id", k) == 0) ||
	    (k == 10 && strncasecmp(p, "request-id", k) == 0))	/* Anthropic's */
		http_hval(r->request_id, sizeof(r->request_id), c, len - k - 1);
	else if (k == 14 && strncasecmp(p, "x-should-retry", k) == 0) {
		char v[16];

		http_hval(v, sizeof(v), c, len - k - 1);
		if (strcasecmp(v, "true") == 0)
			r->should_retry = 1;
		else if (strcasecmp(v, "false") == 0)
			r->should_retry = 0;
	}
	return len;
}

static size_t
on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * nmemb;

	if (x->out != NULL && x->r->status >= 200 && x->r->status <= 299) {
		errno = 0;
		if (fwrite(p, 1, len, x->out) != len) {
			x->werr = errno != 0 ? errno : EIO;
			return 0;
		}
		return len;
	}
	if (x->r->body.len + len > BODY_MAX) {
		x->big = 1;
		return 0;
	}
	buf_append(&x->r->body, p, len);
	return len;
}

/*
 * The time limits of a streamed body: it may take long, but not stall for
 * h->timeout seconds; once it is sent the answer may take h->json_timeout
 * seconds, as with a body from memory (libcurl's own speed limit averages
 * over a fast upload and would wait much longer).
 */
static int
on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
	struct xfer *x = arg;
	double now;
	long limit;

	if (ulnow > 0)
		x->sent = 1;
	if (x->q->body == NULL || x->q->body->read == NULL)
		return 0;
	now = qtime_mono();
	if (x->last == 0 || ulnow != x->ul || dlnow != x->dl) {
		x->ul = ulnow;
		x->dl = dlnow;
		x->last = now;
		return 0;
	}
	limit = ulnow >= (curl_off_t)x->q->body->len ? x->h->json_timeout :
	    x->h->timeout;
	if (now - x->last < limit)
		return 0;
	x->stalled = (int)limit;
	return 1;
}

static size_t
on_read(char *dst, size_t size, size_t nitems, void *arg)
{
	struct xfer *x = arg;
	const struct http_body *b = x->q->body;
	size_t n;

	errno = 0;
	if ((n = b->read(dst, size, nitems, b->ctx)) == CURL_READFUNC_ABORT) {
		x->rerr = errno != 0 ? errno : EIO;
		return n;
	}
	/* A source that grew or shrank since len was taken breaks the body. */
	x->nread += n;
	if (x->nread > b->len || (n == 0 && x->nread != b->len)) {
		x->rerr = -1;
		return CURL_READFUNC_ABORT;
	}
	return n;
}

/* libcurl rewinds a body to send it again (a redirect, an auth round). */
static int
on_seek(void *arg, curl_off_t off, int origin)
{
	struct xfer *x = arg;

	if (off != 0 || origin != SEEK_SET || x->q->body->rewind(x->q->body->ctx))
		return CURL_SEEKFUNC_CANTSEEK;
	x->nread = 0;
	return CURL_SEEKFUNC_OK;
}

static struct curl_slist *
addhdr(struct curl_slist *l, const char *s)
{
	if ((l = curl_slist_append(l, s)) == NULL)
		qb_oom(0);
	return l;
}

/* The options of every request: callbacks, timeouts, protocols. */
static void
setcommon(struct http *h, const struct req *q, const char *url,
    struct xfer *x, char *ebuf)
{
	CURL *c = h->curl;

	curl_easy_reset(c);
	ebuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "qb/" QB_VERSION);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	/*
	 * libcurl sends a request again, unasked, on a new connection when a
	 * reused one dies before any answer, even after the whole request
	 * went out; a create must never go twice, so it takes a connection
	 * of its own, and a failure after sending stays an unknown outcome.
	 */
	if (q->create)
		curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
}

/*
 * The options of a JSON request: its method, its body from memory or
 * streamed, and its time limit. Returns hl with the headers it needs.
 */
static struct curl_slist *
setjson(struct http *h, const struct req *q, struct xfer *x,
    struct curl_slist *hl)
{
	CURL *c = h->curl;
	long ms;

	ms = h->json_timeout * 1000L;
	if (h->deadline > 0 && (h->deadline - qtime_mono()) * 1000 < ms)
		ms = (long)((h->deadline - qtime_mono()) * 1000) + 1;
	if (q->body == NULL || q->body->read == NULL)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1L);
	hl = addhdr(hl, "Accept: application/json");
	if (strcmp(q->method, "GET") == 0) {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
		return hl;
	}
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	if (strcmp(q->method, "POST") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	hl = addhdr(hl, "Content-Type: application/json");
	/* No "Expect: 100-continue" round trip before the body. */
	hl = addhdr(hl, "Expect:");
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)(q->body != NULL ? q->body->len : 0));
	if (q->body != NULL && q->body->read != NULL) {
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, x);
		curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(c, CURLOPT_SEEKDATA, x);
	} else
		curl_easy_setopt(c, CURLOPT_POSTFIELDS,
		    q->body != NULL ? q->body->p : "");
	return hl;
}

/*
 * The options of a multipart upload: q's fields and its file streamed as
 * part "file", into *mime (the caller frees it after the request), and
 * the headers it needs added to *hl. Returns libcurl's result of opening
 * the file.
 */
static CURLcode
setform(struct http *h, const struct req *q, curl_mime **mime,
    struct curl_slist **hl)
{
	CURL *c = h->curl;
	curl_mimepart *part;
	const char *const *f;
	CURLcode cc;

	if ((*mime = curl_mime_init(c)) == NULL)
		qb_oom(0);
	for (f = q->fields; f != NULL && f[0] != NULL && f[1] != NULL; f += 2) {
		part = curl_mime_addpart(*mime);
		curl_mime_name(part, f[0]);
		curl_mime_data(part, f[1], CURL_ZERO_TERMINATED);
	}
	part = curl_mime_addpart(*mime);
	curl_mime_name(part, "file");
	if ((cc = curl_mime_filedata(part, q->file)) != CURLE_OK)
		return cc;
	curl_easy_setopt(c, CURLOPT_MIMEPOST, *mime);
	/* No "Expect: 100-continue" round trip before the body. */
	*hl = addhdr(*hl, "Expect:");
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->timeout);
	return CURLE_OK;
}

/* After a request: whether any of it went out, and why it failed. */
static void
aftermath(struct http *h, const struct req *q, struct xfer *x, CURLcode cc,
    const char *ebuf)
{
	curl_off_t reqsize = 0;
	long rsize = 0;

	curl_easy_getinfo(h->curl, CURLINFO_REQUEST_SIZE, &rsize);
	curl_easy_getinfo(h->curl, CURLINFO_SIZE_UPLOAD_T, &reqsize);
	if (rsize > 0 || reqsize > 0)
		x->sent = 1;
	if (x->stalled > 0)
		snprintf(h->err, sizeof(h->err), "%s after %d s of silence",
		    x->ul >= (curl_off_t)q->body->len ? "no answer" :
		    "upload stalled", x->stalled);
	else if (cc != CURLE_OK && ebuf[0] != '\0')
		snprintf(h->err, sizeof(h->err), "%s", ebuf);
	else if (cc != CURLE_OK)
		snprintf(h->err, sizeof(h->err), "%s", curl_easy_strerror(cc));
}

/*
 * One request of a try of q; fills r and x, returns libcurl's result. bare:
 * without h->hdrs (the key and the provider's other fixed headers).
 */
static CURLcode
once(struct http *h, const struct req *q, const char *url, int bare,
    struct http_resp *r, struct xfer *x)
{
	CURL *c = h->curl;
	struct curl_slist *hl = NULL, *s;
	curl_mime *mime = NULL;
	char ebuf[CURL_ERROR_SIZE];
	CURLcode cc = CURLE_OK;

	for (s = bare ? NULL : h->hdrs; s != NULL; s = s->next)
		hl = addhdr(hl, s->data);
	setcommon(h, q, url, x, ebuf);
	switch (q->kind) {
	case K_JSON:
		hl = setjson(h, q, x, hl);
		break;
	case K_UPLOAD:
		cc = setform(h, q, &mime, &hl);
		break;
	case K_DOWNLOAD:
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
		hl = addhdr(hl, "Accept: application/binary");
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->timeout);
		break;
	}
	if (cc == CURLE_OK) {
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
		cc = curl_easy_perform(c);
		aftermath(h, q, x, cc, ebuf);
	}
	/* The handle must not point at freed lists or forms. */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c, CURLOPT_MIMEPOST, NULL);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	curl_mime_free(mime);
	curl_slist_free_all(hl);
	return cc;
}

/*
 * Whether url is on the base URL's origin, scheme://host[:port] as the
 * base spells it (any other spelling only costs a redirect the key).
 */
static int
home(const struct http *h, const char *url)
{
	const char *p = strstr(h->base, "://");
	size_t n;

	if (p == NULL)
		return 0;
	n = (size_t)(p + 3 - h->base) + strcspn(p + 3, "/?#");
	return strncasecmp(url, h->base, n) == 0 &&
	    strchr("/?#", url[n]) != NULL;
}

/*
 * One try: once(), and for a download each redirect by hand. libcurl
 * would send h->hdrs to any host a redirect names (it drops only
 * Authorization and Cookie), an x-api-key or api-key header among them;
 * so a redirect away from the base URL's origin goes without them.
 */
static CURLcode
perform(struct http *h, const struct req *q, const char *url,
    struct http_resp *r, struct xfer *x)
{
	struct buf cur = BUF_INIT;
	char *loc = NULL;
	int hops, bare = 0;
	CURLcode cc;

	buf_puts(&cur, url);
	for (hops = 0;; hops++) {
		cc = once(h, q, cur.p, bare, r, x);
		if (cc != CURLE_OK || q->kind != K_DOWNLOAD || r->status < 300 ||
		    r->status > 399 || curl_easy_getinfo(h->curl,
		    CURLINFO_REDIRECT_URL, &loc) != CURLE_OK || loc == NULL)
			break;
		if (hops == MAX_REDIRS) {
			snprintf(h->err, sizeof(h->err), "more than %d redirects",
			    MAX_REDIRS);
			cc = CURLE_TOO_MANY_REDIRECTS;
			break;
		}
		buf_reset(&cur);
		buf_puts(&cur, loc);
		bare = bare || !home(h, cur.p);
		qb_note(2, "%s %s -> %ld, to %s%s", q->method, q->path,
		    r->status, cur.p, bare ? " without the key" : "");
		buf_reset(&r->body);
	}
	buf_free(&cur);
	return cc;
}

/* Set h->err to "METHOD PATH: what happened". */
static void
describe(struct http *h, const struct req *q, const struct http_resp *r,
    const struct xfer *x)
{
	char why[320], rid[160] = "";
	const char *m = NULL, *t;
	yajl_val v = NULL, e;

	if (r->request_id[0] != '\0')
		snprintf(rid, sizeof(rid), " (request %s)", r->request_id);
	if (x->werr != 0)
		snprintf(why, sizeof(why), "write error: %s", strerror(x->werr));
	else if (x->rerr > 0)
		snprintf(why, sizeof(why), "read error: %s", strerror(x->rerr));
	else if (x->rerr < 0)
		snprintf(why, sizeof(why), "the body changed while it was sent");
	else if (x->big)
		snprintf(why, sizeof(why), "response larger than %zu bytes",
		    BODY_MAX);
	else if (r->cc != CURLE_OK && r->status < 400)
		snprintf(why, sizeof(why), "%.300s", h->err);
	else {
		/*
		 * OpenAI and Anthropic both say {"error":{"message":...,
		 * "type":...}}; an answer, then a broken connection (a 413
		 * cutting an upload short), is reported by the answer.
		 */
		if (r->body.len > 0 && r->body.len < 65536)
			v = jtree_parse0(r->body.p);
		e = jtree_get(v, "error");
		if ((m = jtree_str(e, "message")) == NULL)
			m = jtree_str(v, "message");
		if (m == NULL && r->status >= 200 && r->status <= 299)
			m = "unexpected answer";
		t = jtree_str(e, "type");
		snprintf(why, sizeof(why), "HTTP %ld%s%.250s%s%.40s%s", r->status,
		    m != NULL ? ": " : "", m != NULL ? m : "",
		    t != NULL ? " (" : "", t != NULL ? t : "", t != NULL ? ")" : "");
		yajl_tree_free(v);
	}
	snprintf(h->err, sizeof(h->err), "%s %s: %s%s", q->method, q->path,
	    why, rid);
	scrub(h);
}

double
http_jitter(struct http *h, int attempt)
{
	double top = h->backoff * pow(2, attempt);

	if (top > h->cap)
		top = h->cap;
	/* xorshift64*: plenty for spreading retries. */
	h->rng ^= h->rng >> 12;
	h->rng ^= h->rng << 25;
	h->rng ^= h->rng >> 27;
	return top * ((h->rng * 2685821657736338717ULL >> 11) /
	    9007199254740992.0);
}

static void adderr(struct http *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/* Add to h->err, after what it says. */
static void
adderr(struct http *h, const char *fmt, ...)
{
	size_t n = strlen(h->err);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->err + n, sizeof(h->err) - n, fmt, ap);
	va_end(ap);
}

/*
 * Whether q may not start at all: its deadline has passed. Then r and
 * h->err say so, and the call fails as a timeout would.
 */
static int
late(struct http *h, const struct req *q, struct http_resp *r)
{
	if (h->deadline <= 0 || qtime_mono() < h->deadline)
		return 0;
	http_resp_free(r);
	r->cc = CURLE_OPERATION_TIMEDOUT;
	snprintf(h->err, sizeof(h->err), "%s %s: not started: the deadline "
	    "has passed", q->method, q->path);
	h->status = 0;
	return 1;
}

/*
 * Try attempt (0 first) of q at url, from a clean start: r and x empty,
 * a download's file emptied, a streamed body rewound. r->cc is the
 * result.
 */
static void
onetry(struct http *h, const struct req *q, const char *url,
    struct http_resp *r, struct xfer *x, int attempt)
{
	buf_free(&r->body);
	http_resp_init(r);
	memset(x, 0, sizeof(*x));
	x->h = h;
	x->q = q;
	x->r = r;
	x->out = q->out;
	h->err[0] = '\0';
	if (q->out != NULL && attempt > 0 && (fflush(q->out) != 0 ||
	    ftruncate(fileno(q->out), 0) != 0 ||
	    fseeko(q->out, 0, SEEK_SET) != 0))
		x->werr = errno;
	if (q->body != NULL && q->body->read != NULL)
		x->rerr = q->body->rewind(q->body->ctx);
	r->cc = x->werr != 0 ? CURLE_WRITE_ERROR : x->rerr != 0 ?
	    CURLE_READ_ERROR : perform(h, q, url, r, x);
	if (x->rerr > 0)
		r->cc = CURLE_READ_ERROR;
	r->tries = attempt + 1;
}

/*
 * Whether a try of q that failed with class cls may be made again: a
 * temporary failure may, unless the server says otherwise, and a create
 * only when it surely was not taken (qb-providers(7), HTTP "Retries").
 * A create that may have been made sets r->unknown, and h->err says so.
 */
static int
retryable(struct http *h, const struct req *q, struct http_resp *r,
    const struct xfer *x, enum http_class cls)
{
	int retry = cls == HTTP_TEMP;

	/* The server's own word overrides the status rule. */
	if (r->should_retry == 0 || (r->should_retry == 1 &&
	    r->status >= 400))
		retry = r->should_retry;
	if (x->werr != 0 || x->rerr != 0)
		return 0;
	if (q->create && r->cc != CURLE_OK && r->status < 400 && x->sent) {
		/* The server may have made it: never send it twice. */
		r->unknown = 1;
		adderr(h, "; outcome unknown: the request was sent");
		return 0;
	}
	if (q->create && (r->status == 500 || r->status == 502 ||
	    r->status == 504)) {
		/* It may have been made before the error, or behind a
		   gateway that gave up on it: never send it twice. */
		r->unknown = 1;
		adderr(h, "; outcome unknown: the server may have made it");
		return 0;
	}
	if (q->create && r->status > 0)
		/* 429, 503, 529: refused before it was taken. */
		return retry && (r->status == 429 || r->status == 503 ||
		    r->status == 529);
	return retry;
}

/*
 * Seconds to wait before the retry after attempt: what the server asks,
 * else a backoff. Returns -1, with why added to h->err, when the server
 * asks too long a wait or the retry would start after the deadline.
 */
static double
backoff(struct http *h, const struct http_resp *r, int attempt)
{
	double delay;

	delay = http_retry_after(r->retry_after_ms, r->retry_after,
	    time(NULL));
	if (delay > RETRY_AFTER_MAX) {
		adderr(h, "; the server asks to wait %.0f s", delay);
		return -1;
	}
	if (delay <= 0)
		delay = http_jitter(h, attempt);
	if (h->deadline > 0 && qtime_mono() + delay >= h->deadline) {
		adderr(h, "; no retry: the deadline has passed");
		return -1;
	}
	return delay;
}

/* q, tried until it succeeds or may not be tried again. */
static enum http_class
run(struct http *h, const struct req *q, struct http_resp *r)
{
	struct buf url = BUF_INIT;
	struct xfer x;
	enum http_class cls = HTTP_TEMP;
	double delay, secs;
	int attempt;

	if (strncmp(q->path, "http://", 7) == 0 ||
	    strncmp(q->path, "https://", 8) == 0)
		buf_puts(&url, q->path);
	else
		buf_printf(&url, "%s%s", h->base, q->path);
	if (late(h, q, r)) {
		buf_free(&url);
		return HTTP_TEMP;
	}
	for (attempt = 0;; attempt++) {
		onetry(h, q, url.p, r, &x, attempt);
		secs = 0;
		curl_easy_getinfo(h->curl, CURLINFO_TOTAL_TIME, &secs);
		/* An answer, then a broken connection: the answer speaks. */
		cls = x.werr != 0 || x.rerr != 0 ? HTTP_PERM :
		    http_class(r->status >= 400 ? CURLE_OK : r->cc, r->status);
		if (r->cc == CURLE_OK)
			qb_note(2, "%s %s -> %ld (%.3f s)%s%s", q->method, url.p,
			    r->status, secs, r->request_id[0] ? " " : "",
			    r->request_id);
		else
			qb_note(2, "%s %s -> %s", q->method, url.p, h->err);
		if (cls == HTTP_OK)
			break;
		describe(h, q, r, &x);
		if (!retryable(h, q, r, &x, cls) || attempt >= h->retries ||
		    (delay = backoff(h, r, attempt)) < 0)
			break;
		qb_note(1, "%s; retry %d of %d in %.2f s", h->err, attempt + 1,
		    h->retries, delay);
		qtime_sleep(delay);
	}
	h->status = r->status;
	buf_free(&url);
	return cls;
}

enum http_class
http_send(struct http *h, const char *method, const char *path,
    const struct http_body *body, int create, struct http_resp *r)
{
	struct req q;

	memset(&q, 0, sizeof(q));
	q.kind = K_JSON;
	q.method = method;
	q.path = path;
	q.body = body;
	q.create = create;
	return run(h, &q, r);
}

enum http_class
http_json(struct http *h, const char *method, const char *path,
    const char *body, size_t len, int create, struct http_resp *r)
{
	struct http_body b;

	memset(&b, 0, sizeof(b));
	b.p = body;
	b.len = len;
	return http_send(h, method, path, body != NULL ? &b : NULL, create, r);
}

enum http_class
http_upload(struct http *h, const char *path, const char *const *fields,
    const char *file, struct http_resp *r)
{
	struct req q;

	memset(&q, 0, sizeof(q));
	q.kind = K_UPLOAD;
	q.method = "POST";
	q.path = path;
	q.fields = fields;
	q.file = file;
	return run(h, &q, r);
}

enum http_class
http_download(struct http *h, const char *path, FILE *out,
    struct http_resp *r)
{
	struct req q;

	memset(&q, 0, sizeof(q));
	q.kind = K_DOWNLOAD;
	q.method = "GET";
	q.path = path;
	q.out = out;
	return run(h, &q, r);
}
