/*
 * sync.c: the synchronous engine (DESIGN.md §7). One thread drives
 * libcurl multi: an item waits in a list until its model's limiter
 * (ratelim.h) admits it, goes out on a connection the multi handle keeps
 * (HTTP/2 multiplexed where offered), and ends in a result record that is
 * printed and flushed as soon as it is known, in completion order.
 *
 * A failure that may pass (no connection, 408, 409, 429, 5xx) is tried
 * again after a backoff with full jitter, or after the wait the server
 * asks for (retry-after-ms, Retry-After, rate-limit reset headers), which
 * then holds every request to the model (rl_pause; case 18). Retries are
 * bounded per item (QB_MAX_RETRIES), per run (a retry budget, so failures
 * never multiply traffic) and by the item's deadline. A request sent
 * whole that got no answer may have been billed: it is tried again only
 * while --unknown-retries lasts, each time counted (case 20).
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "json/jout.h"
#include "sync/syncint.h"

#define LOOKAHEAD	256	/* items waiting in the engine at most */
#define METRICS_EVERY	10.0	/* s */
#define PROGRESS_EVERY	5.0	/* s */

void
sync_list_del(struct sync_list *l, struct sync_item *it)
{
	if (it->prev != NULL)
		it->prev->next = it->next;
	else
		l->head = it->next;
	if (it->next != NULL)
		it->next->prev = it->prev;
	else
		l->tail = it->prev;
	it->prev = it->next = NULL;
	l->n--;
}

void
sync_list_add(struct sync_list *l, struct sync_item *it, int front)
{
	if (front) {
		it->prev = NULL;
		it->next = l->head;
		if (l->head != NULL)
			l->head->prev = it;
		else
			l->tail = it;
		l->head = it;
	} else {
		it->next = NULL;
		it->prev = l->tail;
		if (l->tail != NULL)
			l->tail->next = it;
		else
			l->head = it;
		l->tail = it;
	}
	l->n++;
}

static void
start(struct sync *s, struct sync_item *it, double now)
{
	CURL *e;

	sync_list_del(&s->wait, it);
	sync_list_add(&s->fly, it, 0);
	e = sync_easy(s, it);
	if (curl_multi_add_handle(s->multi, e) != CURLM_OK)
		qb_die(QB_EX_SOFTWARE, "cannot add a transfer to libcurl");
	it->easy = e;
	it->started = now;
	if (it->tries++ == 0)
		rb_first(&s->rb);
	rl_take(it->m->rl, it->tokens, now);
	it->m->tokens += (unsigned long long)it->tokens;
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
	int timed;

	s->round++;
	if (s->ngroups > 0)
		wake = sync_arr_pack(s, now, over);
	for (it = s->wait.head; it != NULL && !s->stop; it = next) {
		next = it->next;
		m = it->m;
		if (it->deadline > 0 && now >= it->deadline) {
			sync_giveup(s, it, 0);
			continue;
		}
		if (m->round == s->round)
			continue;
		if (it->not_before > now) {
			if (it->not_before < wake)
				wake = it->not_before;
			continue;
		}
		if ((w = rl_wait(m->rl, it->tokens, now)) == 0) {
			start(s, it, now);
			continue;
		}
		/* Past RL_BUSY, or with a free slot, w is a time to wait at least. */
		timed = w > RL_BUSY || rl_inflight(m->rl) < (int)rl_window(m->rl);
		if (timed && (w > SYNC_WAIT_MAX ||
		    (it->deadline > 0 && now + w > it->deadline))) {
			sync_giveup(s, it, w);
			continue;
		}
		m->round = s->round;
		if (now + w < wake)
			wake = now + w;
	}
	return wake;
}

/* Hand every finished transfer to done(); returns how many there were. */
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
		sync_done(s, it, cc);
		n++;
	}
	return n;
}

/* The engine's connection, limits and output; 0 or sync_http_init's status. */
static int
setup(struct sync *s, const struct sync_opts *o)
{
	int rc;

	s->o = o;
	if ((s->p = provider_find(o->prov != NULL ? o->prov : "openai")) == NULL)
		qb_die(QB_EX_USAGE, "unknown provider \"%s\"", o->prov);
	if ((rc = sync_http_init(s)) != 0)
		return rc;
	rb_init(&s->rb, 0.1, 10);
	s->unknown_left = o->unknown_retries;
	idmap_init(&s->ids);
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
		sync_list_del(&s->wait, it);
		sync_item_free(it);
	}
	/* Transfers in flight when standard output failed are dropped. */
	while ((it = s->fly.head) != NULL) {
		sync_list_del(&s->fly, it);
		curl_multi_remove_handle(s->multi, it->easy);
		curl_easy_cleanup(it->easy);
		sync_item_free(it);
	}
	for (i = 0; i < s->nmodels; i++) {
		rl_free(s->models[i]->rl);
		free(s->models[i]->name);
		free(s->models[i]);
	}
	sync_arr_free(s);
	free(s->models);
	sync_http_free(s);
	idmap_free(&s->ids);
	buf_free(&s->scan.strs);
	result_parser_free(&s->rp);
	yajl_gen_free(s->g);
}

int
sync_run(const struct sync_opts *o, char **files)
{
	/* Only the body's members matter below the top level (its model). */
	static const char *const deep[] = { "body", "params", NULL };
	struct sync s;
	struct sync_item *it;
	double now, wake;
	int over = 0, n, ms, rc;
	/* Array items wait for company besides the lookahead. */
	size_t lim = LOOKAHEAD + (o->array > 1 ? (size_t)o->array : 0);

	memset(&s, 0, sizeof(s));
	if ((rc = setup(&s, o)) != 0)
		return rc;
	s.scan.deep = deep;
	/* A closed pipe is a write error (74), not a silent death. */
	signal(SIGPIPE, SIG_IGN);
	sync_in_start(&s, files);
	s.next_metrics = s.next_progress = qtime_mono();
	for (;;) {
		if (!s.stop && !over)
			over = sync_in_take(&s, s.wait.n + s.npool < lim ?
			    lim - s.wait.n - s.npool : 0) || s.halt;
		now = qtime_mono();
		wake = s.stop ? now + 1 : admit(&s, now, over);
		curl_multi_perform(s.multi, &n);
		n = reap(&s);
		if (s.stop == QB_EX_IOERR ||
		    (s.fly.n == 0 && (s.stop || (over && s.wait.n == 0 &&
		    s.npool == 0))))
			break;
		now = qtime_mono();
		if (o->metrics != NULL && now >= s.next_metrics) {
			sync_metrics(&s);
			s.next_metrics = now + METRICS_EVERY;
		}
		if (s.tty && qb_verbose >= 0 && now >= s.next_progress) {
			if (s.next_progress > 0 && s.nok + s.nfail + s.nlater > 0)
				qb_warn("%lu done, %lu in flight, %lu waiting",
				    s.nok + s.nfail + s.nlater, s.fly.n, s.wait.n);
			s.next_progress = now + PROGRESS_EVERY;
		}
		if (n > 0)
			continue;	/* room freed: admit again at once */
		ms = wake <= now ? 0 : (int)ceil((wake - now) * 1000);
		curl_multi_poll(s.multi, NULL, 0, ms > 1000 ? 1000 : ms, NULL);
	}
	s.nuntried = s.nopen;
	for (it = s.wait.head; it != NULL; it = it->next)
		s.nuntried += it->parts == NULL;
	for (it = s.fly.head; it != NULL; it = it->next)
		s.nuntried += it->parts == NULL;
	if (o->metrics != NULL)
		sync_metrics(&s);
	sync_summary(&s);
	if (s.stop)
		rc = s.stop;
	else if (s.halt)
		rc = QB_EX_DATAERR;
	else if (s.ioerr)
		rc = QB_EX_IOERR;
	else if (s.noinput)
		rc = QB_EX_NOINPUT;
	else if (s.nlater > 0)
		rc = QB_EX_TEMPFAIL;
	else
		rc = s.nfail > 0 || s.nbad > 0 ? QB_EX_PARTIAL : QB_EX_OK;
	/* Names of inputs are in messages until here. */
	sync_in_stop(&s);
	teardown(&s);
	return rc;
}
