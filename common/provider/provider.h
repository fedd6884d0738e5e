/*
 * provider.h: what qb knows of each provider it speaks, for every tool:
 * a table of facts (the caps of a batch file, how its lines are written,
 * where its key and base URL come from) found by name, and the fields of
 * a provider's batch object that job records carry. Nothing here needs
 * libcurl, so qb-pack and qb-reconcile link none. The tools that talk to
 * a provider use provops.h; the facts are in qb-providers(7).
 *
 * Adding a provider means adding its facts to provider.c and its
 * operations in a file of its own, listed in provops.c. qb-pack reads
 * name, line_format, the caps and endpoint; keep them.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_PROVIDER_H
#define QB_PROVIDER_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

/* How a batch input line is written (qb-providers(7), OPENAI "Batch
 * input", ANTHROPIC "Create"). */
enum provider_line {
	PROVIDER_LINE_OPENAI,		/* {"custom_id","method","url","body"} */
	PROVIDER_LINE_ANTHROPIC		/* {"custom_id","params"} */
};

struct provider {
	const char	*name;		/* "openai", "anthropic", "azure" */
	enum provider_line line_format;	/* how a batch input line is written */
	long long	 max_requests;	/* requests per batch file */
	long long	 max_bytes;	/* bytes per batch file, line endings included */
	long long	 max_inputs;	/* embedding inputs per file; 0: no such cap */
	const char	*inputs_endpoint; /* the endpoint max_inputs applies to */
	const char	*endpoint;	/* default endpoint of an item that names none */
	const char	*key_env;	/* environment variable holding the key */
	const char	*base_env;	/* environment variable overriding the base URL */
	const char	*base_default;	/* base URL, NULL if none (Azure: one per resource) */
};

#define JOB_TIMES	12
#define JOB_RESULTS	2

/*
 * A provider batch object seen through the job record's fields. Strings
 * point into the batch tree it was made from (or into the struct) and live
 * as long as both do.
 */
struct provider_job {
	const char	*id;		/* batch id */
	const char	*status;	/* the provider's status word, as spelled */
	int		 ended;		/* the status can no longer change */
	const char	*input_file_id;	/* NULL if the provider has none */
	int		 has_counts;
	long long	 total, completed, failed;	/* request counts */
	yajl_val	 errors;	/* the batch's error list as given, or NULL */
	int		 ntime;
	struct {
		const char *key;	/* job record key: "created_at", ... */
		char	 val[32];	/* RFC 3339 UTC: 2026-11-30T16:00:00Z */
	} time[JOB_TIMES];
	int		 nresult;
	struct {
		const char *kind;	/* "output" or "errors": names the local file */
		const char *ref;	/* what fetch takes: a file id or a URL */
	} result[JOB_RESULTS];
};

/* The provider called name, or NULL. The table is static; do not free it. */
const struct provider *provider_find(const char *name);
/* Format unix time t (seconds) as RFC 3339 UTC into out (at least 21 bytes). */
void provider_time(long long t, char *out, size_t outlen);

#endif
