/*
 * Unit tests for the JSONL reader (jsonl.c), the span scanner (jscan.c),
 * custom_id rules and the id map (idmap.c), and SHA-256 (sha256.c).
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/exits.h"
#include "base/idmap.h"
#include "base/msg.h"
#include "base/sha256.h"
#include "base/xmem.h"
#include "json/jscan.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "tap.h"

static char tmpl[] = "/tmp/qb-unit.XXXXXX";

static char *
writefile(const char *name, const char *p, size_t n)
{
	static char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", tmpl, name);
	fp = fopen(path, "wb");
	fwrite(p, 1, n, fp);
	fclose(fp);
	return path;
}

/* Read every line of path, joined with '|', with line numbers "N:". */
static char *
readall(const char *path, int *nbad)
{
	struct jsonl_reader r;
	struct buf b = BUF_INIT;
	char *line;
	size_t len;
	int rc;

	*nbad = 0;
	if (jsonl_open(&r, path) == -1)
		return NULL;
	while ((rc = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
		if (rc < 0) {
			(*nbad)++;
			continue;
		}
		if (strlen(line) != len)
			buf_puts(&b, "(len mismatch)");
		buf_printf(&b, "%lu:", r.lineno);
		if (len > 40)
			buf_printf(&b, "<%zu bytes>", len);
		else
			buf_append(&b, line, len);
		buf_putc(&b, '|');
	}
	jsonl_close(&r);
	buf_putc(&b, '\0');
	return b.p;
}

static void
test_reader(void)
{
	char *s, *big, *p;
	int nbad;
	size_t chunk = 256 * 1024, i;
	gzFile gz;

	s = readall(writefile("lf", "{\"a\":1}\n{\"b\":2}\n", 16), &nbad);
	tap_is(s, "1:{\"a\":1}|2:{\"b\":2}|", "LF lines");
	free(s);

	s = readall(writefile("crlf", "{\"a\":1}\r\n{\"b\":2}\r\n", 18), &nbad);
	tap_is(s, "1:{\"a\":1}|2:{\"b\":2}|", "CRLF lines lose the CR");
	free(s);

	s = readall(writefile("nonl", "{\"a\":1}\n{\"b\":2}", 15), &nbad);
	tap_is(s, "1:{\"a\":1}|2:{\"b\":2}|", "last line without a newline");
	free(s);

	s = readall(writefile("blank", "\n  \t\n{\"a\":1}\n\r\n\n{\"b\":2}\n\n", 25), &nbad);
	tap_is(s, "3:{\"a\":1}|6:{\"b\":2}|", "blank lines skipped, physical numbers kept");
	free(s);

	s = readall(writefile("bom", "\xef\xbb\xbf{\"a\":1}\n\xef\xbb\xbf{}\n", 17), &nbad);
	tap_is(s, "1:{\"a\":1}|2:\xef\xbb\xbf{}|", "BOM stripped at the start only");
	free(s);

	/* A CRLF pair straddling the reader's first read. */
	big = xmalloc(chunk + 64);
	memset(big, ' ', chunk + 64);
	big[0] = '{';
	big[1] = '}';
	big[chunk - 1] = '\r';
	big[chunk] = '\n';
	memcpy(big + chunk + 1, "{\"z\":1}\r\n", 9);
	s = readall(writefile("straddle", big, chunk + 10), &nbad);
	p = strstr(s, "2:");
	tap_ok(p != NULL && strcmp(p, "2:{\"z\":1}|") == 0 && strchr(s, '\r') == NULL,
	    "CRLF straddling a read gives no empty line and no CR");
	free(s);
	free(big);

	/* A 200 KB line. */
	big = xmalloc(200 * 1024 + 16);
	memset(big, 'a', 200 * 1024 + 16);
	memcpy(big, "{\"x\":\"", 6);
	memcpy(big + 200 * 1024, "\"}\n{}\n", 6);
	s = readall(writefile("long", big, 200 * 1024 + 6), &nbad);
	tap_is(s, "1:<204802 bytes>|2:{}|", "a 200 KB line is read whole");
	free(s);
	free(big);

	/* Gzip input is read transparently. */
	snprintf(big = xmalloc(300), 300, "%s/in.jsonl.gz", tmpl);
	gz = gzopen(big, "wb");
	for (i = 0; i < 3; i++)
		gzprintf(gz, "{\"n\":%zu}\r\n", i);
	gzclose(gz);
	s = readall(big, &nbad);
	tap_is(s, "1:{\"n\":0}|2:{\"n\":1}|3:{\"n\":2}|", "gzip input");
	free(s);
	free(big);

	/* Over the hard cap: reported, skipped, the next line still read. */
	big = xmalloc(JSONL_LINE_MAX + 64);
	memset(big, 'a', JSONL_LINE_MAX + 64);
	memcpy(big + JSONL_LINE_MAX + 10, "\n{}\n", 4);
	qb_verbose = -1;
	s = readall(writefile("huge", big, JSONL_LINE_MAX + 14), &nbad);
	qb_verbose = 0;
	tap_ok(nbad == 1 && s != NULL && strcmp(s, "2:{}|") == 0,
	    "a line over the cap is rejected and the rest goes on");
	free(s);
	free(big);
	unlink(writefile("huge", "", 0));
}

static void
test_scan(void)
{
	struct jscan s;
	char err[256];
	const char *line =
	    "{\"custom_id\": \"a1\", \"body\" : {\"model\":\"m1\",\"n\":[1,{\"k\":2}],"
	    "\"o\":{\"p\":1}}, \"x\":12.5,\"t\":true}";
	const char *want = "{\"model\":\"m1\",\"n\":[1,{\"k\":2}],\"o\":{\"p\":1}}";
	int ib, im, in, io;

	memset(&s, 0, sizeof(s));
	TAP_OK(jscan_parse(&s, line, strlen(line), err, sizeof(err)) == 0, "scan a record");
	ib = jscan_find(&s, -1, "body");
	TAP_OK(ib >= 0 && s.span[ib].type == JT_MAP && s.span[ib].len == strlen(want) &&
	    strncmp(line + s.span[ib].off, want, s.span[ib].len) == 0,
	    "body span is exact");
	im = jscan_find(&s, ib, "model");
	tap_is(jscan_sval(&s, im), "m1", "depth-2 string found");
	in = jscan_find(&s, ib, "n");
	TAP_OK(in >= 0 && s.span[in].len == 11, "depth-2 array span");
	io = jscan_find(&s, ib, "o");
	TAP_OK(io >= 0 && s.span[io].len == 7, "depth-2 object span");
	TAP_OK(jscan_find(&s, -1, "k") < 0 && jscan_find(&s, -1, "p") < 0,
	    "deeper keys are not members");
	TAP_OK(jscan_find(&s, -1, "x") >= 0 &&
	    s.span[jscan_find(&s, -1, "x")].len == 4, "number span");
	tap_is(jscan_sval(&s, jscan_find(&s, -1, "custom_id")), "a1", "id value");

	TAP_OK(jscan_parse(&s, "[1,2]", 5, err, sizeof(err)) == -1 &&
	    strcmp(err, "not a JSON object") == 0, "array is not an object");
	TAP_OK(jscan_parse(&s, "null", 4, err, sizeof(err)) == -1 &&
	    strcmp(err, "not a JSON object") == 0, "null is not an object");
	TAP_OK(jscan_parse(&s, "{\"a\":\"caf\xc3(\"}", 12, err, sizeof(err)) == -1 &&
	    strstr(err, "UTF8") != NULL && strstr(err, "at byte 10") != NULL,
	    "invalid UTF-8 rejected at the offending byte");
	printf("# %s\n", err);
	TAP_OK(jscan_parse(&s, "{\"a\":[", 6, err, sizeof(err)) == -1 &&
	    strstr(err, "at end of line") != NULL, "truncated line");
	TAP_OK(jscan_parse(&s, "{\"a\":1} x", 9, err, sizeof(err)) == -1,
	    "trailing garbage rejected");
	/* yajl alone takes these: a string left open after the object. */
	TAP_OK(jscan_parse(&s, "{}\"", 3, err, sizeof(err)) == -1 &&
	    strcmp(err, "parse error: trailing garbage at byte 3") == 0,
	    "an open string after the object rejected by jscan_parse");
	printf("# %s\n", err);
	TAP_OK(jtree_check("{\"a\":\"}\"} \"x\\\"}", 15, err, sizeof(err)) == -1 &&
	    strcmp(err, "parse error: trailing garbage at byte 11") == 0,
	    "and by jtree_check");
	printf("# %s\n", err);
	TAP_OK(jtree_parse("{\"a\":1}\"}", err, sizeof(err)) == NULL &&
	    strstr(err, "trailing garbage") != NULL, "and by jtree_parse");
	TAP_OK(jtree_unclosed("{\"a\\\"\":\"\\\\\"}", 12) == -1,
	    "escaped quotes and backslashes close no string");
	TAP_OK(jtree_depth("{\"a\":[[{\"b\":\"[[[[\"}]]]}", 24) == 4,
	    "nesting depth, brackets in strings ignored");
	{
		char deep[2 * JTREE_DEPTH_MAX + 10];
		yajl_val v;

		memset(deep, '[', JTREE_DEPTH_MAX + 1);
		memset(deep + JTREE_DEPTH_MAX + 1, ']', JTREE_DEPTH_MAX + 1);
		deep[2 * JTREE_DEPTH_MAX + 2] = '\0';
		v = jtree_parse(deep, err, sizeof(err));
		TAP_OK(v == NULL && strstr(err, "nested deeper") != NULL,
		    "jtree_parse refuses nesting past the cap");
		deep[0] = ' ';
		deep[2 * JTREE_DEPTH_MAX + 1] = ' ';
		v = jtree_parse(deep, err, sizeof(err));
		TAP_OK(v != NULL, "jtree_parse takes nesting at the cap");
		yajl_tree_free(v);
	}
	{
		const char *t = "{\"key\":\"h\xc3\xa9llo\",\"b\":[\"\\u00e9\\ud83d\\ude00\",1]}";

		TAP_OK(jscan_string_chars(t, strlen(t)) == 7,
		    "string characters: keys not counted, escapes and pairs one each");
	}
	TAP_OK(jscan_array_len("[1,[2,3],{\"a\":[4]},\"x\"]", 23) == 4 &&
	    jscan_array_len("{}", 2) == -1, "array length counts top elements");
	buf_free(&s.strs);
}

static void
test_ids(void)
{
	struct idmap m;
	char key[32];
	int isnew, good = 1;
	size_t i;

	TAP_OK(idmap_check_id("doc-42_x", 8) == NULL, "valid id");
	TAP_OK(idmap_check_id("doc/7 #a", 8) != NULL, "id with / space # refused");
	TAP_OK(idmap_check_id("", 0) != NULL, "empty id refused");
	memset(key, 'x', sizeof(key));
	TAP_OK(idmap_check_id(key, 32) == NULL, "32 characters fine");

	idmap_init(&m);
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "id-%zu", i);
		if (idmap_put(&m, key, strlen(key), &isnew) != i || !isnew)
			good = 0;
	}
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "id-%zu", i);
		if (idmap_get(&m, key, strlen(key)) != i ||
		    strcmp(idmap_key(&m, i), key) != 0)
			good = 0;
	}
	idmap_put(&m, "id-7", 4, &isnew);
	TAP_OK(good && !isnew && idmap_get(&m, "id-5000", 7) == (size_t)-1,
	    "id map numbers, finds and refuses duplicates");
	idmap_free(&m);
}

static void
test_sha256(void)
{
	struct sha256 c;
	char hex[65];
	size_t i;

	sha256_init(&c);
	sha256_update(&c, "abc", 3);
	sha256_hex(&c, hex);
	tap_is(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "sha256(abc)");
	sha256_init(&c);
	for (i = 0; i < 1000000; i++)
		sha256_update(&c, "a", 1);
	sha256_hex(&c, hex);
	tap_is(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
	    "sha256 of a million a's, fed byte by byte");
}

/* jsonl_start and jsonl_status: the frame of every tool's loop. */
static void
test_start(void)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	struct buf b = BUF_INIT;
	char *path;
	int ch, rc;

	path = writefile("each", "{\"id\":\"a\"}\n[1]\n\n{\"id\":\"k\"}\nnot json\n"
	    "{\"id\":\"s\"}\n", 47);
	printf("# two bad lines are expected to be reported below\n");
	fflush(stdout);
	rc = jsonl_start(&r, path, JSONL_TREE, 0);
	TAP_OK(rc == 0 && r.parse == JSONL_TREE && r.strict == 0,
	    "jsonl_start: opened, parse and strict set");
	while ((ch = jsonl_read(&r, &rec)) != JSONL_EOF)
		if (ch == JSONL_LINE)
			buf_printf(&b, "%lu:%s|", r.lineno,
			    jtree_str(rec.tree, "id"));
	tap_is(b.p, "1:a|4:k|6:s|", "jsonl_start: objects only, with their line numbers");
	TAP_OK(r.nbad == 2 && jsonl_status(ch) == 0,
	    "jsonl_start: two bad lines counted; the end is status 0");
	jsonl_close(&r);
	printf("# a missing file is expected to be reported below\n");
	fflush(stdout);
	TAP_OK(jsonl_start(&r, "/nonexistent/qb-unit", JSONL_RAW, 0) ==
	    QB_EX_NOINPUT, "jsonl_start: a missing file is QB_EX_NOINPUT");
	printf("# a bad line and the stop are expected to be reported below\n");
	fflush(stdout);
	buf_reset(&b);
	jsonl_start(&r, path, JSONL_TREE, 1);
	while ((ch = jsonl_read(&r, &rec)) == JSONL_LINE)
		buf_printf(&b, "%lu:%s|", r.lineno, jtree_str(rec.tree, "id"));
	TAP_OK(ch == JSONL_STOP && jsonl_status(ch) == QB_EX_DATAERR,
	    "jsonl_status: a strict stop is QB_EX_DATAERR");
	tap_is(b.p, "1:a|", "jsonl_start: strict stops at the first bad line");
	TAP_OK(jsonl_status(JSONL_IOERR) == QB_EX_IOERR,
	    "jsonl_status: a read error is QB_EX_IOERR");
	jsonl_close(&r);
	buf_free(&b);
	unlink(path);
}

/* The pull loop: lines and trees from jsonl_read, the caller's rejects. */
static void
test_read(void)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	struct buf b = BUF_INIT;
	yajl_val took = NULL;
	char *path;
	int ch;

	path = writefile("read", "{\"id\":\"a\"}\n[1]\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n",
	    37);
	TAP_OK(jsonl_open(&r, path) == 0, "jsonl_read: open");
	r.parse = JSONL_TREE;
	printf("# a bad line is expected to be reported below\n");
	fflush(stdout);
	while ((ch = jsonl_read(&r, &rec)) != JSONL_EOF) {
		if (ch != JSONL_LINE) {
			buf_printf(&b, "%lu:bad|", r.lineno);
			continue;
		}
		if (rec.tree != r.tree || strlen(rec.line) != rec.len)
			buf_puts(&b, "(mismatch)");
		buf_printf(&b, "%lu:%s|", r.lineno, jtree_str(rec.tree, "id"));
		if (strcmp(jtree_str(rec.tree, "id"), "b") == 0) {
			took = rec.tree;	/* taken: not freed by the reader */
			r.tree = NULL;
		}
	}
	tap_is(b.p, "1:a|2:bad|3:b|4:c|", "jsonl_read: trees, a bad line in its place");
	TAP_OK(r.nbad == 1 && took != NULL && strcmp(jtree_str(took, "id"), "b") == 0,
	    "jsonl_read: bad lines counted; a tree taken stays");
	yajl_tree_free(took);
	jsonl_close(&r);

	buf_reset(&b);
	jsonl_open(&r, path);
	r.parse = JSONL_TREE;
	r.strict = 1;
	printf("# a bad line and the stop are expected to be reported below\n");
	fflush(stdout);
	while ((ch = jsonl_read(&r, &rec)) == JSONL_LINE)
		buf_printf(&b, "%lu|", r.lineno);
	TAP_OK(ch == JSONL_STOP && strcmp(b.p, "1|") == 0,
	    "jsonl_read: strict stops at the first bad line with JSONL_STOP");
	jsonl_close(&r);

	buf_reset(&b);
	jsonl_open(&r, path);
	while ((ch = jsonl_read(&r, &rec)) == JSONL_LINE)
		buf_printf(&b, "%lu:%c|", r.lineno, rec.tree == NULL ? 'r' : 't');
	tap_is(b.p, "1:r|2:r|3:r|4:r|", "jsonl_read: JSONL_RAW gives lines, no trees");
	TAP_OK(jsonl_reject(&r) == JSONL_BAD && r.nbad == 1,
	    "jsonl_reject: counted, and not strict goes on");
	r.strict = 1;
	printf("# the stop is expected to be reported below\n");
	fflush(stdout);
	TAP_OK(jsonl_reject(&r) == JSONL_STOP && r.nbad == 2,
	    "jsonl_reject: strict stops");
	jsonl_close(&r);
	buf_free(&b);
	unlink(path);
}

/* jscan_tree: the members asked for, as a tree, from a scan. */
static void
test_scan_tree(void)
{
	static const char *const keys[] = { "batch_id", "errors", "ended",
	    "none", NULL };
	const char *line = "{\"batch_id\":\"b\\u0031\",\"big\":{\"x\":[1,2,3]},"
	    "\"errors\":{\"data\":[{\"line\":2}]},\"ended\":true}";
	struct jscan s;
	struct buf b = BUF_INIT;
	char err[256];
	yajl_val v, e;
	int i;

	memset(&s, 0, sizeof(s));
	jscan_parse(&s, line, strlen(line), err, sizeof(err));
	TAP_OK(jscan_whole(&s), "jscan_whole: a small record is whole");
	v = jscan_tree(&s, line, strlen(line), keys, err, sizeof(err));
	e = jtree_get(jtree_get(v, "errors"), "data");
	TAP_OK(v != NULL && v->u.object.len == 3 &&
	    strcmp(jtree_str(v, "batch_id"), "b1") == 0 && jtree_true(v, "ended") &&
	    YAJL_IS_ARRAY(e) && e->u.array.len == 1 && jtree_get(v, "big") == NULL,
	    "jscan_tree: the members asked for, and no other");
	yajl_tree_free(v);

	/* More members than a scan records: the record is parsed whole. */
	buf_putc(&b, '{');
	for (i = 0; i < JSCAN_SPANS_MAX + 2; i++)
		buf_printf(&b, "\"k%d\":%d,", i, i);
	buf_puts(&b, "\"batch_id\":\"late\"}");
	jscan_parse(&s, b.p, b.len, err, sizeof(err));
	v = jscan_tree(&s, b.p, b.len, keys, err, sizeof(err));
	TAP_OK(!jscan_whole(&s) && v != NULL &&
	    strcmp(jtree_str(v, "batch_id"), "late") == 0,
	    "jscan_tree: a record the scan does not hold whole is parsed whole");
	yajl_tree_free(v);

	buf_reset(&b);
	buf_puts(&b, "{\"batch_id\":\"b\",\"d\":");
	for (i = 0; i <= JTREE_DEPTH_MAX; i++)
		buf_putc(&b, '[');
	for (i = 0; i <= JTREE_DEPTH_MAX; i++)
		buf_putc(&b, ']');
	buf_putc(&b, '}');
	TAP_OK(jscan_parse(&s, b.p, b.len, err, sizeof(err)) == 0 &&
	    jscan_tree(&s, b.p, b.len, keys, err, sizeof(err)) == NULL &&
	    strcmp(err, "nested deeper than 512 levels") == 0,
	    "jscan_tree: the nesting cap holds for the whole record");
	buf_free(&b);
	buf_free(&s.strs);
}

int
main(void)
{
	qb_setprog("unit-jsonl");
	if (mkdtemp(tmpl) == NULL)
		return 2;
	test_reader();
	test_scan();
	test_ids();
	test_sha256();
	test_start();
	test_read();
	test_scan_tree();
	{
		static const char *const made[] = { "lf", "crlf", "nonl", "blank",
		    "bom", "straddle", "long", "huge", "in.jsonl.gz", "read", NULL };
		const char *const *m;
		char path[300];

		for (m = made; *m != NULL; m++) {
			snprintf(path, sizeof(path), "%s/%s", tmpl, *m);
			unlink(path);
		}
		if (rmdir(tmpl) != 0)
			printf("# could not remove %s\n", tmpl);
	}
	return tap_done();
}
