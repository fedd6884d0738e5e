/*
 * provimpl.h: what the implementations of the batch APIs share (openai.c,
 * azure.c, anthropic.c; nothing else includes this): reading answers,
 * checking ids, batch calls, walking batch lists, and reading a batch
 * object's times into a provider_job.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_PROVIMPL_H
#define QB_PROVIMPL_H

#include "provider/provops.h"

/*
 * Batches asked for per list page: the most OpenAI gives (qb-providers(7),
 * OPENAI "Retrieve, cancel, list"); Anthropic gives up to 1000.
 */
#define PROVIDER_LIST_LIMIT 100

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
 * older API, Anthropic: qb-providers(7), AZURE OPENAI and ANTHROPIC "The
 * message batch"). Absent, null or other members are skipped; at most
 * JOB_TIMES are kept.
 */
void provider_job_times(yajl_val b, struct provider_job *j,
    const char *const *keys);

#endif
