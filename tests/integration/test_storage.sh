#!/bin/bash
# The writable layer is on disk: a full layer is an EDQUOT/ENOSPC inside and
# a clear message from hutch run (not an OOM kill), its inode count is
# bounded by its cap, its page cache is ordinary reclaimable cache, the
# host's mount namespace holds no per-sandbox mount, and nothing (layer,
# quota group, mount, loop device) outlives the sandboxes, also after a
# SIGKILL of hutch run.
# a cgroup parent of its own: processes are counted in it, not host-wide
export HUTCH_CGROUP_PARENT=hutch-it-storage-$$
. "$(dirname "$0")/lib.sh"

LAYERS="$HUTCH_DATA_DIR/layers"
count_mounts() { grep -c " $HUTCH_TEST_TMP/" /proc/self/mountinfo; }
count_layers() { find "$LAYERS" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# loop devices backed by this test's image. A mount namespace that another
# program of the host (another test run, a container tool) creates while the
# image is mounted holds a copy of it, and so the loop device, until that
# program ends: not a leak of hutch's, so such a device is not counted while
# a process outside this test's cgroup parent has a copy (and it is named).
foreign_copy() {
	local self p
	self=$(readlink /proc/self/ns/mnt)
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/mnt" 2>/dev/null)" != "$self" ] || continue
		grep -q " $LAYERS " "$p/mountinfo" 2>/dev/null || continue
		grep -q "$HUTCH_CGROUP_PARENT" "$p/cgroup" 2>/dev/null && continue
		echo "# the image is held by pid ${p#/proc/} ($(cat "$p/comm" 2>/dev/null)) in another mount namespace" >&2
		return 0
	done
	return 1
}
count_loops() {
	local n
	n=$(cat /sys/block/loop*/loop/backing_file 2>/dev/null | grep -c "^$HUTCH_DATA_DIR/layers.img")
	if [ "$n" -gt 0 ] && foreign_copy; then echo 0; else echo "$n"; fi
}
count_sandbox_procs() { cat /sys/fs/cgroup/"$HUTCH_CGROUP_PARENT"/*/cgroup.procs \
	/sys/fs/cgroup/*/"$HUTCH_CGROUP_PARENT"/*/cgroup.procs 2>/dev/null | wc -l; }

settles() {
	local desc=$1 want=$2 fn=$3 got i
	for i in $(seq 1 "${4:-50}"); do
		got=$($fn)
		[ "$got" == "$want" ] && break
		sleep 0.1
	done
	expect_eq "$desc" "$want" "$got"
}

hrun -- true # the template and the image
p0=$(count_sandbox_procs)

# a 3000 MB file in a 1 GiB layer with 512 MiB of memory: EDQUOT, not OOM
out=$(hrun -- dd if=/dev/zero of=/tmp/fill bs=1M count=3000 2>&1)
rc=$?
check "filling the layer is not an OOM kill (exit $rc)" test "$rc" -ne 137
expect_eq "dd fails" "1" "$rc"
expect_match "dd reports the quota" "Disk quota exceeded|No space left" "$out"
expect_match "hutch run says the disk is full, and its cap" "disk is full.* of 1024 MiB" "$out"
expect_match "dd got about 1 GiB written" "10[0-9][0-9]\+0 records in" "$out"

# /tmp is the writable layer (the fill above is in it), /dev/shm the one RAM scratch: a tmpfs of half the
# memory limit (docs/operations.md, "Storage")
out=$(hrun --memory 64M -- sh -c 'stat -f -c %T /tmp /dev/shm; df -k --output=size /dev/shm | tail -1' 2>&1)
expect_eq "/tmp is the overlay over the layer, /dev/shm a tmpfs of half the memory" $'overlayfs\ntmpfs\n32768' \
	"$(tr -d ' ' <<<"$out")"

# root inside is no exception: the cap holds for it as for the user
out=$(hrun --user root --disk 32M -- dd if=/dev/zero of=/root-fill bs=1M count=100 2>&1)
expect_match "root inside stops at the cap too" "Disk quota exceeded|No space left" "$out"

# attack: the btrfs ioctls that would make a subvolume outside the quota
# group, lift the limit or turn quotas off do not reach the layer through
# the overlay (ENOTTY) or are refused
out=$(hrun --user root -- python3 -c '
import fcntl, os
fd = os.open("/tmp", os.O_RDONLY)
for name, req, size in (("SUBVOL_CREATE", 0x5000940e, 4096), ("QGROUP_LIMIT", 0x8030942b, 48),
                        ("QUOTA_CTL", 0xc0109428, 16)):
    buf = bytearray(size)
    if name == "SUBVOL_CREATE": buf[8:12] = b"esc\0"
    if name == "QUOTA_CTL": buf[0] = 2  # disable
    try:
        fcntl.ioctl(fd, req, buf)
        print(name, "allowed")
    except OSError as e:
        print(name, "refused", e.errno)' 2>&1)
expect_no_match "attack: no btrfs ioctl on the layer is allowed inside" "allowed" "$out"
expect_eq "attack: all three btrfs ioctls are refused" "3" "$(grep -c refused <<<"$out")"

# no false alarm: a command that fails with room to spare
out=$(hrun -- sh -c 'echo x >/tmp/x; exit 3' 2>&1)
expect_eq "a failing command keeps its exit code" "3" "$?"
expect_no_match "no disk message with room left" "disk is full" "$out"

# inodes: every file costs metadata the cap counts, so a 16 MiB layer
# stops taking empty files (EDQUOT) long before the host would suffer
out=$(hrun --disk 16M -- sh -c 'mkdir /tmp/m; i=0; while true >/tmp/m/f$i 2>/dev/null; do i=$((i+1)); done;
	echo files=$i; true >/tmp/m/last' 2>&1)
n=$(sed -n 's/.*files=\([0-9]*\).*/\1/p' <<<"$out")
check "a 16 MiB layer holds a bounded number of empty files (${n:-none})" test "${n:-0}" -gt 1000 -a "${n:-0}" -lt 200000
expect_match "the next file fails with the quota error" "Disk quota exceeded|No space left" "$out"

# page cache: 200 MB written with 64 MiB of memory is written back and
# reclaimed like any file's cache, not held in RAM like tmpfs pages
out=$(hrun --memory 64M -- sh -c 'dd if=/dev/zero of=/tmp/big bs=1M count=200 conv=fsync 2>&1 && sha1sum /tmp/big' 2>&1)
expect_eq "200 MB through 64 MiB of memory succeeds" "0" "$?"
expect_match "and reads back" "$(head -c 209715200 /dev/zero | sha1sum | cut -c1-40)" "$out"

# the host's namespace: one mount (the image) however many sandboxes run
pids=()
for i in 1 2 3; do
	"$HUTCH" run -- sleep 3 >/dev/null 2>&1 &
	pids+=($!)
done
sleep 1.5
expect_eq "three running sandboxes: one hutch mount in the host namespace" "1" "$(count_mounts)"
expect_eq "three running sandboxes: three layers" "3" "$(count_layers)"
expect_eq "no overlay is mounted in the host namespace" "0" \
	"$(grep " $HUTCH_TEST_TMP/" /proc/self/mountinfo | grep -c ' - overlay ')"
wait "${pids[@]}"
expect_eq "after they end: no layer" "0" "$(count_layers)"
expect_eq "after they end: no mount" "0" "$(count_mounts)"
settles "after they end: no loop device on the image" "0" count_loops

# the keeper (HUTCH_LAYERS_LINGER): the last run out leaves the image mounted for the linger time,
# held by a process of its own that keeps none of the run's descriptors; a run meanwhile reuses
# the mount (mounting a btrfs costs more than a whole run); then the mount and the loop device go
keeper_pids() {
	local p c
	for p in /proc/[0-9]*; do
		# builtins first: a fork per process of the host would take longer than the linger time
		{ read -r c <"$p/comm"; } 2>/dev/null || continue
		[ "$c" = hutch-layers ] || continue
		tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "HUTCH_DATA_DIR=$HUTCH_DATA_DIR" && echo "${p#/proc/}"
	done
}
keepers() { keeper_pids | wc -l; }
mount_id() { grep " $LAYERS " /proc/self/mountinfo | cut -d' ' -f1; }
start=$(date +%s%N)
out=$(HUTCH_LAYERS_LINGER=8 "$HUTCH" run -- echo lingering 2>&1)
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "keeper: the run's output" "lingering" "$out"
check "keeper: \$(hutch run) returns at once, not after the linger time (${took} ms)" test "$took" -lt 2500
expect_eq "keeper: the image stays mounted after the run" "1" "$(count_mounts)"
expect_eq "keeper: one keeper process" "1" "$(keepers)"
id1=$(mount_id)
HUTCH_LAYERS_LINGER=8 hrun -- true
expect_eq "keeper: the next run reuses the mount" "$id1" "$(mount_id)"
expect_eq "keeper: and starts no second keeper" "1" "$(keepers)"
expect_eq "keeper: no layer is left" "0" "$(count_layers)"
settles "keeper: the image is unmounted after the linger time" "0" count_mounts 150
settles "keeper: and its loop device goes" "0" count_loops
settles "keeper: and the keeper" "0" keepers
# a keeper told to stop (SIGTERM: a service manager stopping the unit) unmounts at once
HUTCH_LAYERS_LINGER=600 hrun -- true
expect_eq "keeper: a long linger keeps the mount" "1" "$(count_mounts)"
for p in $(keeper_pids); do kill -TERM "$p"; done
settles "keeper: SIGTERM unmounts at once" "0" count_mounts 30
settles "keeper: SIGTERM ends the keeper" "0" keepers
# the keeper also holds the run's sealed hutch-init and sysfs view: the next run executes that
# copy instead of making one; once the file it was copied from changed (here: a private copy of hutch-init with a
# byte appended), the held copy is refused and the run executes the new bytes (init_keep.c)
INIT_COPY="$HUTCH_TEST_TMP/hutch-init.copy"
cp "$ROOT/$BUILD/hutch-init" "$INIT_COPY"
keeper_init() { # "inode size" of the hutch-init memfd the keeper holds
	local p fd
	for p in $(keeper_pids); do
		for fd in /proc/"$p"/fd/*; do
			case "$(readlink "$fd")" in /memfd:hutch-init*) stat -L -c '%i %s' "$fd" ;; esac
		done
	done
}
run_init() { # "inode size" of the executable of a running sandbox's init
	HUTCH_LAYERS_LINGER=600 HUTCH_INIT="$INIT_COPY" "$HUTCH" run -- sleep 20 </dev/null >/dev/null 2>&1 &
	local runpid=$! pidfile=""
	for _ in $(seq 100); do
		pidfile=$(ls "$HUTCH_RUN_DIR"/sandboxes/run-*/pid 2>/dev/null | head -1)
		[ -n "$pidfile" ] && [ -s "$pidfile" ] && break
		sleep 0.1
	done
	stat -L -c '%i %s' "/proc/$(cat "$pidfile")/exe"
	kill -TERM "$runpid"
	wait "$runpid" 2>/dev/null
}
HUTCH_LAYERS_LINGER=600 HUTCH_INIT="$INIT_COPY" hrun -- true
held=$(keeper_init)
expect_match "keeper: holds the run's sealed hutch-init" "^[0-9]+ $(stat -c %s "$INIT_COPY")$" "$held"
check "keeper: its record is root's alone" test "$(stat -c '%u %a' "$HUTCH_RUN_DIR/cache/init.keeper")" = "0 600"
expect_eq "keeper: the next run executes the held copy" "$held" "$(run_init)"
# and the sandboxes' sysfs view (a mount of sysfs in an empty network namespace, kept alive)
fds=$(for p in $(keeper_pids); do ls -l /proc/"$p"/fd; done)
expect_match "keeper: holds the sysfs view's network namespace" "net:\[" "$fds"
out=$(HUTCH_LAYERS_LINGER=600 HUTCH_INIT="$INIT_COPY" hrun -- ls /sys/class/net)
expect_eq "keeper: a run on the held sysfs view sees lo alone in /sys/class/net" "lo" "$out"
printf 'X' >>"$INIT_COPY"
now=$(run_init)
check "keeper: a changed hutch-init file: the held copy is refused ($held, now $now)" test "${now% *}" != "${held% *}"
expect_eq "keeper: and the new bytes run" "$(stat -c %s "$INIT_COPY")" "${now#* }"
for p in $(keeper_pids); do kill -TERM "$p"; done
settles "keeper: gone" "0" keepers 30
check "keeper: its record goes with it" test ! -e "$HUTCH_RUN_DIR/cache/init.keeper"
settles "keeper: and the mount" "0" count_mounts 30
out=$(HUTCH_LAYERS_LINGER=ten hrun -- true 2>&1)
expect_match "keeper: a bad HUTCH_LAYERS_LINGER is named" "HUTCH_LAYERS_LINGER=ten" "$out"
expect_eq "keeper: and falls back to the default (the image stays mounted)" "1" "$(count_mounts)"
for p in $(keeper_pids); do kill -TERM "$p"; done
settles "keeper: gone again" "0" count_mounts 30

# SIGKILL to hutch run: the next run removes the layer, and then the mount
"$HUTCH" run -- sh -c 'echo data >/tmp/kept; sleep 60' &
pid=$!
sleep 1
expect_eq "a running sandbox has a layer" "1" "$(count_layers)"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
settles "SIGKILL to hutch run: its sandbox's processes die with it" "$p0" count_sandbox_procs
expect_eq "SIGKILL to hutch run: its layer is still there" "1" "$(count_layers)"
HUTCH_SWEEP_MIN_AGE=0 hrun -- true
expect_eq "the next run removes the killed run's layer" "0" "$(count_layers)"
expect_eq "and then the image's mount" "0" "$(count_mounts)"
settles "and the loop device" "0" count_loops
check "the image itself stays for the next sandboxes" test -f "$HUTCH_DATA_DIR/layers.img"

# a reboot under a hutch run sandbox: its processes and run dir are gone,
# its layer is not; the next run removes the layer (no one brings back a
# hutch run sandbox)
"$HUTCH" run -- sleep 60 &
pid=$!
sleep 1
kill -KILL "$pid"
wait "$pid" 2>/dev/null
settles "a killed run's processes are gone" "$p0" count_sandbox_procs
rm -rf "$HUTCH_RUN_DIR"
expect_eq "after the simulated reboot the layer is still there" "1" "$(count_layers)"
HUTCH_SWEEP_MIN_AGE=0 hrun -- true
expect_eq "the next run removes a hutch run layer left by a reboot" "0" "$(count_layers)"
expect_eq "and unmounts the image" "0" "$(count_mounts)"

finish
