/*
 * opt.c: shared -h -V -v -q handling, usage and version output; the
 * provider options and --strict.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/exits.h"
#include "base/msg.h"
#include "opt.h"

void
opt_usage(const char *usage)
{
	fprintf(stderr, "usage: %s %s\n", qb_prog(), usage);
	exit(QB_EX_USAGE);
}

void
opt_common(int ch, const char *usage, const char *help)
{
	switch (ch) {
	case 'h':
		printf("usage: %s %s\n%s", qb_prog(), usage, help);
		opt_close_stdout();
		exit(QB_EX_OK);
	case 'q':
		qb_verbose = -1;
		break;
	case 'V':
		printf("%s %s\n", qb_prog(), QB_VERSION);
		opt_close_stdout();
		exit(QB_EX_OK);
	case 'v':
		if (qb_verbose < 0)
			qb_verbose = 0;
		qb_verbose++;
		break;
	default:
		opt_usage(usage);
	}
}

void
opt_provider(int ch, const char *arg, struct opt_provider *po)
{
	switch (ch) {
	case QB_OPT_BASE_URL:
		po->base = arg;
		break;
	case QB_OPT_KEY_FILE:
		po->keyfile = arg;
		break;
	case QB_OPT_STRICT:
		po->strict = 1;
		break;
	default:
		qb_bug("option %d is not a provider option", ch);
	}
}

void
opt_close_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0)
		qb_diesys(QB_EX_IOERR, "write error on standard output");
}
