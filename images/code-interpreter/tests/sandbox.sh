#!/bin/bash
# The code interpreter in a real sandbox: builds code-interpreter-v1 into a temporary data dir (the Debian tree
# comes from the cache dir, so only the first run downloads: docs/operations.md), starts the server inside a
# `hutch run` sandbox as `user`, and drives /execute with curl from inside it, since port 49999 is reachable
# from outside only through the daemon's ingress.
#
#   images/code-interpreter/tests/sandbox.sh [BUILD_DIR]     (as root; HUTCH_INTERP_CACHE=DIR for the cache)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=${1:-build}
cache=${HUTCH_INTERP_CACHE:-/var/cache/hutch-interpreter}
tmp=$(mktemp -d /var/tmp/hutch-interp-sbx.XXXXXX)
# hutch run unmounts the layers image at its end (no keeper lingering past the rm below)
export HUTCH_LAYERS_LINGER=0
trap 'rm -rf --one-file-system "$tmp"' EXIT
mkdir -p "$root/tests/results"

"$here/../build.sh" --data-dir "$tmp/data" --cache-dir "$cache" --hutch "$root/$build/hutch" || exit 1
# built from this recipe already: the next run is a no-op
again=$("$here/../build.sh" --data-dir "$tmp/data" --cache-dir "$cache" --hutch "$root/$build/hutch") || exit 1
grep -q "is up to date" <<<"$again" || { echo "not ok: a second build did not find the template up to date"; exit 1; }
# a changed recipe (a copy whose server differs by a comment) replaces the template, but not under a sandbox
cp -a "$here/.." "$tmp/recipe"
rm -rf "$tmp/recipe/tests"
echo "# changed" >>"$tmp/recipe/server/events.py"
HUTCH_DATA_DIR="$tmp/data" HUTCH_RUN_DIR="$tmp/run" "$root/$build/hutch" run --template code-interpreter-v1 -- sleep 30 &
user=$!
sleep 2
"$tmp/recipe/build.sh" --data-dir "$tmp/data" --cache-dir "$cache" --hutch "$root/$build/hutch"
rc=$?
kill "$user"
wait "$user"
[ "$rc" = 3 ] || { echo "not ok: a stale template in use was not kept (exit $rc, want 3)"; exit 1; }
"$tmp/recipe/build.sh" --data-dir "$tmp/data" --cache-dir "$cache" --hutch "$root/$build/hutch" || exit 1
grep -q '^# changed' "$tmp/data/templates/code-interpreter-v1/rootfs/usr/local/lib/hutch-interpreter/events.py" ||
	{ echo "not ok: the changed recipe was not built"; exit 1; }
echo "ok: rebuilt only when the recipe changed, and not under a sandbox"

inside=$(cat <<'SCRIPT'
python3 /usr/local/lib/hutch-interpreter/server.py --port 49999 >/tmp/server.log 2>&1 &
for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:49999/health && break; sleep 0.2; done
pass=0 fail=0
ex() { curl -sN -XPOST http://127.0.0.1:49999/execute -H 'Content-Type: application/json' -d "$1"; }
check() { # NAME BODY GREP-PATTERN
	if ex "$2" | grep -q -- "$3"; then pass=$((pass + 1)); echo "ok $1"; else fail=$((fail + 1)); echo "not ok $1"; fi
}
check user '{"code":"import getpass; getpass.getuser()"}' '"text": "user"'
check state-1 '{"code":"x = 41"}' end_of_execution
check state-2 '{"code":"x + 1"}' '"text": "42"'
check env '{"code":"import os; os.getenv(\"FOO\")","env_vars":{"FOO":"bar"}}' '"text": "bar"'
check env-once '{"code":"import os; os.getenv(\"FOO\", \"unset\")"}' '"text": "unset"'
check png '{"code":"import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"}' '"png": "iVBORw0KGgo'
check html '{"code":"import pandas as pd\npd.DataFrame({\"a\": [1]})"}' '"html": "<div>'
check office '{"code":"import openpyxl, docx, pypdf, PIL, scipy, numpy; wb = openpyxl.Workbook(); wb.save(\"/tmp/a.xlsx\"); d = docx.Document(); d.save(\"/tmp/a.docx\"); 1"}' '"text": "1"'
check javascript '{"code":"import { join } from \"path\"\nawait Promise.resolve(join(\"a\", \"b\"))","language":"js"}' '"text": "a/b"'
check typescript '{"code":"const n: number = 6; n * 7","language":"ts"}' '"text": "42"'
check bash '{"code":"echo $((6 * 7))","language":"bash"}' '"text": "42\\n"'
check r '{"code":"6 * 7","language":"r"}' '"text": "\[1\] 42"'
timeout 2 curl -sN -XPOST http://127.0.0.1:49999/execute -d '{"code":"import time; time.sleep(300)"}' >/dev/null
check after-interrupt '{"code":"x"}' '"text": "41"'
check oom '{"code":"big = b\"x\" * (3 * 1024**3)"}' DeadKernelError
check after-oom '{"code":"1 + 1"}' 'restarted'
check kernel-death '{"code":"import os, signal; os.kill(os.getpid(), signal.SIGKILL)"}' DeadKernelError
check state-lost '{"code":"1"}' 'restarted'
echo "inside: $pass passed, $fail failed"
SCRIPT
)
out=$(HUTCH_DATA_DIR="$tmp/data" HUTCH_RUN_DIR="$tmp/run" "$root/$build/hutch" run --template code-interpreter-v1 \
	--memory 1024M --timeout 120s -- bash -c "$inside" 2>&1)
echo "$out"
line=$(grep '^inside: ' <<<"$out" | tail -1)
pass=$(sed -n 's/.* \([0-9]\+\) passed.*/\1/p' <<<"$line")
fail=$(sed -n 's/.* \([0-9]\+\) failed.*/\1/p' <<<"$line")
[ -n "$line" ] || fail=1
echo "interpreter-sandbox[$build]: ${pass:-0} passed, ${fail:-0} failed" | tee "$root/tests/results/interpreter-sandbox.txt"
[ "${fail:-1}" -eq 0 ]
