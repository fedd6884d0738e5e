/*
 * syncend.c: how a try of the synchronous engine ended, and what comes of
 * it: a result printed, or another try after a backoff with full jitter
 * or the server's wait, which then holds the whole model (ratelim_pause).
 * An answer decides by its status; no answer after the request went out
 * whole is an unknown outcome: it may have run and been billed
 * (tests/3400-qb-submit-sync.t). A try ends in steps: retire the
 * transfer, judge what came back, feed the limiter, then settle it or
 * try it again.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "base/redact.h"
#include "sync/syncarr.h"
#include "sync/syncend.h"
#include "sync/synchttp.h"
#include "sync/syncint.h"
#include "sync/syncitem.h"
#include "sync/syncout.h"

/* Print its result (an array request: its items'), and let it go. */
static void
settle(struct sync *s, struct sync_item *it, const struct result *r,
    const char *say)
{
	if (it->parts != NULL) {
		syncarr_end(s, it, r, say);
		syncitem_free(it);
	} else
		syncout_settle(s, it, r, say);
}

/* It is given up before a try: its deadline, or a wait over the cap. */
void
syncend_giveup(struct sync *s, struct sync_item *it, double wait)
{
	struct result r;
	char msg[160];

	syncitem_del(&s->wait, it);
	if (wait > SYNC_WAIT_MAX) {
		snprintf(msg, sizeof(msg), "not sent: model %s is held %.0f s, "
		    "past the %.0f s qb waits", it->m->name, wait, SYNC_WAIT_MAX);
		syncout_noanswer(&r, RESULT_ERRORED, "rate_limit_error",
		    "rate_limit_exceeded", msg);
	} else {
		snprintf(msg, sizeof(msg), "not sent%s: its deadline (%g s) "
		    "passes first", it->tries > 0 ? " again" : "",
		    s->o->deadline);
		syncout_noanswer(&r, RESULT_EXPIRED, "timeout_error",
		    "deadline_exceeded", msg);
	}
	settle(s, it, &r, msg);
}

/* What a try came to. */
struct try {
	struct result	 r;
	int		 answered;	/* an HTTP status that speaks for it */
	int		 unknown;	/* it may have run and been billed */
	char		 msg[512];	/* what happened, for messages */
	char		 page[208];	/* the start of an answer not JSON: r.emsg */
};

/* Take the ended transfer of it out of the engine; returns how many
 * bytes of its request went. */
static curl_off_t
retire(struct sync *s, struct sync_item *it)
{
	curl_off_t up = 0;

	curl_easy_getinfo(it->easy, CURLINFO_SIZE_UPLOAD_T, &up);
	curl_multi_remove_handle(s->multi, it->easy);
	curl_easy_cleanup(it->easy);
	it->easy = NULL;
	syncitem_del(&s->fly, it);
	synchttp_scrub(s, &it->resp);
	return up;
}

/* No answer that speaks: libcurl said cc after up bytes went. */
static void
noanswer(struct sync_item *it, CURLcode cc, curl_off_t up, struct try *t)
{
	const char *code;

	/* Sent whole (or half answered): it may have run and been billed. */
	t->unknown = up >= (curl_off_t)it->blen || it->status >= 100;
	snprintf(t->msg, sizeof(t->msg), "POST %s: %s%s", it->url,
	    it->ebuf[0] ? it->ebuf : curl_easy_strerror(cc), t->unknown ?
	    "; the request was sent: outcome unknown, it may have "
	    "been billed" : "");
	redact_str(t->msg, sizeof(t->msg));	/* the URL's userinfo */
	code = t->unknown ? "outcome_unknown" : cc ==
	    CURLE_OPERATION_TIMEDOUT ? "timeout" : "connection_failed";
	syncout_noanswer(&t->r, RESULT_ERRORED, "connection_error", code,
	    t->msg);
}

/* An answer that is not a JSON object (t->r has its status). */
static void
notjson(struct sync_item *it, struct try *t)
{
	char *w;

	if (it->status >= 200 && it->status <= 299) {
		t->unknown = 1;
		snprintf(t->msg, sizeof(t->msg), "POST %s: HTTP %ld with %s; "
		    "it may have been billed", it->url, it->status, it->big ?
		    "an answer too large to keep" : "an answer that is not a "
		    "JSON object");
		redact_str(t->msg, sizeof(t->msg));
		syncout_noanswer(&t->r, RESULT_ERRORED, "api_error",
		    "outcome_unknown", t->msg);
		return;
	}
	/* An error page (a proxy's HTML): its start says what. */
	snprintf(t->page, sizeof(t->page), "%.200s", it->resp.len > 0 ?
	    it->resp.p : "no answer body");
	for (w = t->page; *w != '\0'; w++)
		if ((unsigned char)*w < ' ')
			*w = ' ';
	t->r.emsg = t->page;
}

/* What the try of it came to, from libcurl's cc and the up bytes sent. */
static void
judge(struct sync *s, struct sync_item *it, CURLcode cc, curl_off_t up,
    double now, struct try *t)
{
	const struct result *r = &t->r;

	memset(t, 0, sizeof(*t));
	/* An answer, then a broken connection: the answer speaks. */
	t->answered = it->status >= 100 &&
	    (cc == CURLE_OK || it->status >= 400);
	syncout_count(it->m, t->answered ? it->status : 0);
	/* An answer cut at its cap is judged by its status alone. */
	if (!t->answered)
		noanswer(it, cc, up, t);
	else if (result_answer(&s->rp, it->big ? NULL : it->resp.p,
	    it->big ? 0 : it->resp.len, it->status, &t->r) == -1)
		notjson(it, t);
	if (t->answered && !t->unknown)
		snprintf(t->msg, sizeof(t->msg), "HTTP %ld%s%.300s", it->status,
		    r->emsg != NULL ? ": " : "", r->emsg != NULL ? r->emsg : "");
	if (t->answered)
		qb_note(2, "POST %s -> %ld (%.3f s)%s%s", it->url, it->status,
		    now - it->started, it->rid[0] != '\0' ? " " : "", it->rid);
	else
		qb_note(2, "POST %s -> %s", it->url, curl_easy_strerror(cc));
	if (it->rid[0] != '\0')
		t->r.request_id = it->rid;
}

/* Tell the model's limiter how the try ended. */
static void
feed(const struct sync_item *it, const struct try *t, double now)
{
	enum ratelim_end how;

	if (!t->answered || t->unknown)
		how = RATELIM_FAILED;
	else if (it->status == 429 || it->status == 503 || it->status == 529)
		how = RATELIM_LIMITED;
	else
		how = it->status >= 500 ? RATELIM_FAILED : RATELIM_OK;
	/* Only a 2xx tells how fast the model answers (ratelim.h). */
	ratelim_done(it->m->rl, how, how == RATELIM_OK && it->status >= 200 &&
	    it->status <= 299 ? now - it->started : -1, now);
}

/* An account-level refusal: the key or the account, so every other
 * request would fail too. Stop, once. */
static void
refused(struct sync *s, const struct sync_item *it, const struct result *r)
{
	if (s->stop)
		return;
	s->stop = it->status == 401 || it->status == 403 ? QB_EX_NOPERM :
	    QB_EX_UNAVAILABLE;
	qb_warn("stopped: HTTP %ld%s%s for id \"%s\": an account-level "
	    "refusal", it->status, r->emsg ? ": " : "", r->emsg ? r->emsg : "",
	    it->id);
}

/* The wait the server asks of it, in seconds, or -1. It holds every
 * request to the model when the status says to come back. */
static double
server_wait(struct sync_item *it, double now)
{
	double wait;

	wait = http_retry_after(it->ra_ms, it->ra, time(NULL));
	if (wait < 0 && it->status == 429)
		wait = synchttp_reset_wait(it);
	if (wait >= 0 && result_http_outcome(it->status) == OUTCOME_RETRY)
		ratelim_pause(it->m->rl, now + wait);
	return wait;
}

/*
 * Why it is not tried again, or NULL to try it again after *delay s;
 * wait is the server's, or -1.
 */
static const char *
noretry(struct sync *s, struct sync_item *it, int unknown, double wait,
    double now, double *delay, char *buf, size_t n)
{
	*delay = wait >= 0 ? wait : http_jitter(&s->h, it->tries - 1);
	if (wait > SYNC_WAIT_MAX)
		snprintf(buf, n, "the server asks to wait %.0f s, past the "
		    "%.0f s qb waits", wait, SYNC_WAIT_MAX);
	else if (unknown && s->unknown_left <= 0)
		snprintf(buf, n, "not sent again: the run's --unknown-retries "
		    "(%d) are spent", s->o->unknown_retries);
	else if (it->tries > s->h.retries)
		snprintf(buf, n, "tried %d times (QB_MAX_RETRIES %d)",
		    it->tries, s->h.retries);
	else if (it->deadline > 0 && now + *delay >= it->deadline)
		snprintf(buf, n, "its deadline passes before another try");
	else if (!ratelim_budget_retry(&s->rb))
		snprintf(buf, n, "the run's retry budget is spent");
	else
		return NULL;
	return buf;
}

/*
 * Put it back at the front of the waiting list if the try calls for
 * another and one is allowed: 1. Else 0, with why not (if it was a
 * retry) added to t->msg.
 */
static int
again(struct sync *s, struct sync_item *it, struct try *t, double now)
{
	struct sync_model *m = it->m;
	double wait = -1, delay;
	char why[160];
	size_t n;
	int retry;

	retry = !t->answered || t->unknown || t->r.outcome == OUTCOME_RETRY;
	if (t->answered && !t->unknown) {
		/* x-should-retry overrides (qb-providers(7), OPENAI "Errors"). */
		if (it->should_retry >= 0)
			retry = it->should_retry;
		wait = server_wait(it, now);
	}
	if (s->stop)
		snprintf(why, sizeof(why), "not tried again: stopped");
	else if (!retry)
		why[0] = '\0';
	else if (noretry(s, it, t->unknown, wait, now, &delay, why,
	    sizeof(why)) == NULL) {
		if (t->unknown) {
			s->unknown_left--;
			s->nunknown++;
			m->unknown++;
		}
		s->nretry++;
		m->retries++;
		it->not_before = now + delay;
		qb_note(1, "id \"%s\": %s; try %d in %.2f s%s", it->id, t->msg,
		    it->tries + 1, delay, wait >= 0 ? " (the server's wait, "
		    "for the whole model)" : "");
		syncitem_add(&s->wait, it, 1);
		return 1;
	}
	if (why[0] != '\0') {
		n = strlen(t->msg);
		snprintf(t->msg + n, sizeof(t->msg) - n, "; %s", why);
	}
	return 0;
}

void
syncend_done(struct sync *s, struct sync_item *it, CURLcode cc)
{
	struct try t;
	double now = qtime_mono();
	curl_off_t up;

	up = retire(s, it);
	judge(s, it, cc, up, now, &t);
	feed(it, &t, now);
	if (t.answered && !t.unknown && t.r.status == RESULT_SUCCEEDED)
		settle(s, it, &t.r, NULL);
	else if (t.answered && !t.unknown && t.r.account) {
		refused(s, it, &t.r);
		settle(s, it, &t.r, NULL);
	} else if (!again(s, it, &t, now))
		settle(s, it, &t.r, t.msg);
}
