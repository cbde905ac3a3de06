/*
 * A token bucket: `rate` events per second on average, bursts of up to
 * `burst`. Pure (the caller passes the time), so it is tested with recorded
 * clocks. Used where an unauthenticated client could otherwise make the
 * daemon do unbounded work (hash a signature against every token, write
 * log lines).
 */
#ifndef HUTCH_UTIL_RATELIMIT_H
#define HUTCH_UTIL_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct hu_ratelimit {
	double rate, burst;
	double tokens;     /* starts full: set to burst by HU_RATELIMIT_INIT */
	int64_t last_ms;   /* 0 = never used */
	uint64_t refused;  /* events refused since the caller last took this count */
};

#define HU_RATELIMIT_INIT(r, b) {.rate = (r), .burst = (b), .tokens = (b)}

/* May one more event happen at now_ms (a monotonic clock)? Counts refusals. */
bool hu_ratelimit_take(struct hu_ratelimit *rl, int64_t now_ms);

#endif
