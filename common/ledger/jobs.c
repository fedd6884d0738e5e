/*
 * jobs.c: the job records of a run (jobs.h).
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "ledger/jobs.h"
#include "ledger/ledger.h"

void
jobs_init(struct jobs *js, size_t size, int strict)
{
	memset(js, 0, sizeof(*js));
	js->size = size;
	js->strict = strict;
	idmap_init(&js->ids);
}

void *
jobs_at(const struct jobs *js, size_t i)
{
	return (char *)js->v + i * js->size;
}

void *
jobs_find(const struct jobs *js, const char *id)
{
	size_t i;

	if (id == NULL || (i = idmap_get(&js->ids, id, strlen(id))) ==
	    (size_t)-1)
		return NULL;
	return jobs_at(js, js->ix[i]);
}

/*
 * Keep the job record rec (len bytes at line) read from rd: 1, with rec
 * kept; 0 for an intent line (rec left to the reader); or the value
 * jsonl_reject gives for a record without a batch_id (reported).
 */
static int
add(struct jobs *js, struct jsonl_reader *rd, const char *line, size_t len,
    yajl_val rec)
{
	struct jobrec *j;
	const char *id = jtree_str(rec, "batch_id");
	size_t i;
	int isnew;

	if (ledger_is_intent(rec))
		return 0;	/* qb-submit's note, not a job */
	if (id == NULL || *id == '\0') {
		qb_lwarn(rd->name, rd->lineno, "expected string for \"batch_id\"");
		return jsonl_reject(rd);
	}
	if (js->nnames == 0 || strcmp(js->names[js->nnames - 1], rd->name) != 0) {
		js->names = xreallocarray(js->names, js->nnames + 1,
		    sizeof(*js->names));
		js->names[js->nnames++] = xstrdup(rd->name);
	}
	js->v = xreallocarray(js->v, js->n + 1, js->size);
	j = memset(jobs_at(js, js->n), 0, js->size);
	j->line = xstrndup(line, len);
	j->len = len;
	j->rec = rec;
	j->src = js->names[js->nnames - 1];
	j->lineno = rd->lineno;
	i = idmap_put(&js->ids, id, strlen(id), &isnew);
	if (isnew)
		js->ix = xreallocarray(js->ix, js->ids.n, sizeof(*js->ix));
	js->ix[i] = js->n++;
	return 1;
}

int
jobs_read(struct jobs *js, const char *path)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	int ch, rc;

	if ((rc = jsonl_start(&r, path, JSONL_TREE, js->strict)) != 0)
		return rc;
	while ((ch = jsonl_read(&r, &rec)) != JSONL_EOF) {
		if (ch == JSONL_LINE && (ch = add(js, &r, rec.line, rec.len,
		    rec.tree)) == 1)
			r.tree = NULL;	/* kept */
		if (ch == JSONL_IOERR || ch == JSONL_STOP)
			break;
	}
	js->nbad += r.nbad;
	jsonl_close(&r);
	/* A failure stops the run's reading. */
	return jsonl_status(ch);
}

int
jobs_load(struct jobs *js, struct ledger *led, const char *runlock,
    char **files, int nfiles)
{
	int i, rc = 0;

	if (led != NULL) {
		if (runlock != NULL && (rc = ledger_start(led, runlock, 0)) != 0)
			return rc;
		if ((rc = ledger_lock(led, LEDGER_READ)) != 0 &&
		    rc != QB_EX_NOINPUT)
			return rc;
		/* A missing ledger is said by jobs_read. */
		rc = jobs_read(js, led->path);
		ledger_unlock(led);
		return rc;
	}
	if (nfiles == 0)
		return jobs_read(js, "-");
	for (i = 0; i < nfiles && rc == 0; i++)
		rc = jobs_read(js, files[i]);
	return rc;
}

int
jobs_replace(void *arg, const char *line, size_t len, yajl_val rec, FILE *out)
{
	struct jobrec *j = jobs_find(arg, jtree_str(rec, "batch_id"));

	if (j != NULL && j->out != NULL) {
		line = j->out;
		len = strlen(line);
	}
	if (fwrite(line, 1, len, out) != len || putc('\n', out) == EOF)
		return -1;
	return 0;
}

void
jobs_written(struct jobs *js)
{
	struct jobrec *j;
	size_t i;

	for (i = 0; i < js->n; i++) {
		j = jobs_at(js, i);
		if (j->out == NULL)
			continue;
		free(j->line);
		j->line = j->out;
		j->len = strlen(j->out);
		j->out = NULL;
	}
}

void
jobs_free(struct jobs *js)
{
	struct jobrec *j;
	size_t i;

	for (i = 0; i < js->n; i++) {
		j = jobs_at(js, i);
		free(j->line);
		free(j->out);
		yajl_tree_free(j->rec);
	}
	for (i = 0; i < js->nnames; i++)
		free(js->names[i]);
	free(js->names);
	free(js->v);
	free(js->ix);
	idmap_free(&js->ids);
}
