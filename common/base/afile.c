/*
 * afile.c: atomic file replacement, and the list of temporary files a
 * process has made and not yet renamed or removed, which an atexit
 * handler removes: a tool that dies (a fatal error, a failed write on a full
 * disk) must not leave them behind to keep the disk full. SIGTERM, SIGINT
 * and SIGHUP (a cron timeout, a ^C) remove them too before the process
 * dies of the signal; only SIGKILL leaves them.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/afile.h"
#include "base/buf.h"
#include "base/exits.h"
#include "base/msg.h"
#include "base/xmem.h"

/*
 * Temporary names not yet committed or removed, each its own copy. This
 * is process-wide state outside msg.c because atexit handlers take no
 * argument; it is touched only by afile_temp_add and afile_temp_del.
 */
static char	**temps;
static size_t	  ntemps;

static void
temps_unlink(void)
{
	size_t i;

	for (i = 0; i < ntemps; i++)
		unlink(temps[i]);
}

/* A deadly signal: remove the temporary files, then die of it. */
static void
temps_signal(int sig)
{
	temps_unlink();		/* unlink(2) is async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

static const int deadly[] = { SIGTERM, SIGINT, SIGHUP };

/* Keep the deadly signals off while the list changes; *old restores. */
static void
temps_block(sigset_t *old)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(deadly) / sizeof(deadly[0]); i++)
		sigaddset(&set, deadly[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void
afile_temp_add(const char *path)
{
	static int armed;
	struct sigaction sa, was;
	sigset_t old;
	size_t i;

	if (!armed) {
		qb_atend(temps_unlink);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = temps_signal;
		sigemptyset(&sa.sa_mask);
		/* A signal the caller ignores (nohup) stays ignored. */
		for (i = 0; i < sizeof(deadly) / sizeof(deadly[0]); i++)
			if (sigaction(deadly[i], NULL, &was) == 0 &&
			    was.sa_handler == SIG_DFL)
				sigaction(deadly[i], &sa, NULL);
		armed = 1;
	}
	temps_block(&old);
	temps = xreallocarray(temps, ntemps + 1, sizeof(*temps));
	temps[ntemps++] = xstrdup(path);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void
afile_temp_del(const char *path)
{
	sigset_t old;
	size_t i;

	temps_block(&old);
	for (i = ntemps; i-- > 0;)
		if (strcmp(temps[i], path) == 0) {
			free(temps[i]);
			temps[i] = temps[--ntemps];
			break;
		}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int
afile_open(struct afile *a, const char *path)
{
	struct buf b = BUF_INIT;
	int fd;

	memset(a, 0, sizeof(*a));
	buf_printf(&b, "%s.tmp.XXXXXX", path);
	if ((fd = mkstemp(b.p)) == -1) {
		buf_free(&b);
		return -1;
	}
	if ((a->fp = fdopen(fd, "w")) == NULL) {
		int e = errno;

		close(fd);
		unlink(b.p);
		buf_free(&b);
		errno = e;
		return -1;
	}
	/* mkstemp makes 0600; batch and ledger files are ordinary files. */
	{
		mode_t um = umask(0);

		umask(um);
		fchmod(fd, 0666 & ~um);
	}
	a->tmp = b.p;
	a->path = xstrdup(path);
	afile_temp_add(a->tmp);
	return 0;
}

int
afile_fsync_dir(const char *path)
{
	char *d = xmalloc(strlen(path) + 2), *s;
	int fd, rc;

	memcpy(d, path, strlen(path) + 1);
	s = strrchr(d, '/');
	if (s == NULL)
		memcpy(d, ".", 2);
	else if (s == d)
		d[1] = '\0';
	else
		*s = '\0';
	if ((fd = open(d, O_RDONLY | O_DIRECTORY)) == -1) {
		free(d);
		return -1;
	}
	rc = fsync(fd);
	/* Some file systems refuse fsync on a directory; that is not a loss. */
	if (rc == -1 && (errno == EINVAL || errno == EBADF))
		rc = 0;
	close(fd);
	free(d);
	return rc;
}

int
afile_commit(struct afile *a, const char *newpath)
{
	const char *dst = newpath ? newpath : a->path;
	int rc = 0, e = 0;

	if (fflush(a->fp) != 0 || ferror(a->fp) || fsync(fileno(a->fp)) != 0) {
		e = errno;
		rc = -1;
	}
	if (fclose(a->fp) != 0 && rc == 0) {
		e = errno;
		rc = -1;
	}
	a->fp = NULL;
	if (rc == 0 && rename(a->tmp, dst) != 0) {
		e = errno;
		rc = -1;
	}
	if (rc == 0 && afile_fsync_dir(dst) != 0) {
		e = errno;
		rc = -1;
	}
	if (rc != 0)
		unlink(a->tmp);
	afile_temp_del(a->tmp);
	free(a->tmp);
	free(a->path);
	a->tmp = a->path = NULL;
	errno = e;
	return rc;
}

void
afile_abort(struct afile *a)
{
	if (a->fp != NULL)
		fclose(a->fp);
	if (a->tmp != NULL) {
		unlink(a->tmp);
		afile_temp_del(a->tmp);
	}
	free(a->tmp);
	free(a->path);
	memset(a, 0, sizeof(*a));
}

int
afile_need_dir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) == -1)
		return qb_failsys(QB_EX_NOINPUT, "%s", dir);
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return qb_failsys(QB_EX_NOINPUT, "%s", dir);
	}
	return 0;
}
