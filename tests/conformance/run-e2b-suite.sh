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
# /etc/resolv.conf and every other process are untouched (lib.sh,
# conf_start_https_daemon and conf_with_resolver).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${E2B_REPO:-}}
build=${2:-${HUTCH_BUILD:-build}}

tag=conformance upstream=https://github.com/e2b-dev/E2B upstream_var=E2B_REPO
# shellcheck source=lib.sh
. "$here/lib.sh"

[ -n "$src" ] || conf_skip "no E2B checkout given"
tests=
for cand in "$src/packages/js-sdk/tests" "$src/tests" "$src"; do
	if [ -f "$cand/setup.ts" ] && [ -d "$cand/sandbox" ]; then
		tests=$(cd "$cand" && pwd)
		break
	fi
done
[ -n "$tests" ] || conf_skip "no packages/js-sdk/tests under '$src'"
conf_need_build openssl dnsmasq unshare

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

conf_npm_ci e2b
conf_workdir
# Copy the tests and point their imports of the SDK's sources at the package.
conf_js_tests "$tests" '/index(\.js)?|/errors(\.js)?|/sandbox/filesystem' e2b
# The daemon on an address of this run's own, with TLS and the sandbox domain
conf_start_https_daemon --signed-url-scan true || exit 1

targets=
for f in $files; do targets="$targets tests/$f"; done
cd "$work"
# shellcheck disable=SC2086
out=$(E2B_API_KEY=$key E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_DOMAIN=$domain \
	NODE_EXTRA_CA_CERTS="$tls/ca.pem" conf_with_resolver \
	node node_modules/vitest/vitest.mjs run --config vitest.config.mjs --reporter=verbose --no-color \
	--testNamePattern "$(conf_vitest_filter "${excluded_tests[@]}")" $targets 2>&1)
conf_report vitest "$out" $?
