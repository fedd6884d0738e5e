/*
 * jsonl.h: the JSON Lines reader every tool uses. Reads a file, "-" for
 * standard input, gzip-compressed input transparently (zlib), accepts LF
 * and CRLF endings (also when the pair straddles a read), strips a UTF-8
 * byte-order mark at the start of each input, skips blank and
 * whitespace-only lines while counting them, and enforces a hard line cap.
 * Line numbers are physical, 1-based, as editors count them.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_JSONL_H
#define QB_JSONL_H

#include <stddef.h>
#include <zlib.h>
#include <yajl/yajl_tree.h>

/* Longest accepted line, in bytes without the line ending (documented in qb.7). */
#define JSONL_LINE_MAX ((size_t)64 << 20)

/*
 * The limits every qb reader puts on a record, in one place: at most
 * JSONL_LINE_MAX bytes and nested at most JTREE_DEPTH_MAX levels (jtree.h),
 * the record's own braces counted. A tool checks a record it accepts or
 * writes with this, so that no later tool refuses what it let through.
 * Takes the len bytes of JSON text at p; returns 0, or -1 with a one-line
 * reason in err (errlen bytes): "line of N bytes exceeds the line cap of
 * 67108864 bytes" or "nested deeper than 512 levels".
 */
int jsonl_fits(const char *p, size_t len, char *err, size_t errlen);

struct jsonl_reader {
	char		*name;		/* "<stdin>" or the path; owned */
	gzFile		 gz;
	char		*buf;		/* owned read buffer */
	size_t		 cap, start, end, scan;
	unsigned long	 lineno;	/* physical number of the last line returned */
	unsigned long	 blank;		/* blank lines skipped so far */
	unsigned long	 nbad;		/* bad lines so far, each reported */
	unsigned long long base;	/* stream offset of buf[0] */
	unsigned long long off;		/* stream offset of the last line returned */
	int		 eof, first, skipping;
	/* Set by the caller after jsonl_open (both 0 there): */
	int		 parse;		/* JSONL_RAW or JSONL_TREE: what jsonl_read makes */
	int		 strict;	/* the first bad line stops the reading */
	yajl_val	 tree;		/* JSONL_TREE: the last line's; owned unless
					   the caller takes it (sets it to NULL) */
};

#define JSONL_LINE	1	/* a line was returned */
#define JSONL_EOF	0	/* no more lines */
#define JSONL_BAD	(-1)	/* a line was rejected and reported; go on */
#define JSONL_IOERR	(-2)	/* read error, reported; stop reading this input */
#define JSONL_STOP	(-3)	/* strict: a line was rejected, reported, and
				   "stopped at the first bad line (--strict)"
				   said; stop (the tool exits QB_EX_DATAERR) */

#define JSONL_RAW	0	/* jsonl_read gives a line's bytes alone */
#define JSONL_TREE	1	/* and its yajl tree, a JSON object */

/*
 * Open path ("-" or NULL for standard input) for reading. Returns 0, or -1
 * with errno set and nothing reported (the caller reports, exit 66).
 */
int jsonl_open(struct jsonl_reader *r, const char *path);

/*
 * Next non-blank line. On JSONL_LINE, *line points to len bytes inside the
 * reader's buffer, NUL-terminated, without the line ending; valid until the
 * next call. A line over JSONL_LINE_MAX is reported (FILE:LINE) and skipped
 * with JSONL_BAD.
 */
int jsonl_next(struct jsonl_reader *r, char **line, size_t *len);

/* Close and free; the reader can be opened again. */
void jsonl_close(struct jsonl_reader *r);

/*
 * Parse the current line (as returned by jsonl_next) into a tree. Returns
 * the tree (the caller frees it with yajl_tree_free) or NULL after
 * reporting "FILE:LINE: reason": a parse error with its byte offset, or
 * "not a JSON object".
 */
yajl_val jsonl_tree(struct jsonl_reader *r, const char *line, size_t len);

/* A line as jsonl_read gives it. */
struct jsonl_rec {
	char		*line;	/* len bytes in the reader's buffer, NUL-terminated,
				   without the line ending; valid until the next call */
	size_t		 len;
	yajl_val	 tree;	/* JSONL_TREE: the object, also in r->tree; else NULL */
};

/*
 * The record reader every tool's loop pulls from: the next non-blank line
 * into *rec, parsed as r->parse says. Returns JSONL_LINE; JSONL_EOF;
 * JSONL_IOERR (reported); or, for a line refused (over the line cap, or
 * under JSONL_TREE not a JSON object), reported as FILE:LINE and counted
 * in r->nbad, JSONL_BAD, or JSONL_STOP under r->strict. The tree of the
 * line before is freed first, unless the caller took it.
 */
int jsonl_read(struct jsonl_reader *r, struct jsonl_rec *rec);

/*
 * The caller refused the line jsonl_read gave (and reported why): it is
 * counted in r->nbad. Returns JSONL_BAD, or under r->strict JSONL_STOP
 * after saying "stopped at the first bad line (--strict)".
 */
int jsonl_reject(struct jsonl_reader *r);

/*
 * jsonl_open for a loop of jsonl_read: path ("-" or NULL for standard
 * input), with r->parse and r->strict set from parse and strict. Returns
 * 0, or QB_EX_NOINPUT after reporting "path: reason" ("<stdin>" for
 * standard input).
 */
int jsonl_start(struct jsonl_reader *r, const char *path, int parse,
    int strict);

/*
 * The exit status a jsonl_read loop ended with, from the value that ended
 * it: 0 for JSONL_EOF (or a caller's own break on JSONL_LINE),
 * QB_EX_IOERR for JSONL_IOERR, QB_EX_DATAERR for JSONL_STOP.
 */
int jsonl_status(int ch);

#endif
