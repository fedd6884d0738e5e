/*
 * spool.h: a spool directory queue in the maildir manner. Producers write
 * tmp/UNIQ, fsync it and rename it to new/UNIQ,R0. A drainer leases a
 * message by renaming it to cur/UNIQ,R<n+1>,E<ms> (n receives so far, the
 * lease end in epoch milliseconds); rename(2) is atomic, so two drainers
 * never take the same file. An expired lease is renamed back to
 * new/UNIQ,R<n> by the next receive. The receipt is the cur/ file name;
 * the message id is UNIQ (1-64 of [A-Za-z0-9_-]).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SPOOL_H
#define QB_SPOOL_H

#include "base/idmap.h"
#include "queue/qmsg.h"

struct spool {
	char		*dir;		/* absolute path; owned */
	unsigned long	 seq;		/* names made by this process */
	char		**staged;	/* UNIQ of each message staged in tmp/; owned */
	size_t		 nstaged;
};

/*
 * Open the spool at dir; with create, make dir, tmp/, new/ and cur/ as
 * needed (mode 0777 & ~umask). Returns 0, or -1 with errno set.
 */
int spool_open(struct spool *s, const char *dir, int create);
void spool_close(struct spool *s);
/*
 * Stage the len bytes at p as one message: write tmp/UNIQ and fsync it.
 * It is not visible to drainers until spool_commit, and is removed by
 * spool_discard, spool_close or, if the process ends first, as it ends
 * (afile_temp_add). Returns 0, or -1 with errno set (the file removed).
 */
int spool_put(struct spool *s, const char *p, size_t len);
/*
 * Make every staged message visible: rename each to new/UNIQ,R0, then
 * fsync new/. Returns 0, or -1 with errno set; after a failed rename the
 * messages not yet renamed are removed (those before it stay visible).
 */
int spool_commit(struct spool *s);
/* Remove every staged message. */
void spool_discard(struct spool *s);
/*
 * Add to ids the item id of every message in new/ and cur/, as qb-drain
 * would name its item: the body's "custom_id", else its "id", else the
 * message id. Returns 0, or -1 with errno set.
 */
int spool_ids(struct spool *s, struct idmap *ids);
/*
 * Return every lease in cur/ that ended before now (wall-clock seconds)
 * to new/. Returns how many, or -1 with errno set.
 */
long spool_reclaim(struct spool *s, double now);
/*
 * Lease up to max messages from new/, oldest name first, until now+lease,
 * appending them to b. A file another drainer took first is skipped.
 * Returns how many, or -1 with errno set (those already leased stay in b).
 */
long spool_take(struct spool *s, struct qbatch *b, size_t max, double lease);
/*
 * Move the lease receipt to end at until (wall-clock seconds); until 0
 * returns the message to new/ at once. On success returns 0 and, when
 * newr is not NULL, the new receipt in *newr (caller frees). Returns -1
 * with errno ENOENT when the lease is gone (expired and taken back), or
 * EINVAL for a receipt that is not a spool lease.
 */
int spool_relet(struct spool *s, const char *receipt, double until, char **newr);
/* Delete the message under receipt; 0, or -1 with errno (ENOENT: gone). */
int spool_delete(struct spool *s, const char *receipt);

#endif
