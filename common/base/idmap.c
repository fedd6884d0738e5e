/*
 * idmap.c: custom_id checks and an open-addressing string set.
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include "base/idmap.h"
#include "base/xmem.h"

const char *
idmap_check_id(const char *id, size_t n)
{
	size_t i;

	if (n == 0)
		return "empty custom_id";
	if (n > QB_ID_MAX)
		return "custom_id longer than 64 characters";
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return "custom_id has a character other than A-Z a-z 0-9 _ -";
	}
	return NULL;
}

/* FNV-1a, 64 bits. */
static uint64_t
hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

void
idmap_init(struct idmap *m)
{
	memset(m, 0, sizeof(*m));
	m->nslot = 1024;
	m->slot = xcalloc(m->nslot, sizeof(*m->slot));
}

void
idmap_free(struct idmap *m)
{
	buf_free(&m->keys);
	free(m->slot);
	free(m->koff);
	memset(m, 0, sizeof(*m));
}

static size_t
find(const struct idmap *m, const char *id, size_t n, uint64_t h, size_t *at)
{
	size_t i = (size_t)h & (m->nslot - 1);
	uint32_t tag = (uint32_t)(h >> 32);

	for (;; i = (i + 1) & (m->nslot - 1)) {
		uint64_t s = m->slot[i];
		size_t idx;
		const char *k;

		if (s == 0) {
			*at = i;
			return (size_t)-1;
		}
		if ((uint32_t)s != tag)
			continue;
		idx = (size_t)(s >> 32) - 1;
		k = m->keys.p + m->koff[idx];
		if (strncmp(k, id, n) == 0 && k[n] == '\0') {
			*at = i;
			return idx;
		}
	}
}

static void
rehash(struct idmap *m)
{
	uint64_t *old = m->slot;
	size_t i, nold = m->nslot, at;

	m->nslot *= 2;
	m->slot = xcalloc(m->nslot, sizeof(*m->slot));
	for (i = 0; i < nold; i++) {
		size_t idx;
		const char *k;

		if (old[i] == 0)
			continue;
		idx = (size_t)(old[i] >> 32) - 1;
		k = m->keys.p + m->koff[idx];
		find(m, k, strlen(k), hash(k, strlen(k)), &at);
		m->slot[at] = old[i];
	}
	free(old);
}

size_t
idmap_put(struct idmap *m, const char *id, size_t n, int *isnew)
{
	uint64_t h = hash(id, n);
	size_t idx, at;

	idx = find(m, id, n, h, &at);
	if (idx != (size_t)-1) {
		*isnew = 0;
		return idx;
	}
	idx = m->n++;
	if ((idx & (idx - 1)) == 0 || idx == 0)
		m->koff = xreallocarray(m->koff, idx ? idx * 2 : 1,
		    sizeof(*m->koff));
	m->koff[idx] = m->keys.len;
	buf_append(&m->keys, id, n);
	buf_putc(&m->keys, '\0');
	m->slot[at] = ((uint64_t)(idx + 1) << 32) | (uint32_t)(h >> 32);
	if (m->n * 4 > m->nslot * 3)
		rehash(m);
	*isnew = 1;
	return idx;
}

size_t
idmap_get(const struct idmap *m, const char *id, size_t n)
{
	size_t at;

	return find(m, id, n, hash(id, n), &at);
}

const char *
idmap_key(const struct idmap *m, size_t i)
{
	return m->keys.p + m->koff[i];
}
