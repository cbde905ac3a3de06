#!/bin/bash
# Runs every tests/integration/test_*.sh against a build tree and writes the
# total to tests/results/integration-<build>.txt.
set -u
# the suites build their own templates: no daemon of theirs provisions the code interpreter's (provision.h)
export HUTCH_INTERPRETER_PROVISION=${HUTCH_INTERPRETER_PROVISION:-0}
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
mkdir -p tests/results
pass=0 fail=0
for t in "$here"/test_*.sh; do
	[ -n "${ONLY:-}" ] && [[ "$(basename "$t")" != *"$ONLY"* ]] && continue
	echo "== $(basename "$t")"
	out=$(BUILD=$build bash "$t" "$build" 2>&1)
	rc=$?
	echo "$out"
	p=$(grep -c '^ok - ' <<<"$out")
	f=$(grep -c '^not ok - ' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $(basename "$t") exited $rc"
	fi
	pass=$((pass + p)); fail=$((fail + f))
done
echo "integration[$build]: $pass passed, $fail failed" | tee "tests/results/integration-$build.txt"
[ "$fail" -eq 0 ]
