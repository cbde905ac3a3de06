# ATTACK: read host secrets through /proc.              (run as root and user)
#
# Tries:
#  1. walk out of the sandbox through /proc/1/root, /proc/1/cwd and
#     /proc/self/root/.. (classic "proc magic link" escape);
#  2. find a host process in /proc and read its environ/cmdline: run.sh starts
#     a host process whose environment holds HUTCHSEC_HOST_SECRET=<random>
#     and passes its host pid as argv[1];
#  3. read hutch-init's (PID 1) environ, fds, memory, maps, namespaces: init
#     holds the daemon's socket;
#  4. learn host paths from mountinfo/mounts/mountstats: the host data and run
#     dirs (argv[2:]) and /var/lib/hutch, /run/hutch must not appear, and the
#     overlay's lowerdir/upperdir/workdir must be relative;
#  5. read kernel memory and the kernel log: /proc/kcore, /proc/kmsg;
#  6. enumerate mounts with listmount/statmount (allowed syscalls): other
#     mount namespaces by id (the 200 ids below its own and 1..64), and
#     mount ids just below the sandbox's first one (the host's mounts).
#
# Why it must fail: the pid namespace hides host processes; /proc/1 belongs to
# a non-dumpable init and every /proc/1/{root,cwd,fd,environ,mem,...} access
# needs ptrace access (PTRACE_MODE_READ), which needs CAP_SYS_PTRACE (never
# granted); the overlay was mounted with relative layer paths and the old
# root was detached by pivot_root; kcore/kmsg belong to the host's root,
# which is not mapped in the sandbox's user namespace.
#
# Expected: EACCES on every /proc/1 magic link/file; /proc/self/root/.. is
# "/"; no visible process carries the secret; no host path in mount tables;
# kcore and kmsg EACCES/EPERM (ENOENT where the kernel lacks them). Known and
# accepted: root can *list* /proc/1/fd (fd numbers only, see below).
# listmount/statmount answer only for the sandbox's own mount namespace
# (ENOENT/EPERM for everything else), and what they answer names no host path.

host_pid = int(sys.argv[1])
needles = [n for n in sys.argv[2:] if n] + ["/var/lib/hutch", "/run/hutch"]
SECRET_NAME = "HUTCHSEC_" + "HOST_SECRET="   # split: this text is not in any /proc file

# 1. escape through /proc magic links
for link in ("root", "cwd", "exe"):
    expect_oserror(f"readlink /proc/1/{link}", {errno.EACCES}, os.readlink, f"/proc/1/{link}")
expect_oserror("list /proc/1/root/", {errno.EACCES}, os.listdir, "/proc/1/root/")
expect_oserror("list /proc/1/root/.. (walk out through init's root)", {errno.EACCES}, os.listdir, "/proc/1/root/..")
expect_oserror("open /proc/1/exe (init's sealed memfd)", {errno.EACCES}, os.open, "/proc/1/exe", os.O_RDONLY)
root_st = os.stat("/")
for p in ("/proc/self/root/..", "/proc/self/root/../../..", "/..", "/proc/self/cwd/../../../../.."):
    st = os.stat(p)
    check(f"{p} is the sandbox's own /", (st.st_dev, st.st_ino) == (root_st.st_dev, root_st.st_ino))

# 2. host processes
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
check(f"only sandbox processes are visible ({len(pids)} pids)", len(pids) <= 5, str(pids))
check("PID 1 is hutch-init", read_text("/proc/1/cmdline").startswith("hutch-init"))
if host_pid in pids:
    cmd = read_text(f"/proc/{host_pid}/cmdline")
    check(f"pid {host_pid} inside is not the host's process", "sleep" not in cmd, cmd)
else:
    ok(f"host pid {host_pid} does not exist inside")
leaked = []
for pid in pids:
    for f in ("environ", "cmdline"):
        try:
            if SECRET_NAME in read_text(f"/proc/{pid}/{f}"):
                leaked.append(f"{pid}/{f}")
        except OSError:
            pass
check("no visible process carries the host process's secret", not leaked, str(leaked))
r, e = raw(62, host_pid, 0)   # kill(host_pid, 0)
check(f"kill(host pid {host_pid}, 0) finds nothing", r == -1 and e == errno.ESRCH, f"r={r} {ename(e)}")

# 3. hutch-init's private files
for f in ("environ", "mem", "maps", "smaps", "auxv", "stack", "syscall", "pagemap", "personality", "io", "fdinfo/0"):
    def rd(path):
        with open(path, "rb") as fh:
            return fh.read(64)
    expect_oserror(f"read /proc/1/{f}", {errno.EACCES, errno.EPERM}, rd, f"/proc/1/{f}")
# /proc/1/fd itself is a 0500 directory owned by the sandbox's root (the owner
# of a non-dumpable task's /proc files is root of its user namespace), so
# root can list the fd *numbers*; every entry must still refuse readlink and
# open (ptrace access check). user cannot even list it.
try:
    fds = os.listdir("/proc/1/fd")
except OSError as e:
    check(f"list /proc/1/fd: {ename(e.errno)}", e.errno == errno.EACCES)
    fds = ["0", "1", "2", "3"]
else:
    check("list /proc/1/fd works only for root (numbers only)", WHO == "root", str(fds))
for fd in fds:
    expect_oserror(f"readlink /proc/1/fd/{fd}", {errno.EACCES}, os.readlink, f"/proc/1/fd/{fd}")
    expect_oserror(f"open /proc/1/fd/{fd}", {errno.EACCES}, os.open, f"/proc/1/fd/{fd}", os.O_RDWR)
for ns in ("mnt", "user", "pid", "net"):
    expect_oserror(f"open /proc/1/ns/{ns}", {errno.EACCES}, os.open, f"/proc/1/ns/{ns}", os.O_RDONLY)

# 4. host paths in mount tables
for f in ("/proc/self/mountinfo", "/proc/self/mounts", "/proc/self/mountstats", "/proc/1/mountinfo"):
    try:
        text = read_text(f)
    except OSError as e:
        ok(f"{f} unreadable ({ename(e.errno)})")
        continue
    hits = [n for n in needles if n in text]
    check(f"{f} names no host data/run path", not hits, str(hits))
mi = read_text("/proc/self/mountinfo")
opts = []
for line in mi.splitlines():
    if " - overlay " in line:
        for o in line.split(" - ", 1)[1].split()[2].split(","):
            if o.split("=")[0] in ("lowerdir", "upperdir", "workdir", "datadir"):
                opts.append(o)
check(f"overlay layer paths are relative ({','.join(opts)})",
      opts and all(not o.split("=", 1)[1].startswith("/") for o in opts), str(opts))
# PID 1's OOM files, bound read-only on themselves (init_protect.py): paths
# inside the sandbox's own proc
OWN_PROC = {"/1/oom_score_adj", "/1/oom_adj", "/1/task/1/oom_score_adj", "/1/task/1/oom_adj"}
for line in mi.splitlines():
    root_field = line.split()[3]
    fstype = line.split(" - ", 1)[1].split()[0]
    if fstype == "proc" and root_field in OWN_PROC:
        continue
    # /boot_id: the sandbox's own boot id, a file on its own disk bound over
    # /proc/sys/kernel/random/boot_id (not a host path)
    if root_field not in ("/", "/boot_id") and not root_field.startswith(("/usr", "/null", "/zero", "/full", "/random", "/urandom", "/tty")):
        not_ok(f"unexpected mount source path in mountinfo: {line}")
        break
else:
    ok("every mountinfo root field is one of the expected binds")

# 5. kernel memory and log
# ENOENT: the kernel was built without the file (no kcore/sysrq here).
expect_oserror("open /proc/kcore", {errno.EACCES, errno.EPERM, errno.ENOENT}, os.open, "/proc/kcore", os.O_RDONLY)
expect_oserror("open /proc/kmsg", {errno.EACCES, errno.EPERM, errno.ENOENT}, os.open, "/proc/kmsg", os.O_RDONLY)
if os.environ.get("HUTCHSEC_KALLSYMS_HIDDEN") == "1":
    addrs = {l.split()[0] for l in read_text("/proc/kallsyms").splitlines()[:2000]}
    check("/proc/kallsyms shows no kernel addresses", addrs == {"0000000000000000"}, str(list(addrs)[:3]))
# 6. listmount / statmount
import array
import fcntl
import struct


def mnt_req(mnt_id, param, ns_id):
    return struct.pack("<IIQQQ", 32, 0, mnt_id, param, ns_id)


def listmount(ns_id=0):
    buf = (ctypes.c_uint64 * 512)()
    r, e = raw(458, mnt_req(0xFFFFFFFFFFFFFFFF, 0, ns_id), ctypes.addressof(buf), 512, 0)
    return (list(buf[:r]) if r >= 0 else None), e


def statmount(mnt_id):
    buf = ctypes.create_string_buffer(16384)
    r, e = raw(457, mnt_req(mnt_id, 0x4 | 0x8 | 0x20 | 0x80 | 0x100, 0), buf, 16384, 0)
    return (buf.raw if r >= 0 else None), e


own_ids, e = listmount()
check(f"listmount of its own namespace works ({len(own_ids or [])} mounts)", own_ids, ename(e))
if own_ids:
    texts = b"".join(statmount(i)[0] or b"" for i in own_ids).decode(errors="replace")
    hits = [n for n in needles if n in texts]
    check("statmount of its own mounts names no host data/run path", not hits, str(hits))
    nsfd = os.open("/proc/self/ns/mnt", os.O_RDONLY)
    b = array.array("Q", [0])
    fcntl.ioctl(nsfd, 0x8008B705, b)     # NS_GET_MNTNS_ID
    own_ns = b[0]
    leaks = [ns for ns in list(range(1, 65)) + list(range(max(65, own_ns - 200), own_ns))
             if ns != own_ns and listmount(ns)[0] is not None]
    check(f"listmount of other mount namespaces (ids 1..64, {own_ns - 200}..{own_ns - 1}) finds nothing",
          not leaks, str(leaks[:5]))
    first = min(own_ids)
    leaks = [hex(i) for i in range(first - 400, first) if statmount(i)[0] is not None]
    check("statmount of the 400 mount ids below the sandbox's own finds nothing", not leaks, str(leaks[:5]))
end()
