#!/bin/bash
# Runs the Python test suite of E2B's code interpreter (python/tests of the public e2b-dev/code-interpreter
# repository, pytest) against a real `hutch serve` that provisions code-interpreter-v1 itself, with the
# published e2b-code-interpreter package pinned with hashes in tests/e2e-py/requirements.lock as the client
# (tests/e2e-py/setup-venv.sh makes the venv).
#
#   tests/conformance/run-e2b-ci-py-suite.sh [CHECKOUT] [BUILD]
#
# CHECKOUT: a checkout of e2b-dev/code-interpreter, or its python/ (default: $E2B_CI_REPO). Without one the
# run is skipped (exit 0) with a message. BUILD: build or build-san (default: $HUTCH_BUILD, else build).
# ONLY="sync/test_basic.py ..." runs a subset of the applicable files.
#
# The tests are copied to a temporary directory with a pytest.ini of ours (their markers and asyncio
# settings, without the pytest-xdist option the venv has no package for); nothing of them is kept in this
# repository. The applicable files are listed below; the rest and the tests excluded by name are in
# docs/e2b-compat.md with their reason. Prints `N passed, N failed, N skipped`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${E2B_CI_REPO:-}}
build=${2:-${HUTCH_BUILD:-build}}
tag=conformance-ci-py upstream=https://github.com/e2b-dev/code-interpreter upstream_var=E2B_CI_REPO
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=interp-daemon.sh
. "$here/interp-daemon.sh"

[ -n "$src" ] || conf_skip "no code-interpreter checkout given"
tests=
for cand in "$src/python/tests" "$src/tests"; do
	if [ -f "$cand/conftest.py" ] && [ -d "$cand/sync" ] && [ -d "$cand/async" ]; then
		tests=$(cd "$cand" && pwd)
		break
	fi
done
[ -n "$tests" ] || conf_skip "no python/tests under '$src'"
conf_need_build
conf_venv

# Every file that drives a sandbox, in sync/ and async/ alike (and charts/, async only), less those of features
# hutch's interpreter does not have (docs/e2b-compat.md): env_vars/test_java.py (no Java kernel);
# test_sandbox_url.py and test_execute_timeout.py are offline tests of the SDK's URL and transport settings.
common="
bash basic callbacks contexts custom_repr_object cwd data default_kernels display_data execution_count interrupt
kernels killed reconnect statefulness streaming systemd
"
applicable=
for f in $common; do applicable="$applicable sync/test_$f.py async/test_async_$f.py"; done
for f in bash js python r; do applicable="$applicable sync/env_vars/test_$f.py async/env_vars/test_$f.py"; done
applicable="$applicable images/test_images.py"
for f in bar box_and_whiskers json line log_chart pie scale scatter superchart unknown; do
	applicable="$applicable charts/test_$f.py"
done
# Tests inside applicable files that are not run, by name (pytest -k); reasons in docs/e2b-compat.md.
excluded=(
	# no Java kernel (-k matches substrings: not test_cwd_javascript)
	'(test_cwd_java and not test_cwd_javascript)' test_java_kernel
)
files=${ONLY:-$applicable}

conf_workdir
mkdir -p "$work/sdk"
cp -r "$tests" "$work/sdk/tests"
cat >"$work/sdk/pytest.ini" <<'INI'
[pytest]
markers =
    skip_debug: skip test if E2B_DEBUG is set.
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
addopts = --import-mode=importlib
INI

start_interp_daemon || exit 1
targets=$(conf_pytest_targets $files)
cd "$work/sdk"
# shellcheck disable=SC2086
out=$(E2B_API_KEY=$key E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_DOMAIN=127.0.0.1 \
	timeout 1800 "$py" -m pytest -p no:cacheprovider -q -rfEs --timeout 120 \
	-k "$(conf_pytest_filter "${excluded[@]}")" $targets 2>&1)
conf_report pytest "$out" $?
