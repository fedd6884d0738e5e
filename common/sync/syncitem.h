/*
 * syncitem.h: an item of the synchronous engine (syncint.h) between its
 * line and its result: the lists it waits and flies in, the copies of
 * results it keeps, and its end.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCITEM_H
#define QB_SYNCITEM_H

struct result;
struct sync_item;
struct sync_list;

/* Add it at the end of l, or at its front; it is in no list. */
void syncitem_add(struct sync_list *l, struct sync_item *it, int front);
/* Take it out of l, which holds it. */
void syncitem_del(struct sync_list *l, struct sync_item *it);

/* A copy of r that owns its error strings and request id (the answer's
 * text and spans are not kept), for an item's fail or dead; freed with
 * the item. */
struct result *syncitem_keep(const struct result *r);

/* Free it and all it owns, its --array inputs too; it is in no list and
 * has no transfer. NULL is fine. */
void syncitem_free(struct sync_item *it);

#endif
