#!/bin/bash
# Destroy leaves nothing behind: after 100 create/destroy cycles there is no
# extra process, mount, cgroup, network namespace, directory, socket or uid slot.
. "$(dirname "$0")/lib.sh"

# Only what is ours is counted, so that other sandboxes on this host (another
# test run, a benchmark, another daemon) do not move the figures: mounts under
# this test's private dir; processes in this run's cgroup parent (a sandbox's
# process cannot leave it, and a cgroup that still holds one cannot be removed,
# which count_cgroups sees); network namespaces those processes are in, plus
# any netns bound to a file (nsfs mounts, host-wide: nothing of hutch makes
# one, so the count only moves when something else does, and settles below).
count_mounts() { grep -c " $HUTCH_TEST_TMP/" /proc/self/mountinfo; }
our_pids() { grep -l ":/$HUTCH_CGROUP_PARENT/" /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3; }
count_netns() {
	{
		for p in $(our_pids); do stat -L -c %i "/proc/$p/ns/net" 2>/dev/null; done | sort -u
		grep -c " nsfs " /proc/self/mountinfo
	} | wc -l
}
count_sandbox_procs() { our_pids | wc -l; }
count_cgroups() {
	local n=0 d
	for d in /sys/fs/cgroup/*/"$HUTCH_CGROUP_PARENT" /sys/fs/cgroup/"$HUTCH_CGROUP_PARENT"; do
		[ -d "$d" ] && n=$((n + $(find "$d" -mindepth 1 -type d | wc -l)))
	done
	echo $n
}
count_run_entries() { find "$HUTCH_RUN_DIR"/{sandboxes,ctl,slots} -mindepth 1 2>/dev/null | wc -l; }

# settles DESC EXPECTED FN: FN's count returns to EXPECTED within 3 s (a
# killed sandbox's processes take a moment to be reaped). A leak never does.
settles() {
	local desc=$1 want=$2 fn=$3 got i
	for i in $(seq 1 30); do
		got=$($fn)
		[ "$got" == "$want" ] && break
		sleep 0.1
	done
	expect_eq "$desc" "$want" "$got"
}

hrun -- true # builds the template and the run dir first
m0=$(count_mounts) n0=$(count_netns) p0=$(count_sandbox_procs) c0=$(count_cgroups) r0=$(count_run_entries)

fails=0
for i in $(seq 1 100); do
	hrun -- bash -c 'sleep 0.01 & echo x > /tmp/x' >/dev/null || fails=$((fails + 1))
done
expect_eq "100 create/run/destroy cycles succeed" "0" "$fails"
expect_eq "no mount is left" "$m0" "$(count_mounts)"
settles "no network namespace is left" "$n0" count_netns
settles "no sandbox process is left" "$p0" count_sandbox_procs
expect_eq "no cgroup is left" "$c0" "$(count_cgroups)"
expect_eq "no directory, socket or uid slot is left" "$r0" "$(count_run_entries)"

# interrupted runs clean up too
"$HUTCH" run -- sleep 60 &
pid=$!
sleep 1
check "a sandbox process exists while running" test "$(count_sandbox_procs)" -gt "$p0"
kill -TERM "$pid"
wait "$pid"
settles "SIGTERM to hutch run: no process left" "$p0" count_sandbox_procs
expect_eq "SIGTERM to hutch run: no mount left" "$m0" "$(count_mounts)"
expect_eq "SIGTERM to hutch run: nothing left in the run dir" "$r0" "$(count_run_entries)"
expect_eq "SIGTERM to hutch run: no cgroup left" "$c0" "$(count_cgroups)"

# SIGKILL to hutch run: its sandbox dies with it (parent-death signal), and
# the next hutch run removes what is left (mount, cgroup, dirs, uid slot)
"$HUTCH" run -- sleep 60 &
pid=$!
sleep 1
kill -KILL "$pid"
wait "$pid" 2>/dev/null
settles "SIGKILL to hutch run: its sandbox's processes die with it" "$p0" count_sandbox_procs
HUTCH_SWEEP_MIN_AGE=0 hrun -- true
expect_eq "the next run removes the killed run's mount" "$m0" "$(count_mounts)"
expect_eq "the next run removes the killed run's directory, socket and slot" "$r0" "$(count_run_entries)"
expect_eq "the next run removes the killed run's cgroup" "$c0" "$(count_cgroups)"

# a failed create (an unknown template) leaves nothing either
out=$("$HUTCH" run --template nosuch -- true 2>&1)
expect_eq "an unknown template fails with 125" "125" "$?"
expect_match "an unknown template is named" "nosuch" "$out"
expect_eq "a failed create leaves no mount" "$m0" "$(count_mounts)"
expect_eq "a failed create leaves nothing in the run dir" "$r0" "$(count_run_entries)"
expect_eq "a failed create leaves no cgroup" "$c0" "$(count_cgroups)"

finish
