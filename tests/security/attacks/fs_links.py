# ATTACK: escape or corrupt shared files through symlinks, hardlinks and the
# overlay's own metadata.                               (run as root and user)
#
# Tries:
#  1. symlinks in the writable layer that point out of the sandbox:
#     /proc/1/root/.., /proc/self/root/../../.., ../../../../..;
#  2. hardlink a /usr file into the writable layer, then write through it;
#     reopen a /usr file read-write through /proc/self/fd of an O_PATH fd;
#     chmod/chown/rename/unlink/xattr on /usr (shared by every sandbox);
#  3. hardlink /etc/passwd (template lower layer) and write through the link,
#     and write /etc/passwd directly (root): must copy up into this sandbox's
#     upper layer only. run.sh then checks the host's template copy and the
#     host's /etc/passwd are byte-identical to before;
#  4. forge overlayfs metadata: set user.overlay.* (redirect/origin/opaque/
#     metacopy, the layer's private xattrs with `userxattr`) and
#     trusted.overlay.* on files and dirs of the upper layer;
#  5. replace the /usr and /proc mount points by rename/rmdir.
#
# Why it must fail: symlinks resolve in the sandbox's own root (pivot_root
# detached the old one) and /proc/1/root needs ptrace access to the
# non-dumpable init; /usr is a separate read-only mount (EXDEV for links
# across mounts, EROFS for any change); the template is a read-only lower
# layer so writes copy up; overlayfs refuses to set its own private xattrs
# and trusted.* needs CAP_SYS_ADMIN in the init namespace; a mount point is
# busy.
#
# Expected: EACCES through /proc/1/root; "/" for the others; EXDEV/EROFS/EPERM
# for /usr; copy-up only for /etc/passwd (host copy unchanged, checked by
# run.sh); EPERM for trusted.overlay.*; user.overlay.* accepted but stored
# escaped as user.overlay.overlay.* (checked by run.sh on the host side);
# EBUSY/EACCES for mount points.

MARK = b"HUTCHSEC-PWNED\n"
tmp = f"/tmp/fsl-{WHO}"
os.makedirs(tmp, exist_ok=True)
root_st = os.stat("/")

# 1. symlinks
os.symlink("/proc/1/root/..", f"{tmp}/out1")
expect_oserror("symlink -> /proc/1/root/.. cannot be followed", {errno.EACCES}, os.listdir, f"{tmp}/out1")
for i, target in enumerate(("/proc/self/root/../../..", "../../../../../../../..", "/proc/1/cwd/../..")):
    os.symlink(target, f"{tmp}/s{i}")
    try:
        st = os.stat(f"{tmp}/s{i}")
        check(f"symlink -> {target} stays in the sandbox's /",
              (st.st_dev, st.st_ino) == (root_st.st_dev, root_st.st_ino))
    except OSError as e:
        check(f"symlink -> {target}: {ename(e.errno)}", e.errno == errno.EACCES)

# 2. /usr is shared and read-only
expect_oserror("hardlink /usr/bin/python3 into /tmp", {errno.EXDEV}, os.link, "/usr/bin/python3", f"{tmp}/py")
expect_oserror("hardlink inside /usr", {errno.EROFS, errno.EPERM}, os.link, "/usr/bin/python3", "/usr/bin/hutchsec-py")
fd = os.open("/usr/bin/su", os.O_PATH)     # a file nobody executes: EROFS, not ETXTBSY
expect_oserror("linkat(/proc/self/fd/N of a /usr file, AT_SYMLINK_FOLLOW)", {errno.EXDEV, errno.ENOENT},
               os.link, f"/proc/self/fd/{fd}", f"{tmp}/py2", follow_symlinks=True)
expect_oserror("reopen an O_PATH /usr fd for writing via /proc/self/fd", {errno.EROFS, errno.EACCES},
               os.open, f"/proc/self/fd/{fd}", os.O_WRONLY)
os.close(fd)
expect_oserror("open /usr/bin/su for append", {errno.EROFS, errno.EACCES}, os.open, "/usr/bin/su", os.O_WRONLY | os.O_APPEND)
expect_oserror("create /usr/bin/hutchsec", {errno.EROFS, errno.EACCES}, os.open, "/usr/bin/hutchsec", os.O_WRONLY | os.O_CREAT, 0o755)
expect_oserror("chmod 4777 /usr/bin/su", {errno.EROFS, errno.EPERM}, os.chmod, "/usr/bin/su", 0o4777)
expect_oserror("chown /usr/bin/su", {errno.EROFS, errno.EPERM}, os.chown, "/usr/bin/su", 1000, 1000)
expect_oserror("truncate /usr/bin/su", {errno.EROFS, errno.EACCES}, os.truncate, "/usr/bin/su", 0)
expect_oserror("rename in /usr", {errno.EROFS, errno.EACCES}, os.rename, "/usr/bin/su", "/usr/bin/su.old")
expect_oserror("unlink /usr/bin/su", {errno.EROFS, errno.EACCES}, os.unlink, "/usr/bin/su")
expect_oserror("setxattr on /usr/bin/su", {errno.EROFS, errno.EPERM}, os.setxattr, "/usr/bin/su", "user.x", b"1")
expect_oserror("utime on /usr/bin/su", {errno.EROFS, errno.EPERM}, os.utime, "/usr/bin/su", (0, 0))

# 3. the template's /etc/passwd
if WHO == "root":
    before = read_text("/etc/passwd")
    os.link("/etc/passwd", f"{tmp}/pw")      # allowed: overlay copies up first
    with open(f"{tmp}/pw", "ab") as f:
        f.write(MARK)
    with open("/etc/passwd", "ab") as f:
        f.write(MARK)
    check("writes to /etc/passwd land in this sandbox (copy-up)", MARK.decode() in read_text("/etc/passwd"))
    print("# wrote-passwd", flush=True)      # run.sh now compares the host copies
    check("the template's original passwd content is still there", read_text("/etc/passwd").startswith(before))
else:
    # fs.protected_hardlinks: user may not link a file it cannot write
    expect_oserror("hardlink /etc/passwd as user", {errno.EPERM}, os.link, "/etc/passwd", f"{tmp}/pw")
    expect_oserror("write /etc/passwd as user", {errno.EACCES}, os.open, "/etc/passwd", os.O_WRONLY | os.O_APPEND)

# 4. overlay private xattrs. overlayfs (Linux >= 6.7) either refuses them or
# stores them *escaped* in the upper layer (user.overlay.overlay.X), where
# they are plain data and never interpreted. Only the host can tell which, so
# the attack prints "# forged-xattrs DIR", keeps the sandbox alive for a
# moment, and run.sh inspects DIR in the upper layer: every user.overlay.*
# name on the forged files must be escaped.
with open(f"{tmp}/f", "w") as f:
    f.write("x")
os.mkdir(f"{tmp}/d")
for path, name, value in ((f"{tmp}/f", "user.overlay.redirect", b"/usr/bin"),
                          (f"{tmp}/f", "user.overlay.origin", b"\x00" * 16),
                          (f"{tmp}/f", "user.overlay.metacopy", b""),
                          (f"{tmp}/d", "user.overlay.opaque", b"y"),
                          (f"{tmp}/d", "user.overlay.redirect", b"/etc"),
                          (f"{tmp}/f", "trusted.overlay.redirect", b"/usr"),
                          (f"{tmp}/d", "trusted.overlay.opaque", b"y")):
    try:
        os.setxattr(path, name, value)
    except OSError as e:
        check(f"setxattr {name} on {path}: {ename(e.errno)}", e.errno in (errno.EPERM, errno.EOPNOTSUPP, errno.EACCES))
    else:
        check(f"setxattr {name} on {path}: accepted, stored escaped (run.sh checks the upper layer)",
              name.startswith("user."), "trusted.* must need CAP_SYS_ADMIN")
print(f"# forged-xattrs {tmp}", flush=True)
import time
time.sleep(2)
# 5. mount points
expect_oserror("rename /usr", {errno.EBUSY, errno.EXDEV, errno.EACCES}, os.rename, "/usr", "/usr.old")
expect_oserror("rmdir /proc", {errno.EBUSY, errno.ENOTEMPTY, errno.EACCES}, os.rmdir, "/proc")
expect_oserror("rename over /proc", {errno.EBUSY, errno.EXDEV, errno.EACCES, errno.EISDIR}, os.rename, f"{tmp}/d", "/proc")
end()
