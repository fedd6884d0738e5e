/*
 * provops.h: the operations of the providers' batch APIs, for the tools
 * that talk to a provider (qb-submit, qb-poll, qb-reap and the --sync
 * engine): a table of operations per provider, and the connection to it
 * made from its facts (provider.h), a key and a base URL.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_PROVOPS_H
#define QB_PROVOPS_H

#include <stdio.h>
#include <yajl/yajl_tree.h>

#include "http/http.h"
#include "provider/provider.h"

/* What a submit needs to know about one batch file (a pack record). */
struct provider_submit {
	const char	*path;		/* the batch input file */
	const char	*sha256;	/* its digest, 64 hex; goes into metadata */
	const char	*endpoint;	/* "/v1/chat/completions" ... */
	const char	*model;		/* may be NULL */
	/*
	 * NULL, or the id of an input file already uploaded with these very
	 * bytes (an earlier batch of the same digest that ran nothing, e.g.
	 * failed token_limit_exceeded: qb-providers(7), OPENAI "Limits"): the
	 * batch is created from it without uploading again. A 4xx refusal of
	 * it (the file was deleted or expired) falls back to a fresh upload.
	 * Providers without files (anthropic) ignore it.
	 */
	const char	*input_file_id;
};

struct provider_ops {
	const char	*name;		/* the provider's, as in provider.h */
	/*
	 * The header lines that authenticate key (and any other fixed
	 * headers), into hdrs, a NULL-terminated array of n slots; strings
	 * are malloc'd and the caller frees them. Returns the count used, or
	 * -1 when the provider's configuration is bad (reported; the status
	 * is QB_EX_CONFIG).
	 */
	int	(*auth)(const char *key, char **hdrs, int n);
	/*
	 * Upload and create one batch. On success returns 0 and *batch is the
	 * provider's batch object (the caller frees it with yajl_tree_free).
	 * Otherwise returns a QB_EX_* status with the reason in h->err, and
	 * sets *unknown when the batch may exist all the same (the create
	 * timed out or broke after it was sent, or its answer was garbled):
	 * the caller must not submit the file again blindly. Never retries a
	 * create that was sent (see http_send).
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
 * The operations of provider p (static, not to be freed), or NULL when
 * qb cannot talk to it; a member may be NULL for an operation that p
 * lacks.
 */
const struct provider_ops *provider_ops(const struct provider *p);

/*
 * Set h up to talk to p: the base URL is base if not NULL, else the
 * environment variable p->base_env, else p->base_default; the key is the
 * first line of keyfile if not NULL, else p->key_env. Returns 0 (release
 * h with http_free), or, reported, QB_EX_CONFIG for no base URL, no key
 * ("OPENAI_API_KEY is not set"), an unreadable key file or another bad
 * setting, and QB_EX_OSERR when libcurl cannot start; h then holds
 * nothing.
 */
int provider_open(const struct provider *p, struct http *h, const char *base,
    const char *keyfile);

/*
 * Check what provider_open would use for p before any work is done: the
 * base URL (base, else p->base_env, else the default) must be an http or
 * https URL and, if key is set and there is no keyfile, p->key_env must
 * not be set but empty. Returns 0, or QB_EX_CONFIG after saying why.
 * (provcheck.c)
 */
int provider_check(const struct provider *p, const char *base,
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

/*
 * Point *h at the connection to p, opened on first use after
 * provider_check (with the key) passes. Returns 0, or the status of a
 * check or provider_open that failed (reported); both are tried again on
 * the next call.
 */
int provider_conn(struct provider_conns *c, const struct provider *p,
    struct http **h);
/* Close every connection. */
void provider_conns_free(struct provider_conns *c);

#endif
