/*
 * provider.c: the table of providers, and what every provider shares:
 * finding the key and the base URL, and formatting times.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exits.h"
#include "msg.h"
#include "provider.h"
#include "xmem.h"

extern const struct provider provider_openai;	/* openai.c */

/*
 * Anthropic: facts only until its operations are written.
 * 100,000 requests and 256 MB per batch (PROVIDERS.md §2.2, §2.6).
 */
static const struct provider provider_anthropic = {
	.name = "anthropic",
	.line_format = PROVIDER_LINE_ANTHROPIC,
	.max_requests = 100000,
	.max_bytes = 256000000LL,
	.limits_src = "PROVIDERS.md §2.2, §2.6",
	.endpoint = "/v1/messages",
	.key_env = "ANTHROPIC_API_KEY",
	.base_env = "ANTHROPIC_BASE_URL",
	.base_default = "https://api.anthropic.com",
};

static const struct provider *const providers[] = {
	&provider_openai,
	&provider_anthropic,
};

const struct provider *
provider_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++)
		if (strcmp(providers[i]->name, name) == 0)
			return providers[i];
	return NULL;
}

/* The first line of path, without its line ending and blanks. */
static char *
readkey(const char *path)
{
	char *line = NULL, *s;
	size_t cap = 0;
	ssize_t n;
	FILE *fp;

	if ((fp = fopen(path, "r")) == NULL)
		qb_diesys(QB_EX_CONFIG, "cannot open key file %s", path);
	n = getline(&line, &cap, fp);
	if (n < 0 && ferror(fp))
		qb_diesys(QB_EX_CONFIG, "cannot read key file %s", path);
	fclose(fp);
	if (n < 0)
		n = 0;
	while (n > 0 && strchr(" \t\r\n", line[n - 1]) != NULL)
		n--;
	if (line != NULL)
		line[n] = '\0';
	for (s = line; s != NULL && (*s == ' ' || *s == '\t'); s++)
		continue;
	if (s == NULL || *s == '\0')
		qb_die(QB_EX_CONFIG, "key file %s: no key on the first line",
		    path);
	s = xstrdup(s);
	memset(line, 0, cap);
	free(line);
	return s;
}

void
provider_open(const struct provider *p, struct http *h, const char *base,
    const char *keyfile)
{
	char *hdrs[8], *key;
	const char *s;
	int i, n;

	if (base == NULL || *base == '\0')
		base = getenv(p->base_env);
	if (base == NULL || *base == '\0')
		base = p->base_default;
	if (keyfile != NULL)
		key = readkey(keyfile);
	else if ((s = getenv(p->key_env)) != NULL && *s != '\0')
		key = xstrdup(s);
	else
		qb_die(QB_EX_CONFIG, "%s is not set", p->key_env);
	if (p->auth == NULL)
		qb_die(QB_EX_CONFIG, "provider %s is not supported yet",
		    p->name);
	n = p->auth(key, hdrs, 7);
	hdrs[n] = NULL;
	http_init(h, base, (const char *const *)hdrs, key);
	for (i = 0; i < n; i++) {
		memset(hdrs[i], 0, strlen(hdrs[i]));
		free(hdrs[i]);
	}
	memset(key, 0, strlen(key));
	free(key);
}

void
provider_time(long long t, char *out, size_t outlen)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outlen, "%lld", t);
}

struct http *
provider_conn(struct provider_conns *c, const struct provider *p)
{
	int i;

	for (i = 0; i < c->n; i++)
		if (c->p[i] == p)
			return &c->h[i];
	if (c->n == (int)(sizeof(c->p) / sizeof(c->p[0])))
		qb_die(QB_EX_SOFTWARE, "too many providers in one run");
	c->p[c->n] = p;
	provider_open(p, &c->h[c->n], c->base, c->keyfile);
	return &c->h[c->n++];
}

void
provider_conns_free(struct provider_conns *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		http_free(&c->h[i]);
	c->n = 0;
}
