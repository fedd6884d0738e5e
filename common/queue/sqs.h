/*
 * sqs.h: an Amazon SQS client over the AWS JSON 1.0 protocol
 * (qb-providers(7), AMAZON SQS), signed by libcurl's CURLOPT_AWS_SIGV4
 * (AMAZON SQS "Signing").
 * Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
 * AWS_SESSION_TOKEN, never from argv, and never appear in a message.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SQS_H
#define QB_SQS_H

#include <curl/curl.h>

#include <yajl/yajl_tree.h>

#include "base/buf.h"
#include "queue/qmsg.h"

/* The service's limits (qb-providers(7), AMAZON SQS "Limits"). */
#define SQS_BATCH_MAX	10	/* entries per batch call, messages per receive */
#define SQS_WAIT_MAX	20	/* long-poll seconds */
#define SQS_VIS_MAX	43200	/* visibility timeout seconds, 12 h */
#define SQS_RECEIVERS_MAX 16	/* ReceiveMessage calls in flight at once */

struct sqs_slot;

struct sqs {
	CURL		*curl;		/* one handle: keeps the connection */
	char		*endpoint;	/* where requests go, e.g. https://sqs.R.amazonaws.com/; owned */
	char		*url;		/* the QueueUrl sent in bodies; owned */
	char		 sigv4[96];	/* "aws:amz:REGION:sqs" */
	char		*ak, *sk;	/* credentials; owned, wiped on close */
	struct curl_slist *token;	/* X-Amz-Security-Token header or NULL; owned */
	int		 retries;	/* QB_MAX_RETRIES, default 4 */
	double		 backoff;	/* QB_BACKOFF_BASE seconds, default 0.5 */
	CURLM		*multi;		/* the receivers' handles; NULL until used */
	struct sqs_slot	*slot;		/* nrecv receivers; owned (sqsrecv.c) */
	int		 nrecv;		/* receivers in flight at most (1..16, default 1) */
	struct buf	 resp;		/* last response body */
	long		 status;	/* last HTTP status */
	char		 err[512];	/* why the last call failed */
};

/*
 * Set up q for spec, "sqs://REGION/ACCOUNT/NAME" or a queue URL
 * (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME). The region is the
 * spec's, else the URL host's, else AWS_REGION, else AWS_DEFAULT_REGION;
 * the endpoint AWS_ENDPOINT_URL_SQS, else AWS_ENDPOINT_URL, else the
 * URL's own or the regional one. Returns 0, or after saying why
 * QB_EX_USAGE (a spec that is neither), QB_EX_CONFIG (no credentials or
 * region, a bad endpoint, QB_MAX_RETRIES or QB_BACKOFF_BASE) or
 * QB_EX_OSERR (libcurl would not start); q is then closed.
 */
int sqs_open(struct sqs *q, const char *spec);
/* Free (and wipe the credentials of) what sqs_open made; q is zeroed. */
void sqs_close(struct sqs *q);
/*
 * ReceiveMessage with up to q->nrecv calls in flight, each asking what
 * is still missing and long polling wait seconds (0-20, never past the
 * budget): leases up to max messages into b for vis seconds from the
 * call, calling again until max came or budget seconds passed. Messages
 * beyond max are released at once. Returns 0, or a QB_EX_* status with
 * q->err saying why (not reported); the messages leased before it stay
 * in b.
 */
int sqs_receive(struct sqs *q, struct qbatch *b, size_t max, int wait,
    double budget, double vis);
/*
 * DeleteMessageBatch (QA_DELETE) or ChangeMessageVisibilityBatch
 * (QA_RELEASE, VisibilityTimeout = delay) for s[0..n-1], in calls of 10.
 * Entries that fail on the server's side are retried alone; each entry's
 * rc/why/expired say how it ended. Returns 0, or the QB_EX_* status of a
 * whole call that failed (its entries carry it too; q->err says why; not
 * reported).
 */
int sqs_settle(struct sqs *q, struct qsettle *s, size_t n);
/*
 * SendMessageBatch of bodies[0..n-1] (lens[i] bytes each), n <= 10,
 * failed entries retried alone. Returns 0, or a QB_EX_* status after
 * reporting each failure (as warnings: the caller decides what ends).
 */
int sqs_send(struct sqs *q, char *const *bodies, const size_t *lens, size_t n);

/* Shared by sqs.c and sqsrecv.c: set c up for one call (returns the
 * header list to free after it), classify its end (0, -1 to retry after
 * sqs_backoff, or a QB_EX_* status with q->err set). */
struct curl_slist *sqs_setup(struct sqs *q, CURL *c, const char *action,
    const char *body, size_t len, long wait, struct buf *resp, char *ebuf);
int sqs_result(struct sqs *q, const char *action, CURLcode cc, long status,
    const struct buf *resp, const char *ebuf, int attempt, yajl_val *out);
double sqs_backoff(const struct sqs *q, int attempt);
void sqs_recv_free(struct sqs *q);

#endif
