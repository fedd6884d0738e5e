/*
 * provcheck.c: provider_check, the configuration a provider connection
 * needs, checked before a tool spends anything: a base URL that can never
 * work and a key variable that is set but empty are configuration errors
 * (QB_EX_CONFIG, which ends the tool), not failures of each record.
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include "base/exits.h"
#include "base/msg.h"
#include "http/http.h"
#include "provider/provops.h"

int
provider_check(const struct provider *p, const char *base,
    const char *keyfile, int key)
{
	const char *from = "--base-url", *s;
	char why[160];

	if ((base == NULL || *base == '\0') && p->base_env != NULL) {
		base = getenv(p->base_env);
		from = p->base_env;
	}
	if (base == NULL || *base == '\0') {
		base = p->base_default;
		from = "the default base URL";
	}
	if (base != NULL && http_check_url(base, why, sizeof(why)) != 0)
		return qb_fail(QB_EX_CONFIG, "%s \"%s\": %s", from, base, why);
	if (key && keyfile == NULL && p->key_env != NULL &&
	    (s = getenv(p->key_env)) != NULL && s[strspn(s, " \t\r\n")] == '\0')
		return qb_fail(QB_EX_CONFIG, "%s is empty", p->key_env);
	return 0;
}
