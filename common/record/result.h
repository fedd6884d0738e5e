/*
 * result.h: provider result lines to one normalised result record, and
 * the outcome (done, retry, dead) each result calls for. One entry point
 * takes any result line; a parser per provider line format does the work.
 * Values that need not change (response bodies) stay spans of the line.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_RESULT_H
#define QB_RESULT_H

#include <stddef.h>
#include <yajl/yajl_gen.h>

#include "json/jscan.h"
#include "json/jtree.h"

enum result_kind { RESULT_OPENAI, RESULT_ANTHROPIC, RESULT_QB };
/* The status words of a result record (qb(7) RECORD FORMATS), plus
 * "missing". */
enum result_status { RESULT_SUCCEEDED, RESULT_ERRORED, RESULT_CANCELED,
	RESULT_EXPIRED, RESULT_MISSING };
enum result_outcome { OUTCOME_DONE, OUTCOME_RETRY, OUTCOME_DEAD };

/*
 * A normalised result. Strings are NUL-terminated, NULL when absent, and
 * point into the parser (valid until its next call) or, for results the
 * caller builds itself, wherever the caller keeps them. Spans (off, len)
 * index text; len 0 means absent (written as null).
 */
struct result {
	enum result_kind	 kind;
	enum result_status	 status;
	enum result_outcome	 outcome;
	const char		*id;		/* custom_id (or a qb record's id) */
	size_t			 idlen;
	long long		 http_status;	/* -1: none */
	const char		*text;		/* the line the spans index */
	size_t			 resp_off, resp_len;	/* response body (Anthropic: message) */
	size_t			 err_off, err_len;	/* a qb record's error, copied as is */
	size_t			 det_off, det_len;	/* Anthropic error details */
	const char		*etype, *ecode, *emsg, *eparam;
	const char		*request_id;
	const char		*batch_id;
	const char		*model;		/* model named in the response */
	long long		 in_tok, out_tok;	/* tokens; -1: no usage */
	int			 account;	/* an account-level error (billing,
						   quota, permission): not the item's fault */
};

/* Zero it (memset) before first use. */
struct result_parser {
	struct jscan	 line;	/* the whole line: every member at depth 1, at
				   depth 2 those of error, response, result and
				   usage; callers may inspect it */
	struct jscan	 sub;	/* a response body or an error, scanned again */
};

/* Free the parser's buffers (the strings of results it made die with
 * them); it can be used again. */
void result_parser_free(struct result_parser *p);

/*
 * Parse the len bytes at line (NUL-terminated at len, as jsonl_next
 * gives it) into *r, whatever the provider:
 *   {"custom_id","response","error"}  OpenAI, OpenAI-compatible, vLLM
 *                                      (qb-providers(7), OPENAI "Output
 *                                      and error files");
 *   {"custom_id","result"}             Anthropic (ANTHROPIC "Results");
 *   {"id","status",...}                a qb result record (qb(7) RECORD
 *                                      FORMATS).
 * The outcome: an HTTP status decides first (result_http_outcome), so a
 * line with "error": null and a 400 inside is dead; then the error:
 * batch_expired gives status expired, batch_cancelled canceled, both
 * retry; any other code goes by result_error_outcome. Anthropic results
 * go by result.type, an errored one by its inner error type. A qb
 * record with "account_error": true (result_emit's mark) is a retry.
 * Returns 0 with *r filled; 1 when the line is a JSON object but none of
 * these (p->line holds its scan, so the caller can look for other record
 * kinds); -1 with a one-line reason in err (errlen bytes) when the line is
 * not JSON, not an object, or a result with fields of the wrong shape.
 */
int result_parse(struct result_parser *p, const char *line, size_t len,
    struct result *r, char *err, size_t errlen);

/*
 * A synchronous answer (qb-submit --sync) as a result: HTTP status
 * status and the len bytes of its body at body (NUL-terminated at len;
 * may be NULL). Status word and outcome go by the status
 * (result_http_outcome); 401, 402 and 403, and the account-level errors
 * result_parse knows, set r->account (outcome retry: the key or the
 * account, not the request). When the body is a JSON object it is the
 * response, and its usage and, for an error, "error" members fill r
 * (strings in p, valid until its next use). Returns 0; or -1 when the
 * body is not a JSON object: r then has no response and no usage.
 */
int result_answer(struct result_parser *p, const char *body, size_t len,
    long long status, struct result *r);

/*
 * The outcome an HTTP status calls for: 2xx done; 408, 409, 429 and 5xx
 * (529 included) retry, as the providers' SDKs retry (qb-providers(7),
 * OPENAI "Errors", ANTHROPIC "Errors"); any other status dead: sending
 * the same request again cannot work.
 */
enum result_outcome result_http_outcome(long long status);

/*
 * The outcome for an error that came without an HTTP status, from its
 * code and type (either may be NULL): the transient words server_error,
 * rate_limit_exceeded, rate_limit_error, timeout, timeout_error,
 * api_error, overloaded_error (qb-providers(7), OPENAI "Errors",
 * ANTHROPIC "Results" and "Errors") and qb's connection_error (a
 * synchronous call that got no answer) retry; every other error, and
 * none at all, is dead.
 */
enum result_outcome result_error_outcome(const char *type, const char *code);

/* The words for a status ("succeeded" ...) and an outcome ("done" ...):
 * static strings. */
const char *result_status_word(enum result_status s);
const char *result_outcome_word(enum result_outcome o);

/*
 * Write the members of r's result record except "id", inside a map the
 * caller opened on g: status, http_status, error ({type, code, message,
 * param}, plus Anthropic's details; a qb record's error object as it
 * was), usage ({input_tokens, output_tokens}), request_id, batch_id (the
 * batch_id argument when r has none; may be NULL), then response, copied
 * as bytes from r->text. Absent values are written as null. r and its
 * text must still be valid; nothing is kept. Errors: none (a generator
 * misused by the caller dies with QB_EX_SOFTWARE, as jout.h does).
 */
void result_emit(yajl_gen g, const struct result *r, const char *batch_id);

#endif
