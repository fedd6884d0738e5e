/*
 * spool.c: the dir: queue, a maildir-like spool (see spool.h for the
 * naming scheme). Every state change is one rename(2) within the spool,
 * so a crash leaves each message whole in exactly one of new/ and cur/,
 * and concurrent drainers on one host never take the same message: the
 * rename of a given name succeeds for one of them only.
 * SPDX-License-Identifier: ISC
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/afile.h"
#include "base/buf.h"
#include "base/idmap.h"
#include "base/qtime.h"
#include "base/xmem.h"
#include "json/jtree.h"
#include "queue/spool.h"

#define NAME_MAX_LEN 128	/* longest spool name we make or accept */

int
spool_open(struct spool *s, const char *dir, int create)
{
	static const char *const sub[] = { "tmp", "new", "cur" };
	char path[PATH_MAX], real[PATH_MAX];
	struct stat st;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (create && mkdir(dir, 0777) == -1 && errno != EEXIST)
		return -1;
	if (realpath(dir, real) == NULL)
		return -1;
	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", real, sub[i]) >=
		    sizeof(path)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (create && mkdir(path, 0777) == -1 && errno != EEXIST)
			return -1;
		if (stat(path, &st) == -1)
			return -1;
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
	}
	s->dir = xstrdup(real);
	return 0;
}

void
spool_close(struct spool *s)
{
	spool_discard(s);
	free(s->staged);
	s->staged = NULL;
	free(s->dir);
	s->dir = NULL;
}

/* "DIR/sub/name" into p; -1 with ENAMETOOLONG if it does not fit. */
static int
mkpath(char *p, size_t n, const struct spool *s, const char *sub,
    const char *name)
{
	if ((size_t)snprintf(p, n, "%s/%s/%s", s->dir, sub, name) >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * Split a spool name into its UNIQ length, receives (R) and lease end (E,
 * epoch ms). Returns 0, or -1 if name is not one of ours.
 */
static int
parse(const char *name, size_t *ulen, long *r, long long *e)
{
	const char *p;
	char *end;
	size_t n;

	n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_-");
	if (n == 0 || n > 64 || strlen(name) > NAME_MAX_LEN)
		return -1;
	*ulen = n;
	*r = 0;
	*e = 0;
	for (p = name + n; *p == ','; p = end) {
		errno = 0;
		if (p[1] == 'R')
			*r = strtol(p + 2, &end, 10);
		else if (p[1] == 'E')
			*e = strtoll(p + 2, &end, 10);
		else
			return -1;
		if (end == p + 2 || errno != 0 || *r < 0 || *e < 0)
			return -1;
	}
	return *p == '\0' ? 0 : -1;
}

int
spool_put(struct spool *s, const char *p, size_t len)
{
	char uniq[80], tmp[PATH_MAX];
	struct timespec ts;
	ssize_t w;
	size_t off;
	int fd, e;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(uniq, sizeof(uniq), "%lld-%06ld-%ld-%lu", (long long)ts.tv_sec,
	    ts.tv_nsec / 1000, (long)getpid(), s->seq++);
	if (mkpath(tmp, sizeof(tmp), s, "tmp", uniq) == -1)
		return -1;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666)) == -1)
		return -1;
	/* Removed at exit unless spool_commit has moved it into new/. */
	afile_temp_add(tmp);
	for (off = 0; off < len; off += (size_t)w)
		if ((w = write(fd, p + off, len - off)) == -1) {
			if (errno == EINTR) {
				w = 0;
				continue;
			}
			goto fail;
		}
	if (write(fd, "\n", 1) != 1 || fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	s->staged = xreallocarray(s->staged, s->nstaged + 1, sizeof(*s->staged));
	s->staged[s->nstaged++] = xstrdup(uniq);
	return 0;
fail:
	e = errno;
	if (fd != -1)
		close(fd);
	unlink(tmp);
	afile_temp_del(tmp);
	errno = e;
	return -1;
}

int
spool_commit(struct spool *s)
{
	char tmp[PATH_MAX], dst[PATH_MAX], name[96];
	size_t i;
	int rc = 0, e = 0;

	for (i = 0; i < s->nstaged; i++) {
		snprintf(name, sizeof(name), "%s,R0", s->staged[i]);
		mkpath(tmp, sizeof(tmp), s, "tmp", s->staged[i]);	/* fits: put made it */
		if (rc == 0 && (mkpath(dst, sizeof(dst), s, "new", name) == -1 ||
		    rename(tmp, dst) == -1)) {
			e = errno;
			rc = -1;
		}
		if (rc != 0)
			unlink(tmp);
		afile_temp_del(tmp);
		free(s->staged[i]);
	}
	s->nstaged = 0;
	if (rc == 0 && (mkpath(dst, sizeof(dst), s, "new", "x") == -1 ||
	    afile_fsync_dir(dst) == -1))
		return -1;
	errno = e;
	return rc;
}

void
spool_discard(struct spool *s)
{
	char tmp[PATH_MAX];
	size_t i;

	for (i = 0; i < s->nstaged; i++) {
		if (mkpath(tmp, sizeof(tmp), s, "tmp", s->staged[i]) == 0) {
			unlink(tmp);
			afile_temp_del(tmp);
		}
		free(s->staged[i]);
	}
	s->nstaged = 0;
}

long
spool_reclaim(struct spool *s, double now)
{
	char from[PATH_MAX], to[PATH_MAX], name[NAME_MAX_LEN + 32];
	struct dirent *d;
	long long e, nowms = (long long)(now * 1000);
	size_t ulen;
	long r, back = 0;
	DIR *dp;

	if (mkpath(from, sizeof(from), s, "cur", "") == -1 ||
	    (dp = opendir(from)) == NULL)
		return -1;
	while ((d = readdir(dp)) != NULL) {
		if (d->d_name[0] == '.' || parse(d->d_name, &ulen, &r, &e) == -1 ||
		    e > nowms)
			continue;
		snprintf(name, sizeof(name), "%.*s,R%ld", (int)ulen, d->d_name, r);
		if (mkpath(from, sizeof(from), s, "cur", d->d_name) == -1 ||
		    mkpath(to, sizeof(to), s, "new", name) == -1)
			continue;
		/* ENOENT: another drainer took it back first, or it was settled. */
		if (rename(from, to) == 0)
			back++;
	}
	closedir(dp);
	return back;
}

static int
cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read the whole file at path into m->body. */
static int
slurp(const char *path, struct qmsg *m)
{
	struct buf b = BUF_INIT;
	char chunk[65536];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			close(fd);
			buf_free(&b);
			return -1;
		}
		buf_append(&b, chunk, (size_t)n);
	}
	close(fd);
	while (b.len > 0 && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == '\r'))
		b.p[--b.len] = '\0';
	if (b.p == NULL)
		buf_grow(&b, 1);
	m->body = b.p;
	m->len = b.len;
	return 0;
}

long
spool_take(struct spool *s, struct qbatch *b, size_t max, double lease)
{
	char from[PATH_MAX], to[PATH_MAX], name[NAME_MAX_LEN + 32];
	char **names = NULL;
	size_t i, n = 0, cap = 0, ulen;
	struct dirent *d;
	struct qmsg *m;
	long long e, until;
	long r, got = 0;
	double now = qtime_wall();
	DIR *dp;

	if (mkpath(from, sizeof(from), s, "new", "") == -1 ||
	    (dp = opendir(from)) == NULL)
		return -1;
	while ((d = readdir(dp)) != NULL) {
		if (d->d_name[0] == '.' || parse(d->d_name, &ulen, &r, &e) == -1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = xreallocarray(names, cap, sizeof(*names));
		}
		names[n++] = xstrdup(d->d_name);
	}
	closedir(dp);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmpstr);
	until = (long long)ceil((now + lease) * 1000);
	for (i = 0; i < n && (size_t)got < max; i++) {
		parse(names[i], &ulen, &r, &e);
		snprintf(name, sizeof(name), "%.*s,R%ld,E%lld", (int)ulen,
		    names[i], r + 1, until);
		if (mkpath(from, sizeof(from), s, "new", names[i]) == -1 ||
		    mkpath(to, sizeof(to), s, "cur", name) == -1)
			continue;
		if (rename(from, to) == -1)
			continue;	/* another drainer has it */
		m = qmsg_add(b);
		if (slurp(to, m) == -1) {
			/* Leave the lease to expire; the message is not lost. */
			b->n--;
			continue;
		}
		m->id = xstrndup(names[i], ulen);
		m->receipt = xstrdup(name);
		m->receives = r + 1;
		m->until = (double)until / 1000;
		got++;
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return got;
}

int
spool_relet(struct spool *s, const char *receipt, double until, char **newr)
{
	char from[PATH_MAX], to[PATH_MAX], name[NAME_MAX_LEN + 32];
	long long e;
	size_t ulen;
	long r;

	if (parse(receipt, &ulen, &r, &e) == -1 || e == 0) {
		errno = EINVAL;
		return -1;
	}
	if (until > 0)
		snprintf(name, sizeof(name), "%.*s,R%ld,E%lld", (int)ulen,
		    receipt, r, (long long)ceil(until * 1000));
	else
		snprintf(name, sizeof(name), "%.*s,R%ld", (int)ulen, receipt, r);
	if (mkpath(from, sizeof(from), s, "cur", receipt) == -1 ||
	    mkpath(to, sizeof(to), s, until > 0 ? "cur" : "new", name) == -1)
		return -1;
	if (rename(from, to) == -1)
		return -1;
	if (newr != NULL)
		*newr = xstrdup(name);
	return 0;
}

int
spool_delete(struct spool *s, const char *receipt)
{
	char p[PATH_MAX];
	long long e;
	size_t ulen;
	long r;

	if (parse(receipt, &ulen, &r, &e) == -1 || e == 0) {
		errno = EINVAL;
		return -1;
	}
	if (mkpath(p, sizeof(p), s, "cur", receipt) == -1)
		return -1;
	return unlink(p);
}

int
spool_ids(struct spool *s, struct idmap *ids)
{
	static const char *const sub[] = { "new", "cur" };
	char path[PATH_MAX];
	struct dirent *d;
	struct qmsg m;
	long long e;
	long r;
	size_t i, ulen;
	const char *id;
	yajl_val v;
	int isnew;
	DIR *dp;

	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		if (mkpath(path, sizeof(path), s, sub[i], "") == -1 ||
		    (dp = opendir(path)) == NULL)
			return -1;
		while ((d = readdir(dp)) != NULL) {
			if (d->d_name[0] == '.' ||
			    parse(d->d_name, &ulen, &r, &e) == -1 ||
			    mkpath(path, sizeof(path), s, sub[i], d->d_name) == -1)
				continue;
			memset(&m, 0, sizeof(m));
			/* ENOENT: settled, or moved by a drainer, meanwhile. */
			if (slurp(path, &m) == -1) {
				if (errno == ENOENT)
					continue;
				closedir(dp);
				return -1;
			}
			/* As qb-drain names the item: the body's id, else the name. */
			v = jtree_parse0(m.body);
			if ((id = jtree_str(v, "custom_id")) == NULL &&
			    (id = jtree_str(v, "id")) == NULL) {
				memcpy(path, d->d_name, ulen);
				path[ulen] = '\0';
				id = path;
			}
			idmap_put(ids, id, strlen(id), &isnew);
			yajl_tree_free(v);
			free(m.body);
		}
		closedir(dp);
	}
	return 0;
}
