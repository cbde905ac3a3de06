#!/bin/bash
# Builds the template code-interpreter-v1 (Debian bookworm with Python, ipykernel, the data and office libraries,
# Node.js, R and this folder's server on port 49999) into a hutch data dir, as root.
#
#   build.sh [--data-dir DIR] [--cache-dir DIR] [--hutch BIN] [--name NAME] [--update-lock] [--daemon]
#
# --name builds the same recipe under another template name: a copy of this folder with more packages in
# packages.txt (and --update-lock once) is how a derived template is made. The cache dir defaults to
# <data dir>/cache/<name>.
#
# It is cached twice: the template's description carries a hash of the recipe (this script, packages.txt,
# packages.lock, server/), so a template built from the same recipe is left alone and the script exits 0 at once;
# and the debootstrapped tree is kept in the cache dir, keyed by the package list and lock, so a change to the
# server alone rebuilds in seconds without a download. Progress goes to stdout, prefixed with "code-interpreter:";
# each of the build's steps starts with a line "code-interpreter: step N/M: WHAT" (what `hutch serve` shows in
# GET /templates while it provisions the template). Exit codes: 0 built or up to date, 1 failed, 2 bad usage, 3 a
# stale template is still in use by a sandbox (it is kept; stop those sandboxes and run again), 4 (--daemon only)
# the tree of a new recipe is ready but the template of the previous one is still in place.
#
# --daemon is how `hutch serve` runs it (docs/operations.md, "The code interpreter template"): a running daemon
# holds the data dir, so the script never removes a template itself; when a template of another recipe is in
# place it prepares the new tree (the old template keeps serving meanwhile) and exits 4, the daemon moves the old
# one aside once no sandbox uses it, and runs the script again, which then only copies the cached tree.
#
# Every installed package's version is pinned by packages.lock; a mirror that serves another version fails the
# build with the difference, and --update-lock rewrites the lock from what was installed. The Debian mirror is
# debootstrap's default unless HUTCH_DEBIAN_MIRROR names another.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
NAME=code-interpreter-v1
SUITE=bookworm
SERVER_DIR=/usr/local/lib/hutch-interpreter
DATA_DIR=${HUTCH_DATA_DIR:-/var/lib/hutch}
CACHE_DIR=
HUTCH=
UPDATE_LOCK=0
DAEMON=0
STEPS=5

say() { printf 'code-interpreter: %s\n' "$*"; }
step() { say "step $1/$STEPS: $2"; }
die() { printf 'code-interpreter: error: %s\n' "$*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--data-dir) DATA_DIR=$2; shift 2 ;;
	--cache-dir) CACHE_DIR=$2; shift 2 ;;
	--hutch) HUTCH=$2; shift 2 ;;
	--name) NAME=$2; shift 2 ;;
	--update-lock) UPDATE_LOCK=1; shift ;;
	--daemon) DAEMON=1; shift ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) printf 'usage: %s [--data-dir DIR] [--cache-dir DIR] [--hutch BIN] [--name NAME] [--update-lock] [--daemon]\n' "$0" >&2; exit 2 ;;
	esac
done
CACHE_DIR=${CACHE_DIR:-$DATA_DIR/cache/$NAME}
if [ -z "$HUTCH" ]; then
	HUTCH=$(command -v hutch || true)
	[ -n "$HUTCH" ] || HUTCH=$HERE/../../build/hutch
fi
[ -x "$HUTCH" ] || die "no hutch binary at $HUTCH (--hutch BIN)"
[ "$(id -u)" = 0 ] || die "run as root (debootstrap and template builds need it)"
mkdir -p "$CACHE_DIR"
CACHE_DIR=$(cd "$CACHE_DIR" && pwd)
# one build at a time per cache dir (a daemon's start and an operator's run may meet)
exec 9>"$CACHE_DIR/.lock"
flock 9

# The recipe's hash: what the template is built from, in a fixed order (the tests are not part of it).
recipe_hash() {
	(cd "$HERE" && { ls build.sh packages.txt packages.lock 2>/dev/null; find server -type f ! -name '*.pyc' 2>/dev/null |
		LC_ALL=C sort; } | while read -r f; do printf '%s\n' "$f"; cat "$f"; done) | sha256sum | cut -c1-64
}

packages() { grep -v '^#' "$HERE/packages.txt" | grep -v '^ *$' | paste -sd, -; }

packages_key() { { cat "$HERE/packages.txt"; cat "$HERE/packages.lock" 2>/dev/null || true; } | sha256sum | cut -c1-64; }

installed_versions() { dpkg-query --admindir="$1/var/lib/dpkg" -W -f '${Package} ${Version}\n' | LC_ALL=C sort; }

# A debootstrap that fails halfway can leave /proc and /sys mounted in the tree.
unmount_under() {
	local m
	for m in $(findmnt -rn -o TARGET | grep "^$1/" | sort -r); do umount -l "$m" || true; done
}

# The Debian tree, built once per package list and lock into $CACHE_DIR/rootfs: debootstrap lays a minimal
# bookworm, then apt inside it installs the list (apt, not debootstrap's own resolver, which does not know
# virtual packages). Downloaded packages are kept in $CACHE_DIR/debs for the next build.
NEW=
debian_tree() {
	local key stamp
	key=$(packages_key)
	stamp=$CACHE_DIR/rootfs/.hutch-packages
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ] && [ "$UPDATE_LOCK" = 0 ]; then
		step 1 "debootstrap: cached"
		step 2 "apt-get install: cached"
		step 3 "packages.lock: cached"
		say "Debian tree: cached ($CACHE_DIR/rootfs)"
		return
	fi
	command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
	NEW=$CACHE_DIR/rootfs.new
	unmount_under "$NEW"
	rm -rf --one-file-system "$NEW"
	mkdir -p "$CACHE_DIR/debs"
	trap 'unmount_under "$NEW"' EXIT
	step 1 "debootstrap a minimal $SUITE"
	# shellcheck disable=SC2086 # the mirror is one optional word
	debootstrap --variant=minbase --cache-dir="$CACHE_DIR/debs" "$SUITE" "$NEW" ${HUTCH_DEBIAN_MIRROR:-} 2>&1 |
		sed -u 's/^/code-interpreter:   /'
	step 2 "apt-get install $(packages | tr ',' '\n' | wc -l) packages and their dependencies"
	mount -t proc proc "$NEW/proc"
	cp "$CACHE_DIR"/debs/*.deb "$NEW/var/cache/apt/archives/" 2>/dev/null || true
	local pkgs
	pkgs=$(packages | tr ',' ' ')
	# shellcheck disable=SC2086 # one word a package
	chroot "$NEW" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
		sh -c "apt-get -q update && apt-get -q -y --no-install-recommends install $pkgs" 2>&1 |
		sed -u 's/^/code-interpreter:   /'
	cp -n "$NEW"/var/cache/apt/archives/*.deb "$CACHE_DIR/debs/" 2>/dev/null || true
	unmount_under "$NEW"
	trap - EXIT
	step 3 "check the installed versions against packages.lock"
	check_lock "$NEW"
	rm -rf "$NEW"/var/cache/apt/archives/*.deb "$NEW"/var/lib/apt/lists/* "$NEW"/var/log/* "$NEW"/debootstrap
	unmount_under "$CACHE_DIR/rootfs"
	rm -rf --one-file-system "$CACHE_DIR/rootfs"
	packages_key >"$NEW/.hutch-packages"
	mv "$NEW" "$CACHE_DIR/rootfs"
	say "Debian tree: $(du -sm "$CACHE_DIR/rootfs" | cut -f1) MiB," \
		"$(du -sm "$CACHE_DIR/debs" | cut -f1) MiB of packages downloaded"
}

# Every installed version must be the locked one (or the lock is rewritten on request).
check_lock() {
	local got=$CACHE_DIR/installed.txt
	installed_versions "$1" >"$got"
	if [ "$UPDATE_LOCK" = 1 ] || [ ! -s "$HERE/packages.lock" ]; then
		cp "$got" "$HERE/packages.lock"
		say "packages.lock: written ($(wc -l <"$got") packages); commit it"
		return
	fi
	if ! diff -u "$HERE/packages.lock" "$got" >"$CACHE_DIR/lock.diff"; then
		cat "$CACHE_DIR/lock.diff" >&2
		die "the mirror serves other versions than packages.lock (above); review and run with --update-lock"
	fi
	say "packages.lock: all $(wc -l <"$got") versions match"
}

# The server and the sandbox-wide settings, laid over the cached tree (cheap: a few files).
install_server() {
	local root=$CACHE_DIR/rootfs
	rm -rf "$root$SERVER_DIR"
	mkdir -p "$root$SERVER_DIR"
	(cd "$HERE/server" && find . -type f ! -name '*.pyc' | while read -r f; do
		install -D -m 0644 "$f" "$root$SERVER_DIR/$f"
	done)
	printf '%s\n' "$1" >"$root$SERVER_DIR/RECIPE"
	# root's home may be a context's working directory (E2B's SDK tests use it); the kernels run as the user
	chmod 0755 "$root/root"
}

current_recipe() {
	local meta=$DATA_DIR/templates/$NAME/template.json
	[ -f "$meta" ] || return 0
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("recipe", ""))' "$meta" 2>/dev/null || true
}

main() {
	local hash have
	[ -s "$HERE/packages.lock" ] || [ "$UPDATE_LOCK" = 1 ] || die "packages.lock is missing (--update-lock writes it)"
	hash=$(recipe_hash)
	have=$(current_recipe)
	if [ -n "$have" ] && [ "$have" = "$hash" ]; then
		say "template $NAME is up to date (recipe ${hash:0:12})"
		return 0
	fi
	local t0=$SECONDS
	say "building template $NAME (recipe ${hash:0:12}) in $DATA_DIR"
	debian_tree
	hash=$(recipe_hash) # --update-lock may have changed the lock
	step 4 "install the server (recipe ${hash:0:12})"
	install_server "$hash"
	if [ -d "$DATA_DIR/templates/$NAME" ] && [ "$DAEMON" = 1 ]; then
		say "the template of the previous recipe (${have:0:12}) is in place; the daemon replaces it"
		exit 4
	fi
	if [ -d "$DATA_DIR/templates/$NAME" ]; then
		say "removing the template of the previous recipe (${have:0:12})"
		if ! "$HUTCH" template rm "$NAME" --data-dir "$DATA_DIR"; then
			say "the previous template is in use or the daemon runs; it is kept"
			exit 3
		fi
	fi
	# what a daemon moved aside (provision.h): no sandbox uses it any more
	rm -rf --one-file-system "$DATA_DIR/templates/.stale-$NAME-"*
	step 5 "copy the tree into the template"
	"$HUTCH" template build "$NAME" --from "$CACHE_DIR/rootfs" --data-dir "$DATA_DIR" --recipe "$hash" \
		--memory 1024 --env LANG=C.UTF-8 --env PYTHONUNBUFFERED=1 --cwd /home/user \
		--start-cmd "exec python3 $SERVER_DIR/server.py --port 49999" \
		--ready-cmd 'curl -sf -o /dev/null http://127.0.0.1:49999/health' --ready-timeout 60
	say "template $NAME built in $((SECONDS - t0)) s"
}

main; exit  # on one line: bash reads a script as it runs, and an edit to it must not change what runs
