/* DNS message parsing for the DNS proxy (dns_msg.h). */
#include <string.h>

#include "daemon/dns/dns_msg.h"

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Read the name at *off. With out, its text goes there (lower case).
 * Compression pointers must point strictly before the label that holds
 * them: every jump goes backwards, so the walk ends (no loops), and a
 * name is at most 255 bytes of labels. *off moves past the name as it
 * stands in the message (the first pointer ends it). */
static int read_name(const uint8_t *msg, size_t len, size_t *off, char *out, int *text_ok, hu_err *err)
{
	size_t p = *off, end = 0, o = 0, wire = 0;
	int jumped = 0;
	unsigned jumps = 0;

	if (text_ok)
		*text_ok = 1;
	for (;;) {
		if (p >= len)
			return hu_err_set(err, -EINVAL, "dns: name runs past the message");
		uint8_t l = msg[p];
		if ((l & 0xc0) == 0xc0) {
			if (p + 1 >= len)
				return hu_err_set(err, -EINVAL, "dns: truncated pointer");
			size_t to = (size_t)(l & 0x3f) << 8 | msg[p + 1];
			if (to >= p || ++jumps > 64)
				return hu_err_set(err, -EINVAL, "dns: compression pointer not backwards");
			if (!jumped)
				end = p + 2;
			jumped = 1;
			p = to;
			continue;
		}
		if (l & 0xc0)
			return hu_err_set(err, -EINVAL, "dns: unknown label type");
		if (l == 0) {
			if (!jumped)
				end = p + 1;
			break;
		}
		if (p + 1 + l > len)
			return hu_err_set(err, -EINVAL, "dns: label runs past the message");
		wire += 1u + l;
		if (wire > 254)
			return hu_err_set(err, -EINVAL, "dns: name longer than 255 bytes");
		if (out) {
			if (o)
				out[o++] = '.';
			for (unsigned i = 0; i < l; i++) {
				uint8_t c = msg[p + 1 + i];
				if (c >= 'A' && c <= 'Z')
					c = (uint8_t)(c + 32);
				int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
				if (!ok && text_ok)
					*text_ok = 0;
				out[o++] = ok ? (char)c : '?';
			}
		}
		p += 1u + l;
	}
	if (out)
		out[o] = '\0';
	*off = end;
	return 0;
}

static int parse_question(const uint8_t *msg, size_t len, struct hu_dns_question *q, hu_err *err)
{
	size_t off = 12;

	if (len < 12)
		return hu_err_set(err, -EINVAL, "dns: shorter than a header");
	if (get16(msg + 4) != 1)
		return hu_err_set(err, -EINVAL, "dns: not exactly one question");
	q->id = get16(msg);
	if (read_name(msg, len, &off, q->name, &q->text_ok, err) < 0)
		return -1;
	if (off + 4 > len)
		return hu_err_set(err, -EINVAL, "dns: truncated question");
	q->qtype = get16(msg + off);
	q->qclass = get16(msg + off + 2);
	q->end = off + 4;
	return 0;
}

int hu_dns_parse_query(const uint8_t *msg, size_t len, struct hu_dns_question *q, hu_err *err)
{
	if (parse_question(msg, len, q, err) < 0)
		return -1;
	if ((msg[2] & 0x80) || ((msg[2] >> 3) & 0xf) != 0)
		return hu_err_set(err, -EINVAL, "dns: not a standard query");
	return 0;
}

int hu_dns_parse_answer(const uint8_t *msg, size_t len, struct hu_dns_answer *a, hu_err *err)
{
	memset(a, 0, sizeof(*a));
	if (parse_question(msg, len, &a->q, err) < 0)
		return -1;
	if (!(msg[2] & 0x80))
		return hu_err_set(err, -EINVAL, "dns: not a response");
	a->rcode = msg[3] & 0xf;
	a->ttl_min = a->ttl_min6 = UINT32_MAX;
	unsigned ancount = get16(msg + 6);
	size_t off = a->q.end;
	/* each record takes at least 11 bytes: a count beyond what is there
	 * ends at the message's end, not after 65535 loops of nothing */
	for (unsigned i = 0; i < ancount; i++) {
		if (read_name(msg, len, &off, NULL, NULL, err) < 0)
			return -1;
		if (off + 10 > len)
			return hu_err_set(err, -EINVAL, "dns: truncated record");
		uint16_t type = get16(msg + off), klass = get16(msg + off + 2), rdlen = get16(msg + off + 8);
		uint32_t ttl = get32(msg + off + 4);
		off += 10;
		if (off + rdlen > len)
			return hu_err_set(err, -EINVAL, "dns: record data runs past the message");
		if (type == 1 && klass == 1) {
			if (rdlen != 4)
				return hu_err_set(err, -EINVAL, "dns: A record of %u bytes", rdlen);
			if (a->n_a < HU_DNS_A_MAX) {
				a->a[a->n_a++] = get32(msg + off);
				if (ttl < a->ttl_min)
					a->ttl_min = ttl;
			}
		} else if (type == 28 && klass == 1) {
			if (rdlen != 16)
				return hu_err_set(err, -EINVAL, "dns: AAAA record of %u bytes", rdlen);
			if (a->n_aaaa < HU_DNS_A_MAX) {
				memcpy(a->aaaa[a->n_aaaa++], msg + off, 16);
				if (ttl < a->ttl_min6)
					a->ttl_min6 = ttl;
			}
		}
		off += rdlen;
	}
	if (a->n_a == 0)
		a->ttl_min = 0;
	if (a->n_aaaa == 0)
		a->ttl_min6 = 0;
	return 0;
}

long hu_dns_refused(const uint8_t *msg, const struct hu_dns_question *q, uint8_t *out, size_t cap)
{
	if (q->end > cap || q->end < 12)
		return -1;
	memcpy(out, msg, q->end);
	out[2] = (uint8_t)(0x80 | (msg[2] & 0x79)); /* QR, the opcode and RD kept */
	out[3] = 5;                                  /* REFUSED */
	memset(out + 6, 0, 6);                       /* no answer, authority, additional */
	return (long)q->end;
}
