# POSTURE: the state every sandbox process must be in.  (run as root and user)
#
# Checks: NoNewPrivs 1 and Seccomp 2 (filter mode) in /proc/self/status and
# through prctl; user has no capability in any set; root has exactly
# HU_CAPS_ROOT_DEFAULT (0xa00005fb: CHOWN DAC_OVERRIDE FOWNER FSETID KILL
# SETGID SETUID SETPCAP NET_BIND_SERVICE AUDIT_WRITE SETFCAP) as effective,
# permitted, inheritable and bounding set, nothing ambient, and cannot add
# CAP_SYS_ADMIN through capset or the ambient set; the user namespace maps
# 65536 ids starting at an unprivileged host uid >= 2^30 (printed as
# "# uid_base N" so run.sh can compare two concurrent sandboxes); the cgroup
# namespace is rooted at the sandbox's own group ("0::/"); nested user
# namespaces are off (max_user_namespaces 0); the same posture holds for
# hutch-init itself (NoNewPrivs, Seccomp, exactly HU_CAPS_ROOT_DEFAULT in
# every set, nothing ambient: a bug in its request handling gets no more
# than a root command has).
#
# Why it must hold: see docs/security.md, "Capabilities" and "Layers".
MASK = 0xA00005FB
NAMES = {0: "CHOWN", 1: "DAC_OVERRIDE", 3: "FOWNER", 4: "FSETID", 5: "KILL", 6: "SETGID", 7: "SETUID",
         8: "SETPCAP", 10: "NET_BIND_SERVICE", 29: "AUDIT_WRITE", 31: "SETFCAP"}

check("NoNewPrivs: 1", status_field("NoNewPrivs") == "1")
check("Seccomp: 2 (filter)", status_field("Seccomp") == "2")
check("at least one filter loaded", int(status_field("Seccomp_filters") or 0) >= 1)
check("prctl(PR_GET_NO_NEW_PRIVS) = 1", libc.prctl(39, 0, 0, 0, 0) == 1)
check("prctl(PR_GET_SECCOMP) = 2", libc.prctl(21, 0, 0, 0, 0) == 2)
want = MASK if WHO == "root" else 0
for f in ("CapInh", "CapPrm", "CapEff", "CapBnd"):
    v = int(status_field(f), 16)
    check(f"{f} = {v:#x} (expected {want:#x})", v == want)
check("CapAmb = 0", int(status_field("CapAmb"), 16) == 0)
if WHO == "root":
    check("the mask is the eleven documented capabilities",
          sorted(i for i in range(64) if MASK >> i & 1) == sorted(NAMES))
for cap, name in ((21, "SYS_ADMIN"), (19, "SYS_PTRACE"), (12, "NET_ADMIN"), (13, "NET_RAW"), (16, "SYS_MODULE"),
                  (27, "MKNOD"), (24, "SYS_RESOURCE"), (18, "SYS_CHROOT"), (2, "DAC_READ_SEARCH")):
    check(f"CAP_{name} not in the bounding set", libc.prctl(23, cap, 0, 0, 0) == 0)
    r, e = raw(157, 47, 2, cap, 0, 0)    # prctl(PR_CAP_AMBIENT, RAISE)
    check(f"ambient raise of CAP_{name}: {ename(e)}", r == -1 and e == errno.EPERM)
# capset: effective = permitted = mask | CAP_SYS_ADMIN
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)(MASK | (1 << 21), MASK | (1 << 21), 0, 0, 0, 0)
r, e = raw(126, ctypes.addressof(hdr), ctypes.addressof(data))
check(f"capset adding CAP_SYS_ADMIN: {ename(e)}", r == -1 and e == errno.EPERM)
r, e = raw(157, 38, 0, 0, 0, 0)   # PR_SET_NO_NEW_PRIVS 0
check(f"clearing no_new_privs: {ename(e)}", r == -1 and e == errno.EINVAL)

um = read_text("/proc/self/uid_map").split()
gm = read_text("/proc/self/gid_map").split()
check(f"uid_map is a single 65536-id range ({' '.join(um)})", len(um) == 3 and um[0] == "0" and um[2] == "65536")
check(f"the range starts at an unprivileged host uid >= 2^30 ({um[1]})", int(um[1]) >= 1 << 30)
check("gid_map equals uid_map", gm == um)
print(f"# uid_base {um[1]}", flush=True)
cg = read_text("/proc/self/cgroup").splitlines()
check("cgroup namespace: 0::/", "0::/" in cg, str(cg))
check("every cgroup line is rooted at / (cgroup namespace)", all(l.endswith(":/") for l in cg), str(cg))
check("user.max_user_namespaces = 0", read_text("/proc/sys/user/max_user_namespaces").strip() == "0")
check("hostname is the sandbox id", read_text("/proc/sys/kernel/hostname").startswith("run-"))
check("PID 1 runs with NoNewPrivs 1", status_field("NoNewPrivs", 1) == "1")
check("PID 1 runs under the seccomp filter", status_field("Seccomp", 1) == "2")
for f in ("CapInh", "CapPrm", "CapEff", "CapBnd"):
    v = int(status_field(f, 1), 16)
    check(f"PID 1 {f} = {v:#x}: no more than root's mask", v == MASK)
check("PID 1 CapAmb = 0", int(status_field("CapAmb", 1), 16) == 0)
end()
