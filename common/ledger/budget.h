/*
 * budget.h: the enqueued-token budget of qb-submit --token-budget
 * (tests/3300-qb-submit-budget.t). The provider says nothing of the room
 * left in its queue of batch tokens (qb-providers(7), OPENAI "Limits"), so
 * qb counts it itself: the "tokens" qb-pack estimated for each batch of a
 * model that has not ended.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_BUDGET_H
#define QB_BUDGET_H

#include <yajl/yajl_tree.h>

#include "base/idmap.h"
#include "provider/provops.h"

struct budget_job {
	char		*provider, *model;	/* owned */
	long long	 tokens;
	int		 ended;
	unsigned	 seen;		/* round in which the provider last said */
};

struct budget {
	struct idmap		 ids;	/* batch ids of job */
	struct budget_job	*job;
	unsigned		 round;	/* bump it to ask the provider again */
};

/* An empty budget; release it with budget_free. */
void budget_init(struct budget *b);
void budget_free(struct budget *b);
/* Note batch id of provider/model holding tokens, ended or not; a batch
 * seen again takes the newer facts (ended stays ended). */
void budget_add(struct budget *b, const char *id, const char *provider,
    const char *model, long long tokens, int ended);
/* A ledger_refresh hook (arg: the budget): notes each job record with
 * "batch_id", "provider", "model" and "tokens". */
void budget_note(void *arg, yajl_val job);
/*
 * Tokens of model that p's batches not known to have ended hold. The
 * provider is asked (get, over h) once a round about each batch not yet
 * known to have ended; one it cannot tell about counts as holding them,
 * one it does not know (404) as holding none.
 */
long long budget_enqueued(struct budget *b, const struct provider *p,
    struct http *h, const char *model);

#endif
