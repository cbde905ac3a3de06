/*
 * A live sandbox and its store row (store.h): the store knows rows, the
 * daemon knows struct hu_sbx; these convert on the way in and out.
 */
#ifndef HUTCH_DAEMON_SANDBOXES_SBX_STORE_H
#define HUTCH_DAEMON_SANDBOXES_SBX_STORE_H

#include "daemon/sandboxes/registry.h"
#include "daemon/store/store.h"

/* Save s (insert or update); the store's errors as they are. */
int hu_sbx_store_put(struct hu_store *st, const struct hu_sbx *s, hu_err *err);
/* Call fn with every stored sandbox as a new hu_sbx that fn owns (no
 * runtime handle, no timers): a restarted daemon adopts them. */
int hu_sbx_store_load(struct hu_store *st, void (*fn)(struct hu_sbx *s, void *arg), void *arg, hu_err *err);

#endif
