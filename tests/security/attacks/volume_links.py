# ATTACK: use a shared volume to reach host files or another sandbox's view.
#                           (run.sh: phase "plant" as root and user in one
#                            sandbox, then phase "follow" in another one)
#
# Tries (argv: PHASE HOSTTMP, where HOSTTMP is the host directory holding
# the volume and a host secret file next to it):
#  plant:
#   1. symlinks in the volume to host paths: the secret by its host path,
#      relative climbs (../../..), /proc/1/root/.., /proc/self/root/..;
#   2. hardlinks from the volume to files outside it (/etc/passwd of the
#      template, a /tmp file of this sandbox, /usr/bin/python3), also via
#      /proc/self/fd of an O_PATH fd;
#   3. root: a setuid-root copy of /usr/bin/id and a device node in the
#      volume, for the next sandbox (or the host) to use;
#   4. rename or remove the volume's mount point.
#  follow (a new sandbox, another host uid range):
#   5. read through every planted symlink and by the host path directly;
#   6. run the planted setuid copy as user.
#
# Why it must fail: the volume is a clone of one directory's mount, so
# symlinks resolve in the sandbox's own root (the host's tree is not
# there); a hardlink cannot cross mounts (EXDEV); volumes are nosuid and
# nodev and no_new_privs is set; mknod needs CAP_MKNOD in the host's
# namespace; a mount point is busy.
#
# Expected: no read returns the host secret; EXDEV for hardlinks; EACCES
# (Landlock) or EPERM for mknod; the setuid copy runs with euid 1000; EBUSY
# for the mount point.
import stat
import subprocess

phase, hosttmp = sys.argv[1], sys.argv[2]
SECRET_PATH = f"{hosttmp}/vol-secret"
V = "/vol"


def never_secret(desc, path):
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
        check(f"{desc}: not the host secret", b"HUTCHSEC-VOLUME-SECRET" not in data)
    except OSError as e:
        ok(f"{desc}: {ename(e.errno)}")


if phase == "plant":
    links = {
        f"abs-{WHO}": SECRET_PATH,
        f"rel-{WHO}": "../" * 12 + SECRET_PATH.lstrip("/"),
        f"proc1-{WHO}": "/proc/1/root" + SECRET_PATH,
        f"procself-{WHO}": "/proc/self/root/../../.." + SECRET_PATH,
    }
    for name, target in links.items():
        os.symlink(target, f"{V}/{name}")
        never_secret(f"plant: follow {name} -> {target}", f"{V}/{name}")
    with open(f"/tmp/own-{WHO}", "w") as f:
        f.write("x")
    for src in ("/etc/passwd", f"/tmp/own-{WHO}", "/usr/bin/python3"):
        expect_oserror(f"plant: hardlink {src} into the volume", {errno.EXDEV}, os.link, src, f"{V}/hl-{WHO}")
    fd = os.open("/etc/passwd", os.O_PATH)
    expect_oserror("plant: hardlink via /proc/self/fd of an O_PATH fd", {errno.EXDEV, errno.ENOENT},
                   os.link, f"/proc/self/fd/{fd}", f"{V}/hl2-{WHO}", follow_symlinks=True)
    os.close(fd)
    expect_oserror("plant: mknod a block device in the volume", {errno.EPERM, errno.EACCES},
                   os.mknod, f"{V}/sda-{WHO}", stat.S_IFBLK | 0o666, os.makedev(8, 0))
    if WHO == "root":
        with open("/usr/bin/id", "rb") as src, open(f"{V}/suid-id", "wb") as dst:
            dst.write(src.read())
        os.chmod(f"{V}/suid-id", 0o4755)
        check("plant: a setuid-root copy can be made (it must be inert)", os.stat(f"{V}/suid-id").st_mode & 0o4000)
    expect_oserror("plant: rename the volume's mount point", {errno.EBUSY, errno.EACCES, errno.EPERM},
                   os.rename, V, "/vol-moved")
    expect_oserror("plant: rmdir the volume's mount point", {errno.EBUSY, errno.EACCES, errno.EPERM}, os.rmdir, V)
    with open(f"{V}/planted-by-{WHO}", "w") as f:
        f.write(WHO)
else:
    for name in sorted(os.listdir(V)):
        p = f"{V}/{name}"
        if os.path.islink(p):
            never_secret(f"follow: {name} -> {os.readlink(p)}", p)
    never_secret("follow: the host path of the secret", SECRET_PATH)
    never_secret("follow: ../ climbing from the volume", f"{V}/" + "../" * 12 + SECRET_PATH.lstrip("/"))
    for who in ("root", "user"):
        p = f"{V}/planted-by-{who}"
        if os.path.exists(p):
            st = os.stat(p)
            check(f"follow: a file planted by {who} in another sandbox belongs to {who} here",
                  st.st_uid == (0 if who == "root" else 1000), f"(uid {st.st_uid})")
    if os.path.exists(f"{V}/suid-id") and WHO == "user":
        out = subprocess.run([f"{V}/suid-id", "-u"], capture_output=True, text=True).stdout.strip()
        check("follow: the planted setuid-root copy runs without privilege", out == "1000", f"(euid {out})")
end()
