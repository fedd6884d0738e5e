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

enum provider_line {
	PROVIDER_LINE_OPENAI,		/* {"custom_id","method","url","body"} (PROVIDERS.md §1.3) */
	PROVIDER_LINE_ANTHROPIC		/* {"custom_id","params"} (PROVIDERS.md §2.2) */
};

struct provider {
	const char	*name;		/* "openai", "anthropic" */
	enum provider_line line_format;	/* how a batch input line is written */
	long long	 max_requests;	/* requests per batch file */
	long long	 max_bytes;	/* bytes per batch file, line endings included */
	const char	*key_env;	/* environment variable holding the key */
	const char	*base_env;	/* environment variable overriding the base URL */
	const char	*base_default;	/* base URL, with its version path (…/v1) */
};

/*
 * The provider called name ("openai", "anthropic"), or NULL. The returned
 * table is static; do not free it.
 */
const struct provider *provider_find(const char *name);

#endif
