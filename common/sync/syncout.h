/*
 * syncout.h: what the synchronous engine writes: a result record for
 * each item, flushed at once; the --metrics file; the summary.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCOUT_H
#define QB_SYNCOUT_H

#include "record/result.h"

struct sync;
struct sync_item;
struct sync_model;

/*
 * It (an item, not an array request) ends with r: count it for the
 * summary, report say if not NULL (else note the result at -v), print
 * its result record and free it. A write error on standard output is
 * reported and stops the run (s->stop = QB_EX_IOERR).
 */
void syncout_settle(struct sync *s, struct sync_item *it,
    const struct result *r, const char *say);
/* A result without an answer (a retry outcome until the caller says
 * otherwise): status, error type, code and message, not copied. */
void syncout_noanswer(struct result *r, enum result_status st,
    const char *type, const char *code, const char *msg);
/* Count an answer's status (0: none) for the model's metrics. */
void syncout_count(struct sync_model *m, long status);
/* Write --metrics now (atomically); complain once if it cannot be. */
void syncout_metrics(struct sync *s);
/* The summary line on standard error. */
void syncout_summary(const struct sync *s);

#endif
