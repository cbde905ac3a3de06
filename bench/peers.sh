#!/bin/sh
# bench/peers.sh: hutch side by side with what users would pick instead (gVisor's runsc,
# podman, Docker) and with bwrap, crun and the host, on the work an agent platform does.
# docs/benchmarks.md has the figures and how they are made.
#
#   sudo bench/peers.sh                               # 3 rounds, every task and peer
#   sudo bench/peers.sh --rounds 2 --n 5 --idle 30    # quicker
#   sudo bench/peers.sh --only true,exec --peers hutch,podman
#
# Options go to bench/peers.mjs (--rounds, --n, --n-heavy, --heavy-rounds, --idle, --only, --peers,
# --budget-s, --json).
# Needs what scripts/install-deps.sh installs. Everything the run makes lives in one temporary
# directory: the root filesystem and bundles, podman's storage, a dockerd of its own (private
# socket, data root and exec root, no iptables, no forwarding, no bridge), the task data and
# hutch's data and run dirs. The run works in a mount namespace of its own (a slave of the
# host's), so the mounts the runtimes make there never reach the host's mount table. At exit,
# whatever way it ends, this script kills what is left in the run's cgroups and every process
# whose command line names the run's directory, removes the cgroups and the directory, and
# checks that forwarding and the nftables ruleset are as they were.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "bench/peers.sh: the peers run rootful: run as root" >&2
	exit 1
fi
[ "${SKIP_MAKE:-0}" = 1 ] || make -s build/hutch build/hutch-full build/hutch-init

host_state() {
	printf 'ip_forward=%s v6_forwarding=%s nft=%s' "$(cat /proc/sys/net/ipv4/ip_forward)" \
		"$(cat /proc/sys/net/ipv6/conf/all/forwarding)" "$(nft list ruleset 2>/dev/null | cksum)"
}
# The cgroup parents the run's containers and sandboxes are put in (peers.mjs uses the same).
TAG="peers$$"
CG_PARENTS="$TAG-hutch $TAG-oci $TAG-podman $TAG-docker"

before=$(host_state)
T=$(mktemp -d /tmp/hutch-peers.XXXXXX)
chmod 755 "$T" # the containers' (unprivileged) root walks through it to the root filesystem

# every process the run starts inherits this (the containers of podman and Docker do not: they are
# found by cgroup and their helpers by command line)
export HUTCH_PEERS_RUN="$T"

HOST_DEVS="/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty"

cleanup() {
	set +e
	unset HUTCH_PEERS_RUN # what cleanup starts is not the run's
	# processes of the run: by cgroup (containers, sandboxes) ...
	for p in $CG_PARENTS; do
		for g in /sys/fs/cgroup/*/"$p" /sys/fs/cgroup/"$p"; do
			[ -d "$g" ] || continue
			find "$g" -name cgroup.procs | while read -r f; do
				for pid in $(cat "$f"); do kill -9 "$pid"; done
			done
		done
	done 2>/dev/null
	# ... by command line (dockerd, its containerd and shims, conmon, runsc's sandbox and gofer) and by
	# the variable above (what the host and bwrap peers left)
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		[ "$pid" = $$ ] && continue
		if { tr '\0' '\n' <"$d/cmdline" | grep -qF "$T/"; } 2>/dev/null ||
			{ tr '\0' '\n' <"$d/environ" | grep -qxF "HUTCH_PEERS_RUN=$T"; } 2>/dev/null; then
			kill -9 "$pid" 2>/dev/null
		fi
	done
	sleep 0.5
	for p in $CG_PARENTS; do
		for g in /sys/fs/cgroup/*/"$p" /sys/fs/cgroup/"$p"; do
			[ -d "$g" ] && find "$g" -depth -type d -exec rmdir {} + 2>/dev/null
		done
	done
	# mounts live in the run's namespace, which is gone with its last process; a mount that
	# reached the host anyway would stop rm at the file system boundary
	grep -o " $T/[^ ]*" /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done 2>/dev/null
	rm -rf --one-file-system "$T"
	# A user-namespaced OCI runtime binds the host's device nodes into its containers and has been
	# seen to chown the host's /dev/null to the container's root (uid 1600000): put the owners back
	# and say so, so that no run leaves the host's devices to a container uid.
	for dev in $HOST_DEVS; do
		if [ "$(stat -c %u:%g "$dev")" != 0:0 ]; then
			echo "bench/peers.sh: $dev was chowned to $(stat -c %u:%g "$dev") during the run; restored to root" >&2
			chown 0:0 "$dev"
		fi
	done
	after=$(host_state)
	if [ "$before" != "$after" ]; then
		echo "bench/peers.sh: the host changed during the run: $before -> $after" >&2
		exit 1
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The run's own mount namespace. crun 1.8 (podman's runtime too) refuses every container on a
# hybrid-cgroup host whose cgroup2 mount offers a controller; there the file is covered by an
# empty one (in this namespace only), as bench/sandbox_bench does. The host's work dir is a
# tmpfs, as every sandbox's /tmp is; so is hutch run's run dir, as /run is on a host.
unshare -m --propagation slave sh -c '
	set -e
	T=$1; TAG=$2; shift 2
	ctl=/sys/fs/cgroup/unified/cgroup.controllers
	if [ -n "$(cat "$ctl" 2>/dev/null)" ]; then
		: >"$T/empty"
		mount --bind "$T/empty" "$ctl"
		echo "peers: $ctl lists controllers (hybrid host); covered with an empty file in the run'"'"'s mount namespace" >&2
	fi
	mkdir -p "$T/hostwork"
	mount -t tmpfs -o size=4g tmpfs "$T/hostwork"
	# hutch run'"'"'s run dir on a tmpfs, as its default /run/hutch is on a host: on ext4, every run'"'"'s
	# files created and deleted there cost ~1 ms more (the inode allocator skipping recently deleted
	# inodes)
	mkdir -p "$T/hutch/run"
	mount -t tmpfs -o size=256m,mode=0700 tmpfs "$T/hutch/run"
	exec node bench/peers.mjs --dir "$T" --tag "$TAG" "$@"
' peers "$T" "$TAG" "$@"
