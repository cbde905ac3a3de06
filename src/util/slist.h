/* Singly linked lists threaded through a `next` field: the daemon's lists
 * of work in flight (creates, pool builds, kills, template starts). */
#ifndef HUTCH_UTIL_SLIST_H
#define HUTCH_UTIL_SLIST_H

/* Unlink `node` from the list whose head pointer is at `head`; nothing if
 * the node is not on it. */
#define HU_SLIST_UNLINK(head, node)                        \
	do {                                               \
		__typeof__(node) *pp_ = (head);            \
		while (*pp_ && *pp_ != (node))             \
			pp_ = &(*pp_)->next;               \
		if (*pp_)                                  \
			*pp_ = (node)->next;               \
	} while (0)

#endif
