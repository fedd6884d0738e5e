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

struct load {
	struct prices	*ps;
	int		 strict;
	unsigned long	 nbad;
};

/* jsonl_each callback: one price line. */
static int
take(void *arg, struct jsonl_reader *r, const char *line, size_t len,
    yajl_val v)
{
	struct load *l = arg;
	struct prices *ps = l->ps;
	struct price *p;
	yajl_val in, out;
	const char *model = jtree_str(v, "model");
	int at;

	in = jtree_get(v, "input_per_mtok");
	out = jtree_get(v, "output_per_mtok");
	if (model == NULL || !YAJL_IS_DOUBLE(in) || !YAJL_IS_DOUBLE(out) ||
	    YAJL_GET_DOUBLE(in) < 0 || YAJL_GET_DOUBLE(out) < 0)
		qb_lwarn(r->name, r->lineno, "expected \"model\" and numbers "
		    "\"input_per_mtok\", \"output_per_mtok\" >= 0");
	else if ((at = price_find(ps, model)) >= 0 &&
	    strcmp(ps->p[at].model, model) == 0)
		qb_lwarn(r->name, r->lineno, "second price for model \"%s\"; "
		    "the first one stands", model);
	else {
		ps->p = xreallocarray(ps->p, ps->n + 1, sizeof(*ps->p));
		p = &ps->p[ps->n++];
		p->model = xstrdup(model);
		p->in = YAJL_GET_DOUBLE(in);
		p->out = YAJL_GET_DOUBLE(out);
		return 0;
	}
	if (l->strict)
		qb_die(QB_EX_DATAERR, "stopped at the first bad line (--strict)");
	l->nbad++;
	return 0;
}

size_t
prices_load(struct prices *ps, const char *path, int strict)
{
	struct load l = { ps, strict, 0 };
	int rc;

	if ((rc = jsonl_each(path, strict, take, &l, &l.nbad)) != 0)
		exit(rc);	/* reported */
	return l.nbad;
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
