/*
 * Unit tests for price.c: loading a prices file and finding a model's
 * price, with the dated-snapshot rule.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/exits.h"
#include "record/price.h"
#include "tap.h"

static struct prices P = PRICES_INIT;

/* The model whose price model gets, or "-" for none. */
static const char *
priced(const char *model)
{
	int i = price_find(&P, model);

	return i < 0 ? "-" : P.p[i].model;
}

int
main(void)
{
	char path[] = "/tmp/qb-price.XXXXXX";
	FILE *f;
	unsigned long bad = 0;
	int fd, rc;

	if ((fd = mkstemp(path)) == -1 || (f = fdopen(fd, "w")) == NULL)
		return 2;
	fputs("{\"model\":\"gpt-4o\",\"input_per_mtok\":1.25,\"output_per_mtok\":5}\n"
	    "{\"model\":\"gpt-4o-mini\",\"input_per_mtok\":0.075,\"output_per_mtok\":0.3}\n"
	    "not json\n"
	    "{\"model\":\"m\",\"input_per_mtok\":-1,\"output_per_mtok\":1}\n"
	    "{\"model\":\"gpt-4o\",\"input_per_mtok\":9,\"output_per_mtok\":9}\n"
	    "{\"model\":\"claude-3-5-haiku\",\"input_per_mtok\":0.4,\"output_per_mtok\":2}\n",
	    f);
	fclose(f);
	fprintf(stderr, "# three lines are expected to be reported below\n");
	rc = price_load(&P, path, 0, &bad);
	TAP_OK(rc == 0 && bad == 3, "three lines skipped: not JSON, a negative price, a second price");
	TAP_OK(P.n == 3, "three prices kept");
	TAP_OK(P.n >= 1 && P.p[0].in == 1.25 && P.p[0].out == 5,
	    "the first price of gpt-4o stands");
	tap_is(priced("gpt-4o"), "gpt-4o", "a model's own price");
	tap_is(priced("gpt-4o-mini"), "gpt-4o-mini", "not its prefix's");
	tap_is(priced("gpt-4o-2024-08-06"), "gpt-4o", "a dated snapshot has its model's price");
	tap_is(priced("gpt-4o-mini-2024-07-18"), "gpt-4o-mini", "the longest priced name wins");
	tap_is(priced("gpt-4o-audio"), "-", "another model has none");
	tap_is(priced("claude-3-5-haiku-20241022"), "claude-3-5-haiku", "Anthropic's dated names too");
	tap_is(priced("gpt-4"), "-", "a shorter name has none");
	tap_is(priced(NULL), "-", "no model, no price");
	price_free(&P);
	TAP_OK(P.n == 0 && P.p == NULL, "price_free empties");
	fprintf(stderr, "# then its first bad line under strict, and a missing file\n");
	bad = 0;
	rc = price_load(&P, path, 1, &bad);
	TAP_OK(rc == QB_EX_DATAERR && bad == 1 && P.n == 2,
	    "strict: the first bad line returns 65, the prices before it kept");
	price_free(&P);
	unlink(path);
	bad = 0;
	TAP_OK(price_load(&P, path, 0, &bad) == QB_EX_NOINPUT && P.n == 0,
	    "a missing file returns 66");
	return tap_done();
}
