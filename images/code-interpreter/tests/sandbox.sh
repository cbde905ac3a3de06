#!/bin/bash
# The code interpreter in a real sandbox: builds code-interpreter-v1 into a temporary data dir (the Debian tree
# comes from the cache dir, so only the first run downloads: docs/operations.md), starts the server inside a
# `hutch run` sandbox as `user`, and drives /execute with curl from inside it, since port 49999 is reachable
# from outside only through the daemon's ingress.
#
# Then `hutch serve` with provisioning on over the same data dir: it finds the template of the changed recipe
# (above), replaces it from this recipe (build.sh --daemon, the cached tree), keeps a warm pool of it, and the
# unmodified @e2b/code-interpreter SDK checks that a pooled create's envs reach the kernels started before it
# (sdk/pool.test.mjs); a restart of the daemon then finds the template up to date.
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
cgparent=hutch-interp-sbx-$$
# shellcheck source=../../../tests/remove-leftovers.sh
. "$root/tests/remove-leftovers.sh"
daemon=
cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	remove_leftovers "$cgparent" "$tmp"
}
trap cleanup EXIT
mkdir -p "$root/tests/results"

"$here/../build.sh" --data-dir "$tmp/data" --cache-dir "$cache" --hutch "$root/$build/hutch" || exit 1
# built from this recipe already: the next run is a no-op
again=$("$here/../build.sh" --data-dir "$tmp/data" --cache-dir "$cache" --hutch "$root/$build/hutch") || exit 1
grep -q "is up to date" <<<"$again" || { echo "not ok: a second build did not find the template up to date"; exit 1; }
# a changed recipe (a copy whose server differs by a comment) replaces the template, but not under a sandbox
cp -a "$here/.." "$tmp/recipe"
rm -rf "$tmp/recipe/tests"
echo "# changed" >>"$tmp/recipe/server/events.py"
HUTCH_DATA_DIR="$tmp/data" HUTCH_RUN_DIR="$tmp/run" "$root/$build/hutch" run --template code-interpreter-v1 -- sleep 600 &
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
[ -n "$line" ] || pass=0
pass=${pass:-0} fail=${fail:-1}

# the daemon provisions the template itself and pools it
start_daemon() {
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	HUTCH_DATA_DIR="$tmp/data" HUTCH_RUN_DIR="$tmp/run" HUTCH_CGROUP_PARENT="$cgparent" HUTCH_INTERPRETER_PROVISION=1 \
		"$root/$build/hutch" serve --listen 127.0.0.1 --port "$port" --pool-size 0 --config "$tmp/hutch.conf" \
		--interpreter-cache-dir "$cache" >>"$tmp/daemon.log" 2>&1 &
	daemon=$!
}
wait_log() { # PATTERN SECONDS
	for _ in $(seq $(($2 * 5))); do grep -q "$1" "$tmp/daemon.log" && return 0; sleep 0.2; done
	echo "not ok: no '$1' in the daemon's log within $2 s"; tail -20 "$tmp/daemon.log"; return 1
}
echo 'pool.size.code-interpreter-v1 = 1' >"$tmp/hutch.conf"
start_daemon
if wait_log 'listening on' 30 && wait_log 'template code-interpreter-v1: built in' 300; then
	grep -q 'the old template is moved aside' "$tmp/daemon.log" && pass=$((pass + 1)) ||
		{ fail=$((fail + 1)); echo "not ok: the changed recipe's template was not replaced"; }
	key=$(grep -oE 'e2b_[0-9a-f]{40}' "$tmp/daemon.log" | head -1)
	(cd "$here/sdk" && { [ -d node_modules/@e2b/code-interpreter ] || npm ci --no-audit --no-fund >/dev/null; } &&
		E2B_API_KEY=$key E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port \
		timeout 600 node --test --test-reporter=tap pool.test.mjs) >"$tmp/pool.out" 2>&1
	cat "$tmp/pool.out"
	p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tmp/pool.out" | tail -1)
	x=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tmp/pool.out" | tail -1)
	[ -z "$p" ] && x=1
	pass=$((pass + ${p:-0})) fail=$((fail + ${x:-0}))
	kill "$daemon"; wait "$daemon"; daemon=
	start_daemon
	if wait_log 'template code-interpreter-v1: up to date' 60; then
		pass=$((pass + 1)); echo "ok: a restarted daemon found the template up to date"
	else
		fail=$((fail + 1))
	fi
else
	fail=$((fail + 1))
fi
echo "interpreter-sandbox[$build]: $pass passed, $fail failed" | tee "$root/tests/results/interpreter-sandbox.txt"
[ "$fail" -eq 0 ]
