/*
 * reqindex.c: libFuzzer harness for the request index: the input as a
 * request file, indexed, then each request's line read again, its
 * extra members written (as they are, and as an item), and every
 * physical line looked up as a job's errors name them.
 * SPDX-License-Identifier: ISC
 */
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "fuzz.h"
#include "json/jout.h"
#include "record/reqindex.h"

static const char *const own[] = { "id", "custom_id", "method", "url",
	"body", "params", "outcome", "status", "http_status", "error", "usage",
	"request_id", "batch_id", "response", "cost_usd", "account_error", NULL };

/* Request i written as a record by reqindex_emit must be JSON again:
 * the file is not changed while the harness runs, so it cannot fail. */
static void
emit(yajl_gen g, struct reqindex *ri, size_t i, int item)
{
	jout_open(g);
	if (reqindex_emit(ri, i, g, item) != 0)
		abort();
	jout_close(g);
	fuzz_json(g);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static yajl_gen g;
	struct reqindex ri;
	const char *path;
	uint32_t lines[64];
	size_t idx[64], i, n, nl;

	fuzz_quiet();
	if (g == NULL)
		g = jout_new();
	path = fuzz_file(data, size);
	reqindex_init(&ri, own, 0);
	if (reqindex_file(&ri, path, 0) != 0)
		abort();
	for (i = 0; i < ri.ids.n; i++) {
		const char *line = reqindex_line(&ri, i);

		if (line == NULL || strlen(line) > ri.req[i].len)
			abort();
		emit(g, &ri, i, 0);
		emit(g, &ri, i, 1);
	}
	for (nl = 1, i = 0; i < size; i++)
		nl += data[i] == '\n';
	for (n = 0; n < nl + 1 && n < sizeof(lines) / sizeof(lines[0]); n++)
		lines[n] = (uint32_t)(n + 1);
	if (reqindex_lines(&ri, path, lines, n, idx) != 0)
		abort();
	for (i = 0; i < n; i++)
		if (idx[i] != (size_t)-1 && idx[i] >= ri.ids.n)
			abort();
	reqindex_free(&ri);
	return 0;
}
