#!/bin/sh
# Installs the Debian packages hutch needs to build, test and benchmark.
# Safe to run again; it only installs what is missing.
set -eu
PKGS="build-essential pkg-config clang libclang-rt-14-dev valgrind
      libevent-dev libjansson-dev libsqlite3-dev libseccomp-dev libcmocka-dev zlib1g-dev libssl-dev
      libnftables-dev nftables libarchive-dev
      iproute2 util-linux procps python3 bash coreutils bubblewrap crun e2fsprogs"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq $missing
fi
# The code interpreter's server and its tests (images/code-interpreter): Debian's Jupyter kernel stack, the
# libraries its tests display, the TypeScript compiler its JavaScript kernel parses cells with, and debootstrap
# for its template. Without recommendations: those would bring a desktop's worth of packages.
IPKGS="python3-ipykernel python3-jupyter-client python3-matplotlib python3-pandas python3-pytest python3-venv node-typescript
       debootstrap"
missing=""
for p in $IPKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing
fi
# node >= 20 runs the end-to-end tests with the pinned e2b SDK (later issues).
command -v node >/dev/null 2>&1 || { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq nodejs npm; }
