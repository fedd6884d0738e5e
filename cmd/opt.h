/*
 * opt.h: the options every tool shares (-h -V -v -q), usage and version;
 * the options of the tools that talk to a provider (--base-url,
 * --key-file) and of those that read records strictly (--strict). Each
 * tool keeps its own getopt_long loop and calls opt_common() from its
 * default case, opt_provider() from the cases of the shared options.
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
 * The values of the shared long options without a letter: above those a
 * tool numbers its own from 256.
 */
enum { QB_OPT_BASE_URL = 1024, QB_OPT_KEY_FILE, QB_OPT_STRICT };

/* The long options of a tool that talks to a provider, and --strict. */
#define QB_PROVIDER_LONGOPTS \
	{ "base-url", required_argument, NULL, QB_OPT_BASE_URL }, \
	{ "key-file", required_argument, NULL, QB_OPT_KEY_FILE }
#define QB_STRICT_LONGOPT \
	{ "strict", no_argument, NULL, QB_OPT_STRICT }

/* Their lines in a tool's help text. */
#define QB_HELP_BASE_URL \
    "      --base-url URL     the provider's API base URL (default from\n" \
    "                         OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the\n" \
    "                         provider's public API)\n"
#define QB_HELP_KEY_FILE \
    "      --key-file FILE    read the API key from the first line of FILE\n"
#define QB_HELP_STRICT \
    "      --strict           stop at the first bad line (exit 65)\n"

/* What the shared options set. */
struct opt_provider {
	const char	*base;		/* --base-url, or NULL: the environment's */
	const char	*keyfile;	/* --key-file, or NULL: the environment's */
	int		 strict;	/* --strict */
};

/*
 * Take shared option ch (QB_OPT_BASE_URL, QB_OPT_KEY_FILE, QB_OPT_STRICT)
 * with its argument arg into po. Any other ch is a bug of the caller.
 */
void opt_provider(int ch, const char *arg, struct opt_provider *po);

/*
 * Handle a shared option character ch. usage is the tool's synopsis
 * (without the program name), help its option list. -h prints both to
 * stdout and exits 0; -V prints "prog VERSION" and exits 0; -v raises and
 * -q lowers qb_verbose. Any other ch is a usage error: the synopsis goes
 * to stderr and the tool exits QB_EX_USAGE.
 */
void opt_common(int ch, const char *usage, const char *help);

/* Print "usage: prog SYNOPSIS" to stderr and exit QB_EX_USAGE. */
void opt_usage(const char *usage) __attribute__((noreturn));

/* Check and close stdout at exit; exits QB_EX_IOERR on failure. */
void opt_close_stdout(void);

#endif
