/*
 * DNS messages (RFC 1035) as the daemon's DNS proxy needs them: a query's
 * question, an answer's A and AAAA (RFC 3596) records, and the few
 * rewrites it makes (the id, a REFUSED reply). Every input is hostile (a
 * sandbox writes the queries; the answers come from the network): bounds
 * are checked on every read, compression pointers must point backwards (so
 * a loop cannot exist), and counts are trusted only as far as the message
 * really goes.
 */
#ifndef HUTCH_DAEMON_DNS_MSG_H
#define HUTCH_DAEMON_DNS_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define HU_DNS_NAME_MAX 253 /* text form, without the trailing dot */
#define HU_DNS_A_MAX 32     /* A records taken from one answer (and as many AAAA) */

struct hu_dns_question {
	uint16_t id, qtype, qclass;
	size_t end;                       /* offset just past the question */
	int text_ok;                      /* every label is letters, digits, '-' or '_' */
	char name[HU_DNS_NAME_MAX + 1];   /* lower case, dots between labels, "" for the root */
};

/* A query: QR clear, opcode QUERY, exactly one question. */
int hu_dns_parse_query(const uint8_t *msg, size_t len, struct hu_dns_question *q, hu_err *err);

struct hu_dns_answer {
	struct hu_dns_question q;
	uint8_t rcode;
	unsigned n_a;
	uint32_t a[HU_DNS_A_MAX];  /* host byte order */
	uint32_t ttl_min;          /* the smallest TTL among them */
	unsigned n_aaaa;
	uint8_t aaaa[HU_DNS_A_MAX][16]; /* network byte order */
	uint32_t ttl_min6;              /* the smallest TTL among the AAAA records */
};

/* A response (QR set, one question) and the A and AAAA records (class IN)
 * of its answer section, whatever their owner name (a CNAME chain ends in
 * them). A record of either type with data of the wrong size makes the
 * whole answer invalid; beyond HU_DNS_A_MAX of a type, records are skipped. */
int hu_dns_parse_answer(const uint8_t *msg, size_t len, struct hu_dns_answer *a, hu_err *err);

/* A REFUSED reply to the query in msg[0..q->end) into out (cap bytes):
 * its header and question. Returns the length, or -1 when it does not fit. */
long hu_dns_refused(const uint8_t *msg, const struct hu_dns_question *q, uint8_t *out, size_t cap);

#endif
