/*
 * sqsrecv.c: SQS ReceiveMessage with several calls in flight (libcurl
 * multi). One call at a time gets one answer per round trip, and
 * local-aws-sqs answers on a 10 ms tick; n receivers get n answers per
 * round trip. Each call asks only for what is still missing, so a window
 * never takes more than it may hand on; messages a server sends beyond
 * that anyway are released at once (visibility 0), not kept, since an SQS
 * drain has no next window to keep them for. Calls are signed as the
 * others (sqs_setup): the body stays in its slot for CURLOPT_POSTFIELDS.
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jtree.h"
#include "queue/sqs.h"

struct sqs_slot {
	CURL		*curl;		/* kept between calls: keeps its connection */
	struct curl_slist *h;		/* headers of the call; owned */
	struct buf	 body, resp;
	char		 ebuf[CURL_ERROR_SIZE];
	size_t		 ask;		/* messages asked for; 0: idle */
	int		 attempt;
	int		 running;	/* in q->multi */
	double		 retry;		/* qtime_mono() of the next try, when not running */
	double		 t0;		/* qtime_wall() when sent */
	long		 vis;		/* VisibilityTimeout sent */
};

/* One sqs_receive. */
struct rx {
	struct sqs	*q;
	struct qbatch	*b, extra;	/* extra: received beyond max, to release */
	size_t		 max, got, out;	/* out: asked for by calls in flight */
	int		 wait;
	double		 end;		/* qtime_mono(): no call starts after it */
	double		 lease;		/* qtime_wall() the leases should last to */
	int		 started;	/* a call was made: the budget now counts */
	int		 rc;		/* the first failure, q->err saying why */
};

/* A libcurl failure: QB_EX_OSERR into x->rc and why into q->err,
 * unless an earlier failure is there. Returns x->rc. */
static int
curlfail(struct rx *x, const char *why)
{
	if (x->rc == 0) {
		snprintf(x->q->err, sizeof(x->q->err), "%s", why);
		x->rc = QB_EX_OSERR;
	}
	return x->rc;
}

void
sqs_recv_free(struct sqs *q)
{
	struct sqs_slot *s;
	int i;

	for (i = 0; q->slot != NULL && i < SQS_RECEIVERS_MAX; i++) {
		s = &q->slot[i];
		if (s->running)
			curl_multi_remove_handle(q->multi, s->curl);
		if (s->curl != NULL)
			curl_easy_cleanup(s->curl);
		curl_slist_free_all(s->h);
		buf_free(&s->body);
		buf_free(&s->resp);
	}
	free(q->slot);
	q->slot = NULL;
	if (q->multi != NULL)
		curl_multi_cleanup(q->multi);
	q->multi = NULL;
}

/* Send s's call (again), with the wait and lease left from now; when
 * libcurl will not take it, x->rc says so. */
static void
launch(struct rx *x, struct sqs_slot *s)
{
	static const char *const names[] = { "AttributeNames",
	    "MessageSystemAttributeNames" };
	struct sqs *q = x->q;
	yajl_gen g = jout_new();
	const unsigned char *p;
	double left = floor(x->end - qtime_mono());
	size_t n;
	long wait;
	int i;

	wait = left < 0 ? 0 : left < x->wait ? (long)left : x->wait;
	s->t0 = qtime_wall();
	s->vis = (long)fmin(fmax(ceil(x->lease - s->t0), 0), SQS_VIS_MAX);
	jout_open(g);
	jout_kstr(g, "QueueUrl", q->url);
	jout_kint(g, "MaxNumberOfMessages", (long long)s->ask);
	jout_kint(g, "WaitTimeSeconds", wait);
	jout_kint(g, "VisibilityTimeout", s->vis);
	/* local-aws-sqs, the emulator of tests/1100-qb-drain-sqs.t, gives
	 * ApproximateReceiveCount only for the older name: send both. */
	for (i = 0; i < 2; i++) {
		jout_key(g, names[i]);
		yajl_gen_array_open(g);
		jout_str(g, "ApproximateReceiveCount");
		yajl_gen_array_close(g);
	}
	jout_close(g);
	yajl_gen_get_buf(g, &p, &n);
	buf_reset(&s->body);
	buf_append(&s->body, p, n);
	yajl_gen_free(g);
	if (s->curl == NULL && (s->curl = curl_easy_init()) == NULL) {
		curlfail(x, "cannot initialise libcurl");
		return;
	}
	curl_slist_free_all(s->h);
	s->h = sqs_setup(q, s->curl, "ReceiveMessage", s->body.p, s->body.len,
	    wait, &s->resp, s->ebuf);
	curl_easy_setopt(s->curl, CURLOPT_PRIVATE, (char *)s);
	if (curl_multi_add_handle(q->multi, s->curl) != CURLM_OK) {
		curlfail(x, "cannot add a libcurl transfer");
		return;
	}
	s->running = 1;
}

/* Append the messages of answer v to the batch, those beyond max to extra. */
static void
take(struct rx *x, const struct sqs_slot *s, yajl_val v)
{
	yajl_val ms = jtree_get(v, "Messages"), m;
	const char *id, *rh, *body, *rc;
	struct qmsg *qm;
	size_t i;

	for (i = 0; ms != NULL && YAJL_IS_ARRAY(ms) && i < ms->u.array.len; i++) {
		m = ms->u.array.values[i];
		id = jtree_str(m, "MessageId");
		rh = jtree_str(m, "ReceiptHandle");
		body = jtree_str(m, "Body");
		if (id == NULL || rh == NULL || body == NULL) {
			qb_warn("sqs ReceiveMessage: a message without MessageId, "
			    "ReceiptHandle or Body; skipped");
			continue;
		}
		qm = qmsg_add(x->got < x->max ? x->b : &x->extra);
		qm->id = xstrdup(id);
		qm->receipt = xstrdup(rh);
		if (x->got++ >= x->max)
			continue;
		qm->len = strlen(body);
		qm->body = xstrndup(body, qm->len);
		rc = jtree_str(jtree_get(m, "Attributes"), "ApproximateReceiveCount");
		qm->receives = rc != NULL ? strtol(rc, NULL, 10) : 0;
		qm->until = s->t0 + s->vis;
	}
}

/* Make the messages in x->extra visible again at once. */
static void
release(struct rx *x)
{
	struct qsettle *st = xcalloc(x->extra.n, sizeof(*st));
	size_t i;

	qb_note(1, "sqs: %zu messages beyond the window's count: released",
	    x->extra.n);
	for (i = 0; i < x->extra.n; i++) {
		st[i].receipt = x->extra.m[i].receipt;
		st[i].act = QA_RELEASE;
	}
	sqs_settle(x->q, st, x->extra.n);
	for (i = 0; i < x->extra.n; i++)
		if (st[i].rc != 0)
			qb_warn("sqs: message %s, beyond the window's count, not "
			    "released (it comes back when its lease ends): %s",
			    x->extra.m[i].id, st[i].why);
	free(st);
	qmsg_clear(&x->extra);
	free(x->extra.m);
}

/*
 * Start what is due: a call in each idle slot while messages are still
 * missing and the budget lasts (the first call always), and each retry
 * whose backoff has passed. Returns how many slots are busy; *next is
 * the qtime_mono() of the next retry, -1 for none.
 */
static int
start(struct rx *x, double *next)
{
	struct sqs *q = x->q;
	struct sqs_slot *s;
	double now = qtime_mono();
	int i, busy = 0;

	*next = -1;
	for (i = 0; i < q->nrecv && i < SQS_RECEIVERS_MAX; i++) {
		s = &q->slot[i];
		if (s->ask == 0 && x->rc == 0 && (!x->started || now < x->end) &&
		    x->got + x->out < x->max) {
			s->ask = x->max - x->got - x->out > SQS_BATCH_MAX ?
			    SQS_BATCH_MAX : x->max - x->got - x->out;
			x->out += s->ask;
			s->attempt = 0;
			x->started = 1;
			launch(x, s);
		} else if (x->rc == 0 && s->ask > 0 && !s->running &&
		    now >= s->retry)
			launch(x, s);
		if (s->ask > 0 && !s->running && (*next < 0 || s->retry < *next))
			*next = s->retry;
		busy += s->ask > 0;
	}
	return busy;
}

/*
 * Take in the calls that ended: one that failed for now waits for its
 * retry; an answer's messages go to the batch; any other failure is
 * kept in x->rc. Returns how many ended.
 */
static int
collect(struct rx *x)
{
	struct sqs *q = x->q;
	struct sqs_slot *s;
	CURLMsg *cm;
	yajl_val v;
	long status;
	char *p;
	int left, done = 0, st;

	while ((cm = curl_multi_info_read(q->multi, &left)) != NULL) {
		if (cm->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(cm->easy_handle, CURLINFO_PRIVATE, &p);
		s = (struct sqs_slot *)p;
		status = 0;
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
		curl_multi_remove_handle(q->multi, s->curl);
		s->running = 0;
		done++;
		st = sqs_result(q, "ReceiveMessage", cm->data.result, status,
		    &s->resp, s->ebuf, s->attempt, &v);
		if (st == -1) {
			s->retry = qtime_mono() + sqs_backoff(q, s->attempt++);
			continue;
		}
		x->out -= s->ask;
		s->ask = 0;
		if (st != 0 && x->rc == 0)
			x->rc = st;
		if (st == 0)
			take(x, s, v);
		yajl_tree_free(v);
	}
	return done;
}

/* Wait for a transfer, or until the next retry is due (1 s at most). */
static int
nap(struct rx *x, double next)
{
	int ms = next < 0 ? 1000 : (int)ceil((next - qtime_mono()) * 1000);

	if (ms > 0 && curl_multi_poll(x->q->multi, NULL, 0, ms > 1000 ?
	    1000 : ms, NULL) != CURLM_OK)
		return curlfail(x, "libcurl multi interface failed");
	return 0;
}

/*
 * After a failure, the calls still out are dropped: what they lease
 * comes back when the lease ends, as the batch's own do.
 */
static void
drop(struct sqs *q)
{
	struct sqs_slot *s;
	int i;

	for (i = 0; i < SQS_RECEIVERS_MAX; i++) {
		s = &q->slot[i];
		if (s->running)
			curl_multi_remove_handle(q->multi, s->curl);
		s->running = 0;
		s->ask = 0;
	}
}

int
sqs_receive(struct sqs *q, struct qbatch *b, size_t max, int wait,
    double budget, double vis)
{
	struct rx x;
	double next;
	int left;

	memset(&x, 0, sizeof(x));
	x.q = q;
	x.b = b;
	x.max = max;
	x.wait = wait;
	if (q->slot == NULL)
		q->slot = xcalloc(SQS_RECEIVERS_MAX, sizeof(*q->slot));
	if (q->multi == NULL && (q->multi = curl_multi_init()) == NULL)
		return curlfail(&x, "cannot initialise libcurl");
	x.end = qtime_mono() + budget;
	x.lease = qtime_wall() + vis;
	while (start(&x, &next) > 0 && x.rc == 0) {
		if (curl_multi_perform(q->multi, &left) != CURLM_OK) {
			curlfail(&x, "libcurl multi interface failed");
			break;
		}
		if (collect(&x) == 0 && nap(&x, next) != 0)
			break;
	}
	if (x.rc != 0)
		drop(q);
	if (x.extra.n > 0)
		release(&x);
	return x.rc;
}
