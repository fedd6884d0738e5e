/*
 * ratelim.c: admission control of the synchronous engine, per model: a
 * concurrency window that adapts AIMD-style, requests and tokens per
 * minute over a sliding 60 s, a pause from Retry-After, and the run's
 * retry budget. A token bucket that starts full would let a minute and
 * a half of tokens through in the first minute (tests/3400-qb-submit-sync.t),
 * so each limiter keeps the admissions of the last 60 s instead, oldest
 * first, in a ring.
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <stdlib.h>

#include "base/xmem.h"
#include "sync/ratelim.h"

#define MINUTE		60.0	/* s: the window of rpm and tpm */
#define CUTGAP		2.0	/* s: at most one halving in this time */
#define LATSEEN		8	/* answers (RATELIM_OK) before latency counts */
#define LATRISE		3.0	/* this times the baseline is slow */
#define LATFLOOR	0.1	/* s: smallest baseline that counts as such */
#define LATALPHA	0.1	/* weight of the newest latency in the average */
#define LATDRIFT	0.02	/* how fast the baseline follows a rise */
#define RINGMIN		16	/* admissions: smallest ring allocated */

struct adm {
	double		 exp;	/* s: when it leaves the minute (taken + 60) */
	long long	 tok;	/* estimated tokens */
};

struct ratelim {
	int		 cap;		/* concurrency: most the window grows to */
	int		 inflight;	/* taken, not yet done */
	double		 rpm, tpm;	/* per 60 s; <= 0 for no limit */
	double		 win;		/* window: floor(win) may be in flight */
	double		 lastcut;	/* s: when win was last halved */
	double		 pause;		/* s: nothing admitted before this */
	double		 avglat;	/* s: average RATELIM_OK latency */
	double		 baselat;	/* s: what avglat is when unhindered */
	long		 nlat;		/* RATELIM_OK answers seen */
	struct adm	*q;		/* owned ring of size slots */
	size_t		 head, n, size;	/* size is 0 or a power of 2 */
	long long	 tok;		/* sum of tok over the n in the ring */
};

static const struct adm *
at(const struct ratelim *rl, size_t i)
{
	return &rl->q[(rl->head + i) & (rl->size - 1)];
}

/*
 * Seconds w from now to t, rounded up so that now + w >= t in floating
 * point too: a caller that sleeps w and asks again finds t passed.
 */
static double
until(double t, double now)
{
	double w = t - now;

	if (w <= 0)
		return 0;
	while (now + w < t)
		w = nextafter(w, INFINITY);
	return w;
}

/* Move the ring into size slots (a power of 2 holding rl->n), head 0. */
static void
resize(struct ratelim *rl, size_t size)
{
	struct adm *q;
	size_t i;

	q = xreallocarray(NULL, size, sizeof(*q));
	for (i = 0; i < rl->n; i++)
		q[i] = *at(rl, i);
	free(rl->q);
	rl->q = q;
	rl->size = size;
	rl->head = 0;
}

/* Forget the admissions that left the minute by now; shrink the ring
 * when it is mostly empty, so memory follows the last minute's traffic. */
static void
prune(struct ratelim *rl, double now)
{
	const struct adm *a;

	while (rl->n > 0 && (a = at(rl, 0))->exp <= now) {
		rl->tok -= a->tok;
		rl->head = (rl->head + 1) & (rl->size - 1);
		rl->n--;
	}
	if (rl->size > RINGMIN && rl->n < rl->size / 4)
		resize(rl, rl->size / 2);
}

struct ratelim *
ratelim_new(int concurrency, double rpm, double tpm)
{
	struct ratelim *rl;

	rl = xcalloc(1, sizeof(*rl));
	rl->cap = concurrency < 1 ? 1 : concurrency;
	rl->rpm = rpm > 0 ? rpm : 0;
	rl->tpm = tpm > 0 ? tpm : 0;
	rl->win = rl->cap < 4 ? rl->cap : 4;
	rl->lastcut = -INFINITY;
	rl->pause = -INFINITY;
	return rl;
}

void
ratelim_free(struct ratelim *rl)
{
	if (rl == NULL)
		return;
	free(rl->q);
	free(rl);
}

/* May a request of tok tokens join cnt requests of sum tokens in the
 * minute? Alone it always may: that is how an oversize request goes. */
static int
fits(const struct ratelim *rl, size_t cnt, long long sum, long long tok)
{
	if (rl->rpm > 0 && cnt > 0 && (double)cnt + 1 > rl->rpm)
		return 0;
	if (rl->tpm > 0 && sum > 0 && (double)sum + (double)tok > rl->tpm)
		return 0;
	return 1;
}

double
ratelim_wait(const struct ratelim *rl, long long tokens, double now)
{
	const struct adm *a;
	long long sum = rl->tok;
	size_t i = 0, cnt = rl->n;
	double w = 0, p;

	if (tokens < 0)
		tokens = 0;
	/*
	 * Drop from the count, oldest first, what left the minute by now,
	 * then what will leave it until the request fits: it may go when
	 * the last one dropped leaves. An empty minute always fits, so the
	 * walk ends.
	 */
	for (; i < rl->n && (a = at(rl, i))->exp <= now; i++) {
		cnt--;
		sum -= a->tok;
	}
	while (!fits(rl, cnt, sum, tokens)) {
		a = at(rl, i++);
		cnt--;
		sum -= a->tok;
		w = until(a->exp, now);
	}
	if ((p = until(rl->pause, now)) > w)
		w = p;
	if (rl->inflight >= (int)rl->win && w < RATELIM_BUSY)
		w = RATELIM_BUSY;
	return w;
}

void
ratelim_take(struct ratelim *rl, long long tokens, double now)
{
	struct adm *a;
	double exp = now + MINUTE;

	if (tokens < 0)
		tokens = 0;
	prune(rl, now);
	if (rl->n == rl->size)
		resize(rl, rl->size ? rl->size * 2 : RINGMIN);
	/* Keep the ring sorted should the clock step back. */
	if (rl->n > 0 && at(rl, rl->n - 1)->exp > exp)
		exp = at(rl, rl->n - 1)->exp;
	a = &rl->q[(rl->head + rl->n) & (rl->size - 1)];
	a->exp = exp;
	a->tok = tokens;
	rl->n++;
	rl->tok += tokens;
	rl->inflight++;
}

void
ratelim_done(struct ratelim *rl, enum ratelim_end how, double latency,
    double now)
{
	if (rl->inflight > 0)
		rl->inflight--;
	if (how == RATELIM_OK && latency >= 0) {
		rl->avglat = rl->nlat == 0 ? latency :
		    rl->avglat + LATALPHA * (latency - rl->avglat);
		if (++rl->nlat == LATSEEN)
			rl->baselat = rl->avglat;
		else if (rl->nlat > LATSEEN) {
			/* Everyone slower at once: the provider queues us. */
			if (rl->avglat > LATRISE * (rl->baselat > LATFLOOR ?
			    rl->baselat : LATFLOOR))
				how = RATELIM_LIMITED;
			rl->baselat += (rl->avglat < rl->baselat ? 1 : LATDRIFT) *
			    (rl->avglat - rl->baselat);
		}
	}
	switch (how) {
	case RATELIM_OK:
		rl->win += 1 / rl->win;
		if (rl->win > rl->cap)
			rl->win = rl->cap;
		break;
	case RATELIM_LIMITED:
		/* One overload answers several requests with 429: cut once. */
		if (now - rl->lastcut < CUTGAP)
			break;
		rl->lastcut = now;
		rl->win /= 2;
		if (rl->win < 1)
			rl->win = 1;
		break;
	case RATELIM_FAILED:
		break;
	}
}

void
ratelim_pause(struct ratelim *rl, double until)
{
	rl->pause = until;
}

int
ratelim_inflight(const struct ratelim *rl)
{
	return rl->inflight;
}

double
ratelim_window(const struct ratelim *rl)
{
	return rl->win;
}

long long
ratelim_tokens_minute(const struct ratelim *rl, double now)
{
	const struct adm *a;
	long long sum = rl->tok;
	size_t i;

	for (i = 0; i < rl->n && (a = at(rl, i))->exp <= now; i++)
		sum -= a->tok;
	return sum;
}

long
ratelim_requests_minute(const struct ratelim *rl, double now)
{
	size_t i;

	for (i = 0; i < rl->n && at(rl, i)->exp <= now; i++)
		continue;
	return (long)(rl->n - i);
}

void
ratelim_budget_init(struct ratelim_budget *b, double ratio, long min)
{
	b->ratio = ratio;
	b->min = min;
	b->first = 0;
	b->retries = 0;
}

void
ratelim_budget_first(struct ratelim_budget *b)
{
	b->first++;
}

int
ratelim_budget_retry(struct ratelim_budget *b)
{
	/* The 1e-9: ratio * first may fall just short of a whole number. */
	if ((double)b->retries + 1 > (double)b->min + b->ratio *
	    (double)b->first + 1e-9)
		return 0;
	b->retries++;
	return 1;
}
