/* The block I/O settings as text, parsed and bounded (cgroup.h): pure code,
 * shared by the runtime and the daemon's config (and its fuzz driver). */
#include "runtime/cgroup.h"
#include "util/parse.h"

#define WEIGHT_MAX_V2 10000u
#define BPS_MIN (1ull << 20)
#define IOPS_MIN 100u

int hu_cgroup_io_parse(const char *weight, const char *bps, const char *iops, struct hu_cgroup_io *out,
		       hu_err *err)
{
	uint64_t v;

	if (weight) {
		if (hu_parse_u64(weight, &v, err) < 0)
			return -1;
		if (v < 1 || v > WEIGHT_MAX_V2)
			return hu_err_set(err, -EINVAL, "I/O weight %llu: 1 .. %u (100 is the kernel's default)",
					  (unsigned long long)v, WEIGHT_MAX_V2);
		out->weight = (uint32_t)v;
	}
	if (bps) {
		if (hu_parse_size(bps, &v, err) < 0)
			return -1;
		if (v != 0 && v < BPS_MIN)
			return hu_err_set(err, -EINVAL, "I/O cap of %llu bytes a second: 0 (none) or at least 1M",
					  (unsigned long long)v);
		out->bps = v;
	}
	if (iops) {
		if (hu_parse_u64(iops, &v, err) < 0)
			return -1;
		if (v != 0 && v < IOPS_MIN)
			return hu_err_set(err, -EINVAL, "I/O cap of %llu operations a second: 0 (none) or at least %u",
					  (unsigned long long)v, IOPS_MIN);
		out->iops = v;
	}
	return 0;
}
