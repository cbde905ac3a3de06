/*
 * Reading the text the kernel hands out: word lists (cgroup.controllers,
 * seccomp's actions_avail, /proc/filesystems) and /proc/meminfo fields.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/doctor/doctor.h"

bool doctor_has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = list; (p = strstr(p, word)) != NULL; p += wl) {
		bool start = p == list || p[-1] == ' ' || p[-1] == '\n' || p[-1] == '\t';
		char end = p[wl];
		if (start && (end == '\0' || end == ' ' || end == '\n' || end == '\t'))
			return true;
	}
	return false;
}

uint64_t doctor_meminfo_kib(const char *buf, const char *key, bool *ok)
{
	const char *p = strstr(buf, key);
	*ok = p != NULL;
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}
