/*
 * syncint.h: what the files of the synchronous engine share (sync.c the
 * loop, syncin.c input, syncout.c results and metrics). Not for tools.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SYNCINT_H
#define QB_SYNCINT_H

#include <pthread.h>
#include <curl/curl.h>
#include <yajl/yajl_gen.h>

#include "base/idmap.h"
#include "http/http.h"
#include "json/jscan.h"
#include "provider/provops.h"
#include "record/result.h"
#include "sync/ratelim.h"
#include "sync/sync.h"

#define SYNC_WAIT_MAX	120.0	/* s: a longer server wait is not waited */
#define SYNC_CODES	16	/* status codes counted per model for metrics */

struct sync_item;
struct sync_group;

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

/* A line, or news, from the input thread. */
struct sync_line {
	struct sync_line *next;
	int		 kind;		/* SYNC_L_* */
	char		*p;		/* the line; owned */
	size_t		 len;
	const char	*file;		/* not owned: in.names */
	unsigned long	 lineno;
	double		 at;		/* qtime_mono() when read */
	int		 err;		/* errno of SYNC_L_NOINPUT */
};

enum { SYNC_L_LINE, SYNC_L_BAD, SYNC_L_NOINPUT, SYNC_L_IOERR };

/* The input thread and the queue it fills. */
struct sync_in {
	pthread_t	 th;
	pthread_mutex_t	 mu;
	pthread_cond_t	 room;		/* signalled when lines are taken */
	struct sync_line *head, *tail;
	size_t		 n, bytes;
	int		 eof;		/* every input read: no more lines */
	int		 quit;		/* the engine asks the thread to end */
	int		 inpush;	/* the thread waits for room: it can end */
	int		 mayblock;	/* an input is not a regular file */
	char		**files;
	char		**names;	/* as messages name them; owned */
	size_t		 nnames;
	CURLM		*multi;		/* woken when a line comes */
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
	struct rbudget	 rb;
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

/* sync.c: lists */
void sync_list_del(struct sync_list *l, struct sync_item *it);
/* Add it at the end of l, or at its front. */
void sync_list_add(struct sync_list *l, struct sync_item *it, int front);

/* synchttp.c */
/*
 * provider_open, the headers, the multi handle; sync_http_free undoes it.
 * Returns 0, or the status of a provider_open that failed (reported).
 */
int sync_http_init(struct sync *s);
void sync_http_free(struct sync *s);
/* A handle for a try of it: its body, headers and callbacks set. */
CURL *sync_easy(struct sync *s, struct sync_item *it);
/* The wait a 429 without Retry-After implies from the rate-limit reset
 * headers, in seconds; -1 if they say nothing. */
double sync_reset_wait(const struct sync_item *it);
/*
 * Take one header line of an answer to it (len bytes at p, its line end
 * included or not): a status line starts the answer afresh; Retry-After,
 * retry-after-ms, the request id, x-should-retry and the rate-limit reset
 * and remaining headers (qb-providers(7)) are kept in it, each cut to its
 * field's size. Other lines are ignored.
 */
void sync_header(struct sync_item *it, const char *p, size_t len);
/* Replace the key, wherever it appears in b, by "[key]". */
void sync_scrub(const struct sync *s, struct buf *b);

/* syncend.c */
/* A transfer of it ended with libcurl result cc: print its result or
 * put it back in the waiting list for another try. */
void sync_done(struct sync *s, struct sync_item *it, CURLcode cc);
/* Give it up before a try: wait (s) is over the cap, or its deadline
 * passes first. Prints its result. */
void sync_giveup(struct sync *s, struct sync_item *it, double wait);

/* Print it's result and let it go (an array request: its items');
 * say, if not NULL, is reported. */
void sync_settle(struct sync *s, struct sync_item *it, const struct result *r,
    const char *say);

/* syncarr.c */
/* Take it as an array item if --array applies to it: 1, else 0. */
int sync_arr_take(struct sync *s, struct sync_item *it);
/* Make array requests of what waits, into s->wait; returns when to look
 * again (now + 1 if nothing waits). over: input is over. */
double sync_arr_pack(struct sync *s, double now, int over);
/* An array request ended with r: bisect it, or end its inputs. */
void sync_arr_end(struct sync *s, struct sync_item *req, const struct result *r,
    const char *say);
void sync_arr_free(struct sync *s);
/* Free what an item holds for --array. */
void sync_arr_itemfree(struct sync_item *it);

/* syncin.c */
void sync_in_start(struct sync *s, char **files);
/* Tell the input thread to stop and wait for it, unless it is blocked in
 * a read; returns 1 if it is gone (its queue and names then freed). */
int sync_in_stop(struct sync *s);
/* Take what the input thread has read into the waiting list, as long as
 * there is room; returns 1 if input is over (all read and taken). */
int sync_in_take(struct sync *s, size_t room);
/* Check one line and make it an item, or report it; NULL then. */
struct sync_item *sync_item_new(struct sync *s, struct sync_line *l);
void sync_item_free(struct sync_item *it);

/* syncout.c */
/* Print it's result r (an answer, or made up for a failure); 0, or -1
 * after a write error on standard output (reported). */
int sync_put(struct sync *s, struct sync_item *it, const struct result *r);
/* A result without an answer: status, error type, code and message. */
void sync_noanswer(struct result *r, enum result_status st, const char *type,
    const char *code, const char *msg);
/* Write --metrics now (atomically); complain once if it cannot be. */
void sync_metrics(struct sync *s);
/* Count an answer's status (0: none) for the model's metrics. */
void sync_count(struct sync_model *m, long status);
void sync_summary(const struct sync *s);

#endif
