/* The compiled seccomp program's cache (seccomp_cache.h). */
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/seccomp_cache.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#define CACHE_SUBDIR "cache"
#define ENTRY "seccomp.bpf"
static const char magic[8] = {'H', 'U', 'S', 'C', 'M', 'P', '1', '\n'};

/* The entry: this header, then `len` instructions. The checksum catches a
 * torn or corrupted entry; what keeps everyone but root from writing one is
 * the directory's and the file's ownership and modes, checked at every read.
 * (CRC-32 from zlib, not a cryptographic hash: libcrypto's first use reads
 * its configuration file, which costs more than compiling the filter.) */
struct entry_hdr {
	char magic[8];
	struct hu_seccomp_key key;
	uint32_t len;
	uint32_t crc; /* of the instructions */
};

int hu_seccomp_cache_key(struct hu_seccomp_key *key, hu_err *err)
{
	struct stat st;

	memset(key, 0, sizeof(*key)); /* padding too: the bytes are compared */
	snprintf(key->tag, sizeof(key->tag), "hutch seccomp cache 1");
	if (stat("/proc/self/exe", &st) < 0)
		return hu_err_sys(err, "seccomp cache: stat /proc/self/exe");
	key->dev = st.st_dev;
	key->ino = st.st_ino;
	key->size = (uint64_t)st.st_size;
	key->mtime_s = (uint64_t)st.st_mtim.tv_sec;
	key->mtime_ns = (uint64_t)st.st_mtim.tv_nsec;
	key->ctime_s = (uint64_t)st.st_ctim.tv_sec;
	key->ctime_ns = (uint64_t)st.st_ctim.tv_nsec;
	const struct scmp_version *v = seccomp_version();
	key->lib_major = v->major;
	key->lib_minor = v->minor;
	key->lib_micro = v->micro;
	if (uname(&key->uts) < 0)
		return hu_err_sys(err, "seccomp cache: uname");
	return 0;
}

static uint32_t checksum(const struct sock_filter *insns, size_t len)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)insns, (uInt)(len * sizeof(*insns)));
}

/* Only root (our euid) may have written it and nobody else may read it. */
static int private_to_us(const struct stat *st)
{
	return st->st_uid == geteuid() && (st->st_mode & 077) == 0;
}

int hu_seccomp_cache_load(int dirfd, const struct hu_seccomp_key *key, struct hu_seccomp_prog *out,
			  enum hu_seccomp_cache_state *state, hu_err *err)
{
	struct entry_hdr h;
	struct stat st;

	out->insns = NULL;
	out->len = 0;
	*state = HU_SECCOMP_CACHE_REFUSED;
	/* O_NOFOLLOW: a symlink is refused (ELOOP), never followed */
	_cleanup_close_ int fd = openat(dirfd, ENTRY, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			*state = HU_SECCOMP_CACHE_MISS;
		return 0;
	}
	/* a regular file, ours alone, with no other name that could have let it
	 * be written through another directory */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !private_to_us(&st) || st.st_nlink != 1 ||
	    st.st_size < (off_t)sizeof(h) || st.st_size > (off_t)(sizeof(h) + BPF_MAXINSNS * sizeof(struct sock_filter)))
		return 0;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h.magic, magic, sizeof(magic)) != 0)
		return 0;
	if (memcmp(&h.key, key, sizeof(*key)) != 0) {
		*state = HU_SECCOMP_CACHE_STALE;
		return 0;
	}
	if (h.len == 0 || h.len > BPF_MAXINSNS || st.st_size != (off_t)(sizeof(h) + h.len * sizeof(struct sock_filter)))
		return 0;
	struct sock_filter *insns = malloc(h.len * sizeof(*insns));
	if (!insns)
		return hu_err_set(err, ENOMEM, "seccomp cache: program");
	ssize_t want = (ssize_t)(h.len * sizeof(*insns));
	if (pread(fd, insns, (size_t)want, sizeof(h)) != want || checksum(insns, h.len) != h.crc) {
		free(insns);
		return 0;
	}
	out->insns = insns;
	out->len = (unsigned short)h.len;
	*state = HU_SECCOMP_CACHE_HIT;
	return 0;
}

int hu_seccomp_cache_store(int dirfd, const struct hu_seccomp_key *key, const struct hu_seccomp_prog *prog,
			   hu_err *err)
{
	struct entry_hdr h;

	if (prog->len == 0 || prog->len > BPF_MAXINSNS)
		return hu_err_set(err, EINVAL, "seccomp cache: program of %u instructions", prog->len);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, magic, sizeof(magic));
	h.len = prog->len;
	h.key = *key;
	h.crc = checksum(prog->insns, prog->len);
	struct iovec parts[] = {
		{.iov_base = &h, .iov_len = sizeof(h)},
		{.iov_base = prog->insns, .iov_len = prog->len * sizeof(*prog->insns)},
	};
	if (hu_replace_private_at(dirfd, ENTRY, parts, HU_ARRAY_LEN(parts), err) < 0) {
		hu_err_prefix(err, "seccomp cache");
		return -1;
	}
	return 0;
}

/* <run_dir>/cache, made 0700 if missing; -1 (nothing cached there) unless it
 * is a directory that only we can enter and write. */
int hu_seccomp_cache_dir(const char *run_dir)
{
	char path[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/" CACHE_SUBDIR, run_dir) >= sizeof(path))
		return -1;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -1;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !private_to_us(&st)) {
		close(fd);
		return -1;
	}
	return fd;
}

int hu_seccomp_get(const char *run_dir, struct hu_seccomp_prog *out, enum hu_seccomp_cache_state *state,
		   hu_err *err)
{
	_cleanup_close_ int dirfd = hu_seccomp_cache_dir(run_dir);
	return hu_seccomp_get_at(dirfd, out, state, err);
}

int hu_seccomp_get_at(int dirfd, struct hu_seccomp_prog *out, enum hu_seccomp_cache_state *state, hu_err *err)
{
	enum hu_seccomp_cache_state s = HU_SECCOMP_CACHE_REFUSED;
	struct hu_seccomp_key key;
	hu_err ignore;

	int have_key = hu_seccomp_cache_key(&key, &ignore) == 0;
	if (dirfd >= 0 && have_key) {
		if (hu_seccomp_cache_load(dirfd, &key, out, &s, err) < 0)
			return -1;
		if (s == HU_SECCOMP_CACHE_HIT)
			goto done;
	}
	if (hu_seccomp_compile(out, err) < 0)
		return -1;
	/* the cache is an optimisation: a failure to store leaves it empty */
	if (dirfd >= 0 && have_key)
		hu_seccomp_cache_store(dirfd, &key, out, &ignore);
done:
	if (state)
		*state = s;
	return 0;
}
