#!/bin/bash
# Python end-to-end tests: the unmodified e2b and e2b-code-interpreter
# packages (pinned with hashes in requirements.lock) against a real
# `hutch serve` started by conftest.py, with pytest.
# Usage: tests/e2e-py/run.sh [BUILD]   (E2E_PY_FILES to pick test files)
set -u
# the suites build their own templates: no daemon of theirs provisions the code interpreter's (provision.h)
export HUTCH_INTERPRETER_PROVISION=${HUTCH_INTERPRETER_PROVISION:-0}
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$root/tests/results"
result="$root/tests/results/e2e-py-$build.txt"
"$here/setup-venv.sh" || { echo "e2e-py[$build]: 0 passed, 1 failed, 0 skipped (venv)" | tee "$result"; exit 1; }
cd "$here"
files=${E2E_PY_FILES:-$(ls test_*.py)}
out=$(HUTCH_BUILD=$build timeout 600 .venv/bin/python -m pytest -q -rs $files 2>&1)
rc=$?
echo "$out"
# pytest's closing line: "N passed, N failed, N skipped, N errors in Xs"
last=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|error)' <<<"$out" | tail -1)
num() { grep -oE "[0-9]+ $1" <<<"$last" | grep -oE '^[0-9]+' || echo 0; }
pass=$(num passed) fail=$(num failed) skip=$(num skipped) errs=$(num 'errors?')
fail=$((fail + errs))
[ "$rc" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
echo "e2e-py[$build]: $pass passed, $fail failed, $skip skipped" | tee "$result"
[ "$fail" -eq 0 ]
