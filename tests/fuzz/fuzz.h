/*
 * fuzz.h: what the libFuzzer harnesses share: a quiet start, the input
 * cut into NUL-terminated lines of their own allocation (so that ASan
 * sees a read past a line's end), and the input as a file for the
 * readers that take a path.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_FUZZ_H
#define QB_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "base/buf.h"
#include "base/msg.h"
#include "json/jscan.h"

/* Messages about bad records are expected by the thousand: keep quiet. */
static void
fuzz_quiet(void)
{
	if (qb_verbose != -1) {
		qb_setprog("fuzz");
		qb_verbose = -1;
	}
}

/* Call fn on each '\n'-terminated (or final) line of data, as a copy. */
static void
fuzz_lines(const uint8_t *data, size_t size,
    void (*fn)(const char *line, size_t len, void *arg), void *arg)
{
	const uint8_t *p = data, *e = data + size, *nl;
	char *line;
	size_t n;

	while (p < e) {
		nl = memchr(p, '\n', (size_t)(e - p));
		n = nl != NULL ? (size_t)(nl - p) : (size_t)(e - p);
		if ((line = malloc(n + 1)) == NULL)
			abort();
		if (n > 0)
			memcpy(line, p, n);
		line[n] = '\0';
		fn(line, n, arg);
		free(line);
		p += n + 1;
	}
}

/* The input written to a file of this process's own; its path. */
static const char *
fuzz_file(const uint8_t *data, size_t size)
{
	static char path[64];
	FILE *fp;

	if (path[0] == '\0')
		snprintf(path, sizeof(path), "/tmp/qb-fuzz.%ld", (long)getpid());
	if ((fp = fopen(path, "wb")) == NULL)
		abort();
	if ((size > 0 && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0)
		abort();
	return path;
}

/* What g holds must parse as JSON again; then g is emptied. */
static void
fuzz_json(yajl_gen g)
{
	const unsigned char *out;
	size_t n;
	char *z;
	yajl_val v;

	if (yajl_gen_get_buf(g, &out, &n) != yajl_gen_status_ok)
		abort();
	if ((z = malloc(n + 1)) == NULL)
		abort();
	memcpy(z, out, n);
	z[n] = '\0';
	if ((v = yajl_tree_parse(z, NULL, 0)) == NULL)
		abort();
	yajl_tree_free(v);
	free(z);
	yajl_gen_clear(g);
	yajl_gen_reset(g, NULL);
}

/* fuzz_lines with one span scan for all the lines, freed after. */
static void
fuzz_scan_lines(const uint8_t *data, size_t size,
    void (*fn)(const char *line, size_t len, void *arg))
{
	struct jscan s;

	memset(&s, 0, sizeof(s));
	fuzz_lines(data, size, fn, &s);
	buf_free(&s.strs);
}

#endif
