# ATTACK: read or write another process's memory and file descriptors.
#                                                       (run as root and user)
# Tries, against hutch-init (PID 1, holds the daemon's socket) and against a
# sibling process of the same uid (which the kernel alone would allow):
#  ptrace PTRACE_ATTACH / PTRACE_SEIZE / PTRACE_TRACEME, process_vm_readv,
#  process_vm_writev, pidfd_getfd (steal fd 3, the protocol socket, from
#  init), process_madvise, kcmp (compare kernel objects across processes).
#
# Why it must fail: seccomp denies ptrace, process_vm_readv/writev,
# pidfd_getfd, process_madvise and kcmp with EPERM, whatever the target; for
# PID 1 the non-dumpable flag and the missing CAP_SYS_PTRACE would refuse it
# a second time.
#
# Expected: EPERM for every call.
import signal
import time

PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_SEIZE = 0, 16, 0x4206
NR_ptrace, NR_pvr, NR_pvw, NR_kcmp = 101, 310, 311, 312
NR_pidfd_open, NR_pidfd_getfd, NR_process_madvise = 434, 438, 440

child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)

buf = ctypes.create_string_buffer(64)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = iovec(ctypes.addressof(buf), 64)
remote = iovec(0x400000, 64)

for target, name in ((1, "PID 1"), (child, "a sibling")):
    expect_sys(f"ptrace(PTRACE_ATTACH, {name})", {errno.EPERM}, NR_ptrace, PTRACE_ATTACH, target, 0, 0)
    expect_sys(f"ptrace(PTRACE_SEIZE, {name})", {errno.EPERM}, NR_ptrace, PTRACE_SEIZE, target, 0, 0)
    expect_sys(f"process_vm_readv({name})", {errno.EPERM}, NR_pvr, target,
               ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
    expect_sys(f"process_vm_writev({name})", {errno.EPERM}, NR_pvw, target,
               ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
    expect_sys(f"kcmp(self, {name}, KCMP_FILE)", {errno.EPERM}, NR_kcmp, os.getpid(), target, 0, 0, 0)
    pidfd, e = raw(NR_pidfd_open, target, 0)
    if pidfd < 0:
        ok(f"pidfd_open({name}) refused ({ename(e)})")
        continue
    for fd in (0, 3):
        expect_sys(f"pidfd_getfd({name}, fd {fd})", {errno.EPERM}, NR_pidfd_getfd, pidfd, fd, 0)
    expect_sys(f"process_madvise({name})", {errno.EPERM}, NR_process_madvise, pidfd,
               ctypes.addressof(remote), 1, 8, 0)   # MADV_FREE
    os.close(pidfd)
r, e = raw(NR_ptrace, PTRACE_TRACEME, 0, 0, 0)
check(f"ptrace(PTRACE_TRACEME): {ename(e)}", r == -1 and e == errno.EPERM)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
end()
