/* libnftables, loaded on first use (nft_lib.h). */
#include <nftables/libnftables.h>
#include <pthread.h>

#include "runtime/nft_lib.h"
#include "util/dynlib.h"

/* the real names again: the table is filled from them */
#undef nft_ctx_new
#undef nft_ctx_free
#undef nft_ctx_buffer_error
#undef nft_ctx_buffer_output
#undef nft_ctx_get_error_buffer
#undef nft_ctx_get_output_buffer
#undef nft_ctx_output_get_flags
#undef nft_ctx_output_set_flags
#undef nft_run_cmd_from_buffer

struct hu_nft_lib hu_nft_lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static hu_err load_err;

static void load(void)
{
#define HU_NFT_SYM(f) {#f, (void **)&hu_nft_lib.f},
	static const struct hu_dynsym syms[] = {HU_NFT_FUNCS(HU_NFT_SYM)};
#undef HU_NFT_SYM
	load_rc = hu_dynlib_open(HU_LIBNFTABLES_SONAME, syms, sizeof(syms) / sizeof(syms[0]), &load_err);
}

int hu_nft_lib_load(hu_err *err)
{
	pthread_once(&once, load);
	if (load_rc < 0)
		*err = load_err;
	return load_rc;
}
