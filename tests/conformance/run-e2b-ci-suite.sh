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
src=${1:-${E2B_CI_REPO:-}}
build=${2:-${HUTCH_BUILD:-build}}
tag=conformance-ci upstream=https://github.com/e2b-dev/code-interpreter upstream_var=E2B_CI_REPO
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=interp-daemon.sh
. "$here/interp-daemon.sh"

[ -n "$src" ] || conf_skip "no code-interpreter checkout given"
tests=
for cand in "$src/js/tests" "$src/tests"; do
	if [ -f "$cand/setup.ts" ] && [ -f "$cand/statefulness.test.ts" ]; then
		tests=$(cd "$cand" && pwd)
		break
	fi
done
[ -n "$tests" ] || conf_skip "no js/tests under '$src'"
conf_need_build

# Every file that drives a sandbox, less those of features hutch's interpreter does not have
# (docs/e2b-compat.md): env_vars/java.test.ts (no Java kernel), runtimes/ (Bun and Deno as the client),
# sandboxUrl.test.ts (offline: the SDK's URL logic).
applicable="
bash.test.ts basic.test.ts callbacks.test.ts contexts.test.ts cwd.test.ts data.test.ts defaultKernels.test.ts
displayData.test.ts executionCount.test.ts interrupt.test.ts kernels.test.ts killedSandbox.test.ts
reconnect.test.ts statefulness.test.ts streaming.test.ts systemd.test.ts
env_vars/bash.test.ts env_vars/js.test.ts env_vars/python.test.ts env_vars/r.test.ts
images/bar.test.ts
charts/bar.test.ts charts/boxAndWhisker.test.ts charts/line.test.ts charts/log.test.ts charts/pie.test.ts
charts/scales.test.ts charts/scatter.test.ts charts/superchart.test.ts charts/unknown.test.ts
"
# Tests inside applicable files that are not run (vitest's full test name; reasons in docs/e2b-compat.md).
excluded_tests=(
	'cwd java$' # no Java kernel ($: not 'cwd javascript')
)
files=${ONLY:-$applicable}

conf_npm_ci @e2b/code-interpreter
conf_workdir
conf_js_tests "$tests" '/index(\.js)?' @e2b/code-interpreter

start_interp_daemon || exit 1
targets=
for f in $files; do targets="$targets tests/$f"; done
cd "$work"
# shellcheck disable=SC2086
out=$(E2B_API_KEY=$key E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_DOMAIN=127.0.0.1 \
	timeout 1800 node node_modules/vitest/vitest.mjs run --config vitest.config.mjs --reporter=verbose --no-color \
	--testNamePattern "$(conf_vitest_filter "${excluded_tests[@]}")" $targets 2>&1)
conf_report vitest "$out" $?
