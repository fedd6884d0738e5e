/*
 * price.h: token prices for an outcome's cost_usd (qb(7) RECORD
 * FORMATS), read from a JSONL file of {"model","input_per_mtok",
 * "output_per_mtok"} in USD per million tokens (qb-reconcile --prices).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_PRICE_H
#define QB_PRICE_H

#include <stddef.h>

struct price {
	char	*model;		/* owned */
	double	 in, out;	/* USD per million input / output tokens */
};

struct prices {
	struct price	*p;	/* owned; n of them */
	size_t		 n;
};

#define PRICES_INIT { NULL, 0 }

/*
 * Add the prices in the file at path (plain or .gz, "-" for stdin) to ps.
 * A line that is not such an object, or that prices a model a second time
 * (the first stands), is reported as FILE:LINE, skipped and counted in
 * *nbad. Returns 0; or, reported: QB_EX_DATAERR when strict and a line
 * was skipped (after "stopped at the first bad line (--strict)"),
 * QB_EX_NOINPUT when path cannot be opened, QB_EX_IOERR on a read error.
 * The prices read before a failure stay in ps.
 */
int price_load(struct prices *ps, const char *path, int strict,
    unsigned long *nbad);

/*
 * Index into ps->p of the price for model: its own, else that of the
 * longest priced name that model starts with followed by '-' and a digit
 * (a dated snapshot, gpt-4o-2024-08-06, has gpt-4o's price; gpt-4o-mini
 * does not). Returns -1 when there is none or model is NULL.
 */
int price_find(const struct prices *ps, const char *model);

/* Free what ps holds and empty it. */
void price_free(struct prices *ps);

#endif
