#!/bin/bash
# The exec round trip on a kept sandbox (sandbox_bench's "exec" group: SPAWN
# /bin/true + its EXIT on a kept connection) with two builds of hutch-init in
# the same run: A (e.g. main's) and B (this tree's). They alternate, one round
# each, ROUNDS times, so a noisy host's drift hits both alike; the samples of
# all rounds are pooled. The host's own fork/exec of /bin/true is the floor.
#
#   bench/exec_ab.sh OLD/build/hutch-init build/hutch-init [ROUNDS] [ITERATIONS]
#
# Prints median and p99 (ms) of exec for A and B and of the host, and B - A.
set -eu
a=$1 b=$2 rounds=${3:-6} iters=${4:-200}
bench=$(dirname "$0")/../build/bench/sandbox_bench
tmp=$(mktemp -d /tmp/hutch-exec-ab.XXXXXX)
trap 'rm -rf --one-file-system "$tmp"' EXIT
trap 'exit 130' INT TERM
for r in $(seq 1 "$rounds"); do
	for side in a b; do
		init=$a
		[ "$side" = b ] && init=$b
		echo "+ HUTCH_INIT=$init $bench --only exec --rounds 1 --iterations $iters --warmup 5 --no-cli --json $tmp/$side-$r.json" >&2
		HUTCH_INIT=$init "$bench" --only exec --rounds 1 --iterations "$iters" --warmup 5 --no-cli \
			--json "$tmp/$side-$r.json" >/dev/null
	done
	# the floor, once per round: host_true is in the "true" group
	"$bench" --only true --rounds 1 --iterations "$iters" --warmup 5 --no-cli --no-bwrap --no-crun \
		--json "$tmp/host-$r.json" >/dev/null
done
PYTHONPATH="$(dirname "$0")" python3 - "$tmp" "$rounds" <<'PY'
import json, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
from abstats import pct
res = {"a": [], "b": [], "host": []}
for r in range(1, rounds + 1):
    for side in "ab":
        res[side] += json.load(open(f"{tmp}/{side}-{r}.json"))["figures"]["exec"]["samples_ms"]
    res["host"] += json.load(open(f"{tmp}/host-{r}.json"))["figures"]["host_true"]["samples_ms"]
print(f"{'figure (ms)':12} {'n':>5} {'median':>8} {'p99':>8}")
for k, name in (("a", "exec A"), ("b", "exec B"), ("host", "host_true")):
    print(f"{name:12} {len(res[k]):5} {pct(res[k], .5):8.3f} {pct(res[k], .99):8.3f}")
print(f"B - A median {pct(res['b'], .5) - pct(res['a'], .5):+.3f} ms; B / host {pct(res['b'], .5) / pct(res['host'], .5):.2f}, "
      f"A / host {pct(res['a'], .5) / pct(res['host'], .5):.2f}")
PY
