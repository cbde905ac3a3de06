/*
 * libnftables, loaded on first use (util/dynlib.h): only a runtime with
 * internet access for its sandboxes (HUTCH_NET=nat) uses it. Include after
 * <nftables/libnftables.h>; the macros below send the usual names to the
 * table hu_nft_lib_load() fills, so the calling code reads as plain
 * libnftables.
 */
#ifndef HUTCH_RUNTIME_NFT_LIB_H
#define HUTCH_RUNTIME_NFT_LIB_H

#include <nftables/libnftables.h>

#include "util/err.h"

#define HU_NFT_FUNCS(X)                                                                                      \
	X(nft_ctx_new) X(nft_ctx_free) X(nft_ctx_buffer_error) X(nft_ctx_buffer_output)                      \
	X(nft_ctx_get_error_buffer) X(nft_ctx_get_output_buffer) X(nft_ctx_output_get_flags)                  \
	X(nft_ctx_output_set_flags) X(nft_run_cmd_from_buffer)

#define HU_NFT_SLOT(f) __typeof__(f) *f;
struct hu_nft_lib {
	HU_NFT_FUNCS(HU_NFT_SLOT)
};
#undef HU_NFT_SLOT
extern struct hu_nft_lib hu_nft_lib;

/* Load libnftables once per process (thread-safe); -1 if it cannot be. */
int hu_nft_lib_load(hu_err *err);

#define nft_ctx_new (hu_nft_lib.nft_ctx_new)
#define nft_ctx_free (hu_nft_lib.nft_ctx_free)
#define nft_ctx_buffer_error (hu_nft_lib.nft_ctx_buffer_error)
#define nft_ctx_buffer_output (hu_nft_lib.nft_ctx_buffer_output)
#define nft_ctx_get_error_buffer (hu_nft_lib.nft_ctx_get_error_buffer)
#define nft_ctx_get_output_buffer (hu_nft_lib.nft_ctx_get_output_buffer)
#define nft_ctx_output_get_flags (hu_nft_lib.nft_ctx_output_get_flags)
#define nft_ctx_output_set_flags (hu_nft_lib.nft_ctx_output_set_flags)
#define nft_run_cmd_from_buffer (hu_nft_lib.nft_run_cmd_from_buffer)

#endif
