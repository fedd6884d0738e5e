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

/* Whether the n bytes of URL u end in a version path, "/v1". */
static int
vpath(const char *u, int n)
{
	return n >= 3 && strncmp(u + n - 3, "/v1", 3) == 0;
}

void
provider_open(const struct provider *p, struct http *h, const char *base,
    const char *keyfile)
{
	const struct provider_ops *o = provider_ops(p);
	char *hdrs[8], *key;
	const char *s;
	int i, n;

	if (base == NULL || *base == '\0')
		base = getenv(p->base_env);
	if (base == NULL || *base == '\0')
		base = p->base_default;
	if (base == NULL)	/* no default host (Azure: one per resource) */
		qb_die(QB_EX_CONFIG, "%s is not set and --base-url not given",
		    p->base_env);
	/* Anthropic's paths carry /v1 themselves: a base with it doubles it. */
	n = (int)strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	if (p->base_default != NULL && !vpath(p->base_default, (int)strlen(
	    p->base_default)) && vpath(base, n))
		qb_warn("base URL %s ends in /v1, and %s adds its own: give it "
		    "without the version path", base, p->name);
	if (keyfile != NULL)
		key = readkey(keyfile);
	else if ((s = getenv(p->key_env)) != NULL && *s != '\0')
		key = xstrdup(s);
	else
		qb_die(QB_EX_CONFIG, "%s is not set", p->key_env);
	if (o == NULL || o->auth == NULL)
		qb_die(QB_EX_CONFIG, "provider %s is not supported yet",
		    p->name);
	n = o->auth(key, hdrs, 7);
	hdrs[n] = NULL;
	http_init(h, base, (const char *const *)hdrs, key);
	for (i = 0; i < n; i++) {
		memset(hdrs[i], 0, strlen(hdrs[i]));
		free(hdrs[i]);
	}
	memset(key, 0, strlen(key));
	free(key);
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
