/*
 * provider.h: one interface for every provider qb speaks. A provider is a
 * table of facts (limits, line format, where its key and base URL come
 * from) plus the operations the tools need. Adding a provider means
 * adding one file with one such table and listing it in provider.c.
 *
 * NOTE for whoever extends this: qb-pack reads name, line_format,
 * max_requests and max_bytes; keep them.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_PROVIDER_H
#define QB_PROVIDER_H

#include <stdio.h>
#include <yajl/yajl_tree.h>

#include "http/http.h"

enum provider_line {
	PROVIDER_LINE_OPENAI,		/* {"custom_id","method","url","body"} (PROVIDERS.md §1.3) */
	PROVIDER_LINE_ANTHROPIC		/* {"custom_id","params"} (PROVIDERS.md §2.2) */
};

/* What a submit needs to know about one batch file (a pack record). */
struct provider_submit {
	const char	*path;		/* the batch input file */
	const char	*sha256;	/* its digest, 64 hex; goes into metadata */
	const char	*endpoint;	/* "/v1/chat/completions" ... */
	const char	*model;		/* may be NULL */
	/*
	 * NULL, or the id of an input file already uploaded with these very
	 * bytes (an earlier batch of the same digest that ran nothing, e.g.
	 * failed token_limit_exceeded, PROVIDERS.md §1.10): the batch is
	 * created from it without uploading again. A 4xx refusal of it (the
	 * file was deleted or expired) falls back to a fresh upload.
	 * Providers without files (anthropic) ignore it.
	 */
	const char	*input_file_id;
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

struct provider {
	const char	*name;		/* "openai", "anthropic" */
	enum provider_line line_format;	/* how a batch input line is written */
	long long	 max_requests;	/* requests per batch file */
	long long	 max_bytes;	/* bytes per batch file, line endings included */
	long long	 max_inputs;	/* embedding inputs per file; 0: no such cap */
	const char	*inputs_endpoint; /* the endpoint max_inputs applies to */
	const char	*endpoint;	/* default endpoint of an item that names none */
	const char	*limits_src;	/* the PROVIDERS.md sections the caps come from */
	long long	 file_ttl;	/* seconds uploaded and result files are kept; 0: the provider's default */
	const char	*key_env;	/* environment variable holding the key */
	const char	*base_env;	/* environment variable overriding the base URL */
	const char	*base_default;	/* base URL, with its version path (…/v1) */

	/*
	 * The header lines that authenticate key (and any other fixed
	 * headers), into hdrs, a NULL-terminated array of n slots; strings
	 * are malloc'd and the caller frees them. Returns the count used.
	 */
	int	(*auth)(const char *key, char **hdrs, int n);
	/*
	 * Upload and create one batch. On success returns 0 and *batch is the
	 * provider's batch object (the caller frees it with yajl_tree_free).
	 * Otherwise returns a QB_EX_* status with the reason in h->err, and
	 * sets *unknown when the batch may exist all the same (the create
	 * timed out or broke after it was sent, or its answer was garbled):
	 * the caller must not submit the file again blindly. Never retries a
	 * create that was sent (see http_json).
	 */
	int	(*submit)(struct http *h, const struct provider_submit *s,
		    yajl_val *batch, int *unknown);
	/*
	 * Fetch (get) or cancel batch id into *batch; returns as submit, and
	 * h->status tells a 404 from other refusals.
	 */
	int	(*get)(struct http *h, const char *id, yajl_val *batch);
	int	(*cancel)(struct http *h, const char *id, yajl_val *batch);
	/*
	 * Stream result ref (a provider_job result) into out, a regular file
	 * opened for writing (truncated and rewritten on a retry). Returns 0
	 * or a QB_EX_* status, with the reason in h->err and the HTTP status
	 * in h->status.
	 */
	int	(*fetch)(struct http *h, const char *ref, FILE *out);
	/*
	 * Read batch into *j. Returns 0, or -1 with a reason in err (errlen
	 * bytes) when the object lacks what a job needs (id, status).
	 */
	int	(*job)(yajl_val batch, struct provider_job *j, char *err,
		    size_t errlen);
	/*
	 * Look through the provider's batches, newest first, for the one a
	 * lost create of the file with digest sha256 made, skipping ids
	 * known(arg, id) claims (known may be NULL) and stopping at the
	 * first batch created before since (unix seconds). OpenAI matches
	 * metadata qb_sha256; Anthropic batches carry no metadata, so there
	 * any unclaimed batch of that time is refused as ambiguous (see
	 * anthropic.c). Returns 0 with *batch the batch object (the caller
	 * frees it) or NULL when there is none; or a QB_EX_* status with the
	 * reason in h->err.
	 */
	int	(*find)(struct http *h, const char *sha256, long long since,
		    int (*known)(void *arg, const char *id), void *arg,
		    yajl_val *batch);
};

/*
 * The provider called name ("openai", "anthropic"), or NULL. The returned
 * table is static; do not free it. Its operations may be NULL for a
 * provider that only qb-pack knows so far.
 */
const struct provider *provider_find(const char *name);

/*
 * Set h up to talk to p: the base URL is base if not NULL, else the
 * environment variable p->base_env, else p->base_default; the key is the
 * first line of keyfile if not NULL, else p->key_env. A missing key or an
 * unreadable key file exits QB_EX_CONFIG ("OPENAI_API_KEY is not set").
 * Release with http_free.
 */
void provider_open(const struct provider *p, struct http *h,
    const char *base, const char *keyfile);

/*
 * Check what provider_open would use for p before any work is done: exit
 * QB_EX_CONFIG when the base URL (base, else p->base_env, else the
 * default) is not an http or https URL, or, if key is set and there is no
 * keyfile, when p->key_env is set but empty. (common/provcheck.c)
 */
void provider_check(const struct provider *p, const char *base,
    const char *keyfile, int key);

/*
 * One open connection per provider a run talks to, so that a stream of
 * records for mixed providers reuses connections. Zero-initialise; each
 * opened connection is set up by provider_open with base and keyfile.
 */
struct provider_conns {
	const struct provider	*p[4];
	struct http		 h[4];
	int			 n;
	const char		*base, *keyfile;	/* not owned */
};

/* The connection to p, opened on first use (exits as provider_open). */
struct http *provider_conn(struct provider_conns *c, const struct provider *p);
/* Close every connection. */
void provider_conns_free(struct provider_conns *c);

/*
 * Parse body, the answer to what ("POST /v1/batches"), as a JSON object
 * with a string member need; the caller frees it. Returns NULL with the
 * reason in h->err when it is not one (the caller returns QB_EX_PROTOCOL).
 */
yajl_val provider_answer(struct http *h, const char *what,
    const struct buf *body, const char *need);
/*
 * Ids go into paths: 0 if id is made only of letters, digits, '_', '-'
 * and '.' (1 to 256 of them), else -1 with the reason in h->err.
 */
int provider_safe_id(struct http *h, const char *id);

/*
 * METHOD COLLECTION/ID SUFFIX (COLLECTION "/batches" or
 * "/v1/messages/batches", SUFFIX "" or "/cancel") answered by a batch
 * object with an "id": *batch is that object (the caller frees it with
 * yajl_tree_free). Returns 0 or a QB_EX_* status (reason in h->err):
 * QB_EX_DATAERR for an id unfit for a path, QB_EX_PROTOCOL for an answer
 * that is not a batch. A POST is retried only as a create is (http_send):
 * a 409 to a cancel is the answer, not a reason to try again.
 */
int provider_batch_call(struct http *h, const char *method,
    const char *collection, const char *id, const char *suffix,
    yajl_val *batch);

/*
 * GET one page of a provider's batch list at path into r, and point *data
 * at its "data" array; *page (freed first, then owned by the caller,
 * released with yajl_tree_free) holds the parsed answer, and *more says
 * whether "has_more" asks for another page. Returns 0 or a QB_EX_*
 * status with the reason in h->err (QB_EX_PROTOCOL: not a list).
 */
int provider_list_page(struct http *h, const char *path, struct http_resp *r,
    yajl_val *page, yajl_val *data, int *more);

/*
 * Start reading batch object b into *j for a provider's job operation:
 * zero *j and point j->id and j->status at b's "id" and its member status
 * ("status", "processing_status"). Returns 0, or -1 with the reason in
 * err (errlen bytes) when either is not a string.
 */
int provider_job_init(yajl_val b, struct provider_job *j, const char *status,
    char *err, size_t errlen);
/*
 * Time member key of b in *t: unix seconds, or a string of them, or an
 * RFC 3339 string, which is also put in str (n bytes; str may be NULL)
 * when it fits. Returns 0, or -1 when the member is absent, null or not
 * a time.
 */
int provider_json_time(yajl_val b, const char *key, long long *t, char *str,
    size_t n);
/*
 * Add to j->time the members of b named by keys (NULL-terminated, static)
 * that hold a time: unix seconds (a number or a string of digits) are
 * written as RFC 3339 UTC, an RFC 3339 string is kept as given (Azure's
 * older API, Anthropic: PROVIDERS.md §1.5, §2.3). Absent, null or other
 * members are skipped; at most JOB_TIMES are kept.
 */
void provider_job_times(yajl_val b, struct provider_job *j,
    const char *const *keys);

/* Batches asked for per list page (OpenAI §1.7: up to 100; Anthropic §2.5). */
#define PROVIDER_LIST_LIMIT 100

/*
 * Walk a provider's batch list at path (newest first), paging with the
 * query parameter cursor ("after", "after_id") set to the last id seen,
 * and q (NULL or "api-version=...") added to each page: visit(arg, data,
 * i) is called for each batch data->u.array.values[i] made at or after
 * since (unix seconds); it may take the batch out of the page (set the
 * slot to NULL) and returns 1 to stop. The walk also stops at the first
 * older batch and at the end. Returns 0 or a QB_EX_* status with the
 * reason in h->err.
 */
int provider_walk(struct http *h, const char *path, const char *cursor,
    const char *q, long long since, int (*visit)(void *arg, yajl_val data,
    size_t i), void *arg);

/* Format unix time t (seconds) as RFC 3339 UTC into out (at least 21 bytes). */
void provider_time(long long t, char *out, size_t outlen);

#endif
