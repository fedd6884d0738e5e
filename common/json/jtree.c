/*
 * jtree.c: yajl tree accessors, the located syntax check and the nesting
 * guard every reader uses. The span scanner is in jscan.c.
 * SPDX-License-Identifier: ISC
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "json/jtree.h"

yajl_val
jtree_get(yajl_val obj, const char *key)
{
	size_t i;

	if (!YAJL_IS_OBJECT(obj))
		return NULL;
	for (i = 0; i < obj->u.object.len; i++)
		if (strcmp(obj->u.object.keys[i], key) == 0)
			return obj->u.object.values[i];
	return NULL;
}

const char *
jtree_str(yajl_val obj, const char *key)
{
	yajl_val v = jtree_get(obj, key);

	return YAJL_IS_STRING(v) ? v->u.string : NULL;
}

int
jtree_int(yajl_val obj, const char *key, long long *out)
{
	yajl_val v = jtree_get(obj, key);

	if (!YAJL_IS_INTEGER(v))
		return -1;
	*out = YAJL_GET_INTEGER(v);
	return 0;
}

int
jtree_true(yajl_val obj, const char *key)
{
	return YAJL_IS_TRUE(jtree_get(obj, key));
}

/* Offset of the first byte of p that does not belong to valid UTF-8, or -1. */
static long
utf8_bad(const unsigned char *p, size_t len)
{
	size_t i = 0, n, k;
	unsigned cp;

	while (i < len) {
		unsigned char c = p[i];

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return (long)i;
		for (k = 1; k <= n; k++) {
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return (long)i;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		/* Overlong forms, surrogates and values past U+10FFFF. */
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return (long)i;
		i += n + 1;
	}
	return -1;
}

void
jtree_yajl_error(yajl_handle h, const char *p, size_t len, int atend, char *err,
    size_t errlen)
{
	unsigned char *msg;
	size_t n, at;

	msg = yajl_get_error(h, 0, (const unsigned char *)p, len);
	n = strlen((char *)msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '.' ||
	    msg[n - 1] == ' '))
		n--;
	at = yajl_get_bytes_consumed(h);
	/* yajl stops after the bad sequence; name the byte itself. */
	if (strstr((char *)msg, "UTF8") != NULL) {
		long bad = utf8_bad((const unsigned char *)p, len);

		if (bad >= 0) {
			at = (size_t)bad;
			atend = 0;
		}
	}
	if (atend || at >= len)
		snprintf(err, errlen, "%.*s at end of line", (int)n, msg);
	else
		snprintf(err, errlen, "%.*s at byte %zu", (int)n, msg, at + 1);
	yajl_free_error(h, msg);
}

int
jtree_check(const char *p, size_t len, char *err, size_t errlen)
{
	yajl_handle h;
	yajl_status st;
	long at;
	int rc = 0;

	h = yajl_alloc(NULL, NULL, NULL);
	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int atend = 0;

	st = yajl_parse(h, (const unsigned char *)p, len);
	if (st == yajl_status_ok) {
		atend = 1;
		st = yajl_complete_parse(h);
	}
	if (st != yajl_status_ok) {
		jtree_yajl_error(h, p, len, atend, err, errlen);
		rc = -1;
	} else if ((at = jtree_unclosed(p, len)) >= 0) {
		snprintf(err, errlen, "parse error: trailing garbage at byte %ld",
		    at + 1);
		rc = -1;
	}
	yajl_free(h);
	return rc;
}

long
jtree_unclosed(const char *p, size_t len)
{
	size_t i, open = 0;
	int instr = 0;

	for (i = 0; i < len; i++) {
		if (instr) {
			if (p[i] == '\\')
				i++;
			else if (p[i] == '"')
				instr = 0;
		} else if (p[i] == '"') {
			instr = 1;
			open = i;
		}
	}
	return instr ? (long)open : -1;
}

int
jtree_depth(const char *p, size_t len)
{
	size_t i;
	int d = 0, max = 0, instr = 0;

	for (i = 0; i < len; i++) {
		char c = p[i];

		if (instr) {
			if (c == '\\')
				i++;
			else if (c == '"')
				instr = 0;
		} else if (c == '"')
			instr = 1;
		else if (c == '{' || c == '[') {
			if (++d > max)
				max = d;
		} else if (c == '}' || c == ']')
			d--;
	}
	return max;
}

yajl_val
jtree_parse(const char *text, char *err, size_t errlen)
{
	size_t len = strlen(text);
	yajl_val v;

	if (jtree_depth(text, len) > JTREE_DEPTH_MAX) {
		snprintf(err, errlen, "nested deeper than %d levels", JTREE_DEPTH_MAX);
		return NULL;
	}
	v = yajl_tree_parse(text, NULL, 0);
	if (v != NULL && jtree_unclosed(text, len) >= 0) {
		yajl_tree_free(v);
		v = NULL;
	}
	if (v == NULL)
		jtree_check(text, len, err, errlen);
	return v;
}

yajl_val
jtree_parse0(const char *text)
{
	char err[256];

	return jtree_parse(text, err, sizeof(err));
}
