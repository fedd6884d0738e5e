/*
 * sync.h: the synchronous engine of qb-submit --sync (DESIGN.md §7): item
 * records in, one result record per item out, in completion order, each
 * flushed. One thread drives libcurl multi; a second only reads input.
 * The engine is common/sync.c; input in syncin.c, output and metrics in
 * syncout.c, the members a record carries in syncjoin.c, array input
 * (--array: embeddings inputs packed, split back, bisected) in syncarr.c.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNC_H
#define QB_SYNC_H

#include <yajl/yajl_gen.h>

#include "json/jscan.h"

struct sync_opts {
	const char	*prov;		/* provider name; NULL: openai */
	const char	*base, *keyfile;	/* NULL: from the environment */
	const char	*metrics;	/* Prometheus text file, or NULL */
	int		 concurrency;	/* requests in flight per model, >= 1 */
	double		 rpm, tpm;	/* per model per 60 s; 0: no limit */
	double		 deadline;	/* s after an item is read; 0: none */
	int		 unknown_retries;	/* run budget of retries after an
					   unknown outcome (case 20) */
	int		 strict;	/* the first bad line stops (exit 65) */
	int		 array;		/* embeddings inputs per request, >= 1 */
	long long	 array_tokens;	/* estimated tokens per array request */
};

/*
 * Call the provider's synchronous endpoint for every item read from the
 * files (NULL-terminated; "-" is standard input) and print a result
 * record for each item answered or given up: "id" and the members of
 * result_emit (result.h), then every other member of the item. Bad
 * lines are reported FILE:LINE and skipped. Returns the exit status:
 * 0 every item answered 2xx; 1 some item failed for good or some line
 * was bad; 75 some item left for later (a retry outcome); 77 stopped by a
 * 401 or 403, 69 by another account-level refusal; 74 standard output
 * failed; 65 a bad line under strict; 66 an input could not be opened.
 * Dies 78 on a bad configuration (no key, bad base URL) before any input
 * is read.
 */
int sync_run(const struct sync_opts *o, char **files);

#endif
