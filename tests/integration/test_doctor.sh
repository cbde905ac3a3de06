#!/bin/bash
# `hutch doctor`: passes on this host (root, hybrid cgroups), prints a line per
# check, emits valid JSON with --json, and rejects unknown flags with exit 2.
# Usage: test_doctor.sh [BUILD_DIR]   (default: build)
. "$(dirname "$0")/lib.sh"

# The cgroup mode this host is expected to report; CI hosts may differ.
want_mode=${HUTCH_TEST_CGROUP_MODE:-hybrid}
errf=$(mktemp "$HUTCH_TEST_TMP/doctor-err.XXXXXX")

# --- plain run ---------------------------------------------------------------
out=$(timeout -k 5 60 "$HUTCH" doctor 2>"$errf")
rc=$?
expect_eq "doctor exits 0 on this host" 0 "$rc"
[ "$rc" -eq 0 ] || echo "$out" | sed 's/^/#   /'
expect_eq "doctor writes nothing to stderr (no sanitizer reports)" "" "$(cat "$errf")"

# one line per check: "<status> <name>: <finding>"
for name in "running as root" "user namespaces" "namespaces" "idmapped mounts" "overlayfs" \
	"overlay in user namespace" "tmpfs size limit" "cgroups" "seccomp" "core dumps" "Landlock" "memory" \
	"file descriptors" "capped volumes" "writable layers" "run dir" "IPv6" "kernel"; do
	line=$(grep -E "^(ok|warn|FAIL) +$name: " <<<"$out" | head -n1)
	expect_match "doctor prints a line for '$name'" "^(ok|warn|FAIL) +$name: .+" "$line"
done
expect_match "cgroups line reports mode $want_mode" "^ok +cgroups: mode $want_mode" "$(grep -E ' cgroups: ' <<<"$out")"
expect_match "Landlock line reports an ABI version or why not" "Landlock: (ABI version [0-9]+|.*returned)" \
	"$(grep ' Landlock: ' <<<"$out")"
expect_match "core dumps line names the host's pattern and what sandboxes do with it" \
	"core dumps: kernel.core_pattern .*(RLIMIT_CORE 1|whatever RLIMIT_CORE is)" "$(grep ' core dumps: ' <<<"$out")"
expect_match "memory line estimates how many sandboxes fit" "room for about [0-9]+ sandboxes of 512 MiB" \
	"$(grep ' memory: ' <<<"$out")"
expect_match "resource floor is measured with real sandboxes" \
	"resource floor: an idle sandbox \(hutch-init only\) costs the host about [0-9.]+ MiB.*about [0-9]+ idle sandboxes fit" \
	"$(grep ' resource floor: ' <<<"$out")"
expect_eq "the floor measurement leaves no cgroup behind" "" \
	"$(ls -d /sys/fs/cgroup/*/hutch-doctor-* /sys/fs/cgroup/hutch-doctor-* 2>/dev/null)"
expect_match "writable layers line names the backend and why" \
	"writable layers: (image|data-dir) on btrfs, a subvolume and quota group per sandbox: the data dir is on [a-z0-9 ]+" \
	"$(grep ' writable layers: ' <<<"$out")"
expect_no_match "no check FAILs" "^FAIL " "$out"
expect_match "doctor ends with a summary" "[0-9]+ ok, [0-9]+ warn, 0 FAIL" "$(tail -n1 <<<"$out")"
nlines=$(grep -cE '^(ok|warn|FAIL) ' <<<"$out")

# --- writable layers -------------------------------------------------------------
lout=$(HUTCH_LAYERS=image timeout -k 5 60 "$HUTCH" doctor 2>/dev/null | grep ' writable layers: ')
expect_match "HUTCH_LAYERS=image: the image, because it was asked for" "^ok +writable layers: image on btrfs.*HUTCH_LAYERS=image" "$lout"
lout=$(HUTCH_LAYERS=bogus timeout -k 5 60 "$HUTCH" doctor 2>/dev/null | grep ' writable layers: ')
expect_match "a bad HUTCH_LAYERS FAILs and says why" "^FAIL +writable layers: .*HUTCH_LAYERS=bogus: expected auto, data-dir or image" "$lout"

# --- run dir ---------------------------------------------------------------------
# A run dir on tmpfs is ok; on a disk file system a warning that says what to do.
rdconf="$HUTCH_TEST_TMP/doctor-rundir.conf"
rdtmp="$HUTCH_TEST_TMP/doctor-rundir-tmpfs"
mkdir -p "$rdtmp" "$HUTCH_TEST_TMP/doctor-rundir-disk"
mount -t tmpfs -o size=1m tmpfs "$rdtmp"
printf 'run_dir = %s/run\n' "$rdtmp" >"$rdconf"
rd=$(timeout -k 5 60 "$HUTCH" doctor --config "$rdconf" 2>/dev/null | grep ' run dir: ')
umount "$rdtmp"
expect_match "a run dir on tmpfs is ok (not made yet: its parent is probed)" \
	"^ok +run dir: $rdtmp/run is on tmpfs \(made in $rdtmp; not made yet\)$" "$rd"
if [ "$(stat -f -c %T "$HUTCH_TEST_TMP")" != tmpfs ]; then
	printf 'run_dir = %s/doctor-rundir-disk\n' "$HUTCH_TEST_TMP" >"$rdconf"
	rd=$(timeout -k 5 60 "$HUTCH" doctor --config "$rdconf" 2>/dev/null | grep ' run dir: ')
	expect_match "a run dir on a disk file system is a warning naming the fix" \
		"^warn +run dir: $HUTCH_TEST_TMP/doctor-rundir-disk is on [a-z0-9 ]+ — .*mount a tmpfs on" "$rd"
fi

# --- IPv6 ------------------------------------------------------------------------
# The facts depend on the host; their shape does not. Then the verdicts,
# from configurations and a network namespace of our own without routes.
v6=$(grep ' IPv6: ' <<<"$out")
expect_match "IPv6 line names the way out" "IPv6: (IPv6 default route via [^;]+|no IPv6 default route);" "$v6"
expect_match "IPv6 line says how the host forwards" \
	"; (net.ipv6.conf.all.forwarding is on|per-interface force_forwarding \(Linux 6.17\+\)|net.ipv6.conf.all.forwarding off and no per-interface force_forwarding \(Linux < 6.17\)); " "$v6"
expect_match "IPv6 line names the configured pool" "; network_pool6 [0-9a-f:]+/[0-9]+; " "$v6"
conf="$HUTCH_TEST_TMP/doctor-v6.conf"
printf 'network = nat\nnetwork_pool6 = none\n' >"$conf"
v6=$(timeout -k 5 60 "$HUTCH" doctor --config "$conf" 2>/dev/null | grep ' IPv6: ')
expect_match "network_pool6 none: no IPv6 by configuration, not a warning" \
	"^ok +IPv6: .*network_pool6 none; sandboxes get no IPv6 \(turned off by network_pool6\)$" "$v6"
printf 'network = nat\n' >"$conf"
v6=$(timeout -k 5 60 unshare -n "$HUTCH" doctor --config "$conf" 2>/dev/null | grep ' IPv6: ')
expect_match "no IPv6 default route (own netns): sandboxes get IPv4 only, a warning" \
	"^warn +IPv6: no IPv6 default route; .*network_pool6 fd68:7574:6368::/64; sandboxes get no IPv6 — sandboxes get IPv4 only: the host has no IPv6 default route" "$v6"
printf 'network = nat\nnetwork_pool6 = bogus\n' >"$conf"
v6=$(timeout -k 5 60 "$HUTCH" doctor --config "$conf" 2>/dev/null | grep ' IPv6: ')
expect_match "a configuration the daemon would refuse is a warning that says so" \
	"^warn +IPv6: configuration: .*network_pool6.*bogus" "$v6"
# the host-wide switch and the interfaces the check looks at (not the glob of
# all: other sandboxes' veths come and go meanwhile)
fwd_state() {
	local i dev
	dev=$(ip -6 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1)}' | head -n1)
	for i in all default lo $dev; do
		printf '%s=%s/%s ' "$i" "$(cat /proc/sys/net/ipv6/conf/$i/forwarding 2>/dev/null)" \
			"$(cat /proc/sys/net/ipv6/conf/$i/force_forwarding 2>/dev/null)"
	done
}
before=$(fwd_state)
printf 'network = nat\n' >"$conf"
timeout -k 5 60 "$HUTCH" doctor --config "$conf" >/dev/null 2>&1
expect_eq "the IPv6 check changes no forwarding setting" "$before" "$(fwd_state)"

# --- JSON --------------------------------------------------------------------
json=$(timeout -k 5 60 "$HUTCH" doctor --json 2>"$errf")
rc=$?
expect_eq "doctor --json exits 0 on this host" 0 "$rc"
check "doctor --json output parses as JSON" python3 -c 'import json,sys; json.load(sys.stdin)' <<<"$json"
jcheck=$(python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [c["name"] for c in d["checks"]]
assert d["ok"] is True, "ok is not true"
assert all(c["status"] in ("ok", "warn", "fail") for c in d["checks"]), "bad status"
assert all(isinstance(c["finding"], str) and c["finding"] for c in d["checks"]), "empty finding"
cg = [c for c in d["checks"] if c["name"] == "cgroups"][0]
print(len(names), cg["finding"].split(";")[0])
' <<<"$json" 2>&1)
expect_eq "JSON has the same checks as the text and the cgroup mode" "$nlines mode $want_mode" "$jcheck"

# --- usage errors --------------------------------------------------------------
uout=$("$HUTCH" doctor --bogus 2>"$errf")
rc=$?
expect_eq "unknown flag exits 2" 2 "$rc"
expect_eq "unknown flag prints nothing on stdout" "" "$uout"
expect_match "unknown flag names the flag on stderr" "hutch: doctor: unknown option '--bogus'" "$(cat "$errf")"
"$HUTCH" doctor extra >/dev/null 2>&1
expect_eq "stray argument exits 2" 2 "$?"
hout=$("$HUTCH" doctor --help 2>&1)
rc=$?
expect_eq "--help exits 0" 0 "$rc"
expect_match "--help shows the usage" "usage: hutch doctor \[--json\] \[--config FILE\]" "$hout"

# --- nothing left behind --------------------------------------------------------
# The cgroup probe group is named after the doctor's pid.
timeout -k 5 60 "$HUTCH" doctor >/dev/null 2>&1 &
dpid=$!
wait "$dpid"
left=$(ls -d /sys/fs/cgroup/*/hutch-doctor-"$dpid" /sys/fs/cgroup/hutch-doctor-"$dpid" 2>/dev/null)
expect_eq "doctor removes its probe cgroup" "" "$left"
expect_eq "doctor leaves no mounts behind" "" "$(grep -o ' /tmp/hutch-doctor-[^ ]*' /proc/self/mountinfo)"

finish
