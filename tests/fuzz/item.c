/*
 * item.c: libFuzzer harness for item_check, each line checked as an
 * item for every provider. What it finds must point into the line and
 * the scan.
 * SPDX-License-Identifier: ISC
 */
#include "fuzz.h"
#include "record/item.h"

static void
line(const char *p, size_t len, void *arg)
{
	static const char *const names[] = { "openai", "anthropic", "azure" };
	struct jscan *s = arg;
	const struct provider *pv;
	struct item it;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((pv = provider_find(names[i])) == NULL)
			abort();
		if (item_check(s, p, len, pv, &it, err, sizeof(err)) != 0) {
			if (memchr(err, '\0', sizeof(err)) == NULL)
				abort();
			continue;
		}
		if (it.id == NULL || it.idlen == 0 || it.idlen > 64 ||
		    strlen(it.id) != it.idlen || it.model == NULL ||
		    it.ibody < 0 || it.ibody >= s->nspan)
			abort();
		if (it.endpoint != NULL)
			(void)strlen(it.endpoint);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_quiet();
	fuzz_scan_lines(data, size, line);
	return 0;
}
