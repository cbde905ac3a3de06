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

finish
