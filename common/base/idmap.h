/*
 * idmap.h: custom_id rules and a string set that numbers its members.
 * Used to refuse duplicate ids (qb-pack) and to join results to requests
 * by id (qb-reconcile). Memory: the ids' bytes plus about 16 bytes each.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_IDMAP_H
#define QB_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/*
 * Longest custom_id any supported provider takes (Anthropic's:
 * qb-providers(7), ANTHROPIC "Create").
 */
#define QB_ID_MAX 64

/*
 * Check id (n bytes) against the portable custom_id rule, 1 to 64 of
 * [A-Za-z0-9_-] (qb-providers(7), OPENAI "Batch input" and
 * ANTHROPIC "Create"). Returns NULL if valid, else a
 * static reason such as "custom_id longer than 64 characters".
 */
const char *idmap_check_id(const char *id, size_t n);

struct idmap {
	struct buf	 keys;		/* NUL-terminated ids, back to back */
	uint64_t	*slot;		/* hash table: (index+1) << 32 | hash high bits, 0 = empty */
	size_t		*koff;		/* key offset of member i */
	size_t		 n, nslot;
};

/* An empty map; release it with idmap_free. */
void idmap_init(struct idmap *m);
void idmap_free(struct idmap *m);
/*
 * Add id (n bytes) if absent. Returns the member's index (0, 1, 2 ... in
 * order of first addition); *isnew says whether this call added it.
 */
size_t idmap_put(struct idmap *m, const char *id, size_t n, int *isnew);
/* Index of id, or (size_t)-1 if absent. */
size_t idmap_get(const struct idmap *m, const char *id, size_t n);
/* The id of member i, NUL-terminated; valid until the next idmap_put. */
const char *idmap_key(const struct idmap *m, size_t i);

#endif
