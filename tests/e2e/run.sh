#!/bin/bash
# End-to-end tests: the unmodified e2b SDK (pinned in package-lock.json)
# against a real `hutch serve` started by each test file (harness.mjs).
set -u
# the suites build their own templates: no daemon of theirs provisions the code interpreter's (provision.h)
export HUTCH_INTERPRETER_PROVISION=${HUTCH_INTERPRETER_PROVISION:-0}
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"
mkdir -p "$root/tests/results"
if [ ! -d node_modules/e2b ]; then
	npm ci --no-audit --no-fund || { echo "e2e: npm ci failed"; exit 1; }
fi
# the session-gateway example is run by gateway.test.mjs with its own lockfile
if [ ! -d "$root/examples/session-gateway/node_modules/e2b" ]; then
	(cd "$root/examples/session-gateway" && npm ci --no-audit --no-fund) || { echo "e2e: npm ci (example) failed"; exit 1; }
fi
files=${E2E_FILES:-$(ls ./*.test.mjs)}
# E2E_STORE=postgresql: the daemons keep their store in PostgreSQL, on a
# server of this run's own (tests/pg.sh), stopped and removed at exit
tag=$build
if [ "${E2E_STORE:-}" = postgresql ]; then
	tag=$build-postgresql
	# E2E_VIA_NODE=1: every call through a second node (harness.mjs)
	[ "${E2E_VIA_NODE:-}" = 1 ] && tag=$tag-via-node
	out=$("$root/tests/pg.sh" start) || { echo "e2e: cannot start the PostgreSQL test server"; exit 1; }
	eval "$out"
	export E2E_STORE HUTCH_TEST_PG_DIR
	[ -n "${E2E_VIA_NODE:-}" ] && export E2E_VIA_NODE
	trap '"$root/tests/pg.sh" stop "$HUTCH_TEST_PG_DIR"' EXIT
fi
# the idle-connection test opens 10,000 sockets from node
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# the daemons each file starts, for the sweep after it (sweep.mjs)
E2E_LEDGER=$(mktemp /tmp/hutch-e2e-ledger.XXXXXX)
export E2E_LEDGER
out=$(HUTCH_BUILD=$build node --test --test-concurrency=1 --test-timeout=180000 --test-reporter=tap $files 2>&1)
rc=$?
echo "$out"
node sweep.mjs "$E2E_LEDGER"
rm -f "$E2E_LEDGER"
pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' <<<"$out" | tail -1)
fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' <<<"$out" | tail -1)
skip=$(sed -n 's/^# skipped \([0-9]*\)$/\1/p' <<<"$out" | tail -1)
pass=${pass:-0} fail=${fail:-0} skip=${skip:-0}
[ "$rc" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
echo "e2e[$tag]: $pass passed, $fail failed, $skip skipped" | tee "$root/tests/results/e2e-$tag.txt"
[ "$fail" -eq 0 ]
