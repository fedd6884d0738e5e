/*
 * price.c: token prices, read from a JSONL file (price.h).
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "exits.h"
#include "json.h"
#include "jsonl.h"
#include "msg.h"
#include "price.h"
#include "xmem.h"

int
price_find(const struct prices *ps, const char *model)
{
	size_t i, n, best = 0;
	int at = -1;

	if (model == NULL)
		return -1;
	for (i = 0; i < ps->n; i++)
		if (strcmp(ps->p[i].model, model) == 0)
			return (int)i;
	for (i = 0; i < ps->n; i++) {
		n = strlen(ps->p[i].model);
		if (n > best && strncmp(ps->p[i].model, model, n) == 0 &&
		    model[n] == '-' && model[n + 1] >= '0' && model[n + 1] <= '9') {
			best = n;
			at = (int)i;
		}
	}
	return at;
}

/* A skipped line: counted, or the end of the run under strict. */
static size_t
skip(int strict)
{
	if (strict)
		qb_die(QB_EX_DATAERR, "stopped at the first rejected line (--strict)");
	return 1;
}

size_t
prices_load(struct prices *ps, const char *path, int strict)
{
	struct jsonl_reader r;
	struct price *p;
	yajl_val v, in, out;
	const char *model;
	char *line;
	size_t len, nbad = 0;
	int ch, at;

	if (jsonl_open(&r, path) == -1)
		qb_diesys(QB_EX_NOINPUT, "%s", path);
	while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
		if (ch == JSONL_IOERR)
			qb_die(QB_EX_IOERR, "%s: cannot read the prices", r.name);
		if (ch == JSONL_BAD || (v = jsonl_tree(&r, line, len)) == NULL) {
			nbad += skip(strict);
			continue;
		}
		model = json_str(v, "model");
		in = json_get(v, "input_per_mtok");
		out = json_get(v, "output_per_mtok");
		if (model == NULL || !YAJL_IS_DOUBLE(in) || !YAJL_IS_DOUBLE(out) ||
		    YAJL_GET_DOUBLE(in) < 0 || YAJL_GET_DOUBLE(out) < 0) {
			qb_lwarn(r.name, r.lineno, "expected \"model\" and numbers "
			    "\"input_per_mtok\", \"output_per_mtok\" >= 0");
			nbad += skip(strict);
		} else if ((at = price_find(ps, model)) >= 0 &&
		    strcmp(ps->p[at].model, model) == 0) {
			qb_lwarn(r.name, r.lineno, "second price for model \"%s\"; "
			    "the first one stands", model);
			nbad += skip(strict);
		} else {
			ps->p = xreallocarray(ps->p, ps->n + 1, sizeof(*ps->p));
			p = &ps->p[ps->n++];
			p->model = xstrdup(model);
			p->in = YAJL_GET_DOUBLE(in);
			p->out = YAJL_GET_DOUBLE(out);
		}
		yajl_tree_free(v);
	}
	jsonl_close(&r);
	return nbad;
}

void
prices_free(struct prices *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		free(ps->p[i].model);
	free(ps->p);
	ps->p = NULL;
	ps->n = 0;
}
