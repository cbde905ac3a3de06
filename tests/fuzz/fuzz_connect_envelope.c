// fuzz-sources: src/daemon/http/server.c src/daemon/http/reply.c src/daemon/http/request.c src/daemon/http/route.c src/daemon/http/connect.c src/daemon/http/takeover.c src/daemon/http/inconn.c src/daemon/http/body.c src/daemon/http/framing.c src/daemon/common/log.c src/daemon/common/json.c tests/fuzz/daemon_fakes.c
/*
 * libFuzzer driver for the Connect request envelope (connect.c): the input
 * is the body of a server-streaming request. A parse either yields one JSON
 * object, or fails with EINVAL and a message; it never reads past the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/connect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *msg = NULL;
	hu_err err;

	/* A copy of exactly `size` bytes, so ASan sees any read past the end. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (hu_connect_parse_envelope(copy, size, &msg, &err) == 0) {
		if (!json_is_object(msg))
			abort();
		json_decref(msg);
	} else if (msg || err.code != EINVAL || !err.msg[0]) {
		abort();
	}
	free(copy);
	return 0;
}
