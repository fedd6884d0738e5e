/*
 * result.c: libFuzzer harness for the result parsers: each line through
 * result_parse (OpenAI, Anthropic and qb result records) and, as an
 * answer body of some HTTP status, result_answer; each result written
 * with result_emit, whose output must be JSON again.
 * SPDX-License-Identifier: ISC
 */
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "fuzz.h"
#include "json/jout.h"
#include "record/result.h"

struct ctx {
	struct result_parser p;
	yajl_gen g;
};

static void
emit(yajl_gen g, const struct result *r)
{
	jout_open(g);
	jout_kstr(g, "id", r->id);
	result_emit(g, r, "batch_fuzz");
	jout_close(g);
	fuzz_json(g);
}

static void
line(const char *p, size_t len, void *arg)
{
	static const long long status[] = { 200, 201, 400, 401, 402, 403, 404,
	    408, 409, 429, 500, 503, 529, 0, -1, 999, 9223372036854775807LL };
	struct ctx *c = arg;
	struct result r;
	char err[256];

	memset(&r, 0, sizeof(r));
	if (result_parse(&c->p, p, len, &r, err, sizeof(err)) == 0)
		emit(c->g, &r);
	memset(&r, 0, sizeof(r));
	result_answer(&c->p, p, len, status[len % (sizeof(status) /
	    sizeof(status[0]))], &r);
	r.id = "fuzz";
	emit(c->g, &r);
	result_error_outcome(r.etype, r.ecode);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctx c;

	fuzz_quiet();
	if (c.g == NULL)
		c.g = jout_new();
	fuzz_lines(data, size, line, &c);
	result_parser_free(&c.p);
	return 0;
}
