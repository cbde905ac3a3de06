#!/bin/sh
# bench/net.sh: the create-time cost of a sandbox's network, loopback only
# against internet access (veth, addresses, route, nft chain and sets),
# alternating in the same run (sandbox_bench's "net" group).
#
#   sudo bench/net.sh                       # 5 rounds x 50 samples per figure
#   ROUNDS=3 ITERATIONS=20 bench/net.sh
#
# The runtime's uplink is a veth pair made for the run (the host's
# own interfaces and routes are not touched), in a table and pool of its
# own; both are removed at exit. No packet leaves a sandbox during the run.
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench/net.sh: run as root" >&2; exit 1; }
[ "${SKIP_MAKE:-0}" = 1 ] || make
tag=$(($$ % 100000))
name="hnb$tag"
uplink="hnbu$tag"
tmp=$(mktemp -d /tmp/hutch-bench-net.XXXXXX)
cleanup() {
	ip link del "$uplink" 2>/dev/null || true
	nft delete table inet "$name" 2>/dev/null || true
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ip link add "$uplink" type veth peer name "hnbp$tag"
ip link set "$uplink" up
export HUTCH_DATA_DIR="$tmp/data" HUTCH_RUN_DIR="$tmp/run"
export HUTCH_CGROUP_PARENT="${HUTCH_CGROUP_PARENT:-hutch-bench}"
export HUTCH_NET=nat HUTCH_NET_NAME="$name" HUTCH_NET_POOL=10.251.0.0/17 HUTCH_NET_DNS=198.51.100.53
export HUTCH_NET_UPLINK="$uplink"
build/bench/sandbox_bench --only net --no-cli --no-bwrap --rounds "${ROUNDS:-5}" --iterations "${ITERATIONS:-50}" \
	--json "${JSON:-build/bench/net_bench.json}"
