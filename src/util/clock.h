/* Milliseconds, the two ways hutch counts them. */
#ifndef HUTCH_UTIL_CLOCK_H
#define HUTCH_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Unix time in ms: what the API reports and the store keeps. */
static inline int64_t hu_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic ms: for deadlines and durations inside one process. */
static inline int64_t hu_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
