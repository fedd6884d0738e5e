/*
 * result.c: result lines of every provider to one result record, and the
 * classification into done, retry and dead.
 *
 * Each line is scanned once with jscan_parse (depths 1 and 2); the response
 * body, the Anthropic message or error is scanned a second time on its
 * own to reach usage and the error members one level further down.
 * Nothing is allocated per line: the two scans reuse their buffers.
 * SPDX-License-Identifier: ISC
 */
#define _GNU_SOURCE	/* strcasestr */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/msg.h"
#include "base/num.h"
#include "json/jout.h"
#include "record/result.h"

static int
inlist(const char *s, const char *const *list)
{
	if (s == NULL)
		return 0;
	for (; *list != NULL; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* The type of member key of parent, or -1 when absent. */
static int
mtype(const struct jscan *s, int parent, const char *key, int *at)
{
	*at = jscan_find(s, parent, key);
	return *at < 0 ? -1 : (int)s->span[*at].type;
}

static const char *
mstr(const struct jscan *s, int parent, const char *key)
{
	return jscan_sval(s, jscan_find(s, parent, key));
}

/* The non-negative integer member key of parent (text holds the scanned
 * bytes), or -1 when absent or not such a number. */
static long long
mint(const struct jscan *s, const char *text, int parent, const char *key)
{
	int i = jscan_find(s, parent, key);
	const char *errstr;
	char b[32];
	long long v;

	if (i < 0 || s->span[i].type != JT_NUMBER || s->span[i].len >= sizeof(b))
		return -1;
	memcpy(b, text + s->span[i].off, s->span[i].len);
	b[s->span[i].len] = '\0';
	v = num_strtonum(b, 0, LLONG_MAX, &errstr);
	return errstr == NULL ? v : -1;
}

/*
 * Token counts from the "usage" member of the object scanned in s:
 * input_tokens/output_tokens (Responses API, Anthropic, qb records) or
 * prompt_tokens/completion_tokens (chat, completions; embeddings have
 * no completion count, which then is 0).
 */
static void
usage(struct result *r, const struct jscan *s, const char *text)
{
	int u;

	if (mtype(s, -1, "usage", &u) != JT_MAP)
		return;
	if ((r->in_tok = mint(s, text, u, "input_tokens")) < 0)
		r->in_tok = mint(s, text, u, "prompt_tokens");
	if ((r->out_tok = mint(s, text, u, "output_tokens")) < 0)
		r->out_tok = mint(s, text, u, "completion_tokens");
	if (r->in_tok < 0 && r->out_tok < 0)
		return;
	if (r->in_tok < 0)
		r->in_tok = 0;
	if (r->out_tok < 0)
		r->out_tok = 0;
}

/* Scan the span (off, len) of the line on its own into p->sub. */
static int
rescan(struct result_parser *p, const struct result *r, size_t off, size_t len,
    char *err, size_t errlen)
{
	return jscan_parse(&p->sub, r->text + off, len, err, errlen);
}

/* The error members type, code, message, param of object e in s; each
 * one found replaces what r had. */
static void
errfields(struct result *r, const struct jscan *s, int e)
{
	const char *v;

	if ((v = mstr(s, e, "type")) != NULL)
		r->etype = v;
	if ((v = mstr(s, e, "code")) != NULL)
		r->ecode = v;
	if ((v = mstr(s, e, "message")) != NULL)
		r->emsg = v;
	if ((v = mstr(s, e, "param")) != NULL)
		r->eparam = v;
}

static void account_level(struct result *);

/*
 * The response object at span ir of an OpenAI line: its request_id, its
 * status_code and body, or (an old vLLM line, when the line has no error)
 * the bare completion as the body. The body's usage and model fill r, and
 * for a status that is not 2xx its error members. *ib is the body's span,
 * or -1 for none. Returns 0, or -1 with a reason in err.
 */
static int
openai_response(struct result_parser *p, struct result *r, int ir, int et,
    int *ib, char *err, size_t errlen)
{
	const struct jscan *s = &p->line;
	const struct json_span *b;
	int isc, bt, e;

	*ib = -1;
	r->request_id = mstr(s, ir, "request_id");
	if (mtype(s, ir, "status_code", &isc) != -1) {
		r->http_status = mint(s, r->text, ir, "status_code");
		if (r->http_status < 100 || r->http_status > 999)
			return qb_reason(err, errlen,
			    "\"response.status_code\" is not an HTTP status");
		if (mtype(s, ir, "body", ib) != JT_MAP)
			*ib = -1;
	} else if (et == -1 || et == JT_NULL)
		*ib = ir;
	if (*ib < 0)
		return 0;
	b = &s->span[*ib];
	r->resp_off = b->off;
	r->resp_len = b->len;
	if (rescan(p, r, b->off, b->len, err, errlen) == -1)
		return -1;
	usage(r, &p->sub, r->text + b->off);
	r->model = mstr(&p->sub, -1, "model");
	if (r->http_status < 200 || r->http_status > 299) {
		if ((bt = mtype(&p->sub, -1, "error", &e)) == JT_MAP)
			errfields(r, &p->sub, e);
		else if (bt == JT_STRING)
			r->emsg = jscan_sval(&p->sub, e);
	}
	return 0;
}

/*
 * An OpenAI line's status and outcome: by its HTTP status; else a body
 * without one succeeded; else by its error (et: the error member's type),
 * for a request that never ran (qb-providers(7), OPENAI "Output and error
 * files", "Expired and cancelled batches"). Returns 0, or -1 with a reason
 * in err when the line has neither a response nor an error.
 */
static int
openai_outcome(struct result *r, int ib, int et, char *err, size_t errlen)
{
	static const char *const cancelled[] = { "batch_cancelled",
	    "batch_canceled", "cancelled", "canceled", NULL };

	if (r->http_status >= 0) {
		r->status = r->http_status >= 200 && r->http_status <= 299 ?
		    RESULT_SUCCEEDED : RESULT_ERRORED;
		r->outcome = result_http_outcome(r->http_status);
	} else if (ib >= 0) {
		r->status = RESULT_SUCCEEDED;
		r->outcome = OUTCOME_DONE;
	} else if (et == JT_MAP || et == JT_STRING) {
		if (r->ecode != NULL && strcmp(r->ecode, "batch_expired") == 0) {
			r->status = RESULT_EXPIRED;
			r->outcome = OUTCOME_RETRY;
		} else if (inlist(r->ecode, cancelled)) {
			r->status = RESULT_CANCELED;
			r->outcome = OUTCOME_RETRY;
		} else {
			r->status = RESULT_ERRORED;
			r->outcome = result_error_outcome(r->etype, r->ecode);
		}
	} else
		return qb_reason(err, errlen, "neither a response nor an error");
	/* A quota, billing or permission error is the account's. */
	if (r->status == RESULT_ERRORED)
		account_level(r);
	return 0;
}

/*
 * OpenAI, OpenAI-compatible and vLLM lines (qb-providers(7), OPENAI
 * "Output and error files"): response.status_code decides first, so that
 * an error-file line with "error": null and a 400 inside is an error;
 * then the error object (or vLLM's plain string). The error members of
 * response.body.error win over those of a top-level error.
 */
static int
parse_openai(struct result_parser *p, struct result *r, char *err,
    size_t errlen)
{
	const struct jscan *s = &p->line;
	int ir, ie, ib = -1, rt, et;

	rt = mtype(s, -1, "response", &ir);
	et = mtype(s, -1, "error", &ie);
	if (rt != -1 && rt != JT_NULL && rt != JT_MAP)
		return qb_reason(err, errlen, "\"response\" is neither an object nor null");
	if (et != -1 && et != JT_NULL && et != JT_MAP && et != JT_STRING)
		return qb_reason(err, errlen, "\"error\" is neither an object, a string nor null");
	if (et == JT_MAP)
		errfields(r, s, ie);
	else if (et == JT_STRING)
		r->emsg = jscan_sval(s, ie);
	if (rt == JT_MAP &&
	    openai_response(p, r, ir, et, &ib, err, errlen) == -1)
		return -1;
	return openai_outcome(r, ib, et, err, errlen);
}

/*
 * Account-level errors (billing, spend limits, "credit balance is too
 * low") say nothing about the request and should stop the run instead of
 * spending the item's attempts (tests/0110-unit-result.t,
 * tests/5000-qb-reconcile.t): they are recognised here, where an errored
 * result is classified.
 */
static void
account_level(struct result *r)
{
	/* Error types and codes that speak of the account, not the request. */
	static const char *const kinds[] = { "billing_error", "permission_error",
	    "authentication_error", "insufficient_quota", "billing_hard_limit_reached",
	    "account_deactivated", NULL };
	/* Messages that say the same under a generic type. */
	static const char *const words[] = { "credit balance", "billing",
	    "quota", "payment", NULL };
	const char *const *w;

	if ((r->etype && jscan_keyin(r->etype, kinds)) ||
	    (r->ecode && jscan_keyin(r->ecode, kinds)))
		r->account = 1;
	for (w = words; !r->account && r->emsg != NULL && *w != NULL; w++)
		if (strcasestr(r->emsg, *w) != NULL)
			r->account = 1;
	/*
	 * Re-sending cannot work until the account is fixed, and then it
	 * will: a retry, not a dead item.
	 */
	if (r->account)
		r->outcome = OUTCOME_RETRY;
}

/*
 * Anthropic lines (qb-providers(7), ANTHROPIC "Results"): result.type
 * succeeded, errored, canceled or expired. An errored result holds a
 * whole ErrorResponse, so its type and message sit at result.error.error;
 * live data adds "details" there and a request_id (null or a string)
 * beside it. Batch results carry no per-request HTTP status: http_status
 * stays null.
 */
static int
parse_anthropic(struct result_parser *p, struct result *r, char *err,
    size_t errlen)
{
	const struct jscan *s = &p->line;
	const struct json_span *b;
	const char *type;
	int ir, im, ie, ii, id;

	if (mtype(s, -1, "result", &ir) != JT_MAP)
		return qb_reason(err, errlen, "\"result\" is not an object");
	if ((type = mstr(s, ir, "type")) == NULL)
		return qb_reason(err, errlen, "no string \"result.type\"");
	if (strcmp(type, "succeeded") == 0) {
		if (mtype(s, ir, "message", &im) != JT_MAP)
			return qb_reason(err, errlen, "succeeded result without a message object");
		b = &s->span[im];
		r->resp_off = b->off;
		r->resp_len = b->len;
		if (rescan(p, r, b->off, b->len, err, errlen) == -1)
			return -1;
		usage(r, &p->sub, r->text + b->off);
		r->model = mstr(&p->sub, -1, "model");
		r->status = RESULT_SUCCEEDED;
		r->outcome = OUTCOME_DONE;
	} else if (strcmp(type, "errored") == 0) {
		r->status = RESULT_ERRORED;
		if (mtype(s, ir, "error", &ie) == JT_MAP) {
			b = &s->span[ie];
			if (rescan(p, r, b->off, b->len, err, errlen) == -1)
				return -1;
			r->request_id = mstr(&p->sub, -1, "request_id");
			if (mtype(&p->sub, -1, "error", &ii) == JT_MAP) {
				r->etype = mstr(&p->sub, ii, "type");
				r->emsg = mstr(&p->sub, ii, "message");
				if (mtype(&p->sub, ii, "details", &id) != -1) {
					r->det_off = b->off + p->sub.span[id].off;
					r->det_len = p->sub.span[id].len;
				}
			}
		}
		r->outcome = result_error_outcome(r->etype, NULL);
		account_level(r);
	} else if (strcmp(type, "canceled") == 0) {
		r->status = RESULT_CANCELED;
		r->outcome = OUTCOME_RETRY;
	} else if (strcmp(type, "expired") == 0) {
		r->status = RESULT_EXPIRED;
		r->outcome = OUTCOME_RETRY;
	} else
		return qb_reason(err, errlen, "unknown result type \"%.40s\"", type);
	return 0;
}

/*
 * A qb result record (qb(7) RECORD FORMATS), as qb-submit --sync writes
 * it: the status word and the error object are kept as they are;
 * http_status decides first, then the status word.
 */
static int
parse_qb(struct result_parser *p, struct result *r, char *err, size_t errlen)
{
	static const char *const words[] = { "succeeded", "errored",
	    "canceled", "expired", "missing", NULL };
	const struct jscan *s = &p->line;
	const struct json_span *b;
	const char *st;
	int i, t;

	if ((st = mstr(s, -1, "status")) == NULL)
		return qb_reason(err, errlen, "\"status\" is not a string");
	for (i = 0; words[i] != NULL && strcmp(words[i], st) != 0; i++)
		;
	if (words[i] == NULL)
		return qb_reason(err, errlen, "unknown status \"%.40s\"", st);
	r->status = (enum result_status)i;
	if ((t = mtype(s, -1, "http_status", &i)) != -1 && t != JT_NULL) {
		r->http_status = mint(s, r->text, -1, "http_status");
		if (r->http_status < 100 || r->http_status > 999)
			return qb_reason(err, errlen, "\"http_status\" is not an HTTP status");
	}
	if ((t = mtype(s, -1, "error", &i)) != -1 && t != JT_NULL) {
		r->err_off = s->span[i].off;
		r->err_len = s->span[i].len;
		if (t == JT_MAP)
			errfields(r, s, i);
	}
	r->request_id = mstr(s, -1, "request_id");
	r->batch_id = mstr(s, -1, "batch_id");
	usage(r, s, r->text);
	if ((t = mtype(s, -1, "response", &i)) != -1 && t != JT_NULL) {
		b = &s->span[i];
		r->resp_off = b->off;
		r->resp_len = b->len;
		if (t == JT_MAP) {
			if (rescan(p, r, b->off, b->len, err, errlen) == -1)
				return -1;
			r->model = mstr(&p->sub, -1, "model");
		}
	}
	if (r->http_status >= 0)
		r->outcome = result_http_outcome(r->http_status);
	else if (r->status == RESULT_SUCCEEDED)
		r->outcome = OUTCOME_DONE;
	else if (r->status == RESULT_ERRORED) {
		r->outcome = result_error_outcome(r->etype, r->ecode);
		account_level(r);
	} else
		r->outcome = OUTCOME_RETRY;
	/* What result_emit marked so: a 401 of qb-submit --sync, say. */
	if (mtype(s, -1, "account_error", &i) == JT_BOOL &&
	    r->text[s->span[i].off] == 't') {
		r->account = 1;
		r->outcome = OUTCOME_RETRY;
	}
	return 0;
}

int
result_answer(struct result_parser *p, const char *body, size_t len,
    long long status, struct result *r)
{
	char err[256];
	int e, t;

	memset(r, 0, sizeof(*r));
	r->kind = RESULT_QB;
	r->text = body;
	r->http_status = status;
	r->in_tok = r->out_tok = -1;
	r->status = status >= 200 && status <= 299 ? RESULT_SUCCEEDED :
	    RESULT_ERRORED;
	r->outcome = result_http_outcome(status);
	/* The key or the account, not the request: the same key fails all. */
	if (status == 401 || status == 402 || status == 403) {
		r->account = 1;
		r->outcome = OUTCOME_RETRY;
	}
	if (body == NULL || len == 0 ||
	    jscan_parse(&p->sub, body, len, err, sizeof(err)) == -1)
		return -1;
	r->resp_off = 0;
	r->resp_len = len;
	usage(r, &p->sub, body);
	r->model = mstr(&p->sub, -1, "model");
	if (r->status == RESULT_ERRORED) {
		if ((t = mtype(&p->sub, -1, "error", &e)) == JT_MAP)
			errfields(r, &p->sub, e);
		else if (t == JT_STRING)
			r->emsg = jscan_sval(&p->sub, e);
		account_level(r);
	}
	return 0;
}

int
result_parse(struct result_parser *p, const char *line, size_t len,
    struct result *r, char *err, size_t errlen)
{
	/*
	 * Only these members are read below the top level: the others (a
	 * request's body, its meta) must not crowd the top level out of
	 * the scan, whose members a caller may copy on (members.h).
	 */
	static const char *const deep[] = { "error", "response", "result",
	    "usage", NULL };
	const struct jscan *s = &p->line;
	int iid;

	memset(r, 0, sizeof(*r));
	r->text = line;
	r->http_status = r->in_tok = r->out_tok = -1;
	p->line.deep = deep;
	if (jscan_parse(&p->line, line, len, err, errlen) == -1)
		return -1;
	if ((iid = jscan_find(s, -1, "custom_id")) >= 0) {
		if (jscan_find(s, -1, "result") >= 0)
			r->kind = RESULT_ANTHROPIC;
		else if (jscan_find(s, -1, "response") >= 0 ||
		    jscan_find(s, -1, "error") >= 0)
			r->kind = RESULT_OPENAI;
		else
			return 1;
	} else if ((iid = jscan_find(s, -1, "id")) >= 0 &&
	    jscan_find(s, -1, "status") >= 0)
		r->kind = RESULT_QB;
	else
		return 1;
	if ((r->id = jscan_sval(s, iid)) == NULL)
		return qb_reason(err, errlen, "\"%s\" is not a string", s->span[iid].key);
	r->idlen = s->span[iid].slen;
	if (r->idlen == 0 || memchr(r->id, '\0', r->idlen) != NULL)
		return qb_reason(err, errlen, "\"%s\" is empty or holds a NUL",
		    s->span[iid].key);
	switch (r->kind) {
	case RESULT_OPENAI:
		return parse_openai(p, r, err, errlen);
	case RESULT_ANTHROPIC:
		return parse_anthropic(p, r, err, errlen);
	default:
		return parse_qb(p, r, err, errlen);
	}
}

void
result_parser_free(struct result_parser *p)
{
	buf_free(&p->line.strs);
	buf_free(&p->sub.strs);
}

enum result_outcome
result_http_outcome(long long status)
{
	if (status >= 200 && status <= 299)
		return OUTCOME_DONE;
	if (status == 408 || status == 409 || status == 429 ||
	    (status >= 500 && status <= 599))
		return OUTCOME_RETRY;
	return OUTCOME_DEAD;
}

enum result_outcome
result_error_outcome(const char *type, const char *code)
{
	static const char *const transient[] = { "server_error",
	    "rate_limit_exceeded", "rate_limit_error", "timeout",
	    "timeout_error", "api_error", "overloaded_error",
	    "connection_error", NULL };

	if (inlist(code, transient) || inlist(type, transient))
		return OUTCOME_RETRY;
	return OUTCOME_DEAD;
}

const char *
result_status_word(enum result_status s)
{
	static const char *const w[] = { "succeeded", "errored", "canceled",
	    "expired", "missing" };

	return w[s];
}

const char *
result_outcome_word(enum result_outcome o)
{
	static const char *const w[] = { "done", "retry", "dead" };

	return w[o];
}

static void
kraw(yajl_gen g, const char *k, const char *text, size_t off, size_t len)
{
	jout_key(g, k);
	if (len == 0)
		jout_str(g, NULL);
	else
		jout_raw(g, text + off, len);
}

void
result_emit(yajl_gen g, const struct result *r, const char *batch_id)
{
	jout_kstr(g, "status", result_status_word(r->status));
	if (r->http_status >= 0)
		jout_kint(g, "http_status", r->http_status);
	else
		jout_kstr(g, "http_status", NULL);
	if (r->err_len > 0)
		kraw(g, "error", r->text, r->err_off, r->err_len);
	else if (r->etype || r->ecode || r->emsg || r->eparam || r->det_len) {
		jout_key(g, "error");
		jout_open(g);
		jout_kstr(g, "type", r->etype);
		jout_kstr(g, "code", r->ecode);
		jout_kstr(g, "message", r->emsg);
		jout_kstr(g, "param", r->eparam);
		if (r->det_len > 0)
			kraw(g, "details", r->text, r->det_off, r->det_len);
		jout_close(g);
	} else
		jout_kstr(g, "error", NULL);
	jout_key(g, "usage");
	if (r->in_tok >= 0) {
		jout_open(g);
		jout_kint(g, "input_tokens", r->in_tok);
		jout_kint(g, "output_tokens", r->out_tok);
		jout_close(g);
	} else
		jout_str(g, NULL);
	jout_kstr(g, "request_id", r->request_id);
	jout_kstr(g, "batch_id", r->batch_id ? r->batch_id : batch_id);
	kraw(g, "response", r->text, r->resp_off, r->resp_len);
	/* Not the item's fault: later stages need not count it as an attempt. */
	if (r->account)
		jout_kbool(g, "account_error", 1);
}
