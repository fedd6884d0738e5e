/*
 * item.h: the checks an item record passes before it becomes a request,
 * whether packed into a batch file (qb-pack) or sent at once (qb-submit
 * --sync): the item of qb(7) RECORD FORMATS, and the provider's line
 * rules (qb-providers(7), OPENAI "Batch input", ANTHROPIC "Create").
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_ITEM_H
#define QB_ITEM_H

#include <stddef.h>

#include "json/jscan.h"
#include "provider/provider.h"

/* What item_check found; strings point into the scan (s->strs). */
struct item {
	const char	*id;		/* "custom_id", else "id" */
	size_t		 idlen;		/* its bytes */
	int		 ibody;		/* span of "body", else "params" */
	const char	*endpoint;	/* "url", else "endpoint", else NULL */
	const char	*model;		/* the body's "model", non-empty */
	const char	*outcome;	/* "outcome", a string, or NULL: filled
					   once the record scans, even when a
					   check after that fails */
};

/*
 * Scan the len bytes at line (a NUL-terminated record) into s and check
 * it as an item for provider p: within the limits of jsonl_fits; an id
 * of 1 to 64 [A-Za-z0-9_-]; a body (or params, an Anthropic request, only
 * for p's Anthropic line format, which alone takes a record holding
 * "params" at all) that is an object holding a non-empty "model" string,
 * and for Anthropic "max_tokens" and "messages"; "method", if any,
 * "POST"; "url" or "endpoint", if any, a path beginning with '/' and
 * holding no '?' or '#'; none of these keys given twice. Returns 0 with
 * *it filled, or -1 with a one-line reason in err (errlen bytes), naming
 * the id once known.
 */
int item_check(struct jscan *s, const char *line, size_t len,
    const struct provider *p, struct item *it, char *err, size_t errlen);

#endif
