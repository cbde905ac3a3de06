# ATTACK: kill, stop or confuse hutch-init (PID 1) with signals.
#                                                       (run as root and user)
# Tries: every signal 1..64 (SIGKILL, SIGTERM, SIGSTOP, SIGSEGV, SIGCHLD
# storms, real-time signals ...) to PID 1 through kill(), tgkill(),
# rt_sigqueueinfo() and pidfd_send_signal(); then kill(-1, SIGKILL) (every
# process the caller may signal). If init died, the sandbox would die with
# it (and `hutch run` with it); if it stopped, no process would be reaped
# and no output delivered.
#
# Why it must fail: the kernel drops every signal sent from inside a PID
# namespace to its init unless init installed a handler for it; hutch-init
# installs none (SIGPIPE is ignored, SIGCHLD is blocked and read through a
# signalfd). SIGKILL and SIGSTOP are never delivered to a namespace init from
# inside. user additionally lacks permission to signal root's init.
#
# Expected: after all of that, in the same sandbox, a follow-up command runs
# and prints its output, PID 1 is still hutch-init, not stopped ("S" state),
# and still reaps orphans (a double-forked child does not stay a zombie).
import signal
import subprocess
import time

NR_tgkill, NR_rt_sigqueueinfo, NR_pidfd_open, NR_pidfd_send_signal = 234, 129, 434, 424

pidfd, _ = raw(NR_pidfd_open, 1, 0)
sigs = [s for s in range(1, 65) if s not in (signal.SIGKILL, signal.SIGSTOP)] + [signal.SIGSTOP, signal.SIGKILL]
errs = {}
for s in sigs:
    for how in ("kill", "tgkill", "sigqueue", "pidfd"):
        if how == "kill":
            r, e = raw(62, 1, s)
        elif how == "tgkill":
            r, e = raw(NR_tgkill, 1, 1, s)
        elif how == "sigqueue":
            info = ctypes.create_string_buffer(128)
            ctypes.memmove(info, (ctypes.c_int * 3)(s, 0, -1), 12)   # si_code SI_QUEUE
            r, e = raw(NR_rt_sigqueueinfo, 1, s, ctypes.addressof(info))
        else:
            r, e = raw(NR_pidfd_send_signal, pidfd, s, 0, 0) if pidfd >= 0 else (-1, errno.EBADF)
        errs[ename(e)] = errs.get(ename(e), 0) + 1
print(f"# {len(sigs) * 4} signals sent to PID 1, results: {errs}", flush=True)
time.sleep(0.3)
r, e = raw(62, -1 & 0xFFFFFFFFFFFFFFFF, signal.SIGKILL)   # kill(-1, SIGKILL)
print(f"# kill(-1, SIGKILL): {r} {ename(e)}", flush=True)
time.sleep(0.2)

# follow-up command in the same sandbox
out = subprocess.run(["/bin/sh", "-c", "echo follow-up-ran; cat /proc/1/cmdline | tr '\\0' ' '"],
                     capture_output=True, text=True, timeout=10).stdout
check("a follow-up command runs in the same sandbox after the signals", "follow-up-ran" in out, repr(out))
check("PID 1 is still hutch-init", "hutch-init" in out, repr(out))
state = read_text("/proc/1/stat").rsplit(")", 1)[1].split()[0]
check(f"PID 1 is not stopped or dead (state {state})", state in ("S", "R"))
# init still reaps: an orphan must not stay a zombie
mid = os.fork()
if mid == 0:
    if os.fork() == 0:
        os._exit(0)    # grandchild: orphaned to PID 1 once `mid` exits
    os._exit(0)
os.waitpid(mid, 0)
time.sleep(0.3)
zombies = [p for p in os.listdir("/proc") if p.isdigit()
           and read_text(f"/proc/{p}/stat").rsplit(")", 1)[1].split()[0] == "Z"]
check("PID 1 still reaps orphans (no zombies left)", not zombies, str(zombies))
end()
