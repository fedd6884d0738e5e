/*
 * anthropic.c: the Anthropic Message Batches API (qb-providers(7),
 * ANTHROPIC) behind struct provider_ops. There is no upload: create
 * carries the requests in its JSON body, which is streamed from the
 * packed file ({"requests":[, the file's lines joined by commas, ]}) and
 * never held in memory. Batches are read and cancelled, and their
 * results_url streamed into a file.
 * Paths carry the version (/v1/...); the base URL has none.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/exits.h"
#include "base/xmem.h"
#include "json/jtree.h"
#include "provider/provimpl.h"

#define BATCHES		"/v1/messages/batches"

static const char prefix[] = "{\"requests\":[\n";
static const char suffix[] = "\n]}";

/*
 * The create body, read from the packed file by libcurl (through
 * http_send, which checks that its length stays what scan() found). Every
 * byte of the file goes out as it is; a ',' goes before the first
 * non-blank byte of each line that has one, except the first such line.
 * Blank bytes (JSON whitespace, line ends included) need no care.
 */
struct body {
	FILE		*fp;
	size_t		 size;		/* Content-Length, from scan() */
	const char	*pend;		/* prefix, comma or suffix: goes out first */
	int		 any;		/* a request line has begun */
	int		 inreq;		/* inside a line that has begun */
	int		 eof;
	char		 in[65536];
	size_t		 ilen, ipos;
};

static int
isblank_json(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* x-api-key and the API version (qb-providers(7), ANTHROPIC "Headers"). */
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
	size_t n, i, bytes = 0;
	int inreq = 0;

	*nreq = 0;
	while ((n = fread(b->in, 1, sizeof(b->in), b->fp)) > 0)
		for (bytes += n, i = 0; i < n; i++) {
			if (b->in[i] == '\n')
				inreq = 0;
			else if (!inreq && !isblank_json((unsigned char)b->in[i])) {
				inreq = 1;
				++*nreq;
			}
		}
	if (ferror(b->fp))
		return errno != 0 ? errno : EIO;
	b->size = strlen(prefix) + bytes + (size_t)(*nreq > 0 ? *nreq - 1 : 0) +
	    strlen(suffix);
	return 0;
}

/* Start the body again from its first byte; 0 or errno. */
static int
rewind_body(void *arg)
{
	struct body *b = arg;

	b->pend = prefix;
	b->any = b->inreq = b->eof = 0;
	b->ilen = b->ipos = 0;
	return fseeko(b->fp, 0, SEEK_SET) == 0 ? 0 : errno;
}

static size_t
on_read(char *dst, size_t size, size_t nitems, void *arg)
{
	struct body *b = arg;
	size_t room = size * nitems, n = 0, k;
	const char *nl;

	while (n < room) {
		if (*b->pend != '\0') {
			dst[n++] = *b->pend++;
			continue;
		}
		if (b->eof)
			break;
		if (b->ipos == b->ilen) {
			b->ipos = 0;
			if ((b->ilen = fread(b->in, 1, sizeof(b->in), b->fp)) == 0) {
				if (ferror(b->fp))	/* errno says why */
					return CURL_READFUNC_ABORT;
				b->pend = suffix;
				b->eof = 1;
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
		} else if (!isblank_json((unsigned char)b->in[b->ipos])) {
			/* A request line begins: a comma first, but not
			 * before the first. */
			b->pend = b->any ? "," : "";
			b->inreq = b->any = 1;
		} else
			dst[n++] = b->in[b->ipos++];
	}
	return n;
}

/*
 * POST the file's requests to create a batch, retried as http_send
 * retries a create: after a 429 or 5xx answer (529 overloaded_error among
 * them) or a connection failure before anything was sent, never after a
 * failure once the request went out (*unknown).
 */
static int
an_submit(struct http *h, const struct provider_submit *s, yajl_val *batch,
    int *unknown)
{
	struct http_body hb = { NULL, 0, on_read, NULL, rewind_body };
	struct http_resp r;
	struct body *b;
	enum http_class c;
	long long nreq = 0;
	int rc = 0, e = 0;

	*batch = NULL;
	*unknown = 0;
	h->status = 0;
	hb.ctx = b = xmalloc(sizeof(*b));
	memset(b, 0, sizeof(*b));
	if ((b->fp = fopen(s->path, "r")) == NULL || (e = scan(b, &nreq)) != 0) {
		snprintf(h->err, sizeof(h->err), "%s: %s", s->path,
		    strerror(b->fp == NULL ? errno : e));
		rc = QB_EX_NOINPUT;
	} else if (nreq == 0) {
		snprintf(h->err, sizeof(h->err), "%s: no requests", s->path);
		rc = QB_EX_DATAERR;
	}
	http_resp_init(&r);
	hb.len = b->size;
	if (rc == 0 &&
	    (c = http_send(h, "POST", BATCHES, &hb, 1, &r)) != HTTP_OK) {
		*unknown = r.unknown;
		rc = r.cc == CURLE_READ_ERROR ? QB_EX_IOERR : http_exitcode(c);
		/* Cloudflare may say 413 in HTML before the API sees it. */
		if (r.status == 413)
			snprintf(h->err, sizeof(h->err), "POST " BATCHES ": HTTP "
			    "413: batch too large (at most 256 MB and 100,000 "
			    "requests: qb-providers(7))%s%.100s%s",
			    r.request_id[0] != '\0' ? " (request " : "",
			    r.request_id, r.request_id[0] != '\0' ? ")" : "");
	} else if (rc == 0 && (*batch = provider_answer(h, "POST " BATCHES,
	    &r.body, "id")) == NULL) {
		/* It said yes, but not to what: the batch may well exist. */
		*unknown = 1;
		rc = QB_EX_PROTOCOL;
	}
	http_resp_free(&r);
	if (b->fp != NULL)
		fclose(b->fp);
	free(b);
	return rc;
}

static int
an_get(struct http *h, const char *id, yajl_val *batch)
{
	return provider_batch_call(h, "GET", BATCHES, id, "", batch);
}

static int
an_cancel(struct http *h, const char *id, yajl_val *batch)
{
	return provider_batch_call(h, "POST", BATCHES, id, "/cancel", batch);
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
	enum http_class c;
	const char *p;
	int rc;

	if ((p = strstr(ref, "://")) != NULL)
		p += 3 + strcspn(p + 3, "/?#");
	if (p == NULL || strncmp(p, "/v1/", 4) != 0) {
		snprintf(h->err, sizeof(h->err), "results_url \"%.200s\" is not "
		    "an API URL", ref);
		h->status = 0;
		return QB_EX_PROTOCOL;
	}
	http_resp_init(&r);
	c = http_download(h, p, out, &r);
	rc = c != HTTP_OK && r.cc == CURLE_WRITE_ERROR ? QB_EX_IOERR :
	    http_exitcode(c);
	http_resp_free(&r);
	return rc;
}

/*
 * The MessageBatch timestamps, in the order they happen (qb-providers(7),
 * ANTHROPIC "The message batch").
 */
static const char *const an_times[] = {
	"created_at", "expires_at", "cancel_initiated_at", "ended_at",
	"archived_at", NULL
};

static int
an_job(yajl_val b, struct provider_job *j, char *err, size_t errlen)
{
	static const char *const cn[] = { "processing", "succeeded",
	    "errored", "canceled", "expired", NULL };
	long long n[5];
	const char *s;
	yajl_val rc;
	int i;

	if (provider_job_init(b, j, "processing_status", err, errlen) != 0)
		return -1;
	j->ended = strcmp(j->status, "ended") == 0;
	/*
	 * The five counts sum to the batch size; all but processing stay 0
	 * until the batch ends (qb-providers(7), ANTHROPIC "Status and
	 * counts"). completed is what succeeded, failed what errored;
	 * canceled and expired are neither, as with OpenAI.
	 */
	rc = jtree_get(b, "request_counts");
	for (i = 0; cn[i] != NULL && jtree_int(rc, cn[i], &n[i]) == 0; i++)
		continue;
	if (cn[i] == NULL) {
		j->has_counts = 1;
		j->total = n[0] + n[1] + n[2] + n[3] + n[4];
		j->completed = n[1];
		j->failed = n[2];
	}
	/*
	 * RFC 3339 with microseconds, kept as given like Azure's; null or
	 * absent when not yet (ANTHROPIC "The message batch").
	 */
	provider_job_times(b, j, an_times);
	/* One JSONL file holds every kind of result (ANTHROPIC "Results"). */
	if (j->ended && (s = jtree_str(b, "results_url")) != NULL && *s != '\0') {
		j->result[0].kind = "output";
		j->result[0].ref = s;
		j->nresult = 1;
	}
	return 0;
}

/*
 * A MessageBatch has no metadata, so the batch of an unrecorded create
 * cannot be told by the file's digest. The list (newest first) can
 * only say whether any batch the ledger does not hold was made since
 * then: if none was, there is no such batch, and the file may be
 * submitted; if some were, they are named in h->err and the caller must
 * not submit blindly (QB_EX_UNAVAILABLE).
 */
/* What an_find counts: batches of the time the ledger does not hold. */
struct unclaimed {
	int		(*known)(void *, const char *);
	void		*arg;
	struct buf	 ids;		/* the first five */
	int		 n;
};

/* provider_walk visitor. */
static int
unclaimed(void *arg, yajl_val data, size_t i)
{
	struct unclaimed *u = arg;
	const char *id = jtree_str(data->u.array.values[i], "id");

	if (u->known == NULL || !u->known(u->arg, id))
		if (u->n++ < 5)
			buf_printf(&u->ids, "%s%s", u->n > 1 ? ", " : "", id);
	return 0;
}

static int
an_find(struct http *h, const char *sha256, long long since,
    int (*known)(void *, const char *), void *arg, yajl_val *batch)
{
	struct unclaimed u = { known, arg, BUF_INIT, 0 };
	int rc;

	*batch = NULL;
	rc = provider_walk(h, BATCHES, "after_id", NULL, since, unclaimed, &u);
	if (rc == 0 && u.n > 0) {
		snprintf(h->err, sizeof(h->err), "Anthropic batches carry no "
		    "digest; %d batch%s made from an hour before the intent on, "
		    "not in the ledger, may be this file's: %s%s; add its job "
		    "record by hand or drop the intent line for %.12s...", u.n,
		    u.n > 1 ? "es" : "", u.ids.p, u.n > 5 ? ", ..." : "", sha256);
		h->status = 0;
		rc = QB_EX_UNAVAILABLE;
	}
	buf_free(&u.ids);
	return rc;
}

const struct provider_ops anthropic_ops = {
	.name = "anthropic",
	.auth = an_auth,
	.submit = an_submit,
	.get = an_get,
	.cancel = an_cancel,
	.fetch = an_fetch,
	.job = an_job,
	.find = an_find,
};
