# ATTACK: learn about the host or change it through /sys.  (run as root and user)
#
# argv: the host's network interface names and their MAC addresses (the
# runner reads them from the host's /sys/class/net before the run).
#
# Tries:
#  1. find a second mount under /sys (the host's cgroup tree, debugfs,
#     tracefs, securityfs, bpffs, pstore, configfs, efivars are mounted
#     there on the host), or a /sys that is writable;
#  2. find the host's network interfaces anywhere in sysfs: by name
#     (/sys/class/net, /sys/devices/virtual/net, every */net/ directory of a
#     device) and by MAC address (every */net/*/address);
#  3. read the host's hardware identity (DMI serials and UUIDs) and the
#     ACPI tables;
#  4. open for writing every file under /sys whose mode has a write bit
#     (nothing is written: the open alone must fail), then chmod, chown,
#     create, mkdir, rename and unlink in /sys;
#  5. make a writable /sys: remount it read-write, unmount it to reach what
#     is below, mount a fresh sysfs of the sandbox's own network namespace
#     (its own interfaces' files would belong to root inside).
#
# Why it must fail: /sys is one read-only sysfs mount, the runtime's shared
# view made in an empty network namespace (or, on kernels that cannot clone
# a detached mount, the sandbox's own), with nothing mounted below it; the
# network class of either holds no host interface; every file belongs to the
# host's root, which the sandbox does not map, so root's CAP_DAC_OVERRIDE
# does not apply; mount, umount2 and the new mount API are refused by seccomp.
#
# Expected: no mount below /sys, "ro" on the mount and its superblock; no
# host interface name (but lo and the sandbox's own eth0) or MAC; EACCES or
# ENOENT on the DMI and ACPI files; EROFS/EACCES/EPERM on every write and
# change; EPERM on the mount calls.
import ctypes
import stat

NR_mount, NR_umount2 = 165, 166
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
MNT_DETACH = 2
WRITE_ERRS = {errno.EROFS, errno.EACCES, errno.EPERM}
host_names = {a for a in sys.argv[1:] if ":" not in a} - {"lo", "eth0"}
host_macs = {a.lower() for a in sys.argv[1:] if ":" in a} - {"00:00:00:00:00:00"}
check("the runner passed the host's interfaces", bool(host_names or host_macs), str(sys.argv[1:]))

# 1. the mounts at and below /sys
sys_mounts = []
for line in read_text("/proc/self/mountinfo").splitlines():
    f = line.split()
    mnt_point, mnt_opts = f[4], f[5]
    fstype, source, sb_opts = line.split(" - ", 1)[1].split()[:3]
    if mnt_point == "/sys" or mnt_point.startswith("/sys/"):
        sys_mounts.append((mnt_point, fstype, mnt_opts.split(","), sb_opts.split(",")))
check("exactly one mount at or below /sys", len(sys_mounts) == 1, str(sys_mounts))
if sys_mounts:
    point, fstype, mopts, sopts = sys_mounts[0]
    check("/sys is a sysfs", (point, fstype) == ("/sys", "sysfs"), str(sys_mounts[0]))
    check("/sys is mounted read-only, nosuid, nodev, noexec",
          {"ro", "nosuid", "nodev", "noexec"} <= set(mopts), str(mopts))
    check("the sysfs superblock is read-only", "ro" in sopts, str(sopts))
for d in ("/sys/fs/cgroup", "/sys/kernel/debug", "/sys/kernel/tracing", "/sys/kernel/security", "/sys/fs/bpf",
          "/sys/fs/pstore", "/sys/fs/fuse/connections", "/sys/kernel/config", "/sys/firmware/efi/efivars"):
    try:
        held = os.listdir(d)
    except OSError as e:
        ok(f"{d}: {ename(e.errno)}")
        continue
    check(f"{d} is an empty directory (nothing of the host's is mounted there)", not held, str(held[:5]))

# 2. network interfaces
names, macs = set(), {}
for d in ("/sys/class/net", "/sys/devices/virtual/net"):
    try:
        names.update(os.listdir(d))
    except OSError:
        pass
walked = 0
for d, dirs, files in os.walk("/sys/devices"):
    walked += 1
    if os.path.basename(d) == "net":
        names.update(dirs)
        for n in dirs:
            try:
                macs[read_text(f"{d}/{n}/address").strip().lower()] = f"{d}/{n}"
            except OSError:
                pass
for n in names:
    try:
        macs.setdefault(read_text(f"/sys/class/net/{n}/address").strip().lower(), f"/sys/class/net/{n}")
    except OSError:
        pass
check(f"the interfaces in sysfs are only lo and the sandbox's own ({sorted(names)}, {walked} dirs walked)",
      names <= {"lo", "eth0"}, str(sorted(names)))
leaked = sorted(names & host_names)
check("no host interface name appears in sysfs", not leaked, str(leaked))
leaked = sorted(p for m, p in macs.items() if m in host_macs)
check("no host interface's MAC address appears in sysfs", not leaked, str(leaked))

# 3. the host's hardware identity
for p in ("/sys/class/dmi/id/product_uuid", "/sys/class/dmi/id/product_serial", "/sys/class/dmi/id/board_serial",
          "/sys/class/dmi/id/chassis_serial", "/sys/firmware/acpi/tables/DSDT"):
    expect_oserror(f"read {p}", {errno.EACCES, errno.ENOENT}, read_text, p)

# 4. writes
tried, opened = 0, []
for d, dirs, files in os.walk("/sys"):
    for n in files:
        p = os.path.join(d, n)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o222:
            continue
        tried += 1
        try:
            fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno not in WRITE_ERRS:
                opened.append(f"{p}: {ename(e.errno)}")
            continue
        os.close(fd)  # nothing written
        opened.append(p)
    if tried >= 50000:
        break
check(f"no file under /sys opens for writing ({tried} with a write bit tried)", tried and not opened, str(opened[:5]))
target = "/sys/class/net/lo/mtu"
expect_oserror(f"chmod {target}", WRITE_ERRS, os.chmod, target, 0o666)
expect_oserror(f"chown {target}", WRITE_ERRS, os.chown, target, os.getuid(), os.getgid())
expect_oserror("chmod /sys", WRITE_ERRS, os.chmod, "/sys", 0o777)
expect_oserror("create /sys/hutchsec", WRITE_ERRS, os.open, "/sys/hutchsec", os.O_WRONLY | os.O_CREAT, 0o644)
# (kernfs answers a mkdir in a directory it makes no children in with ENOENT)
expect_oserror("mkdir /sys/fs/cgroup/hutchsec", WRITE_ERRS | {errno.ENOENT}, os.mkdir, "/sys/fs/cgroup/hutchsec")
expect_oserror("symlink /sys/hutchsec", WRITE_ERRS, os.symlink, "/", "/sys/hutchsec")
expect_oserror("rename /sys/power", WRITE_ERRS | {errno.EBUSY}, os.rename, "/sys/power", "/sys/hutchsec")
expect_oserror("unlink /sys/kernel/uevent_helper", WRITE_ERRS | {errno.ENOENT}, os.unlink, "/sys/kernel/uevent_helper")
expect_oserror("rmdir /sys/fs/cgroup", WRITE_ERRS | {errno.EBUSY}, os.rmdir, "/sys/fs/cgroup")

# 5. a writable /sys
os.makedirs("/tmp/hutchsec-sys", exist_ok=True)
expect_sys("mount(MS_REMOUNT|MS_BIND) /sys read-write", {errno.EPERM}, NR_mount, None, b"/sys", None,
           MS_REMOUNT | MS_BIND, None)
expect_sys("mount(MS_REMOUNT) /sys rw", {errno.EPERM}, NR_mount, None, b"/sys", None, MS_REMOUNT, None)
expect_sys("umount2(/sys, MNT_DETACH)", {errno.EPERM}, NR_umount2, b"/sys", MNT_DETACH)
expect_sys("mount a new sysfs on /tmp/hutchsec-sys", {errno.EPERM}, NR_mount, b"sysfs", b"/tmp/hutchsec-sys",
           b"sysfs", 0, None)
expect_sys("bind /sys on /tmp/hutchsec-sys", {errno.EPERM}, NR_mount, b"/sys", b"/tmp/hutchsec-sys", None,
           MS_BIND, None)
check("/sys/class/net/lo/mtu is still read-only", not os.access("/sys/class/net/lo/mtu", os.W_OK))
end()
