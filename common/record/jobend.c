/*
 * jobend.c: what the end of a batch means for its requests that got no
 * result (jobend.h).
 * SPDX-License-Identifier: ISC
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/xmem.h"
#include "json/jtree.h"
#include "record/jobend.h"

/* Status words compare without case: Azure answers "Completed"
 * (qb-providers(7), AZURE OPENAI). */
static int
inlist_nocase(const char *s, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcasecmp(s, *list) == 0)
			return 1;
	return 0;
}

yajl_val
jobend_errors(yajl_val v)
{
	yajl_val e = jtree_get(v, "errors");

	if (YAJL_IS_OBJECT(e))
		e = jtree_get(e, "data");
	return YAJL_IS_ARRAY(e) && e->u.array.len > 0 ? e : NULL;
}

uint32_t
jobend_line(yajl_val e)
{
	long long n;

	if (jtree_int(e, "line", &n) == -1 || n < 1 || n > UINT32_MAX)
		return 0;
	return (uint32_t)n;
}

int
jobend_read(struct jobend *j, yajl_val v, const char *status, int failed)
{
	static const char *const cancelled[] = { "cancelled", "canceled",
	    "cancelling", "canceling", NULL };
	yajl_val errs = jobend_errors(v), e, first = NULL;
	const char *code = "missing_result", *msg = "no result for this id";
	const char *ec, *em;
	struct buf b = BUF_INIT;
	size_t i, nline = 0;

	if (status != NULL && strcmp(status, "expired") == 0) {
		j->miss = RESULT_EXPIRED;
		code = "batch_expired";
		msg = "the batch expired before this request ran";
	} else if (status != NULL && inlist_nocase(status, cancelled)) {
		j->miss = RESULT_CANCELED;
		code = "batch_cancelled";
		msg = "the batch was cancelled before this request ran";
	} else
		j->miss = RESULT_MISSING;
	for (i = 0; errs != NULL && i < errs->u.array.len; i++) {
		e = errs->u.array.values[i];
		if (failed && jobend_line(e) > 0)
			nline++;
		else if (first == NULL)
			first = e;
	}
	if (errs == NULL && YAJL_IS_OBJECT(jtree_get(v, "error")))
		first = jtree_get(v, "error");
	if (nline > 0 && first == NULL)
		code = "batch_failed";
	if (jtree_str(first, "code") != NULL)
		code = jtree_str(first, "code");
	if (jtree_str(first, "message") != NULL)
		msg = jtree_str(first, "message");
	j->code = xstrdup(code);
	j->param = jtree_str(first, "param") ? xstrdup(jtree_str(first,
	    "param")) : NULL;
	if (nline == 0) {
		j->msg = xstrdup(msg);
		return 0;
	}
	if (first != NULL)
		buf_printf(&b, "%s; also ", msg);
	else
		buf_puts(&b, "the batch failed: ");
	for (i = nline = 0; i < errs->u.array.len; i++) {
		e = errs->u.array.values[i];
		ec = jtree_str(e, "code");
		em = jtree_str(e, "message");
		/* Three named at most, the rest counted. */
		if (jobend_line(e) > 0 && ++nline <= 3)
			buf_printf(&b, "%sline %lu: %s%s%s", nline > 1 ? "; " : "",
			    (unsigned long)jobend_line(e), ec ? ec : "error",
			    em ? ": " : "", em ? em : "");
	}
	if (nline > 3)
		buf_printf(&b, "; and %zu more", nline - 3);
	j->msg = xstrndup(b.p, b.len);
	buf_free(&b);
	return nline > 0;
}

int
jobend_final(const char *status)
{
	static const char *const final[] = { "completed", "failed", "expired",
	    "cancelled", "canceled", "ended", NULL };

	return status != NULL && inlist_nocase(status, final);
}

void
jobend_free(struct jobend *j)
{
	free(j->code);
	free(j->msg);
	free(j->param);
	j->code = j->msg = j->param = NULL;
}
