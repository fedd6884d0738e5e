/*
 * ratelim.c: libFuzzer harness for the rate-limit headers and what comes
 * of them. Each input line is a header line "name: value", taken by the
 * synchronous engine's own reader (synchttp_header); then the waits they
 * ask for (http_retry_after, synchttp_reset_wait, rfc3339_parse) drive a
 * limiter through ratelim_pause, ratelim_wait, ratelim_take and
 * ratelim_done as the engine would. Waits are never negative but for -1;
 * the limiter's are never negative at all.
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <strings.h>

#include "base/rfc3339.h"
#include "fuzz.h"
#include "http/http.h"
#include "sync/ratelim.h"
#include "sync/synchttp.h"
#include "sync/syncint.h"

#define NOW	1700000000	/* a fixed wall clock for HTTP-dates */

struct ctx {
	struct sync_item it;
	struct ratelim	*rl;
	double		 now;
	int		 inflight;
};

static void
header(const char *p, size_t len, void *arg)
{
	struct ctx *c = arg;
	struct sync_item *it = &c->it;
	const char *v;
	char val[128];
	long long t, tok;
	double w;

	if ((v = memchr(p, ':', len)) != NULL) {
		http_hval(val, sizeof(val), v + 1, len - (size_t)(v - p) - 1);
		rfc3339_parse(val, &t);
	}
	/* The engine's own header reader, status lines and all. */
	synchttp_header(it, p, len);
	/* An answer ends with each line: what the engine does then. */
	w = http_retry_after(it->ra_ms, it->ra, NOW);
	if (w < 0 && w != -1)
		abort();
	if (w < 0) {
		w = synchttp_reset_wait(it);
		if (w < 0 && w != -1)
			abort();
	}
	tok = (long long)(len * 997) - 1000;
	c->now += (double)(len % 7) / 4;
	if (c->inflight > 0) {
		ratelim_done(c->rl, (enum ratelim_end)(len % 3),
		    (double)(len % 11) / 3 - 1, c->now);
		c->inflight--;
	}
	if (w >= 0)
		ratelim_pause(c->rl, c->now + w);
	if ((w = ratelim_wait(c->rl, tok, c->now)) < 0 || isnan(w))
		abort();
	if (w == 0) {
		ratelim_take(c->rl, tok, c->now);
		c->inflight++;
	}
	ratelim_inflight(c->rl);
	ratelim_window(c->rl);
	ratelim_tokens_minute(c->rl, c->now);
	ratelim_requests_minute(c->rl, c->now);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c;
	struct ratelim_budget b;

	fuzz_quiet();
	memset(&c, 0, sizeof(c));
	c.now = 1000;
	c.rl = ratelim_new(size > 0 ? data[0] % 9 : 4,
	    size > 1 ? data[1] * 10 : 0, size > 2 ? data[2] * 1000 : 0);
	fuzz_lines(data, size, header, &c);
	ratelim_free(c.rl);
	ratelim_budget_init(&b, 0.1, 10);
	ratelim_budget_first(&b);
	ratelim_budget_retry(&b);
	return 0;
}
