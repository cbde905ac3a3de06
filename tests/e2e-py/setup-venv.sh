#!/bin/bash
# Creates tests/e2e-py/.venv with exactly what requirements.lock pins
# (hashes checked, no dependency resolution), unless it is already there and
# matches the lock. Called by .ci/run, `make deps` and run.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
stamp="$venv/.lock.sha256"
want=$(sha256sum "$here/requirements.lock" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
	exit 0
fi
rm -rf "$venv"
# the system's python3 (Debian's python3-venv), never a python found elsewhere
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input \
	--require-hashes --no-deps --only-binary=:all: -r "$here/requirements.lock"
"$venv/bin/pip" check
echo "$want" >"$stamp"
