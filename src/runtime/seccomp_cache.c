/* The compiled seccomp program's cache (seccomp_cache.h). */
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "runtime/seccomp_cache.h"
#include "util/cleanup.h"
#include "util/fileutil.h"
#include "util/hex.h"

#define CACHE_SUBDIR "cache"
#define ENTRY "seccomp.bpf"
static const char magic[8] = {'H', 'U', 'S', 'C', 'M', 'P', '1', '\n'};

/* The entry: this header, then `len` instructions. */
struct entry_hdr {
	char magic[8];
	uint8_t key[HU_SECCOMP_KEY_LEN];
	uint32_t len;
	uint32_t reserved;
	uint8_t digest[32]; /* SHA-256 of the instructions */
};

int hu_seccomp_cache_key(uint8_t key[HU_SECCOMP_KEY_LEN], hu_err *err)
{
	struct {
		char tag[24];
		uint64_t dev, ino, size, mtime_s, mtime_ns, ctime_s, ctime_ns;
		unsigned lib_major, lib_minor, lib_micro;
		struct utsname uts;
	} in;
	struct stat st;
	unsigned int n = 0;

	memset(&in, 0, sizeof(in)); /* padding too: the bytes are hashed */
	snprintf(in.tag, sizeof(in.tag), "hutch seccomp cache 1");
	if (stat("/proc/self/exe", &st) < 0)
		return hu_err_sys(err, "seccomp cache: stat /proc/self/exe");
	in.dev = st.st_dev;
	in.ino = st.st_ino;
	in.size = (uint64_t)st.st_size;
	in.mtime_s = (uint64_t)st.st_mtim.tv_sec;
	in.mtime_ns = (uint64_t)st.st_mtim.tv_nsec;
	in.ctime_s = (uint64_t)st.st_ctim.tv_sec;
	in.ctime_ns = (uint64_t)st.st_ctim.tv_nsec;
	const struct scmp_version *v = seccomp_version();
	in.lib_major = v->major;
	in.lib_minor = v->minor;
	in.lib_micro = v->micro;
	if (uname(&in.uts) < 0)
		return hu_err_sys(err, "seccomp cache: uname");
	if (EVP_Digest(&in, sizeof(in), key, &n, EVP_sha256(), NULL) != 1 || n != HU_SECCOMP_KEY_LEN)
		return hu_err_set(err, EINVAL, "seccomp cache: hash the key");
	return 0;
}

static int digest(const struct sock_filter *insns, size_t len, uint8_t out[32])
{
	unsigned int n = 0;
	return EVP_Digest(insns, len * sizeof(*insns), out, &n, EVP_sha256(), NULL) == 1 && n == 32 ? 0 : -1;
}

/* Only root (our euid) may have written it and nobody else may read it. */
static int private_to_us(const struct stat *st)
{
	return st->st_uid == geteuid() && (st->st_mode & 077) == 0;
}

int hu_seccomp_cache_load(int dirfd, const uint8_t key[HU_SECCOMP_KEY_LEN], struct hu_seccomp_prog *out,
			  enum hu_seccomp_cache_state *state, hu_err *err)
{
	struct entry_hdr h;
	struct stat st;
	uint8_t d[32];

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
	if (CRYPTO_memcmp(h.key, key, HU_SECCOMP_KEY_LEN) != 0) {
		*state = HU_SECCOMP_CACHE_STALE;
		return 0;
	}
	if (h.len == 0 || h.len > BPF_MAXINSNS || st.st_size != (off_t)(sizeof(h) + h.len * sizeof(struct sock_filter)))
		return 0;
	struct sock_filter *insns = malloc(h.len * sizeof(*insns));
	if (!insns)
		return hu_err_set(err, ENOMEM, "seccomp cache: program");
	ssize_t want = (ssize_t)(h.len * sizeof(*insns));
	if (pread(fd, insns, (size_t)want, sizeof(h)) != want || digest(insns, h.len, d) < 0 ||
	    memcmp(d, h.digest, sizeof(d)) != 0) {
		free(insns);
		return 0;
	}
	out->insns = insns;
	out->len = (unsigned short)h.len;
	*state = HU_SECCOMP_CACHE_HIT;
	return 0;
}

int hu_seccomp_cache_store(int dirfd, const uint8_t key[HU_SECCOMP_KEY_LEN], const struct hu_seccomp_prog *prog,
			   hu_err *err)
{
	struct entry_hdr h = {.len = prog->len};
	char tmp[64], rnd[17];

	if (prog->len == 0 || prog->len > BPF_MAXINSNS)
		return hu_err_set(err, EINVAL, "seccomp cache: program of %u instructions", prog->len);
	memcpy(h.magic, magic, sizeof(magic));
	memcpy(h.key, key, HU_SECCOMP_KEY_LEN);
	if (digest(prog->insns, prog->len, h.digest) < 0)
		return hu_err_set(err, EINVAL, "seccomp cache: hash the program");
	if (hu_random_hex(rnd, 8, err) < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), ENTRY ".%s.tmp", rnd);
	_cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return hu_err_sys(err, "seccomp cache: create %s", tmp);
	int rc = 0;
	if (fchmod(fd, 0600) < 0 || hu_write_all(fd, &h, sizeof(h)) < 0 ||
	    hu_write_all(fd, prog->insns, prog->len * sizeof(*prog->insns)) < 0)
		rc = hu_err_sys(err, "seccomp cache: write %s", tmp);
	/* rename replaces whatever has the entry's name (a refused file, a
	 * symlink) without following it */
	else if (renameat(dirfd, tmp, dirfd, ENTRY) < 0)
		rc = hu_err_sys(err, "seccomp cache: rename %s", tmp);
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

/* <run_dir>/cache, made 0700 if missing; -1 (nothing cached there) unless it
 * is a directory that only we can enter and write. */
static int open_cache_dir(const char *run_dir)
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
	enum hu_seccomp_cache_state s = HU_SECCOMP_CACHE_REFUSED;
	uint8_t key[HU_SECCOMP_KEY_LEN];
	hu_err ignore;

	_cleanup_close_ int dirfd = open_cache_dir(run_dir);
	int have_key = hu_seccomp_cache_key(key, &ignore) == 0;
	if (dirfd >= 0 && have_key) {
		if (hu_seccomp_cache_load(dirfd, key, out, &s, err) < 0)
			return -1;
		if (s == HU_SECCOMP_CACHE_HIT)
			goto done;
	}
	if (hu_seccomp_compile(out, err) < 0)
		return -1;
	/* the cache is an optimisation: a failure to store leaves it empty */
	if (dirfd >= 0 && have_key)
		hu_seccomp_cache_store(dirfd, key, out, &ignore);
done:
	if (state)
		*state = s;
	return 0;
}
