#!/bin/bash
# The ports benchmark (ports_bench.mjs) on two builds of hutch, A (e.g. the
# commit before a change) and B (this tree), alternating A B A B ... PAIRS
# times, so that a shared machine's drift hits both alike. Each run has its
# own nginx and direct paths, so every hutch figure is also read against the
# nginx of its own run (hutch / nginx).
#
#   sudo bench/ports_ab.sh OLD/build build [PAIRS] [ports_bench.mjs options...]
#
# Prints, per figure, A's and B's hutch / nginx ratio (median over their
# runs) and hutch's own median, then the runs' JSON under $tmp (kept).
set -eu
a=$1 b=$2 pairs=${3:-2}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/hutch-ports-ab.XXXXXX)
trap 'exit 130' INT TERM
for r in $(seq 1 "$pairs"); do
	for side in a b; do
		bin=$a
		[ "$side" = b ] && bin=$b
		echo "+ node bench/ports_bench.mjs --build $bin $* > $tmp/$side-$r.json" >&2
		node "$here/ports_bench.mjs" --build "$bin" "$@" >"$tmp/$side-$r.json"
	done
done
python3 - "$tmp" "$pairs" <<'EOF'
import json, statistics, sys
tmp, pairs = sys.argv[1], int(sys.argv[2])
runs = {s: [json.load(open(f"{tmp}/{s}-{r}.json")) for r in range(1, pairs + 1)] for s in "ab"}
figs = [("added_new_ms", "median"), ("added_keepalive_ms", "median"), ("added_keepalive_ms", "p99"),
        ("rps_keepalive", "median"), ("rps_new_conn", "median"), ("download_MBps", "median"),
        ("upload_MBps", "median")]
print(f"{'figure':32} {'A hutch':>9} {'A /nginx':>9} {'B hutch':>9} {'B /nginx':>9}")
for k, sub in figs:
    row = []
    for s in "ab":
        h = [x["hutch"][k][sub] for x in runs[s]]
        q = [x["hutch"][k][sub] / x["nginx"][k][sub] for x in runs[s] if x["nginx"][k][sub]]
        row += [statistics.median(h), statistics.median(q) if q else float("nan")]
    print(f"{k + ' ' + sub:32} {row[0]:9.3f} {row[1]:9.2f} {row[2]:9.3f} {row[3]:9.2f}")
for s in "ab":
    print(s, "idle WebSockets MiB:", [x["idle_websockets"]["daemon_rss_growth_MiB"] for x in runs[s]])
print("runs:", tmp)
EOF
