/*
 * Unit tests for http.c: failure classes, their exit statuses, and the
 * retry-after-ms / Retry-After parser (seconds, fractions, HTTP-dates);
 * bad settings reported and returned, not fatal (http_init, provider_open,
 * provider_check, provider_conn); the providers' facts and operations
 * tables; the RFC 3339 times of job records (provider.c); and redact
 * (redact.c), which takes credentials out of every URL and header shown.
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exits.h"
#include "base/redact.h"
#include "http/http.h"
#include "provider/provops.h"
#include "tap.h"

static const char *const names[] = { "OK", "TEMP", "AUTH", "PERM", "PROTO" };

static void
cls(CURLcode cc, long status, enum http_class want, const char *desc)
{
	enum http_class got = http_class(cc, status);
	char d[160];

	snprintf(d, sizeof(d), "%s -> %s", desc, names[want]);
	tap_ok(got == want, d);
	if (got != want)
		printf("# got %s\n", names[got]);
}

static void
ra(const char *ms, const char *hdr, time_t now, double want, const char *desc)
{
	double got = http_retry_after(ms, hdr, now);

	tap_ok(fabs(got - want) < 1e-9, desc);
	if (fabs(got - want) >= 1e-9)
		printf("# got %g, want %g\n", got, want);
}

static void
put_buf(void *arg, const char *p, size_t n)
{
	buf_append(arg, p, n);
}

static void
red(const char *in, const char *want, const char *desc)
{
	struct buf b = BUF_INIT;

	redact_to(put_buf, &b, in, strlen(in));
	buf_putc(&b, '\0');
	b.len--;
	tap_is(b.p, want, desc);
	buf_free(&b);
}

/* Standard error while a call runs, kept in a file to be read back. */
static FILE *errf;
static int errfd = -1;

static void
catch_err(void)
{
	fflush(stderr);
	errf = tmpfile();
	errfd = dup(STDERR_FILENO);
	dup2(fileno(errf), STDERR_FILENO);
}

/* What the call said on standard error since catch_err, into out. */
static void
caught(char *out, size_t n)
{
	size_t k;

	fflush(stderr);
	dup2(errfd, STDERR_FILENO);
	close(errfd);
	rewind(errf);
	k = fread(out, 1, n - 1, errf);
	out[k] = '\0';
	fclose(errf);
}

/*
 * Settings that can never work are reported once and returned as
 * QB_EX_CONFIG, leaving the tool to end: nothing here exits.
 */
static void
http_settings(void)
{
	struct http h;
	char err[512];
	int rc;

	unsetenv("QB_MAX_RETRIES");
	unsetenv("QB_BACKOFF_BASE");
	unsetenv("QB_HTTP_TIMEOUT");
	rc = http_init(&h, "http://127.0.0.1:9/v1/", NULL, "sk-x");
	tap_ok(rc == 0 && strcmp(h.base, "http://127.0.0.1:9/v1") == 0 &&
	    h.retries == 4, "http_init: base without its '/', 4 retries");
	http_free(&h);

	catch_err();
	rc = http_init(&h, "ftp://example.com/v1", NULL, NULL);
	caught(err, sizeof(err));
	tap_ok(rc == QB_EX_CONFIG && h.curl == NULL, "http_init: an ftp base "
	    "URL returns 78, nothing held");
	tap_ok(strstr(err, "base URL \"ftp://example.com/v1\": not an http or "
	    "https URL") != NULL, "http_init: and says why");

	setenv("QB_MAX_RETRIES", "many", 1);
	catch_err();
	rc = http_init(&h, "http://127.0.0.1:9/v1", NULL, NULL);
	caught(err, sizeof(err));
	unsetenv("QB_MAX_RETRIES");
	tap_ok(rc == QB_EX_CONFIG && h.curl == NULL && h.base == NULL,
	    "http_init: a bad QB_MAX_RETRIES returns 78, nothing held");
	tap_ok(strstr(err, "QB_MAX_RETRIES \"many\" is") != NULL,
	    "http_init: and names it");

	setenv("QB_HTTP_TIMEOUT", "0", 1);
	catch_err();
	rc = http_init(&h, "http://127.0.0.1:9/v1", NULL, NULL);
	caught(err, sizeof(err));
	unsetenv("QB_HTTP_TIMEOUT");
	tap_ok(rc == QB_EX_CONFIG && strstr(err, "out of range") != NULL,
	    "http_init: QB_HTTP_TIMEOUT 0 is out of range");
}

/* The same of a provider's settings. */
static void
provider_settings(void)
{
	struct provider_conns c;
	struct http h, *hp;
	const struct provider *oa = provider_find("openai");
	const struct provider *az = provider_find("azure");
	char err[512];
	int rc;

	unsetenv("OPENAI_API_KEY");
	catch_err();
	rc = provider_open(oa, &h, "http://127.0.0.1:9/v1", NULL);
	caught(err, sizeof(err));
	tap_ok(rc == QB_EX_CONFIG && strstr(err, "OPENAI_API_KEY is not set") !=
	    NULL, "provider_open: no key returns 78 and says so");

	catch_err();
	rc = provider_open(oa, &h, "http://127.0.0.1:9/v1",
	    "/nonexistent/qb-key");
	caught(err, sizeof(err));
	tap_ok(rc == QB_EX_CONFIG && strstr(err, "cannot open key file "
	    "/nonexistent/qb-key") != NULL, "provider_open: a missing key "
	    "file returns 78");

	unsetenv("AZURE_OPENAI_ENDPOINT");
	catch_err();
	rc = provider_open(az, &h, NULL, NULL);
	caught(err, sizeof(err));
	tap_ok(rc == QB_EX_CONFIG && strstr(err, "AZURE_OPENAI_ENDPOINT is not "
	    "set and --base-url not given") != NULL,
	    "provider_open: Azure without a host returns 78");

	setenv("AZURE_OPENAI_API_KEY", "az-x", 1);
	setenv("AZURE_OPENAI_API_VERSION", "2024/10", 1);
	catch_err();
	rc = provider_open(az, &h, "http://127.0.0.1:9/openai", NULL);
	caught(err, sizeof(err));
	unsetenv("AZURE_OPENAI_API_VERSION");
	tap_ok(rc == QB_EX_CONFIG && h.curl == NULL && strstr(err,
	    "not an API version") != NULL,
	    "provider_open: a bad AZURE_OPENAI_API_VERSION returns 78");
	rc = provider_open(az, &h, "http://127.0.0.1:9/openai", NULL);
	tap_ok(rc == 0 && h.hdrs != NULL && strcmp(h.hdrs->data,
	    "api-key: az-x") == 0, "provider_open: Azure's key in api-key");
	http_free(&h);
	unsetenv("AZURE_OPENAI_API_KEY");

	setenv("OPENAI_API_KEY", " ", 1);
	catch_err();
	rc = provider_check(oa, "http://127.0.0.1:9/v1", NULL, 1);
	caught(err, sizeof(err));
	tap_ok(rc == QB_EX_CONFIG && strstr(err, "OPENAI_API_KEY is empty") !=
	    NULL, "provider_check: an empty key returns 78");
	tap_ok(provider_check(oa, "http://127.0.0.1:9/v1", NULL, 0) == 0,
	    "provider_check: the key unchecked, the base URL good");

	unsetenv("OPENAI_API_KEY");
	memset(&c, 0, sizeof(c));
	c.base = "http://127.0.0.1:9/v1";
	catch_err();
	rc = provider_conn(&c, oa, &hp);
	caught(err, sizeof(err));
	tap_ok(rc == QB_EX_CONFIG && c.n == 0,
	    "provider_conn: a failed open returns its status, keeps nothing");
	setenv("OPENAI_API_KEY", "sk-x", 1);
	tap_ok(provider_conn(&c, oa, &hp) == 0 && c.n == 1 && hp == &c.h[0] &&
	    strcmp(hp->hdrs->data, "Authorization: Bearer sk-x") == 0,
	    "provider_conn: opened once the key is there");
	tap_ok(provider_conn(&c, oa, &hp) == 0 && c.n == 1,
	    "provider_conn: and reused");
	provider_conns_free(&c);
	unsetenv("OPENAI_API_KEY");
}

/* The facts need no operations; every provider has both. */
static void
tables(void)
{
	static const char *const names[] = { "openai", "anthropic", "azure" };
	const struct provider *p;
	const struct provider_ops *o;
	char d[80];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		p = provider_find(names[i]);
		o = p != NULL ? provider_ops(p) : NULL;
		snprintf(d, sizeof(d), "%s: its facts", names[i]);
		tap_ok(p != NULL && strcmp(p->name, names[i]) == 0 &&
		    p->max_requests > 0 && p->max_bytes > 0 && p->endpoint !=
		    NULL && p->key_env != NULL && p->base_env != NULL, d);
		snprintf(d, sizeof(d), "%s: its operations", names[i]);
		tap_ok(o != NULL && strcmp(o->name, names[i]) == 0 &&
		    o->auth != NULL && o->submit != NULL && o->get != NULL &&
		    o->cancel != NULL && o->fetch != NULL && o->job != NULL &&
		    o->find != NULL, d);
	}
	tap_ok(provider_find("gemini") == NULL, "no such provider: NULL");
	p = provider_find("anthropic");
	tap_ok(p->line_format == PROVIDER_LINE_ANTHROPIC &&
	    p->max_requests == 100000 && p->max_bytes == 256000000LL,
	    "anthropic: its line format and caps");
}

int
main(void)
{
	time_t t0 = curl_getdate("Sun, 06 Nov 1994 08:49:37 GMT", NULL);

	cls(CURLE_OK, 200, HTTP_OK, "200");
	cls(CURLE_OK, 204, HTTP_OK, "204");
	cls(CURLE_OK, 401, HTTP_AUTH, "401");
	cls(CURLE_OK, 403, HTTP_AUTH, "403");
	cls(CURLE_OK, 408, HTTP_TEMP, "408");
	cls(CURLE_OK, 409, HTTP_TEMP, "409");
	cls(CURLE_OK, 429, HTTP_TEMP, "429");
	cls(CURLE_OK, 500, HTTP_TEMP, "500");
	cls(CURLE_OK, 502, HTTP_TEMP, "502");
	cls(CURLE_OK, 503, HTTP_TEMP, "503");
	cls(CURLE_OK, 529, HTTP_TEMP, "529 (overloaded)");
	cls(CURLE_OK, 400, HTTP_PERM, "400");
	cls(CURLE_OK, 404, HTTP_PERM, "404");
	cls(CURLE_OK, 413, HTTP_PERM, "413");
	cls(CURLE_OK, 422, HTTP_PERM, "422");
	cls(CURLE_OK, 0, HTTP_PROTO, "no status");
	cls(CURLE_OK, 302, HTTP_PROTO, "302 not followed");
	cls(CURLE_OK, 600, HTTP_PROTO, "600");
	cls(CURLE_COULDNT_CONNECT, 0, HTTP_TEMP, "connection refused");
	cls(CURLE_COULDNT_RESOLVE_HOST, 0, HTTP_TEMP, "unknown host");
	cls(CURLE_OPERATION_TIMEDOUT, 0, HTTP_TEMP, "timeout");
	cls(CURLE_GOT_NOTHING, 0, HTTP_TEMP, "empty reply");
	cls(CURLE_SEND_ERROR, 0, HTTP_TEMP, "send error");
	cls(CURLE_RECV_ERROR, 0, HTTP_TEMP, "receive error");
	cls(CURLE_PARTIAL_FILE, 200, HTTP_TEMP, "body cut short");
	cls(CURLE_URL_MALFORMAT, 0, HTTP_PERM, "bad URL");
	cls(CURLE_UNSUPPORTED_PROTOCOL, 0, HTTP_PERM, "unsupported scheme");
	cls(CURLE_PEER_FAILED_VERIFICATION, 0, HTTP_PERM, "bad certificate");
	cls(CURLE_WEIRD_SERVER_REPLY, 0, HTTP_PROTO, "garbage reply");

	tap_ok(http_exitcode(HTTP_OK) == QB_EX_OK, "OK exits 0");
	tap_ok(http_exitcode(HTTP_TEMP) == QB_EX_TEMPFAIL, "TEMP exits 75");
	tap_ok(http_exitcode(HTTP_AUTH) == QB_EX_NOPERM, "AUTH exits 77");
	tap_ok(http_exitcode(HTTP_PERM) == QB_EX_UNAVAILABLE, "PERM exits 69");
	tap_ok(http_exitcode(HTTP_PROTO) == QB_EX_PROTOCOL, "PROTO exits 76");

	tap_ok(t0 != -1, "curl_getdate reads an IMF-fixdate");
	ra(NULL, NULL, t0, -1, "no headers: none");
	ra("", "", t0, -1, "empty headers: none");
	ra(NULL, "2", t0, 2, "Retry-After: 2");
	ra(NULL, "0.25", t0, 0.25, "Retry-After: 0.25 (fractions, as the SDK)");
	ra(NULL, " 7 ", t0, 7, "Retry-After with blanks");
	ra(NULL, "0", t0, 0, "Retry-After: 0");
	ra(NULL, "-1", t0, -1, "negative: none");
	ra(NULL, "soon", t0, -1, "garbage: none");
	ra(NULL, "3x", t0, -1, "trailing garbage: none");
	ra("1500", NULL, t0, 1.5, "retry-after-ms: 1500");
	ra("1500", "9", t0, 1.5, "retry-after-ms wins over Retry-After");
	ra("x", "9", t0, 9, "bad retry-after-ms falls back to Retry-After");
	ra("250.5", NULL, t0, 0.2505, "retry-after-ms with a fraction");
	ra(NULL, "Sun, 06 Nov 1994 08:50:07 GMT", t0, 30, "IMF-fixdate 30 s ahead");
	ra(NULL, "Sunday, 06-Nov-94 08:50:07 GMT", t0, 30, "RFC 850 date");
	ra(NULL, "Sun Nov  6 08:50:07 1994", t0, 30, "asctime date");
	ra(NULL, "Sun, 06 Nov 1994 08:00:00 GMT", t0, 0, "date in the past: 0");
	ra(NULL, "Sun, 06 Nov 1994 08:49:37 GMT", t0, 0, "date now: 0");

	{
		char buf[32];

		provider_time(0, buf, sizeof(buf));
		tap_is(buf, "1970-01-01T00:00:00Z", "job time: the epoch");
		provider_time(1796054400, buf, sizeof(buf));
		tap_is(buf, "2026-11-30T16:00:00Z", "job time: unix seconds to UTC");
	}
	http_settings();
	provider_settings();
	tables();
	red("POST http://user:sk-secret@127.0.0.1:8080/v1/files -> 401",
	    "POST http://[redacted]@127.0.0.1:8080/v1/files -> 401",
	    "redact: user and key in a URL's userinfo");
	red("https://sk-only@api.example.com", "https://[redacted]@api.example.com",
	    "redact: a key alone as userinfo, no path");
	red("https://u:p@ss@h.example/x?y", "https://[redacted]@h.example/x?y",
	    "redact: up to the last '@' of the authority");
	red("see https://h.example/a@b and mail me@example.com",
	    "see https://h.example/a@b and mail me@example.com",
	    "redact: an '@' in a path or in text is kept");
	red("GET https://g.example/v1beta/models?key=AIzaSy123&alt=sse -> 200",
	    "GET https://g.example/v1beta/models?key=[redacted]&alt=sse -> 200",
	    "redact: Gemini's key= query parameter");
	red("/q?a=1&API-KEY=abc#frag", "/q?a=1&API-KEY=[redacted]#frag",
	    "redact: a later api-key parameter, any case");
	red("/o?X-Amz-Date=20250101T000000Z&X-Amz-Security-Token=FQo/x+y"
	    "&X-Amz-Signature=deadbeef&X-Amz-Credential=AKIA/1",
	    "/o?X-Amz-Date=20250101T000000Z&X-Amz-Security-Token=[redacted]"
	    "&X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]",
	    "redact: AWS presigned-URL parameters, not the date");
	red("/v1/batches?after=batch_1&limit=100", "/v1/batches?after=batch_1&limit=100",
	    "redact: other parameters kept");
	red("Authorization: Bearer sk-abc\r\nContent-Type: application/json",
	    "Authorization: [redacted]\r\nContent-Type: application/json",
	    "redact: an Authorization header line");
	red("x-api-key: sk-ant-1\napi-key: az1\nx-goog-api-key: g1\n"
	    "X-Amz-Security-Token: tok\nauthorization: AWS4-HMAC-SHA256 "
	    "Credential=AKIA/x, Signature=ff",
	    "x-api-key: [redacted]\napi-key: [redacted]\nx-goog-api-key: "
	    "[redacted]\nX-Amz-Security-Token: [redacted]\nauthorization: "
	    "[redacted]", "redact: every credential header, any case");
	red("header {\"Authorization\":\"Bearer sk-x1\"} sent",
	    "header {\"Authorization\":\"Bearer [redacted]\"} sent",
	    "redact: a bearer token outside a header line");
	red("my-api-key: 3", "my-api-key: 3",
	    "redact: only whole header names");
	red("qb-pack: items.jsonl:3: no \"body\" for id \"a\"",
	    "qb-pack: items.jsonl:3: no \"body\" for id \"a\"",
	    "redact: text without credentials unchanged");
	{
		char small[32] = "http://u:k@h/";

		redact_str(small, sizeof(small));
		tap_is(small, "http://[redacted]@h/", "redact_str: in place");
		snprintf(small, sizeof(small), "%s", "http://u:k@host.example/");
		redact_str(small, 16);
		tap_is(small, "http://[redacte", "redact_str: cut to the buffer");
	}
	return tap_done();
}
