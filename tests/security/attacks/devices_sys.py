# ATTACK: reach hardware or host-wide kernel state through device nodes,
# sysfs and /proc/sys.                                  (run as root and user)
#
# Tries:
#  1. mknod a block device (8:0, the first disk) and char devices (1:1
#     /dev/mem, 1:2 /dev/kmem, 10:229 /dev/fuse) in /tmp and in /dev;
#  2. open the dangerous nodes that a full /dev would have: /dev/kmsg,
#     /dev/mem, /dev/kmem, /dev/port, /dev/vda, /dev/sda, /dev/kvm, /dev/fuse,
#     /dev/net/tun, /dev/vsock, /dev/loop-control, /dev/console ...; and find
#     any char/block node in /dev other than the documented ones;
#  3. write to sysfs (read-only mount): uevent_helper, lo's mtu, power state,
#     a new cgroup directory; look for a cgroup release_agent to abuse;
#  4. write /proc/sysrq-trigger and host-wide sysctls in /proc/sys/kernel
#     (core_pattern "|/tmp/x" is the classic container escape), vm, fs;
#  5. re-enable nested user namespaces: write user.max_user_namespaces;
#  6. chmod/chown/unlink the host's devtmpfs nodes bound into /dev; rewrite
#     the id maps; make itself immune to the OOM killer (oom_score_adj -1000).
# Not attempted: sysctls that are namespaced on purpose (kernel.shm*/msg*/sem
# for the ipc namespace, net.* for the net namespace, and kernel.pid_max,
# per pid namespace since Linux 6.14): root may change those for its own
# sandbox. run.sh still checks the host's values of several are unchanged.
#
# Why it must fail: creating device nodes needs CAP_MKNOD in the *initial*
# user namespace; the sandbox's /dev is a small tmpfs with only null, zero,
# full, random, urandom, tty and a private devpts bound into it; sysfs is
# mounted read-only and no cgroupfs is mounted at all (mount is denied); the
# /proc/sys/kernel, vm and fs files belong to the host's root, which is not
# mapped in the sandbox (root's CAP_DAC_OVERRIDE does not apply), and the
# user.* sysctls need CAP_SYS_RESOURCE, which is not granted.
#
# Expected: EPERM for mknod; ENOENT for absent nodes; EROFS/EACCES on sysfs;
# EACCES/EPERM for /proc/sys writes (ENOENT where the kernel lacks the file);
# max_user_namespaces stays 0. run.sh checks the host's core_pattern,
# modprobe, hostname and domainname are unchanged afterwards.
import stat

tmp = f"/tmp/dev-{WHO}"
os.makedirs(tmp, exist_ok=True)

# 1. mknod
for path, kind, maj, mnr in ((f"{tmp}/sda", stat.S_IFBLK, 8, 0), (f"{tmp}/vda", stat.S_IFBLK, 254, 0),
                             (f"{tmp}/mem", stat.S_IFCHR, 1, 1), (f"{tmp}/kmem", stat.S_IFCHR, 1, 2),
                             (f"{tmp}/fuse", stat.S_IFCHR, 10, 229), ("/dev/hutchsec-mem", stat.S_IFCHR, 1, 1)):
    expect_oserror(f"mknod {path} {'b' if kind == stat.S_IFBLK else 'c'} {maj}:{mnr}",
                   {errno.EPERM, errno.EACCES}, os.mknod, path, kind | 0o666, os.makedev(maj, mnr))

# 2. device nodes that must not exist
for dev in ("kmsg", "mem", "kmem", "port", "vda", "sda", "nvme0n1", "kvm", "fuse", "net/tun", "vsock",
            "vhost-vsock", "vhost-net", "loop0", "loop-control", "console", "tty0", "tty1", "ttyS0",
            "cpu/0/msr", "hpet", "rtc0", "snapshot", "userfaultfd", "btrfs-control", "mapper/control", "dri/card0"):
    expect_oserror(f"open /dev/{dev}", {errno.ENOENT}, os.open, f"/dev/{dev}", os.O_RDONLY | os.O_NONBLOCK)
allowed = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/pts/ptmx"}
found = set()
for d, dirs, files in os.walk("/dev"):
    for n in files + dirs:
        p = os.path.join(d, n)
        st = os.lstat(p)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            found.add(p)
extra = sorted(p for p in found - allowed if not (p.startswith("/dev/pts/") and p[9:].isdigit()))
check(f"/dev holds only the documented device nodes ({len(found)})", not extra, str(extra))
st = os.stat("/dev/null")
check("/dev/null is the real null device (1:3)", (os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 3))
# the bound nodes are the host's devtmpfs inodes: they must not be changeable
for dev in ("null", "zero", "urandom", "tty"):
    expect_oserror(f"chmod /dev/{dev} (host devtmpfs inode)", {errno.EPERM}, os.chmod, f"/dev/{dev}", 0o777)
    expect_oserror(f"chown /dev/{dev}", {errno.EPERM}, os.chown, f"/dev/{dev}", 0, 0)
    expect_oserror(f"unlink /dev/{dev} (mount point)", {errno.EBUSY, errno.EACCES}, os.unlink, f"/dev/{dev}")

# 3. sysfs
check("/sys/class/net/lo/mtu exists (sysfs is mounted)", os.path.exists("/sys/class/net/lo/mtu"))
for path, data in (("/sys/kernel/uevent_helper", "/tmp/x"), ("/sys/class/net/lo/mtu", "1280"),
                   ("/sys/power/state", "mem"), ("/sys/kernel/mm/transparent_hugepage/enabled", "never"),
                   ("/sys/module/printk/parameters/time", "N")):
    def write(p=path, d=data):
        fd = os.open(p, os.O_WRONLY)
        try:
            os.write(fd, d.encode())
        finally:
            os.close(fd)
    expect_oserror(f"write {path}", {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT}, write)
expect_oserror("mkdir /sys/fs/cgroup/hutchsec", {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT}, os.mkdir, "/sys/fs/cgroup/hutchsec")
agents = [os.path.join(d, f) for d, _, fs in os.walk("/sys/fs/cgroup") for f in fs
          if f in ("release_agent", "notify_on_release", "cgroup.procs")]
check("no cgroupfs is mounted in the sandbox (no release_agent, no cgroup.procs)", not agents, str(agents[:3]))

# 4 + 5. /proc writes
def write_proc(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)

expect_oserror("write /proc/sysrq-trigger", {errno.EACCES, errno.EPERM, errno.ENOENT}, write_proc, "/proc/sysrq-trigger", "h")
for path, data in (("kernel/core_pattern", "|/tmp/hutchsec-pwn"), ("kernel/modprobe", "/tmp/hutchsec-pwn"),
                   ("kernel/hotplug", "/tmp/hutchsec-pwn"), ("kernel/hostname", "hutchsec-pwned"),
                   ("kernel/domainname", "hutchsec-pwned"), ("kernel/panic", "1"), ("kernel/sysrq", "1"),
                   ("kernel/randomize_va_space", "0"), ("kernel/kptr_restrict", "0"),
                   ("kernel/dmesg_restrict", "0"), ("kernel/perf_event_paranoid", "-1"),
                   ("kernel/unprivileged_bpf_disabled", "0"), ("kernel/yama/ptrace_scope", "0"),
                   ("kernel/ns_last_pid", "1000"), ("kernel/threads-max", "1"), ("kernel/printk", "8"),
                   ("kernel/keys/maxkeys", "1000000"),
                   ("vm/drop_caches", "3"), ("vm/overcommit_memory", "1"), ("vm/max_map_count", "1"),
                   ("fs/file-max", "1"), ("fs/protected_hardlinks", "0"), ("fs/protected_symlinks", "0"),
                   ("fs/suid_dumpable", "2"), ("fs/binfmt_misc/register", ":x:E::x::/tmp/x:"),
                   ("user/max_user_namespaces", "1000"), ("user/max_net_namespaces", "1000"),
                   ("dev/tty/legacy_tiocsti", "1")):
    p = f"/proc/sys/{path}"
    if not os.path.exists(p):
        ok(f"{p} does not exist on this kernel")
        continue
    expect_oserror(f"write {p}", {errno.EACCES, errno.EPERM, errno.EROFS}, write_proc, p, data)
# the id maps are written once by the runtime; OOM-killer immunity needs
# CAP_SYS_RESOURCE (it would let the sandbox sit out its memory limit's OOM)
expect_oserror("rewrite /proc/self/uid_map", {errno.EPERM, errno.EACCES}, write_proc, "/proc/self/uid_map", "0 0 4294967295")
expect_oserror("rewrite /proc/self/gid_map", {errno.EPERM, errno.EACCES}, write_proc, "/proc/self/gid_map", "0 0 4294967295")
expect_oserror("oom_score_adj -1000 (OOM immunity)", {errno.EACCES, errno.EPERM}, write_proc, "/proc/self/oom_score_adj", "-1000")
check("user.max_user_namespaces is still 0", read_text("/proc/sys/user/max_user_namespaces").strip() == "0")
check("kernel.hostname is still the sandbox id", read_text("/proc/sys/kernel/hostname").startswith("run-"))
end()
