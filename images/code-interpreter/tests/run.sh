#!/bin/bash
# The code interpreter server's tests against real kernels on this host, with Debian's python3 (whose
# ipykernel, pandas and matplotlib scripts/install-deps.sh installs): test_server.py, then the unmodified
# @e2b/code-interpreter SDK against the server (sdk/sdk.test.mjs), then the unmodified e2b-code-interpreter
# (sdk_py/test_sdk_py.py, in a venv made from sdk_py/requirements.txt). The total goes to tests/results/ for
# tests/summary.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$root/tests/results"
out=$(cd "$here" && timeout 600 /usr/bin/python3 -m pytest -q -p no:cacheprovider test_server.py 2>&1)
rc=$?
echo "$out"
line=$(tail -n1 <<<"$out")
pass=$(sed -n 's/.*\b\([0-9]\+\) passed.*/\1/p' <<<"$line")
fail=$(sed -n 's/.*\b\([0-9]\+\) failed.*/\1/p' <<<"$line")
err=$(sed -n 's/.*\b\([0-9]\+\) error.*/\1/p' <<<"$line")
skip=$(sed -n 's/.*\b\([0-9]\+\) skipped.*/\1/p' <<<"$line")
pass=${pass:-0} fail=$((${fail:-0} + ${err:-0})) skip=${skip:-0}
[ "$rc" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1

# the unmodified @e2b/code-interpreter SDK, as pinned by sdk/package-lock.json
if [ ! -d "$here/sdk/node_modules/@e2b/code-interpreter" ]; then
	(cd "$here/sdk" && npm ci --no-audit --no-fund) || { echo "interpreter: npm ci failed"; fail=$((fail + 1)); }
fi
out=$(cd "$here/sdk" && timeout 600 node --test --test-reporter=tap sdk.test.mjs 2>&1)
rc=$?
echo "$out"
p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' <<<"$out" | tail -1)
x=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' <<<"$out" | tail -1)
[ "$rc" -ne 0 ] && [ "${x:-0}" -eq 0 ] && x=1
pass=$((pass + ${p:-0})) fail=$((fail + ${x:-0}))

# the unmodified e2b-code-interpreter SDK, as pinned with hashes by sdk_py/requirements.txt, in a venv of its own
venv=$here/sdk_py/.venv
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/sdk_py/requirements.txt" "$venv/requirements.txt"; then
	rm -rf "$venv"
	{ /usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q --require-hashes -r "$here/sdk_py/requirements.txt" &&
		cp "$here/sdk_py/requirements.txt" "$venv/requirements.txt"; } || { echo "interpreter: pip install failed"; fail=$((fail + 1)); }
fi
out=$(cd "$here/sdk_py" && timeout 600 "$venv/bin/python" -m unittest -v test_sdk_py 2>&1)
rc=$?
echo "$out"
ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} .*/\1/p' <<<"$out")
bad=$(grep -cE '\.\.\. (FAIL|ERROR)$' <<<"$out")
[ "$rc" -ne 0 ] && [ "$bad" -eq 0 ] && bad=1
pass=$((pass + ${ran:-0} - $(grep -cE '\.\.\. (FAIL|ERROR)$' <<<"$out"))) fail=$((fail + bad))
echo "interpreter: $pass passed, $fail failed, $skip skipped" | tee "$root/tests/results/interpreter.txt"
[ "$fail" -eq 0 ]
