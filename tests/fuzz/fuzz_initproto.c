// fuzz-sources: src/init/request.c
/*
 * libFuzzer driver for the init protocol: the input is one frame (header +
 * payload) as it would arrive on init's socket. It goes through exactly what
 * init runs on hostile bytes: header parsing, payload validation, the field
 * iterator with every typed getter, and init's request decoder.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "init/request.h"
#include "proto/initproto.h"

/* Walk fields with every getter, recursing into nested ones (the getters
 * must reject wrong widths, never read past a field). */
static void walk(const uint8_t *p, size_t len, int depth)
{
	struct hu_field_iter it;
	struct hu_field f;
	hu_err err;
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	char *s;

	hu_fields_init(&it, p, len);
	while (hu_fields_next(&it, &f, &err) > 0) {
		(void)hu_field_u8(&f, &u8, &err);
		(void)hu_field_u16(&f, &u16, &err);
		(void)hu_field_u32(&f, &u32, &err);
		(void)hu_field_i32(&f, &i32, &err);
		(void)hu_field_u64(&f, &u64, &err);
		if (hu_field_strdup(&f, &s, &err) == 0) {
			if (strlen(s) != f.len)
				abort(); /* a NUL slipped through */
			free(s);
		}
		if (depth < 3 && (f.tag == HU_F_PROC || f.tag == HU_F_ENTRY))
			walk(f.val, f.len, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hu_frame_hdr hdr;
	struct hu_request req;
	hu_err err;

	/* Header and payload in their own exact-size allocations, so ASan sees
	 * any read past either. */
	uint8_t *head = malloc(size < HU_PROTO_HEADER_SIZE ? size + 1 : HU_PROTO_HEADER_SIZE);
	if (!head)
		return 0;
	memcpy(head, data, size < HU_PROTO_HEADER_SIZE ? size : HU_PROTO_HEADER_SIZE);
	int ok = hu_frame_parse_hdr(head, size, &hdr, &err);
	free(head);

	size_t plen = size > HU_PROTO_HEADER_SIZE ? size - HU_PROTO_HEADER_SIZE : 0;
	uint8_t *payload = malloc(plen ? plen : 1);
	if (!payload)
		return 0;
	memcpy(payload, data + (size - plen), plen);

	/* The payload on its own, whatever the header said. */
	int valid = hu_payload_validate(payload, plen, &err);
	walk(payload, plen, 1);

	/* As init sees it: a header whose length matches what arrived. */
	if (ok == 0 && hdr.len == plen) {
		if (hu_request_decode(&hdr, payload, &req, &err) == 0) {
			if (valid < 0)
				abort(); /* the decoder accepted what validation refused */
			hu_request_free(&req);
		}
	}
	free(payload);
	return 0;
}
