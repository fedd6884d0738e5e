/*
 * afile.h: write a file atomically: to a temporary name in the same
 * directory, then flush, fsync and rename over the final name, so readers
 * and a crash only ever see the old file or the whole new one.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_AFILE_H
#define QB_AFILE_H

#include <stdio.h>

struct afile {
	char	*path;	/* final name; owned */
	char	*tmp;	/* temporary name; owned */
	FILE	*fp;	/* write here */
};

/*
 * Create the temporary file for path (path.tmp.XXXXXX). Returns 0, or -1
 * with errno set. Until afile_commit or afile_abort, the temporary file is
 * removed if the process ends (from main, or in a fatal error) before
 * either is called.
 */
int afile_open(struct afile *a, const char *path);
/*
 * Flush, fsync, close and rename to a->path (or to newpath when not NULL),
 * then fsync the directory. Returns 0, or -1 with errno set, in which case
 * the temporary file is removed. Frees a's memory either way.
 */
int afile_commit(struct afile *a, const char *newpath);
/* Remove the temporary file and free a's memory. */
void afile_abort(struct afile *a);
/*
 * Add path, a temporary file the caller made, to the files removed at
 * the end of the process and on SIGTERM, SIGINT or SIGHUP (unless ignored: the process
 * then dies of the signal); afile_temp_del takes it off again (after a
 * rename or an unlink). path is copied. Dies QB_EX_OSERR if out of memory.
 */
void afile_temp_add(const char *path);
void afile_temp_del(const char *path);
/*
 * Returns 0 if dir is an existing directory; else reports it, naming dir,
 * and returns QB_EX_NOINPUT.
 */
int afile_need_dir(const char *dir);
/* fsync the directory holding path; returns 0 or -1 with errno set. */
int afile_fsync_dir(const char *path);

#endif
