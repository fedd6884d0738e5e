/*
 * item.c: the checks an item record passes before it becomes a request
 * (item.h).
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <string.h>

#include "base/idmap.h"
#include "base/msg.h"
#include "json/jsonl.h"
#include "record/item.h"

/* The members read here; each must appear once. */
static const char *const ownkeys[] = { "id", "custom_id", "body", "params",
	"url", "endpoint", "method", NULL };

/* The id: "custom_id", else "id", a string of 1 to 64 [A-Za-z0-9_-]. */
static int
item_id(const struct jscan *s, struct item *it, char *err, size_t errlen)
{
	const char *bad;
	int iid;

	if ((iid = jscan_find(s, -1, "custom_id")) < 0)
		iid = jscan_find(s, -1, "id");
	if (iid < 0)
		return qb_reason(err, errlen, "no \"id\" or \"custom_id\"");
	if ((it->id = jscan_sval(s, iid)) == NULL)
		return qb_reason(err, errlen, "expected a string for \"%s\"",
		    s->span[iid].key);
	it->idlen = s->span[iid].slen;
	if ((bad = idmap_check_id(it->id, it->idlen)) != NULL)
		return qb_reason(err, errlen, "%s: \"%.80s\"", bad, it->id);
	return 0;
}

/* The request around the body: "body" or "params" as p's line format
 * takes it, "method", and "url" or "endpoint". */
static int
item_request(const struct jscan *s, const struct provider *p,
    struct item *it, char *err, size_t errlen)
{
	const char *method, *key;
	int im, iu;

	if ((it->ibody = jscan_find(s, -1, "body")) < 0)
		it->ibody = jscan_find(s, -1, "params");
	if (it->ibody < 0)
		return qb_reason(err, errlen, "no \"body\" or \"params\" for id \"%s\"",
		    it->id);
	key = s->span[it->ibody].key;
	/*
	 * An Anthropic request is not an OpenAI body, even beside one (a
	 * retry outcome of an Anthropic batch carries both).
	 */
	if (p->line_format != PROVIDER_LINE_ANTHROPIC &&
	    jscan_find(s, -1, "params") >= 0)
		return qb_reason(err, errlen, "\"params\" is an Anthropic request, for "
		    "id \"%s\"; use -p anthropic", it->id);
	if (s->span[it->ibody].type != JT_MAP)
		return qb_reason(err, errlen, "\"%s\" is not an object for id \"%s\"",
		    key, it->id);
	if ((im = jscan_find(s, -1, "method")) >= 0 &&
	    ((method = jscan_sval(s, im)) == NULL || strcmp(method, "POST") != 0))
		return qb_reason(err, errlen, "method is not \"POST\" for id \"%s\"",
		    it->id);
	if ((iu = jscan_find(s, -1, "url")) < 0)
		iu = jscan_find(s, -1, "endpoint");
	if (iu >= 0 && ((it->endpoint = jscan_sval(s, iu)) == NULL ||
	    it->endpoint[0] != '/' || strpbrk(it->endpoint, "?#") != NULL))
		return qb_reason(err, errlen, "\"%s\" is not a path such as "
		    "/v1/chat/completions for id \"%s\"", s->span[iu].key, it->id);
	return 0;
}

/* The members of the body that p's line format requires. */
static int
item_body(const struct jscan *s, const struct provider *p, struct item *it,
    char *err, size_t errlen)
{
	const char *key = s->span[it->ibody].key;
	int im;

	if (jscan_dupkey(s, it->ibody, "model"))
		return qb_reason(err, errlen, "key \"model\" given twice in \"%s\"", key);
	if ((im = jscan_find(s, it->ibody, "model")) < 0 ||
	    (it->model = jscan_sval(s, im)) == NULL || *it->model == '\0')
		return qb_reason(err, errlen, "no model string in \"%s\" for id \"%s\"",
		    key, it->id);
	/*
	 * Anthropic refuses a request without them, and a whole batch over
	 * one (CreateMessageParams.required; qb-providers(7), ANTHROPIC
	 * "Create").
	 */
	if (p->line_format == PROVIDER_LINE_ANTHROPIC) {
		if (jscan_find(s, it->ibody, "max_tokens") < 0)
			return qb_reason(err, errlen, "no \"max_tokens\" in \"%s\" for id "
			    "\"%s\" (anthropic requires it)", key, it->id);
		if (jscan_find(s, it->ibody, "messages") < 0)
			return qb_reason(err, errlen, "no \"messages\" in \"%s\" for id "
			    "\"%s\" (anthropic requires it)", key, it->id);
	}
	return 0;
}

int
item_check(struct jscan *s, const char *line, size_t len,
    const struct provider *p, struct item *it, char *err, size_t errlen)
{
	const char *const *k;

	memset(it, 0, sizeof(*it));
	/*
	 * qb-reconcile indexes the requests under the same limits: a line
	 * taken here past them would never get an outcome. Checked first, as
	 * jtree_depth is cheaper than the scan of a line ten million deep.
	 */
	if (jsonl_fits(line, len, err, errlen) == -1)
		return -1;
	if (jscan_parse(s, line, len, err, errlen) == -1)
		return -1;
	it->outcome = jscan_sval(s, jscan_find(s, -1, "outcome"));
	if (s->nspan == JSCAN_SPANS_MAX)
		return qb_reason(err, errlen, "more than %d members in the record and "
		    "its body; no more are read", JSCAN_SPANS_MAX);
	/*
	 * A key given twice is read differently by different parsers (the
	 * provider may take the last model, we the first): refuse it.
	 */
	for (k = ownkeys; *k != NULL; k++)
		if (jscan_dupkey(s, -1, *k))
			return qb_reason(err, errlen, "key \"%s\" given twice", *k);
	if (item_id(s, it, err, errlen) == -1 ||
	    item_request(s, p, it, err, errlen) == -1 ||
	    item_body(s, p, it, err, errlen) == -1)
		return -1;
	return 0;
}
