# ATTACK: use a directory fd of the host's that reached the sandbox.
#                           (run.sh: as root and as user, with a volume
#                            holding a unix socket the host serves)
#
# Models a leak: a host process that hands out a file descriptor over a
# unix socket in a shared volume (a helper, a bug in a tool, a mistaken
# SCM_RIGHTS). The host's server (run.sh: fd_server) sends three fds: a
# directory fd of the host directory holding a secret file (0644), an O_PATH
# fd of that file, and a directory fd of the host's /etc.
#
# Tries (argv: SOCKET):
#   1. openat(dirfd, "vol-secret"), openat(dirfd, ".."), openat(etcfd,
#      "passwd"), openat(writable, "host-file"), fchdir(writable) +
#      open("host-file");
#   2. reopen the O_PATH fd through /proc/self/fd/N (a path walk too);
#   3. create files through the writable directory's fd: mkdirat,
#      openat(O_CREAT), symlinkat, mknodat of a fifo.
#
# Why it must fail: hutch-init confines itself to the sandbox's own tree
# with Landlock before anything runs, and every sandbox process inherits
# that domain: a path walk that starts outside the tree gets no access
# right at all (EACCES). Without Landlock each read here would return the
# host file (uid permissions allow it) and each create would succeed.
#
# Expected: EACCES everywhere; the sandbox's own files stay readable.
import array
import socket

sock_path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock_path)
msg, anc, _flags, _addr = s.recvmsg(16, socket.CMSG_SPACE(4 * 4))
fds = array.array("i")
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - len(data) % 4])
check("the host's fd server handed over 4 fds (the setting this attack needs)", len(fds) == 4, f"got {len(fds)}")
if len(fds) == 4:
    dirfd, pathfd, etcfd, openfd = fds
    D = {errno.EACCES}
    expect_oserror("openat(host dirfd, 'vol-secret')", D, os.open, "vol-secret", os.O_RDONLY, dir_fd=dirfd)
    expect_oserror("openat(host dirfd, '..'): the host's /tmp", D, os.open, "..", os.O_RDONLY | os.O_DIRECTORY,
                   dir_fd=dirfd)
    expect_oserror("openat(host /etc fd, 'passwd')", D, os.open, "passwd", os.O_RDONLY, dir_fd=etcfd)
    expect_oserror("reopen the host file's O_PATH fd via /proc/self/fd", D, os.open, f"/proc/self/fd/{pathfd}",
                   os.O_RDONLY)
    expect_oserror("mkdirat(writable host dirfd, 'hutchsec-pwn-dir')", D, os.mkdir, "hutchsec-pwn-dir", dir_fd=openfd)
    expect_oserror("openat(writable host dirfd, 'hutchsec-pwn-file', O_CREAT)", D, os.open, "hutchsec-pwn-file",
                   os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=openfd)
    expect_oserror("symlinkat into the writable host dir", D, os.symlink, "/", "hutchsec-pwn-link", dir_fd=openfd)
    expect_oserror("mkfifo in the writable host dir", D, os.mkfifo, "hutchsec-pwn-fifo", dir_fd=openfd)
    expect_oserror("openat(writable host dirfd, 'host-file')", D, os.open, "host-file", os.O_RDONLY, dir_fd=openfd)
    cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    os.fchdir(openfd)  # chdir is not a Landlock right; what follows is
    expect_oserror("fchdir(writable host dirfd) + open('host-file')", D, os.open, "host-file", os.O_RDONLY)
    os.fchdir(cwd)
try:
    with open("/etc/passwd") as f:
        check("the sandbox's own /etc/passwd is still readable", "user:x:1000" in f.read())
except OSError as e:
    not_ok(f"the sandbox's own /etc/passwd: {ename(e.errno)}")
end()
