#!/bin/sh
# Installs the Debian packages hutch needs to build, test and benchmark.
# Safe to run again; it only installs what is missing.
set -eu
PKGS="build-essential pkg-config clang libclang-rt-14-dev valgrind
      libevent-dev libjansson-dev libsqlite3-dev libpq-dev postgresql-15 libseccomp-dev libcmocka-dev zlib1g-dev libssl-dev
      libnftables-dev nftables libarchive-dev
      iproute2 util-linux procps python3 python3-venv bash coreutils bubblewrap crun e2fsprogs btrfs-progs"
# What bench/peers.sh compares hutch with, its tasks' tools and its chart. Installed without
# recommends: docker.io's and podman's pull in cgroupfs-mount, apparmor and needrestart, which
# mount cgroups or restart services on the host.
PEERS="runsc podman docker.io python3-pandas python3-openpyxl python3-matplotlib git hyperfine"

missing_of() {
	m=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || m="$m $p"
	done
	echo "$m"
}

# The state the tests rely on, compared before and after the peers are installed: dockerd
# (started) would turn on forwarding and add its own nftables (iptables-nft) chains.
host_state() {
	printf 'ip_forward=%s ' "$(cat /proc/sys/net/ipv4/ip_forward)"
	printf 'v6_forwarding=%s ' "$(cat /proc/sys/net/ipv6/conf/all/forwarding 2>/dev/null)"
	printf 'nft=%s' "$(nft list ruleset 2>/dev/null | cksum)"
}

missing=$(missing_of $PKGS)
peers=$(missing_of $PEERS)
export DEBIAN_FRONTEND=noninteractive
[ -z "$missing$peers" ] || apt-get -o DPkg::Lock::Timeout=600 update -qq
# the tests start PostgreSQL servers of their own (tests/pg.sh): the
# package must not create and start a system cluster of its own
case " $missing " in *" postgresql-15 "*)
	mkdir -p /etc/postgresql-common/createcluster.d
	echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/hutch-tests.conf ;;
esac
[ -z "$missing" ] || apt-get install -o DPkg::Lock::Timeout=600 -y -qq $missing

if [ -n "$peers" ]; then
	before=$(host_state)
	# No service of a package starts during the install (the Debian mechanism: invoke-rc.d and
	# deb-systemd-invoke ask policy-rc.d, and 101 means "not now"). A policy-rc.d already in
	# place is left as it is.
	made_policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	rc=0
	apt-get install -o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends $peers || rc=$?
	[ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
	[ "$rc" = 0 ] || exit "$rc"
	# Under systemd the units are still enabled for the next boot, and docker.socket would
	# start dockerd on the first connection: the benchmark starts a private dockerd itself.
	if [ -d /run/systemd/system ]; then
		systemctl disable --now docker.socket docker.service containerd.service >/dev/null 2>&1 || true
	fi
	after=$(host_state)
	if [ "$before" != "$after" ]; then
		echo "install-deps: installing the benchmark's peers changed the host: $before -> $after" >&2
		exit 1
	fi
fi
# The port ingress's conformance run and benchmark (tests/conformance/run-e2b-suite.sh,
# bench/ports_bench.mjs): dnsmasq's binary alone (no service) answers the wildcard sandbox name
# on a loopback address, nginx is the reverse proxy hutch is compared with, wrk the load.
# nginx's package would start a server on port 80: no service starts during the install, and
# the benchmark runs its own nginx with its own configuration.
NPKGS="nginx-light wrk dnsmasq-base"
nmissing=$(missing_of $NPKGS)
if [ -n "$nmissing" ]; then
	made_policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	rc=0
	apt-get -o DPkg::Lock::Timeout=600 update -qq || rc=$?
	[ "$rc" != 0 ] || apt-get install -o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends $nmissing || rc=$?
	[ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
	[ "$rc" = 0 ] || exit "$rc"
	if [ -d /run/systemd/system ]; then
		systemctl disable --now nginx.service >/dev/null 2>&1 || true
	fi
fi
# The code interpreter's server and its tests (images/code-interpreter): Debian's Jupyter kernel stack, the
# libraries its tests display, the TypeScript compiler its JavaScript kernel parses cells with, and debootstrap
# for its template. Without recommendations: those would bring a desktop's worth of packages.
IPKGS="python3-ipykernel python3-jupyter-client python3-matplotlib python3-pandas python3-pytest python3-venv node-typescript
       debootstrap"
imissing=$(missing_of $IPKGS)
if [ -n "$imissing" ]; then
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get install -o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends $imissing
fi
# No dockerd or containerd may be left running (they would share the host's network setup
# with the tests); the benchmark's own dockerd is stopped by the benchmark.
for d in dockerd containerd; do
	if pgrep -x "$d" >/dev/null 2>&1; then
		echo "install-deps: note: a $d is running (pid $(pgrep -x "$d" | tr '\n' ' ')); hutch's tests do not use it" >&2
	fi
done
# node >= 20 runs the end-to-end tests with the pinned e2b SDK (later issues).
command -v node >/dev/null 2>&1 || apt-get install -o DPkg::Lock::Timeout=600 -y -qq nodejs npm
