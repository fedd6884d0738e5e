/*
 * jout.c: compact JSON output over yajl_gen.
 * SPDX-License-Identifier: ISC
 */
#include <string.h>

#include "base/msg.h"
#include "json/jout.h"

static void
ck(yajl_gen_status st)
{
	/* A status other than ok is a bug in the caller's nesting. */
	if (st != yajl_gen_status_ok)
		qb_bug("JSON generator state %d", st);
}

yajl_gen
jout_new(void)
{
	yajl_gen g = yajl_gen_alloc(NULL);

	if (g == NULL)
		qb_oom(0);
	return g;
}

void
jout_open(yajl_gen g)
{
	ck(yajl_gen_map_open(g));
}

void
jout_close(yajl_gen g)
{
	ck(yajl_gen_map_close(g));
}

void
jout_strn(yajl_gen g, const char *s, size_t n)
{
	ck(yajl_gen_string(g, (const unsigned char *)s, n));
}

void
jout_str(yajl_gen g, const char *s)
{
	if (s == NULL)
		ck(yajl_gen_null(g));
	else
		jout_strn(g, s, strlen(s));
}

void
jout_int(yajl_gen g, long long v)
{
	ck(yajl_gen_integer(g, v));
}

void
jout_key(yajl_gen g, const char *k)
{
	jout_strn(g, k, strlen(k));
}

void
jout_kstr(yajl_gen g, const char *k, const char *s)
{
	jout_key(g, k);
	jout_str(g, s);
}

void
jout_kint(yajl_gen g, const char *k, long long v)
{
	jout_key(g, k);
	jout_int(g, v);
}

void
jout_kbool(yajl_gen g, const char *k, int b)
{
	jout_key(g, k);
	ck(yajl_gen_bool(g, b));
}

void
jout_kval(yajl_gen g, const char *k, yajl_val v)
{
	jout_key(g, k);
	jout_val(g, v);
}

void
jout_raw(yajl_gen g, const char *p, size_t n)
{
	/*
	 * yajl_gen_number prints its argument as given after placing the
	 * separator, which is exactly a verbatim value insertion.
	 */
	ck(yajl_gen_number(g, p, n));
}

void
jout_val(yajl_gen g, yajl_val v)
{
	size_t i;

	if (v == NULL || YAJL_IS_NULL(v)) {
		ck(yajl_gen_null(g));
	} else if (YAJL_IS_STRING(v)) {
		jout_str(g, v->u.string);
	} else if (YAJL_IS_NUMBER(v)) {
		ck(yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r)));
	} else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
		ck(yajl_gen_bool(g, YAJL_IS_TRUE(v)));
	} else if (YAJL_IS_OBJECT(v)) {
		jout_open(g);
		for (i = 0; i < v->u.object.len; i++) {
			jout_key(g, v->u.object.keys[i]);
			jout_val(g, v->u.object.values[i]);
		}
		jout_close(g);
	} else if (YAJL_IS_ARRAY(v)) {
		ck(yajl_gen_array_open(g));
		for (i = 0; i < v->u.array.len; i++)
			jout_val(g, v->u.array.values[i]);
		ck(yajl_gen_array_close(g));
	}
}

void
jout_members(yajl_gen g, yajl_val obj, const char *const *skip)
{
	const char *const *s;
	size_t i;

	if (!YAJL_IS_OBJECT(obj))
		return;
	for (i = 0; i < obj->u.object.len; i++) {
		for (s = skip; s != NULL && *s != NULL; s++)
			if (strcmp(*s, obj->u.object.keys[i]) == 0)
				break;
		if (s != NULL && *s != NULL)
			continue;
		jout_kval(g, obj->u.object.keys[i], obj->u.object.values[i]);
	}
}

int
jout_line(yajl_gen g, FILE *fp)
{
	const unsigned char *p;
	size_t n;
	int rc = 0;

	ck(yajl_gen_get_buf(g, &p, &n));
	if (fwrite(p, 1, n, fp) != n || putc('\n', fp) == EOF)
		rc = -1;
	yajl_gen_clear(g);
	yajl_gen_reset(g, NULL);
	return rc;
}
