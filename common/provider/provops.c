/*
 * provops.c: the operations table of each provider, and connections to
 * a provider: its base URL, its key (from a file or the environment) and
 * the headers its operations authenticate with, made into a struct http.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "provider/provops.h"

extern const struct provider_ops openai_ops;	/* openai.c */
extern const struct provider_ops anthropic_ops;	/* anthropic.c */
extern const struct provider_ops azure_ops;	/* azure.c */

static const struct provider_ops *const ops[] = {
	&openai_ops,
	&anthropic_ops,
	&azure_ops,
};

const struct provider_ops *
provider_ops(const struct provider *p)
{
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i]->name, p->name) == 0)
			return ops[i];
	return NULL;
}

/* Overwrite and free s, a copy of the key or a header holding it. */
static void
wipe(char *s)
{
	if (s != NULL)
		memset(s, 0, strlen(s));
	free(s);
}

/*
 * The first line of path, without its line ending and blanks, into *key
 * (malloc'd; the caller wipes it). Returns 0 or QB_EX_CONFIG, reported.
 */
static int
readkey(const char *path, char **key)
{
	char *line = NULL, *s;
	size_t cap = 0;
	ssize_t n;
	FILE *fp;
	int e;

	if ((fp = fopen(path, "r")) == NULL)
		return qb_failsys(QB_EX_CONFIG, "cannot open key file %s",
		    path);
	n = getline(&line, &cap, fp);
	e = errno;
	if (n < 0 && ferror(fp)) {
		fclose(fp);
		free(line);
		errno = e;
		return qb_failsys(QB_EX_CONFIG, "cannot read key file %s",
		    path);
	}
	fclose(fp);
	if (n < 0)
		n = 0;
	while (n > 0 && strchr(" \t\r\n", line[n - 1]) != NULL)
		n--;
	if (line != NULL)
		line[n] = '\0';
	for (s = line; s != NULL && (*s == ' ' || *s == '\t'); s++)
		continue;
	*key = s != NULL && *s != '\0' ? xstrdup(s) : NULL;
	if (line != NULL)
		memset(line, 0, cap);
	free(line);
	if (*key == NULL)
		return qb_fail(QB_EX_CONFIG, "key file %s: no key on the first "
		    "line", path);
	return 0;
}

/* Whether the n bytes of URL u end in a version path, "/v1". */
static int
vpath(const char *u, int n)
{
	return n >= 3 && strncmp(u + n - 3, "/v1", 3) == 0;
}

/*
 * The base URL provider_open uses for p into *base; warns of a version
 * path the provider's paths hold already. Returns 0 or QB_EX_CONFIG.
 */
static int
baseurl(const struct provider *p, const char **base)
{
	int n;

	if (*base == NULL || **base == '\0')
		*base = getenv(p->base_env);
	if (*base == NULL || **base == '\0')
		*base = p->base_default;
	if (*base == NULL)	/* no default host (Azure: one per resource) */
		return qb_fail(QB_EX_CONFIG, "%s is not set and --base-url not "
		    "given", p->base_env);
	/* Anthropic's paths carry /v1 themselves: a base with it doubles it. */
	n = (int)strlen(*base);
	while (n > 0 && (*base)[n - 1] == '/')
		n--;
	if (p->base_default != NULL && !vpath(p->base_default, (int)strlen(
	    p->base_default)) && vpath(*base, n))
		qb_warn("base URL %s ends in /v1, and %s adds its own: give it "
		    "without the version path", *base, p->name);
	return 0;
}

int
provider_open(const struct provider *p, struct http *h, const char *base,
    const char *keyfile)
{
	const struct provider_ops *o = provider_ops(p);
	char *hdrs[8], *key = NULL;
	const char *s;
	int i, n, rc;

	memset(h, 0, sizeof(*h));
	if ((rc = baseurl(p, &base)) != 0)
		return rc;
	if (keyfile != NULL) {
		if ((rc = readkey(keyfile, &key)) != 0)
			return rc;
	} else if ((s = getenv(p->key_env)) != NULL && *s != '\0')
		key = xstrdup(s);
	else
		return qb_fail(QB_EX_CONFIG, "%s is not set", p->key_env);
	if (o == NULL || o->auth == NULL) {
		wipe(key);
		return qb_fail(QB_EX_CONFIG, "provider %s is not supported yet",
		    p->name);
	}
	if ((n = o->auth(key, hdrs, 7)) < 0) {
		wipe(key);
		return QB_EX_CONFIG;
	}
	hdrs[n] = NULL;
	rc = http_init(h, base, (const char *const *)hdrs, key);
	for (i = 0; i < n; i++)
		wipe(hdrs[i]);
	wipe(key);
	return rc;
}

int
provider_conn(struct provider_conns *c, const struct provider *p,
    struct http **h)
{
	int i, rc;

	for (i = 0; i < c->n; i++)
		if (c->p[i] == p) {
			*h = &c->h[i];
			return 0;
		}
	if (c->n == (int)(sizeof(c->p) / sizeof(c->p[0])))
		qb_bug("too many providers in one run");
	if ((rc = provider_check(p, c->base, c->keyfile, 1)) != 0 ||
	    (rc = provider_open(p, &c->h[c->n], c->base, c->keyfile)) != 0)
		return rc;
	c->p[c->n] = p;
	*h = &c->h[c->n++];
	return 0;
}

void
provider_conns_free(struct provider_conns *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		http_free(&c->h[i]);
	c->n = 0;
}
