# ATTACK: use a --tmpfs mount to take more memory than the sandbox has, or to
# lift its size cap.
#                           (run.sh: `hutch run --memory 64M --tmpfs
#                            /scratch:64M`, as root and as user)
#
# Tries:
#   1. a writer fills /scratch with 128 MiB (twice the memory limit); the
#      tmpfs's pages are not in any process's RSS, so no kill frees them;
#   2. root: remount /scratch with size=1G (mount(2) and fsconfig), or mount
#      a fresh tmpfs of no size cap;
#   3. after the fill, the sandbox goes on: the file is removed and its
#      memory can be written again.
#
# Why it must fail: the tmpfs is capped at SIZE, which hutch run refuses
# above --memory, and its pages are charged to the memory cgroup of whoever
# writes them, the sandbox's; seccomp refuses every mount call inside.
#
# Expected: the writer gets ENOSPC or ENOMEM, or the OOM killer takes it (it
# asks to be the first victim); the tmpfs never holds more than 64 MiB;
# EPERM for the mount calls.
import subprocess

MIB = 1 << 20
LIMIT = 64 * MIB
S = "/scratch"
FILL = f"{S}/fill-{WHO}"

WRITER = f"""
import errno, os, sys
with open("/proc/self/oom_score_adj", "w") as f:
    f.write("1000")
fd = os.open("{FILL}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
chunk = b"x" * {MIB}
try:
    for _ in range(128):
        os.write(fd, chunk)
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno), flush=True)
    sys.exit(0)
print("all-written", flush=True)
"""

st = os.statvfs(S)
check("the tmpfs is capped at the memory limit", st.f_blocks * st.f_frsize == LIMIT,
      f"({st.f_blocks * st.f_frsize} bytes)")
w = subprocess.run([sys.executable, "-c", WRITER], capture_output=True, text=True)
out = w.stdout.strip()
check("writing twice the memory limit into the tmpfs stops (ENOSPC, ENOMEM or the OOM killer)",
      w.returncode == -9 or out in ("ENOSPC", "ENOMEM"), f"(exit {w.returncode}, said {out!r})")
held = os.stat(FILL).st_size if os.path.exists(FILL) else 0
st = os.statvfs(S)
used = (st.f_blocks - st.f_bfree) * st.f_frsize
check("the tmpfs never held more than the memory limit", held <= LIMIT and used <= LIMIT,
      f"(file {held >> 20} MiB, tmpfs {used >> 20} MiB)")
os.unlink(FILL)
try:
    with open(f"{S}/again-{WHO}", "wb") as f:
        f.write(b"y" * (8 * MIB))
    os.unlink(f"{S}/again-{WHO}")
    ok(f"after the fill ({out or 'killed'}, {held >> 20} MiB held), the sandbox goes on and writes again")
except OSError as e:
    not_ok(f"writing after the fill failed: {ename(e.errno)}")

# mount(2) with MS_REMOUNT (32): a bigger cap; fsopen: a tmpfs without one
NR_mount, NR_fsopen = 165, 430
MS_REMOUNT = 32
expect_sys("remount the tmpfs with size=1G", {errno.EPERM}, NR_mount, None, S.encode(), None, MS_REMOUNT,
           b"size=1G")
expect_sys("fsopen a tmpfs of no cap", {errno.EPERM}, NR_fsopen, b"tmpfs", 0)
end()
