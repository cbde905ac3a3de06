# ATTACK: make a crash inside the sandbox start a program on the host.
#                                                       (run as root and user)
# Tries: lower RLIMIT_CORE to 0 (glibc's setrlimit, the raw setrlimit
# syscall, prlimit64 on itself, its pid and a child) or raise it (1 MiB,
# unlimited), then crash children with SIGSEGV and SIGABRT.
#
# Why it must fail: with a piped core_pattern ("|/usr/lib/systemd/
# systemd-coredump ...", apport, abrt), the kernel starts the helper on the
# host, as host root, for every crash, whatever the crashing process's
# RLIMIT_CORE is (0 included), except when it is exactly 1: the kernel's
# guard against a crashing helper (fs/coredump.c). A limit of 1 is also
# below the smallest core file the kernel writes, so no core file is written
# either. Every sandbox process has RLIMIT_CORE 1/1 (set by init's setup
# stage before anything runs) and seccomp turns every call that sets it into
# a success that changes nothing (sanitizer runtimes and gpg die when
# lowering it fails); prlimit64 that also asks for the old value gets
# EINVAL. hutch-init itself is non-dumpable (proc_secrets.py: its /proc
# files refuse even root).
#
# Expected: RLIMIT_CORE is 1/1 here and for PID 1 (/proc/1/limits); every
# call that sets it returns 0 (EINVAL with an old-value pointer) and leaves
# it 1/1, for itself and for the child; each crashing child dies by its
# signal without the "core dumped" flag (which a piped core_pattern with
# RLIMIT_CORE 0 would set) and leaves no core file in its directory.
import resource
import signal

NR_setrlimit, NR_prlimit64 = 160, 302
check(f"RLIMIT_CORE is 1/1 ({resource.getrlimit(resource.RLIMIT_CORE)})",
      resource.getrlimit(resource.RLIMIT_CORE) == (1, 1))
line = [l.split() for l in read_text("/proc/1/limits").splitlines() if l.startswith("Max core file size")]
check(f"PID 1's RLIMIT_CORE is 1/1 ({line})", line and line[0][4:6] == ["1", "1"])

def core_limit(pid="self"):
    line = [l.split() for l in read_text(f"/proc/{pid}/limits").splitlines() if l.startswith("Max core file size")]
    return tuple(line[0][4:6]) if line else None


def ignored(desc, r, e, pid="self"):
    """A call that sets RLIMIT_CORE: returns 0 and changes nothing."""
    check(f"{desc}: {ename(e) if r else 'returns 0'}, RLIMIT_CORE still {core_limit(pid)}",
          r == 0 and core_limit(pid) == ("1", "1"))


# glibc's setrlimit (prlimit64 underneath), as programs and shells call it
for soft, hard in ((0, 0), (0, 1), (1, 1), (1 << 20, 1 << 20), (resource.RLIM_INFINITY, resource.RLIM_INFINITY)):
    rl = (ctypes.c_uint64 * 2)(soft, hard)
    ctypes.set_errno(0)
    r = libc.setrlimit(resource.RLIMIT_CORE, ctypes.byref(rl))
    ignored(f"setrlimit(RLIMIT_CORE, ({soft:#x}, {hard:#x}))", r, ctypes.get_errno())
zero = (ctypes.c_uint64 * 2)(0, 0)
old = (ctypes.c_uint64 * 2)()
ignored("raw setrlimit(RLIMIT_CORE, 0)", *raw(NR_setrlimit, resource.RLIMIT_CORE, ctypes.addressof(zero)))
ignored("raw setrlimit(RLIMIT_CORE | 1<<32, 0)",
        *raw(NR_setrlimit, (1 << 32) | resource.RLIMIT_CORE, ctypes.addressof(zero)))
ignored("prlimit64(0, RLIMIT_CORE, 0)", *raw(NR_prlimit64, 0, resource.RLIMIT_CORE, ctypes.addressof(zero), 0))
ignored(f"prlimit64({os.getpid()}, RLIMIT_CORE, 0)",
        *raw(NR_prlimit64, os.getpid(), resource.RLIMIT_CORE, ctypes.addressof(zero), 0))
expect_sys("prlimit64(0, RLIMIT_CORE, 0, &old)", {errno.EINVAL}, NR_prlimit64, 0, resource.RLIMIT_CORE,
           ctypes.addressof(zero), ctypes.addressof(old))
rd, wr = os.pipe()
child = os.fork()
if child == 0:
    os.read(rd, 1)
    os._exit(0)
ignored("prlimit64(child, RLIMIT_CORE, 0)",
        *raw(NR_prlimit64, child, resource.RLIMIT_CORE, ctypes.addressof(zero), 0), pid=child)
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
