/*
 * openai.c: the OpenAI Batch API (qb-providers(7), OPENAI) behind struct
 * provider_ops: upload a file with purpose=batch, create a batch for it,
 * read batches, cancel them and stream their output and error files. Any
 * OpenAI compatible server works through the base URL. Paths are relative
 * to the base URL, which holds the version (…/v1).
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yajl/yajl_gen.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jtree.h"
#include "provider/openai.h"
#include "provider/provimpl.h"

/* Metadata values are at most 512 characters (qb-providers(7), OPENAI
 * "Create"). */
#define META_VALUE_MAX 512

/* A malloc'd header line: prefix then value. */
static char *
hdr(const char *prefix, const char *value)
{
	struct buf b = BUF_INIT;

	buf_printf(&b, "%s%s", prefix, value);
	return b.p;
}

/* Put query q (NULL or "": none) on the path in b. */
static void
qpath(struct buf *b, const char *q)
{
	if (q != NULL && *q != '\0')
		buf_printf(b, "%c%s",
		    b->p != NULL && strchr(b->p, '?') != NULL ? '&' : '?', q);
}

/* Authorization, plus organisation and project when set (OPENAI "Headers"). */
static int
oa_auth(const char *key, char **hdrs, int n)
{
	const char *s;
	int i = 0;

	if (n < 4)
		return 0;
	hdrs[i++] = hdr("Authorization: Bearer ", key);
	if ((s = getenv("OPENAI_ORG_ID")) != NULL && *s != '\0')
		hdrs[i++] = hdr("OpenAI-Organization: ", s);
	if ((s = getenv("OPENAI_PROJECT_ID")) != NULL && *s != '\0')
		hdrs[i++] = hdr("OpenAI-Project: ", s);
	hdrs[i] = NULL;
	return i;
}

/*
 * Create the batch for uploaded file fid (POST /batches, never retried
 * once sent). Returns as openai_submit_q; on a refusal, fresh says whether
 * fid was uploaded by this call and is to be deleted.
 */
static int
create(struct http *h, const struct provider_submit *s, const char *fid,
    int fresh, yajl_val *batch, int *unknown, const char *q, long long ttl)
{
	struct http_resp r;
	struct buf path = BUF_INIT;
	enum http_class c;
	yajl_gen g;
	const unsigned char *body;
	const char *base;
	size_t blen, n;
	int rc = 0;

	base = strrchr(s->path, '/');
	base = base != NULL ? base + 1 : s->path;
	n = strlen(base);
	if (n > META_VALUE_MAX) {
		n = META_VALUE_MAX;
		while (n > 0 && ((unsigned char)base[n] & 0xc0) == 0x80)
			n--;	/* do not split a UTF-8 sequence */
	}
	g = jout_new();
	jout_open(g);
	jout_kstr(g, "input_file_id", fid);
	jout_kstr(g, "endpoint", s->endpoint);
	jout_kstr(g, "completion_window", "24h");
	jout_key(g, "metadata");
	jout_open(g);
	jout_kstr(g, "qb_sha256", s->sha256);
	jout_key(g, "qb_file");
	jout_strn(g, base, n);
	jout_close(g);
	if (ttl > 0) {
		jout_key(g, "output_expires_after");
		jout_open(g);
		jout_kstr(g, "anchor", "created_at");
		jout_kint(g, "seconds", ttl);
		jout_close(g);
	}
	jout_close(g);
	yajl_gen_get_buf(g, &body, &blen);
	http_resp_init(&r);
	buf_puts(&path, "/batches");
	qpath(&path, q);
	c = http_json(h, "POST", path.p, (const char *)body, blen, 1, &r);
	yajl_gen_free(g);
	if (c != HTTP_OK) {
		*unknown = r.unknown;
		rc = http_exitcode(c);
		if (fresh && (c == HTTP_PERM || c == HTTP_AUTH)) {
			/* Nothing was made; do not leave the upload behind. */
			char err[sizeof(h->err)];
			long st = h->status;

			memcpy(err, h->err, sizeof(err));
			buf_reset(&path);
			buf_printf(&path, "/files/%s", fid);
			qpath(&path, q);
			if (provider_safe_id(h, fid) == 0)
				http_json(h, "DELETE", path.p, NULL, 0, 0, &r);
			memcpy(h->err, err, sizeof(err));
			h->status = st;
		}
	} else if ((*batch = provider_answer(h, "POST /batches", &r.body,
	    "id")) == NULL) {
		/* It said yes, but not to what: the batch may well exist. */
		*unknown = 1;
		rc = QB_EX_PROTOCOL;
	}
	buf_free(&path);
	http_resp_free(&r);
	return rc;
}

int
openai_submit_q(struct http *h, const struct provider_submit *s,
    yajl_val *batch, int *unknown, const char *q, long long ttl)
{
	/* Azure's spelling of the nested fields; OpenAI's is [anchor]
	 * (qb-providers(7), OPENAI "Files"). */
	const char *fields[] = { "purpose", "batch", "expires_after.anchor",
	    "created_at", "expires_after.seconds", NULL, NULL };
	char secs[24];
	struct http_resp r;
	struct buf path = BUF_INIT;
	enum http_class c;
	yajl_val f;
	int rc;

	*batch = NULL;
	*unknown = 0;
	if (s->input_file_id != NULL) {
		/*
		 * The same bytes are uploaded already (a batch that failed
		 * token_limit_exceeded keeps its input file: OPENAI
		 * "Limits"). A
		 * refusal other than of the key (the file was deleted or
		 * expired) falls through to a fresh upload.
		 */
		rc = create(h, s, s->input_file_id, 0, batch, unknown, q, ttl);
		if (rc == 0)
			qb_note(1, "%s: created from file %s, uploaded before",
			    s->path, s->input_file_id);
		if (rc != QB_EX_UNAVAILABLE || *unknown || h->status < 400 ||
		    h->status > 499)
			return rc;
		qb_note(1, "%s: file %s not taken again (%s); uploading it",
		    s->path, s->input_file_id, h->err);
	}
	if (ttl > 0) {
		snprintf(secs, sizeof(secs), "%lld", ttl);
		fields[5] = secs;
	} else
		fields[2] = NULL;
	http_resp_init(&r);
	buf_puts(&path, "/files");
	qpath(&path, q);
	c = http_upload(h, path.p, fields, s->path, &r);
	buf_free(&path);
	if (c != HTTP_OK) {
		http_resp_free(&r);
		return http_exitcode(c);
	}
	f = provider_answer(h, "POST /files", &r.body, "id");
	http_resp_free(&r);
	if (f == NULL)
		return QB_EX_PROTOCOL;
	rc = create(h, s, jtree_str(f, "id"), 1, batch, unknown, q, ttl);
	yajl_tree_free(f);
	return rc;
}

/* GET or POST /batches/id suffix, with query q. */
static int
oa_call(struct http *h, const char *method, const char *id,
    const char *suffix, yajl_val *batch, const char *q)
{
	struct buf sfx = BUF_INIT;
	int rc;

	buf_puts(&sfx, suffix);
	qpath(&sfx, q);
	rc = provider_batch_call(h, method, "/batches", id,
	    sfx.p != NULL ? sfx.p : "", batch);
	buf_free(&sfx);
	return rc;
}

int
openai_get_q(struct http *h, const char *id, yajl_val *batch, const char *q)
{
	return oa_call(h, "GET", id, "", batch, q);
}

int
openai_cancel_q(struct http *h, const char *id, yajl_val *batch, const char *q)
{
	return oa_call(h, "POST", id, "/cancel", batch, q);
}

int
openai_fetch_q(struct http *h, const char *ref, FILE *out, const char *q)
{
	struct http_resp r;
	struct buf path = BUF_INIT;
	enum http_class c;
	int rc;

	if (provider_safe_id(h, ref) != 0)
		return QB_EX_DATAERR;
	buf_printf(&path, "/files/%s/content", ref);
	qpath(&path, q);
	http_resp_init(&r);
	c = http_download(h, path.p, out, &r);
	rc = c != HTTP_OK && r.cc == CURLE_WRITE_ERROR ? QB_EX_IOERR :
	    http_exitcode(c);
	http_resp_free(&r);
	buf_free(&path);
	return rc;
}

/* The Batch object's timestamps (OPENAI "The batch object"), in order. */
static const char *const oa_times[] = {
	"created_at", "in_progress_at", "expires_at", "finalizing_at",
	"completed_at", "failed_at", "expired_at", "cancelling_at",
	"cancelled_at", NULL
};

/*
 * The terminal statuses (qb-providers(7), OPENAI "Status"), compared
 * without case: Azure says "Completed" (AZURE OPENAI), Together, another
 * host of this API, "COMPLETED"; "canceled" is Together's.
 */
static const char *const oa_ended[] = {
	"completed", "failed", "expired", "cancelled", "canceled", NULL
};

int
openai_job(yajl_val b, struct provider_job *j, char *err, size_t errlen)
{
	const char *const *s;
	const char *id;
	yajl_val rc, e;

	if (provider_job_init(b, j, "status", err, errlen) != 0)
		return -1;
	for (s = oa_ended; *s != NULL; s++)
		if (strcasecmp(*s, j->status) == 0)
			j->ended = 1;
	j->input_file_id = jtree_str(b, "input_file_id");
	rc = jtree_get(b, "request_counts");
	if (YAJL_IS_OBJECT(rc) && jtree_int(rc, "total", &j->total) == 0 &&
	    jtree_int(rc, "completed", &j->completed) == 0 &&
	    jtree_int(rc, "failed", &j->failed) == 0)
		j->has_counts = 1;
	e = jtree_get(jtree_get(b, "errors"), "data");
	if (YAJL_IS_ARRAY(e))
		j->errors = e;
	/* Unix seconds; RFC 3339 strings from Azure's older API. */
	provider_job_times(b, j, oa_times);
	/* null or "" means there is no such file (OPENAI "Output and
	 * error files"): never fetched. */
	if ((id = jtree_str(b, "output_file_id")) != NULL && *id != '\0') {
		j->result[j->nresult].kind = "output";
		j->result[j->nresult++].ref = id;
	}
	if ((id = jtree_str(b, "error_file_id")) != NULL && *id != '\0') {
		j->result[j->nresult].kind = "errors";
		j->result[j->nresult++].ref = id;
	}
	return 0;
}

/*
 * Pages of GET /batches (qb-providers(7), OPENAI "Retrieve, cancel,
 * list"), as the SDK pages them: after= the last
 * item's id, until has_more is false. The API lists the newest first, so
 * the first batch created before since ends the search.
 */
/* What openai_find_q looks for, and what it found. */
struct seek {
	const char	*sha256;
	int		(*known)(void *, const char *);
	void		*arg;
	yajl_val	 batch;
};

/* provider_walk visitor: the first batch with our digest the ledger lacks. */
static int
seek(void *arg, yajl_val data, size_t i)
{
	struct seek *k = arg;
	yajl_val b = data->u.array.values[i];
	const char *md = jtree_str(jtree_get(b, "metadata"), "qb_sha256");

	if (md == NULL || strcmp(md, k->sha256) != 0 ||
	    (k->known != NULL && k->known(k->arg, jtree_str(b, "id"))))
		return 0;
	k->batch = b;
	data->u.array.values[i] = NULL;	/* the page is freed without it */
	return 1;
}

int
openai_find_q(struct http *h, const char *sha256, long long since,
    int (*known)(void *, const char *), void *arg, yajl_val *batch,
    const char *q)
{
	struct seek k = { sha256, known, arg, NULL };
	int rc;

	rc = provider_walk(h, "/batches", "after", q, since, seek, &k);
	if (rc != 0) {
		yajl_tree_free(k.batch);
		k.batch = NULL;
	}
	*batch = k.batch;
	return rc;
}

static int
oa_submit(struct http *h, const struct provider_submit *s, yajl_val *batch,
    int *unknown)
{
	return openai_submit_q(h, s, batch, unknown, NULL, 0);
}

static int
oa_get(struct http *h, const char *id, yajl_val *batch)
{
	return openai_get_q(h, id, batch, NULL);
}

static int
oa_cancel(struct http *h, const char *id, yajl_val *batch)
{
	return openai_cancel_q(h, id, batch, NULL);
}

static int
oa_fetch(struct http *h, const char *ref, FILE *out)
{
	return openai_fetch_q(h, ref, out, NULL);
}

static int
oa_find(struct http *h, const char *sha256, long long since,
    int (*known)(void *, const char *), void *arg, yajl_val *batch)
{
	return openai_find_q(h, sha256, since, known, arg, batch, NULL);
}

const struct provider_ops openai_ops = {
	.name = "openai",
	.auth = oa_auth,
	.submit = oa_submit,
	.get = oa_get,
	.cancel = oa_cancel,
	.fetch = oa_fetch,
	.job = openai_job,
	.find = oa_find,
};
