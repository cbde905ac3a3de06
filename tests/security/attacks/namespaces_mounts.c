/* ATTACK: change the sandbox's namespaces or its mount table.
 *                                                      (run as root and user)
 * Tries:
 *  1. clone3 with CLONE_NEWUSER (flags in memory, invisible to seccomp);
 *  2. unshare() with each namespace flag: NEWNS, NEWUTS, NEWIPC, NEWUSER,
 *     NEWPID, NEWNET, NEWCGROUP, NEWTIME (a new user namespace would give
 *     back every capability, and with it mount, nf_tables, ...);
 *  3. raw clone() with each namespace flag, and CLONE_NEWUSER with garbage in
 *     the upper 32 bits of the flags;
 *  4. setns() into each of its own namespaces and into PID 1's through a
 *     pidfd; nsfs ioctls NS_GET_PARENT/NS_GET_USERNS to get a handle on the
 *     host's user and pid namespaces;
 *  5. mount/umount2/pivot_root/chroot: mount a tmpfs, remount /usr
 *     read-write, bind /usr, make / shared, detach /usr and /proc;
 *  6. the new mount API: open_tree (clone /usr), open_tree_attr, move_mount,
 *     fsopen, fspick, fsconfig, fsmount, and above all mount_setattr on /usr
 *     clearing MOUNT_ATTR_RDONLY (through an O_PATH fd and by path), on /
 *     recursively clearing NOSUID/NODEV, and setting a new idmap;
 *  then checks that /usr is still read-only.
 *
 * Why it must fail: unshare, setns, mount, umount2, pivot_root, chroot and
 * the whole new mount API are denied by seccomp (EPERM); clone is denied
 * when any namespace bit is set (masked compare on the full register), and
 * clone3 answers ENOSYS; the nsfs ioctls refuse to hand out a namespace
 * outside the caller's own user/pid namespace (EPERM); and even without
 * seccomp, root lacks CAP_SYS_ADMIN.
 *
 * Expected: ENOSYS for clone3, EPERM for everything else; /usr still ro.
 */
#include "lib.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#define NR_open_tree 428
#define NR_move_mount 429
#define NR_fsopen 430
#define NR_fsconfig 431
#define NR_fsmount 432
#define NR_fspick 433
#define NR_pidfd_open 434
#define NR_clone3 435
#define NR_mount_setattr 442
#define NR_open_tree_attr 467
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x80
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#define NS_GET_USERNS 0xb701
#define NS_GET_PARENT 0xb702
#define A_RDONLY 0x1
#define A_NOSUID 0x2
#define A_NODEV 0x4
#define A_IDMAP 0x100000
#define A_RECURSIVE 0x8000

struct mnt_attr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

/* A successful clone/clone3 returns 0 in a child: it must leave at once. */
static void clone_result(const char *desc, long r, int e)
{
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid(r, NULL, 0);
	expect_err(desc, r > 0 ? r : -1, e, desc[5] == '3' ? ENOSYS : EPERM, 0);
}

int main(void)
{
	static const struct {
		const char *name;
		unsigned long flag;
	} ns[] = {
		{ "NEWNS", CLONE_NEWNS },   { "NEWUTS", CLONE_NEWUTS },       { "NEWIPC", CLONE_NEWIPC },
		{ "NEWUSER", CLONE_NEWUSER }, { "NEWPID", CLONE_NEWPID },     { "NEWNET", CLONE_NEWNET },
		{ "NEWCGROUP", CLONE_NEWCGROUP }, { "NEWTIME", CLONE_NEWTIME },
	};
	char d[128];

	/* 1. clone3 */
	struct {
		unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	} ca = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
	errno = 0;
	long r = syscall(NR_clone3, &ca, sizeof(ca));
	clone_result("clone3(CLONE_NEWUSER)", r, errno);
	ca.flags = 0;
	errno = 0;
	r = syscall(NR_clone3, &ca, sizeof(ca));
	clone_result("clone3(0)", r, errno);

	/* 2 + 3. unshare and clone per flag */
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		snprintf(d, sizeof(d), "unshare(CLONE_%s)", ns[i].name);
		EXPECT_SYS(d, EPERM, 0, SYS_unshare, ns[i].flag);
		if (ns[i].flag == CLONE_NEWTIME)
			continue; /* in clone() that bit is part of the exit signal */
		snprintf(d, sizeof(d), "clone(CLONE_%s)", ns[i].name);
		errno = 0;
		r = syscall(SYS_clone, ns[i].flag | SIGCHLD, 0, 0, 0, 0);
		clone_result(d, r, errno);
	}
	errno = 0;
	r = syscall(SYS_clone, (1UL << 32) | CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	clone_result("clone(1<<32 | CLONE_NEWUSER)", r, errno);
	errno = 0;
	r = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
	clone_result("clone(all namespace flags)", r, errno);

	/* 4. setns and nsfs */
	static const char *nsnames[] = { "mnt", "net", "uts", "ipc", "pid", "user", "cgroup", "time" };
	for (size_t i = 0; i < sizeof(nsnames) / sizeof(nsnames[0]); i++) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/ns/%s", nsnames[i]);
		int fd = open(p, O_RDONLY);
		if (fd < 0) {
			ok("%s cannot be opened (%s)", p, ename(errno));
			continue;
		}
		snprintf(d, sizeof(d), "setns(%s)", p);
		EXPECT_SYS(d, EPERM, 0, SYS_setns, fd, 0);
		close(fd);
	}
	int pfd = syscall(NR_pidfd_open, 1, 0);
	if (pfd >= 0) {
		EXPECT_SYS("setns(pidfd of PID 1, NEWNS|NEWNET)", EPERM, 0, SYS_setns, pfd, CLONE_NEWNS | CLONE_NEWNET);
		close(pfd);
	}
	int ufd = open("/proc/self/ns/user", O_RDONLY);
	int pidns = open("/proc/self/ns/pid", O_RDONLY);
	int netns = open("/proc/self/ns/net", O_RDONLY);
	EXPECT_SYS("ioctl(user ns, NS_GET_PARENT) (the host's user ns)", EPERM, 0, SYS_ioctl, ufd, NS_GET_PARENT, 0);
	EXPECT_SYS("ioctl(user ns, NS_GET_USERNS) (its owner, the host's)", EPERM, 0, SYS_ioctl, ufd, NS_GET_USERNS, 0);
	EXPECT_SYS("ioctl(pid ns, NS_GET_PARENT) (the host's pid ns)", EPERM, 0, SYS_ioctl, pidns, NS_GET_PARENT, 0);
	errno = 0;
	r = syscall(SYS_ioctl, netns, NS_GET_USERNS, 0);
	if (r >= 0) {
		struct stat a, b;
		fstat(r, &a);
		fstat(ufd, &b);
		if (a.st_ino == b.st_ino)
			ok("NS_GET_USERNS of the net ns is the sandbox's own user ns");
		else
			not_ok("NS_GET_USERNS of the net ns is a foreign user ns");
		close(r);
	} else {
		ok("NS_GET_USERNS of the net ns refused (%s)", ename(errno));
	}

	/* 5. classic mount calls */
	mkdir("/tmp/mnt-x", 0755);
	EXPECT_SYS("mount tmpfs on /tmp/mnt-x", EPERM, 0, SYS_mount, "none", "/tmp/mnt-x", "tmpfs", 0, "");
	EXPECT_SYS("mount(MS_REMOUNT|MS_BIND) /usr read-write", EPERM, 0, SYS_mount, NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL);
	EXPECT_SYS("mount(MS_REMOUNT) /usr rw", EPERM, 0, SYS_mount, NULL, "/usr", NULL, MS_REMOUNT, NULL);
	EXPECT_SYS("mount --bind /usr /tmp/mnt-x", EPERM, 0, SYS_mount, "/usr", "/tmp/mnt-x", NULL, MS_BIND, NULL);
	EXPECT_SYS("mount --make-rshared /", EPERM, 0, SYS_mount, NULL, "/", NULL, MS_REC | MS_SHARED, NULL);
	EXPECT_SYS("mount proc on /tmp/mnt-x", EPERM, 0, SYS_mount, "proc", "/tmp/mnt-x", "proc", 0, NULL);
	EXPECT_SYS("umount2(/usr, MNT_DETACH)", EPERM, 0, SYS_umount2, "/usr", MNT_DETACH);
	EXPECT_SYS("umount2(/proc)", EPERM, 0, SYS_umount2, "/proc", 0);
	EXPECT_SYS("umount2(/dev/pts)", EPERM, 0, SYS_umount2, "/dev/pts", MNT_DETACH);
	mkdir("/tmp/mnt-x/old", 0755);
	EXPECT_SYS("pivot_root(/tmp, /tmp/mnt-x)", EPERM, 0, SYS_pivot_root, "/tmp", "/tmp/mnt-x");
	EXPECT_SYS("pivot_root(., .)", EPERM, 0, SYS_pivot_root, ".", ".");
	EXPECT_SYS("chroot(/tmp)", EPERM, 0, SYS_chroot, "/tmp");

	/* 6. new mount API */
	EXPECT_SYS("open_tree(/usr, OPEN_TREE_CLONE)", EPERM, 0, NR_open_tree, AT_FDCWD, "/usr", 1 /* CLONE */ | O_CLOEXEC);
	EXPECT_SYS("open_tree(/usr, 0)", EPERM, 0, NR_open_tree, AT_FDCWD, "/usr", 0);
	struct mnt_attr ma = { .attr_clr = A_RDONLY };
	EXPECT_SYS("open_tree_attr(/usr, clone, clear RDONLY)", EPERM, 0, NR_open_tree_attr, AT_FDCWD, "/usr", 1 | O_CLOEXEC, &ma, sizeof(ma));
	EXPECT_SYS("move_mount(/usr -> /tmp/mnt-x)", EPERM, 0, NR_move_mount, AT_FDCWD, "/usr", AT_FDCWD, "/tmp/mnt-x", 0);
	EXPECT_SYS("fsopen(tmpfs)", EPERM, 0, NR_fsopen, "tmpfs", 0);
	EXPECT_SYS("fsopen(proc)", EPERM, 0, NR_fsopen, "proc", 0);
	EXPECT_SYS("fspick(/usr)", EPERM, 0, NR_fspick, AT_FDCWD, "/usr", 0);
	EXPECT_SYS("fsconfig(-1, RECONFIGURE)", EPERM, 0, NR_fsconfig, -1, 7, NULL, NULL, 0);
	EXPECT_SYS("fsmount(-1)", EPERM, 0, NR_fsmount, -1, 0, 0);
	int usr = open("/usr", O_PATH | O_DIRECTORY);
	EXPECT_SYS("mount_setattr(O_PATH /usr, clear RDONLY)", EPERM, 0, NR_mount_setattr, usr, "", AT_EMPTY_PATH, &ma, sizeof(ma));
	EXPECT_SYS("mount_setattr(\"/usr\", clear RDONLY)", EPERM, 0, NR_mount_setattr, AT_FDCWD, "/usr", 0, &ma, sizeof(ma));
	ma.attr_clr = A_RDONLY | A_NOSUID | A_NODEV | A_IDMAP;
	EXPECT_SYS("mount_setattr(/usr, clear RDONLY|NOSUID|NODEV|IDMAP)", EPERM, 0, NR_mount_setattr, AT_FDCWD, "/usr", 0, &ma, sizeof(ma));
	ma.attr_clr = A_NOSUID | A_NODEV;
	EXPECT_SYS("mount_setattr(/, AT_RECURSIVE, clear NOSUID|NODEV)", EPERM, 0, NR_mount_setattr, AT_FDCWD, "/", A_RECURSIVE, &ma, sizeof(ma));
	struct mnt_attr mi = { .attr_set = A_IDMAP, .userns_fd = (unsigned)ufd };
	EXPECT_SYS("mount_setattr(/tmp, set IDMAP)", EPERM, 0, NR_mount_setattr, AT_FDCWD, "/tmp", 0, &mi, sizeof(mi));

	/* /usr is still read-only */
	errno = 0;
	int fd = open("/usr/hutchsec-probe", O_CREAT | O_WRONLY, 0644);
	expect_err("create /usr/hutchsec-probe after all of the above", fd, errno, EROFS, 0);
	struct statvfs sv;
	if (statvfs("/usr", &sv) == 0 && (sv.f_flag & ST_RDONLY) && (sv.f_flag & ST_NOSUID))
		ok("/usr is still mounted ro,nosuid");
	else
		not_ok("/usr mount flags changed: 0x%lx", sv.f_flag);
	return end();
}
