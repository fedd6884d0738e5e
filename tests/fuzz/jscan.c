/*
 * jscan.c: libFuzzer harness for jscan_parse and the counts over its
 * spans, line by line. Every span must lie inside the line, and each
 * recorded member must be found again by its key; the members jscan_tree
 * takes from the spans must parse as an object.
 * SPDX-License-Identifier: ISC
 */
#include "fuzz.h"
#include "json/jscan.h"

static const char *const deep[] = { "body", "response", "error", NULL };
static const char *const keys[] = { "batch_id", "results", "errors",
	"error", "body", "a", NULL };

static void
line(const char *p, size_t len, void *arg)
{
	struct jscan *s = arg;
	const struct json_span *sp;
	char err[128];
	yajl_val v;
	int i;

	s->deep = (len & 1) ? deep : NULL;
	if (jscan_parse(s, p, len, err, sizeof(err)) != 0)
		return;
	jscan_string_chars(p, len);
	jscan_array_len(p, len);
	for (i = 0; i < s->nspan; i++) {
		sp = &s->span[i];
		if (sp->off > len || sp->len > len - sp->off)
			abort();
		if (sp->type == JT_STRING && (sp->soff > s->strs.len ||
		    sp->slen > s->strs.len - sp->soff))
			abort();
		if (jscan_find(s, sp->depth == 1 ? -1 : sp->parent, sp->key) < 0)
			abort();
		jscan_dupkey(s, sp->depth == 1 ? -1 : sp->parent, sp->key);
		jscan_sval(s, i);
		jscan_array_len(p + sp->off, sp->len);
		jscan_string_chars(p + sp->off, sp->len);
	}
	/* The line is NUL-terminated at len (fuzz.h), as jscan_tree needs. */
	if ((v = jscan_tree(s, p, len, keys, err, sizeof(err))) != NULL) {
		if (!YAJL_IS_OBJECT(v))
			abort();
		yajl_tree_free(v);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_quiet();
	fuzz_scan_lines(data, size, line);
	return 0;
}
