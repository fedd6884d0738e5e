/*
 * syncitem.c: the items of the synchronous engine between their line and
 * their result: the doubly linked lists they wait and fly in (a list
 * knows its ends and length, an item its neighbours), the results an
 * array item keeps until its last input ends, and the freeing of it all.
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include "base/xmem.h"
#include "sync/syncint.h"
#include "sync/syncitem.h"

void
syncitem_add(struct sync_list *l, struct sync_item *it, int front)
{
	if (front) {
		it->prev = NULL;
		it->next = l->head;
		if (l->head != NULL)
			l->head->prev = it;
		else
			l->tail = it;
		l->head = it;
	} else {
		it->next = NULL;
		it->prev = l->tail;
		if (l->tail != NULL)
			l->tail->next = it;
		else
			l->head = it;
		l->tail = it;
	}
	l->n++;
}

void
syncitem_del(struct sync_list *l, struct sync_item *it)
{
	if (it->prev != NULL)
		it->prev->next = it->next;
	else
		l->head = it->next;
	if (it->next != NULL)
		it->next->prev = it->prev;
	else
		l->tail = it->prev;
	it->prev = it->next = NULL;
	l->n--;
}

static char *
dupn(const char *p)
{
	return p != NULL ? xstrdup(p) : NULL;
}

struct result *
syncitem_keep(const struct result *r)
{
	struct result *c = xmalloc(sizeof(*c));

	*c = *r;
	c->text = NULL;
	c->resp_off = c->resp_len = c->err_off = c->err_len = 0;
	c->det_off = c->det_len = 0;
	c->id = c->batch_id = c->model = NULL;
	c->etype = dupn(r->etype);
	c->ecode = dupn(r->ecode);
	c->emsg = dupn(r->emsg);
	c->eparam = dupn(r->eparam);
	c->request_id = dupn(r->request_id);
	return c;
}

static void
unkeep(struct result *r)
{
	if (r == NULL)
		return;
	free((char *)r->etype);
	free((char *)r->ecode);
	free((char *)r->emsg);
	free((char *)r->eparam);
	free((char *)r->request_id);
	free(r);
}

void
syncitem_free(struct sync_item *it)
{
	size_t i;

	if (it == NULL)
		return;
	free(it->line);
	free(it->id);
	free(it->url);
	for (i = 0; i < it->nel; i++) {
		free(it->el[i].raw);
		free(it->el[i].vec);
	}
	free(it->el);
	unkeep(it->fail);
	unkeep(it->dead);
	free(it->say);
	free(it->aobj);
	free(it->amodel);
	free(it->parts);
	buf_free(&it->resp);
	free(it);
}
