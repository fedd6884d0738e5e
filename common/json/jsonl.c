/*
 * jsonl.c: JSON Lines reader over zlib's gzread, which passes plain files
 * through unchanged, so one path serves plain and gzip input.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "json/jsonl.h"
#include "json/jtree.h"

#define CHUNK (256 * 1024)

int
jsonl_open(struct jsonl_reader *r, const char *path)
{
	int fd;

	memset(r, 0, sizeof(*r));
	if (path == NULL || strcmp(path, "-") == 0) {
		fd = dup(0);
		r->name = xstrdup("<stdin>");
	} else {
		fd = open(path, O_RDONLY);
		r->name = xstrdup(path);
	}
	if (fd == -1 || (r->gz = gzdopen(fd, "rb")) == NULL) {
		int e = errno;

		if (fd != -1)
			close(fd);
		free(r->name);
		r->name = NULL;
		errno = e ? e : ENOMEM;
		return -1;
	}
	gzbuffer(r->gz, CHUNK);
	r->cap = CHUNK + 1;
	r->buf = xmalloc(r->cap);
	r->first = 1;
	return 0;
}

void
jsonl_close(struct jsonl_reader *r)
{
	if (r->gz != NULL)
		gzclose(r->gz);
	if (r->tree != NULL)
		yajl_tree_free(r->tree);
	free(r->buf);
	free(r->name);
	memset(r, 0, sizeof(*r));
}

static int
isblankline(const char *p, size_t n)
{
	for (; n > 0; p++, n--)
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\f' &&
		    *p != '\v')
			return 0;
	return 1;
}

/* zlib's message without the "<fd:3>: " it puts first: we name the file. */
static const char *
gzmsg(const char *s)
{
	const char *p;

	if (strncmp(s, "<fd:", 4) == 0 && (p = strstr(s, ">: ")) != NULL)
		return p + 3;
	return s;
}

/* Read more input after the data in buf; returns bytes read, 0 at EOF, -1. */
static int
fill(struct jsonl_reader *r)
{
	int n, errnum;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->base += r->start;
		r->end -= r->start;
		r->scan -= r->start;
		r->start = 0;
	}
	if (r->cap - 1 - r->end < CHUNK / 2) {
		r->cap = r->cap * 2;
		r->buf = xrealloc(r->buf, r->cap);
	}
	n = gzread(r->gz, r->buf + r->end, (unsigned)(r->cap - 1 - r->end));
	if (n < 0) {
		const char *s = gzerror(r->gz, &errnum);

		if (errnum == Z_ERRNO)
			qb_warnsys("%s: read error", r->name);
		else
			qb_warn("%s: read error: %s", r->name, gzmsg(s));
		return -1;
	}
	if (n == 0) {
		/*
		 * zlib reports a gzip stream cut short only here, at the end:
		 * the input is damaged, not finished.
		 */
		const char *s = gzerror(r->gz, &errnum);

		if (errnum != Z_OK && errnum != Z_STREAM_END) {
			qb_warn("%s: read error: %s", r->name, gzmsg(s));
			return -1;
		}
		r->eof = 1;
	}
	r->end += (size_t)n;
	return n;
}

int
jsonl_next(struct jsonl_reader *r, char **line, size_t *len)
{
	char *nl, *p;
	size_t n;

	for (;;) {
		nl = memchr(r->buf + r->scan, '\n', r->end - r->scan);
		if (nl == NULL) {
			r->scan = r->end;
			if (r->skipping) {
				/* Drop what we have of an over-long line. */
				r->base += r->end;
				r->start = r->end = r->scan = 0;
			} else if (r->end - r->start > JSONL_LINE_MAX) {
				qb_lwarn(r->name, r->lineno + 1,
				    "line longer than %zu bytes (the line cap); skipped",
				    JSONL_LINE_MAX);
				r->skipping = 1;
				r->base += r->end;
				r->start = r->end = r->scan = 0;
				return JSONL_BAD;
			}
			if (!r->eof) {
				if (fill(r) < 0)
					return JSONL_IOERR;
				continue;
			}
			if (r->start == r->end)
				return JSONL_EOF;
			/* Last line without a newline: buf has room for a NUL. */
			nl = r->buf + r->end;
		}
		p = r->buf + r->start;
		n = (size_t)(nl - p);
		r->off = r->base + r->start;
		r->start = r->scan = (size_t)(nl - r->buf) + (nl < r->buf + r->end);
		r->lineno++;
		if (r->skipping) {
			r->skipping = 0;
			continue;
		}
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (r->first) {
			r->first = 0;
			if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
				p += 3;
				n -= 3;
				r->off += 3;
			}
		}
		if (n > JSONL_LINE_MAX) {
			qb_lwarn(r->name, r->lineno,
			    "line longer than %zu bytes (the line cap); skipped",
			    JSONL_LINE_MAX);
			return JSONL_BAD;
		}
		if (isblankline(p, n)) {
			r->blank++;
			continue;
		}
		p[n] = '\0';
		*line = p;
		*len = n;
		return JSONL_LINE;
	}
}

int
jsonl_fits(const char *p, size_t len, char *err, size_t errlen)
{
	if (len > JSONL_LINE_MAX) {
		snprintf(err, errlen, "line of %zu bytes exceeds the line cap of "
		    "%zu bytes", len, JSONL_LINE_MAX);
		return -1;
	}
	if (jtree_depth(p, len) > JTREE_DEPTH_MAX) {
		snprintf(err, errlen, "nested deeper than %d levels",
		    JTREE_DEPTH_MAX);
		return -1;
	}
	return 0;
}

yajl_val
jsonl_tree(struct jsonl_reader *r, const char *line, size_t len)
{
	char err[256];
	yajl_val v;

	if (strlen(line) != len) {
		jtree_check(line, len, err, sizeof(err));
		qb_lwarn(r->name, r->lineno, "%s", err);
		return NULL;
	}
	if ((v = jtree_parse(line, err, sizeof(err))) == NULL) {
		qb_lwarn(r->name, r->lineno, "%s", err);
		return NULL;
	}
	if (!YAJL_IS_OBJECT(v)) {
		yajl_tree_free(v);
		qb_lwarn(r->name, r->lineno, "not a JSON object");
		return NULL;
	}
	return v;
}

int
jsonl_reject(struct jsonl_reader *r)
{
	r->nbad++;
	if (!r->strict)
		return JSONL_BAD;
	qb_fail(QB_EX_DATAERR, "stopped at the first bad line (--strict)");
	return JSONL_STOP;
}

int
jsonl_read(struct jsonl_reader *r, struct jsonl_rec *rec)
{
	int ch;

	if (r->tree != NULL) {
		yajl_tree_free(r->tree);
		r->tree = NULL;
	}
	memset(rec, 0, sizeof(*rec));
	if ((ch = jsonl_next(r, &rec->line, &rec->len)) == JSONL_BAD)
		return jsonl_reject(r);
	if (ch != JSONL_LINE || r->parse != JSONL_TREE)
		return ch;
	if ((r->tree = jsonl_tree(r, rec->line, rec->len)) == NULL)
		return jsonl_reject(r);
	rec->tree = r->tree;
	return JSONL_LINE;
}

int
jsonl_start(struct jsonl_reader *r, const char *path, int parse, int strict)
{
	if (jsonl_open(r, path) == -1) {
		qb_warnsys("%s", path == NULL || strcmp(path, "-") == 0 ?
		    "<stdin>" : path);
		return QB_EX_NOINPUT;
	}
	r->parse = parse;
	r->strict = strict;
	return 0;
}

int
jsonl_status(int ch)
{
	if (ch == JSONL_IOERR)
		return QB_EX_IOERR;
	if (ch == JSONL_STOP)
		return QB_EX_DATAERR;
	return 0;
}
