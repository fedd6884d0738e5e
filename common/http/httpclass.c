/*
 * httpclass.c: what an HTTP exchange means to qb, without a handle: a
 * URL's fitness as a base URL, the failure class of a libcurl result and
 * status, its exit status, and the wait a Retry-After asks for
 * (qb-providers(7), HTTP "Failure classes"). http.c does the talking.
 * SPDX-License-Identifier: ISC
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/exits.h"
#include "base/msg.h"
#include "http/http.h"

int
http_check_url(const char *url, char *why, size_t whylen)
{
	CURLU *u;
	CURLUcode uc;
	char *scheme = NULL, *host = NULL;
	int rc = -1;

	if ((u = curl_url()) == NULL)
		qb_oom(0);
	uc = curl_url_set(u, CURLUPART_URL, url, 0);
	if (uc != CURLUE_OK && strncasecmp(url, "http://", 7) != 0 &&
	    strncasecmp(url, "https://", 8) != 0)
		snprintf(why, whylen, "not an http or https URL");
	else if (uc != CURLUE_OK)
#if LIBCURL_VERSION_NUM >= 0x075000
		snprintf(why, whylen, "cannot be parsed: %s",
		    curl_url_strerror(uc));
#else
		snprintf(why, whylen, "cannot be parsed (error %d)", (int)uc);
#endif
	else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0))
		snprintf(why, whylen, "not an http or https URL");
	else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    *host == '\0')
		snprintf(why, whylen, "no host");
	else
		rc = 0;
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

enum http_class
http_class(CURLcode cc, long status)
{
	switch (cc) {
	case CURLE_OK:
		break;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_READ_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return HTTP_PERM;	/* trying again cannot help */
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_WRITE_ERROR:
	case CURLE_TOO_MANY_REDIRECTS:
	case CURLE_FILESIZE_EXCEEDED:
		return HTTP_PROTO;
	default:
		return HTTP_TEMP;	/* connect, resolve, timeout, reset... */
	}
	if (status >= 200 && status <= 299)
		return HTTP_OK;
	if (status == 401 || status == 403)
		return HTTP_AUTH;
	if (status == 408 || status == 409 || status == 429 ||
	    (status >= 500 && status <= 599))
		return HTTP_TEMP;
	if (status >= 400 && status <= 499)
		return HTTP_PERM;
	return HTTP_PROTO;
}

int
http_exitcode(enum http_class c)
{
	switch (c) {
	case HTTP_OK:
		return QB_EX_OK;
	case HTTP_TEMP:
		return QB_EX_TEMPFAIL;
	case HTTP_AUTH:
		return QB_EX_NOPERM;
	case HTTP_PERM:
		return QB_EX_UNAVAILABLE;
	default:
		return QB_EX_PROTOCOL;
	}
}

/* A whole string as a finite non-negative decimal; -1 if it is not one. */
static double
decimal(const char *s)
{
	char *end;
	double v;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s) && *s != '.')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0' || errno != 0 || !isfinite(v) || v < 0)
		return -1;
	return v;
}

double
http_retry_after(const char *ms, const char *ra, time_t now)
{
	double v;
	time_t t;

	if (ms != NULL && *ms != '\0' && (v = decimal(ms)) >= 0)
		return v / 1000;
	if (ra == NULL || *ra == '\0')
		return -1;
	if ((v = decimal(ra)) >= 0)
		return v;
	/* curl_getdate takes the three HTTP-date forms of RFC 9110 §5.6.7. */
	if ((t = curl_getdate(ra, NULL)) == -1)
		return -1;
	return t <= now ? 0 : difftime(t, now);
}

void
http_hval(char *dst, size_t dstlen, const char *v, size_t n)
{
	while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' ||
	    v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}
