/*
 * opt.h: the options every tool shares (-h -V -v -q), usage and version.
 * Each tool keeps its own getopt_long loop and calls qb_common_opt() from
 * its default case.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_OPT_H
#define QB_OPT_H

#include <getopt.h>

#ifndef QB_VERSION
#define QB_VERSION "0.0.0"
#endif

/* The long options shared by every tool, to splice into a tool's table. */
#define QB_COMMON_LONGOPTS \
	{ "help", no_argument, NULL, 'h' }, \
	{ "quiet", no_argument, NULL, 'q' }, \
	{ "verbose", no_argument, NULL, 'v' }, \
	{ "version", no_argument, NULL, 'V' }

/*
 * Handle a shared option character ch. usage is the tool's synopsis
 * (without the program name), help its option list. -h prints both to
 * stdout and exits 0; -V prints "prog VERSION" and exits 0; -v raises and
 * -q lowers qb_verbose. Any other ch is a usage error: the synopsis goes
 * to stderr and the tool exits QB_EX_USAGE.
 */
void qb_common_opt(int ch, const char *usage, const char *help);

/* Print "usage: prog SYNOPSIS" to stderr and exit QB_EX_USAGE. */
void qb_usage(const char *usage) __attribute__((noreturn));

/* Check and close stdout at exit; exits QB_EX_IOERR on failure. */
void qb_close_stdout(void);

#endif
