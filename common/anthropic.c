/*
 * anthropic.c: the Anthropic Message Batches API (PROVIDERS.md §2) behind
 * struct provider. There is no upload: create carries the requests in its
 * JSON body, which is streamed from the packed file ({"requests":[, the
 * file's lines joined by commas, ]}) and never held in memory. Batches
 * are read and cancelled, and their results_url streamed into a file.
 * Paths carry the version (/v1/...); the base URL has none.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "exits.h"
#include "json.h"
#include "msg.h"
#include "provider.h"
#include "qtime.h"
#include "rfc3339.h"
#include "xmem.h"

#define BATCHES		"/v1/messages/batches"
#define RETRY_AFTER_MAX	120.0		/* seconds, as http.c */
#define ERRBODY_MAX	((size_t)1 << 20)	/* a batch object or an error is small */
#define LIST_LIMIT	100		/* batches per list page (§2.5: 1..1000) */

static const char prefix[] = "{\"requests\":[\n";
static const char suffix[] = "\n]}";

/*
 * The create body, read from the packed file by libcurl. Every byte of
 * the file goes out as it is; a ',' goes before the first non-blank byte
 * of each line that has one, except the first such line. Blank bytes
 * (JSON whitespace, line ends included) need no care.
 */
struct body {
	FILE		*fp;
	curl_off_t	 size;		/* Content-Length, from scan() */
	curl_off_t	 sent;		/* bytes handed to libcurl this try */
	int		 part;		/* 0 prefix, 1 file, 2 suffix */
	size_t		 off;		/* into prefix or suffix */
	int		 any;		/* a request line has begun */
	int		 inreq;		/* inside a line that has begun */
	int		 comma;		/* its comma is out already */
	int		 err;		/* errno of a read error, or -1: the file changed */
	char		 in[65536];
	size_t		 ilen, ipos;
};

/* One try's response state (the shape of http.c's, for a streamed POST). */
struct xfer {
	struct http_resp *r;
	struct body	*b;
	const struct http *h;
	int		 big;
	int		 stalled;	/* seconds of silence that ended the try */
	curl_off_t	 ul, dl;	/* bytes moved at the last progress */
	double		 last;		/* qtime_mono() of the last progress */
};

static int
isblank_json(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* x-api-key and the API version (§2.1). */
static int
an_auth(const char *key, char **hdrs, int n)
{
	struct buf b = BUF_INIT;

	if (n < 2)
		return 0;
	buf_printf(&b, "x-api-key: %s", key);
	hdrs[0] = b.p;
	hdrs[1] = xstrdup("anthropic-version: 2023-06-01");
	return 2;
}

/* Count the file's request lines; set b->size. Returns 0 or errno. */
static int
scan(struct body *b, long long *nreq)
{
	struct stat st;
	size_t n, i;
	int inreq = 0;

	*nreq = 0;
	if (fstat(fileno(b->fp), &st) == -1)
		return errno;
	while ((n = fread(b->in, 1, sizeof(b->in), b->fp)) > 0)
		for (i = 0; i < n; i++) {
			if (b->in[i] == '\n')
				inreq = 0;
			else if (!inreq && !isblank_json((unsigned char)b->in[i])) {
				inreq = 1;
				++*nreq;
			}
		}
	if (ferror(b->fp))
		return errno != 0 ? errno : EIO;
	b->size = (curl_off_t)(sizeof(prefix) - 1) + (curl_off_t)st.st_size +
	    (*nreq > 0 ? *nreq - 1 : 0) + (curl_off_t)(sizeof(suffix) - 1);
	return 0;
}

/* Start the body again from its first byte. */
static int
rewind_body(struct body *b)
{
	b->sent = 0;
	b->part = 0;
	b->off = 0;
	b->any = b->inreq = b->comma = 0;
	b->ilen = b->ipos = 0;
	b->err = 0;
	return fseeko(b->fp, 0, SEEK_SET);
}

static size_t
on_read(char *dst, size_t size, size_t nitems, void *arg)
{
	struct body *b = arg;
	size_t room = size * nitems, n = 0, k;
	const char *nl;
	unsigned char c;

	while (n < room) {
		if (b->part == 0 || b->part == 2) {
			const char *s = b->part == 0 ? prefix : suffix;
			size_t len = b->part == 0 ? sizeof(prefix) - 1 :
			    sizeof(suffix) - 1;

			k = len - b->off < room - n ? len - b->off : room - n;
			memcpy(dst + n, s + b->off, k);
			n += k;
			if ((b->off += k) < len)
				continue;
			if (b->part == 2)
				break;
			b->part = 1;
			b->off = 0;
			continue;
		}
		if (b->ipos == b->ilen) {
			b->ipos = 0;
			if ((b->ilen = fread(b->in, 1, sizeof(b->in), b->fp)) == 0) {
				if (ferror(b->fp)) {
					b->err = errno != 0 ? errno : EIO;
					return CURL_READFUNC_ABORT;
				}
				b->part = 2;
			}
			continue;
		}
		if (b->inreq) {
			/* The rest of a request line goes out as it is. */
			k = b->ilen - b->ipos < room - n ? b->ilen - b->ipos :
			    room - n;
			if ((nl = memchr(b->in + b->ipos, '\n', k)) != NULL) {
				k = (size_t)(nl - (b->in + b->ipos)) + 1;
				b->inreq = 0;
			}
			memcpy(dst + n, b->in + b->ipos, k);
			n += k;
			b->ipos += k;
			continue;
		}
		c = (unsigned char)b->in[b->ipos];
		if (!isblank_json(c) && b->any && !b->comma) {
			dst[n++] = ',';
			b->comma = 1;
			continue;
		}
		if (!isblank_json(c)) {
			b->inreq = b->any = 1;
			b->comma = 0;
		}
		dst[n++] = (char)c;
		b->ipos++;
	}
	/* A file that grew or shrank since scan() would break the body. */
	b->sent += (curl_off_t)n;
	if (b->sent > b->size || (n == 0 && b->sent != b->size)) {
		b->err = -1;
		return CURL_READFUNC_ABORT;
	}
	return n;
}

static int
on_seek(void *arg, curl_off_t off, int origin)
{
	struct body *b = arg;

	if (off != 0 || origin != SEEK_SET || rewind_body(b) != 0)
		return CURL_SEEKFUNC_CANTSEEK;
	return CURL_SEEKFUNC_OK;
}

static void
hval(char *dst, size_t dstlen, const char *v, size_t n)
{
	while (n > 0 && isblank_json((unsigned char)v[n - 1]))
		n--;
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	snprintf(dst, dstlen, "%.*s", (int)n, v);
}

static size_t
on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct http_resp *r = ((struct xfer *)arg)->r;
	size_t len = size * nmemb, k;
	const char *c;
	char v[16];

	if (len > 5 && memcmp(p, "HTTP/", 5) == 0) {
		c = memchr(p, ' ', len);
		r->status = c != NULL ? strtol(c + 1, NULL, 10) : 0;
		r->retry_after[0] = r->retry_after_ms[0] = '\0';
		r->request_id[0] = '\0';
		r->should_retry = -1;
		return len;
	}
	if ((c = memchr(p, ':', len)) == NULL)
		return len;
	k = (size_t)(c++ - p);
	len -= k + 1;
	if (k == 11 && strncasecmp(p, "retry-after", k) == 0)
		hval(r->retry_after, sizeof(r->retry_after), c, len);
	else if (k == 14 && strncasecmp(p, "retry-after-ms", k) == 0)
		hval(r->retry_after_ms, sizeof(r->retry_after_ms), c, len);
	else if (k == 10 && strncasecmp(p, "request-id", k) == 0)
		hval(r->request_id, sizeof(r->request_id), c, len);
	else if (k == 14 && strncasecmp(p, "x-should-retry", k) == 0) {
		hval(v, sizeof(v), c, len);
		r->should_retry = strcasecmp(v, "true") == 0 ? 1 :
		    strcasecmp(v, "false") == 0 ? 0 : -1;
	}
	return len + k + 1;
}

static size_t
on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * nmemb;

	if (x->r->body.len + len > ERRBODY_MAX) {
		x->big = 1;
		return 0;
	}
	buf_append(&x->r->body, p, len);
	return len;
}

/*
 * The time limits of a streamed create: the body may take long, but not
 * stall for h->timeout seconds; once it is sent the answer may take
 * h->json_timeout seconds, as a JSON request's would (libcurl's own speed
 * limit averages over the fast upload and would wait much longer).
 */
static int
on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
	struct xfer *x = arg;
	double now = qtime_mono();
	long limit;

	if (x->last == 0 || ulnow != x->ul || dlnow != x->dl) {
		x->ul = ulnow;
		x->dl = dlnow;
		x->last = now;
		return 0;
	}
	limit = ulnow >= x->b->size ? x->h->json_timeout : x->h->timeout;
	if (now - x->last < limit)
		return 0;
	x->stalled = (int)limit;
	return 1;
}

/* One try of the streamed create; returns libcurl's result. */
static CURLcode
once(struct http *h, const char *url, struct xfer *x, int *sent)
{
	CURL *c = h->curl;
	struct curl_slist *hl = NULL, *s;
	char ebuf[CURL_ERROR_SIZE] = "";
	long rsize = 0;
	CURLcode cc;

	for (s = h->hdrs; s != NULL; s = s->next)
		if ((hl = curl_slist_append(hl, s->data)) == NULL)
			qb_die(QB_EX_OSERR, "out of memory");
	if ((s = curl_slist_append(hl, "Content-Type: application/json")) == NULL ||
	    (s = curl_slist_append(s, "Accept: application/json")) == NULL ||
	    (s = curl_slist_append(s, "Expect:")) == NULL)
		qb_die(QB_EX_OSERR, "out of memory");
	hl = s;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "qb/" QB_VERSION);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(c, CURLOPT_READDATA, x->b);
	curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
	curl_easy_setopt(c, CURLOPT_SEEKDATA, x->b);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, x->b->size);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &rsize);
	*sent = rsize > 0 || x->b->sent > 0;
	if (x->stalled > 0)
		snprintf(h->err, sizeof(h->err), "%s after %d s of silence",
		    x->b->sent >= x->b->size ? "no answer" : "upload stalled",
		    x->stalled);
	else if (cc != CURLE_OK)
		snprintf(h->err, sizeof(h->err), "%s", ebuf[0] != '\0' ? ebuf :
		    curl_easy_strerror(cc));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hl);
	return cc;
}

/* h->err: "POST /v1/messages/batches: what happened". */
static void
describe(struct http *h, const struct xfer *x)
{
	const struct http_resp *r = x->r;
	char why[400], *p;
	const char *m = NULL, *t = NULL;
	yajl_val v = NULL, e;

	if (x->b->err > 0)
		snprintf(why, sizeof(why), "read error: %s", strerror(x->b->err));
	else if (x->b->err < 0)
		snprintf(why, sizeof(why), "the file changed while it was sent");
	else if (x->big)
		snprintf(why, sizeof(why), "answer over %zu bytes", ERRBODY_MAX);
	else if (r->cc != CURLE_OK && r->status < 400)
		snprintf(why, sizeof(why), "%.300s", h->err);
	else {
		/* {"type":"error","error":{"type":...,"message":...}} (§2.7) */
		if (r->body.len > 0 && r->body.len < 65536)
			v = yajl_tree_parse(r->body.p, NULL, 0);
		e = json_get(v, "error");
		m = json_str(e, "message");
		t = json_str(e, "type");
		/* Cloudflare may say 413 in HTML before the API sees it. */
		if (r->status == 413)
			m = "batch too large (at most 256 MB and 100,000 "
			    "requests, PROVIDERS.md §2.2)";
		snprintf(why, sizeof(why), "HTTP %ld%s%.300s%s%.40s%s", r->status,
		    m != NULL ? ": " : "", m != NULL ? m : "",
		    t != NULL ? " (" : "", t != NULL ? t : "", t != NULL ? ")" : "");
		yajl_tree_free(v);
	}
	snprintf(h->err, sizeof(h->err), "POST " BATCHES ": %.360s%s%.100s%s", why,
	    r->request_id[0] != '\0' ? " (request " : "", r->request_id,
	    r->request_id[0] != '\0' ? ")" : "");
	while (h->secret != NULL && (p = strstr(h->err, h->secret)) != NULL)
		memset(p, '*', strlen(h->secret));
}

/*
 * POST the body b to create a batch, retrying as http_json does a create:
 * after a 429 or 5xx answer (529 overloaded_error among them) or a
 * connection failure before anything was sent, never after a failure
 * once the request went out (r->unknown).
 */
static enum http_class
create(struct http *h, struct body *b, struct http_resp *r)
{
	struct buf url = BUF_INIT;
	struct xfer x;
	enum http_class cls;
	double delay, top;
	int attempt, retry, sent;

	buf_printf(&url, "%s%s", h->base, BATCHES);
	for (attempt = 0;; attempt++) {
		http_resp_free(r);
		memset(&x, 0, sizeof(x));
		x.r = r;
		x.b = b;
		x.h = h;
		h->err[0] = '\0';
		if (rewind_body(b) != 0) {
			b->err = errno;
			r->cc = CURLE_READ_ERROR;
			sent = 0;
		} else
			r->cc = once(h, url.p, &x, &sent);
		r->tries = attempt + 1;
		/* An answer, then a broken connection (a 413 cutting the
		 * upload short): the answer says what happened. */
		cls = r->cc != CURLE_OK && r->status >= 400 ?
		    http_class(CURLE_OK, r->status) : http_class(r->cc, r->status);
		if (b->err != 0)
			cls = HTTP_PERM;
		qb_note(2, "POST %s -> %ld%s%s", url.p, r->status,
		    r->request_id[0] != '\0' ? " " : "", r->request_id);
		if (cls == HTTP_OK)
			break;
		describe(h, &x);
		retry = cls == HTTP_TEMP;
		if (r->should_retry == 0 || (r->should_retry == 1 &&
		    r->status >= 400))
			retry = r->should_retry;
		if (b->err != 0)
			retry = 0;
		else if (r->cc != CURLE_OK && r->status < 400 && sent) {
			r->unknown = 1;
			retry = 0;
			snprintf(h->err + strlen(h->err), sizeof(h->err) -
			    strlen(h->err), "; outcome unknown: the request was sent");
		} else if (r->status > 0)
			retry = retry && (r->status == 429 || r->status >= 500);
		if (!retry || attempt >= h->retries)
			break;
		delay = http_retry_after(r->retry_after_ms, r->retry_after,
		    time(NULL));
		if (delay > RETRY_AFTER_MAX)
			break;
		if (delay <= 0) {
			/* Full jitter, as http.c: xorshift64* on h->rng. */
			top = fmin(h->backoff * pow(2, attempt), h->cap);
			h->rng ^= h->rng >> 12;
			h->rng ^= h->rng << 25;
			h->rng ^= h->rng >> 27;
			delay = top * ((h->rng * 2685821657736338717ULL >> 11) /
			    9007199254740992.0);
		}
		if (h->deadline > 0 && qtime_mono() + delay >= h->deadline)
			break;
		qb_note(1, "%s; retry %d of %d in %.2f s", h->err, attempt + 1,
		    h->retries, delay);
		qtime_sleep(delay);
	}
	h->status = r->status;
	buf_free(&url);
	return cls;
}

static int
an_submit(struct http *h, const struct provider_submit *s, yajl_val *batch,
    int *unknown)
{
	struct http_resp r;
	struct body *b;
	enum http_class c;
	long long nreq;
	int rc = 0, e = 0;

	*batch = NULL;
	*unknown = 0;
	h->status = 0;
	b = xmalloc(sizeof(*b));
	memset(b, 0, sizeof(*b));
	if ((b->fp = fopen(s->path, "r")) == NULL || (e = scan(b, &nreq)) != 0) {
		snprintf(h->err, sizeof(h->err), "%s: %s", s->path,
		    strerror(b->fp == NULL ? errno : e));
		rc = QB_EX_NOINPUT;
	} else if (nreq == 0) {
		snprintf(h->err, sizeof(h->err), "%s: no requests", s->path);
		rc = QB_EX_DATAERR;
	}
	if (rc != 0) {
		if (b->fp != NULL)
			fclose(b->fp);
		free(b);
		return rc;
	}
	http_resp_init(&r);
	c = create(h, b, &r);
	if (c != HTTP_OK) {
		*unknown = r.unknown;
		rc = b->err > 0 ? QB_EX_IOERR : http_exit(c);
	} else if ((*batch = provider_answer(h, "POST " BATCHES, &r.body,
	    "id")) == NULL) {
		/* It said yes, but not to what: the batch may well exist. */
		*unknown = 1;
		rc = QB_EX_PROTOCOL;
	}
	http_resp_free(&r);
	fclose(b->fp);
	free(b);
	return rc;
}

/* GET or POST path for a batch object. */
static int
batchcall(struct http *h, const char *method, const char *id,
    const char *suffix_, yajl_val *batch)
{
	struct http_resp r;
	struct buf path = BUF_INIT;
	enum http_class c;
	int rc = 0;

	*batch = NULL;
	if (provider_safe_id(h, id) != 0)
		return QB_EX_DATAERR;
	buf_printf(&path, BATCHES "/%s%s", id, suffix_);
	http_resp_init(&r);
	c = http_json(h, method, path.p, NULL, 0, 0, &r);
	if (c != HTTP_OK)
		rc = http_exit(c);
	else if ((*batch = provider_answer(h, path.p, &r.body, "id")) == NULL)
		rc = QB_EX_PROTOCOL;
	http_resp_free(&r);
	buf_free(&path);
	return rc;
}

static int
an_get(struct http *h, const char *id, yajl_val *batch)
{
	return batchcall(h, "GET", id, "", batch);
}

static int
an_cancel(struct http *h, const char *id, yajl_val *batch)
{
	return batchcall(h, "POST", id, "/cancel", batch);
}

/*
 * ref is results_url. Only its path and query are used, against the base
 * URL: the key goes to no host but the configured one, and a base URL
 * that points at a proxy keeps doing so.
 */
static int
an_fetch(struct http *h, const char *ref, FILE *out)
{
	struct http_resp r;
	struct buf path = BUF_INIT;
	enum http_class c;
	CURLU *u;
	char *p = NULL, *q = NULL;
	int rc;

	if ((u = curl_url()) == NULL)
		qb_die(QB_EX_OSERR, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, ref, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &p, 0) != CURLUE_OK ||
	    strncmp(p, "/v1/", 4) != 0) {
		snprintf(h->err, sizeof(h->err), "results_url \"%.200s\" is not "
		    "an API URL", ref);
		h->status = 0;
		curl_free(p);
		curl_url_cleanup(u);
		return QB_EX_PROTOCOL;
	}
	buf_puts(&path, p);
	if (curl_url_get(u, CURLUPART_QUERY, &q, 0) == CURLUE_OK && q != NULL)
		buf_printf(&path, "?%s", q);
	curl_free(p);
	curl_free(q);
	curl_url_cleanup(u);
	http_resp_init(&r);
	c = http_download(h, path.p, out, &r);
	rc = c != HTTP_OK && r.cc == CURLE_WRITE_ERROR ? QB_EX_IOERR :
	    http_exit(c);
	http_resp_free(&r);
	buf_free(&path);
	return rc;
}

/* The MessageBatch timestamps (§2.3), in the order they happen. */
static const char *const an_times[] = {
	"created_at", "expires_at", "cancel_initiated_at", "ended_at",
	"archived_at", NULL
};

static int
an_job(yajl_val b, struct provider_job *j, char *err, size_t errlen)
{
	static const char *const cn[] = { "processing", "succeeded",
	    "errored", "canceled", "expired", NULL };
	long long n[5], t;
	const char *const *k;
	const char *s;
	yajl_val rc;
	int i;

	memset(j, 0, sizeof(*j));
	j->id = json_str(b, "id");
	j->status = json_str(b, "processing_status");
	if (j->id == NULL || j->status == NULL) {
		snprintf(err, errlen, "batch object without %s",
		    j->id == NULL ? "\"id\"" : "\"processing_status\"");
		return -1;
	}
	j->ended = strcmp(j->status, "ended") == 0;
	/*
	 * The five counts sum to the batch size; all but processing stay 0
	 * until the batch ends (§2.4). completed is what succeeded, failed
	 * what errored; canceled and expired are neither, as with OpenAI.
	 */
	rc = json_get(b, "request_counts");
	for (i = 0; cn[i] != NULL && json_int(rc, cn[i], &n[i]) == 0; i++)
		continue;
	if (cn[i] == NULL) {
		j->has_counts = 1;
		j->total = n[0] + n[1] + n[2] + n[3] + n[4];
		j->completed = n[1];
		j->failed = n[2];
	}
	/*
	 * RFC 3339 with microseconds, kept as given like Azure's (§1.5);
	 * null or absent when not yet (§2.3).
	 */
	for (k = an_times; *k != NULL && j->ntime < JOB_TIMES; k++) {
		if ((s = json_str(b, *k)) == NULL || rfc3339_parse(s, &t) != 0)
			continue;
		if (strlen(s) < sizeof(j->time[0].val))
			snprintf(j->time[j->ntime].val, sizeof(j->time[0].val),
			    "%s", s);
		else
			provider_time(t, j->time[j->ntime].val,
			    sizeof(j->time[0].val));
		j->time[j->ntime++].key = *k;
	}
	/* One JSONL file holds every kind of result (§2.5). */
	if (j->ended && (s = json_str(b, "results_url")) != NULL && *s != '\0') {
		j->result[0].kind = "output";
		j->result[0].ref = s;
		j->nresult = 1;
	}
	return 0;
}

/*
 * A MessageBatch has no metadata, so the batch of an unrecorded create
 * cannot be told by the file's digest. The list (newest first, §2.5) can
 * only say whether any batch the ledger does not hold was made since
 * then: if none was, there is no such batch, and the file may be
 * submitted; if some were, they are named in h->err and the caller must
 * not submit blindly (QB_EX_UNAVAILABLE).
 */
static int
an_find(struct http *h, const char *sha256, long long since,
    int (*known)(void *, const char *), void *arg, yajl_val *batch)
{
	struct http_resp r;
	struct buf path = BUF_INIT, ids = BUF_INIT;
	enum http_class c;
	yajl_val page = NULL, data, b;
	const char *id, *s;
	char *after = NULL;
	long long t;
	size_t i;
	int rc = 0, more = 1, pages, nfound = 0;

	*batch = NULL;
	http_resp_init(&r);
	for (pages = 0; more && pages < 1000; pages++) {
		buf_reset(&path);
		buf_printf(&path, BATCHES "?limit=%d", LIST_LIMIT);
		if (after != NULL)
			buf_printf(&path, "&after_id=%s", after);
		if ((c = http_json(h, "GET", path.p, NULL, 0, 0, &r)) != HTTP_OK) {
			rc = http_exit(c);
			break;
		}
		yajl_tree_free(page);
		page = r.body.len > 0 ? yajl_tree_parse(r.body.p, NULL, 0) : NULL;
		if (!YAJL_IS_ARRAY(data = json_get(page, "data"))) {
			snprintf(h->err, sizeof(h->err), "GET " BATCHES ": answer "
			    "is not a list");
			rc = QB_EX_PROTOCOL;
			break;
		}
		more = json_true(page, "has_more") && data->u.array.len > 0;
		for (i = 0; i < data->u.array.len; i++) {
			b = data->u.array.values[i];
			if ((id = json_str(b, "id")) == NULL)
				continue;
			if ((s = json_str(b, "created_at")) != NULL &&
			    rfc3339_parse(s, &t) == 0 && t < since) {
				more = 0;
				break;
			}
			if (known != NULL && known(arg, id))
				continue;
			if (nfound++ < 5)
				buf_printf(&ids, "%s%s", nfound > 1 ? ", " : "", id);
		}
		id = json_str(page, "last_id");
		if (more && (id == NULL || provider_safe_id(h, id) != 0 ||
		    (after != NULL && strcmp(after, id) == 0)))
			more = 0;
		if (more) {
			free(after);
			after = xstrdup(id);
		}
	}
	if (rc == 0 && nfound > 0) {
		snprintf(h->err, sizeof(h->err), "Anthropic batches carry no "
		    "digest; %d batch%s made since then, not in the ledger, may "
		    "be this file's: %s%s; add its job record by hand or drop "
		    "the intent line for %.12s...", nfound, nfound > 1 ? "es" : "",
		    ids.p, nfound > 5 ? ", ..." : "", sha256);
		h->status = 0;
		rc = QB_EX_UNAVAILABLE;
	}
	yajl_tree_free(page);
	free(after);
	buf_free(&ids);
	buf_free(&path);
	http_resp_free(&r);
	return rc;
}

const struct provider provider_anthropic = {
	.name = "anthropic",
	.line_format = PROVIDER_LINE_ANTHROPIC,
	/* 100,000 requests and 256 MB per batch: PROVIDERS.md §2.2, §2.6. */
	.max_requests = 100000,
	.max_bytes = 256000000LL,
	.limits_src = "PROVIDERS.md §2.2, §2.6",
	.endpoint = "/v1/messages",
	.key_env = "ANTHROPIC_API_KEY",
	.base_env = "ANTHROPIC_BASE_URL",
	.base_default = "https://api.anthropic.com",	/* paths hold /v1 */
	.auth = an_auth,
	.submit = an_submit,
	.get = an_get,
	.cancel = an_cancel,
	.fetch = an_fetch,
	.job = an_job,
	.find = an_find,
};
