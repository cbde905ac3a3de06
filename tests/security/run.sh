#!/bin/bash
# Hostile-program battery: runs every attack in tests/security/attacks/
# inside real sandboxes through `BUILD/hutch run` and asserts that each one
# fails. Usage: tests/security/run.sh [BUILD] (default: build).
#
# Each attack prints one "ok - ..." / "not ok - ..." line per assertion and
# "# end" last (see attacks/lib.py, attacks/lib.h); this runner prefixes the
# lines with the attack's name, counts them, treats a missing "# end" or a
# sanitizer report as a failure, adds the host-side checks (host files and
# sysctls unchanged, overlay xattrs stored escaped, disjoint uid ranges),
# and writes "security[BUILD]: N passed, M failed" to
# tests/results/security-BUILD.txt.
set -u
# the suites build their own templates: no daemon of theirs provisions the code interpreter's (provision.h)
export HUTCH_INTERPRETER_PROVISION=${HUTCH_INTERPRETER_PROVISION:-0}
BUILD=${1:-${BUILD:-build}}
HERE=$(cd "$(dirname "$0")" && pwd)
ATT="$HERE/attacks"
export HUTCH_CGROUP_PARENT=${HUTCH_CGROUP_PARENT:-hutch-sec}
HUTCH_TEST_TMP=$(mktemp -d /tmp/hutch-sec.XXXXXX)
export HUTCH_TEST_TMP
# shellcheck source=../integration/lib.sh
. "$HERE/../integration/lib.sh" "$BUILD"
BIN="$HUTCH_TEST_TMP/bin"
HOSTPID=
WATCHED=
FDSERVER=

cleanup() {
	[ -n "$HOSTPID" ] && kill "$HOSTPID" 2>/dev/null
	[ -n "$WATCHED" ] && kill "$WATCHED" 2>/dev/null
	[ -n "$FDSERVER" ] && kill "$FDSERVER" 2>/dev/null
	wait 2>/dev/null
	cleanup_test_dirs
}
trap cleanup EXIT
trap 'exit 130' INT TERM

START=$(date +%s%N)
[ -x "$HUTCH" ] || { echo "not ok - $HUTCH is not built"; exit 1; }
mkdir -p "$BIN" "$ROOT/tests/results"

# sandbox runs are bounded twice: --timeout inside, timeout(1) outside
srun() { timeout -k 5 60 "$HUTCH" run --timeout 30s "$@"; }

# Host state that no attack may change (sysctls by value, files by hash).
host_state() {
	local f
	for f in kernel/core_pattern kernel/modprobe kernel/hostname kernel/domainname kernel/pid_max \
		kernel/threads-max kernel/printk kernel/sysrq kernel/randomize_va_space kernel/kptr_restrict \
		kernel/dmesg_restrict kernel/perf_event_paranoid kernel/unprivileged_bpf_disabled vm/overcommit_memory \
		vm/max_map_count fs/file-max fs/protected_hardlinks fs/protected_symlinks fs/suid_dumpable \
		user/max_user_namespaces user/max_net_namespaces kernel/shmmax; do
		[ -r "/proc/sys/$f" ] && echo "$f=$(cat "/proc/sys/$f")"
	done
	sha256sum /etc/passwd /etc/hostname /usr/bin/python3 /usr/bin/su /usr/bin/id \
		"$HUTCH_DATA_DIR/templates/base/rootfs/etc/passwd" 2>&1
	stat -c '%n %a %u:%g' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty
	ls -d /usr/bin/hutchsec* /usr/hutchsec* /tmp/hutchsec-pwn* 2>/dev/null
}

# Host side of fs_links: every user.overlay.* xattr the attack forged must
# be stored escaped (user.overlay.overlay.*) in the upper layer, and no
# trusted.overlay.* at all.
check_forged_xattrs() {
	local dir=$1 tag=$2 upper
	upper=$(ls -d "$HUTCH_DATA_DIR"/layers/*/rw/upper "$HUTCH_DATA_DIR"/layers/*/upper 2>/dev/null | head -1)
	if [ -z "$upper" ] || [ ! -d "$upper$dir" ]; then
		not_ok "fs_links $tag forged xattrs: upper layer $upper$dir not found on the host"
		return
	fi
	local out
	out=$(python3 - "$upper$dir/f" "$upper$dir/d" <<-'PY'
		import os, sys
		for p in sys.argv[1:]:
		    for n in os.listxattr(p):
		        if n.startswith("trusted.overlay.") or (n.startswith("user.overlay.") and not n.startswith("user.overlay.overlay.")):
		            print("RAW", os.path.basename(p), n)
		        else:
		            print("escaped", os.path.basename(p), n)
	PY
	)
	if grep -q '^RAW' <<<"$out"; then
		not_ok "fs_links $tag forged overlay xattrs reach the upper layer unescaped: $(grep '^RAW' <<<"$out" | tr '\n' ' ')"
	else
		ok "fs_links $tag forged user.overlay.* xattrs are stored escaped in the upper layer ($(grep -c escaped <<<"$out") names)"
	fi
}

# Extra `hutch run` options for the next attacks (volume_links sets --volume).
SRUN_EXTRA=()

# run_attack NAME USER [ARGS...]: NAME.py, NAME.sh or NAME (a compiled C
# attack); counts its lines as described above.
run_attack() {
	local name=$1 user=$2
	shift 2
	local out="$HUTCH_TEST_TMP/out.$name.$user" tag="[$user]" t0 rc
	t0=$(date +%s%N)
	if [ -f "$ATT/$name.py" ]; then
		cat "$ATT/lib.py" "$ATT/$name.py" | srun "${SRUN_EXTRA[@]}" --user "$user" --env HUTCHSEC_KALLSYMS_HIDDEN="$KALLSYMS_HIDDEN" \
			-- python3 - "$@" >"$out" 2>&1 &
	elif [ -f "$ATT/$name.sh" ]; then
		srun --user "$user" -- bash -s <"$ATT/$name.sh" >"$out" 2>&1 &
	elif [ -x "$BIN/$name" ]; then
		srun --user "$user" -- bash -c 'cat > /tmp/a && chmod +x /tmp/a && exec /tmp/a "$@"' sh "$@" \
			<"$BIN/$name" >"$out" 2>&1 &
	else
		not_ok "$name $tag: attack not available (did it compile?)"
		return
	fi
	WATCHED=$!
	local forged_done=
	while kill -0 "$WATCHED" 2>/dev/null; do
		if [ -z "$forged_done" ] && grep -q '^# forged-xattrs ' "$out"; then
			forged_done=1
			check_forged_xattrs "$(sed -n 's/^# forged-xattrs //p' "$out" | head -1)" "$tag"
		fi
		sleep 0.05
	done
	wait "$WATCHED"
	rc=$?
	WATCHED=
	local line fails_before=$T_FAIL
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "$name ${line#ok - }" ;;
		"not ok - "*) not_ok "$name ${line#not ok - }" ;;
		"# end" | "# forged-xattrs "*) ;;
		"#"*) echo "$line" ;;
		*) echo "# | $line" ;;
		esac
	done <"$out"
	grep -qx '# end' "$out" || not_ok "$name $tag ended early (exit $rc): crashed, hung or was killed"
	grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$out" && not_ok "$name $tag: sanitizer report"
	[ "$rc" -ne 0 ] && [ "$T_FAIL" -eq "$fails_before" ] && not_ok "$name $tag: exit $rc with no failed assertion"
	echo "# $name $tag: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

# --- preparation ---------------------------------------------------------
# Sanitizer builds: ASan installs handlers for SIGSEGV, SIGBUS and SIGFPE in
# hutch-init, and a namespace init receives every signal it has a handler
# for, so `kill -SEGV 1` from sandbox root kills an ASan-built init (the
# release build installs no handler and drops it). The battery tests the
# product's semantics, so it turns those three handlers off (the runtime
# passes ASAN_OPTIONS on to init); the artefact itself is reported as a
# "# FINDING" line at the end, not counted.
SAN_BUILD=
if grep -q __asan_init "$HUTCH" 2>/dev/null; then
	SAN_BUILD=1
	ASAN_DEFAULT=$ASAN_OPTIONS
	export ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0:handle_sigbus=0:handle_sigfpe=0"
fi
for c in "$ATT"/*.c; do
	n=$(basename "$c" .c)
	gcc -O1 -static -Wall -I"$ATT" -o "$BIN/$n" "$c" 2>"$BIN/$n.log" || { echo "# $(cat "$BIN/$n.log")"; not_ok "compile $n.c"; }
done
# Are kernel addresses hidden from an unprivileged host user? Then they must
# be hidden from the sandbox too.
KALLSYMS_HIDDEN=0
if [ "$(cat /proc/sys/kernel/kptr_restrict)" -ge 1 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
	KALLSYMS_HIDDEN=1
fi
I386=$("$BIN/foreign_abi" control 2>/dev/null || echo i386=yes)
HIDDEN_USR=$(find /usr -xdev ! -perm -o=r 2>/dev/null | head -5)
# the host's network interfaces, names and MACs, for sysfs_view
HOST_IFS=$(for i in /sys/class/net/*; do basename "$i"; cat "$i/address"; done 2>/dev/null)
# a host process with a secret in its environment, for proc_secrets
env HUTCHSEC_HOST_SECRET="$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" sleep 600 &
HOSTPID=$!
# the runner's own environment must not reach the sandbox (fd_leaks)
export HUTCHSEC_RUNNER_MARK="$HUTCH_TEST_TMP"
srun -- true || not_ok "a plain sandbox run works"
BEFORE=$(host_state)

# --- the battery -----------------------------------------------------------
for u in root user; do
	run_attack proc_secrets "$u" "$HOSTPID" "$HUTCH_TEST_TMP" "$HUTCH_DATA_DIR" "$HUTCH_RUN_DIR"
	run_attack fs_links "$u"
	run_attack devices_sys "$u"
	# shellcheck disable=SC2086
	run_attack sysfs_view "$u" $HOST_IFS
	run_attack kernel_surface "$u"
	run_attack namespaces_mounts "$u"
	run_attack foreign_abi "$u" "$I386"
	run_attack cross_process "$u"
	run_attack signal_init "$u"
	run_attack init_protect "$u"
	run_attack core_dumps "$u"
	run_attack tty_inject "$u"
	run_attack fd_leaks "$u" "$HUTCH_TEST_TMP"
	run_attack posture "$u"
	# shellcheck disable=SC2086
	run_attack usr_perms "$u" $HIDDEN_USR
done
run_attack setuid_escalation root
run_attack setuid_user user

# a volume shared by sandboxes with different uid ranges: planted symlinks,
# hardlinks and setuid files get nowhere (volume_links.py); the host side
# stores canonical ids and keeps its secret
VOL="$HUTCH_TEST_TMP/vol"
mkdir -p "$VOL" && chown 1000:1000 "$VOL"
echo "HUTCHSEC-VOLUME-SECRET $RANDOM" >"$HUTCH_TEST_TMP/vol-secret"
SECRET_SUM=$(sha256sum <"$HUTCH_TEST_TMP/vol-secret")
SRUN_EXTRA=(--volume "$VOL:/vol")
run_attack volume_links root plant "$HUTCH_TEST_TMP"
run_attack volume_links user plant "$HUTCH_TEST_TMP"
run_attack volume_links user follow "$HUTCH_TEST_TMP"
run_attack volume_links root follow "$HUTCH_TEST_TMP"
# a host directory fd handed to the sandbox through a socket in the volume
# (host_fd.py): Landlock keeps every path walk from it at EACCES
python3 "$HERE/fd_server.py" "$VOL/fdpass.sock" "$HUTCH_TEST_TMP" &
FDSERVER=$!
for _ in $(seq 50); do [ -S "$VOL/fdpass.sock" ] && break; sleep 0.1; done
run_attack host_fd root /vol/fdpass.sock
run_attack host_fd user /vol/fdpass.sock
kill "$FDSERVER" 2>/dev/null
wait "$FDSERVER" 2>/dev/null
FDSERVER=
rm -f "$VOL/fdpass.sock"
check "host_fd: nothing was created in the host's writable directory" \
	test "$(ls -A "$HUTCH_TEST_TMP/open" 2>/dev/null)" == host-file
SRUN_EXTRA=()
check "volume: the host secret next to the volume is unchanged" test "$(sha256sum <"$HUTCH_TEST_TMP/vol-secret")" == "$SECRET_SUM"
check "volume: files are stored with canonical ids on the host (root 0, user 1000)" \
	test "$(stat -c %u "$VOL/planted-by-root"):$(stat -c %u "$VOL/planted-by-user")" == "0:1000"
check "volume: nothing but symlinks, the setuid copy and planted files in it" \
	test -z "$(find "$VOL" -mindepth 1 ! -type l ! -name 'planted-by-*' ! -name suid-id)"

# --tmpfs: a template's symlinks (to a host directory by its path, a ../ climb, /proc/1/root, a
# chain) cannot steer the tmpfs out of the sandbox's root: the setup stage refuses a symlink
# anywhere on the way (hu_mount_attach) and no mount appears on the host; and the tmpfs cannot
# take more memory than the sandbox has (tmpfs_limits.py)
TMPFS_HOST="$HUTCH_TEST_TMP/tmpfs-host"
EVIL="$HUTCH_TEST_TMP/evil-links"
mkdir -p "$TMPFS_HOST" "$EVIL/etc" "$EVIL/d"
ln -s "$TMPFS_HOST" "$EVIL/abs"
ln -s "../../../../../../../../..$TMPFS_HOST" "$EVIL/rel"
ln -s "/proc/1/root$TMPFS_HOST" "$EVIL/proc1"
ln -s /abs "$EVIL/d/hop"
tar -C "$EVIL" -czf "$HUTCH_TEST_TMP/evil-links.tgz" .
if out=$("$HUTCH" template build evil-links --from-tar "$HUTCH_TEST_TMP/evil-links.tgz" 2>&1); then
	mounts_before=$(wc -l </proc/self/mountinfo)
	for t in /abs /abs/sub /rel /rel/x /proc1 /proc1/x /d/hop /d/hop/x; do
		name=${t#/}
		name=${name%%/*}
		[ "$name" = d ] && name=hop
		out=$(srun --template evil-links --user root --tmpfs "$t:1M" -- /usr/bin/true 2>&1)
		rc=$?
		if [ "$rc" -eq 125 ] && grep -q "'$name' is a symlink, which a mount point may not pass through" <<<"$out"; then
			ok "tmpfs_links: --tmpfs $t through the template's symlink is refused"
		else
			not_ok "tmpfs_links: --tmpfs $t: exit $rc, $out"
		fi
	done
	check "tmpfs_links: no mount on the host directory the symlinks name" \
		test "$(grep -c " $TMPFS_HOST" /proc/self/mountinfo)" -eq 0
	check "tmpfs_links: the host's mount table is as before" test "$(wc -l </proc/self/mountinfo)" -eq "$mounts_before"
	check "tmpfs_links: nothing was written to the host directory" test -z "$(ls -A "$TMPFS_HOST")"
	"$HUTCH" template rm evil-links >/dev/null 2>&1
else
	not_ok "tmpfs_links: the template with symlinks could not be built: $out"
fi
SRUN_EXTRA=(--memory 64M --tmpfs /scratch:64M)
run_attack tmpfs_limits root
run_attack tmpfs_limits user
SRUN_EXTRA=()

# two concurrent sandboxes get disjoint uid ranges
m=$( (srun -- sh -c 'cat /proc/self/uid_map; sleep 1' & srun -- sh -c 'cat /proc/self/uid_map; sleep 1' & wait) )
b1=$(awk 'NR==1{print $2}' <<<"$m")
b2=$(awk 'NR==2{print $2}' <<<"$m")
if [ -n "$b1" ] && [ -n "$b2" ] && [ $(( b1 > b2 ? b1 - b2 : b2 - b1 )) -ge 65536 ]; then
	ok "posture: two concurrent sandboxes get disjoint uid ranges ($b1, $b2)"
else
	not_ok "posture: concurrent uid ranges overlap or are missing ($b1, $b2)"
fi

if [ -n "$SAN_BUILD" ]; then
	for sig in SEGV BUS FPE; do
		out=$(ASAN_OPTIONS=$ASAN_DEFAULT srun --user root -- bash -c "kill -$sig 1; sleep 0.3; echo survived" 2>&1)
		grep -q survived <<<"$out" ||
			echo "# FINDING (sanitizer build only): kill -$sig 1 from sandbox root kills the ASan-built hutch-init: $(grep -m1 -o 'ERROR: AddressSanitizer: [A-Z]*' <<<"$out")"
	done
fi

# Crashes under temporary pipe and socket core_patterns (core_pattern.sh
# puts the host's pattern back on every exit): no host helper runs, nothing
# reaches a host socket, no sandbox starts under a socket pattern.
out=$("$HERE/core_pattern.sh" "$HUTCH" 2>&1)
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "core_pattern ${line#ok - }" ;;
	"not ok - "*) not_ok "core_pattern ${line#not ok - }" ;;
	"# end") ;;
	*) echo "# | $line" ;;
	esac
done <<<"$out"
grep -qx '# end' <<<"$out" || not_ok "core_pattern.sh ended early"

# --- the daemon's front door: request bodies and heads under abuse ---------------
# A `hutch serve` of the attack's own on loopback (its own dirs and port):
# truncated and lying bodies, chunk sizes, malformed multipart, 431, memory
# under a fast large body (docs/security.md, "Request bodies").
t0=$(date +%s%N)
out=$(timeout -k 5 300 python3 "$HERE/http_bodies.py" "$HUTCH" "$HUTCH_TEST_TMP/serve" 2>&1)
rc=$?
fails_before=$T_FAIL
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "http_bodies ${line#ok - }" ;;
	"not ok - "*) not_ok "http_bodies ${line#not ok - }" ;;
	"# end") ;;
	"#"*) echo "$line" ;;
	*) echo "# | $line" ;;
	esac
done <<<"$out"
grep -qx '# end' <<<"$out" || not_ok "http_bodies ended early (exit $rc): crashed, hung or was killed"
[ "$rc" -ne 0 ] && [ "$T_FAIL" -eq "$fails_before" ] && not_ok "http_bodies: exit $rc with no failed assertion"
echo "# http_bodies: $(( ($(date +%s%N) - t0) / 1000000 )) ms"

# --- host unchanged -----------------------------------------------------------
AFTER=$(host_state)
if [ "$BEFORE" == "$AFTER" ]; then
	ok "host: sysctls, /etc/passwd, /usr binaries and the template's passwd are unchanged"
else
	not_ok "host state changed: $(diff <(echo "$BEFORE") <(echo "$AFTER") | tr '\n' ' ')"
fi
check "host: the secret-holding host process is still alive" kill -0 "$HOSTPID"
left=$(ls "$HUTCH_RUN_DIR/sandboxes" 2>/dev/null | wc -l)
check "host: no sandbox left behind ($left)" test "$left" -eq 0

ms=$(( ($(date +%s%N) - START) / 1000000 ))
echo "# battery took $((ms / 1000)).$(printf %03d $((ms % 1000)))s"
result="security[$BUILD]: $T_PASS passed, $T_FAIL failed"
echo "$result" | tee "$ROOT/tests/results/security-$(basename "$BUILD").txt"
[ "$T_FAIL" -eq 0 ]
