# ATTACK: take hutch-init (PID 1) away without sending it a signal.
#                                                       (run as root and user)
# Tries: prlimit64 on PID 1 with new limits: RLIMIT_CPU (the kernel enforces
# a hard CPU limit with SIGKILL, which would end init and the sandbox),
# RLIMIT_NOFILE and RLIMIT_NPROC (init could no longer accept a connection
# or start a command), RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_CORE, also with
# garbage in the upper half of the pid; raising PID 1's OOM score through
# /proc/1/oom_score_adj, /proc/1/oom_adj (the old interface to the same
# value) and their /proc/1/task/1 copies, which would make init the first
# victim when the sandbox hits its memory limit.
#
# Why it must fail: root inside is the same uid as init, so the kernel alone
# allows both. seccomp refuses prlimit64 with a new limit for pid 1 (EPERM;
# for RLIMIT_CORE the rule of that resource may answer first: success that
# changes nothing, see core_dumps.py); the OOM files
# of PID 1 are read-only binds made by init's setup stage (EROFS). user also
# lacks the kernel's permission (EPERM, EACCES).
#
# Expected: every attempt fails as listed; afterwards /proc/1/limits and
# PID 1's OOM score are what they were, and PID 1 is still hutch-init,
# running. Reading PID 1's limits (root) and raising the caller's own OOM
# score still work. The values asked for would be harmless if they got through
# (an hour of CPU, 512 files).
import resource

NR_prlimit64 = 302
before_limits = read_text("/proc/1/limits")
before_oom = read_text("/proc/1/oom_score_adj").strip()

asks = [("RLIMIT_CPU", resource.RLIMIT_CPU, 3600), ("RLIMIT_NOFILE", resource.RLIMIT_NOFILE, 512),
        ("RLIMIT_NPROC", resource.RLIMIT_NPROC, 4096), ("RLIMIT_AS", resource.RLIMIT_AS, 64 << 30),
        ("RLIMIT_FSIZE", resource.RLIMIT_FSIZE, 1 << 30), ("RLIMIT_CORE", resource.RLIMIT_CORE, 1)]
for name, res, v in asks:
    new = (ctypes.c_uint64 * 2)(v, v)
    for pid, pname in ((1, "1"), ((1 << 32) | 1, "1 | 1<<32")):
        r, e = raw(NR_prlimit64, pid, res, ctypes.addressof(new), 0)
        if res == resource.RLIMIT_CORE and r == 0:
            ok(f"prlimit64({pname}, {name}, {v}): returns 0 without effect (checked below)")
        else:
            check(f"prlimit64({pname}, {name}, {v}): {ename(e) if r else 'SUCCEEDED'}", r == -1 and e == errno.EPERM)
if WHO == "root":
    old = (ctypes.c_uint64 * 2)()
    r, e = raw(NR_prlimit64, 1, resource.RLIMIT_NOFILE, 0, ctypes.addressof(old))
    check(f"reading PID 1's RLIMIT_NOFILE still works ({old[0]}, {old[1]})", r == 0, ename(e))

for f in ("/proc/1/oom_score_adj", "/proc/1/task/1/oom_score_adj", "/proc/1/oom_adj", "/proc/1/task/1/oom_adj"):
    value = "15" if f.endswith("oom_adj") else "1000"
    allowed = {errno.EROFS} if WHO == "root" else {errno.EROFS, errno.EACCES}

    def write(path=f, v=value):
        with open(path, "w") as fh:
            fh.write(v)

    expect_oserror(f"write {value} to {f}", allowed, write)

check("/proc/1/limits is unchanged", read_text("/proc/1/limits") == before_limits)
after_oom = read_text("/proc/1/oom_score_adj").strip()
check(f"PID 1's oom_score_adj is unchanged ({before_oom} -> {after_oom})", after_oom == before_oom)
try:
    with open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("500")
    own = read_text("/proc/self/oom_score_adj").strip()
    check(f"a process can still raise its own OOM score ({own})", own == "500")
except OSError as e:
    not_ok(f"raising the caller's own OOM score: {ename(e.errno)}")
cmdline = read_text("/proc/1/cmdline").replace("\0", " ")
state = read_text("/proc/1/stat").rsplit(")", 1)[1].split()[0]
check(f"PID 1 is still hutch-init and running ({cmdline.strip()!r}, state {state})",
      "hutch-init" in cmdline and state in ("S", "R"))
end()
