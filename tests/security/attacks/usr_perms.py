# ATTACK: read files of the host's /usr that the host keeps from ordinary
# users (modes without the "other" read bit).           (run as root and user)
# run.sh passes up to five such host paths as arguments (found with
# `find /usr -xdev ! -perm -o=r`); with none, there is nothing to try.
#
# Why user must fail: /usr is idmapped so that host uid N appears as uid N
# inside; the file modes are the host's, and uid 1000 has no capability.
#
# Known limitation (reported as "# FINDING", not counted as a failure):
# root in the sandbox holds CAP_DAC_OVERRIDE, and the idmap maps the host
# owner (root, or a system uid below 65536) into the sandbox's user
# namespace, so sandbox root *can* read such files. /usr is shared
# deliberately; secrets do not belong there.
#
# Expected: user EACCES on every path; root: a FINDING line per readable path.
paths = sys.argv[1:]
if not paths:
    ok("the host has no /usr path hidden from other users; nothing to try")
for p in paths:
    try:
        if os.path.isdir(p):
            n = len(os.listdir(p))
            what = f"listed ({n} entries)"
        else:
            with open(p, "rb") as f:
                n = len(f.read(4096))
            what = f"read ({n} bytes)"
    except OSError as e:
        check(f"{p} (hidden from others on the host): {ename(e.errno)}", e.errno == errno.EACCES)
        continue
    if WHO == "root":
        print(f"# FINDING: sandbox root {what} host path {p}, which host non-root users cannot", flush=True)
    else:
        not_ok(f"user {what} {p}, which is hidden from others on the host")
end()
