/*
 * members.h: the members a record carries on from the line it came from.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_MEMBERS_H
#define QB_MEMBERS_H

#include <stddef.h>
#include <yajl/yajl_gen.h>

#include "json/jscan.h"

/*
 * Write the top-level members of the JSON object in the len bytes at
 * line (valid JSON, NUL-terminated at len) whose keys are not in skip
 * (NULL-terminated), copied as bytes, into a map open on g. With item
 * set, also what makes an item again: "endpoint" (from "url", or
 * /v1/messages for a line with "params" and no "body") unless the line
 * has one, "body" and, for a "params" line, "params", whether skip names
 * them or not. s is scratch (its strs buffer is reused; the caller frees
 * it). A line jscan_parse cannot record whole is read as a yajl tree
 * instead.
 */
void members_copy(struct jscan *s, yajl_gen g, const char *line,
    size_t len, const char *const *skip, int item);

#endif
