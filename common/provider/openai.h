/*
 * openai.h: the OpenAI Batch API operations (openai.c), for providers that
 * speak the same API on another host with other headers (azure.c). Each
 * takes q, a query ("api-version=2024-10-21") put on every request path,
 * or NULL for none; otherwise they are the operations of provops.h.
 * openai_submit_q also takes ttl, the seconds the uploaded file and the
 * batch's output and error files are to be kept (expires_after and
 * output_expires_after, 3600 to 2592000: qb-providers(7), OPENAI "Files"
 * and "Create"), or 0 to leave the provider's default.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_OPENAI_H
#define QB_OPENAI_H

#include "provider/provops.h"

int	openai_submit_q(struct http *h, const struct provider_submit *s,
	    yajl_val *batch, int *unknown, const char *q, long long ttl);
int	openai_get_q(struct http *h, const char *id, yajl_val *batch,
	    const char *q);
int	openai_cancel_q(struct http *h, const char *id, yajl_val *batch,
	    const char *q);
int	openai_fetch_q(struct http *h, const char *ref, FILE *out,
	    const char *q);
int	openai_find_q(struct http *h, const char *sha256, long long since,
	    int (*known)(void *, const char *), void *arg, yajl_val *batch,
	    const char *q);
/* Read an OpenAI (or Azure) batch object: the job operation of provops.h. */
int	openai_job(yajl_val b, struct provider_job *j, char *err,
	    size_t errlen);

#endif
