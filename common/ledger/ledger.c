/*
 * ledger.c: the job ledger: what it holds for each digest, appends
 * (jobs, intents) and rewrites. Its locks are in ledgerlock.c.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/afile.h"
#include "base/buf.h"
#include "base/exits.h"
#include "base/msg.h"
#include "base/num.h"
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jtree.h"
#include "ledger/ledger.h"
#include "provider/provider.h"

int
ledger_init(struct ledger *l, const char *path)
{
	const char *s, *e = NULL;
	double wait = 30;

	memset(l, 0, sizeof(*l));
	l->fd = l->runfd = -1;
	if ((s = getenv("QB_LOCK_WAIT")) != NULL && *s != '\0')
		wait = num_seconds(s, &e);
	if (e != NULL)
		return qb_fail(QB_EX_CONFIG, "QB_LOCK_WAIT \"%s\" is %s", s, e);
	l->path = xstrdup(path);
	l->wait = wait;
	idmap_init(&l->sha);
	idmap_init(&l->ids);
	return 0;
}

static void strv_free(char **);

void
ledger_free(struct ledger *l)
{
	size_t i;

	ledger_unlock(l);
	if (l->runfd != -1)
		close(l->runfd);	/* and with it the run lock */
	for (i = 0; i < l->sha.n; i++) {
		free(l->batch[i]);
		free(l->intent[i]);
		strv_free(l->results[i]);
	}
	free(l->batch);
	free(l->intent);
	free(l->results);
	free(l->reaped);
	idmap_free(&l->sha);
	idmap_free(&l->ids);
	free(l->path);
	memset(l, 0, sizeof(*l));
	l->fd = l->runfd = -1;
}

enum { R_JOB, R_REAPED, R_INTENT, R_WITHDRAWN };

static void
strv_free(char **v)
{
	size_t i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* The strings of array a, NULL-terminated and owned; NULL for none. */
static char **
strv(yajl_val a)
{
	char **v;
	size_t i, n = 0;

	if (!YAJL_IS_ARRAY(a) || a->u.array.len == 0)
		return NULL;
	v = xreallocarray(NULL, a->u.array.len + 1, sizeof(*v));
	for (i = 0; i < a->u.array.len; i++)
		if (YAJL_IS_STRING(a->u.array.values[i]))
			v[n++] = xstrdup(a->u.array.values[i]->u.string);
	v[n] = NULL;
	return v;
}

/*
 * Note for digest sha a job (R_JOB, or R_REAPED for one qb-reap ended),
 * with batch id; an intent made at at; or an intent withdrawn.
 */
static void
remember(struct ledger *l, const char *sha, const char *id, const char *at,
    int what, yajl_val results)
{
	size_t i;
	int isnew;

	if (id != NULL && *id != '\0')
		idmap_put(&l->ids, id, strlen(id), &isnew);
	if (sha == NULL || *sha == '\0')
		return;
	i = idmap_put(&l->sha, sha, strlen(sha), &isnew);
	if (isnew) {
		l->batch = xreallocarray(l->batch, l->sha.n, sizeof(*l->batch));
		l->intent = xreallocarray(l->intent, l->sha.n,
		    sizeof(*l->intent));
		l->reaped = xreallocarray(l->reaped, l->sha.n,
		    sizeof(*l->reaped));
		l->results = xreallocarray(l->results, l->sha.n,
		    sizeof(*l->results));
		l->batch[i] = l->intent[i] = NULL;
		l->results[i] = NULL;
		l->reaped[i] = 0;
	}
	/* The latest record for a file wins; a job settles an intent. */
	if (what == R_JOB || what == R_REAPED) {
		/* "": a job record without a batch id (made by hand). */
		free(l->batch[i]);
		l->batch[i] = xstrdup(id != NULL ? id : "");
		l->reaped[i] = what == R_REAPED;
		strv_free(l->results[i]);
		l->results[i] = strv(results);
		free(l->intent[i]);
		l->intent[i] = NULL;
	} else if (what == R_INTENT) {
		free(l->intent[i]);
		l->intent[i] = xstrdup(at);
	} else if (what == R_WITHDRAWN) {
		free(l->intent[i]);
		l->intent[i] = NULL;
	}
}

/* A stdio stream on a copy of the locked descriptor, at offset off. */
static FILE *
reopen(struct ledger *l, off_t off)
{
	FILE *fp;
	int fd;

	if ((fd = dup(l->fd)) == -1 || (fp = fdopen(fd, "r")) == NULL) {
		qb_warnsys("ledger %s", l->path);
		if (fd != -1)
			close(fd);
		return NULL;
	}
	if (fseeko(fp, off, SEEK_SET) != 0) {
		qb_warnsys("ledger %s", l->path);
		fclose(fp);
		return NULL;
	}
	return fp;
}

/* Next non-blank line of fp without its ending; *lineno counts lines. */
static ssize_t
nextline(FILE *fp, char **line, size_t *cap, unsigned long *lineno)
{
	ssize_t n;
	char *p;

	while ((n = getline(line, cap, fp)) > 0) {
		p = *line;
		if (++*lineno == 1 && n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
			memmove(p, p + 3, (size_t)n - 2);
			n -= 3;
		}
		while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
			n--;
		p[n] = '\0';
		if (strspn(p, " \t\r\f\v") != (size_t)n)
			return n;
	}
	return -1;
}

int
ledger_refresh(struct ledger *l)
{
	char err[256];
	struct stat st;
	char *line = NULL;
	size_t cap = 0;
	yajl_val v;
	FILE *fp;
	int rc;

	if ((rc = ledger_lock(l, LEDGER_READ)) != 0)
		return rc == QB_EX_NOINPUT ? 0 : rc;
	if (fstat(l->fd, &st) == -1) {
		qb_warnsys("ledger %s", l->path);
		ledger_unlock(l);
		return QB_EX_IOERR;
	}
	if (st.st_dev != l->dev || st.st_ino != l->ino || st.st_size < l->off) {
		l->dev = st.st_dev;
		l->ino = st.st_ino;
		l->off = 0;
		l->lineno = 0;
	}
	if ((fp = reopen(l, l->off)) == NULL) {
		ledger_unlock(l);
		return QB_EX_IOERR;
	}
	while (nextline(fp, &line, &cap, &l->lineno) >= 0) {
		v = jtree_parse(line, err, sizeof(err));
		if (YAJL_IS_OBJECT(v) && ledger_is_intent(v))
			remember(l, jtree_str(v, "intent"), NULL,
			    jtree_str(v, "at") != NULL ? jtree_str(v, "at") : "",
			    jtree_true(v, "withdrawn") ? R_WITHDRAWN : R_INTENT,
			    NULL);
		else if (YAJL_IS_OBJECT(v)) {
			remember(l, jtree_str(v, "sha256"), jtree_str(v, "batch_id"),
			    NULL, jtree_get(v, "reaped") != NULL ? R_REAPED : R_JOB,
			    jtree_get(v, "results"));
			if (l->each != NULL)
				l->each(l->each_arg, v);
		} else
			qb_lwarn(l->path, l->lineno, "%s; ignored",
			    v == NULL ? err : "not a JSON object");
		yajl_tree_free(v);
	}
	rc = ferror(fp) ? QB_EX_IOERR : 0;
	if (rc != 0)
		qb_warnsys("ledger %s: read error", l->path);
	else
		l->off = ftello(fp);
	fclose(fp);
	free(line);
	ledger_unlock(l);
	return rc;
}

const char *
ledger_sha(const struct ledger *l, const char *sha256)
{
	size_t i = idmap_get(&l->sha, sha256, strlen(sha256));

	/* An intent alone, or one withdrawn, is no job. */
	if (i == (size_t)-1 || l->batch[i] == NULL)
		return NULL;
	return l->batch[i];
}

const char *
ledger_intent(const struct ledger *l, const char *sha256)
{
	size_t i = idmap_get(&l->sha, sha256, strlen(sha256));

	return i == (size_t)-1 ? NULL : l->intent[i];
}

int
ledger_known(const struct ledger *l, const char *id)
{
	return idmap_get(&l->ids, id, strlen(id)) != (size_t)-1;
}

int
ledger_is_intent(yajl_val rec)
{
	return jtree_get(rec, "intent") != NULL &&
	    jtree_get(rec, "batch_id") == NULL;
}

int
ledger_is_intent_scan(const struct jscan *s)
{
	return jscan_find(s, -1, "intent") >= 0 &&
	    jscan_find(s, -1, "batch_id") < 0;
}

static int
writeall(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
append(struct ledger *l, const char *line, size_t len)
{
	struct stat st;
	char last = '\n';
	int rc;

	if ((rc = ledger_lock(l, LEDGER_APPEND)) != 0)
		return rc;
	rc = 0;
	if (fstat(l->fd, &st) == -1 ||
	    (st.st_size > 0 && pread(l->fd, &last, 1, st.st_size - 1) != 1))
		rc = -1;
	/* A line cut short by a crash must not swallow this record. */
	if (rc == 0 && last != '\n' && writeall(l->fd, "\n", 1) == -1)
		rc = -1;
	if (rc == 0 && (writeall(l->fd, line, len) == -1 ||
	    writeall(l->fd, "\n", 1) == -1 || fsync(l->fd) == -1))
		rc = -1;
	if (rc == 0 && st.st_size == 0 && afile_fsync_dir(l->path) == -1)
		rc = -1;
	if (rc != 0) {
		qb_warnsys("ledger %s: cannot append", l->path);
		ledger_unlock(l);
		return QB_EX_IOERR;
	}
	ledger_unlock(l);
	return 0;
}

int
ledger_append(struct ledger *l, const char *sha256, const char *batch_id,
    const char *line, size_t len)
{
	int rc;

	if ((rc = append(l, line, len)) == 0)
		remember(l, sha256, batch_id, NULL, R_JOB, NULL);
	return rc;
}

/* Append an intent line for sha256: made now, or withdrawn (file NULL). */
static int
intent(struct ledger *l, const char *sha256, const char *file,
    const char *provider)
{
	const unsigned char *line;
	size_t len;
	yajl_gen g = jout_new();
	char at[32];
	int rc;

	provider_time((long long)time(NULL), at, sizeof(at));
	jout_open(g);
	jout_kstr(g, "intent", sha256);
	if (file != NULL)
		jout_kstr(g, "file", file);
	else
		jout_kbool(g, "withdrawn", 1);
	jout_kstr(g, "at", at);
	if (provider != NULL)
		jout_kstr(g, "provider", provider);
	jout_close(g);
	yajl_gen_get_buf(g, &line, &len);
	if ((rc = append(l, (const char *)line, len)) == 0)
		remember(l, sha256, NULL, at, file != NULL ? R_INTENT :
		    R_WITHDRAWN, NULL);
	yajl_gen_free(g);
	return rc;
}

int
ledger_intend(struct ledger *l, const char *sha256, const char *file,
    const char *provider)
{
	return intent(l, sha256, file, provider);
}

int
ledger_withdraw(struct ledger *l, const char *sha256)
{
	return intent(l, sha256, NULL, NULL);
}

int
ledger_reaped(const struct ledger *l, const char *sha256)
{
	size_t i = idmap_get(&l->sha, sha256, strlen(sha256));

	return i != (size_t)-1 && l->batch[i] != NULL && l->reaped[i];
}

char *const *
ledger_results(const struct ledger *l, const char *sha256)
{
	size_t i = idmap_get(&l->sha, sha256, strlen(sha256));

	return i != (size_t)-1 && l->batch[i] != NULL ? l->results[i] : NULL;
}

int
ledger_rewrite(struct ledger *l, ledger_fn fn, void *arg)
{
	struct afile a;
	unsigned long lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	yajl_val v;
	FILE *fp;
	int rc;

	if ((rc = ledger_lock(l, LEDGER_WRITE)) != 0) {
		if (rc == QB_EX_NOINPUT)
			qb_warn("ledger %s: No such file or directory", l->path);
		return rc;
	}
	if ((fp = reopen(l, 0)) == NULL) {
		ledger_unlock(l);
		return QB_EX_IOERR;
	}
	if (afile_open(&a, l->path) == -1) {
		qb_warnsys("ledger %s: cannot make a temporary file", l->path);
		fclose(fp);
		ledger_unlock(l);
		return QB_EX_IOERR;
	}
	rc = 0;
	while (rc == 0 && (n = nextline(fp, &line, &cap, &lineno)) >= 0) {
		v = jtree_parse0(line);
		if (!YAJL_IS_OBJECT(v)) {
			yajl_tree_free(v);
			v = NULL;
		}
		if (fn(arg, line, (size_t)n, v, a.fp) != 0)
			rc = QB_EX_IOERR;
		yajl_tree_free(v);
	}
	if (rc == 0 && ferror(fp)) {
		qb_warnsys("ledger %s: read error", l->path);
		rc = QB_EX_IOERR;
	}
	fclose(fp);
	free(line);
	if (rc != 0)
		afile_abort(&a);
	else if (afile_commit(&a, NULL) == -1) {
		qb_warnsys("ledger %s: cannot replace", l->path);
		rc = QB_EX_IOERR;
	}
	ledger_unlock(l);
	return rc;
}
