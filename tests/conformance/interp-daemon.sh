# Sourced by run-e2b-ci-suite.sh and run-e2b-ci-py-suite.sh, after lib.sh: a `hutch serve` (conf_start_daemon)
# on a free port that provisions code-interpreter-v1 itself (src/daemon/sandboxes/provision.h) from
# images/code-interpreter/, with the Debian tree cached in $HUTCH_INTERP_CACHE (default
# /var/cache/hutch-interpreter: the first run downloads ~300 MB, docs/operations.md), and a warm pool of it.
# Sets what conf_start_daemon sets, and url; lib.sh's cleanup removes what it made.
interp_cache=${HUTCH_INTERP_CACHE:-/var/cache/hutch-interpreter}

# start_interp_daemon: returns 1 (with the log shown) when the daemon or the template does not come up
start_interp_daemon() {
	local port tpl
	port=$(conf_free_port)
	printf 'pool.size.code-interpreter-v1 = %s\n' "${INTERP_POOL_SIZE:-2}" >"$work/hutch.conf"
	HUTCH_INTERPRETER_PROVISION=1 conf_start_daemon 127.0.0.1 "$port" --pool-size 0 --config "$work/hutch.conf" \
		--interpreter-cache-dir "$interp_cache" || return 1
	url="http://127.0.0.1:$port"
	# a first build downloads and installs the Debian packages: up to half an hour on a slow mirror
	echo "$tag: waiting for code-interpreter-v1 (GET /templates shows the build's step)"
	for _ in $(seq 3600); do
		tpl=$(curl -sf -H "X-API-KEY: $key" "$url/templates" | python3 -c '
import json, sys
t = [t for t in json.load(sys.stdin) if t.get("templateID") == "code-interpreter-v1"]
p = t[0].get("provision", {}) if t else {}
print(p.get("state", "none"), p.get("step", ""), p.get("stepName", ""))' 2>/dev/null)
		case $tpl in
		ready*) echo "$tag: code-interpreter-v1 is ready"; return 0 ;;
		failed*) echo "$tag: code-interpreter-v1 could not be built:"; grep 'template code-interpreter-v1' "$work/daemon.log" | tail -20; return 1 ;;
		esac
		kill -0 "$daemon_pid" 2>/dev/null || { echo "$tag: hutch serve exited:"; tail -30 "$work/daemon.log"; return 1; }
		sleep 0.5
	done
	echo "$tag: code-interpreter-v1 was not built within 30 minutes"
	return 1
}
