#!/bin/bash
# `hutch run`: exit codes, stream separation, stdin, signals, timeout, users,
# large output, flag validation, and that the usual tools work inside.
. "$(dirname "$0")/lib.sh"

out=$(hrun -- python3 -c 'print(1)')
expect_eq "python3 prints inside a sandbox" "1" "$out"

for code in 0 1 7 255; do
	hrun -- bash -c "exit $code"
	expect_eq "exit code $code is propagated" "$code" "$?"
done

hrun -- bash -c 'kill -TERM $$'
expect_eq "death by SIGTERM exits 128+15" "143" "$?"

out=$(hrun -- bash -c 'echo to-out; echo to-err >&2' 2>/dev/null)
expect_eq "stdout carries only stdout" "to-out" "$out"
out=$(hrun -- bash -c 'echo to-out; echo to-err >&2' 2>&1 >/dev/null)
expect_eq "stderr carries only stderr" "to-err" "$out"

out=$(printf 'line1\nline2\n' | hrun -- cat)
expect_eq "stdin reaches the command and EOF closes it" $'line1\nline2' "$out"
out=$(head -c 3000000 /dev/urandom | tee "$HUTCH_TEST_TMP/in.bin" | hrun -- sha256sum | cut -d' ' -f1)
expect_eq "3 MB of binary stdin arrives intact" "$(sha256sum <"$HUTCH_TEST_TMP/in.bin" | cut -d' ' -f1)" "$out"

# 100 MB of output, no loss: count and checksum what arrives
want=$(python3 -c 'import hashlib,sys; b=bytes(range(256))*4096; h=hashlib.sha256(); [h.update(b) for _ in range(100)]; print(h.hexdigest())')
got=$(hrun -- python3 -c 'import sys; b=bytes(range(256))*4096; w=sys.stdout.buffer; [w.write(b) for _ in range(100)]' | sha256sum | cut -d' ' -f1)
expect_eq "100 MB of stdout arrives without loss" "$want" "$got"
n=$(hrun -- python3 -c 'import sys; sys.stderr.write("e"*(10<<20))' 2>&1 >/dev/null | wc -c)
expect_eq "10 MB of stderr arrives without loss" "10485760" "$n"

start=$(date +%s%N)
out=$(hrun --timeout 1s -- sleep 30 2>&1)
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "timeout exits 124" "124" "$rc"
expect_match "timeout says what happened" "timed out" "$out"
check "timeout kills promptly (${ms} ms)" test "$ms" -lt 5000

# SIGINT to hutch run is forwarded to the command
# (started directly, not through hrun: a background subshell would be the one signalled)
"$HUTCH" run -- bash -c 'trap "echo got-int; exit 3" INT; sleep 20 & wait' >"$HUTCH_TEST_TMP/int.out" 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid"
rc=$?
expect_eq "SIGINT is forwarded and the command's exit code returned" "3" "$rc"
expect_match "the command saw SIGINT" "got-int" "$(cat "$HUTCH_TEST_TMP/int.out")"

# the command's request is written into the connection hutch run hands init with "go" (init starts
# the command as soon as its setup is done); that connection stays init's (close-on-exec), so the
# command holds its stdio and nothing else; a request too large to wait in the socket (here 90 KB of
# arguments) is sent once the sandbox is up
out=$(hrun -- sh -c 'ls /proc/$$/fd | tr "\n" " "')
expect_eq "the command holds only its stdio, no connection of init's" "0 1 2 " "$out"
a=$(head -c 30000 /dev/zero | tr '\0' a)
out=$(hrun -- sh -c 'echo ${#1} ${#2} ${#3}' x "$a" "$a" "$a")
expect_eq "a 90 KB request reaches init after the create" "30000 30000 30000" "$out"

out=$(hrun -- id -u)
expect_eq "default user is uid 1000" "1000" "$out"
out=$(hrun -- bash -c 'echo $HOME $USER; pwd')
expect_eq "user's home and cwd" $'/home/user user\n/home/user' "$out"
out=$(hrun --user root -- bash -c 'id -u; echo $HOME')
expect_eq "--user root runs as uid 0 with home /root" $'0\n/root' "$out"
out=$(hrun --env FOO=bar --cwd /tmp -- bash -c 'echo $FOO; pwd')
expect_eq "--env and --cwd apply" $'bar\n/tmp' "$out"
out=$(hrun -- bash -c 'umask; touch /tmp/f; stat -c %a /tmp/f')
expect_eq "umask 022: new files are 0644" $'0022\n644' "$out"

out=$(hrun -- node -e 'console.log(6*7)')
expect_eq "node works" "42" "$out"
out=$(hrun -- bash -c 'echo a b c | tr " " "\n" | sort -r | head -1; ls / >/dev/null && echo ls-ok')
expect_eq "coreutils work" $'c\nls-ok' "$out"

out=$(hrun -- /no/such/binary 2>&1)
rc=$?
expect_eq "a missing command fails with 125" "125" "$rc"
expect_match "a missing command is named in the error" "no/such/binary" "$out"

for bad in "--memory 12X" "--pids -3" "--cpus 0" "--disk lots" "--timeout soon" "--user admin" "--env NOEQUALS" "--bogus"; do
	out=$("$HUTCH" run $bad -- true 2>&1)
	rc=$?
	expect_eq "invalid flag '$bad' exits 2" "2" "$rc"
	expect_match "invalid flag '$bad' gets a clear message" "hutch: " "$out"
done
out=$("$HUTCH" run 2>&1)
expect_eq "no command exits 2" "2" "$?"

# --volume: a host directory, idmapped (canonical ids on the host), read-only on request
vol="$HUTCH_TEST_TMP/vol"
mkdir -p "$vol" && chown 1000:1000 "$vol"
out=$(hrun --volume "$vol:/home/user/work" -- sh -c 'echo hi > /home/user/work/f && stat -c "%U %u" /home/user/work/f')
expect_eq "--volume: user's file is user's inside" "user 1000" "$out"
expect_eq "--volume: and uid 1000 on the host" "1000:1000" "$(stat -c %u:%g "$vol/f")"
out=$(hrun --volume "$vol:/data:ro" --user root -- sh -c 'cat /data/f; echo x > /data/g' 2>&1)
expect_match "--volume :ro refuses writes with EROFS, even for root" $'hi\n.*Read-only file system' "$out"
check "--volume :ro left the host directory unchanged" test ! -e "$vol/g"
for bad in "$vol:/proc/x" "$vol:/usr" "$vol:/" "$vol:rel" "rel:/data" "$vol"; do
	out=$("$HUTCH" run --volume "$bad" -- true 2>&1)
	expect_eq "--volume '$bad' exits 2" "2" "$?"
done
out=$(hrun --volume "$vol:/bin/x" -- true 2>&1)
expect_eq "--volume through the template's /bin symlink fails (125)" "125" "$?"
expect_match "--volume through a symlink says so" "symlink" "$out"

# --tmpfs PATH[:SIZE]: a fresh tmpfs, mode 1777, root's, nosuid and nodev, capped (default half of
# --memory), outside the disk layer; /tmp stays on the layer without it
out=$(hrun -- stat -f -c %T /tmp)
expect_eq "without --tmpfs, /tmp is on the overlay layer" "overlayfs" "$out"
out=$(hrun --tmpfs /tmp --tmpfs /scratch:8M -- sh -c 'stat -f -c %T /tmp /scratch; stat -c "%a %U" /tmp /scratch')
expect_eq "--tmpfs mounts a tmpfs, mode 1777, owned by root" $'tmpfs\ntmpfs\n1777 root\n1777 root' "$out"
out=$(hrun --tmpfs /scratch:8M -- sh -c 'grep " /scratch " /proc/self/mountinfo')
expect_match "--tmpfs is nosuid and nodev" "^[^ ]+ [^ ]+ [^ ]+ / /scratch rw,nosuid,nodev[ ,]" "$out"
out=$(hrun --tmpfs /scratch:8M --memory 128M --tmpfs /t -- df -B1 --output=size /scratch /t)
expect_eq "--tmpfs sizes: 8M as given, half of --memory by default" $'1B-blocks\n  8388608\n 67108864' "$out"
out=$(hrun --tmpfs /scratch:8M -- sh -c 'head -c 9M /dev/zero > /scratch/f; echo "rc=$?"; du -k /scratch/f | cut -f1' 2>&1)
expect_match "a write past --tmpfs SIZE fails with ENOSPC" "No space left on device.*rc=1.*8192" "$out"
out=$(hrun --disk 8M --tmpfs /tmp:64M -- sh -c 'head -c 32M /dev/zero > /tmp/f && echo written' 2>&1)
expect_eq "--tmpfs holds more than --disk: it is not on the disk layer" "written" "$out"
out=$(hrun --tmpfs /tmp -- sh -c 'echo mine > /tmp/f && stat -c %U /tmp/f && ls /tmp')
expect_eq "the user writes to --tmpfs (1777), files keep their owner" $'user\nf' "$out"
out=$(hrun --tmpfs /tmp -- ls -A /tmp)
expect_eq "--tmpfs files vanish with the sandbox (the next one starts empty)" "" "$out"
out=$(hrun --tmpfs /bin/x -- true 2>&1)
expect_eq "--tmpfs through the template's /bin symlink fails (125)" "125" "$?"
expect_match "--tmpfs through a symlink says so" "symlink" "$out"
out=$(hrun --volume "$vol:/data" --tmpfs /data/cache:1M -- sh -c 'stat -f -c %T /data /data/cache')
expect_eq "--volume then --tmpfs inside it: mounted in the order given" "$(stat -f -c %T "$vol")"$'\ntmpfs' "$out"
many=()
for i in $(seq 17); do many+=(--tmpfs "/t$i:1M"); done
before=$(ls -A "$HUTCH_RUN_DIR/sandboxes" 2>/dev/null; ls -A "$HUTCH_DATA_DIR/layers" 2>/dev/null)
for bad in "/proc/x" "/sys" "/dev/shm" "/usr/lib" "/" "rel" "/a/../b" "/a//b" "/a/" "/t:0" "/t:lots" "/t:-1M" \
	"/t:99999999999999999999" "/t:99999999999T" "/t:1G"; do
	out=$("$HUTCH" run --tmpfs "$bad" -- true 2>&1)
	expect_eq "--tmpfs '$bad' exits 2" "2" "$?"
	expect_match "--tmpfs '$bad' says why" "hutch: .*(tmpfs|size)" "$out"
done
out=$("$HUTCH" run --tmpfs /t:256M --memory 128M -- true 2>&1)
expect_eq "--tmpfs larger than --memory (given after it) exits 2" "2" "$?"
expect_match "and says the memory limit is why" "larger than the memory limit" "$out"
out=$("$HUTCH" run --tmpfs /t --volume "$vol:/t" -- true 2>&1)
expect_eq "--tmpfs and --volume on one path exit 2" "2" "$?"
expect_match "and say it is mounted twice" "mounted twice" "$out"
out=$("$HUTCH" run "${many[@]}" -- true 2>&1)
expect_eq "17 --tmpfs exit 2" "2" "$?"
expect_match "and say at most 16" "more than 16" "$out"
after=$(ls -A "$HUTCH_RUN_DIR/sandboxes" 2>/dev/null; ls -A "$HUTCH_DATA_DIR/layers" 2>/dev/null)
expect_eq "refused --tmpfs options leave no sandbox or layer behind" "$before" "$after"

# The sudo shim in the template (hutch-init under another name) is compared with the running
# init only when the stamp of both files no longer matches: a shim changed behind hutch's back
# (same size, other bytes; a new change time) is rewritten by the next run.
SHIM="$HUTCH_DATA_DIR/templates/base/rootfs/opt/hutch/bin/sudo"
hrun -- true
check "the sudo stamp is written" test -s "$HUTCH_DATA_DIR/templates/base/sudo.stamp"
printf 'XXXX' | dd of="$SHIM" bs=1 seek=100 conv=notrunc status=none
hrun -- true
check "a changed shim is rewritten from the running init" cmp -s "$SHIM" "$ROOT/$BUILD/hutch-init"
out=$(hrun --user user -- sudo -n id -u 2>&1)
expect_eq "and sudo works through it" "0" "$out"

# Libraries only some commands need are loaded when first used: a `hutch run` without internet
# access maps neither libarchive (a template import) nor libnftables (HUTCH_NET=nat) nor libpq (a
# PostgreSQL store; tests/e2e/cluster.test.mjs runs that); a tar import still works, loading
# libarchive then.
# (the hutch process itself, not hrun's timeout, whose maps are its own; the guard bounds it)
"$HUTCH" run -- sleep 3 &
runpid=$!
(sleep 60 && kill "$runpid") 2>/dev/null &
guard=$!
maps=""
for _ in $(seq 50); do
	maps=$(cat "/proc/$runpid/maps" 2>/dev/null)
	grep -q libseccomp <<<"$maps" && break
	sleep 0.05
done
expect_match "hutch run maps its own libraries" "libseccomp" "$maps"
expect_no_match "hutch run maps no libarchive" "libarchive" "$maps"
expect_no_match "hutch run maps no libnftables" "libnftables" "$maps"
expect_no_match "hutch run maps no libpq" "libpq" "$maps"
# the `hutch` binary is `hutch run` alone (src/cli/front.c): none of the daemon's libraries
expect_no_match "hutch run maps no OpenSSL" "libssl|libcrypto" "$maps"
expect_no_match "hutch run maps no SQLite or libevent" "libsqlite3|libevent" "$maps"
wait "$runpid"
kill "$guard" 2>/dev/null
# every other verb is hutch-full's, started by `hutch` with the same arguments and exit code
out=$("$HUTCH" --help)
expect_match "hutch --help lists every verb (from hutch-full)" "serve .*" "$out"
out=$("$HUTCH" no-such-verb 2>&1)
expect_eq "an unknown verb exits 2 through hutch-full" "2" "$?"
expect_match "and says so" "unknown command 'no-such-verb'" "$out"
out=$("$HUTCH" template ls)
expect_eq "hutch template ls succeeds through hutch-full" "0" "$?"
expect_match "and lists the base template" "base" "$out"
# a `hutch run` layer goes with the run: its overlay skips every sync; HUTCH_RUN_VOLATILE=0 keeps them
out=$("$HUTCH" run -- cat /proc/self/mountinfo)
expect_match "hutch run's overlay does not sync its throw-away layer" " / .* overlay .*fsync=volatile" "$out"
out=$(HUTCH_RUN_VOLATILE=0 "$HUTCH" run -- cat /proc/self/mountinfo)
expect_no_match "HUTCH_RUN_VOLATILE=0 keeps the syncs" "fsync=volatile" "$out"
# hutch-init joins its cgroups itself, before its exec (clone3 into the cgroup2 group, `tasks` in v1):
# its pid is in the sandbox's group of every hierarchy
"$HUTCH" run -- sleep 20 </dev/null >/dev/null 2>&1 &
runpid=$!
pidfile=""
for _ in $(seq 100); do
	pidfile=$(ls "$HUTCH_RUN_DIR"/sandboxes/run-*/pid 2>/dev/null | head -1)
	[ -n "$pidfile" ] && [ -s "$pidfile" ] && break
	sleep 0.1
done
initpid=$(cat "$pidfile" 2>/dev/null)
sbid=$(basename "$(dirname "$pidfile")")
groups=0 missing=""
for g in /sys/fs/cgroup/*/"$HUTCH_CGROUP_PARENT/$sbid" /sys/fs/cgroup/"$HUTCH_CGROUP_PARENT/$sbid"; do
	[ -d "$g" ] || continue
	groups=$((groups + 1))
	grep -qx "$initpid" "$g/cgroup.procs" || missing="$missing $g"
done
check "the sandbox has groups in several hierarchies" test "$groups" -ge 2
expect_eq "its init is in every one of them" "" "$missing"
kill -TERM "$runpid"
wait "$runpid"
# hutch-init's bytes (what every runtime copies into its sealed memfd) carry no debug sections;
# they are in hutch-init.debug, named by a debuglink
sections=$(readelf -S "$ROOT/$BUILD/hutch-init")
expect_no_match "hutch-init holds no debug sections" "\.debug_info" "$sections"
expect_match "hutch-init links its debug file" "\.gnu_debuglink" "$sections"
check "hutch-init.debug is beside it" test -s "$ROOT/$BUILD/hutch-init.debug"
mkdir -p "$HUTCH_TEST_TMP/tarsrc/etc" && echo lazy >"$HUTCH_TEST_TMP/tarsrc/etc/lazy"
tar -C "$HUTCH_TEST_TMP/tarsrc" -czf "$HUTCH_TEST_TMP/lazy.tgz" .
out=$("$HUTCH" template build lazytar --from-tar "$HUTCH_TEST_TMP/lazy.tgz" 2>&1)
expect_match "a tar import loads libarchive when it needs it" "template lazytar built: 2 files, 5 bytes" "$out"

finish
