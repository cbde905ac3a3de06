/*
 * Pressure stall information (/proc/pressure/memory, a cgroup's
 * memory.pressure): "some avg10=1.23 avg60=... total=..." lines.
 */
#ifndef HUTCH_UTIL_PSI_H
#define HUTCH_UTIL_PSI_H

/* The "some avg10" of a PSI file's text (the share of the last 10 s in which
 * some task stalled, in %), or -1 when the text has none. Pure. */
double hu_psi_some_avg10(const char *text);

/* The same read from path relative to dirfd (AT_FDCWD for absolute paths),
 * or -1 where the file is absent (PSI off, cgroup v1) or unreadable. */
double hu_psi_read_some_avg10(int dirfd, const char *path);

#endif
