/*
 * syncend.c: how a try of the synchronous engine ended, and what comes of
 * it: a result printed, or another try after a backoff with full jitter
 * or the server's wait, which then holds the whole model (ratelim_pause). An
 * answer decides by its status; no answer after the request went out
 * whole is an unknown outcome: it may have run and been billed (case 20).
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A transfer ended with libcurl result cc. */
void
syncend_done(struct sync *s, struct sync_item *it, CURLcode cc)
{
	struct sync_model *m = it->m;
	struct result r;
	enum ratelim_end how;
	curl_off_t up = 0;
	double now = qtime_mono(), wait = -1, delay;
	char msg[512], why[160], page[208], *w;
	const char *code;
	int answered, unknown = 0, retry, json;

	curl_easy_getinfo(it->easy, CURLINFO_SIZE_UPLOAD_T, &up);
	curl_multi_remove_handle(s->multi, it->easy);
	curl_easy_cleanup(it->easy);
	it->easy = NULL;
	syncitem_del(&s->fly, it);
	synchttp_scrub(s, &it->resp);
	/* An answer, then a broken connection: the answer speaks. */
	answered = it->status >= 100 && (cc == CURLE_OK || it->status >= 400);
	syncout_count(m, answered ? it->status : 0);
	json = answered && !it->big && result_answer(&s->rp, it->resp.p,
	    it->resp.len, it->status, &r) == 0;
	if (!answered) {
		/* Sent whole (or half answered): it may have run and been billed. */
		unknown = up >= (curl_off_t)it->blen || it->status >= 100;
		snprintf(msg, sizeof(msg), "POST %s: %s%s", it->url,
		    it->ebuf[0] ? it->ebuf : curl_easy_strerror(cc), unknown ?
		    "; the request was sent: outcome unknown, it may have "
		    "been billed" : "");
		redact_str(msg, sizeof(msg));	/* the URL's userinfo */
		code = unknown ? "outcome_unknown" : cc ==
		    CURLE_OPERATION_TIMEDOUT ? "timeout" : "connection_failed";
		syncout_noanswer(&r, RESULT_ERRORED, "connection_error", code, msg);
	} else if (!json && it->status >= 200 && it->status <= 299) {
		unknown = 1;
		snprintf(msg, sizeof(msg), "POST %s: HTTP %ld with %s; it may "
		    "have been billed", it->url, it->status, it->big ?
		    "an answer too large to keep" : "an answer that is not a "
		    "JSON object");
		redact_str(msg, sizeof(msg));
		syncout_noanswer(&r, RESULT_ERRORED, "api_error",
		    "outcome_unknown", msg);
	} else if (!json) {
		/* An error page (a proxy's HTML): its start says what. */
		snprintf(page, sizeof(page), "%.200s", it->resp.len > 0 ?
		    it->resp.p : "no answer body");
		for (w = page; *w != '\0'; w++)
			if ((unsigned char)*w < ' ')
				*w = ' ';
		r.emsg = page;
	}
	if (answered)
		qb_note(2, "POST %s -> %ld (%.3f s)%s%s", it->url, it->status,
		    now - it->started, it->rid[0] != '\0' ? " " : "", it->rid);
	else
		qb_note(2, "POST %s -> %s", it->url, curl_easy_strerror(cc));
	if (it->rid[0] != '\0')
		r.request_id = it->rid;
	if (!answered || unknown)
		how = RATELIM_FAILED;
	else if (it->status == 429 || it->status == 503 || it->status == 529)
		how = RATELIM_LIMITED;
	else
		how = it->status >= 500 ? RATELIM_FAILED : RATELIM_OK;
	/* Only a 2xx tells how fast the model answers (ratelim.h). */
	ratelim_done(m->rl, how, how == RATELIM_OK && it->status >= 200 &&
	    it->status <= 299 ? now - it->started : -1, now);

	if (answered && !unknown && r.status == RESULT_SUCCEEDED) {
		settle(s, it, &r, NULL);
		return;
	}
	if (answered && !unknown && r.account) {
		/* The key or the account: every other request would fail too. */
		if (!s->stop) {
			s->stop = it->status == 401 || it->status == 403 ?
			    QB_EX_NOPERM : QB_EX_UNAVAILABLE;
			qb_warn("stopped: HTTP %ld%s%s for id \"%s\": an "
			    "account-level refusal", it->status, r.emsg ? ": " :
			    "", r.emsg ? r.emsg : "", it->id);
		}
		settle(s, it, &r, NULL);
		return;
	}
	retry = !answered || unknown || r.outcome == OUTCOME_RETRY;
	if (answered && !unknown && it->should_retry >= 0)
		retry = it->should_retry;	/* §1.11: it overrides */
	if (answered && !unknown) {
		wait = http_retry_after(it->ra_ms, it->ra, time(NULL));
		if (wait < 0 && it->status == 429)
			wait = synchttp_reset_wait(it);
		/* The server's word holds for every request to the model. */
		if (wait >= 0 && result_http_outcome(it->status) == OUTCOME_RETRY)
			ratelim_pause(m->rl, now + wait);
	}
	if (answered && !unknown)
		snprintf(msg, sizeof(msg), "HTTP %ld%s%.300s", it->status,
		    r.emsg != NULL ? ": " : "", r.emsg != NULL ? r.emsg : "");
	if (s->stop)
		snprintf(why, sizeof(why), "not tried again: stopped");
	else if (!retry)
		why[0] = '\0';
	else if (noretry(s, it, unknown, wait, now, &delay, why,
	    sizeof(why)) == NULL) {
		if (unknown) {
			s->unknown_left--;
			s->nunknown++;
			m->unknown++;
		}
		s->nretry++;
		m->retries++;
		it->not_before = now + delay;
		qb_note(1, "id \"%s\": %s; try %d in %.2f s%s", it->id, msg,
		    it->tries + 1, delay, wait >= 0 ? " (the server's wait, "
		    "for the whole model)" : "");
		syncitem_add(&s->wait, it, 1);
		return;
	}
	w = msg + strlen(msg);
	if (why[0] != '\0')
		snprintf(w, sizeof(msg) - (size_t)(w - msg), "; %s", why);
	settle(s, it, &r, msg);
}
