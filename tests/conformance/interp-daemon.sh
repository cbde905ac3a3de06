# Sourced by run-e2b-ci-suite.sh and run-e2b-ci-py-suite.sh: a `hutch serve` on a private data dir, run dir,
# cgroup parent and free port that provisions code-interpreter-v1 itself (src/daemon/sandboxes/provision.h)
# from images/code-interpreter/, with the Debian tree cached in $HUTCH_INTERP_CACHE (default
# /var/cache/hutch-interpreter: the first run downloads ~300 MB, docs/operations.md), and a warm pool of it.
# Needs: $root, $build, $work, $tag (the prefix of its messages). Sets daemon_pid, key, url; cleanup removes
# what it made.
interp_cache=${HUTCH_INTERP_CACHE:-/var/cache/hutch-interpreter}
daemon_pid=
cgparent="hutch-$tag-$$"
cleanup() {
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	# sandboxes outlive their daemon by design: kill what is left, then the cgroups and the mounts
	for g in /sys/fs/cgroup/*/"$cgparent"/* /sys/fs/cgroup/"$cgparent"/*; do
		[ -d "$g" ] || continue
		if [ -e "$g/cgroup.kill" ]; then echo 1 >"$g/cgroup.kill"; else
			for p in $(cat "$g/cgroup.procs"); do kill -9 "$p"; done
		fi
	done 2>/dev/null
	sleep 0.3
	for g in /sys/fs/cgroup/*/"$cgparent"/* /sys/fs/cgroup/"$cgparent"/*; do rmdir "$g"; done 2>/dev/null
	for g in /sys/fs/cgroup/*/"$cgparent" /sys/fs/cgroup/"$cgparent"; do rmdir "$g"; done 2>/dev/null
	grep -o " $work/[^ ]*" /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done 2>/dev/null
	rm -rf --one-file-system "$work"
}

# start_interp_daemon: returns 1 (with the log shown) when the daemon or the template does not come up
start_interp_daemon() {
	local port tpl
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	mkdir -p "$work/data" "$work/run"
	printf 'pool.size.code-interpreter-v1 = %s\n' "${INTERP_POOL_SIZE:-2}" >"$work/hutch.conf"
	HUTCH_DATA_DIR="$work/data" HUTCH_RUN_DIR="$work/run" HUTCH_CGROUP_PARENT="$cgparent" \
		HUTCH_INTERPRETER_PROVISION=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
		"$root/$build/hutch" serve --listen 127.0.0.1 --port "$port" --pool-size 0 --config "$work/hutch.conf" \
		--interpreter-cache-dir "$interp_cache" >"$work/daemon.log" 2>&1 &
	daemon_pid=$!
	key=
	for _ in $(seq 200); do
		key=$(grep -oE 'e2b_[0-9a-f]{40}' "$work/daemon.log" | head -1)
		[ -n "$key" ] && grep -q 'listening on' "$work/daemon.log" && break
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	url="http://127.0.0.1:$port"
	[ -n "$key" ] || { echo "$tag: hutch serve did not start:"; cat "$work/daemon.log"; return 1; }
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
