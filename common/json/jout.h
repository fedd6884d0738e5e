/*
 * jout.h: JSON output through yajl_gen, one compact object per line.
 * Tools build a record with the jout_k* helpers between jout_open and
 * jout_close, then jout_line writes it and a '\n'.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_JOUT_H
#define QB_JOUT_H

#include <stdio.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

/* A generator for compact output; dies with QB_EX_OSERR when out of memory. */
yajl_gen jout_new(void);

void jout_open(yajl_gen g);		/* { */
void jout_close(yajl_gen g);		/* } */
void jout_str(yajl_gen g, const char *s);	/* a string, or null if s is NULL */
void jout_strn(yajl_gen g, const char *s, size_t n);
void jout_int(yajl_gen g, long long v);
/* Members: key then value. jout_kstr writes null for a NULL s. */
void jout_kstr(yajl_gen g, const char *k, const char *s);
void jout_kint(yajl_gen g, const char *k, long long v);
void jout_kbool(yajl_gen g, const char *k, int b);
void jout_kval(yajl_gen g, const char *k, yajl_val v);
void jout_key(yajl_gen g, const char *k);
/* A parsed value, numbers kept as written. */
void jout_val(yajl_gen g, yajl_val v);
/*
 * n bytes of JSON text that the caller has validated (jscan_parse or
 * jtree_check), inserted verbatim: used to carry request bodies through
 * without rebuilding them.
 */
void jout_raw(yajl_gen g, const char *p, size_t n);
/* Every member of obj whose key is not in skip (a NULL-terminated list). */
void jout_members(yajl_gen g, yajl_val obj, const char *const *skip);

/*
 * Write the finished record and a newline to fp and reset g for the next
 * record. Returns 0, or -1 with errno set on a write error (the caller
 * reports it and exits QB_EX_IOERR).
 */
int jout_line(yajl_gen g, FILE *fp);

#endif
