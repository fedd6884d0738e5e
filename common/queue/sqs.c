/*
 * sqs.c: Amazon SQS over the AWS JSON 1.0 protocol: POST / with
 * X-Amz-Target, the queue named by QueueUrl in the body (qb-providers(7),
 * AMAZON SQS "Protocol"). libcurl signs: it hashes CURLOPT_POSTFIELDS and
 * every header we add, so the body stays in memory and we add only
 * signed-safe headers ("Signing"). Batch calls answer 200 with per-entry
 * failures ("Batch calls"): entries that failed on the server's side are
 * sent again alone, never the whole batch. Errors: the code after the
 * last '#' of __type, else the HTTP status ("Errors").
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <yajl/yajl_gen.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/num.h"
#include "base/qtime.h"
#include "base/xmem.h"
#include "http/http.h"
#include "json/jout.h"
#include "json/jtree.h"
#include "queue/sqs.h"

#define CALL_TIMEOUT	30L	/* seconds a call may take beyond its long poll */

static const char *
envs(const char *a, const char *b)
{
	const char *v = getenv(a);

	if ((v == NULL || *v == '\0') && b != NULL)
		v = getenv(b);
	return v != NULL && *v != '\0' ? v : NULL;
}

/* The region of an sqs.REGION.amazonaws.com or REGION.queue.amazonaws.com host. */
static int
hostregion(const char *host, char *out, size_t n)
{
	const char *p, *e;

	if (strncmp(host, "sqs.", 4) == 0 && (e = strchr(host + 4, '.')) != NULL &&
	    strstr(e, ".amazonaws.com") != NULL)
		p = host + 4;
	else if ((e = strstr(host, ".queue.amazonaws.com")) != NULL)
		p = host;
	else
		return -1;
	if ((size_t)(e - p) >= n || e == p)
		return -1;
	snprintf(out, n, "%.*s", (int)(e - p), p);
	return 0;
}

/* Drop the trailing slashes of b. */
static void
trim(struct buf *b)
{
	while (b->len > 0 && b->p[b->len - 1] == '/')
		b->p[--b->len] = '\0';
}

/*
 * "sqs://REGION/ACCOUNT/NAME": the region, and the QueueUrl on ep (else
 * on the regional endpoint), which is then the endpoint too (in *base).
 */
static int
from_spec(struct sqs *q, const char *spec, const char *ep, char *region,
    size_t n, struct buf *base)
{
	const char *r = spec + 6, *s1 = strchr(r, '/');
	const char *s2 = s1 != NULL ? strchr(s1 + 1, '/') : NULL;
	struct buf b = BUF_INIT;

	if (s1 == NULL || s2 == NULL || s1 == r || s2 == s1 + 1 ||
	    s2[1] == '\0' || strchr(s2 + 1, '/') != NULL ||
	    (size_t)(s1 - r) >= n)
		return qb_fail(QB_EX_USAGE, "queue \"%s\": expected "
		    "sqs://REGION/ACCOUNT/NAME", spec);
	snprintf(region, n, "%.*s", (int)(s1 - r), r);
	if (ep == NULL)
		buf_printf(base, "https://sqs.%s.amazonaws.com", region);
	buf_puts(&b, ep != NULL ? ep : base->p);
	trim(&b);
	buf_puts(&b, s1);
	q->url = b.p;
	return 0;
}

/*
 * A queue URL: the QueueUrl itself, the region of its host when it is
 * an AWS one, and (without ep) the endpoint on its scheme, host and port.
 */
static int
from_url(struct sqs *q, const char *spec, const char *ep, char *region,
    size_t n, struct buf *base)
{
	char why[160], *host = NULL, *scheme = NULL, *port = NULL;
	CURLU *u;

	if (http_check_url(spec, why, sizeof(why)) != 0)
		return qb_fail(QB_EX_USAGE, "queue \"%s\": %s", spec, why);
	q->url = xstrdup(spec);
	if ((u = curl_url()) == NULL)
		qb_oom(0);
	curl_url_set(u, CURLUPART_URL, spec, 0);
	curl_url_get(u, CURLUPART_HOST, &host, 0);
	curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	if (host != NULL)
		hostregion(host, region, n);
	if (ep == NULL)
		buf_printf(base, "%s://%s%s%s", scheme, host,
		    port != NULL ? ":" : "", port != NULL ? port : "");
	curl_free(host);
	curl_free(scheme);
	curl_free(port);
	curl_url_cleanup(u);
	return 0;
}

/* The keys from the environment; the session token as a header. */
static int
credentials(struct sqs *q)
{
	struct buf t = BUF_INIT;
	const char *v;

	if ((v = envs("AWS_ACCESS_KEY_ID", NULL)) == NULL)
		return qb_fail(QB_EX_CONFIG, "AWS_ACCESS_KEY_ID is not set");
	q->ak = xstrdup(v);
	if ((v = envs("AWS_SECRET_ACCESS_KEY", NULL)) == NULL)
		return qb_fail(QB_EX_CONFIG, "AWS_SECRET_ACCESS_KEY is not set");
	q->sk = xstrdup(v);
	if ((v = envs("AWS_SESSION_TOKEN", NULL)) != NULL) {
		buf_printf(&t, "X-Amz-Security-Token: %s", v);
		if ((q->token = curl_slist_append(NULL, t.p)) == NULL)
			qb_oom(0);
		memset(t.p, 0, t.len);
		buf_free(&t);
	}
	return 0;
}

/* QB_MAX_RETRIES and QB_BACKOFF_BASE, as for the providers' calls. */
static int
retries(struct sqs *q)
{
	const char *v, *e;

	q->retries = 4;
	q->backoff = 0.5;
	if ((v = envs("QB_MAX_RETRIES", NULL)) != NULL) {
		q->retries = (int)num_strtonum(v, 0, 100, &e);
		if (e != NULL)
			return qb_fail(QB_EX_CONFIG, "QB_MAX_RETRIES \"%s\" is %s",
			    v, e);
	}
	if ((v = envs("QB_BACKOFF_BASE", NULL)) != NULL) {
		q->backoff = num_seconds(v, &e);
		if (e != NULL)
			return qb_fail(QB_EX_CONFIG, "QB_BACKOFF_BASE \"%s\" is %s",
			    v, e);
	}
	return 0;
}

/*
 * The region (the spec's, else AWS_REGION's) and where requests go: ep,
 * else base, with one trailing slash. base is taken over.
 */
static int
endpoint(struct sqs *q, const char *spec, const char *ep, char *region,
    size_t n, struct buf *base)
{
	char why[160];
	const char *v;

	if (region[0] == '\0' &&
	    (v = envs("AWS_REGION", "AWS_DEFAULT_REGION")) != NULL)
		snprintf(region, n, "%s", v);
	if (region[0] == '\0')
		return qb_fail(QB_EX_CONFIG, "queue \"%s\": no region: set "
		    "AWS_REGION", spec);
	if (ep != NULL) {
		if (http_check_url(ep, why, sizeof(why)) != 0)
			return qb_fail(QB_EX_CONFIG, "endpoint \"%s\": %s", ep, why);
		buf_puts(base, ep);
	}
	trim(base);
	buf_putc(base, '/');
	q->endpoint = base->p;
	*base = (struct buf)BUF_INIT;
	snprintf(q->sigv4, sizeof(q->sigv4), "aws:amz:%s:sqs", region);
	return 0;
}

int
sqs_open(struct sqs *q, const char *spec)
{
	char region[64] = "";
	struct buf base = BUF_INIT;
	const char *ep;
	int rc;

	memset(q, 0, sizeof(*q));
	q->nrecv = 1;
	ep = envs("AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL");
	if (strncmp(spec, "sqs://", 6) == 0)
		rc = from_spec(q, spec, ep, region, sizeof(region), &base);
	else
		rc = from_url(q, spec, ep, region, sizeof(region), &base);
	if (rc == 0)
		rc = endpoint(q, spec, ep, region, sizeof(region), &base);
	if (rc == 0)
		rc = credentials(q);
	if (rc == 0)
		rc = retries(q);
	if (rc == 0 && (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (q->curl = curl_easy_init()) == NULL))
		rc = qb_fail(QB_EX_OSERR, "cannot initialise libcurl");
	buf_free(&base);
	if (rc != 0)
		sqs_close(q);
	return rc;
}

void
sqs_close(struct sqs *q)
{
	sqs_recv_free(q);
	if (q->curl != NULL)
		curl_easy_cleanup(q->curl);
	if (q->sk != NULL)
		memset(q->sk, 0, strlen(q->sk));
	free(q->ak);
	free(q->sk);
	free(q->url);
	free(q->endpoint);
	if (q->token != NULL)
		memset(q->token->data, 0, strlen(q->token->data));
	curl_slist_free_all(q->token);
	buf_free(&q->resp);
	memset(q, 0, sizeof(*q));
}

static size_t
on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	buf_append(arg, p, size * nmemb);
	return size * nmemb;
}

/* Backoff before retry number attempt (0-based): full jitter. */
double
sqs_backoff(const struct sqs *q, int attempt)
{
	double top = q->backoff * pow(2, attempt);

	return (top > 20 ? 20 : top) * ((double)rand() / RAND_MAX);
}

struct curl_slist *
sqs_setup(struct sqs *q, CURL *c, const char *action, const char *body,
    size_t len, long wait, struct buf *resp, char *ebuf)
{
	struct curl_slist *h = NULL, *s;
	char tgt[80];

	snprintf(tgt, sizeof(tgt), "X-Amz-Target: AmazonSQS.%s", action);
	for (s = q->token; s != NULL; s = s->next)
		h = curl_slist_append(h, s->data);
	h = curl_slist_append(h, "Content-Type: application/x-amz-json-1.0");
	if (h == NULL || (h = curl_slist_append(h, tgt)) == NULL)
		qb_oom(0);
	buf_reset(resp);
	ebuf[0] = '\0';
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, q->endpoint);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "qb/" QB_VERSION);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, CALL_TIMEOUT + wait);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, q->sigv4);
	curl_easy_setopt(c, CURLOPT_USERNAME, q->ak);
	curl_easy_setopt(c, CURLOPT_PASSWORD, q->sk);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	return h;
}

int
sqs_result(struct sqs *q, const char *action, CURLcode cc, long status,
    const struct buf *resp, const char *ebuf, int attempt, yajl_val *out)
{
	char perr[160];
	const char *code, *msg, *p;
	enum http_class cls;
	yajl_val v = NULL;

	*out = NULL;
	q->status = status;
	cls = http_class(cc, status);
	qb_note(2, "sqs %s -> %ld", action, status);
	if (cc == CURLE_OK && resp->len > 0 &&
	    (v = jtree_parse(resp->p, perr, sizeof(perr))) == NULL &&
	    cls == HTTP_OK) {
		snprintf(q->err, sizeof(q->err), "%s: unparseable answer: %s",
		    action, perr);
		return QB_EX_PROTOCOL;
	}
	if (cls == HTTP_OK) {
		*out = v;
		return 0;
	}
	if (cc != CURLE_OK) {
		snprintf(q->err, sizeof(q->err), "%s: %s", action,
		    ebuf[0] ? ebuf : curl_easy_strerror(cc));
	} else {
		code = jtree_str(v, "__type");
		if ((msg = jtree_str(v, "message")) == NULL)
			msg = jtree_str(v, "Message");
		if (code != NULL && (p = strrchr(code, '#')) != NULL)
			code = p + 1;
		snprintf(q->err, sizeof(q->err), "%s: HTTP %ld%s%.100s%s%.200s",
		    action, status, code ? ": " : "", code ? code : "",
		    msg ? ": " : "", msg ? msg : "");
		/* AWS throttles with a 400 and a code. */
		if (code != NULL && strstr(code, "Throttl") != NULL)
			cls = HTTP_TEMP;
		if (cls == HTTP_AUTH)
			snprintf(q->err + strlen(q->err), sizeof(q->err) -
			    strlen(q->err), " (permission denied: check "
			    "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the region)");
	}
	yajl_tree_free(v);
	if (cls != HTTP_TEMP || attempt >= q->retries)
		return http_exitcode(cls);
	qb_note(1, "sqs %s; retry %d of %d", q->err, attempt + 1, q->retries);
	return -1;
}

/*
 * One action with the len bytes of JSON at body; temporary failures are
 * retried. On 0, *out is the parsed answer (NULL for an empty body, which
 * the emulator sends for an empty receive). Else a QB_EX_* status, with
 * q->err saying "Action: why".
 */
static int
call(struct sqs *q, const char *action, const char *body, size_t len,
    long wait, yajl_val *out)
{
	struct curl_slist *h;
	char ebuf[CURL_ERROR_SIZE];
	long status;
	CURLcode cc;
	int attempt, rc;

	for (attempt = 0;; attempt++) {
		h = sqs_setup(q, q->curl, action, body, len, wait, &q->resp, ebuf);
		cc = curl_easy_perform(q->curl);
		status = 0;
		curl_easy_getinfo(q->curl, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_setopt(q->curl, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(q->curl, CURLOPT_ERRORBUFFER, NULL);
		curl_slist_free_all(h);
		if ((rc = sqs_result(q, action, cc, status, &q->resp, ebuf,
		    attempt, out)) != -1)
			return rc;
		qtime_sleep(sqs_backoff(q, attempt));
	}
}

/* Finish the request in g and send it. */
static int
send_gen(struct sqs *q, yajl_gen g, const char *action, long wait, yajl_val *out)
{
	const unsigned char *p;
	size_t n;
	int rc;

	jout_close(g);
	yajl_gen_get_buf(g, &p, &n);
	rc = call(q, action, (const char *)p, n, wait, out);
	yajl_gen_free(g);
	return rc;
}

/* One entry of a batch call, pointing at the caller's storage. */
struct ent {
	const char	*receipt, *body;
	size_t		 len;
	long		 vis;		/* -1: not a visibility change */
	int		*rc, *expired;
	char		*why;
	size_t		 whylen;
	int		 pending;
};

/*
 * Write into g the call for the pending entries from *i on, at most
 * SQS_BATCH_MAX, their indexes into idx; *i moves past the last one.
 * Returns how many.
 */
static size_t
request(struct sqs *q, yajl_gen g, const struct ent *e, size_t n, size_t *i,
    size_t *idx)
{
	char eid[24];
	size_t m;

	jout_open(g);
	jout_kstr(g, "QueueUrl", q->url);
	jout_key(g, "Entries");
	yajl_gen_array_open(g);
	for (m = 0; *i < n && m < SQS_BATCH_MAX; (*i)++) {
		if (!e[*i].pending)
			continue;
		idx[m++] = *i;
		snprintf(eid, sizeof(eid), "e%zu", *i);
		jout_open(g);
		jout_kstr(g, "Id", eid);
		if (e[*i].body != NULL) {
			jout_key(g, "MessageBody");
			jout_strn(g, e[*i].body, e[*i].len);
		} else
			jout_kstr(g, "ReceiptHandle", e[*i].receipt);
		if (e[*i].vis >= 0)
			jout_kint(g, "VisibilityTimeout", e[*i].vis);
		jout_close(g);
	}
	yajl_gen_array_close(g);
	return m;
}

/*
 * The entries of answer v's "Failed" (qb-providers(7), AMAZON SQS "Batch
 * calls"): one the server failed is pending again while retries are
 * left; any other carries its status and why. Returns how many are
 * pending again.
 */
static int
failed(struct sqs *q, const char *action, struct ent *e, size_t n,
    yajl_val v, int attempt)
{
	yajl_val f = jtree_get(v, "Failed"), x;
	const char *id, *code, *msg;
	size_t k, i;
	int again = 0;

	for (k = 0; f != NULL && YAJL_IS_ARRAY(f) && k < f->u.array.len; k++) {
		x = f->u.array.values[k];
		if ((id = jtree_str(x, "Id")) == NULL || id[0] != 'e' ||
		    (i = strtoul(id + 1, NULL, 10)) >= n)
			continue;
		code = jtree_str(x, "Code");
		msg = jtree_str(x, "Message");
		snprintf(e[i].why, e[i].whylen, "%s: %s%s%s", action,
		    code ? code : "failed", msg ? ": " : "", msg ? msg : "");
		if (!jtree_true(x, "SenderFault") && attempt < q->retries) {
			e[i].pending = 1;	/* the server's fault: again, alone */
			again++;
			continue;
		}
		*e[i].rc = jtree_true(x, "SenderFault") ?
		    QB_EX_UNAVAILABLE : QB_EX_TEMPFAIL;
		/* AWS: InvalidParameterValue "...receipt handle has expired". */
		if (e[i].expired != NULL && ((code != NULL &&
		    strcmp(code, "MessageNotInflight") == 0) ||
		    (msg != NULL && strstr(msg, "expired") != NULL)))
			*e[i].expired = 1;
	}
	return again;
}

/*
 * One batch action over e[0..n-1], in calls of SQS_BATCH_MAX, until no
 * entry is pending. Returns 0, or the status of a whole call that failed
 * (QB_EX_NOPERM before any other), which its entries carry too.
 */
static int
batch(struct sqs *q, const char *action, struct ent *e, size_t n)
{
	size_t i, k, m, idx[SQS_BATCH_MAX];
	yajl_gen g;
	yajl_val v;
	int attempt, st, worst = 0, left;

	for (i = 0; i < n; i++)
		e[i].pending = 1;
	for (attempt = 0;; attempt++) {
		left = 0;
		for (i = 0; i < n;) {
			g = jout_new();
			if ((m = request(q, g, e, n, &i, idx)) == 0) {
				yajl_gen_free(g);
				break;
			}
			st = send_gen(q, g, action, 0, &v);
			for (k = 0; k < m; k++) {
				*e[idx[k]].rc = st;
				if (st != 0)
					snprintf(e[idx[k]].why, e[idx[k]].whylen,
					    "%s", q->err);
				e[idx[k]].pending = 0;
			}
			if (st != 0 && (worst == 0 || st == QB_EX_NOPERM))
				worst = st;
			if (st == 0)
				left += failed(q, action, e, n, v, attempt);
			yajl_tree_free(v);
		}
		if (left == 0)
			return worst;
		qb_note(1, "sqs %s: %d entries failed on the server's side; "
		    "sending them again", action, left);
		qtime_sleep(sqs_backoff(q, attempt));
	}
}

int
sqs_settle(struct sqs *q, struct qsettle *s, size_t n)
{
	struct ent *e = xcalloc(n ? n : 1, sizeof(*e));
	size_t i, k = 0, nd;
	int pass, a, b;

	/* Deletes first, then visibility changes: each kind as one run. */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < n; i++) {
			if ((s[i].act == QA_DELETE) != (pass == 0))
				continue;
			e[k].receipt = s[i].receipt;
			e[k].vis = pass == 0 ? -1 : (long)ceil(s[i].delay);
			e[k].rc = &s[i].rc;
			e[k].expired = &s[i].expired;
			e[k].why = s[i].why;
			e[k].whylen = sizeof(s[i].why);
			s[i].why[0] = '\0';
			s[i].expired = 0;
			k++;
		}
	for (nd = 0, i = 0; i < n; i++)
		nd += s[i].act == QA_DELETE;
	a = nd ? batch(q, "DeleteMessageBatch", e, nd) : 0;
	b = n > nd ? batch(q, "ChangeMessageVisibilityBatch", e + nd, n - nd) : 0;
	free(e);
	return a ? a : b;
}

int
sqs_send(struct sqs *q, char *const *bodies, const size_t *lens, size_t n)
{
	struct ent e[SQS_BATCH_MAX];
	int rc[SQS_BATCH_MAX];
	char why[SQS_BATCH_MAX][200];
	size_t i;
	int st, worst = 0;

	memset(e, 0, sizeof(e));
	for (i = 0; i < n && i < SQS_BATCH_MAX; i++) {
		e[i].body = bodies[i];
		e[i].len = lens[i];
		e[i].vis = -1;
		e[i].rc = &rc[i];
		e[i].why = why[i];
		e[i].whylen = sizeof(why[i]);
	}
	st = batch(q, "SendMessageBatch", e, i);
	for (i = 0; i < n && i < SQS_BATCH_MAX; i++)
		if (rc[i] != 0) {
			if (st == 0)
				qb_warn("sqs %s", why[i]);
			if (worst == 0)
				worst = rc[i];
		}
	if (st != 0)
		qb_warn("sqs %s", q->err);
	return st ? st : worst;
}
