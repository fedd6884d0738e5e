/*
 * jsonl.c: libFuzzer harness for the JSON Lines reader: the input as a
 * file (plain or gzip), read with jsonl_next and jsonl_tree, then with
 * jsonl_read (trees, strict), then opened by jsonl_start. A returned line must
 * be NUL-terminated and hold no line feed; strict must stop, never exit.
 * SPDX-License-Identifier: ISC
 */
#include "fuzz.h"
#include "json/jsonl.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	const char *path;
	unsigned long nbad = 0;
	char *line;
	size_t len;
	yajl_val v;
	int ch;

	fuzz_quiet();
	path = fuzz_file(data, size);
	if (jsonl_open(&r, path) != 0)
		abort();
	while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF &&
	    ch != JSONL_IOERR) {
		if (ch != JSONL_LINE)
			continue;
		if (line[len] != '\0' || memchr(line, '\n', len) != NULL)
			abort();
		if ((v = jsonl_tree(&r, line, len)) != NULL)
			yajl_tree_free(v);
	}
	jsonl_close(&r);
	if (jsonl_open(&r, path) != 0)
		abort();
	r.parse = JSONL_TREE;
	r.strict = 1;
	while ((ch = jsonl_read(&r, &rec)) == JSONL_LINE)
		if (rec.line[rec.len] != '\0' || !YAJL_IS_OBJECT(rec.tree))
			abort();
	if (ch != JSONL_EOF && ch != JSONL_IOERR && ch != JSONL_STOP)
		abort();
	jsonl_close(&r);
	if (jsonl_start(&r, path, JSONL_RAW, 0) != 0)
		abort();
	while ((ch = jsonl_read(&r, &rec)) != JSONL_EOF && ch != JSONL_IOERR)
		nbad += ch == JSONL_BAD;
	if (nbad != r.nbad)
		abort();
	jsonl_close(&r);
	return 0;
}
