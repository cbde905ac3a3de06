#!/bin/sh
# Installs the Debian packages hutch needs to build, test and benchmark.
# Safe to run again; it only installs what is missing.
set -eu
PKGS="build-essential pkg-config clang libclang-rt-14-dev valgrind
      libevent-dev libjansson-dev libsqlite3-dev libseccomp-dev libcmocka-dev zlib1g-dev libssl-dev
      libnftables-dev nftables libarchive-dev
      iproute2 util-linux procps python3 python3-venv bash coreutils bubblewrap crun e2fsprogs"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq $missing
fi
# node >= 20 runs the end-to-end tests with the pinned e2b SDK (later issues).
command -v node >/dev/null 2>&1 || { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq nodejs npm; }
