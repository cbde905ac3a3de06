# Sourced by every conformance script (run-e2b-suite.sh, run-e2b-py-suite.sh, run-e2b-ci-suite.sh,
# run-e2b-ci-py-suite.sh; interp-daemon.sh builds on it): what they all do the same way. A run's daemon has a
# data dir, run dir, cgroup parent and address of its own, so runs beside other tests (or each other) do not
# collide; cleanup removes all of it, on failure too.
#
# Needs, before sourcing: $here (this directory), $build (build or build-san), $tag (the prefix of messages and
# the name of the results file, tests/results/$tag.txt), $upstream (the URL of the repository whose tests run)
# and $upstream_var (the variable naming its checkout). Sets root (this repository).
root=$(cd "$here/../.." && pwd)
result="$root/tests/results/$tag.txt"
# the suites build their own templates: a daemon of theirs provisions the code interpreter's (provision.h) only
# where interp-daemon.sh asks for it
export HUTCH_INTERPRETER_PROVISION=${HUTCH_INTERPRETER_PROVISION:-0}
work=
daemon_pid=
dns_pid=
cgparent="hutch-$tag-$$"
# shellcheck source=../remove-leftovers.sh
. "$here/../remove-leftovers.sh"

# conf_skip REASON: no checkout to run; CI has no access to GitHub, so this is not a failure
conf_skip() {
	echo "$tag: skipped: $1"
	echo "$tag: to run it, fetch $upstream and pass its path (or set $upstream_var)"
	mkdir -p "$root/tests/results"
	echo "$tag: skipped, $1" >"$result"
	exit 0
}

# conf_need_build TOOL...: the daemon is built and the tools are installed, or exit 1
conf_need_build() {
	[ -x "$root/$build/hutch" ] || { echo "$tag: $root/$build/hutch is missing: run make first"; exit 1; }
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 ||
			{ echo "$tag: $tool is missing (scripts/install-deps.sh installs it)"; exit 1; }
	done
}

# conf_npm_ci PACKAGE: the pinned client (package-lock.json) and vitest in node_modules/; leaves the shell in $here
conf_npm_ci() {
	cd "$here" || exit 1
	if [ ! -d "node_modules/$1" ] || [ ! -d node_modules/vitest ]; then
		npm ci --no-audit --no-fund || { echo "$tag: npm ci failed"; exit 1; }
	fi
}

# conf_venv: the pinned Python client (tests/e2e-py/requirements.lock) in its venv; sets py
conf_venv() {
	"$root/tests/e2e-py/setup-venv.sh" || { echo "$tag: the venv could not be made"; exit 1; }
	py="$root/tests/e2e-py/.venv/bin/python"
}

cleanup() {
	if [ -n "$dns_pid" ]; then
		kill -TERM "$dns_pid" 2>/dev/null
		wait "$dns_pid" 2>/dev/null
	fi
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	remove_leftovers "$cgparent" "$work"
}

# conf_workdir: the run's temporary directory (sets work), removed with everything else on exit
conf_workdir() {
	work=$(mktemp -d "${TMPDIR:-/tmp}/hutch-$tag-XXXXXX")
	trap cleanup EXIT
	trap 'exit 130' INT TERM
}

conf_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# conf_start_daemon ADDRESS PORT [ARG...]: `hutch serve` on the run's own data dir, run dir and cgroup parent,
# with ARGs added, logging to $work/daemon.log; sets daemon_pid and key (the API key it printed). Returns 1 with
# the log shown when it does not come up.
conf_start_daemon() {
	local listen=$1 port=$2
	shift 2
	mkdir -p "$work/data" "$work/run"
	HUTCH_DATA_DIR="$work/data" HUTCH_RUN_DIR="$work/run" HUTCH_CGROUP_PARENT="$cgparent" \
		ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
		"$root/$build/hutch" serve --listen "$listen" --port "$port" "$@" >"$work/daemon.log" 2>&1 &
	daemon_pid=$!
	key=
	for _ in $(seq 200); do
		key=$(grep -oE '(e2b|hutch)_[0-9a-f]{16,}' "$work/daemon.log" | head -1)
		[ -n "$key" ] && grep -q 'listening on' "$work/daemon.log" && break
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$key" ] || { echo "$tag: hutch serve did not start:"; cat "$work/daemon.log"; return 1; }
}

# conf_start_https_daemon [ARG...]: the daemon as E2B's SDKs reach a sandbox's ports, at
# https://<port>-<id>.<domain> (getHost / get_host), set up for this run only (docs/e2b-compat.md, "HTTPS and
# the sandbox domain"): a free loopback address of its own (127.a.b.1: nothing listens on its ports 443 or 53)
# where the daemon listens with TLS on port 443 and --sandbox-domain; a throwaway CA and a wildcard certificate
# for the domain and the address (openssl); and dnsmasq on the address answering every name under the domain
# with it. The clients run under conf_with_resolver and trust $tls/ca.pem (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE).
# Sets domain, addr, tls, url, dns_pid and what conf_start_daemon sets; returns 1 when something does not come up.
conf_start_https_daemon() {
	local cand
	domain=e2b.hutch.test
	addr=
	for _ in $(seq 20); do
		cand="127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).1"
		ss -Hltun "( sport = :443 or sport = :53 )" 2>/dev/null |
			grep -qE "(^|[[:space:]])($cand|0\.0\.0\.0|\*|\[::\]):(443|53)[[:space:]]" ||
			{ addr=$cand; break; }
	done
	[ -n "$addr" ] || { echo "$tag: no free loopback address for port 443"; return 1; }
	tls="$work/tls"
	mkdir -p "$tls"
	if ! (
		cd "$tls" &&
			openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=hutch conformance test CA" \
				-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
				-keyout ca.key -out ca.pem &&
			openssl req -newkey rsa:2048 -nodes -subj "/CN=*.$domain" -keyout key.pem -out req.csr &&
			printf 'subjectAltName=DNS:*.%s,DNS:%s,IP:%s\nextendedKeyUsage=serverAuth\n' "$domain" "$domain" "$addr" >ext.cnf &&
			openssl x509 -req -in req.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out cert.pem
	) >"$work/openssl.log" 2>&1; then
		echo "$tag: making the test certificate failed:"
		cat "$work/openssl.log"
		return 1
	fi
	dnsmasq --keep-in-foreground --conf-file=/dev/null --pid-file= --user=root --bind-interfaces \
		--listen-address="$addr" --port=53 --no-resolv --no-hosts --address="/$domain/$addr" \
		--log-facility="$work/dnsmasq.log" &
	dns_pid=$!
	echo "nameserver $addr" >"$work/resolv.conf"
	conf_start_daemon "$addr" 443 --sandbox-domain "$domain" --tls-cert "$tls/cert.pem" --tls-key "$tls/key.pem" "$@" ||
		return 1
	kill -0 "$dns_pid" 2>/dev/null || { echo "$tag: dnsmasq did not start:"; cat "$work/dnsmasq.log"; return 1; }
	url="https://$addr"
}

# conf_with_resolver COMMAND [ARG...]: runs it in a private mount namespace where /etc/resolv.conf names the
# run's dnsmasq (bind-mounted; the mount goes with the namespace): the host's resolver, its /etc/resolv.conf and
# every other process are untouched
conf_with_resolver() {
	unshare -m --propagation private sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$work/resolv.conf" "$@"
}

# conf_js_tests TESTS SOURCES PACKAGE: copies a JS SDK's tests to $work/tests with their relative imports of
# the SDK's sources (`../src`, `../../src` followed by one of SOURCES, an alternation) rewritten to the
# published PACKAGE, and writes the vitest config that runs them one file after the other. Only the public
# entry points are rewritten: a file that imports an internal module is an offline unit test of that module.
conf_js_tests() {
	cp -r "$1" "$work/tests"
	find "$work/tests" -name '*.ts' -print0 | xargs -0 sed -i -E \
		"s#(from|import\\() *'(\\.\\./)+src($2)?'#\\1 '$3'#g"
	ln -s "$here/node_modules" "$work/node_modules"
	cat >"$work/vitest.config.mjs" <<'EOF'
import { defineConfig } from 'vitest/config'
export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    globals: false,
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    isolate: true,
  },
})
EOF
}

# conf_vitest_filter NAME...: vitest's --testNamePattern that runs every test but those whose full name matches
# one of the NAMEs (regular expressions)
conf_vitest_filter() {
	local IFS='|'
	echo "^(?!.*($*)).*\$"
}

# conf_pytest_filter NAME...: pytest's -k expression that deselects those tests
conf_pytest_filter() {
	local expr
	expr=$(printf ' or %s' "$@")
	echo "not (${expr# or })"
}

# conf_pytest_targets FILE...: those of the files (or FILE::TEST node ids) that the copy in $work/sdk has
conf_pytest_targets() {
	local f targets=
	for f in "$@"; do [ -f "$work/sdk/tests/${f%%::*}" ] && targets="$targets tests/$f"; done
	echo "$targets"
}

# conf_count WORD: the number before WORD in pytest's summary line ($last), 0 without one
conf_count() {
	grep -oE "[0-9]+ $1" <<<"$last" | grep -oE '^[0-9]+' || echo 0
}

# conf_report KIND OUTPUT RC: prints OUTPUT (vitest's or pytest's, KIND), keeps the daemon's log in
# $CONFORMANCE_DAEMON_LOG if set, and prints and writes to $result the last line, "$tag[$build]: N passed,
# N failed, N skipped" (pytest's deselected count as skipped: they are the tests excluded by name). Returns 1
# when something failed, also when the runner failed without saying what.
conf_report() {
	local kind=$1 out=$2 rc=$3 pass fail skipped last errs desel
	echo "$out"
	[ -n "${CONFORMANCE_DAEMON_LOG:-}" ] && cp "$work/daemon.log" "$CONFORMANCE_DAEMON_LOG"
	if [ "$kind" = vitest ]; then
		pass=$(sed -n -E 's/^ *Tests +.*\b([0-9]+) passed.*/\1/p' <<<"$out" | tail -1)
		fail=$(sed -n -E 's/^ *Tests +([0-9]+) failed.*/\1/p' <<<"$out" | tail -1)
		skipped=$(sed -n -E 's/^ *Tests +.*\b([0-9]+) skipped.*/\1/p' <<<"$out" | tail -1)
		pass=${pass:-0} fail=${fail:-0} skipped=${skipped:-0}
	else
		last=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|deselected|error)' <<<"$out" | tail -1)
		pass=$(conf_count passed) fail=$(conf_count failed) skipped=$(conf_count skipped)
		errs=$(conf_count 'errors?') desel=$(conf_count deselected)
		fail=$((fail + errs)) skipped=$((skipped + desel))
	fi
	[ "$rc" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
	mkdir -p "$root/tests/results"
	echo "$tag[$build]: $pass passed, $fail failed, $skipped skipped" | tee "$result"
	[ "$fail" -eq 0 ]
}
