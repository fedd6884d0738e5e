/*
 * sync.c: the synchronous engine (qb-submit(1)). One thread drives
 * libcurl multi: an item waits in a list until its model's limiter
 * (ratelim.h) admits it, goes out on a connection the multi handle keeps
 * (HTTP/2 multiplexed where offered), and ends in a result record that is
 * printed and flushed as soon as it is known, in completion order.
 *
 * A failure that may pass (no connection, 408, 409, 429, 5xx) is tried
 * again after a backoff with full jitter, or after the wait the server
 * asks for (retry-after-ms, Retry-After, rate-limit reset headers), which
 * then holds every request to the model (ratelim_pause). Retries are
 * bounded per item (QB_MAX_RETRIES), per run (a retry budget, so failures
 * never multiply traffic) and by the item's deadline. A request sent
 * whole that got no answer may have been billed: it is tried again only
 * while --unknown-retries lasts, each time counted. tests/3400-qb-submit-
 * sync.t shows each of these.
 *
 * A stop (a 401, a write error, libcurl failing) ends admissions: what
 * is in flight still ends in a result, what waits is counted "not sent"
 * and printed nowhere, so that its queue hands it out again.
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "json/jout.h"
#include "provider/provider.h"
#include "sync/sync.h"
#include "sync/syncarr.h"
#include "sync/syncend.h"
#include "sync/synchttp.h"
#include "sync/syncin.h"
#include "sync/syncint.h"
#include "sync/syncitem.h"
#include "sync/syncout.h"

#define LOOKAHEAD	256	/* items waiting in the engine at most */
#define METRICS_EVERY	10.0	/* s */
#define PROGRESS_EVERY	5.0	/* s */

/* End admissions with status rc (a QB_EX_* value), unless one did. */
static void
stop(struct sync *s, int rc)
{
	if (!s->stop)
		s->stop = rc;
}

/* Send it now; 0, or the status of a failure (reported: it still waits). */
static int
start(struct sync *s, struct sync_item *it, double now)
{
	CURL *e;

	if ((e = synchttp_easy(s, it)) == NULL)
		return QB_EX_OSERR;
	if (curl_multi_add_handle(s->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		return qb_fail(QB_EX_SOFTWARE, "cannot add a transfer to "
		    "libcurl");
	}
	syncitem_del(&s->wait, it);
	syncitem_add(&s->fly, it, 0);
	it->easy = e;
	it->started = now;
	if (it->tries++ == 0)
		ratelim_budget_first(&s->rb);
	ratelim_take(it->m->rl, it->tokens, now);
	it->m->tokens += (unsigned long long)it->tokens;
	return 0;
}

/*
 * One admission round: start what the limiters let go, give up what can
 * no longer go in time. Items of one model go in order: once one waits,
 * those behind it wait too. Returns when to look again.
 */
static double
admit(struct sync *s, double now, int over)
{
	struct sync_item *it, *next;
	struct sync_model *m;
	double wake = now + 1, w;
	int timed, rc;

	s->round++;
	if (s->ngroups > 0)
		wake = syncarr_pack(s, now, over);
	for (it = s->wait.head; it != NULL && !s->stop; it = next) {
		next = it->next;
		m = it->m;
		if (it->deadline > 0 && now >= it->deadline) {
			syncend_giveup(s, it, 0);
			continue;
		}
		if (m->round == s->round)
			continue;
		if (it->not_before > now) {
			if (it->not_before < wake)
				wake = it->not_before;
			continue;
		}
		if ((w = ratelim_wait(m->rl, it->tokens, now)) == 0) {
			if ((rc = start(s, it, now)) != 0)
				stop(s, rc);
			continue;
		}
		/* Past RATELIM_BUSY, or with a free slot, w is a time to
		 * wait at least. */
		timed = w > RATELIM_BUSY ||
		    ratelim_inflight(m->rl) < (int)ratelim_window(m->rl);
		if (timed && (w > SYNC_WAIT_MAX ||
		    (it->deadline > 0 && now + w > it->deadline))) {
			syncend_giveup(s, it, w);
			continue;
		}
		m->round = s->round;
		if (now + w < wake)
			wake = now + w;
	}
	return wake;
}

/* Hand every finished transfer to syncend_done; returns how many. */
static int
reap(struct sync *s)
{
	struct sync_item *it;
	CURLMsg *msg;
	CURLcode cc;
	int left, n = 0;

	while ((msg = curl_multi_info_read(s->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		cc = msg->data.result;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&it);
		syncend_done(s, it, cc);
		n++;
	}
	return n;
}

/*
 * libcurl cannot go on (mc): stop, and end each transfer in flight with
 * no answer, so that its item still gets its result (that the request
 * may have been billed, if it went whole) and the loop nothing to wait
 * for.
 */
static void
abandon(struct sync *s, CURLMcode mc)
{
	struct sync_item *it;

	stop(s, qb_fail(mc == CURLM_OUT_OF_MEMORY ? QB_EX_OSERR :
	    QB_EX_SOFTWARE, "libcurl failed: %s; the transfers in flight "
	    "are abandoned", curl_multi_strerror(mc)));
	while ((it = s->fly.head) != NULL) {
		snprintf(it->ebuf, sizeof(it->ebuf), "abandoned (libcurl: %s)",
		    curl_multi_strerror(mc));
		syncend_done(s, it, CURLE_ABORTED_BY_CALLBACK);
	}
}

/* The --metrics file and the progress line, when they are due. */
static void
tick(struct sync *s, double now)
{
	if (s->o->metrics != NULL && now >= s->next_metrics) {
		syncout_metrics(s);
		s->next_metrics = now + METRICS_EVERY;
	}
	if (s->tty && qb_verbose >= 0 && now >= s->next_progress) {
		if (s->next_progress > 0 && s->nok + s->nfail + s->nlater > 0)
			qb_warn("%lu done, %lu in flight, %lu waiting",
			    s->nok + s->nfail + s->nlater, s->fly.n, s->wait.n);
		s->next_progress = now + PROGRESS_EVERY;
	}
}

/*
 * Take input, admit, drive the transfers and end them, until every item
 * has its result or a stop leaves nothing in flight. A write error on
 * standard output ends at once: no result could be printed any more.
 */
static void
loop(struct sync *s)
{
	/* Array items wait for company besides the lookahead. */
	size_t lim = LOOKAHEAD + (s->o->array > 1 ? (size_t)s->o->array : 0);
	double now, wake;
	CURLMcode mc;
	int over = 0, n, ms;

	for (;;) {
		if (!s->stop && !over)
			over = syncin_take(s, s->wait.n + s->npool < lim ?
			    lim - s->wait.n - s->npool : 0) || s->halt;
		now = qtime_mono();
		wake = s->stop ? now + 1 : admit(s, now, over);
		if ((mc = curl_multi_perform(s->multi, &n)) != CURLM_OK) {
			abandon(s, mc);
			return;
		}
		n = reap(s);
		if (s->stop == QB_EX_IOERR || (s->fly.n == 0 && (s->stop ||
		    (over && s->wait.n == 0 && s->npool == 0))))
			return;
		now = qtime_mono();
		tick(s, now);
		if (n > 0)
			continue;	/* room freed: admit again at once */
		ms = wake <= now ? 0 : (int)ceil((wake - now) * 1000);
		if ((mc = curl_multi_poll(s->multi, NULL, 0, ms > 1000 ? 1000 :
		    ms, NULL)) != CURLM_OK) {
			abandon(s, mc);
			return;
		}
	}
}

/* The run's exit status, once the loop is over. */
static int
status(const struct sync *s)
{
	if (s->stop)
		return s->stop;
	if (s->halt)
		return QB_EX_DATAERR;
	if (s->ioerr)
		return QB_EX_IOERR;
	if (s->noinput)
		return QB_EX_NOINPUT;
	if (s->nlater > 0)
		return QB_EX_TEMPFAIL;
	return s->nfail > 0 || s->nbad > 0 ? QB_EX_PARTIAL : QB_EX_OK;
}

/* The engine's connection, limits and output; 0 or the failure's status
 * (reported), with nothing left to free but what teardown frees. */
static int
setup(struct sync *s, const struct sync_opts *o)
{
	/* Only the body's members matter below the top level (its model). */
	static const char *const deep[] = { "body", "params", NULL };
	int rc;

	memset(s, 0, sizeof(*s));
	s->o = o;
	if ((s->p = provider_find(o->prov != NULL ? o->prov : "openai")) == NULL)
		return qb_fail(QB_EX_USAGE, "unknown provider \"%s\"", o->prov);
	if ((rc = synchttp_init(s)) != 0) {
		synchttp_free(s);
		return rc;
	}
	ratelim_budget_init(&s->rb, 0.1, 10);
	s->unknown_left = o->unknown_retries;
	idmap_init(&s->ids);
	s->scan.deep = deep;
	s->g = jout_new();
	s->tty = isatty(STDERR_FILENO);
	return 0;
}

static void
teardown(struct sync *s)
{
	struct sync_item *it;
	size_t i;

	while ((it = s->wait.head) != NULL) {
		syncitem_del(&s->wait, it);
		syncitem_free(it);
	}
	/* Transfers in flight when standard output failed are dropped. */
	while ((it = s->fly.head) != NULL) {
		syncitem_del(&s->fly, it);
		curl_multi_remove_handle(s->multi, it->easy);
		curl_easy_cleanup(it->easy);
		syncitem_free(it);
	}
	for (i = 0; i < s->nmodels; i++) {
		ratelim_free(s->models[i]->rl);
		free(s->models[i]->name);
		free(s->models[i]);
	}
	syncarr_free(s);
	free(s->models);
	synchttp_free(s);
	idmap_free(&s->ids);
	buf_free(&s->scan.strs);
	result_parser_free(&s->rp);
	yajl_gen_free(s->g);
}

int
sync_run(const struct sync_opts *o, char **files)
{
	struct sync s;
	struct sync_item *it;
	int rc;

	if ((rc = setup(&s, o)) != 0)
		return rc;
	/* A closed pipe is a write error (74), not a silent death. */
	signal(SIGPIPE, SIG_IGN);
	if ((rc = syncin_start(&s, files)) != 0) {
		teardown(&s);
		return rc;
	}
	s.next_metrics = s.next_progress = qtime_mono();
	loop(&s);
	s.nuntried = s.nopen;
	for (it = s.wait.head; it != NULL; it = it->next)
		s.nuntried += it->parts == NULL;
	for (it = s.fly.head; it != NULL; it = it->next)
		s.nuntried += it->parts == NULL;
	if (o->metrics != NULL)
		syncout_metrics(&s);
	syncout_summary(&s);
	rc = status(&s);
	/* Names of inputs are in messages until here. */
	syncin_stop(&s);
	teardown(&s);
	return rc;
}
