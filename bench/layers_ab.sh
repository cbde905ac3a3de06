#!/bin/bash
# Create + first exec with two builds of sandbox_bench in the same run: A
# (an older build, e.g. the tmpfs writable layer) and B (this tree, the
# layer on disk). They alternate, one round each, ROUNDS times, so a noisy
# host's drift hits both alike; the samples of all rounds are pooled.
#
#   bench/layers_ab.sh OLD/build/bench/sandbox_bench build/bench/sandbox_bench [ROUNDS] [ITERATIONS]
#   ALIVE=1000 bench/layers_ab.sh ...   # each run keeps that many idle sandboxes alive meanwhile
#
# Prints median and p99 (ms) of create, exec_first, create+exec_first (the
# two summed per sandbox) and destroy for A and B, and B - A.
set -eu
a=$1 b=$2 rounds=${3:-6} iters=${4:-100}
alive=()
[ "${ALIVE:-0}" -gt 0 ] && alive=(--alive "$ALIVE")
tmp=$(mktemp -d /tmp/hutch-layers-ab.XXXXXX)
trap 'rm -rf --one-file-system "$tmp"' EXIT
trap 'exit 130' INT TERM
for r in $(seq 1 "$rounds"); do
	for side in a b; do
		bin=$a
		[ "$side" = b ] && bin=$b
		echo "+ $bin --only split --rounds 1 --iterations $iters --warmup 5 --no-cli ${alive[*]} --json $tmp/$side-$r.json" >&2
		"$bin" --only split --rounds 1 --iterations "$iters" --warmup 5 --no-cli "${alive[@]}" --json "$tmp/$side-$r.json" >/dev/null
	done
done
PYTHONPATH="$(dirname "$0")" python3 - "$tmp" "$rounds" <<'EOF'
import json, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
from abstats import pct
res = {}
for side in "ab":
    s = {"create": [], "exec_first": [], "destroy": [], "create+exec_first": []}
    for r in range(1, rounds + 1):
        f = json.load(open(f"{tmp}/{side}-{r}.json"))["figures"]
        c, e = f["create"]["samples_ms"], f["exec_first"]["samples_ms"]
        s["create"] += c
        s["exec_first"] += e
        s["destroy"] += f["destroy"]["samples_ms"]
        s["create+exec_first"] += [x + y for x, y in zip(c, e)]
    res[side] = s
print(f"{'figure (ms)':20} {'n':>5} {'A median':>9} {'A p99':>8} {'B median':>9} {'B p99':>8} {'B-A median':>11}")
for k in ["create", "exec_first", "create+exec_first", "destroy"]:
    a, b = res["a"][k], res["b"][k]
    print(f"{k:20} {len(a):5} {pct(a, .5):9.2f} {pct(a, .99):8.2f} {pct(b, .5):9.2f} {pct(b, .99):8.2f} "
          f"{pct(b, .5) - pct(a, .5):+11.2f}")
EOF
