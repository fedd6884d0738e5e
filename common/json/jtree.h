/*
 * jtree.h: typed access to yajl trees, a validating syntax check with a
 * short located reason, and the nesting guard every reader uses. The span
 * scanner is in jscan.h.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_JTREE_H
#define QB_JTREE_H

#include <stddef.h>
#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>


/* Member key of object obj, or NULL (also when obj is not an object). */
yajl_val jtree_get(yajl_val obj, const char *key);
/* The string member key, or NULL when absent or not a string. */
const char *jtree_str(yajl_val obj, const char *key);
/* The integer member key in *out; returns 0, or -1 if absent or not an integer. */
int jtree_int(yajl_val obj, const char *key, long long *out);
/* 1 if member key is true, 0 if false or absent. */
int jtree_true(yajl_val obj, const char *key);

/* Deepest nesting of arrays and objects qb accepts in a record. */
#define JTREE_DEPTH_MAX 512

/*
 * Parse the NUL-terminated JSON text into a yajl tree, refusing nesting
 * deeper than JTREE_DEPTH_MAX first (yajl frees trees recursively, so a
 * deep enough line would exhaust the stack). Returns the tree, which the
 * caller frees with yajl_tree_free, or NULL with a one-line reason in err.
 */
yajl_val jtree_parse(const char *text, char *err, size_t errlen);
/* jtree_parse where the caller has its own message: NULL on any failure. */
yajl_val jtree_parse0(const char *text);
/* Deepest nesting of the len bytes at p (strings skipped), for JSON text. */
int jtree_depth(const char *p, size_t len);
/*
 * Offset of the quote of a string the len bytes at p leave open, or -1.
 * yajl takes a whole value followed by an unterminated string ({}"x) as
 * valid: its lexer waits for the string's end, and end of input is no
 * garbage to it. A text it accepts is valid only if this is -1.
 */
long jtree_unclosed(const char *p, size_t len);

/*
 * Check that the len bytes at p are one valid JSON text (UTF-8 checked).
 * Returns 0 if so; otherwise -1 with a one-line reason such as
 * "parse error: invalid bytes in UTF8 string at byte 97" in err (errlen bytes).
 */
int jtree_check(const char *p, size_t len, char *err, size_t errlen);

/*
 * A one-line reason for yajl handle h's failure on the len bytes at p
 * into err (errlen bytes): yajl's message and the byte it names (for bad
 * UTF-8, the first bad byte itself), or "at end of line" when atend (the
 * failure came from yajl_complete_parse).
 */
void jtree_yajl_error(yajl_handle h, const char *p, size_t len, int atend,
    char *err, size_t errlen);

#endif
