# ATTACK: make a crash inside the sandbox start a program on the host.
#                                                       (run as root and user)
# Tries: lower RLIMIT_CORE to 0 (setrlimit, the raw setrlimit syscall,
# prlimit64 on itself and on a child) or raise it (1 MiB, unlimited), then
# crash children with SIGSEGV and SIGABRT.
#
# Why it must fail: with a piped core_pattern ("|/usr/lib/systemd/
# systemd-coredump ...", apport, abrt), the kernel starts the helper on the
# host, as host root, for every crash, whatever the crashing process's
# RLIMIT_CORE is (0 included), except when it is exactly 1: the kernel's
# guard against a crashing helper (fs/coredump.c). A limit of 1 is also
# below the smallest core file the kernel writes, so no core file is written
# either. Every sandbox process has RLIMIT_CORE 1/1 (set by init's setup
# stage before anything runs) and seccomp refuses any change of it (EINVAL).
# hutch-init itself is non-dumpable (proc_secrets.py: its /proc files refuse
# even root).
#
# Expected: RLIMIT_CORE is 1/1 here and for PID 1 (/proc/1/limits); every
# change fails with EINVAL and leaves it 1/1; each crashing child dies by
# its signal without the "core dumped" flag (which a piped core_pattern with
# RLIMIT_CORE 0 would set) and leaves no core file in its directory.
import resource
import signal

NR_setrlimit, NR_prlimit64 = 160, 302
check(f"RLIMIT_CORE is 1/1 ({resource.getrlimit(resource.RLIMIT_CORE)})",
      resource.getrlimit(resource.RLIMIT_CORE) == (1, 1))
line = [l.split() for l in read_text("/proc/1/limits").splitlines() if l.startswith("Max core file size")]
check(f"PID 1's RLIMIT_CORE is 1/1 ({line})", line and line[0][4:6] == ["1", "1"])

# glibc's setrlimit (prlimit64 underneath), as programs and shells call it
for soft, hard in ((0, 0), (0, 1), (1, 1), (1 << 20, 1 << 20), (resource.RLIM_INFINITY, resource.RLIM_INFINITY)):
    rl = (ctypes.c_uint64 * 2)(soft, hard)
    ctypes.set_errno(0)
    r = libc.setrlimit(resource.RLIMIT_CORE, ctypes.byref(rl))
    e = ctypes.get_errno()
    check(f"setrlimit(RLIMIT_CORE, ({soft:#x}, {hard:#x})): {ename(e) if r else 'SUCCEEDED'}",
          r == -1 and e == errno.EINVAL)
zero = (ctypes.c_uint64 * 2)(0, 0)
expect_sys("raw setrlimit(RLIMIT_CORE, 0)", {errno.EINVAL}, NR_setrlimit, resource.RLIMIT_CORE, ctypes.addressof(zero))
expect_sys("raw setrlimit(RLIMIT_CORE | 1<<32, 0)", {errno.EINVAL}, NR_setrlimit, (1 << 32) | resource.RLIMIT_CORE,
           ctypes.addressof(zero))
expect_sys("prlimit64(0, RLIMIT_CORE, 0)", {errno.EINVAL}, NR_prlimit64, 0, resource.RLIMIT_CORE,
           ctypes.addressof(zero), 0)
expect_sys(f"prlimit64({os.getpid()}, RLIMIT_CORE, 0)", {errno.EINVAL}, NR_prlimit64, os.getpid(),
           resource.RLIMIT_CORE, ctypes.addressof(zero), 0)
rd, wr = os.pipe()
child = os.fork()
if child == 0:
    os.read(rd, 1)
    os._exit(0)
expect_sys("prlimit64(child, RLIMIT_CORE, 0)", {errno.EINVAL}, NR_prlimit64, child, resource.RLIMIT_CORE,
           ctypes.addressof(zero), 0)
os.write(wr, b"x")
os.waitpid(child, 0)
check(f"RLIMIT_CORE is still 1/1 ({resource.getrlimit(resource.RLIMIT_CORE)})",
      resource.getrlimit(resource.RLIMIT_CORE) == (1, 1))

work = "/tmp/hutchsec-crash"
os.makedirs(work, exist_ok=True)
os.chdir(work)
for sig in (signal.SIGSEGV, signal.SIGABRT):
    pid = os.fork()
    if pid == 0:
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(0)
    _, st = os.waitpid(pid, 0)
    check(f"a child killed by {sig.name} died of it without a core dump (status {st:#x})",
          os.WIFSIGNALED(st) and os.WTERMSIG(st) == sig and not os.WCOREDUMP(st))
left = os.listdir(work)
check(f"no core file was written ({left})", not left)
end()
