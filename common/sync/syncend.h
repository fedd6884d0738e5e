/*
 * syncend.h: how a try of the synchronous engine ended, and what comes
 * of it: a result printed, or another try.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCEND_H
#define QB_SYNCEND_H

#include <curl/curl.h>

struct sync;
struct sync_item;

/* The transfer of it (in s->fly) ended with libcurl result cc: its
 * handle is cleaned up, and it is settled (its result printed, or its
 * items' for an array request) or put back at the front of s->wait for
 * another try. */
void syncend_done(struct sync *s, struct sync_item *it, CURLcode cc);
/* Give it (in s->wait) up before a try: wait (s) is over the cap, or
 * its deadline passes first. Settles it. */
void syncend_giveup(struct sync *s, struct sync_item *it, double wait);

#endif
