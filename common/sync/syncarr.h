/*
 * syncarr.h: array input for the synchronous engine (--array N): the
 * inputs of embeddings items packed into shared requests, the answers
 * split back, refusals bisected.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCARR_H
#define QB_SYNCARR_H

struct result;
struct sync;
struct sync_item;

/* Take it, a new item in no list, as an array item if --array applies
 * to it: 1 (it is the engine's until its result), else 0. */
int syncarr_take(struct sync *s, struct sync_item *it);
/* Make array requests of what waits, into s->wait, as the limiters let
 * them go; over: input is over. Returns when to look again (now + 1 if
 * nothing waits), in qtime_mono() seconds. */
double syncarr_pack(struct sync *s, double now, int over);
/* An array request ended with r (say: why, or NULL): bisect it, or end
 * its inputs, and so the items whose last input it was. The request
 * itself is the caller's to free. */
void syncarr_end(struct sync *s, struct sync_item *req,
    const struct result *r, const char *say);
/* Free the groups and the items still waiting in them. */
void syncarr_free(struct sync *s);

#endif
