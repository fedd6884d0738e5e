/*
 * Unit tests for ratelim.c, on a fake clock: the concurrency window and
 * its AIMD changes, latency as a limit, requests and tokens per sliding
 * minute, the oversize request, the pause (a server's wait, held for the
 * model: qb-providers(7) HTTP Retries) and the retry budget.
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <stdio.h>

#include "sync/ratelim.h"
#include "tap.h"

/* Admit n requests of tok tokens at now, as ratelim_wait allows; 1 if all went. */
static int
take(struct ratelim *rl, int n, long long tok, double now)
{
	int good = 1;

	while (n-- > 0) {
		good &= ratelim_wait(rl, tok, now) == 0;
		ratelim_take(rl, tok, now);
	}
	return good;
}

/* As take, but each request is answered at once (RATELIM_FAILED: the window
 * stays as it is), so only rpm, tpm and the pause hold them back. */
static int
go(struct ratelim *rl, int n, long long tok, double now)
{
	int good = 1;

	while (n-- > 0) {
		good &= ratelim_wait(rl, tok, now) == 0;
		ratelim_take(rl, tok, now);
		ratelim_done(rl, RATELIM_FAILED, 0, now);
	}
	return good;
}

static void
concurrency(void)
{
	struct ratelim *rl;

	rl = ratelim_new(3, 0, 0);
	TAP_OK(ratelim_window(rl) == 3, "cap 3: window starts at 3");
	TAP_OK(take(rl, 3, 10, 0), "cap 3: three go at once");
	TAP_OK(ratelim_inflight(rl) == 3, "cap 3: three in flight");
	TAP_OK(ratelim_wait(rl, 10, 0) == RATELIM_BUSY && ratelim_wait(rl, 10, 500) ==
	    RATELIM_BUSY, "cap 3: the fourth waits RATELIM_BUSY, however late");
	ratelim_done(rl, RATELIM_FAILED, 1, 1);
	TAP_OK(ratelim_inflight(rl) == 2 && ratelim_wait(rl, 10, 1) == 0,
	    "cap 3: one ended, the next may go");
	ratelim_free(rl);

	rl = ratelim_new(10, 0, 0);
	TAP_OK(ratelim_window(rl) == 4, "cap 10: window starts at 4");
	TAP_OK(take(rl, 4, 0, 0) && ratelim_wait(rl, 0, 0) > 0,
	    "cap 10: a fifth waits");
	ratelim_free(rl);

	rl = ratelim_new(0, 0, 0);
	TAP_OK(ratelim_window(rl) == 1 && take(rl, 1, 0, 0) &&
	    ratelim_wait(rl, 0, 0) > 0, "cap 0 counts as 1");
	ratelim_free(rl);
	ratelim_free(NULL);
}

static void
aimd(void)
{
	struct ratelim *rl;
	double w[6];
	int i, good;

	rl = ratelim_new(10, 0, 0);
	w[0] = ratelim_window(rl);
	for (i = 1; i <= 5; i++) {
		ratelim_take(rl, 0, i);
		ratelim_done(rl, RATELIM_OK, 1, i);
		w[i] = ratelim_window(rl);
	}
	TAP_OK(w[1] == 4.25, "aimd: one RATELIM_OK adds 1/window");
	TAP_OK(w[4] > 4.9 && w[4] < 5 && w[5] > 5.1 && w[5] < 5.2,
	    "aimd: +1 after a window (5) of RATELIM_OK");
	for (i = 0; i < 100; i++) {
		ratelim_take(rl, 0, 6);
		ratelim_done(rl, RATELIM_OK, 1, 6);
	}
	TAP_OK(ratelim_window(rl) == 10, "aimd: never above the cap");
	ratelim_take(rl, 0, 9);
	ratelim_done(rl, RATELIM_FAILED, 1, 10);
	TAP_OK(ratelim_window(rl) == 10, "aimd: RATELIM_FAILED changes nothing");
	ratelim_take(rl, 0, 9);
	ratelim_done(rl, RATELIM_LIMITED, 1, 10);
	TAP_OK(ratelim_window(rl) == 5, "aimd: RATELIM_LIMITED halves");
	ratelim_take(rl, 0, 9);
	ratelim_done(rl, RATELIM_LIMITED, 1, 11.9);
	TAP_OK(ratelim_window(rl) == 5, "aimd: a 429 1.9 s later does not");
	ratelim_take(rl, 0, 9);
	ratelim_done(rl, RATELIM_LIMITED, 1, 12);
	TAP_OK(ratelim_window(rl) == 2.5, "aimd: one 2 s later halves again");
	TAP_OK(take(rl, 2, 0, 12) && ratelim_wait(rl, 0, 12) > 0,
	    "aimd: window 2.5 lets 2 in flight");
	for (i = 0; i < 3; i++) {
		ratelim_done(rl, RATELIM_LIMITED, 1, 14 + 2 * i);
		ratelim_take(rl, 0, 14 + 2 * i);
	}
	TAP_OK(ratelim_window(rl) == 1, "aimd: never below 1");
	TAP_OK(ratelim_inflight(rl) == 2 && ratelim_wait(rl, 0, 20) > 0,
	    "aimd: above the window, nothing goes");
	ratelim_done(rl, RATELIM_OK, 1, 21);
	TAP_OK(ratelim_window(rl) == 2 && ratelim_inflight(rl) == 1 &&
	    ratelim_wait(rl, 0, 21) == 0, "aimd: a RATELIM_OK at 1 makes it 2: one goes");
	ratelim_done(rl, RATELIM_OK, 1, 21);
	TAP_OK(ratelim_window(rl) == 2.5 && ratelim_inflight(rl) == 0,
	    "aimd: and another makes it 2.5");
	good = 1;
	for (i = 0; i < 10; i++) {
		ratelim_done(rl, RATELIM_FAILED, 1, 22);
		good &= ratelim_inflight(rl) == 0;
	}
	TAP_OK(good, "aimd: more ratelim_done than ratelim_take stays at 0");
	ratelim_free(rl);
}

/* The window after an RATELIM_OK at window w, as ratelim_done computes it. */
static double
grown(double w)
{
	return w + 1 / w;
}

/* n answers of latency lat at times t, t+1, ...: RATELIM_OK. */
static void
answers(struct ratelim *rl, int n, double lat, double t)
{
	int i;

	for (i = 0; i < n; i++) {
		ratelim_take(rl, 0, t + i);
		ratelim_done(rl, RATELIM_OK, lat, t + i);
	}
}

static void
latency(void)
{
	struct ratelim *rl;
	double w;
	int i;

	rl = ratelim_new(8, 0, 0);
	answers(rl, 7, 0.5, 0);
	answers(rl, 1, 30, 10);
	TAP_OK(ratelim_window(rl) > 5, "latency: judged only after 8 answers");
	ratelim_free(rl);

	/* 8 answers of 0.5 s: baseline 0.5; one long answer is no sign. */
	rl = ratelim_new(64, 0, 0);
	answers(rl, 8, 0.5, 0);
	w = ratelim_window(rl);
	answers(rl, 1, 10, 10);
	TAP_OK(ratelim_window(rl) == grown(w),
	    "latency: one 10 s answer among 0.5 s ones is not throttling");
	/* Everyone slower (a provider queueing us): cut, once per 2 s. */
	w = ratelim_window(rl);
	for (i = 0; i < 20 && ratelim_window(rl) >= w; i++)
		answers(rl, 1, 4, 20 + i * 0.01);
	TAP_OK(i <= 8 && ratelim_window(rl) < w,
	    "latency: answers 8x slower for all cut the window within 8 answers");
	w = ratelim_window(rl);
	answers(rl, 1, 4, 21);
	TAP_OK(ratelim_window(rl) == w, "latency: not again within 2 s");
	answers(rl, 1, 4, 23);
	TAP_OK(ratelim_window(rl) == w / 2, "latency: again after 2 s while still slow");
	ratelim_free(rl);

	/* A steady mix of short and long answers is not throttling. */
	rl = ratelim_new(64, 0, 0);
	for (i = 0, w = 4; i < 200; i++, w = grown(w))
		answers(rl, 1, i % 2 ? 8 : 0.5, i);
	TAP_OK(ratelim_window(rl) == w, "latency: a steady mix of 0.5 s and 8 s answers only grows the window");
	ratelim_free(rl);

	/* A move to longer answers: cut at first, then the baseline follows. */
	rl = ratelim_new(64, 0, 0);
	answers(rl, 50, 0.5, 0);
	w = ratelim_window(rl);
	answers(rl, 200, 15, 100);
	TAP_OK(ratelim_window(rl) > 10, "latency: the baseline follows a lasting move to 15 s answers");
	ratelim_free(rl);

	/* Fast answers: the 0.1 s floor. Not judged: < 0. */
	rl = ratelim_new(16, 0, 0);
	answers(rl, 8, 0.001, 0);
	w = ratelim_window(rl);
	answers(rl, 1, 2.5, 10);
	TAP_OK(ratelim_window(rl) == grown(w), "latency: 1 ms answers then 2.5 s: under the 0.1 s floor's 0.3 s average");
	w = ratelim_window(rl);
	answers(rl, 1, -1, 11);
	answers(rl, 1, -1, 12);
	TAP_OK(ratelim_window(rl) == grown(grown(w)), "latency: < 0 is not judged");
	ratelim_free(rl);
}

static void
rpm(void)
{
	struct ratelim *rl;

	rl = ratelim_new(100, 5, 0);
	TAP_OK(go(rl, 1, 0, 0) && go(rl, 1, 0, 1) && go(rl, 3, 0, 4),
	    "rpm 5: five go in 4 s");
	TAP_OK(ratelim_requests_minute(rl, 4) == 5, "rpm 5: five in the minute");
	TAP_OK(ratelim_wait(rl, 0, 5) == 55, "rpm 5: the sixth waits for the first");
	TAP_OK(ratelim_wait(rl, 0, 60) == 0 && ratelim_requests_minute(rl, 60) == 4,
	    "rpm 5: the first leaves the minute at 60 s");
	TAP_OK(go(rl, 1, 0, 60) && ratelim_wait(rl, 0, 60) == 1,
	    "rpm 5: then the second, at 61 s");
	TAP_OK(ratelim_requests_minute(rl, 200) == 0, "rpm 5: all gone at 200 s");
	ratelim_free(rl);

	rl = ratelim_new(4, 0.5, 0);
	TAP_OK(go(rl, 1, 0, 0) && ratelim_wait(rl, 0, 1) == 59,
	    "rpm 0.5: one a minute");
	ratelim_free(rl);
}

/*
 * 12 requests of 6,500 tokens, --concurrency 3 --tpm 60000 (as in
 * tests/3400-qb-submit-sync.t).
 * Each answer comes lat seconds after its request went (0: at once);
 * time moves to the next answer or to when ratelim_wait says. Never more
 * than 3 in flight, at most 9 admitted in any 60 s; want is the times
 * they went (with instant answers, all 12 by 60 s).
 */
static void
twelve(double lat, const char *want)
{
	struct ratelim *rl;
	double t[12], now = 0, next, w;
	int n = 0, ended = 0, maxin = 0, maxmin = 0, i, j, steps = 0;
	char d[128], got[256];
	size_t len = 0;

	rl = ratelim_new(3, 0, 60000);
	while (ended < 12 && steps++ < 1000) {
		w = INFINITY;
		while (n < 12 && (w = ratelim_wait(rl, 6500, now)) == 0) {
			ratelim_take(rl, 6500, now);
			t[n++] = now;
			if (ratelim_inflight(rl) > maxin)
				maxin = ratelim_inflight(rl);
		}
		if (n == 12)
			w = INFINITY;
		/* Answers in the order they went, each lat after. */
		next = ended < n ? t[ended] + lat : INFINITY;
		if (next <= now) {
			ratelim_done(rl, RATELIM_OK, lat, now);
			ended++;
		} else
			now = next < now + w ? next : now + w;
	}
	for (i = 0; i < n; i++) {
		for (j = i; j < n && t[j] < t[i] + 60; j++)
			continue;
		if (j - i > maxmin)
			maxmin = j - i;
		len += snprintf(got + len, sizeof(got) - len, "%s%g",
		    i ? " " : "", t[i]);
	}
	snprintf(d, sizeof(d), "12 at tpm 60000, %gs answers: all answered",
	    lat);
	TAP_OK(n == 12 && ended == 12, d);
	snprintf(d, sizeof(d), "12 at tpm 60000, %gs answers: at most 3 in "
	    "flight", lat);
	TAP_OK(maxin == 3, d);
	snprintf(d, sizeof(d), "12 at tpm 60000, %gs answers: at most 9 in "
	    "any 60 s", lat);
	TAP_OK(maxmin == 9, d);
	snprintf(d, sizeof(d), "12 at tpm 60000, %gs answers: admitted at %s",
	    lat, want);
	tap_is(got, want, d);
	ratelim_free(rl);
}

static void
tpm(void)
{
	struct ratelim *rl;

	rl = ratelim_new(10, 0, 1000);
	TAP_OK(take(rl, 1, 400, 0) && take(rl, 1, 400, 10),
	    "tpm 1000: 400 and 400 go");
	TAP_OK(ratelim_tokens_minute(rl, 10) == 800, "tpm 1000: 800 in the minute");
	TAP_OK(ratelim_wait(rl, 200, 20) == 0 && ratelim_wait(rl, 201, 20) == 40,
	    "tpm 1000: 200 fits, 201 waits for the first 400 to leave");
	TAP_OK(ratelim_wait(rl, 1000, 20) == 50,
	    "tpm 1000: 1000 waits for both to leave");
	TAP_OK(ratelim_wait(rl, 1001, 20) == 50,
	    "tpm 1000: oversize 1001 waits for an empty minute");
	TAP_OK(ratelim_wait(rl, 5000, 70) == 0 && take(rl, 1, 5000, 70),
	    "tpm 1000: oversize goes alone once the minute is empty");
	TAP_OK(ratelim_tokens_minute(rl, 70) == 5000 && ratelim_wait(rl, 1, 71) == 59 &&
	    ratelim_wait(rl, 0, 71) == 59,
	    "tpm 1000: after it, nothing goes for 60 s");
	TAP_OK(ratelim_wait(rl, 5000, 130) == 0 && ratelim_tokens_minute(rl, 130) == 0,
	    "tpm 1000: then anything again");
	TAP_OK(ratelim_wait(rl, -5, 130) == 0 && take(rl, 1, -5, 130) &&
	    ratelim_tokens_minute(rl, 130) == 0, "tpm 1000: negative tokens are 0");
	ratelim_free(rl);

	/* A start away from 0: waits still land on the expiry exactly. */
	rl = ratelim_new(10, 0, 1000);
	take(rl, 1, 1000, 0.1);
	TAP_OK(ratelim_wait(rl, 1, 0.7) > 0 && ratelim_wait(rl, 1, 0.7 +
	    ratelim_wait(rl, 1, 0.7)) == 0, "tpm: now + ratelim_wait is never too early");
	ratelim_free(rl);

	twelve(0, "0 0 0 0 0 0 0 0 0 60 60 60");
	twelve(5, "0 0 0 5 5 5 10 10 10 60 60 60");
	twelve(25, "0 0 0 25 25 25 50 50 50 75 75 75");
}

static void
hold(void)
{
	struct ratelim *rl;

	rl = ratelim_new(4, 0, 0);
	ratelim_pause(rl, 20);
	TAP_OK(ratelim_wait(rl, 1, 0) == 20, "pause: retry-after 20");
	ratelim_pause(rl, 40);
	TAP_OK(ratelim_wait(rl, 1, 0) == 40, "pause: then 40");
	ratelim_pause(rl, 5);
	TAP_OK(ratelim_wait(rl, 1, 0) == 5, "pause: then 5: the latest counts");
	TAP_OK(ratelim_wait(rl, 1, 3) == 2 && ratelim_wait(rl, 1, 5) == 0 &&
	    ratelim_wait(rl, 1, 1e9) == 0, "pause: ends at 5, never negative");
	ratelim_pause(rl, -100);
	TAP_OK(ratelim_wait(rl, 1, 0) == 0, "pause: one in the past holds nothing");
	ratelim_free(rl);

	rl = ratelim_new(4, 0, 100);
	take(rl, 1, 100, 0);
	ratelim_pause(rl, 30);
	TAP_OK(ratelim_wait(rl, 1, 10) == 50, "pause: the longer of pause and tpm");
	ratelim_pause(rl, 80);
	TAP_OK(ratelim_wait(rl, 1, 10) == 70, "pause: the longer of tpm and pause");
	ratelim_free(rl);
}

static void
budget(void)
{
	struct ratelim_budget b;
	int i, n;

	ratelim_budget_init(&b, 0.1, 10);
	for (n = 0; ratelim_budget_retry(&b); n++)
		continue;
	TAP_OK(n == 10 && b.retries == 10, "budget: a floor of 10 retries");
	for (i = 0; i < 100; i++)
		ratelim_budget_first(&b);
	for (n = 0; ratelim_budget_retry(&b); n++)
		continue;
	TAP_OK(n == 10 && b.retries == 20,
	    "budget: 100 first tries, 10 more");
	for (i = 0; i < 30; i++)
		ratelim_budget_first(&b);
	for (n = 0; ratelim_budget_retry(&b); n++)
		continue;
	TAP_OK(n == 3 && b.retries == 23 && b.first == 130,
	    "budget: 30 more, 3 more (0.1 * 130 is 13)");
	ratelim_budget_init(&b, 0.1, 0);
	for (i = 0; i < 9; i++)
		ratelim_budget_first(&b);
	TAP_OK(!ratelim_budget_retry(&b) && b.retries == 0, "budget: 9 first tries, no floor: none");
	ratelim_budget_first(&b);
	TAP_OK(ratelim_budget_retry(&b) && !ratelim_budget_retry(&b), "budget: 10 first tries: one");
}

/* Memory: many minutes of traffic, the ring follows the last minute. */
static void
churn(void)
{
	struct ratelim *rl;
	int good, i;

	rl = ratelim_new(1, 0, 0);
	for (i = 0; i < 60000; i++)
		go(rl, 1, 2, i / 100.0);
	good = ratelim_requests_minute(rl, 600) == 5999 &&
	    ratelim_tokens_minute(rl, 600) == 2 * 5999;
	for (i = 0; i < 60; i++)
		go(rl, 1, 2, 600 + 10 * i);
	good &= ratelim_requests_minute(rl, 1195) == 6 &&
	    ratelim_tokens_minute(rl, 1195) == 12;
	TAP_OK(good, "churn: 60000 admissions, then 6 in the last minute");
	ratelim_free(rl);

	rl = ratelim_new(4, 0, 0);
	go(rl, 1, 1, 100);
	go(rl, 1, 1, 90);
	TAP_OK(ratelim_requests_minute(rl, 159) == 2 && ratelim_wait(rl, 0, 50) == 0 &&
	    ratelim_requests_minute(rl, 160) == 0,
	    "churn: a clock that steps back keeps the minute whole");
	ratelim_free(rl);
}

int
main(void)
{
	concurrency();
	aimd();
	latency();
	rpm();
	tpm();
	hold();
	budget();
	churn();
	return tap_done();
}
