#!/bin/bash
# Descriptor limits: a daemon started under a small RLIMIT_NOFILE refuses the
# create that would run it out of descriptors with a clear capacity answer
# (503/429, Retry-After, a message naming open files), before anything is
# built; it keeps serving, kills and creates again, and leaves nothing behind.
. "$(dirname "$0")/lib.sh"

NOFILE=${NOFILE:-128}
MAX_CREATES=200 # a bound: the limit must refuse long before this

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
mkdir -p "$HUTCH_DATA_DIR"
# small sandboxes so that memory and pids budgets stay far away: only the
# descriptors may refuse
cat >"$HUTCH_TEST_TMP/hutch.conf" <<EOF
default_memory = 64M
default_pids = 16
max_sandboxes = 1000
EOF
log="$HUTCH_TEST_TMP/serve.log"
prlimit --nofile="$NOFILE:$NOFILE" "$HUTCH" serve --listen 127.0.0.1 --port "$port" --pool-size 0 \
	--config "$HUTCH_TEST_TMP/hutch.conf" >"$log" 2>&1 &
daemon=$!
stop_daemon() {
	kill "$daemon" 2>/dev/null
	wait "$daemon" 2>/dev/null
}
holder=
trap '[ -n "$holder" ] && kill "$holder" 2>/dev/null; stop_daemon; cleanup_test_dirs' EXIT

key=
for _ in $(seq 100); do
	key=$(grep -oE '(e2b|hutch)_[0-9a-f]{16,}' "$log" | head -1)
	[ -n "$key" ] && curl -sfo /dev/null "$url/health" >/dev/null && break
	sleep 0.1
done
check "the daemon starts under RLIMIT_NOFILE $NOFILE" curl -sfo /dev/null "$url/health"
expect_match "the daemon logs its descriptor limit" "open files: $NOFILE" "$(cat "$log" "$HUTCH_DATA_DIR/hutch.log" 2>/dev/null)"

# api METHOD PATH [BODY]: prints the status, the Retry-After header and the body
api() {
	curl -s -m 30 -D "$HUTCH_TEST_TMP/h" -o "$HUTCH_TEST_TMP/b" -w '%{http_code}' -X "$1" \
		-H "X-API-KEY: $key" -H 'Content-Type: application/json' ${3:+--data "$3"} "$url$2"
	echo " $(tr -d '\r' <"$HUTCH_TEST_TMP/h" | awk -F': ' 'tolower($1) == "retry-after" {print $2}')"
	cat "$HUTCH_TEST_TMP/b"
}

ids=()
refusal=
for _ in $(seq $MAX_CREATES); do
	out=$(api POST /sandboxes '{"templateID": "base", "timeout": 300}')
	status=${out%% *}
	if [ "$status" = 201 ]; then
		ids+=("$(sed -n 2p <<<"$out" | jq -r .sandboxID)")
	else
		refusal=$out
		break
	fi
done
n=${#ids[@]}
check "some sandboxes were created before the refusal ($n)" test "$n" -ge 3
expect_match "the refusal is a capacity answer with Retry-After" "^(503|429) [0-9]+" "$refusal"
expect_match "the refusal names the descriptor limit" "open files|descriptors" "$refusal"
expect_match "the refusal says how to raise it" "LimitNOFILE" "$refusal"
expect_no_match "the refusal is no ENOENT" "No such file" "$refusal"
metrics=$(curl -s -H "X-API-KEY: $key" "$url/metrics")
expect_match "/metrics shows the descriptor limit" "hutch_open_files\{kind=\"limit\"\} $NOFILE" "$metrics"
check "the daemon still answers /health" curl -sfo /dev/null "$url/health"

# nothing was half-created: as many sandbox groups and run dirs as sandboxes
# (one group per sandbox in every hierarchy: count the distinct names)
groups() {
	find /sys/fs/cgroup/ -maxdepth 3 -mindepth 2 -path "*/$HUTCH_CGROUP_PARENT/*" -type d -printf '%f\n' 2>/dev/null |
		sort -u | wc -l
}
rundirs() { find "$HUTCH_RUN_DIR/sandboxes" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
expect_eq "the refused create left no cgroup" "$n" "$(groups)"
expect_eq "the refused create left no run dir entry" "$n" "$(rundirs)"

# room again after a kill
out=$(api DELETE "/sandboxes/${ids[0]}")
expect_eq "a sandbox is killed after the refusal" "204" "${out%% *}"
out=$(api POST /sandboxes '{"templateID": "base", "timeout": 300}')
expect_eq "a create succeeds again after the kill" "201" "${out%% *}"
ids[0]=$(sed -n 2p <<<"$out" | jq -r .sandboxID)

# past admission: idle client connections take the reserve, so the next
# create meets EMFILE in the middle of its build. It must say so (503, "Too
# many open files"), never ENOENT, and leave nothing behind. 6 descriptors
# are left free: a create needs about 10 (the child's copies included).
for id in "${ids[@]:1}"; do
	api DELETE "/sandboxes/$id" >/dev/null
done
ids=("${ids[0]}")
python3 - "$port" "/proc/$daemon/fd" $((NOFILE - 6)) "$HUTCH_TEST_TMP/held" <<'PY' &
import os, socket, sys, time
port, fddir, target, flag = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
held = []
for _ in range(400):
    n = len(os.listdir(fddir))
    if n >= target:
        break
    held.append(socket.create_connection(("127.0.0.1", port)))
    # one at a time, each accepted before the next: never past the target
    for _ in range(200):
        if len(os.listdir(fddir)) > n:
            break
        time.sleep(0.01)
open(flag, "w").write(str(len(held)))
for _ in range(600):  # hold them at most 60 s, until told to let go
    if not os.path.exists(flag):
        break
    time.sleep(0.1)
PY
holder=$!
for _ in $(seq 100); do [ -s "$HUTCH_TEST_TMP/held" ] && break; sleep 0.1; done
before=$(groups)
out=$(api POST /sandboxes '{"templateID": "base", "timeout": 300}')
echo "# answer: $(tail -1 <<<"$out")"
expect_match "a create that meets EMFILE answers 503 with Retry-After" "^503 [0-9]+" "$out"
expect_match "and says too many open files" "Too many open files" "$out"
expect_match "and names the limit to raise" "RLIMIT_NOFILE.*LimitNOFILE" "$out"
expect_no_match "and is no ENOENT" "No such file" "$out"
rm -f "$HUTCH_TEST_TMP/held"
wait "$holder"
expect_eq "the failed create left no cgroup" "$before" "$(groups)"
expect_eq "the failed create left no run dir entry" "$before" "$(rundirs)"
out=$(api POST /sandboxes '{"templateID": "base", "timeout": 300}')
expect_eq "a create succeeds once the connections are gone" "201" "${out%% *}"
ids+=("$(sed -n 2p <<<"$out" | jq -r .sandboxID)")

for id in "${ids[@]}"; do
	api DELETE "/sandboxes/$id" >/dev/null
done
out=$(api GET /sandboxes)
expect_eq "every sandbox is gone" "[]" "$(sed -n 2p <<<"$out" | jq -c .)"
expect_eq "no cgroup is left" "0" "$(groups)"
expect_eq "no run dir entry is left" "0" "$(rundirs)"
check "the daemon still answers /health at the end" curl -sfo /dev/null "$url/health"
stop_daemon
expect_no_match "the daemon's log has no sanitizer report" "AddressSanitizer|LeakSanitizer|runtime error" "$(cat "$log")"
finish
