# Shared helpers for the integration tests (sourced). Every test script
# prints one "ok - ..." or "not ok - ..." line per assertion and ends with its
# own tally; run.sh adds them up.
set -u
BUILD=${BUILD:-${1:-build}}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HUTCH="$ROOT/$BUILD/hutch"
T_PASS=0
T_FAIL=0

# Each test file gets private data/run dirs and its own cgroup parent, so it
# never touches a real installation's sandboxes.
if [ -z "${HUTCH_TEST_TMP:-}" ]; then
	HUTCH_TEST_TMP=$(mktemp -d /tmp/hutch-it.XXXXXX)
	export HUTCH_TEST_TMP
	trap 'cleanup_test_dirs' EXIT
fi
export HUTCH_DATA_DIR="$HUTCH_TEST_TMP/data"
export HUTCH_RUN_DIR="$HUTCH_TEST_TMP/run"
export HUTCH_CGROUP_PARENT=${HUTCH_CGROUP_PARENT:-hutch-it}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
# hutch run unmounts the layers image at its end, as before the keeper (a keeper lingering after
# a test would hold the image past its cleanup); test_storage.sh tests the keeper itself
export HUTCH_LAYERS_LINGER=${HUTCH_LAYERS_LINGER:-0}

cleanup_test_dirs() {
	# kill any sandbox a failed test left running (only under our own cgroup
	# parent), then unmount anything left (never outside our dir)
	local g
	for g in /sys/fs/cgroup/*/"$HUTCH_CGROUP_PARENT"/*/ /sys/fs/cgroup/"$HUTCH_CGROUP_PARENT"/*/; do
		[ -d "$g" ] || continue
		if [ -e "$g/cgroup.kill" ]; then
			echo 1 >"$g/cgroup.kill" 2>/dev/null
		else
			xargs -r kill -9 <"$g/cgroup.procs" 2>/dev/null
		fi
	done
	sleep 0.1
	# then the groups, and the parent itself once it is empty (the runtime
	# makes it again on the next create)
	for g in /sys/fs/cgroup/*/"$HUTCH_CGROUP_PARENT"/*/ /sys/fs/cgroup/"$HUTCH_CGROUP_PARENT"/*/ \
		/sys/fs/cgroup/*/"$HUTCH_CGROUP_PARENT"/ /sys/fs/cgroup/"$HUTCH_CGROUP_PARENT"/; do
		[ -d "$g" ] && rmdir "$g" 2>/dev/null
	done
	grep -o " $HUTCH_TEST_TMP/[^ ]*" /proc/self/mountinfo 2>/dev/null | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$HUTCH_TEST_TMP"
}

ok() { T_PASS=$((T_PASS + 1)); echo "ok - $*"; }
not_ok() { T_FAIL=$((T_FAIL + 1)); echo "not ok - $*"; }

# check DESC CMD...: passes when CMD exits 0
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# expect_eq DESC EXPECTED ACTUAL
expect_eq() {
	if [ "$2" == "$3" ]; then ok "$1"; else not_ok "$1 (expected '$2', got '$3')"; fi
}

# expect_match DESC REGEX ACTUAL
expect_match() {
	if [[ "$3" =~ $2 ]]; then ok "$1"; else not_ok "$1 (no match for /$2/ in '${3:0:300}')"; fi
}

# expect_no_match DESC REGEX ACTUAL
expect_no_match() {
	if [[ "$3" =~ $2 ]]; then not_ok "$1 (unexpected match /$2/ in '${3:0:300}')"; else ok "$1"; fi
}

# hrun ARGS...: `hutch run` bounded by a generous outer timeout so a hang
# fails the test instead of the suite.
hrun() {
	timeout -k 5 120 "$HUTCH" run "$@"
}

finish() {
	echo "# $(basename "$0"): $T_PASS passed, $T_FAIL failed"
	[ "$T_FAIL" -eq 0 ]
}
