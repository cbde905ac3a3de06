#!/bin/bash
# Resource limits: each abuse is stopped inside its sandbox while the host and
# a neighbouring sandbox carry on. Every abuse is bounded in size and time.
. "$(dirname "$0")/lib.sh"

# fork bomb: fork until the pids limit refuses
out=$(hrun --pids 64 --timeout 60s -- python3 -c '
import os, time
n = 0
for i in range(10000):
    try:
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
    except OSError as e:
        print("fork refused after", n, "errno", e.errno); break
else:
    print("never refused")')
expect_match "a fork bomb is stopped by the pids limit" "fork refused after [0-9]+ errno 11" "$out"
n=$(awk '{print $4}' <<<"$out")
check "no more than the limit of processes were made ($n)" test "${n:-999}" -lt 64

# the classic shell bomb, with a neighbour and the host checked meanwhile
hrun --pids 128 --cpus 0.5 --timeout 6s -- bash -c 'b(){ b|b& }; b; while :; do :; done' >/dev/null 2>&1 &
bomb=$!
sleep 2
start=$(date +%s%N)
out=$(hrun -- echo neighbour-ok)
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "a neighbour sandbox works during a shell fork bomb" "neighbour-ok" "$out"
check "the host stays responsive during the bomb (${ms} ms for a neighbour run)" test "$ms" -lt 5000
wait "$bomb"
expect_eq "the bombed sandbox is ended by its timeout" "124" "$?"

# memory bomb: OOM-killed inside its cgroup; the shell that started it (and
# the sandbox's init) survive; a neighbour keeps running
hrun -- bash -c 'sleep 3; echo neighbour-alive' >"$HUTCH_TEST_TMP/neigh.out" 2>&1 &
neigh=$!
out=$(hrun --memory 64M -- bash -c 'python3 -c "b = bytearray(512 << 20); print(len(b))"; echo after=$?')
expect_eq "a memory bomb is OOM-killed inside the sandbox, its shell survives" "after=137" "$out"
wait "$neigh"
expect_eq "the neighbour kept running through the memory bomb" "neighbour-alive" "$(cat "$HUTCH_TEST_TMP/neigh.out")"
out=$(hrun --memory 64M -- python3 -c 'b = bytearray(512 << 20)' 2>&1)
expect_eq "an OOM-killed command exits 137" "137" "$?"
expect_match "hutch run says the OOM killer ended the command" "OOM killer .memory limit 64 MiB" "$out"
out=$(hrun --memory 64M -- python3 -c 'b = bytearray(32 << 20); print("fits")')
expect_eq "memory below the limit is usable" "fits" "$out"

# disk fill: EDQUOT (the layer's quota group) at the cap, nothing beyond it
# written: the layer is on the host's disk, so the host's disk grows by at
# most the cap (docs/operations.md, "Storage")
host_before=$(df --output=used "$HUTCH_DATA_DIR" | tail -1)
out=$(hrun --disk 32M -- bash -c 'dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>&1 | grep -o -E "No space left on device|Disk quota exceeded" | head -1; stat -c %s /tmp/fill')
expect_match "a disk fill stops with EDQUOT or ENOSPC" "No space left on device|Disk quota exceeded" "$out"
size=$(tail -1 <<<"$out")
check "the filled file is at most the cap ($size bytes)" test "$size" -le $((32 << 20))
host_after=$(df --output=used "$HUTCH_DATA_DIR" | tail -1)
check "the host's disk grew by at most the cap" test $((host_after - host_before)) -lt $((32 * 1024 + 8192))
out=$(hrun --disk 8M -- python3 -c '
import os
os.makedirs("/tmp/many")
for i in range(100000):
    try:
        open("/tmp/many/%d" % i, "w").close()
    except OSError as e:
        print("refused at", i, "errno", e.errno); break
else:
    print("never refused")')
# every inode is metadata charged to the cap: files stop with EDQUOT
expect_match "inode exhaustion stops at the cap with EDQUOT or ENOSPC" "refused at [0-9]+ errno (28|122)" "$out"

# output flood: a million lines arrive, in order and complete
out=$(hrun -- python3 -c '
import sys
w = sys.stdout.write
for i in range(1000000): w("%d\n" % i)' | awk 'NR != $1 + 1 { bad++ } END { print NR, bad + 0 }')
expect_eq "a million-line flood arrives whole and in order" "1000000 0" "$out"

# 100,000 files in /tmp: fine within a 1 GiB layer, and gone with the sandbox
out=$(hrun --disk 1G -- python3 -c '
import os
os.makedirs("/tmp/many")
for i in range(100000): open("/tmp/many/%d" % i, "w").close()
print(len(os.listdir("/tmp/many")))')
expect_eq "100,000 files in /tmp are created inside the sandbox" "100000" "$out"
check "no sandbox directory is left after them" test -z "$(ls "$HUTCH_RUN_DIR/sandboxes")"
check "no layer is left after them" test -z "$(ls "$HUTCH_DATA_DIR/layers" 2>/dev/null)"

# CPU: a spinning process gets about its share of one CPU
out=$(hrun --cpus 0.25 -- python3 -c '
import time
t0 = time.time(); c0 = time.process_time()
while time.time() - t0 < 2: pass
print(round((time.process_time() - c0) / (time.time() - t0), 2))')
check "a 0.25 CPU limit holds a spinning process to about a quarter ($out)" python3 -c "import sys; sys.exit(0 if 0.1 <= $out <= 0.4 else 1)"

# block I/O (docs/security.md, "Layers"): the sandbox's group gets its weight
# and, on the disk behind /usr, its caps (read from the kernel's files while
# it runs); a capped sandbox's direct reads are held to the cap. Needs an io
# or blkio controller and /usr on a whole disk or a partition of one.
io_root=
if [ -d /sys/fs/cgroup/blkio ]; then
	io_root=/sys/fs/cgroup/blkio
elif grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	io_root=/sys/fs/cgroup
fi
disk=$(stat -c '%Hd:%Ld' /usr)
[ -e "/sys/dev/block/$disk/partition" ] && disk=$(cat "/sys/dev/block/$disk/../dev")
big=$(find /usr -xdev -type f -size +20M 2>/dev/null | head -1)
io_knob() { # GROUP KNOB...: the first of the knobs the group has, and its content
	local k
	for k in "${@:2}"; do
		[ -e "$1/$k" ] && { echo "$k: $(tr '\n' ' ' <"$1/$k" | sed 's/ $//')"; return; }
	done
	echo "none"
}
io_files() { # the weight and cap files of the one live sandbox's group
	local g
	for _ in $(seq 100); do
		g=$(ls -d "$io_root/$HUTCH_CGROUP_PARENT"/*/ 2>/dev/null | head -1)
		[ -n "$g" ] && grep -q . "$g/cgroup.procs" 2>/dev/null && break
		sleep 0.05
	done
	io_knob "$g" io.weight io.bfq.weight blkio.bfq.weight blkio.weight
	io_knob "$g" io.max blkio.throttle.read_bps_device
	io_knob "$g" blkio.throttle.write_iops_device
}
if [ -z "$io_root" ] || [ ! -e "/sys/dev/block/$disk" ]; then
	echo "ok - # SKIP no io/blkio controller, or /usr on no disk (hutch doctor: block I/O limits)"
else
	out=$(hrun --io-weight 300 --io-bps 8M --io-iops 400 -- sleep 2 & sleep 0.3; io_files; wait)
	echo "$out" | sed 's/^/# /'
	# The kernel makes a weight file only where something can weigh groups
	# (bfq, iocost; cfq is gone): without one there is nothing to set, as
	# hutch doctor's "block I/O limits" line warns, and no weight to check.
	weighted=1
	case $out in none*) weighted=0 ;; esac
	if [ "$weighted" = 1 ]; then
		expect_match "the sandbox's group has the weight asked for" "weight: (default )?300" "$out"
	else
		echo "ok - # SKIP no I/O weight knob on this kernel (no bfq or io.cost); the weight checks are skipped"
	fi
	expect_match "its read and write bandwidth cap is on the disk behind /usr ($disk)" \
		"(io.max: $disk rbps=8388608 wbps=8388608 riops=400 wiops=400|read_bps_device: $disk 8388608)" "$out"
	[ "$io_root" = /sys/fs/cgroup/blkio ] && expect_match "and its write iops cap" "write_iops_device: $disk 400" "$out"
	out=$(hrun -- sleep 2 & sleep 0.3; io_files; wait)
	[ "$weighted" = 0 ] || expect_match "by default a sandbox's weight is 100" "weight: (default )?100" "$out"
	expect_no_match "by default no cap is set" "$disk (rbps=[0-9]|[0-9])" "$out"
	out=$(HUTCH_IO_BPS=4M hrun --io-bps 64M -- sleep 2 & sleep 0.3; io_files; wait)
	expect_match "a sandbox cannot loosen the operator's cap (HUTCH_IO_BPS 4M, asked 64M)" \
		"$disk (rbps=4194304|4194304)" "$out"
	if [ -n "$big" ]; then
		secs=$(hrun --io-bps 4M -- dd if="$big" of=/dev/null bs=1M count=16 iflag=direct 2>&1 | sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p')
		check "16 MiB of direct reads under a 4 MiB/s cap take about 4 s (${secs:-none} s)" \
			python3 -c "import sys; sys.exit(0 if 2.5 <= float('${secs:-0}') <= 12 else 1)"
		secs=$(hrun -- dd if="$big" of=/dev/null bs=1M count=16 iflag=direct 2>&1 | sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p')
		echo "# uncapped, the same reads take ${secs:-?} s"
	fi
	out=$(hrun --io-weight 0 -- true 2>&1)
	expect_match "an I/O weight of 0 is refused" "I/O weight 0: 1 .. 10000" "$out"
	out=$(HUTCH_IO_IOPS=10 hrun -- true 2>&1)
	expect_match "an operator iops cap below 100 is refused" "operations a second: 0 \(none\) or at least 100" "$out"
fi

finish
