#!/bin/bash
# Runs every cmocka unit test binary of a build tree (build or build-san).
# Each binary prints cmocka's own summary; the totals go to tests/results/.
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
mkdir -p tests/results
pass=0 fail=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# the store's tests run against PostgreSQL too, on a server of their own
# (tests/pg.sh), unless HUTCH_TEST_PG names one already
if [ -z "${HUTCH_TEST_PG:-}" ]; then
	if out=$(tests/pg.sh start); then
		eval "$out"
		export HUTCH_TEST_PG
		trap 'tests/pg.sh stop "$HUTCH_TEST_PG_DIR"' EXIT
	else
		echo "unit: no PostgreSQL test server; the store's PostgreSQL tests are skipped"
	fi
fi
for t in $(find "$build/tests/unit" -type f -perm -u+x | sort); do
	echo "== $t"
	if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $t"; fi
done
echo "unit[$build]: $pass passed, $fail failed" | tee "tests/results/unit-$build.txt"
[ "$fail" -eq 0 ]
