#!/bin/bash
# Write throughput of the layers image under variants of its setup, against
# the host's data dir, in one run. Every variant is a small btrfs image of
# its own, attached and mounted side by side the way the runtime does it
# (src/runtime/layers.c: a loop device with direct I/O, single data and
# metadata, noatime, simple quotas, the files in a subvolume); each round
# writes on every variant and on a plain directory of the host's file
# system, in an order that rotates, so a shared disk's drift hits all alike.
# No sandbox is involved: bench/write_ab.sh showed that the sandbox writes
# as fast as the host into the same btrfs, so what is left is the image.
#
#   bench/image_variants.sh [ROUNDS] [VARIANT...]        (root; btrfs-progs, losetup, python3)
#
#   base       as the runtime makes it: sparse image, discard=async
#   bs4k       the loop device's logical block size 4096 (btrfs's sector size)
#   falloc     the image fallocated whole first (unwritten extents)
#   zero       the image written whole with zeros first (allocated, written extents), nodiscard
#   nocow      the subvolume chattr +C (no data copy-on-write, no data checksums)
#   ssd        mounted with `ssd` (the loop device reports a rotational disk)
#   n4k        mkfs.btrfs --nodesize 4096 (smaller tree blocks in every log write)
#   nodiscard  mounted without discard
#
# Default: all of them. seq is dd bs=1M count=512 conv=fsync, dsync dd bs=4k
# count=2000 oflag=dsync, as in write_ab.sh. The images are 8 GiB (sparse)
# in a fresh dir under TMPDIR_BENCH (default /var/tmp); everything made is
# unmounted, detached and removed on exit, failed runs included. Prints the
# median MB/s of each side, its ratio to the host's median, and every sample.
set -eu
rounds=${1:-5}
shift || true
all=(base bs4k falloc zero nocow ssd n4k nodiscard)
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=("${all[@]}")
for v in "${variants[@]}"; do
	case " ${all[*]} " in *" $v "*) ;; *) echo "unknown variant $v (${all[*]})" >&2; exit 2 ;; esac
done
tmp=$(mktemp -d "${TMPDIR_BENCH:-/var/tmp}/hutch-image-variants.XXXXXX")
devs=()
cleanup() {
	for v in "${variants[@]}"; do
		mountpoint -q "$tmp/$v/mnt" && umount "$tmp/$v/mnt"
	done
	for d in "${devs[@]}"; do losetup -d "$d" 2>/dev/null; done
	rm -rf --one-file-system "$tmp"
}
trap 'cleanup' EXIT
trap 'exit 130' INT TERM

# simple quotas as the runtime enables them (hu_btrfs_quota_enable): the
# ioctl, since btrfs-progs before 6.7 has no `quota enable --simple`
squota() {
	python3 - "$1" <<'PY'
import fcntl, os, struct, sys
BTRFS_IOC_QUOTA_CTL = 0xC0109428  # _IOWR(0x94, 40, 16 bytes)
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    fcntl.ioctl(fd, BTRFS_IOC_QUOTA_CTL, bytearray(struct.pack("QQ", 4, 0)))  # simple
except OSError:
    fcntl.ioctl(fd, BTRFS_IOC_QUOTA_CTL, bytearray(struct.pack("QQ", 1, 0)))  # full quota groups
PY
}

# make, attach and mount one variant's image at $tmp/$1/mnt
setup() {
	local v=$1 img=$tmp/$1/layers.img lo=() mkfs=() opts=discard=async
	mkdir -p "$tmp/$v/mnt"
	truncate -s 8G "$img"
	case $v in
	bs4k) lo=(--sector-size 4096) ;;
	falloc) fallocate -l 8G "$img" ;;
	zero)
		dd if=/dev/zero of="$img" bs=16M count=512 conv=fsync status=none
		opts=nodiscard
		;;
	ssd) opts=discard=async,ssd ;;
	n4k) mkfs=(--nodesize 4096) ;;
	nodiscard) opts=nodiscard ;;
	esac
	mkfs.btrfs -q -f -m single -d single "${mkfs[@]}" "$img" >/dev/null 2>&1
	local dev
	dev=$(losetup --show -f --direct-io=on "${lo[@]}" "$img")
	devs+=("$dev")
	mount -o "noatime,nosuid,nodev,$opts" "$dev" "$tmp/$v/mnt"
	squota "$tmp/$v/mnt"
	btrfs subvolume create "$tmp/$v/mnt/sv" >/dev/null
	if [ "$v" = nocow ]; then chattr +C "$tmp/$v/mnt/sv"; fi
}

for v in "${variants[@]}"; do setup "$v"; done
mkdir "$tmp/host"
sides=(host "${variants[@]}")
# MB/s from dd's last line ("... copied, 2.5 s, 208 MB/s"), as a number
rate() { awk '/copied/ { v = $(NF-1); u = $NF; if (u == "GB/s") v *= 1000; if (u == "kB/s") v /= 1000; print v }'; }
: >"$tmp/res"
for r in $(seq 1 "$rounds"); do
	for kind in seq dsync; do
		if [ "$kind" = seq ]; then args="bs=1M count=512 conv=fsync"; else args="bs=4k count=2000 oflag=dsync"; fi
		for i in $(seq 0 $((${#sides[@]} - 1))); do
			side=${sides[$(((i + r) % ${#sides[@]}))]}
			f=$tmp/$side/mnt/sv/w
			[ "$side" = host ] && f=$tmp/host/w
			# shellcheck disable=SC2086
			echo "$kind $side $(dd if=/dev/zero of="$f" $args 2>&1 | rate)" >>"$tmp/res"
			rm -f "$f"
		done
	done
	echo "round $r of $rounds, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
python3 - "$tmp/res" "${sides[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
print(f"{'MB/s':6} {'side':10} {'n':>3} {'median':>8} {'/ host':>7}  samples")
for kind in ("seq", "dsync"):
    host = statistics.median(float(x[2]) for x in rows if x[0] == kind and x[1] == "host")
    for side in sys.argv[2:]:
        v = [float(x[2]) for x in rows if x[0] == kind and x[1] == side]
        m = statistics.median(v)
        print(f"{kind:6} {side:10} {len(v):3} {m:8.1f} {m / host:7.2f}  {' '.join(f'{x:g}' for x in v)}")
PY
