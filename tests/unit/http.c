/*
 * Unit tests for http.c: failure classes, their exit statuses, and the
 * retry-after-ms / Retry-After parser (seconds, fractions, HTTP-dates);
 * the RFC 3339 times of job records (provider.c); and redact (redact.c),
 * which takes credentials out of every URL and header shown.
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/exits.h"
#include "base/redact.h"
#include "http/http.h"
#include "provider/provider.h"
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
