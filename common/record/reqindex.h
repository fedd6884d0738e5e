/*
 * reqindex.h: request lines (OpenAI batch lines, Anthropic lines, qb
 * items) indexed by id. Per request it keeps where its line lies and where
 * its extra members lie (keys not in the caller's own-keys list: meta,
 * queue ...), 32 bytes plus the id, and reads the bytes again when needed.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_REQINDEX_H
#define QB_REQINDEX_H

#include <stdint.h>
#include <yajl/yajl_gen.h>

#include "base/idmap.h"
#include "json/jscan.h"
#include "json/jtree.h"

#define REQ_ANTHROPIC	1	/* flags: "params", no "body" */
#define REQ_EXTRA	2	/* flags: it has extra members; other bits private */

struct req {				/* offlo, len, offhi, x: private */
	uint32_t	offlo, len, line, tag;	/* line: 1-based; tag: reqindex_file */
	uint16_t	offhi, file, model;	/* model: 1 + index in models, or 0 */
	uint8_t		state, flags;	/* state: the caller's, 0 at first */
	uint16_t	x[4];
};

struct reqindex {			/* after nbad: private */
	struct idmap	  ids;		/* request i: req[i], id idmap_key(&ids, i) */
	struct req	 *req;
	struct idmap	  models;	/* the models the bodies name */
	unsigned long	  nbad;		/* lines rejected, each reported */
	const char *const *own;
	int		  strict;
	struct rfile	 *files;
	size_t		  nfiles;
	struct jscan  scan;
	struct buf	  rl;
};

/* own: NULL-terminated keys that are not extra members, kept by reference;
 * strict: the first rejected line stops the indexing (QB_EX_DATAERR). */
void reqindex_init(struct reqindex *ri, const char *const *own, int strict);
void reqindex_free(struct reqindex *ri);	/* closes the files too */
/*
 * Index path ("-": stdin; gzip read transparently) as file number nfiles.
 * A plain regular file is read again in place, other input from an
 * unlinked copy in TMPDIR made while indexing. Bad lines, lines without a
 * string "custom_id" (else "id") or a "body" (else "params") and repeated
 * ids are reported (FILE:LINE) and counted in nbad; but with tag != 0 (0:
 * a user's file) an id indexed from another file just takes this tag.
 * Returns 0; -1 with errno set and nothing said if path cannot be opened;
 * else, reported: QB_EX_DATAERR (strict, after "stopped at the first
 * rejected line (--strict)"), QB_EX_IOERR (a read error, or the copy could
 * not be written), QB_EX_OSERR (no copy could be made), QB_EX_SOFTWARE
 * (past 65534 files, or an offset past 256 TB). The requests indexed
 * before a failure stay.
 */
int reqindex_file(struct reqindex *ri, const char *path, uint32_t tag);
/* The indexed file that path is (device and inode), or (size_t)-1. */
size_t reqindex_same(const struct reqindex *ri, const char *path);
/*
 * The requests at 1-based physical lines line[0..n-1] of path, read again
 * (as a job's errors name them): idx[k] is the request whose id line[k]
 * holds, or (size_t)-1 if it holds none: a line rejected when indexed,
 * one past the end, or one whose id an earlier line of path has. Returns
 * 0; -1 with errno set and nothing said if path cannot be opened; or
 * QB_EX_IOERR on a read error, reported (idx filled as far as read).
 */
int reqindex_lines(struct reqindex *ri, const char *path,
    const uint32_t *line, size_t n, size_t *idx);
/* Request i's line again: req[i].len bytes and a NUL, owned by ri, valid
 * until its next call; or NULL if it cannot be read, reported. */
const char *reqindex_line(struct reqindex *ri, size_t i);
/*
 * Write request i's extra members, copied as bytes, into a map the caller
 * opened on g; with item set, also "endpoint" (from "url"; Anthropic:
 * /v1/messages) unless it has one, "body", and Anthropic "params": an item
 * again. Without item only the extra members' bytes are read. Returns 0,
 * or QB_EX_IOERR, reported, if the line cannot be read or changed since it
 * was indexed ("FILE:LINE: the request changed since it was read"); g may
 * then hold part of the members.
 */
int reqindex_emit(struct reqindex *ri, size_t i, yajl_gen g, int item);

#endif
