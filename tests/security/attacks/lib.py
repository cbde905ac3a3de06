# Prelude for the Python attacks (tests/security/attacks/*.py). run.sh sends
# this file followed by one attack through stdin to `python3 -` inside a
# sandbox, so each attack runs with these helpers already defined.
#
# Protocol: one "ok - ..." or "not ok - ..." line per assertion, then
# "# end" as the last line. run.sh counts the lines, and a missing "# end"
# (the program crashed, hung or was killed) counts as a failure.
import ctypes
import errno
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
WHO = "root" if os.geteuid() == 0 else "user"
_failed = 0


def ok(desc):
    print(f"ok - [{WHO}] {desc}", flush=True)


def not_ok(desc):
    global _failed
    _failed += 1
    print(f"not ok - [{WHO}] {desc}", flush=True)


def check(desc, cond, detail=""):
    if cond:
        ok(desc)
    else:
        not_ok(f"{desc} {detail}".rstrip())


def ename(e):
    return errno.errorcode.get(e, str(e)) if e else "success"


def expect_oserror(desc, allowed, fn, *args, **kw):
    """The call must raise OSError with an errno in `allowed`."""
    try:
        r = fn(*args, **kw)
    except OSError as e:
        if e.errno in allowed:
            ok(f"{desc}: {ename(e.errno)}")
        else:
            not_ok(f"{desc}: expected {'/'.join(ename(a) for a in allowed)}, got {ename(e.errno)}")
        return e.errno
    not_ok(f"{desc}: SUCCEEDED (returned {r!r})")
    return 0


def _arg(a):
    if isinstance(a, int):
        return ctypes.c_ulong(a & 0xFFFFFFFFFFFFFFFF)
    return a


def raw(nr, *args):
    """Raw syscall: returns (result, errno)."""
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[_arg(a) for a in args])
    return r, (ctypes.get_errno() if r == -1 else 0)


def expect_sys(desc, allowed, nr, *args):
    """A raw syscall must fail with an errno in `allowed`."""
    r, e = raw(nr, *args)
    if r == -1 and e in allowed:
        ok(f"{desc}: {ename(e)}")
    elif r == -1:
        not_ok(f"{desc}: expected {'/'.join(ename(a) for a in allowed)}, got {ename(e)}")
    else:
        not_ok(f"{desc}: SUCCEEDED (returned {r})")
    return r, e


def end():
    print("# end", flush=True)
    sys.stdout.flush()
    os._exit(1 if _failed else 0)


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


def status_field(name, pid="self"):
    for line in read_text(f"/proc/{pid}/status").splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None


# --- attack follows ---
