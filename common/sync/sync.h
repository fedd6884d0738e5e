/*
 * sync.h: the synchronous engine of qb-submit --sync (qb-submit(1)): item
 * records in, one result record per item out, in completion order, each
 * flushed. One thread drives libcurl multi; a second only reads input.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNC_H
#define QB_SYNC_H

#include "sync/syncopts.h"

/*
 * Call the provider's synchronous endpoint for every item read from the
 * files (NULL-terminated; "-" is standard input) and print a result
 * record for each item answered or given up: "id" and the members of
 * result_emit (result.h), then every other member of the item. Bad
 * lines are reported FILE:LINE and skipped. Returns the exit status:
 * 0 every item answered 2xx; 1 some item failed for good or some line
 * was bad; 75 some item left for later (a retry outcome); 77 stopped by a
 * 401 or 403, 69 by another account-level refusal; 74 standard output
 * failed; 65 a bad line under strict; 66 an input could not be opened.
 * Before any input is read: 64 for an unknown provider; 71 when libcurl
 * or the input thread cannot start; 78 for a bad configuration (no key,
 * bad base URL), which provider_open still reports by ending the process.
 * Once running, 71 (libcurl out of memory) or 70 (libcurl refused a
 * transfer) stops the run as a 401 does: what is in flight ends and is
 * printed, what waits is not sent. Each failure is reported once.
 */
int sync_run(const struct sync_opts *o, char **files);

#endif
