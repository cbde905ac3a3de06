/* libpq, loaded on first use (pq_lib.h). */
#include <pthread.h>

#include "daemon/store/pq_lib.h"
#include "util/dynlib.h"

/* the real names again: the table is filled from them */
#undef PQclear
#undef PQcmdStatus
#undef PQcmdTuples
#undef PQconnectdbParams
#undef PQconsumeInput
#undef PQerrorMessage
#undef PQexec
#undef PQexecParams
#undef PQfinish
#undef PQfreemem
#undef PQgetisnull
#undef PQgetvalue
#undef PQnotifies
#undef PQntuples
#undef PQresultErrorField
#undef PQresultStatus
#undef PQsetNoticeProcessor
#undef PQsocket
#undef PQstatus

struct hu_pq_lib hu_pq_lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static hu_err load_err;

static void load(void)
{
#define HU_PQ_SYM(f) {#f, (void **)&hu_pq_lib.f},
	static const struct hu_dynsym syms[] = {HU_PQ_FUNCS(HU_PQ_SYM)};
#undef HU_PQ_SYM
	load_rc = hu_dynlib_open(HU_LIBPQ_SONAME, syms, sizeof(syms) / sizeof(syms[0]), &load_err);
}

int hu_pq_lib_load(hu_err *err)
{
	pthread_once(&once, load);
	if (load_rc < 0)
		*err = load_err;
	return load_rc;
}
