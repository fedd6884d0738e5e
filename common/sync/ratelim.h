/*
 * ratelim.h: admission control for the synchronous engine (qb-submit(1)),
 * one struct ratelim per (provider, model). Pure logic over a clock the
 * caller passes in (seconds, CLOCK_MONOTONIC via qtime_mono()): no I/O, no
 * sleeping, so it is unit-tested with a fake clock.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_RATELIM_H
#define QB_RATELIM_H

struct ratelim;		/* opaque; ratelim_new, ratelim_free */

/*
 * A limiter: at most concurrency requests in flight (>= 1; less counts
 * as 1), and in any 60-second window at most rpm requests and tpm
 * estimated tokens admitted (0 or less: no such limit). The concurrency
 * window starts at min(concurrency, 4) and adapts AIMD-style between 1
 * and concurrency. Memory: a (time, tokens) pair of 16 bytes for each
 * request admitted in the last 60 s, limits or not, in a ring at most 4
 * times that (16 at least; pairs past their minute go at the next
 * ratelim_take); ratelim_free releases it all. Never NULL: out of memory
 * is qb_oom.
 */
struct ratelim *ratelim_new(int concurrency, double rpm, double tpm);
void ratelim_free(struct ratelim *rl);	/* NULL is fine */

/*
 * Seconds from now until a request of tokens estimated tokens (< 0
 * counts as 0) may be admitted: 0 when it may go now. Never negative;
 * may be large. A request of more tokens than tpm is admitted alone,
 * when no tokens were admitted in the last 60 s (it could never fit
 * otherwise). With rpm below 1, one request a minute. Does not admit.
 * When the concurrency window is full, no passing of time frees it: the
 * answer is then at least RATELIM_BUSY, a time to look again at the
 * latest; ask again after each ratelim_done. Waits are exact: for the
 * same tokens, ratelim_wait at now + w is 0 unless the window is full or
 * something was taken or paused meanwhile.
 */
#define RATELIM_BUSY	1.0
double ratelim_wait(const struct ratelim *rl, long long tokens, double now);
/* Admit one request of tokens tokens now (after ratelim_wait said 0); it
 * is in flight until ratelim_done, and counts against rpm and tpm for
 * 60 s. */
void ratelim_take(struct ratelim *rl, long long tokens, double now);

/* How a request that was admitted ended, for ratelim_done. */
enum ratelim_end {
	RATELIM_OK,		/* an answer, not a rate limit (2xx, 4xx...) */
	RATELIM_LIMITED,	/* 429, or 529/503 overloaded: halve the window */
	RATELIM_FAILED		/* no answer, or a 5xx: no window change */
};
/*
 * A request ended after latency seconds: in flight - 1; the window grows
 * by 1/window on RATELIM_OK (additive increase, about +1 per window of
 * successes) and halves on RATELIM_LIMITED (at most once per 2 seconds,
 * so a burst of 429s from one overload halves it once). Rising latency is
 * hidden throttling: the latencies of RATELIM_OK answers are averaged
 * (exponentially, weight 0.1 to the newest), and once 8 are seen an
 * average over 3 times the baseline (at least 0.1 s) counts as
 * RATELIM_LIMITED too. The baseline is the average after 8 answers; it
 * follows the average down at once and up slowly (2% of the gap an
 * answer), so that one long answer among short ones, or a steady move to
 * longer answers, is not taken for throttling, while everyone's answers
 * slowing at once is. A latency < 0 means "do not judge it" (pass it for
 * answers that are not 2xx: a fast refusal says nothing of the model's
 * speed).
 */
void ratelim_done(struct ratelim *rl, enum ratelim_end how, double latency,
    double now);
/*
 * Hold every admission of this model until until (from a Retry-After,
 * retry-after-ms or rate-limit reset header, already capped by the
 * caller). The latest header counts: until replaces the hold, even when
 * it is earlier than the one before (tests/3400-qb-submit-sync.t), and
 * one in the past ends the hold: call it only for an answer that carried
 * such a header.
 */
void ratelim_pause(struct ratelim *rl, double until);

/* For metrics and -v: requests in flight, the concurrency window (a
 * fraction: floor(window) may be in flight), and the tokens and requests
 * admitted in the last 60 s. */
int ratelim_inflight(const struct ratelim *rl);
double ratelim_window(const struct ratelim *rl);
long long ratelim_tokens_minute(const struct ratelim *rl, double now);
long ratelim_requests_minute(const struct ratelim *rl, double now);

/*
 * A retry budget shared by a run, so failures never multiply traffic:
 * retries may be at most ratio (0.1) of first tries so far, plus a floor
 * of min (10) retries: retries <= min + ratio * first.
 * ratelim_budget_first notes a first try; ratelim_budget_retry returns 1
 * and counts the retry if the budget allows one, else 0. Plain counters:
 * no memory to free.
 */
struct ratelim_budget {
	double	 ratio;
	long	 min, first, retries;
};
void ratelim_budget_init(struct ratelim_budget *b, double ratio, long min);
void ratelim_budget_first(struct ratelim_budget *b);
int ratelim_budget_retry(struct ratelim_budget *b);

#endif
