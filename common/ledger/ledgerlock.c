/*
 * ledgerlock.c: the ledger's locks (ledger.h). Appends and rewrites take
 * an exclusive flock(2) on the ledger itself. A run lock is a separate
 * file, PATH.TOOL.lock, so that holding it for a whole run never keeps
 * another tool from the ledger. A rewrite renames a new file over the old
 * one while holding the lock on the old one, so whoever waited for that
 * lock would hold it on a file nobody reads any more: after locking, the
 * descriptor is compared with the path and the new file opened and locked
 * instead.
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

#include "base/buf.h"
#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "ledger/ledger.h"

int
ledger_lock(struct ledger *l, int mode)
{
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	struct stat fs, ps;
	double deadline = qtime_mono() + l->wait;
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
			if (qtime_mono() >= deadline) {
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

int
ledger_runlock(struct ledger *l, const char *tool)
{
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	struct buf path = BUF_INIT;
	double deadline = qtime_mono() + l->wait;
	int fd, rc = 0;

	/*
	 * qb-poll -i and qb-reap -i both rewrite jobs from what they read
	 * before talking to the provider: one lock keeps them apart, so
	 * neither undoes what the other wrote.
	 */
	if (strcmp(tool, "reap") == 0)
		tool = "poll";
	buf_printf(&path, "%s.%s.lock", l->path, tool);
	if ((fd = open(path.p, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) == -1) {
		rc = errno == ENOENT ? QB_EX_NOINPUT : QB_EX_IOERR;
		qb_warnsys("lock file %s", path.p);
	}
	while (rc == 0 && flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			qb_warnsys("lock file %s", path.p);
			rc = QB_EX_IOERR;
		} else if (qtime_mono() >= deadline) {
			qb_warn("another %s holds %s (lock file %s; waited "
			    "%g s, QB_LOCK_WAIT); try again later",
			    strcmp(tool, "poll") == 0 ? "qb-poll -i or qb-reap -i" :
			    "qb-submit", l->path, path.p, l->wait);
			rc = QB_EX_TEMPFAIL;
		} else
			nanosleep(&nap, NULL);
	}
	if (rc != 0 && fd != -1)
		close(fd);
	else if (rc == 0) {
		if (l->runfd != -1)
			close(l->runfd);
		l->runfd = fd;
	}
	buf_free(&path);
	return rc;
}

int
ledger_start(struct ledger *l, const char *tool, int create)
{
	int rc;

	rc = ledger_lock(l, create ? LEDGER_APPEND : LEDGER_READ);
	ledger_unlock(l);
	if (rc == QB_EX_NOINPUT && !create)
		qb_warn("ledger %s: No such file or directory", l->path);
	return rc != 0 ? rc : ledger_runlock(l, tool);
}
