/*
 * provider.c: the table of providers.
 * SPDX-License-Identifier: ISC
 */
#include <string.h>

#include "provider.h"

/*
 * Limits per batch input file:
 * OpenAI: 50,000 requests and 200 MB (PROVIDERS.md §1.3, §1.10).
 * Anthropic: 100,000 requests and 256 MB (PROVIDERS.md §2.2, §2.6).
 */
static const struct provider providers[] = {
	{ "openai", PROVIDER_LINE_OPENAI, 50000, 200000000LL,
	  "OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1" },
	{ "anthropic", PROVIDER_LINE_ANTHROPIC, 100000, 256000000LL,
	  "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com" },
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
