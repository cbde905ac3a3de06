/*
 * libpq, loaded on first use (util/dynlib.h): only a daemon whose store is
 * PostgreSQL needs it, and linked into the binary it brings about twenty
 * libraries (Kerberos, LDAP, GnuTLS, ...) that the loader would map and bind
 * at the start of every hutch command, `hutch run` included. The functions
 * the PostgreSQL backend calls go through a table filled by
 * hu_pq_lib_load(); the macros below send the usual names to it, so the
 * backend reads as plain libpq. Include after <libpq-fe.h>.
 */
#ifndef HUTCH_DAEMON_STORE_PQ_LIB_H
#define HUTCH_DAEMON_STORE_PQ_LIB_H

#include <libpq-fe.h>

#include "util/err.h"

#define HU_PQ_FUNCS(X)                                                                                       \
	X(PQclear) X(PQcmdStatus) X(PQcmdTuples) X(PQconnectdbParams) X(PQconsumeInput) X(PQerrorMessage)    \
	X(PQexec) X(PQexecParams) X(PQfinish) X(PQfreemem) X(PQgetisnull) X(PQgetvalue) X(PQnotifies)        \
	X(PQntuples) X(PQresultErrorField) X(PQresultStatus) X(PQsetNoticeProcessor) X(PQsocket) X(PQstatus)

#define HU_PQ_SLOT(f) __typeof__(f) *f;
struct hu_pq_lib {
	HU_PQ_FUNCS(HU_PQ_SLOT)
};
#undef HU_PQ_SLOT
extern struct hu_pq_lib hu_pq_lib;

/* Load libpq once per process (thread-safe); -1 if it cannot be. */
int hu_pq_lib_load(hu_err *err);

#define PQclear (hu_pq_lib.PQclear)
#define PQcmdStatus (hu_pq_lib.PQcmdStatus)
#define PQcmdTuples (hu_pq_lib.PQcmdTuples)
#define PQconnectdbParams (hu_pq_lib.PQconnectdbParams)
#define PQconsumeInput (hu_pq_lib.PQconsumeInput)
#define PQerrorMessage (hu_pq_lib.PQerrorMessage)
#define PQexec (hu_pq_lib.PQexec)
#define PQexecParams (hu_pq_lib.PQexecParams)
#define PQfinish (hu_pq_lib.PQfinish)
#define PQfreemem (hu_pq_lib.PQfreemem)
#define PQgetisnull (hu_pq_lib.PQgetisnull)
#define PQgetvalue (hu_pq_lib.PQgetvalue)
#define PQnotifies (hu_pq_lib.PQnotifies)
#define PQntuples (hu_pq_lib.PQntuples)
#define PQresultErrorField (hu_pq_lib.PQresultErrorField)
#define PQresultStatus (hu_pq_lib.PQresultStatus)
#define PQsetNoticeProcessor (hu_pq_lib.PQsetNoticeProcessor)
#define PQsocket (hu_pq_lib.PQsocket)
#define PQstatus (hu_pq_lib.PQstatus)

#endif
