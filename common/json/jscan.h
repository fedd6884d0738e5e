/*
 * jscan.h: jscan_parse, a one-pass validating scan that finds where the
 * members of a record lie, so that values which need not change (a
 * request body) are copied through as bytes, never rebuilt; and counts
 * over such spans.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_JSCAN_H
#define QB_JSCAN_H

#include <stddef.h>

#include <yajl/yajl_tree.h>

#include "base/buf.h"

/* What jscan_parse found: the members of the top-level object (depth 1) and
 * of objects that are its direct members (depth 2). */
enum json_type { JT_NULL, JT_BOOL, JT_NUMBER, JT_STRING, JT_MAP, JT_ARRAY };

struct json_span {
	char		key[72];	/* decoded key, NUL-terminated; truncated keys never match */
	int		depth;		/* 1 or 2 */
	int		parent;		/* index of the depth-1 span holding it, or -1 */
	enum json_type	type;
	size_t		off, len;	/* the value's bytes in the scanned text */
	size_t		soff, slen;	/* a string's decoded value in jscan_parse.strs */
};

#define JSCAN_SPANS_MAX 64

struct jscan {
	struct json_span span[JSCAN_SPANS_MAX];
	int		nspan;		/* members past JSCAN_SPANS_MAX are not recorded */
	struct buf	strs;		/* decoded string values; owned, reused */
	const char *const *deep;	/* if set, NULL-terminated depth-1 keys whose
					   members alone are recorded at depth 2 */
};

/*
 * Validate the len bytes at p as one JSON object and record its members.
 * Returns 0; or -1 with a one-line reason in err ("not a JSON object", or
 * a parse error with its byte offset). s is reused between calls; free
 * s->strs with buf_free when done.
 */
int jscan_parse(struct jscan *s, const char *p, size_t len, char *err,
    size_t errlen);
/*
 * Number of elements of the JSON array in the len bytes at p (a span that
 * jscan_parse validated), or -1 if it is not an array.
 */
long jscan_array_len(const char *p, size_t len);
/*
 * Characters (Unicode code points; an escape counts as the character it
 * stands for) in the string values, not the keys, of the len bytes of
 * valid JSON at p: the base of qb's prompt-token estimate.
 */
long long jscan_string_chars(const char *p, size_t len);
/* Index of the member key at depth 1 (parent -1) or inside parent; or -1. */
int jscan_find(const struct jscan *s, int parent, const char *key);
/* 1 if key is one of list (NULL-terminated), else 0. */
int jscan_keyin(const char *key, const char *const *list);
/* 1 if the member key appears more than once there, else 0. */
int jscan_dupkey(const struct jscan *s, int parent, const char *key);
/* The decoded string of span i (NUL-terminated), or NULL if not a string. */
const char *jscan_sval(const struct jscan *s, int i);
/* 1 if s recorded every depth-1 member under its own key, else 0. */
int jscan_whole(const struct jscan *s);
/*
 * The members keys (NULL-terminated, names that need no escaping) of the
 * object scanned in s as a yajl tree, parsed from their spans of text
 * alone (the first of each key; absent keys are left out), so that what a
 * record's other members hold is not parsed again. The len bytes of text
 * (NUL-terminated at len) are those s scanned; when s does not hold them
 * whole, they are parsed whole instead. Like jtree_parse it refuses a
 * record nested deeper than JTREE_DEPTH_MAX. Returns the tree (the caller
 * frees it with yajl_tree_free), or NULL with a one-line reason in err.
 */
yajl_val jscan_tree(const struct jscan *s, const char *text, size_t len,
    const char *const *keys, char *err, size_t errlen);

#endif
