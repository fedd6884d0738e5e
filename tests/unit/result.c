/*
 * Unit tests for result.c: result lines of OpenAI, vLLM, Anthropic and qb
 * to normalised results, the done/retry/dead classification, and the
 * record members result_emit writes.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <string.h>

#include "json/jout.h"
#include "record/result.h"
#include "tap.h"

static struct result_parser P;
static struct result R;
static char err[256];

/* Parse s (a NUL-terminated line) into R; returns result_parse's value. */
static int
parse(const char *s)
{
	return result_parse(&P, s, strlen(s), &R, err, sizeof(err));
}

/* "status/outcome/http/in/out" of R, for one-line comparisons. */
static const char *
brief(void)
{
	static char b[128];

	snprintf(b, sizeof(b), "%s/%s/%lld/%lld/%lld",
	    result_status_word(R.status), result_outcome_word(R.outcome),
	    R.http_status, R.in_tok, R.out_tok);
	return b;
}

/* The members result_emit writes for R, as one JSON object. */
static const char *
emitted(const char *batch_id)
{
	static char b[1024];
	const unsigned char *p;
	size_t n;
	yajl_gen g = jout_new();

	jout_open(g);
	result_emit(g, &R, batch_id);
	jout_close(g);
	yajl_gen_get_buf(g, &p, &n);
	snprintf(b, sizeof(b), "%.*s", (int)n, (const char *)p);
	yajl_gen_free(g);
	return b;
}

static void
classification(void)
{
	static const long long done[] = { 200, 201, 299 };
	static const long long retry[] = { 408, 409, 429, 500, 502, 503, 529, 599 };
	static const long long dead[] = { 100, 302, 400, 401, 402, 403, 404, 413,
	    422, 600 };
	size_t i;
	int good = 1;

	for (i = 0; i < sizeof(done) / sizeof(done[0]); i++)
		good &= result_http_outcome(done[i]) == OUTCOME_DONE;
	TAP_OK(good, "http: 2xx done");
	good = 1;
	for (i = 0; i < sizeof(retry) / sizeof(retry[0]); i++)
		good &= result_http_outcome(retry[i]) == OUTCOME_RETRY;
	TAP_OK(good, "http: 408 409 429 5xx 529 retry");
	good = 1;
	for (i = 0; i < sizeof(dead) / sizeof(dead[0]); i++)
		good &= result_http_outcome(dead[i]) == OUTCOME_DEAD;
	TAP_OK(good, "http: other statuses dead");
	TAP_OK(result_error_outcome(NULL, "server_error") == OUTCOME_RETRY &&
	    result_error_outcome(NULL, "rate_limit_exceeded") == OUTCOME_RETRY &&
	    result_error_outcome(NULL, "timeout") == OUTCOME_RETRY &&
	    result_error_outcome("overloaded_error", NULL) == OUTCOME_RETRY &&
	    result_error_outcome("api_error", NULL) == OUTCOME_RETRY &&
	    result_error_outcome("rate_limit_error", NULL) == OUTCOME_RETRY,
	    "errors: transient codes and types retry");
	TAP_OK(result_error_outcome("invalid_request_error", NULL) == OUTCOME_DEAD &&
	    result_error_outcome(NULL, "invalid_json_line") == OUTCOME_DEAD &&
	    result_error_outcome(NULL, NULL) == OUTCOME_DEAD,
	    "errors: others dead");
}

static void
openai(void)
{
	TAP_OK(parse("{\"id\":\"b1\",\"custom_id\":\"c1\",\"response\":{\"status_code\":200,"
	    "\"request_id\":\"q1\",\"body\":{\"model\":\"gpt-4o-2024-05-13\",\"usage\":"
	    "{\"prompt_tokens\":12,\"completion_tokens\":3,\"total_tokens\":15}}},"
	    "\"error\":null}") == 0, "openai: chat line parsed");
	tap_is(R.id, "c1", "openai: id is custom_id, not the line's id");
	tap_is(brief(), "succeeded/done/200/12/3", "openai: chat usage");
	tap_is(R.model, "gpt-4o-2024-05-13", "openai: model of the response");
	tap_is(R.request_id, "q1", "openai: request_id");

	parse("{\"custom_id\":\"c2\",\"response\":{\"status_code\":200,\"body\":"
	    "{\"object\":\"response\",\"usage\":{\"input_tokens\":9,\"output_tokens\":4}}}}");
	tap_is(brief(), "succeeded/done/200/9/4", "openai: Responses API usage");
	parse("{\"custom_id\":\"c3\",\"response\":{\"status_code\":200,\"body\":"
	    "{\"object\":\"list\",\"usage\":{\"prompt_tokens\":8,\"total_tokens\":8}}}}");
	tap_is(brief(), "succeeded/done/200/8/0", "openai: embeddings usage");

	/* An error-file line with "error": null and a 400 inside. */
	parse("{\"id\":\"br1\",\"custom_id\":\"k1\",\"response\":{\"status_code\":400,"
	    "\"request_id\":\"q1\",\"body\":{\"error\":{\"message\":\"max_tokens is too "
	    "large\",\"type\":\"invalid_request_error\",\"param\":\"max_tokens\","
	    "\"code\":\"context_length_exceeded\"}}},\"error\":null}");
	tap_is(brief(), "errored/dead/400/-1/-1", "http-error-in-response: a 400 with error null is dead");
	tap_is(emitted(NULL), "{\"status\":\"errored\",\"http_status\":400,\"error\":"
	    "{\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\","
	    "\"message\":\"max_tokens is too large\",\"param\":\"max_tokens\"},\"usage\":"
	    "null,\"request_id\":\"q1\",\"batch_id\":null,\"response\":{\"error\":"
	    "{\"message\":\"max_tokens is too large\",\"type\":\"invalid_request_error\","
	    "\"param\":\"max_tokens\",\"code\":\"context_length_exceeded\"}}}",
	    "http-error-in-response: type, code, message, param kept; response copied");
	parse("{\"custom_id\":\"k2\",\"response\":{\"status_code\":429,\"body\":{\"error\":"
	    "{\"message\":\"slow\",\"type\":\"requests\",\"param\":null,\"code\":"
	    "\"rate_limit_exceeded\"}}},\"error\":null}");
	tap_is(brief(), "errored/retry/429/-1/-1", "openai: 429 retry");

	/* Requests an expired or cancelled batch never ran (qb-providers(7),
	 * OPENAI "Expired and cancelled batches"). */
	parse("{\"id\":\"r2\",\"custom_id\":\"x2\",\"response\":null,\"error\":{\"code\":"
	    "\"batch_expired\",\"message\":\"not run\"}}");
	tap_is(brief(), "expired/retry/-1/-1/-1", "openai: batch_expired is expired, retry");
	tap_is(emitted("batch_9"), "{\"status\":\"expired\",\"http_status\":null,\"error\":"
	    "{\"type\":null,\"code\":\"batch_expired\",\"message\":\"not run\",\"param\":null},"
	    "\"usage\":null,\"request_id\":null,\"batch_id\":\"batch_9\",\"response\":null}",
	    "openai: expired record, batch_id from the caller");
	parse("{\"custom_id\":\"x3\",\"response\":null,\"error\":{\"code\":"
	    "\"batch_cancelled\",\"message\":\"\"}}");
	tap_is(brief(), "canceled/retry/-1/-1/-1", "openai: batch_cancelled is canceled, retry");
	parse("{\"custom_id\":\"x4\",\"response\":null,\"error\":{\"code\":\"server_error\"}}");
	tap_is(brief(), "errored/retry/-1/-1/-1", "openai: server_error without HTTP retry");
	parse("{\"custom_id\":\"x5\",\"response\":null,\"error\":{\"code\":\"invalid_json_line\"}}");
	tap_is(brief(), "errored/dead/-1/-1/-1", "openai: other codes without HTTP dead");
	parse("{\"custom_id\":\"x6\",\"response\":{\"status_code\":200,\"body\":{}},"
	    "\"error\":{\"code\":\"server_error\"}}");
	tap_is(brief(), "succeeded/done/200/-1/-1", "openai: status_code decides before error");
}

static void
vllm(void)
{
	parse("{\"id\":\"vllm-1\",\"custom_id\":\"v1\",\"response\":{\"status_code\":400,"
	    "\"request_id\":\"vllm-batch-1\",\"body\":null},\"error\":\"too long\"}");
	tap_is(brief(), "errored/dead/400/-1/-1", "vllm: 400 with a string error dead");
	tap_is(R.emsg, "too long", "vllm: the string is the message");
	parse("{\"custom_id\":\"v2\",\"response\":{\"status_code\":500,\"body\":null},"
	    "\"error\":\"engine dead\"}");
	tap_is(brief(), "errored/retry/500/-1/-1", "vllm: 500 retry");
	parse("{\"custom_id\":\"v3\",\"response\":{\"id\":\"cmpl-1\",\"choices\":[],"
	    "\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1}},\"error\":null}");
	tap_is(brief(), "succeeded/done/-1/2/1", "vllm: old bare completion done");
}

static void
anthropic(void)
{
	parse("{\"custom_id\":\"a1\",\"result\":{\"type\":\"succeeded\",\"message\":"
	    "{\"model\":\"claude-x\",\"id\":\"msg_1\",\"usage\":{\"input_tokens\":14,"
	    "\"cache_read_input_tokens\":0,\"output_tokens\":5}}}}");
	tap_is(brief(), "succeeded/done/-1/14/5", "anthropic: succeeded, message usage");
	tap_is(R.model, "claude-x", "anthropic: model");
	TAP_OK(parse("{\"custom_id\":\"probe-bad\",\"result\":{\"type\":\"errored\",\"error\":"
	    "{\"type\":\"error\",\"error\":{\"details\":{\"error_visibility\":\"user_facing\"},"
	    "\"type\":\"invalid_request_error\",\"message\":\"messages: at least one\"},"
	    "\"request_id\":null}}}") == 0, "anthropic: errored parsed");
	tap_is(brief(), "errored/dead/-1/-1/-1", "anthropic: invalid_request_error dead");
	tap_is(emitted(NULL), "{\"status\":\"errored\",\"http_status\":null,\"error\":"
	    "{\"type\":\"invalid_request_error\",\"code\":null,\"message\":\"messages: at "
	    "least one\",\"param\":null,\"details\":{\"error_visibility\":\"user_facing\"}},"
	    "\"usage\":null,\"request_id\":null,\"batch_id\":null,\"response\":null}",
	    "anthropic: doubly nested type, message and details kept");
	parse("{\"custom_id\":\"a2\",\"result\":{\"type\":\"errored\",\"error\":{\"type\":"
	    "\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"},"
	    "\"request_id\":\"workerreq_1\"}}}");
	tap_is(brief(), "errored/retry/-1/-1/-1", "anthropic: overloaded_error retry");
	tap_is(R.request_id, "workerreq_1", "anthropic: request_id string kept");
	parse("{\"custom_id\":\"a3\",\"result\":{\"type\":\"errored\",\"error\":{\"type\":"
	    "\"error\",\"error\":{\"type\":\"some_new_error\",\"message\":\"?\"}}}}");
	tap_is(brief(), "errored/dead/-1/-1/-1", "anthropic: unknown error type dead, no crash");
	parse("{\"custom_id\":\"a4\",\"result\":{\"type\":\"expired\"}}");
	tap_is(brief(), "expired/retry/-1/-1/-1", "anthropic: expired retry");
	parse("{\"custom_id\":\"a5\",\"result\":{\"type\":\"canceled\"}}");
	tap_is(brief(), "canceled/retry/-1/-1/-1", "anthropic: canceled retry");
	TAP_OK(parse("{\"custom_id\":\"a6\",\"result\":{\"type\":\"odd\"}}") == -1 &&
	    strstr(err, "unknown result type") != NULL, "anthropic: unknown result type refused");
}

static void
qb(void)
{
	parse("{\"id\":\"s1\",\"status\":\"errored\",\"http_status\":503,\"error\":"
	    "{\"type\":\"server_error\",\"code\":null,\"message\":\"x\",\"param\":null,"
	    "\"extra\":1},\"usage\":{\"input_tokens\":3,\"output_tokens\":0},"
	    "\"batch_id\":\"b7\"}");
	tap_is(brief(), "errored/retry/503/3/0", "qb: http_status decides");
	tap_is(emitted("other"), "{\"status\":\"errored\",\"http_status\":503,\"error\":"
	    "{\"type\":\"server_error\",\"code\":null,\"message\":\"x\",\"param\":null,"
	    "\"extra\":1},\"usage\":{\"input_tokens\":3,\"output_tokens\":0},"
	    "\"request_id\":null,\"batch_id\":\"b7\",\"response\":null}",
	    "qb: error object copied whole, own batch_id kept");
	parse("{\"id\":\"s2\",\"status\":\"errored\",\"error\":{\"code\":\"timeout\"}}");
	tap_is(brief(), "errored/retry/-1/-1/-1", "qb: no http_status: error code decides");
	parse("{\"id\":\"s3\",\"status\":\"succeeded\",\"http_status\":null}");
	tap_is(brief(), "succeeded/done/-1/-1/-1", "qb: succeeded done");
	TAP_OK(parse("{\"id\":\"s4\",\"status\":\"fine\"}") == -1,
	    "qb: unknown status word refused");
}

static void
others(void)
{
	TAP_OK(parse("{\"custom_id\":\"r1\",\"method\":\"POST\",\"url\":\"/v1/x\","
	    "\"body\":{}}") == 1, "a request line is not a result");
	TAP_OK(parse("{\"batch_id\":\"b\",\"file\":\"f\",\"results\":[]}") == 1 &&
	    jscan_find(&P.line, -1, "batch_id") >= 0, "a job record is not a result; scan kept");
	TAP_OK(parse("[1]") == -1 && strcmp(err, "not a JSON object") == 0,
	    "an array is not an object");
	TAP_OK(parse("{\"custom_id\":\"r1\",\"response\":{") == -1 &&
	    strstr(err, "parse error") != NULL, "a truncated line: parse error");
	TAP_OK(parse("{\"custom_id\":\"\",\"error\":{}}") == -1, "an empty id refused");
	TAP_OK(parse("{\"custom_id\":\"r1\",\"response\":{\"status_code\":\"200\"}}") == -1,
	    "a status_code that is not a number refused");
	TAP_OK(parse("{\"custom_id\":\"r1\",\"response\":null,\"error\":null}") == -1 &&
	    strcmp(err, "neither a response nor an error") == 0,
	    "neither response nor error refused");
	tap_is(result_status_word(RESULT_MISSING), "missing", "status word missing");
}

int
main(void)
{
	memset(&P, 0, sizeof(P));
	classification();
	openai();
	vllm();
	anthropic();
	qb();
	others();
	result_parser_free(&P);
	return tap_done();
}
