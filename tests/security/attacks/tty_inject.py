# ATTACK: inject keystrokes into a terminal (TIOCSTI), paste a VT selection
# (TIOCLINUX), or switch line discipline (TIOCSETD).    (run as root and user)
#
# Tries: open /dev/ptmx, grantpt, unlockpt, open the slave; make the slave
# the controlling terminal of a new session (what an attached interactive
# session looks like); then TIOCSTI on the slave, on the master, and with
# garbage in the upper 32 bits of the request (CVE-2019-10063: the kernel
# truncates the request to 32 bits); TIOCLINUX subcodes 2 (set selection)
# and 3 (paste); TIOCSETD to N_HDLC and N_GSM (bug-prone line disciplines).
#
# Why it must fail: seccomp denies these ioctls, comparing the low 32 bits
# of the request as the kernel does.
#
# Expected: EPERM for every ioctl, and nothing arrives on the master.
import fcntl
import select
import termios

TIOCSTI, TIOCLINUX, TIOCSETD, TIOCSCTTY = 0x5412, 0x541C, 0x5423, 0x540E
libc.ioctl.restype = ctypes.c_int
libc.ptsname.restype = ctypes.c_char_p

m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
check("grantpt", libc.grantpt(m) == 0)
check("unlockpt", libc.unlockpt(m) == 0)
name = libc.ptsname(m).decode()
s = os.open(name, os.O_RDWR | os.O_NOCTTY)
ok(f"opened pty pair (slave {name})")


def ioctl(fd, req, arg):
    ctypes.set_errno(0)
    r = libc.ioctl(fd, ctypes.c_ulong(req), arg)
    return r, (ctypes.get_errno() if r == -1 else 0)


def expect_ioctl(desc, fd, req, arg):
    r, e = ioctl(fd, req, arg)
    if r == -1 and e == errno.EPERM:
        ok(f"{desc}: EPERM")
    else:
        not_ok(f"{desc}: expected EPERM, got r={r} {ename(e)}")


ch = ctypes.c_char(b"X")
# In a child: new session, slave as controlling terminal, then inject.
rfd, wfd = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(rfd)
    os.setsid()
    r, e = ioctl(s, TIOCSCTTY, ctypes.c_long(0))
    res = [f"sctty={r}/{ename(e)}"]
    for req in (TIOCSTI, TIOCSTI | (1 << 32), TIOCSTI | (0xFFFFFFFF << 32)):
        r, e = ioctl(s, req, ctypes.byref(ch))
        res.append(f"{r}/{ename(e)}")
    os.write(wfd, " ".join(res).encode())
    os._exit(0)
os.close(wfd)
res = os.read(rfd, 200).decode().split()
os.waitpid(pid, 0)
check(f"the slave became the child's controlling terminal ({res[0]})", res[0] == "sctty=0/success")
for desc, got in zip(("TIOCSTI on the controlling terminal", "TIOCSTI | 1<<32 on it", "TIOCSTI | 0xffffffff<<32 on it"), res[1:]):
    check(f"{desc}: {got}", got == "-1/EPERM")
expect_ioctl("TIOCSTI on the slave", s, TIOCSTI, ctypes.byref(ch))
expect_ioctl("TIOCSTI on the master", m, TIOCSTI, ctypes.byref(ch))
expect_ioctl("TIOCSTI | 1<<32 on the slave", s, TIOCSTI | (1 << 32), ctypes.byref(ch))
sel = (ctypes.c_char * 11)(b"\x02")     # TIOCL_SETSEL
expect_ioctl("TIOCLINUX set selection", s, TIOCLINUX, sel)
paste = ctypes.c_char(b"\x03")          # TIOCL_PASTESEL
expect_ioctl("TIOCLINUX paste", s, TIOCLINUX, ctypes.byref(paste))
for ldisc, lname in ((13, "N_HDLC"), (21, "N_GSM"), (0, "N_TTY")):
    expect_ioctl(f"TIOCSETD {lname}", s, TIOCSETD, ctypes.byref(ctypes.c_int(ldisc)))
# nothing was queued as input: the slave has nothing to read
rl, _, _ = select.select([s], [], [], 0.2)
got = os.read(s, 100) if rl else b""
check("no injected input arrived", b"X" not in got, repr(got))
try:
    t = os.open("/dev/tty", os.O_RDWR)
    expect_ioctl("TIOCSTI on /dev/tty", t, TIOCSTI, ctypes.byref(ch))
except OSError as e:
    ok(f"/dev/tty has no terminal behind it ({ename(e.errno)})")
end()
