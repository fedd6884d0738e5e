/*
 * syncin.c: input of the synchronous engine. A thread reads the lines of
 * the input files (jsonl.h) into a bounded queue and wakes the engine,
 * so that a slow writer upstream never stalls the requests in flight;
 * the engine checks each line and makes it an item: "id" (or
 * "custom_id"), "body" (or "params"), "endpoint" (or "url"), "method",
 * checked as qb-pack checks them, and its model and estimated tokens.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "base/xmem.h"
#include "json/jsonl.h"
#include "provider/provider.h"
#include "record/item.h"
#include "sync/syncarr.h"
#include "sync/syncin.h"
#include "sync/syncint.h"
#include "sync/syncitem.h"

/* The queue holds at most this many lines, or bytes (one line at least). */
#define QLINES	256
#define QBYTES	((size_t)64 << 20)

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

static struct sync_item *mkitem(struct sync *s, struct sync_line *l);

/*
 * Queue a line (p NULL: none) or news for the engine, waiting for room.
 * Returns 0, or -1 when the engine has asked the thread to end. The
 * engine is woken under the lock, so that once it has set quit under it,
 * no wakeup can touch its multi handle.
 */
static int
push(struct sync_in *in, int kind, const char *file, unsigned long lineno,
    const char *p, size_t len, int err)
{
	struct sync_line *l = xcalloc(1, sizeof(*l));

	l->kind = kind;
	l->file = file;
	l->lineno = lineno;
	l->err = err;
	l->at = qtime_mono();
	if (p != NULL) {
		l->p = xstrndup(p, len);
		l->len = len;
	}
	pthread_mutex_lock(&in->mu);
	in->inpush = 1;
	while (!in->quit && in->n > 0 &&
	    (in->n >= QLINES || in->bytes + len > QBYTES))
		pthread_cond_wait(&in->room, &in->mu);
	in->inpush = 0;
	if (in->quit) {
		pthread_mutex_unlock(&in->mu);
		free(l->p);
		free(l);
		return -1;
	}
	if (in->tail != NULL)
		in->tail->next = l;
	else
		in->head = l;
	in->tail = l;
	in->n++;
	in->bytes += len;
	curl_multi_wakeup(in->multi);
	pthread_mutex_unlock(&in->mu);
	return 0;
}

static void *
reader(void *arg)
{
	struct sync_in *in = arg;
	struct jsonl_reader r;
	char *line;
	size_t len;
	int i, ch, rc = 0;

	for (i = 0; rc == 0 && in->files[i] != NULL; i++) {
		if (jsonl_open(&r, in->files[i]) == -1) {
			in->names[i] = xstrdup(in->files[i]);
			rc = push(in, SYNC_L_NOINPUT, in->names[i], 0, NULL, 0,
			    errno);
			continue;
		}
		/* Published to the engine by the queue's lock. */
		in->names[i] = xstrdup(r.name);
		while (rc == 0 && (ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
			if (ch == JSONL_IOERR) {
				rc = push(in, SYNC_L_IOERR, in->names[i], r.lineno,
				    NULL, 0, 0);
				break;
			}
			rc = push(in, ch == JSONL_BAD ? SYNC_L_BAD : SYNC_L_LINE,
			    in->names[i], r.lineno, ch == JSONL_BAD ? NULL : line,
			    len, 0);
		}
		jsonl_close(&r);
	}
	pthread_mutex_lock(&in->mu);
	in->eof = 1;
	if (!in->quit)
		curl_multi_wakeup(in->multi);
	pthread_mutex_unlock(&in->mu);
	return NULL;
}

int
syncin_start(struct sync *s, char **files)
{
	struct sync_in *in;
	struct stat st;
	size_t n;
	int mu = 0, room = 0;

	in = xcalloc(1, sizeof(*in));
	/* A regular file is read to its end soon; a pipe may never end. */
	for (n = 0; files[n] != NULL; n++)
		if ((strcmp(files[n], "-") == 0 ? fstat(STDIN_FILENO, &st) :
		    stat(files[n], &st)) == 0 && !S_ISREG(st.st_mode))
			in->mayblock = 1;
	in->files = files;
	in->names = xcalloc(n + 1, sizeof(*in->names));
	in->nnames = n;
	in->multi = s->multi;
	if ((mu = pthread_mutex_init(&in->mu, NULL) == 0) &&
	    (room = pthread_cond_init(&in->room, NULL) == 0) &&
	    pthread_create(&in->th, NULL, reader, in) == 0) {
		s->in = in;
		return 0;
	}
	/* Nothing was read: no item is lost. */
	if (room)
		pthread_cond_destroy(&in->room);
	if (mu)
		pthread_mutex_destroy(&in->mu);
	free(in->names);
	free(in);
	return qb_fail(QB_EX_OSERR, "cannot start the input thread");
}

int
syncin_stop(struct sync *s)
{
	struct sync_in *in = s->in;
	struct sync_line *l;
	size_t i;
	int gone;

	pthread_mutex_lock(&in->mu);
	in->quit = 1;
	pthread_cond_broadcast(&in->room);
	gone = in->eof || in->inpush || !in->mayblock;
	pthread_mutex_unlock(&in->mu);
	if (!gone) {
		/*
		 * Blocked in a read of a pipe that may never close: left to
		 * end with the process. It no longer touches the engine, and
		 * what it holds (in) stays allocated.
		 */
		pthread_detach(in->th);
		return 0;
	}
	pthread_join(in->th, NULL);
	while ((l = in->head) != NULL) {
		in->head = l->next;
		free(l->p);
		free(l);
	}
	for (i = 0; i < in->nnames; i++)
		free(in->names[i]);
	free(in->names);
	pthread_mutex_destroy(&in->mu);
	pthread_cond_destroy(&in->room);
	free(in);
	s->in = NULL;
	return 1;
}

int
syncin_take(struct sync *s, size_t room)
{
	struct sync_in *in = s->in;
	struct sync_line *l, *got = NULL;
	struct sync_item *it;
	int over;

	pthread_mutex_lock(&in->mu);
	if (room > 0 && in->head != NULL) {
		got = in->head;
		for (l = got;; l = l->next) {
			in->n--;
			in->bytes -= l->len;
			if (--room == 0 || l->next == NULL)
				break;
		}
		in->head = l->next;
		l->next = NULL;
		if (in->head == NULL)
			in->tail = NULL;
		pthread_cond_broadcast(&in->room);
	}
	over = in->eof && in->head == NULL;
	pthread_mutex_unlock(&in->mu);
	while ((l = got) != NULL) {
		got = l->next;
		if (s->halt)
			l->kind = -1;	/* after the line --strict stopped at */
		switch (l->kind) {
		case SYNC_L_LINE:
			if ((it = mkitem(s, l)) != NULL &&
			    !syncarr_take(s, it))
				syncitem_add(&s->wait, it, 0);
			break;
		case SYNC_L_BAD:	/* reported by the reader */
			s->nbad++;
			break;
		case SYNC_L_NOINPUT:
			errno = l->err;
			qb_warnsys("%s", l->file);
			s->noinput = 1;
			break;
		case SYNC_L_IOERR:	/* reported by the reader */
			s->ioerr = 1;
			break;
		}
		if (l->kind == SYNC_L_BAD && s->o->strict && !s->halt) {
			qb_warn("stopped reading at the first bad line (--strict)");
			s->halt = 1;
		}
		free(l->p);
		free(l);
	}
	return over;
}

static struct sync_item *
bad(struct sync *s, const struct sync_line *l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static struct sync_item *
bad(struct sync *s, const struct sync_line *l, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	qb_lwarn(l->file, l->lineno, "%s", msg);
	s->nbad++;
	if (s->o->strict && !s->halt) {
		qb_warn("stopped reading at the first bad line (--strict)");
		s->halt = 1;
	}
	return NULL;
}

static struct sync_model *
model(struct sync *s, const char *name)
{
	struct sync_model *m;
	size_t i;

	for (i = 0; i < s->nmodels; i++)
		if (strcmp(s->models[i]->name, name) == 0)
			return s->models[i];
	s->models = xreallocarray(s->models, s->nmodels + 1, sizeof(*s->models));
	m = s->models[s->nmodels++] = xcalloc(1, sizeof(*m));
	m->name = xstrdup(name);
	m->rl = ratelim_new(s->o->concurrency, s->o->rpm, s->o->tpm);
	return m;
}

/*
 * The URL of endpoint. An OpenAI-style base URL holds the API version
 * (…/v1: qb-providers(7), OPENAI), as the batch paths assume
 * ("/batches"), so "/v1/chat/completions" is "/chat/completions" under
 * it; Anthropic's base holds none and its paths carry /v1 (ANTHROPIC).
 */
static char *
url(const struct sync *s, const char *endpoint)
{
	struct buf b = BUF_INIT;

	if (s->p->line_format != PROVIDER_LINE_ANTHROPIC &&
	    strncmp(endpoint, "/v1/", 4) == 0)
		endpoint += 3;
	buf_printf(&b, "%s%s%s", s->h.base, endpoint, s->query);
	return b.p;
}

/* Check one line and make it an item, or report it; NULL then. */
static struct sync_item *
mkitem(struct sync *s, struct sync_line *l)
{
	struct jscan *sc = &s->scan;
	struct sync_item *it;
	struct item item;
	const char *id, *ep;
	char err[256];
	int isnew;

	if (item_check(sc, l->p, l->len, s->p, &item, err, sizeof(err)) == -1)
		return bad(s, l, "%s", err);
	id = item.id;
	ep = item.endpoint != NULL ? item.endpoint : s->p->endpoint;
	/* One result per id: a second item with it would get a second one. */
	idmap_put(&s->ids, id, item.idlen, &isnew);
	if (!isnew)
		return bad(s, l, "duplicate id \"%s\"; only its first item is "
		    "sent", id);

	it = xcalloc(1, sizeof(*it));
	it->id = xstrdup(id);
	it->boff = sc->span[item.ibody].off;
	it->blen = sc->span[item.ibody].len;
	it->url = url(s, ep);
	it->defep = item.endpoint != NULL ? NULL : ep;
	it->m = model(s, item.model);
	/* As qb-pack estimates: characters of the body's strings / 4. */
	it->tokens = (jscan_string_chars(l->p + it->boff, it->blen) + 3) / 4;
	it->line = l->p;		/* taken over */
	l->p = NULL;
	it->len = l->len;
	it->file = l->file;
	it->lineno = l->lineno;
	it->deadline = s->o->deadline > 0 ? l->at + s->o->deadline : 0;
	it->should_retry = -1;
	s->nitems++;
	return it;
}
