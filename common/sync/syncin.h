/*
 * syncin.h: input of the synchronous engine: a thread reads the lines,
 * the engine takes them as items.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCIN_H
#define QB_SYNCIN_H

#include <stddef.h>

struct sync;

/*
 * Start the thread that reads files (NULL-terminated, "-" standard
 * input; kept, not copied) into s->in, waking s->multi as lines come.
 * Returns 0, or QB_EX_OSERR (reported) if the thread cannot start; s->in
 * is then NULL and nothing was read.
 */
int syncin_start(struct sync *s, char **files);
/* Tell the input thread to stop and wait for it, unless it is blocked in
 * a read; returns 1 if it is gone (its queue and names then freed, s->in
 * NULL), 0 if it is left to end with the process. */
int syncin_stop(struct sync *s);
/* Take what the input thread has read, at most room lines, into the
 * waiting list (or --array's groups); bad lines are reported and
 * counted. Returns 1 if input is over (all read and taken), else 0. */
int syncin_take(struct sync *s, size_t room);

#endif
