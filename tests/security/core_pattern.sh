#!/bin/bash
# Host side of the crash battery: a crash inside a sandbox must never start
# or reach a host program, whatever kernel.core_pattern says.
# Usage: tests/security/core_pattern.sh HUTCH (as root; the caller exports
# HUTCH_DATA_DIR, HUTCH_RUN_DIR and HUTCH_CGROUP_PARENT). Prints one
# "ok - ..." / "not ok - ..." line per assertion and "# end" last.
#
# It sets two temporary patterns and puts the host's back on every exit
# (trap), failures and signals included:
#  - a pipe, "|helper %P", where helper records that it ran. A host crash
#    with RLIMIT_CORE unlimited runs it (the control: the pattern works);
#    crashes inside sandboxes, as root and as the user, with SIGSEGV, SIGABRT
#    and SIGQUIT, after trying to lower or raise RLIMIT_CORE, run it never.
#  - a socket, "@path" (Linux 6.16+), served by a listener that counts
#    connections. A host crash reaches it (the control; the kernel ignores
#    RLIMIT_CORE for sockets); a sandbox does not even start, with an error
#    naming kernel.core_pattern, and the listener sees nothing from it.
set -u
HUTCH=$1
ORIG=$(cat /proc/sys/kernel/core_pattern)
DIR=$(mktemp -d /tmp/hutch-core.XXXXXX)
LISTENER=
restore() {
	printf '%s\n' "$ORIG" >/proc/sys/kernel/core_pattern
	[ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null && wait "$LISTENER" 2>/dev/null
	rm -rf "$DIR"
}
trap restore EXIT
trap 'exit 130' INT TERM
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }
set_pattern() { printf '%s\n' "$1" >/proc/sys/kernel/core_pattern; }
# a crash on the host with RLIMIT_CORE $1 (the inner shell reports it, quietly)
host_crash() { sh -c "ulimit -c $1; python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'; true" 2>/dev/null; }
srun() { timeout -k 5 60 "$HUTCH" run --timeout 30s "$@"; }

# the crashes inside: limits changed first (seccomp makes that a no-op),
# then three dumping signals, each in its own child
CRASHER='import os, resource, signal
for lim in (0, resource.RLIM_INFINITY):
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (lim, lim))
    except (ValueError, OSError):
        pass
for sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGQUIT):
    pid = os.fork()
    if pid == 0:
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(0)
    _, st = os.waitpid(pid, 0)
    print("crashed", os.WTERMSIG(st) if os.WIFSIGNALED(st) else -1, "core" if os.WCOREDUMP(st) else "nocore")'

# --- a pipe helper -----------------------------------------------------------
cat >"$DIR/helper" <<-HELPER
	#!/bin/sh
	cat >/dev/null
	echo "\$1" >>"$DIR/helper-ran"
HELPER
chmod 755 "$DIR/helper"
set_pattern "|$DIR/helper %P"
host_crash unlimited
for _ in $(seq 30); do [ -s "$DIR/helper-ran" ] && break; sleep 0.1; done
if [ -s "$DIR/helper-ran" ]; then
	ok "pipe: control: a host crash runs the helper"
else
	not_ok "pipe: control: a host crash did not run the helper (the test could not see a run)"
fi
rm -f "$DIR/helper-ran"
for u in root user; do
	out=$(srun --user "$u" -- python3 -c "$CRASHER" 2>&1)
	n=$(grep -c '^crashed [0-9]* nocore$' <<<"$out")
	if [ "$n" -eq 3 ]; then
		ok "pipe [$u]: three crashes inside, each killed by its signal without a core"
	else
		not_ok "pipe [$u]: crashes inside: $(tr '\n' ' ' <<<"$out")"
	fi
done
sleep 1
if [ -e "$DIR/helper-ran" ]; then
	not_ok "pipe: the helper ran for a crash inside a sandbox (pids $(tr '\n' ' ' <"$DIR/helper-ran"))"
else
	ok "pipe: the helper never ran for crashes inside sandboxes"
fi

# --- a socket server ---------------------------------------------------------
python3 - "$DIR/core.sock" "$DIR/connections" <<-'PY' &
	import socket, sys
	s = socket.socket(socket.AF_UNIX)
	s.bind(sys.argv[1])
	s.listen(8)
	while True:
	    c, _ = s.accept()
	    with open(sys.argv[2], "a") as f:
	        f.write("connection\n")
	    c.close()
PY
LISTENER=$!
for _ in $(seq 50); do [ -S "$DIR/core.sock" ] && break; sleep 0.1; done
if ! set_pattern "@$DIR/core.sock" 2>/dev/null; then
	ok "socket: this kernel has no socket core_pattern (skipped: nothing to reach)"
else
	host_crash 1
	for _ in $(seq 30); do [ -s "$DIR/connections" ] && break; sleep 0.1; done
	if [ -s "$DIR/connections" ]; then
		ok "socket: control: a host crash with RLIMIT_CORE 1 reaches the socket (the kernel ignores the limit)"
	else
		not_ok "socket: control: a host crash did not reach the socket"
	fi
	: >"$DIR/connections"
	out=$(srun -- python3 -c "$CRASHER" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && grep -q 'kernel.core_pattern is a socket' <<<"$out" && ! grep -q '^crashed' <<<"$out"; then
		ok "socket: no sandbox starts, and the error says why ($(grep -m1 -o 'kernel.core_pattern is a socket[^:]*' <<<"$out"))"
	else
		not_ok "socket: a sandbox started under a socket core_pattern (exit $rc): $(tr '\n' ' ' <<<"$out")"
	fi
	sleep 1
	if [ -s "$DIR/connections" ]; then
		not_ok "socket: a crash inside a sandbox reached the host socket"
	else
		ok "socket: nothing inside a sandbox reached the host socket"
	fi
	doc=$("$HUTCH" doctor 2>&1)
	if grep -q 'core_pattern is a socket' <<<"$doc" && grep -A2 'core dumps' <<<"$doc" | grep -qi 'fail'; then
		ok "socket: hutch doctor fails the core dumps check"
	else
		not_ok "socket: hutch doctor does not fail the core dumps check: $(grep -A2 'core dumps' <<<"$doc" | tr '\n' ' ')"
	fi
fi
restore
trap - EXIT
if [ "$(cat /proc/sys/kernel/core_pattern)" == "$ORIG" ]; then
	ok "the host's core_pattern is back ($ORIG)"
else
	not_ok "the host's core_pattern was not restored: $(cat /proc/sys/kernel/core_pattern)"
fi
echo "# end"
