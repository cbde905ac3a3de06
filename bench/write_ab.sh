#!/bin/bash
# Write throughput inside a sandbox against the host's data dir, in the same
# run: each round writes with dd on the data dir (host), inside a `hutch run`
# sandbox (sbx: its writable layer, default limits), inside one with 2 GiB of
# memory (sbx2g: the 512 MiB file no longer fills its memory cgroup) and,
# from the host, into the layers' btrfs itself (layers: no overlay, no
# sandbox; the image's loop device when the backend is `image`), in an
# order that rotates each round, so a noisy host's drift hits all alike.
#
#   bench/write_ab.sh [BUILD_DIR] [ROUNDS] [SEQ_MIB]
#
#   seq    dd bs=1M count=SEQ_MIB conv=fsync      (sequential, then one fsync)
#   dsync  dd bs=4k count=2000 oflag=dsync        (every write synchronous)
#
# The data dir is a fresh one under TMPDIR_BENCH (default /var/tmp: a disk,
# not a tmpfs); HUTCH_LAYERS picks the backend as usual. Prints median and
# p99 of MB/s for each, and the ratio of the medians (sandbox / host).
set -eu
build=${1:-build} rounds=${2:-8} seq_mib=${3:-512}
build=$(cd "$build" && pwd)
tmp=$(mktemp -d "${TMPDIR_BENCH:-/var/tmp}/hutch-write-ab.XXXXXX")
export HUTCH_DATA_DIR="$tmp/data" HUTCH_RUN_DIR="$tmp/run" HUTCH_INIT="$build/hutch-init"
# a `hutch run` layer is volatile (no syncs: it goes with the run); the
# sandbox sides measure the syncs a daemon's sandbox does
export HUTCH_RUN_VOLATILE=0
export HUTCH_CGROUP_PARENT="${HUTCH_CGROUP_PARENT:-hutch-bench-write}"
cleanup() { rm -rf --one-file-system "$tmp"; }
trap 'cleanup' EXIT
trap 'exit 130' INT TERM
mkdir -p "$HUTCH_DATA_DIR"
disk=$(( seq_mib * 2 + 256 ))M
# MB/s from dd's last line ("... copied, 2.5 s, 208 MB/s"), as a number
rate() { awk '/copied/ { v = $(NF-1); u = $NF; if (u == "GB/s") v *= 1000; if (u == "kB/s") v /= 1000; print v }'; }
host() {
	dd if=/dev/zero of="$HUTCH_DATA_DIR/w" "$@" 2>&1 | rate
	rm -f "$HUTCH_DATA_DIR/w"
}
sbx() { "$build/hutch" run --disk "$disk" -- dd if=/dev/zero of=/tmp/w "$@" 2>&1 | rate; }
sbx2g() { "$build/hutch" run --disk "$disk" --memory 2G -- dd if=/dev/zero of=/tmp/w "$@" 2>&1 | rate; }
layers() {
	dd if=/dev/zero of="$HUTCH_DATA_DIR/layers/.bench/w" "$@" 2>&1 | rate
	rm -f "$HUTCH_DATA_DIR/layers/.bench/w"
}
# a sandbox alive for the whole run keeps the layers' file system mounted
# (the last runtime out unmounts an image), for the `layers` side
"$build/hutch" run -- sleep 100000 &
holder=$!
cleanup() {
	kill "$holder" 2>/dev/null && { wait "$holder" 2>/dev/null || true; }
	mountpoint -q "$tmp/data/layers" && umount "$tmp/data/layers"
	rm -rf --one-file-system "$tmp"
	for g in /sys/fs/cgroup/*/"$HUTCH_CGROUP_PARENT" /sys/fs/cgroup/"$HUTCH_CGROUP_PARENT"; do
		[ -d "$g" ] && rmdir "$g" 2>/dev/null
	done
	true
}
for _ in $(seq 1 100); do mountpoint -q "$HUTCH_DATA_DIR/layers" && break; sleep 0.1; done
mkdir -p "$HUTCH_DATA_DIR/layers/.bench"
sides=(host sbx sbx2g layers)
: >"$tmp/res"
for r in $(seq 1 "$rounds"); do
	for kind in seq dsync; do
		if [ "$kind" = seq ]; then args="bs=1M count=$seq_mib conv=fsync"; else args="bs=4k count=2000 oflag=dsync"; fi
		order=""
		for i in 0 1 2 3; do order="$order ${sides[$(( (i + r) % 4 ))]}"; done
		for side in $order; do
			# shellcheck disable=SC2086
			v=$($side $args)
			echo "$kind $side $v" | tee -a "$tmp/res" >&2
		done
	done
done
PYTHONPATH="$(dirname "$0")" python3 - "$tmp/res" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
from abstats import pct
# the slow tail of a throughput is its low percentile (p1)
print(f"{'MB/s':6} {'side':7} {'n':>3} {'median':>8} {'p1':>8} {'/ host median':>14}")
for kind in ("seq", "dsync"):
    h = [float(x[2]) for x in rows if x[0] == kind and x[1] == "host"]
    for side in ("host", "sbx", "sbx2g", "layers"):
        v = [float(x[2]) for x in rows if x[0] == kind and x[1] == side]
        if h and v:
            print(f"{kind:6} {side:7} {len(v):3} {pct(v, .5):8.1f} {pct(v, .01):8.1f} {pct(v, .5) / pct(h, .5):14.2f}")
PY
