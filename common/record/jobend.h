/*
 * jobend.h: what the end of a batch means for the requests of its file
 * that got no result (each gets an outcome: qb(7) CUSTODY): retry, with
 * the batch's own error, or, for the lines a validation failure names,
 * their own (qb-providers(7), OPENAI "The batch object", "Expired and
 * cancelled batches").
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_JOBEND_H
#define QB_JOBEND_H

#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "record/result.h"

struct jobend {
	enum result_status miss;	/* expired, canceled or missing */
	char	*code, *msg, *param;	/* the error they carry; owned */
};

/* 1 if status (compared without case: Azure's "Completed") is final. */
int jobend_final(const char *status);
/*
 * Read job record v (its status word status; failed: the batch failed as
 * a whole) into *j, which jobend_free releases. The requests get status
 * expired or canceled when the batch expired or was cancelled, missing
 * otherwise, and the batch's first error that names no line. When a
 * failed batch's errors name lines, the others' error says which lines
 * failed it (code batch_failed unless a line-less error gives one).
 * Returns 1 when errors name lines, else 0.
 */
int jobend_read(struct jobend *j, yajl_val v, const char *status, int failed);
void jobend_free(struct jobend *j);
/* The "errors" list of a job record: qb-poll's array, or the Batch
 * object's {"data": [...]} (qb-providers(7), OPENAI "The batch object");
 * NULL when none or empty. */
yajl_val jobend_errors(yajl_val v);
/* The input line error e names ("line", 1-based), or 0 for none. */
uint32_t jobend_line(yajl_val e);

#endif
