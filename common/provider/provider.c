/*
 * provider.c: the facts of every provider qb speaks (qb-providers(7)),
 * found by name, and the time format of job records. No libcurl here:
 * the operations are in openai.c, anthropic.c and azure.c (provops.c).
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "provider/provider.h"

static const struct provider providers[] = {
	{
		.name = "openai",
		.line_format = PROVIDER_LINE_OPENAI,
		/* Per batch file: qb-providers(7), OPENAI "Batch input"
		 * and "Limits". */
		.max_requests = 50000,
		.max_bytes = 200000000LL,
		.max_inputs = 50000,	/* embedding inputs summed over a file */
		.inputs_endpoint = "/v1/embeddings",
		.endpoint = "/v1/chat/completions",
		.key_env = "OPENAI_API_KEY",
		.base_env = "OPENAI_BASE_URL",
		.base_default = "https://api.openai.com/v1",
	},
	{
		.name = "anthropic",
		.line_format = PROVIDER_LINE_ANTHROPIC,
		/* Per batch: qb-providers(7), ANTHROPIC "Create" and
		 * "Limits". */
		.max_requests = 100000,
		.max_bytes = 256000000LL,
		.endpoint = "/v1/messages",
		.key_env = "ANTHROPIC_API_KEY",
		.base_env = "ANTHROPIC_BASE_URL",
		.base_default = "https://api.anthropic.com",	/* paths hold /v1 */
	},
	{
		/* Lines as OpenAI's (qb-providers(7), AZURE OPENAI). */
		.name = "azure",
		.line_format = PROVIDER_LINE_OPENAI,
		/* Per batch file: 100,000 requests, input 200 MB; no cap of
		 * its own on embedding inputs. */
		.max_requests = 100000,
		.max_bytes = 200000000LL,
		.max_inputs = 0,
		.inputs_endpoint = "/v1/embeddings",
		.endpoint = "/v1/chat/completions",	/* see azure.c */
		.key_env = "AZURE_OPENAI_API_KEY",
		.base_env = "AZURE_OPENAI_ENDPOINT",	/* https://RES.openai.azure.com/openai/v1 */
		.base_default = NULL,			/* every resource has its own host */
	},
};

const struct provider *
provider_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++)
		if (strcmp(providers[i].name, name) == 0)
			return &providers[i];
	return NULL;
}

void
provider_time(long long t, char *out, size_t outlen)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outlen, "%lld", t);
}
