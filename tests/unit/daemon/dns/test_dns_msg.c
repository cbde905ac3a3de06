/* DNS messages as the DNS proxy reads them (src/daemon/dns/dns_msg.c): hostile
 * input is refused (truncation, compression loops, lying counts), good
 * messages give their question and A and AAAA records. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/dns/dns_msg.h"

/* A message under construction. */
struct msg {
	uint8_t b[2048];
	size_t n;
};

static void put(struct msg *m, const void *p, size_t n)
{
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void put16(struct msg *m, unsigned v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	put(m, b, 2);
}

static void put_name(struct msg *m, const char *dotted)
{
	while (*dotted) {
		size_t l = strcspn(dotted, ".");
		m->b[m->n++] = (uint8_t)l;
		put(m, dotted, l);
		dotted += l;
		if (*dotted == '.')
			dotted++;
	}
	m->b[m->n++] = 0;
}

static void header(struct msg *m, unsigned id, unsigned flags, unsigned qd, unsigned an)
{
	m->n = 0;
	put16(m, id);
	put16(m, flags);
	put16(m, qd);
	put16(m, an);
	put16(m, 0);
	put16(m, 0);
}

static void question(struct msg *m, const char *name, unsigned type)
{
	put_name(m, name);
	put16(m, type);
	put16(m, 1);
}

/* a record whose owner is a pointer to offset 12 (the question's name) */
static void rr_ptr(struct msg *m, unsigned type, unsigned ttl, const void *data, unsigned len)
{
	put16(m, 0xc00c);
	put16(m, type);
	put16(m, 1);
	put16(m, ttl >> 16);
	put16(m, ttl & 0xffff);
	put16(m, len);
	put(m, data, len);
}

static void test_query(void **state)
{
	struct hu_dns_question q;
	struct msg m;
	hu_err err;

	header(&m, 0x1234, 0x0100, 1, 0);
	question(&m, "Allowed.TEST", 1);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), 0);
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.qtype, 1);
	assert_int_equal(q.qclass, 1);
	assert_int_equal(q.end, m.n);
	assert_true(q.text_ok);
	assert_string_equal(q.name, "allowed.test");

	/* a label with bytes no host name has: readable, but not text_ok */
	header(&m, 1, 0x0100, 1, 0);
	question(&m, "a b.test", 1);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), 0);
	assert_false(q.text_ok);

	/* the root name */
	header(&m, 1, 0x0100, 1, 0);
	question(&m, "", 2);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), 0);
	assert_string_equal(q.name, "");
}

static void test_query_bad(void **state)
{
	struct hu_dns_question q;
	struct msg m;
	hu_err err;

	header(&m, 1, 0x8100, 1, 0); /* a response */
	question(&m, "a.test", 1);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), -1);
	header(&m, 1, 0x2800, 1, 0); /* opcode UPDATE */
	question(&m, "a.test", 1);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), -1);
	header(&m, 1, 0x0100, 2, 0); /* two questions */
	question(&m, "a.test", 1);
	question(&m, "b.test", 1);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), -1);
	/* every truncation of a good query fails cleanly */
	header(&m, 1, 0x0100, 1, 0);
	question(&m, "allowed.test", 1);
	for (size_t n = 0; n < m.n; n++)
		assert_int_equal(hu_dns_parse_query(m.b, n, &q, &err), -1);
	/* a pointer in a query's name pointing at itself or forwards */
	header(&m, 1, 0x0100, 1, 0);
	put16(&m, 0xc00c);
	put16(&m, 1);
	put16(&m, 1);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), -1);
	assert_non_null(strstr(err.msg, "pointer"));
	/* label type 0x40/0x80 */
	header(&m, 1, 0x0100, 1, 0);
	m.b[m.n++] = 0x41;
	put(&m, "x", 1);
	put16(&m, 1);
	put16(&m, 1);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), -1);
	/* a name longer than 255 bytes */
	header(&m, 1, 0x0100, 1, 0);
	for (int i = 0; i < 5; i++) {
		m.b[m.n++] = 63;
		memset(m.b + m.n, 'a', 63);
		m.n += 63;
	}
	m.b[m.n++] = 0;
	put16(&m, 1);
	put16(&m, 1);
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), -1);
	assert_non_null(strstr(err.msg, "255"));
}

static void test_answer(void **state)
{
	struct hu_dns_answer a;
	struct msg m;
	hu_err err;
	const uint8_t ip1[4] = {198, 51, 100, 10}, ip2[4] = {198, 51, 100, 20};

	/* a CNAME chain: allowed.test CNAME x.test (pointer into it), then two As */
	header(&m, 7, 0x8180, 1, 3);
	question(&m, "allowed.test", 1);
	size_t cname_at = m.n + 12;
	uint8_t target[] = {1, 'x', 0xc0, 20}; /* "x" + pointer to "test" at 12+8 */
	rr_ptr(&m, 5, 300, target, sizeof(target));
	put16(&m, 0xc000 | (unsigned)cname_at); /* owner: x.test */
	put16(&m, 1);
	put16(&m, 1);
	put16(&m, 0);
	put16(&m, 60);
	put16(&m, 4);
	put(&m, ip1, 4);
	rr_ptr(&m, 1, 30, ip2, 4);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), 0);
	assert_string_equal(a.q.name, "allowed.test");
	assert_int_equal(a.rcode, 0);
	assert_int_equal(a.n_a, 2);
	assert_int_equal(a.a[0], 0xc633640au);
	assert_int_equal(a.a[1], 0xc6336414u);
	assert_int_equal(a.ttl_min, 30);

	/* NXDOMAIN: no address */
	header(&m, 7, 0x8183, 1, 0);
	question(&m, "nope.test", 1);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), 0);
	assert_int_equal(a.rcode, 3);
	assert_int_equal(a.n_a, 0);

	/* at most HU_DNS_A_MAX addresses are taken */
	header(&m, 7, 0x8180, 1, 40);
	question(&m, "many.test", 1);
	for (int i = 0; i < 40; i++)
		rr_ptr(&m, 1, 100, ip1, 4);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), 0);
	assert_int_equal(a.n_a, HU_DNS_A_MAX);
}

/* AAAA (RFC 3596): 16 bytes each, network order, their own TTL minimum,
 * bounded like A; an answer with both keeps them apart. */
static void test_answer_aaaa(void **state)
{
	struct hu_dns_answer a;
	struct msg m;
	hu_err err;
	const uint8_t v6a[16] = {0x3f, 0xff, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};
	const uint8_t v6b[16] = {0xfd, 0x99, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
	const uint8_t ip[4] = {198, 51, 100, 10};

	header(&m, 9, 0x8180, 1, 2);
	question(&m, "allowed.test", 28);
	rr_ptr(&m, 28, 600, v6a, 16);
	rr_ptr(&m, 28, 40, v6b, 16);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), 0);
	assert_int_equal(a.q.qtype, 28);
	assert_int_equal(a.n_a, 0);
	assert_int_equal(a.ttl_min, 0);
	assert_int_equal(a.n_aaaa, 2);
	assert_memory_equal(a.aaaa[0], v6a, 16);
	assert_memory_equal(a.aaaa[1], v6b, 16);
	assert_int_equal(a.ttl_min6, 40);

	/* A and AAAA in one answer (ANY, or a resolver adding them): each
	 * type keeps its own addresses and TTL */
	header(&m, 9, 0x8180, 1, 2);
	question(&m, "both.test", 255);
	rr_ptr(&m, 1, 300, ip, 4);
	rr_ptr(&m, 28, 20, v6a, 16);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), 0);
	assert_int_equal(a.n_a, 1);
	assert_int_equal(a.ttl_min, 300);
	assert_int_equal(a.n_aaaa, 1);
	assert_int_equal(a.ttl_min6, 20);

	/* an A-only answer: no AAAA, TTL minimum 0 */
	header(&m, 9, 0x8180, 1, 1);
	question(&m, "v4only.test", 1);
	rr_ptr(&m, 1, 300, ip, 4);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), 0);
	assert_int_equal(a.n_aaaa, 0);
	assert_int_equal(a.ttl_min6, 0);

	/* an AAAA of class CH is not an address */
	header(&m, 9, 0x8180, 1, 1);
	question(&m, "chaos.test", 28);
	rr_ptr(&m, 28, 300, v6a, 16);
	m.b[m.n - 16 - 10 + 2 + 1] = 3; /* the class's low byte */
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), 0);
	assert_int_equal(a.n_aaaa, 0);

	/* at most HU_DNS_A_MAX of them; the rest are skipped, not an error */
	header(&m, 9, 0x8180, 1, 40);
	question(&m, "many6.test", 28);
	for (int i = 0; i < 40; i++)
		rr_ptr(&m, 28, (unsigned)(100 + i), i < 39 ? v6a : v6b, 16);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), 0);
	assert_int_equal(a.n_aaaa, HU_DNS_A_MAX);
	assert_int_equal(a.ttl_min6, 100);
	for (unsigned i = 0; i < HU_DNS_A_MAX; i++)
		assert_memory_equal(a.aaaa[i], v6a, 16); /* the 40th (v6b) was not taken */
}

static void test_answer_aaaa_bad(void **state)
{
	struct hu_dns_answer a;
	struct msg m;
	hu_err err;
	uint8_t v6[17] = {0x3f, 0xff};

	/* an AAAA of 4, 15 or 17 bytes makes the answer invalid */
	for (unsigned len = 4; len <= 17; len += len == 4 ? 11 : 1) {
		if (len == 16)
			continue;
		header(&m, 9, 0x8180, 1, 1);
		question(&m, "a.test", 28);
		rr_ptr(&m, 28, 1, v6, len);
		assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), -1);
		assert_non_null(strstr(err.msg, "AAAA"));
	}
	/* a good AAAA then one of 4 bytes: still invalid as a whole */
	header(&m, 9, 0x8180, 1, 2);
	question(&m, "a.test", 28);
	rr_ptr(&m, 28, 1, v6, 16);
	rr_ptr(&m, 28, 1, v6, 4);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), -1);
	/* a count beyond the records there */
	header(&m, 9, 0x8180, 1, 65535);
	question(&m, "a.test", 28);
	rr_ptr(&m, 28, 1, v6, 16);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), -1);
	/* every truncation of a good AAAA answer fails cleanly */
	header(&m, 9, 0x8180, 1, 1);
	question(&m, "a.test", 28);
	rr_ptr(&m, 28, 1, v6, 16);
	for (size_t n = 0; n < m.n; n++)
		assert_int_equal(hu_dns_parse_answer(m.b, n, &a, &err), -1);
}

static void test_answer_bad(void **state)
{
	struct hu_dns_answer a;
	struct msg m;
	hu_err err;
	const uint8_t ip[5] = {1, 2, 3, 4, 5};

	/* a count far beyond the records there: fails at the end, at once */
	header(&m, 7, 0x8180, 1, 65535);
	question(&m, "a.test", 1);
	rr_ptr(&m, 1, 1, ip, 4);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), -1);
	/* an A record of 5 bytes */
	header(&m, 7, 0x8180, 1, 1);
	question(&m, "a.test", 1);
	rr_ptr(&m, 1, 1, ip, 5);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), -1);
	/* rdlength past the end */
	header(&m, 7, 0x8180, 1, 1);
	question(&m, "a.test", 1);
	rr_ptr(&m, 1, 1, ip, 4);
	m.b[m.n - 5] = 0x40;
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), -1);
	/* a compression loop: two pointers at each other */
	header(&m, 7, 0x8180, 1, 1);
	question(&m, "a.test", 1);
	size_t at = m.n;
	put16(&m, 0xc000 | (unsigned)(at + 2));
	put16(&m, 0xc000 | (unsigned)at);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), -1);
	/* a query is not an answer */
	header(&m, 7, 0x0100, 1, 0);
	question(&m, "a.test", 1);
	assert_int_equal(hu_dns_parse_answer(m.b, m.n, &a, &err), -1);
	/* every truncation of a good answer fails cleanly or reads less */
	header(&m, 7, 0x8180, 1, 1);
	question(&m, "a.test", 1);
	rr_ptr(&m, 1, 1, ip, 4);
	for (size_t n = 0; n < m.n; n++)
		assert_int_equal(hu_dns_parse_answer(m.b, n, &a, &err), -1);
}

static void test_refused(void **state)
{
	struct hu_dns_question q;
	struct msg m;
	hu_err err;
	uint8_t out[600];

	header(&m, 0xbeef, 0x0100, 1, 0);
	question(&m, "secret.attacker.test", 1);
	put(&m, "trailing", 8); /* an EDNS record or anything else is not echoed */
	assert_int_equal(hu_dns_parse_query(m.b, m.n, &q, &err), 0);
	long n = hu_dns_refused(m.b, &q, out, sizeof(out));
	assert_int_equal(n, (long)q.end);
	assert_int_equal(out[0], 0xbe);
	assert_int_equal(out[1], 0xef);
	assert_int_equal(out[2] & 0x80, 0x80); /* a response */
	assert_int_equal(out[2] & 0x01, 0x01); /* RD kept */
	assert_int_equal(out[3] & 0x0f, 5);    /* REFUSED */
	assert_int_equal(out[7], 0);           /* no answers */
	assert_int_equal(hu_dns_refused(m.b, &q, out, 10), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query),      cmocka_unit_test(test_query_bad), cmocka_unit_test(test_answer),
		cmocka_unit_test(test_answer_bad), cmocka_unit_test(test_answer_aaaa), cmocka_unit_test(test_answer_aaaa_bad),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
