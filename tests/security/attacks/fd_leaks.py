# ATTACK: use a file descriptor leaked into the sandbox by the runtime, the
# daemon or hutch-init (the init protocol socket, the sync socketpair, the
# sandbox directory fd, the /usr or template mount fds, the memfd of init).
#                                                       (run as root and user)
# Tries: probe every fd number up to the soft RLIMIT_NOFILE for something
# open besides 0, 1 and 2; resolve what 0-2 are; look for the host runner's
# environment (run.sh exports a marker variable and its temp dir before
# calling `hutch run`); as root, check every other visible process except
# PID 1 the same way.
#
# Why it must fail: the runtime closes every fd but the init socket before
# exec'ing hutch-init, marks that socket close-on-exec, and hutch-init
# spawns commands with exactly stdin/stdout/stderr (pipes or a pty); the
# command's environment is built from the request, not inherited from the
# host.
#
# Expected: only 0, 1, 2 open, each a pipe, a pty or /dev/null; no host
# environment; PID 1's fds were covered in proc_secrets.py.
import resource

needle = sys.argv[1] if len(sys.argv) > 1 else "/nonexistent-needle"
soft = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 65536)
openfds = []
for fd in range(0, soft):
    try:
        os.fstat(fd)
        openfds.append(fd)
    except OSError:
        pass
check(f"only fds 0,1,2 are open at start (probed 0..{soft - 1})", openfds == [0, 1, 2], str(openfds))
for fd in (0, 1, 2):
    t = os.readlink(f"/proc/self/fd/{fd}")
    check(f"fd {fd} is a pipe, pty or /dev/null ({t})",
          t.startswith("pipe:") or t.startswith("/dev/pts/") or t == "/dev/null")
env_hits = [k for k, v in os.environ.items()
            if k.startswith(("HUTCH_", "HUTCHSEC_RUNNER", "ASAN_", "SSH_", "SUDO_")) or needle in v]
check("no host environment leaked into the command", not env_hits, str(env_hits))
if WHO == "root":
    me = os.getpid()
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) in (1, me):
            continue
        try:
            fds = sorted(int(f) for f in os.listdir(f"/proc/{p}/fd"))
        except OSError:
            continue
        check(f"process {p} holds only fds 0-2", fds == [0, 1, 2], str(fds))
# a freshly spawned grandchild sees the same
out = __import__("subprocess").run(["/bin/sh", "-c", "ls /proc/$$/fd"], capture_output=True, text=True).stdout.split()
check(f"a spawned shell has only 0,1,2 ({' '.join(out)})", sorted(out) == ["0", "1", "2"])
end()
