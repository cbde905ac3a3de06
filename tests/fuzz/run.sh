#!/bin/bash
# Builds the libFuzzer drivers (tests/fuzz/fuzz_*.c) with clang, ASan and
# UBSan, and runs them.
#   run.sh build          build only (into build-fuzz/)
#   run.sh smoke          build, then run each driver over its seed corpus
#                         plus a short bounded run (CI)
#   run.sh long NAME [S]  run one driver for S seconds (default 3600), with
#                         new inputs kept in build-fuzz/corpus-NAME/
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
mode=${1:-smoke}
out=build-fuzz
mkdir -p "$out" tests/results
FUZZ_PKGS="libevent jansson zlib libcrypto sqlite3 libarchive"
# libarchive is loaded on first use (src/util/dynlib.h), by the soname the linker would record
ARCHIVE_SONAME=$(objdump -p "$(pkg-config --variable=libdir libarchive)/libarchive.so" | awk '/SONAME/ {print $2}')
CFLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -Isrc $(pkg-config --cflags $FUZZ_PKGS)"
CFLAGS="$CFLAGS -DHU_LIBARCHIVE_SONAME=\"$ARCHIVE_SONAME\""
LIBSRC="$(ls src/util/*.c src/proto/*.c 2>/dev/null)"
for drv in tests/fuzz/fuzz_*.c; do
	[ -e "$drv" ] || continue
	name=$(basename "$drv" .c)
	# A driver lists the extra sources it needs in a line "// fuzz-sources: a.c b.c".
	extra=$(sed -n 's@^// fuzz-sources: @@p' "$drv")
	clang $CFLAGS -o "$out/$name" "$drv" $LIBSRC $extra $(pkg-config --libs $FUZZ_PKGS)
done
export ASAN_OPTIONS=detect_leaks=1
case "$mode" in
build) ;;
smoke)
	pass=0 fail=0
	for drv in tests/fuzz/fuzz_*.c; do
		name=$(basename "$drv" .c)
		bin=$out/$name
		corpus=tests/fuzz/corpus/${name#fuzz_}
		mkdir -p "$corpus"
		work=$(mktemp -d)
		if "$bin" -max_total_time="${FUZZ_SECONDS:-20}" -max_len=65536 -timeout=10 "$work" "$corpus" >"$out/$name.log" 2>&1; then
			pass=$((pass + 1)); echo "fuzz $name: ok ($(grep -c . "$out/$name.log") log lines)"
		else
			fail=$((fail + 1)); echo "fuzz $name: FAILED"; tail -n 40 "$out/$name.log"
		fi
		rm -rf "$work"
	done
	echo "fuzz: $pass passed, $fail failed" | tee tests/results/fuzz.txt
	[ "$fail" -eq 0 ]
	;;
long)
	name=${2:?driver name}; secs=${3:-3600}
	mkdir -p "$out/corpus-$name"
	"$out/fuzz_$name" -max_total_time="$secs" "$out/corpus-$name" "tests/fuzz/corpus/$name"
	;;
esac
