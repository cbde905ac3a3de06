#!/bin/bash
# Runs the JS test suite of E2B's code interpreter (js/tests of the public e2b-dev/code-interpreter
# repository, vitest) against a real `hutch serve` that provisions code-interpreter-v1 itself, with the
# published @e2b/code-interpreter package pinned in package-lock.json as the client.
#
#   tests/conformance/run-e2b-ci-suite.sh [CHECKOUT] [BUILD]
#
# CHECKOUT: a checkout of e2b-dev/code-interpreter, or its js/ (default: $E2B_CI_REPO). Without one the run
# is skipped (exit 0) with a message: CI has no access to GitHub. BUILD: build or build-san (default:
# $HUTCH_BUILD, else build). ONLY="basic.test.ts ..." runs a subset of the applicable files. The Debian tree
# of the template is cached in $HUTCH_INTERP_CACHE (interp-daemon.sh).
#
# The test files are copied to a temporary directory, their imports of the SDK's sources (`../src`,
# `../../src`) rewritten to the package, and run there; nothing of them is kept in this repository. The
# files that apply are listed below; every other file and the tests excluded by name are in
# docs/e2b-compat.md with their reason. Prints `N passed, N failed, N skipped` (skipped: excluded by name).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src=${1:-${E2B_CI_REPO:-}}
build=${2:-${HUTCH_BUILD:-build}}
tag=conformance-ci
result="$root/tests/results/conformance-ci.txt"

skip() {
	echo "$tag: skipped: $1"
	echo "$tag: to run it, fetch https://github.com/e2b-dev/code-interpreter and pass its path (or set E2B_CI_REPO)"
	mkdir -p "$root/tests/results"
	echo "$tag: skipped, $1" >"$result"
	exit 0
}

[ -n "$src" ] || skip "no code-interpreter checkout given"
tests=
for cand in "$src/js/tests" "$src/tests"; do
	if [ -f "$cand/setup.ts" ] && [ -f "$cand/statefulness.test.ts" ]; then
		tests=$(cd "$cand" && pwd)
		break
	fi
done
[ -n "$tests" ] || skip "no js/tests under '$src'"
[ -x "$root/$build/hutch" ] || { echo "$tag: $root/$build/hutch is missing: run make first"; exit 1; }

# Every file that drives a sandbox, less those of features hutch's interpreter does not have
# (docs/e2b-compat.md): charts/ (chart data extracted from matplotlib figures), env_vars/java.test.ts (no Java
# kernel), runtimes/ (Bun and Deno as the client), sandboxUrl.test.ts (offline: the SDK's URL logic).
applicable="
bash.test.ts basic.test.ts callbacks.test.ts contexts.test.ts cwd.test.ts data.test.ts defaultKernels.test.ts
displayData.test.ts executionCount.test.ts interrupt.test.ts kernels.test.ts killedSandbox.test.ts
reconnect.test.ts statefulness.test.ts streaming.test.ts systemd.test.ts
env_vars/bash.test.ts env_vars/js.test.ts env_vars/python.test.ts env_vars/r.test.ts
images/bar.test.ts
"
# Tests inside applicable files that are not run (vitest's full test name; reasons in docs/e2b-compat.md).
excluded_tests=(
	'cwd java$' # no Java kernel ($: not 'cwd javascript')
	# a kill mid-stream: the ingress answers each proxied request with Connection: close, and Node's fetch
	# (undici) then reads the end of a cut stream as the end of the response
	'runCode throws a descriptive error when the sandbox is killed during execution'
)
files=${ONLY:-$applicable}

cd "$here"
if [ ! -d node_modules/@e2b/code-interpreter ] || [ ! -d node_modules/vitest ]; then
	npm ci --no-audit --no-fund || { echo "$tag: npm ci failed"; exit 1; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hutch-conformance-ci-XXXXXX")
# shellcheck source=interp-daemon.sh
. "$here/interp-daemon.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

cp -r "$tests" "$work/tests"
find "$work/tests" -name '*.ts' -print0 | xargs -0 sed -i -E \
	"s#(from|import\\() *'(\\.\\./)+src(/index(\\.js)?)?'#\\1 '@e2b/code-interpreter'#g"
ln -s "$here/node_modules" "$work/node_modules"
cat >"$work/vitest.config.mjs" <<'CONF'
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
CONF

start_interp_daemon || exit 1
pattern=$(IFS='|'; echo "${excluded_tests[*]}")
targets=
for f in $files; do targets="$targets tests/$f"; done
cd "$work"
# shellcheck disable=SC2086
out=$(E2B_API_KEY=$key E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_DOMAIN=127.0.0.1 \
	timeout 1800 node node_modules/vitest/vitest.mjs run --config vitest.config.mjs --reporter=verbose --no-color \
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
echo "$tag[$build]: $pass passed, $fail failed, $skipped skipped" | tee "$result"
[ "$fail" -eq 0 ]
