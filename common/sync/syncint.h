/*
 * syncint.h: the state the files of the synchronous engine share: the
 * run (struct sync), its models, its items and the lists they wait in.
 * Types only; each file's functions are in its own header, below the
 * loop (sync.c): syncitem (lists, freeing), synchttp (requests and their
 * headers), syncout (results, metrics, summary), syncarr (--array),
 * syncend (how a try ended), syncin (input). Not for tools.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCINT_H
#define QB_SYNCINT_H

#include <curl/curl.h>
#include <yajl/yajl_gen.h>

#include "base/buf.h"
#include "base/idmap.h"
#include "http/http.h"
#include "json/jscan.h"
#include "provider/provops.h"
#include "record/result.h"
#include "sync/ratelim.h"
#include "sync/syncopts.h"

#define SYNC_WAIT_MAX	120.0	/* s: a longer server wait is not waited */
#define SYNC_CODES	16	/* status codes counted per model for metrics */

struct provider;
struct sync_in;			/* the input thread (syncin.c) */
struct sync_group;		/* items whose inputs share requests (syncarr.c) */
struct sync_item;

/* One input of an array item (syncarr.c): its bytes and what became of it. */
struct sync_el {
	char		*raw;		/* the JSON value; owned */
	size_t		 len;
	long long	 tokens;	/* estimate */
	int		 state;		/* SYNC_E_* */
	char		*vec;		/* "embedding" value, when done; owned */
	long long	 share;		/* its share of the request's prompt_tokens */
};
enum { SYNC_E_WAIT, SYNC_E_OK, SYNC_E_DEAD, SYNC_E_FAIL };

/* Element i of item own, in an array request. */
struct sync_part {
	struct sync_item *own;
	size_t		 i;
};

/* A list of items, through their prev and next links. */
struct sync_list {
	struct sync_item *head, *tail;
	size_t		 n;
};

/* One (provider, model): its limiter and its counters. */
struct sync_model {
	char		*name;		/* owned */
	struct ratelim	*rl;
	unsigned long	 round;		/* admission round in which one of its items waited */
	unsigned long long tokens;	/* estimated tokens admitted */
	unsigned long	 retries, unknown;
	int		 ncode;
	struct { long code; unsigned long n; } code[SYNC_CODES]; /* 0: no answer */
};

/* An item from its line to its result. */
struct sync_item {
	struct sync_item *prev, *next;	/* in the waiting or the flying list */
	char		*line;		/* the item record, NUL-terminated; owned */
	size_t		 len;
	char		*id;		/* owned */
	size_t		 boff, blen;	/* the request body within line */
	char		*url;		/* owned */
	const char	*defep;		/* the endpoint used when it names none */
	struct sync_model *m;
	long long	 tokens;	/* estimated prompt tokens */
	const char	*file;		/* input name, for messages; not owned */
	unsigned long	 lineno;
	double		 deadline;	/* qtime_mono(); 0: none */
	double		 not_before;	/* qtime_mono() of its next try */
	double		 started;	/* qtime_mono() of this try */
	int		 tries;
	/* This try. */
	CURL		*easy;
	struct buf	 resp;
	int		 big;		/* the answer passed its cap */
	long		 status;
	int		 should_retry;	/* -1 absent, 0 false, 1 true */
	char		 ra[64], ra_ms[32], rid[128];
	char		 reset[2][48], left[2][24];	/* rate limits: requests, tokens */
	char		 ebuf[CURL_ERROR_SIZE];
	/* --array: an item whose inputs go in array requests (syncarr.c) */
	struct sync_group *grp;		/* its group; also set on a request */
	struct sync_el	*el;		/* its inputs; owned */
	size_t		 nel, packed, nleft;	/* inputs, packed, not ended */
	struct result	*fail, *dead;	/* first failure, first dead input; owned */
	size_t		 deadi;		/* the dead input */
	char		*say, *aobj, *amodel;	/* owned */
	/* An array request: the inputs it carries. */
	struct sync_part *parts;	/* owned */
	size_t		 nparts;
};

struct sync {
	const struct sync_opts *o;
	const struct provider *p;
	struct http	 h;		/* base URL, key headers, timeouts, retries */
	long		 timeout;	/* s per try */
	CURLM		*multi;
	struct curl_slist *hdrs;	/* sent with every request; owned */
	char		 query[96];	/* appended to paths ("?api-version=..."), or "" */
	struct sync_model **models;
	size_t		 nmodels;
	struct sync_list wait;		/* for admission or a retry */
	struct sync_list fly;		/* in flight */
	unsigned long	 round;
	struct ratelim_budget rb;	/* retries against first tries */
	int		 unknown_left;	/* --unknown-retries not yet spent */
	struct idmap	 ids;		/* every id read: duplicates refused */
	struct jscan scan;		/* of item lines */
	struct result_parser rp;	/* of answers */
	yajl_gen	 g;
	struct sync_in	*in;		/* owned, unless its thread outlives the run */
	double		 next_metrics, next_progress;
	int		 tty;
	/* Counters for the summary and the exit status. */
	unsigned long	 nitems, nok, nfail, nlater, nbad, nretry, nunknown,
			 nuntried;
	int		 noinput, ioerr;
	int		 stop;		/* exit status that ended admissions, or 0 */
	int		 halt;		/* --strict: no more input; the rest goes on */
	/* --array (syncarr.c) */
	struct sync_group **groups;
	size_t		 ngroups;
	size_t		 npool;		/* array items with inputs not yet packed */
	size_t		 nopen;		/* array items without a result yet */
	unsigned long	 narrays, nbisect;	/* array requests, of them bisects */
};

#endif
