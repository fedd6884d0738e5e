/*
 * azure.c: Azure OpenAI batch (qb-providers(7), AZURE OPENAI) behind
 * struct provider_ops. The API is OpenAI's (openai.c does the work); what
 * differs is here and in its facts (provider.c): the key goes in an
 * api-key header, never in Authorization; there is no default host, the
 * base URL is the resource's (https://RES.openai.azure.com/openai/v1, or
 * …/openai for the older dated API); and AZURE_OPENAI_API_VERSION, when
 * set, is put on every request as ?api-version=V (the v1 API needs none,
 * the older one does).
 *
 * Lines are written as for OpenAI, "url": "/v1/chat/completions", and the
 * create sends "endpoint" as the pack record gives it. Azure's docs are
 * not consistent here: their lines say "/v1/chat/completions" but their
 * create examples say "endpoint": "/chat/completions"; the service
 * takes both, so qb keeps one spelling unless the pack says otherwise
 * (qb-pack -e). body.model is the deployment name, the same on every line
 * of a file; qb-pack already groups files by model.
 *
 * Older API versions answer RFC 3339 string times and "Validating",
 * "Completed": openai_job reads both. Azure does not expire a job at
 * 24 h; qb never assumed that it would.
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/exits.h"
#include "base/msg.h"
#include "provider/openai.h"

#define VERSION_ENV "AZURE_OPENAI_API_VERSION"
/*
 * A resource holds 500 batch files, 10,000 if they expire (expires_after
 * 1209600 to 2592000 s): kept the longest allowed.
 */
#define FILE_TTL 2592000

/*
 * The query every request carries, "api-version=V", or NULL when
 * AZURE_OPENAI_API_VERSION is unset or empty. az_auth checked it when the
 * connection was opened.
 */
static const char *
az_query(char *out, size_t n)
{
	const char *v = getenv(VERSION_ENV);

	if (v == NULL || *v == '\0' ||
	    (size_t)snprintf(out, n, "api-version=%s", v) >= n)
		return NULL;
	return out;
}

/*
 * The api-key header, and a check of the api-version to come: -1 when it
 * is not one (reported).
 */
static int
az_auth(const char *key, char **hdrs, int n)
{
	struct buf b = BUF_INIT;
	const char *v = getenv(VERSION_ENV);

	if (v != NULL && (strlen(v) > 64 || strspn(v,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
	    != strlen(v))) {
		qb_fail(QB_EX_CONFIG, "%s \"%.64s\": not an API version such "
		    "as 2024-10-21", VERSION_ENV, v);
		return -1;
	}
	if (n < 2)
		return 0;
	buf_printf(&b, "api-key: %s", key);
	hdrs[0] = b.p;
	hdrs[1] = NULL;
	return 1;
}

static int
az_submit(struct http *h, const struct provider_submit *s, yajl_val *batch,
    int *unknown)
{
	char q[96];

	return openai_submit_q(h, s, batch, unknown, az_query(q, sizeof(q)),
	    FILE_TTL);
}

static int
az_get(struct http *h, const char *id, yajl_val *batch)
{
	char q[96];

	return openai_get_q(h, id, batch, az_query(q, sizeof(q)));
}

static int
az_cancel(struct http *h, const char *id, yajl_val *batch)
{
	char q[96];

	return openai_cancel_q(h, id, batch, az_query(q, sizeof(q)));
}

static int
az_fetch(struct http *h, const char *ref, FILE *out)
{
	char q[96];

	return openai_fetch_q(h, ref, out, az_query(q, sizeof(q)));
}

static int
az_find(struct http *h, const char *sha256, long long since,
    int (*known)(void *, const char *), void *arg, yajl_val *batch)
{
	char q[96];

	return openai_find_q(h, sha256, since, known, arg, batch,
	    az_query(q, sizeof(q)));
}

const struct provider_ops azure_ops = {
	.name = "azure",
	.auth = az_auth,
	.submit = az_submit,
	.get = az_get,
	.cancel = az_cancel,
	.fetch = az_fetch,
	.job = openai_job,
	.find = az_find,
};
