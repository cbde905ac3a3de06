#!/bin/bash
# Runs E2B's own JS SDK test suite (packages/js-sdk/tests of the public
# e2b-dev/E2B repository, vitest) against a real `hutch serve`, with the
# published e2b package pinned in package-lock.json as the client.
#
#   tests/conformance/run-e2b-suite.sh [E2B_CHECKOUT] [BUILD]
#
# E2B_CHECKOUT: a checkout of e2b-dev/E2B, or its packages/js-sdk, or a
# directory holding its tests/ (default: $E2B_REPO). Without one the run is
# skipped (exit 0) with a message: CI has no access to GitHub.
# BUILD: build or build-san (default: $HUTCH_BUILD, else build).
# ONLY="sandbox/files/read.test.ts ..." runs a subset of the applicable files.
#
# E2B's test files are copied to a temporary directory, their relative imports
# of the SDK's sources (`../src`, `../../src/errors`, ...) rewritten to the
# `e2b` package, and run there; nothing of them is kept in this repository.
# The files that apply to a self-hosted server are listed below; every other
# file and the tests excluded by name are listed with their reason in
# docs/e2b-compat.md.
#
# The SDK reaches a sandbox's ports at https://<port>-<id>.<domain> (getHost),
# so the run sets up, for itself only: a loopback address of its own
# (127.a.b.1) where `hutch serve` listens with TLS on port 443 and
# --sandbox-domain set; a throwaway CA and a wildcard certificate for it
# (openssl), which node trusts through NODE_EXTRA_CA_CERTS; and dnsmasq on the
# same address answering every name under the domain with it. The tests run in
# a private mount namespace (unshare -m) where a resolv.conf naming that
# dnsmasq is bind-mounted on /etc/resolv.conf: the host's resolver, its
# /etc/resolv.conf and every other process are untouched.
set -u
# the suites build their own templates: no daemon of theirs provisions the code interpreter's (provision.h)
export HUTCH_INTERPRETER_PROVISION=${HUTCH_INTERPRETER_PROVISION:-0}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src=${1:-${E2B_REPO:-}}
build=${2:-${HUTCH_BUILD:-build}}

skip() {
	echo "conformance: skipped: $1"
	echo "conformance: to run it, fetch https://github.com/e2b-dev/E2B and pass its path (or set E2B_REPO)"
	mkdir -p "$root/tests/results"
	echo "conformance: skipped, $1" >"$root/tests/results/conformance.txt"
	exit 0
}

[ -n "$src" ] || skip "no E2B checkout given"
tests=
for cand in "$src/packages/js-sdk/tests" "$src/tests" "$src"; do
	if [ -f "$cand/setup.ts" ] && [ -d "$cand/sandbox" ]; then
		tests=$(cd "$cand" && pwd)
		break
	fi
done
[ -n "$tests" ] || skip "no packages/js-sdk/tests under '$src'"
[ -x "$root/$build/hutch" ] || { echo "conformance: $root/$build/hutch is missing: run make first"; exit 1; }
for tool in openssl dnsmasq unshare; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "conformance: $tool is missing (scripts/install-deps.sh installs it)"; exit 1; }
done

# The test files that exercise a server (the rest are offline unit tests of
# SDK internals or tests of E2B's hosted services: docs/e2b-compat.md).
applicable="
api/info.test.ts api/kill.test.ts api/list.test.ts api/snapshot.test.ts
sandbox/connect.test.ts sandbox/create.test.ts sandbox/host.test.ts sandbox/kill.test.ts sandbox/timeout.test.ts
sandbox/metrics.test.ts sandbox/secure.test.ts sandbox/snapshot.test.ts sandbox/lifecyclePayload.test.ts
sandbox/fork.test.ts sandbox/snapshot-api.test.ts
sandbox/commands/connect.test.ts sandbox/commands/envVars.test.ts sandbox/commands/kill.test.ts
sandbox/commands/list.test.ts sandbox/commands/run.test.ts sandbox/commands/sandboxKilledDuringRun.test.ts
sandbox/commands/sendStdin.test.ts
sandbox/files/contentEncoding.test.ts sandbox/files/exists.test.ts sandbox/files/info.test.ts
sandbox/files/list.test.ts sandbox/files/makeDir.test.ts sandbox/files/metadata.test.ts
sandbox/files/read.test.ts sandbox/files/remove.test.ts sandbox/files/rename.test.ts
sandbox/files/signing.test.ts sandbox/files/watch.test.ts sandbox/files/write.test.ts
sandbox/pty/kill.test.ts sandbox/pty/ptyConnect.test.ts sandbox/pty/ptyCreate.test.ts
sandbox/pty/resize.test.ts sandbox/pty/sendInput.test.ts
sandbox/git/add.test.ts sandbox/git/branches.test.ts sandbox/git/clone.test.ts sandbox/git/commit.test.ts
sandbox/git/config.test.ts sandbox/git/dangerouslyAuthenticate.test.ts sandbox/git/init.test.ts
sandbox/git/remote.test.ts sandbox/git/reset.test.ts sandbox/git/restore.test.ts sandbox/git/status.test.ts
sandbox/git/sync.test.ts
template/exists.test.ts
"
# Tests inside applicable files that need a hosted service (matched against
# vitest's full test name; docs/e2b-compat.md has the reasons).
excluded_tests=(
	'fork with count lower than 1 fails'               # a made-up API key: hutch answers 401 before it reads the body
	'get info of a directory$'                         # an empty directory's size: 0 on btrfs (the writable layers), 4096 on ext4
)
files=${ONLY:-$applicable}

cd "$here"
if [ ! -d node_modules/e2b ] || [ ! -d node_modules/vitest ]; then
	npm ci --no-audit --no-fund || { echo "conformance: npm ci failed"; exit 1; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hutch-conformance-XXXXXX")
daemon_pid=
dns_pid=
cgparent="hutch-conformance-$$"
cleanup() {
	if [ -n "$dns_pid" ]; then
		kill -TERM "$dns_pid" 2>/dev/null
		wait "$dns_pid" 2>/dev/null
	fi
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	# sandboxes outlive their daemon by design: kill what is left, then
	# remove the cgroups and the mounts under the temporary directory
	for g in /sys/fs/cgroup/*/"$cgparent"/* /sys/fs/cgroup/"$cgparent"/*; do
		[ -d "$g" ] || continue
		if [ -e "$g/cgroup.kill" ]; then echo 1 >"$g/cgroup.kill"; else
			for p in $(cat "$g/cgroup.procs"); do kill -9 "$p"; done
		fi
	done 2>/dev/null
	sleep 0.3
	for g in /sys/fs/cgroup/*/"$cgparent"/* /sys/fs/cgroup/"$cgparent"/*; do rmdir "$g"; done 2>/dev/null
	for g in /sys/fs/cgroup/*/"$cgparent" /sys/fs/cgroup/"$cgparent"; do rmdir "$g"; done 2>/dev/null
	grep -o " $work/[^ ]*" /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Copy the tests and point their imports of the SDK's sources at the package.
# Only the public entry point is rewritten: a file that imports an internal
# module is an offline unit test of that module and is not run.
cp -r "$tests" "$work/tests"
find "$work/tests" -name '*.ts' -print0 | xargs -0 sed -i -E \
	"s#(from|import\\() *'(\\.\\./)+src(/index(\\.js)?|/errors(\\.js)?|/sandbox/filesystem)?'#\\1 'e2b'#g"
ln -s "$here/node_modules" "$work/node_modules"
cat >"$work/vitest.config.mjs" <<'EOF'
import { defineConfig } from 'vitest/config'
export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    globals: false,
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    isolate: true,
  },
})
EOF

# The sandbox domain, its wildcard name and certificate, on a loopback address
# of this run's own (a free one: nothing listens on its port 443 or 53).
domain=e2b.hutch.test
addr=
for _ in $(seq 20); do
	cand="127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).1"
	ss -Hltun "( sport = :443 or sport = :53 )" 2>/dev/null | grep -qE "(^|[[:space:]])($cand|0\.0\.0\.0|\*|\[::\]):(443|53)[[:space:]]" ||
		{ addr=$cand; break; }
done
[ -n "$addr" ] || { echo "conformance: no free loopback address for port 443"; exit 1; }
tls="$work/tls"
mkdir -p "$tls"
if ! (
	cd "$tls" &&
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=hutch conformance test CA" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
			-keyout ca.key -out ca.pem &&
		openssl req -newkey rsa:2048 -nodes -subj "/CN=*.$domain" -keyout key.pem -out req.csr &&
		printf 'subjectAltName=DNS:*.%s,DNS:%s,IP:%s\nextendedKeyUsage=serverAuth\n' "$domain" "$domain" "$addr" >ext.cnf &&
		openssl x509 -req -in req.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out cert.pem
) >"$work/openssl.log" 2>&1; then
	echo "conformance: making the test certificate failed:"
	cat "$work/openssl.log"
	exit 1
fi
dnsmasq --keep-in-foreground --conf-file=/dev/null --pid-file= --user=root --bind-interfaces \
	--listen-address="$addr" --port=53 --no-resolv --no-hosts --address="/$domain/$addr" \
	--log-facility="$work/dnsmasq.log" &
dns_pid=$!
echo "nameserver $addr" >"$work/resolv.conf"

# A daemon on a private data dir, run dir, cgroup parent and that address.
port=443
mkdir -p "$work/data" "$work/run"
HUTCH_DATA_DIR="$work/data" HUTCH_RUN_DIR="$work/run" HUTCH_CGROUP_PARENT="$cgparent" \
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
	"$root/$build/hutch" serve --listen "$addr" --port "$port" --sandbox-domain "$domain" \
	--tls-cert "$tls/cert.pem" --tls-key "$tls/key.pem" --signed-url-scan true >"$work/daemon.log" 2>&1 &
daemon_pid=$!
key=
for _ in $(seq 200); do
	key=$(grep -oE '(e2b|hutch)_[0-9a-f]{16,}' "$work/daemon.log" | head -1)
	[ -n "$key" ] && grep -q 'listening on' "$work/daemon.log" && break
	kill -0 "$daemon_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$key" ]; then
	echo "conformance: hutch serve did not start:"
	cat "$work/daemon.log"
	exit 1
fi
kill -0 "$dns_pid" 2>/dev/null || { echo "conformance: dnsmasq did not start:"; cat "$work/dnsmasq.log"; exit 1; }

url="https://$addr"
pattern=$(IFS='|'; echo "${excluded_tests[*]}")
targets=
for f in $files; do targets="$targets tests/$f"; done
cd "$work"
# shellcheck disable=SC2086
out=$(E2B_API_KEY=$key E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_DOMAIN=$domain \
	NODE_EXTRA_CA_CERTS="$tls/ca.pem" unshare -m --propagation private \
	sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$work/resolv.conf" \
	node node_modules/vitest/vitest.mjs run --config vitest.config.mjs --reporter=verbose --no-color \
	--testNamePattern "^(?!.*($pattern)).*\$" $targets 2>&1)
rc=$?
echo "$out"
[ -n "${CONFORMANCE_DAEMON_LOG:-}" ] && cp "$work/daemon.log" "$CONFORMANCE_DAEMON_LOG"
pass=$(sed -n -E 's/^ *Tests +.*\b([0-9]+) passed.*/\1/p' <<<"$out" | tail -1)
fail=$(sed -n -E 's/^ *Tests +([0-9]+) failed.*/\1/p' <<<"$out" | tail -1)
skipped=$(sed -n -E 's/^ *Tests +.*\b([0-9]+) skipped.*/\1/p' <<<"$out" | tail -1)
pass=${pass:-0} fail=${fail:-0} skipped=${skipped:-0}
[ "$rc" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
mkdir -p "$root/tests/results"
echo "conformance[$build]: $pass passed, $fail failed, $skipped skipped" | tee "$root/tests/results/conformance.txt"
[ "$fail" -eq 0 ]
