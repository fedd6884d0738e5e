/*
 * job.c: libFuzzer harness for job records: each line read as a batch
 * object by every provider's job reader and written back with job_emit,
 * what its end means (jobend_read), and the whole input read as a list
 * of job records (jobs_read). Output must be JSON again.
 * SPDX-License-Identifier: ISC
 */
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "fuzz.h"
#include "json/jout.h"
#include "json/jtree.h"
#include "ledger/job.h"
#include "ledger/jobs.h"
#include "provider/provops.h"
#include "record/jobend.h"

static void
line(const char *p, size_t len, void *arg)
{
	static const char *const names[] = { "openai", "anthropic", "azure" };
	static const char *const res[] = { "/tmp/a.jsonl", "/tmp/b.jsonl" };
	yajl_gen g = arg;
	const struct provider *pv;
	struct provider_job pj;
	struct job_set set;
	struct jobend je;
	yajl_val v, errs;
	char err[256];
	size_t i;

	if ((v = yajl_tree_parse(p, NULL, 0)) == NULL)
		return;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((pv = provider_find(names[i])) == NULL)
			abort();
		memset(&set, 0, sizeof(set));
		set.provider = pv->name;
		set.ended = -1;
		set.error_status = 0;
		if (provider_ops(pv)->job(v, &pj, err, sizeof(err)) == 0) {
			set.pj = &pj;
			set.ended = jobend_final(pj.status);
			set.results = res;
			set.nresults = (int)(len % 3);
		} else {
			set.error = "fuzz";
			set.error_status = (long)len;
			set.cancel_at = "2026-01-01T00:00:00Z";
		}
		job_emit(g, v, &set);
		fuzz_json(g);
	}
	memset(&je, 0, sizeof(je));
	jobend_read(&je, v, jtree_str(v, "status"), (len & 1) != 0);
	jobend_free(&je);
	if ((errs = jobend_errors(v)) != NULL)
		for (i = 0; i < errs->u.array.len; i++)
			jobend_line(errs->u.array.values[i]);
	yajl_tree_free(v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static yajl_gen g;
	struct jobs js;
	size_t i;

	fuzz_quiet();
	if (g == NULL)
		g = jout_new();
	fuzz_lines(data, size, line, g);
	jobs_init(&js, sizeof(struct jobrec), 0);
	if (jobs_read(&js, fuzz_file(data, size)) != 0)
		abort();
	for (i = 0; i < js.n; i++) {
		const struct jobrec *j = jobs_at(&js, i);

		if (jobs_find(&js, jtree_str(j->rec, "batch_id")) == NULL)
			abort();
	}
	jobs_free(&js);
	return 0;
}
