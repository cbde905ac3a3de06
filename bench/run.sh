#!/bin/sh
# bench/run.sh: build hutch and run the sandbox benchmark with sensible
# defaults; docs/benchmarks.md has the figures and how to read them.
#
#   sudo bench/run.sh                      # 5 rounds x 200 iterations, every group
#   ROUNDS=3 ITERATIONS=50 bench/run.sh    # quicker
#   bench/run.sh --only true,split         # extra arguments go to sandbox_bench
#
# Environment: ROUNDS, ITERATIONS, JSON (default build/bench/sandbox_bench.json),
# HF_RUNS (hyperfine runs per command, default 100), HUTCH_CGROUP_PARENT
# (default hutch-bench), SKIP_MAKE=1 (use the binaries already in build/).
# The runtime works in a private temporary directory (HUTCH_DATA_DIR /
# HUTCH_RUN_DIR), never in /var/lib/hutch or /run/hutch. The binaries are
# copied there first, so a `make` running in the same tree meanwhile cannot
# swap hutch-init under a running benchmark.
set -eu

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
ITERATIONS=${ITERATIONS:-200}
JSON=${JSON:-build/bench/sandbox_bench.json}
HF_RUNS=${HF_RUNS:-100}
PYTHON=/usr/bin/python3

if [ "$(id -u)" != 0 ]; then
	echo "bench/run.sh: hutch creates namespaces, mounts and cgroups: run as root" >&2
	exit 1
fi

[ "${SKIP_MAKE:-0}" = 1 ] || make

tmp=$(mktemp -d /tmp/hutch-bench.XXXXXX)
# The layers image's keeper that the last `hutch run` leaves (HUTCH_LAYERS_LINGER) is told to
# decide now (SIGTERM: it unmounts the image), so that the directory can go.
# --one-file-system: never descend into a mount a crashed run left behind
cleanup() {
	local p c
	for p in /proc/[0-9]*; do
		{ read -r c <"$p/comm"; } 2>/dev/null || continue
		[ "$c" = hutch-layers ] || continue
		tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "HUTCH_DATA_DIR=$tmp/data" && kill -TERM "${p#/proc/}"
	done
	for _ in $(seq 50); do
		grep -q " $tmp/" /proc/self/mountinfo || break
		sleep 0.1
	done
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export HUTCH_DATA_DIR="$tmp/data"
export HUTCH_RUN_DIR="$tmp/run"
export HUTCH_CGROUP_PARENT="${HUTCH_CGROUP_PARENT:-hutch-bench}"
bin="$tmp/bin"
mkdir -p "$bin"
cp build/hutch build/hutch-full build/hutch-init build/bench/sandbox_bench "$bin/"
export HUTCH_INIT="$bin/hutch-init"

set -- "$bin/sandbox_bench" --hutch "$bin/hutch" --rounds "$ROUNDS" --iterations "$ITERATIONS" --json "$JSON" "$@"
echo "+ HUTCH_DATA_DIR=$HUTCH_DATA_DIR HUTCH_RUN_DIR=$HUTCH_RUN_DIR HUTCH_CGROUP_PARENT=$HUTCH_CGROUP_PARENT HUTCH_INIT=$HUTCH_INIT"
echo "+ $*"
"$@"
echo "JSON written to $JSON"

# ---- whole-process comparison with a public tool ---------------------------
# The cli_* figures above already time `hutch run` as a whole process
# (fork/exec + waitpid, alternating with bwrap in the same loop). The same
# comparison with hyperfine, if it is installed (nothing is installed here).
# hyperfine runs all runs of one command, then the next: not interleaved, so
# drift on a noisy host shows up as a difference; prefer the numbers above.
BWRAP="bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --unshare-net --unshare-cgroup \
--die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
--symlink usr/lib64 /lib64 --symlink usr/sbin /sbin --proc /proc --dev /dev --tmpfs /tmp --tmpfs /home"
if command -v hyperfine >/dev/null 2>&1; then
	set -- hyperfine -N --warmup 5 --runs "$HF_RUNS" \
		"$bin/hutch run -- true" "$BWRAP /bin/true" \
		"$bin/hutch run -- $PYTHON -c pass" "$BWRAP $PYTHON -c pass" "$PYTHON -c pass"
	echo "+ $*"
	"$@"
else
	echo "note: hyperfine is not installed; the whole-process comparison with it is skipped"
	echo "      (the cli_true / cli_python rows above are the same comparison, interleaved)."
	echo "      With hyperfine it would be:"
	echo "      hyperfine -N --warmup 5 --runs $HF_RUNS 'build/hutch run -- true' '$BWRAP /bin/true' \\"
	echo "          'build/hutch run -- $PYTHON -c pass' '$BWRAP $PYTHON -c pass' '$PYTHON -c pass'"
fi
