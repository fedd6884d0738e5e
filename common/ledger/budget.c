/*
 * budget.c: tokens enqueued in unfinished batches, per provider and model.
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include "base/msg.h"
#include "base/xmem.h"
#include "json/jtree.h"
#include "ledger/budget.h"

void
budget_init(struct budget *b)
{
	memset(b, 0, sizeof(*b));
	idmap_init(&b->ids);
}

void
budget_free(struct budget *b)
{
	size_t i;

	for (i = 0; i < b->ids.n; i++) {
		free(b->job[i].provider);
		free(b->job[i].model);
	}
	free(b->job);
	idmap_free(&b->ids);
}

void
budget_add(struct budget *b, const char *id, const char *provider,
    const char *model, long long tokens, int ended)
{
	struct budget_job *j;
	size_t i;
	int isnew;

	i = idmap_put(&b->ids, id, strlen(id), &isnew);
	if (isnew) {
		if ((i & (i - 1)) == 0)
			b->job = xreallocarray(b->job, i ? i * 2 : 1,
			    sizeof(*b->job));
		j = &b->job[i];
		j->provider = xstrdup(provider);
		j->model = xstrdup(model);
		j->ended = 0;
		j->seen = (unsigned)-1;
	} else
		j = &b->job[i];
	j->tokens = tokens;
	j->ended |= ended;
}

void
budget_note(void *arg, yajl_val v)
{
	const char *id, *prov, *model;
	long long tok;

	if ((id = jtree_str(v, "batch_id")) != NULL &&
	    (prov = jtree_str(v, "provider")) != NULL &&
	    (model = jtree_str(v, "model")) != NULL &&
	    jtree_int(v, "tokens", &tok) == 0)
		budget_add(arg, id, prov, model, tok, jtree_true(v, "ended"));
}

long long
budget_enqueued(struct budget *b, const struct provider *p, struct http *h,
    const char *model)
{
	const struct provider_ops *o = provider_ops(p);
	struct provider_job pj;
	struct budget_job *j;
	yajl_val batch;
	char err[256];
	long long sum = 0;
	size_t i;

	for (i = 0; i < b->ids.n; i++) {
		j = &b->job[i];
		if (j->ended || strcmp(j->model, model) != 0 ||
		    strcmp(j->provider, p->name) != 0)
			continue;
		if (j->seen != b->round && o != NULL && o->get != NULL) {
			j->seen = b->round;
			if (o->get(h, idmap_key(&b->ids, i), &batch) != 0) {
				qb_note(1, "batch %s: %s", idmap_key(&b->ids, i),
				    h->err);
				if (h->status == 404)
					j->ended = 1;	/* gone: holds nothing */
			} else {
				if (o->job(batch, &pj, err, sizeof(err)) == 0)
					j->ended = pj.ended;
				yajl_tree_free(batch);
			}
		}
		if (!j->ended)
			sum += j->tokens;
	}
	return sum;
}
