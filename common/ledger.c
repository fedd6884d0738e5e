/*
 * ledger.c: the job ledger and the job record writer.
 *
 * Appends and rewrites take an exclusive flock(2) on the ledger itself.
 * A rewrite renames a new file over the old one while holding the lock on
 * the old one, so whoever waited for that lock would hold it on a file
 * nobody reads any more: after locking, the descriptor is compared with
 * the path and the new file opened and locked instead.
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

#include "afile.h"
#include "exits.h"
#include "jout.h"
#include "json.h"
#include "ledger.h"
#include "msg.h"
#include "num.h"
#include "xmem.h"

void
ledger_init(struct ledger *l, const char *path)
{
	const char *s, *e;

	memset(l, 0, sizeof(*l));
	l->path = xstrdup(path);
	l->fd = -1;
	l->wait = 30;
	idmap_init(&l->sha);
	idmap_init(&l->ids);
	if ((s = getenv("QB_LOCK_WAIT")) != NULL && *s != '\0') {
		l->wait = qb_parse_seconds(s, &e);
		if (e != NULL)
			qb_die(QB_EX_CONFIG, "QB_LOCK_WAIT \"%s\" is %s", s, e);
	}
}

void
ledger_free(struct ledger *l)
{
	size_t i;

	ledger_unlock(l);
	for (i = 0; i < l->sha.n; i++)
		free(l->batch[i]);
	free(l->batch);
	idmap_free(&l->sha);
	idmap_free(&l->ids);
	free(l->path);
	memset(l, 0, sizeof(*l));
	l->fd = -1;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
ledger_lock(struct ledger *l, int mode)
{
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	struct stat fs, ps;
	double deadline = now() + l->wait;
	int fd, flags;

	ledger_unlock(l);
	flags = mode == LEDGER_READ ? O_RDONLY : O_RDWR | O_APPEND;
	if (mode == LEDGER_APPEND)
		flags |= O_CREAT;
	for (;;) {
		if ((fd = open(l->path, flags | O_CLOEXEC, 0666)) == -1) {
			if (errno == ENOENT && mode != LEDGER_APPEND)
				return QB_EX_NOINPUT;
			qb_warnsys("ledger %s", l->path);
			return errno == ENOENT ? QB_EX_NOINPUT : QB_EX_IOERR;
		}
		while (flock(fd, (mode == LEDGER_READ ? LOCK_SH : LOCK_EX) |
		    LOCK_NB) == -1) {
			if (errno != EWOULDBLOCK && errno != EINTR) {
				qb_warnsys("ledger %s: lock", l->path);
				close(fd);
				return QB_EX_IOERR;
			}
			if (now() >= deadline) {
				qb_warn("ledger %s is locked by another process "
				    "(waited %g s; QB_LOCK_WAIT); try again later",
				    l->path, l->wait);
				close(fd);
				return QB_EX_TEMPFAIL;
			}
			nanosleep(&nap, NULL);
		}
		if (fstat(fd, &fs) == -1) {
			qb_warnsys("ledger %s", l->path);
			close(fd);
			return QB_EX_IOERR;
		}
		if (stat(l->path, &ps) == 0 && ps.st_dev == fs.st_dev &&
		    ps.st_ino == fs.st_ino)
			break;
		/* Replaced (or removed) while we waited: lock the new one. */
		close(fd);
	}
	l->fd = fd;
	return 0;
}

void
ledger_unlock(struct ledger *l)
{
	if (l->fd != -1) {
		flock(l->fd, LOCK_UN);
		close(l->fd);
		l->fd = -1;
	}
}

static void
remember(struct ledger *l, const char *sha, const char *id)
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
		l->batch[i] = NULL;
	}
	/* The latest record for a file wins. */
	if (id != NULL && *id != '\0') {
		free(l->batch[i]);
		l->batch[i] = xstrdup(id);
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
		v = yajl_tree_parse(line, NULL, 0);
		if (YAJL_IS_OBJECT(v))
			remember(l, json_str(v, "sha256"), json_str(v, "batch_id"));
		else
			qb_lwarn(l->path, l->lineno, "not a JSON object; ignored");
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

	if (i == (size_t)-1)
		return NULL;
	return l->batch[i] != NULL ? l->batch[i] : "";
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

int
ledger_append(struct ledger *l, const char *sha256, const char *batch_id,
    const char *line, size_t len)
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
	if (rc == 0 && st.st_size == 0 && fsync_dir(l->path) == -1)
		rc = -1;
	if (rc != 0) {
		qb_warnsys("ledger %s: cannot append", l->path);
		ledger_unlock(l);
		return QB_EX_IOERR;
	}
	ledger_unlock(l);
	remember(l, sha256, batch_id);
	return 0;
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
		v = yajl_tree_parse(line, NULL, 0);
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

/* The members job_emit may set, in the order new ones are appended. */
enum { S_PROVIDER, S_BATCH, S_INPUT, S_STATUS, S_ENDED, S_TIME, S_COUNTS,
    S_ERRORS, S_RESULTS, S_ERROR };

struct slot {
	const char	*key;
	int		 what, i, done;
};

static void
emit(yajl_gen g, const struct job_set *s, const struct slot *sl)
{
	const struct provider_job *pj = s->pj;
	int i;

	jout_key(g, sl->key);
	switch (sl->what) {
	case S_PROVIDER:
		jout_str(g, s->provider);
		break;
	case S_BATCH:
		jout_str(g, pj->id);
		break;
	case S_INPUT:
		jout_str(g, pj->input_file_id);
		break;
	case S_STATUS:
		jout_str(g, pj->status);
		break;
	case S_ENDED:
		yajl_gen_bool(g, s->ended);
		break;
	case S_TIME:
		jout_str(g, pj->time[sl->i].val);
		break;
	case S_COUNTS:
		jout_open(g);
		jout_kint(g, "total", pj->total);
		jout_kint(g, "completed", pj->completed);
		jout_kint(g, "failed", pj->failed);
		jout_close(g);
		break;
	case S_ERRORS:
		jout_val(g, pj->errors);
		break;
	case S_RESULTS:
		yajl_gen_array_open(g);
		for (i = 0; i < s->nresults; i++)
			jout_str(g, s->results[i]);
		yajl_gen_array_close(g);
		break;
	case S_ERROR:
		jout_open(g);
		jout_kstr(g, "message", s->error);
		if (s->error_status > 0)
			jout_kint(g, "http_status", s->error_status);
		jout_close(g);
		break;
	}
}

void
job_emit(yajl_gen g, yajl_val rec, const struct job_set *s)
{
	const struct provider_job *pj = s->pj;
	struct slot sl[10 + JOB_TIMES];
	const char *k;
	size_t i;
	int n = 0, j, t;

#define ADD(cond, key_, what_, i_) do { if (cond) { sl[n].key = (key_); \
	sl[n].what = (what_); sl[n].i = (i_); sl[n++].done = 0; } } while (0)
	ADD(s->provider != NULL, "provider", S_PROVIDER, 0);
	ADD(pj != NULL && pj->id != NULL, "batch_id", S_BATCH, 0);
	ADD(pj != NULL && pj->input_file_id != NULL, "input_file_id", S_INPUT, 0);
	ADD(pj != NULL, "status", S_STATUS, 0);
	ADD(s->ended >= 0, "ended", S_ENDED, 0);
	for (t = 0; pj != NULL && t < pj->ntime; t++)
		ADD(1, pj->time[t].key, S_TIME, t);
	ADD(pj != NULL && pj->has_counts, "counts", S_COUNTS, 0);
	ADD(pj != NULL && pj->errors != NULL, "errors", S_ERRORS, 0);
	ADD(s->results != NULL, "results", S_RESULTS, 0);
	ADD(s->error != NULL, "error", S_ERROR, 0);
#undef ADD
	jout_open(g);
	for (i = 0; YAJL_IS_OBJECT(rec) && i < rec->u.object.len; i++) {
		k = rec->u.object.keys[i];
		for (j = 0; j < n; j++)
			if (strcmp(sl[j].key, k) == 0)
				break;
		if (j < n) {
			if (!sl[j].done)
				emit(g, s, &sl[j]);
			sl[j].done = 1;
		} else if (!(strcmp(k, "error") == 0 && pj != NULL))
			jout_kval(g, k, rec->u.object.values[i]);
	}
	for (j = 0; j < n; j++)
		if (!sl[j].done)
			emit(g, s, &sl[j]);
	jout_close(g);
}
