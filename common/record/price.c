/*
 * price.c: token prices, read from a JSONL file (price.h).
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "record/price.h"

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

/* One price line, tree v, from r: 0 if taken, -1 if refused (reported). */
static int
take(struct prices *ps, const struct jsonl_reader *r, yajl_val v)
{
	struct price *p;
	yajl_val in, out;
	const char *model = jtree_str(v, "model");
	int at;

	in = jtree_get(v, "input_per_mtok");
	out = jtree_get(v, "output_per_mtok");
	if (model == NULL || !YAJL_IS_DOUBLE(in) || !YAJL_IS_DOUBLE(out) ||
	    YAJL_GET_DOUBLE(in) < 0 || YAJL_GET_DOUBLE(out) < 0) {
		qb_lwarn(r->name, r->lineno, "expected \"model\" and numbers "
		    "\"input_per_mtok\", \"output_per_mtok\" >= 0");
		return -1;
	}
	if ((at = price_find(ps, model)) >= 0 &&
	    strcmp(ps->p[at].model, model) == 0) {
		qb_lwarn(r->name, r->lineno, "second price for model \"%s\"; "
		    "the first one stands", model);
		return -1;
	}
	ps->p = xreallocarray(ps->p, ps->n + 1, sizeof(*ps->p));
	p = &ps->p[ps->n++];
	p->model = xstrdup(model);
	p->in = YAJL_GET_DOUBLE(in);
	p->out = YAJL_GET_DOUBLE(out);
	return 0;
}

int
price_load(struct prices *ps, const char *path, int strict,
    unsigned long *nbad)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	int ch, rc = 0;

	if (jsonl_open(&r, path) == -1) {
		qb_warnsys("%s", strcmp(path, "-") == 0 ? "<stdin>" : path);
		return QB_EX_NOINPUT;
	}
	r.parse = JSONL_TREE;
	r.strict = strict;
	while ((ch = jsonl_read(&r, &rec)) != JSONL_EOF) {
		if (ch == JSONL_LINE && take(ps, &r, rec.tree) == -1)
			ch = jsonl_reject(&r);
		if (ch == JSONL_IOERR || ch == JSONL_STOP) {
			rc = ch == JSONL_STOP ? QB_EX_DATAERR : QB_EX_IOERR;
			break;
		}
	}
	*nbad += r.nbad;
	jsonl_close(&r);
	return rc;
}

void
price_free(struct prices *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		free(ps->p[i].model);
	free(ps->p);
	ps->p = NULL;
	ps->n = 0;
}
