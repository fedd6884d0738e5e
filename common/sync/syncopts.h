/*
 * syncopts.h: the options of the synchronous engine, as qb-submit --sync
 * sets them (qb-submit(1)). The tool fills them in; every file of the
 * engine reads them and none changes them.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCOPTS_H
#define QB_SYNCOPTS_H

struct sync_opts {
	const char	*prov;		/* provider name; NULL: openai */
	const char	*base, *keyfile;	/* NULL: from the environment */
	const char	*metrics;	/* Prometheus text file, or NULL */
	int		 concurrency;	/* requests in flight per model, >= 1 */
	double		 rpm, tpm;	/* per model per 60 s; 0: no limit */
	double		 deadline;	/* s after an item is read; 0: none */
	int		 unknown_retries;	/* run budget of retries after an
					   unknown outcome */
	int		 strict;	/* the first bad line stops (exit 65) */
	int		 array;		/* embeddings inputs per request, >= 1 */
	long long	 array_tokens;	/* estimated tokens per array request */
};

#endif
