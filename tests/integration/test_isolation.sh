#!/bin/bash
# What a sandbox must not see or do. Each assertion is an attack that must fail.
. "$(dirname "$0")/lib.sh"

# a host process the sandbox must neither see nor signal
sleep 300 &
hostpid=$!
trap 'kill $hostpid 2>/dev/null; cleanup_test_dirs' EXIT

out=$(hrun --user root -- bash -c 'ls /proc | grep -E "^[0-9]+$" | wc -l')
check "only the sandbox's own processes are visible ($out)" test "$out" -le 5
out=$(hrun --user root -- bash -c "kill -0 $hostpid 2>&1; echo rc=\$?")
expect_match "a host pid cannot be signalled" "rc=1" "$out"
check "the host process is still alive" kill -0 "$hostpid"
out=$(hrun --user root -- bash -c 'cat /proc/1/cmdline | tr "\0" " "; ls -l /proc/1/root 2>&1')
expect_match "PID 1 is hutch-init" "^hutch-init" "$out"

out=$(hrun --user root -- cat /etc/shadow 2>&1)
expect_match "/etc/shadow is not readable" "No such file|Permission denied" "$out"
out=$(hrun -- ls /root 2>&1)
expect_match "/root is not readable by user" "Permission denied" "$out"
out=$(hrun --user root -- ls -A /root 2>&1)
expect_no_match "/root inside is the sandbox's own, not the host's" "\.ssh|\.npm|\.cache" "$out"
out=$(hrun --user root -- ls "$HUTCH_DATA_DIR" "$HUTCH_RUN_DIR" 2>&1)
expect_match "the data and run dirs are not reachable" "No such file" "$out"
out=$(hrun --user root -- bash -c 'touch /usr/bin/pwned 2>&1; echo x >> /usr/bin/python3 2>&1' )
expect_match "/usr is read-only even for root" "Read-only file system" "$out"
check "/usr on the host is untouched" test ! -e /usr/bin/pwned
out=$(hrun --user root -- cat /proc/self/mountinfo)
expect_no_match "mountinfo shows no host paths" "$HUTCH_TEST_TMP|/run/hutch|/var/lib/hutch" "$out"

out=$(hrun -- hostname)
check "hostname is the sandbox id, not the host's ($out)" test "$out" != "$(hostname)"
expect_match "hostname looks like a sandbox id" "^run-[0-9a-f]+$" "$out"

out=$(hrun -- cat /proc/self/uid_map)
base=$(awk '{print $2}' <<<"$out")
check "root inside maps to an unprivileged host uid ($base)" test "$base" -ge 1073741824

out=$(hrun -- python3 -c '
import socket
for host in ("1.1.1.1", "10.0.0.1", "169.254.169.254"):
    s = socket.socket(); s.settimeout(2)
    print(host, s.connect_ex((host, 80)))
print("ifaces", sorted(n for _, n in socket.if_nameindex()))')
expect_match "no route to the outside" "1.1.1.1 101" "$out"
expect_match "no route to the metadata address" "169.254.169.254 101" "$out"
expect_match "only loopback exists" "ifaces \['lo'\]" "$out"
out=$(hrun -- python3 -c '
import socket, threading
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.create_connection(srv.getsockname()); a, _ = srv.accept(); c.send(b"ping"); print(a.recv(4).decode())')
expect_eq "loopback works inside" "ping" "$out"

out=$(hrun --user root -- bash -c 'mount -t tmpfs none /mnt 2>&1; echo rc=$?')
expect_match "mount fails even for root" "rc=[1-9]" "$out"
out=$(hrun --user root -- bash -c 'unshare -U true 2>&1; echo rc=$?; unshare -m true 2>&1; echo rc=$?')
expect_eq "unshare -U and unshare -m both fail" "2" "$(grep -c '^rc=1$' <<<"$out")"
out=$(hrun --user root -- python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, 1, 0, 0)   # PTRACE_ATTACH to PID 1
print("ptrace", r, os.strerror(ctypes.get_errno()))')
expect_match "ptrace of PID 1 fails" "ptrace -1" "$out"
out=$(hrun --user root -- bash -c 'kill -9 1; sleep 0.2; echo still-running')
expect_eq "SIGKILL to PID 1 from inside does nothing" "still-running" "$out"

# two sandboxes at once: neither sees the other's files or processes
hrun -- bash -c 'echo secret-a > /tmp/a-file; exec -a marker-process-a sleep 3' &
apid=$!
sleep 1
out=$(hrun --user root -- bash -c 'ls /tmp; ps -eo args')
expect_no_match "a neighbour's files are invisible" "a-file" "$out"
expect_no_match "a neighbour's processes are invisible" "marker-process-a" "$out"
wait "$apid" 2>/dev/null # (a kill would hit hrun's subshell, not the sandbox)
m1=$(hrun -- cat /proc/self/uid_map & hrun -- cat /proc/self/uid_map & wait)
b1=$(awk 'NR==1{print $2}' <<<"$m1")
b2=$(awk 'NR==2{print $2}' <<<"$m1")
check "concurrent sandboxes get disjoint uid ranges ($b1 vs $b2)" test "$b1" != "$b2" -a $(( b1 > b2 ? b1 - b2 : b2 - b1 )) -ge 65536

finish
