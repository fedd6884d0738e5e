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
 * line (valid JSON, NUL-terminated at len), scanned in s by jscan_parse
 * (at any depth), whose keys are not in skip (NULL-terminated), copied as
 * bytes, into a map open on g. With item set, also what makes an item
 * again: "endpoint" (from "url", or /v1/messages for a line with "params"
 * and no "body") unless the line has one, "body" and, for a "params"
 * line, "params", whether skip names them or not. A line s does not hold
 * whole (jscan_whole) is read as a yajl tree instead. Nothing is kept.
 */
void members_write(const struct jscan *s, yajl_gen g, const char *line,
    size_t len, const char *const *skip, int item);
/*
 * members_write for a line not scanned yet: it is scanned into s at depth
 * 1 alone (s is scratch: its strs buffer is reused; the caller frees it).
 */
void members_copy(struct jscan *s, yajl_gen g, const char *line,
    size_t len, const char *const *skip, int item);

#endif
