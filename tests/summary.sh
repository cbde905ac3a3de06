#!/bin/bash
# Adds up the per-suite results that the runners wrote to tests/results/ and
# prints the closing line CI reads.
set -u
cd "$(dirname "$0")/results"
pass=0 fail=0 skip=0
for f in *.txt; do
	line=$(tail -n1 "$f")
	p=$(sed -n 's/.* \([0-9]\+\) passed.*/\1/p' <<<"$line")
	x=$(sed -n 's/.* \([0-9]\+\) failed.*/\1/p' <<<"$line")
	s=$(sed -n 's/.* \([0-9]\+\) skipped.*/\1/p' <<<"$line")
	echo "  $line"
	pass=$((pass + ${p:-0})); fail=$((fail + ${x:-0})); skip=$((skip + ${s:-0}))
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
