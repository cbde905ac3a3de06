#!/bin/sh
# bench/create_phases.sh: where the wall-clock time of a cold create + first
# exec goes, phase by phase, from uprobes on the runtime's functions in
# sandbox_bench (the runtime is linked into it) and from tracepoints in the
# sandbox's own processes (hutch-init's setup stage, the command's exec).
#
#   sudo bench/create_phases.sh [ITERATIONS [ALIVE]]   # default 50 samples, 0 idle sandboxes
#
# Runs `sandbox_bench --only split` under `perf record` (children inherited,
# so the sandbox's processes are traced too; nothing system-wide), prints the
# median / p90 of every phase and of the create and first-exec totals, and
# removes its probes. ALIVE keeps that many idle sandboxes alive meanwhile.
# Uprobes cost a few microseconds each; the totals are a little above
# sandbox_bench's own. Needs perf and a build with symbols (the default).
set -eu

cd "$(dirname "$0")/.."
N=${1:-50}
ALIVE=${2:-0}
BIN=build/bench/sandbox_bench
if [ "$(id -u)" != 0 ]; then
	echo "bench/create_phases.sh: run as root (uprobes, namespaces, cgroups)" >&2
	exit 1
fi
command -v perf >/dev/null || { echo "bench/create_phases.sh: perf is not installed" >&2; exit 1; }
[ -x "$BIN" ] || make "$BIN"

tmp=$(mktemp -d /tmp/hutch-phases.XXXXXX)
FUNCS="hu_sandbox_create hu_slot_acquire hu_cgroup_create hu_sbx_bind_init_socket hu_sbx_start_child \
hu_cgroup_attach idmapped_tree hu_sandbox_create_finish sandbox_exec hu_init_connect"
cleanup() {
	perf probe -q -d 'probe_sandbox_bench:*' 2>/dev/null || true
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
[ -z "${KEEP:-}" ] || trap "perf probe -q -d 'probe_sandbox_bench:*'; echo kept $tmp" EXIT
trap 'exit 130' INT TERM
perf probe -q -d 'probe_sandbox_bench:*' 2>/dev/null || true
for f in $FUNCS; do
	perf probe -q -x "$BIN" -a "$f" -a "${f}_ret=$f%return"
done

set -- perf record -q -o "$tmp/perf.data" -e 'probe_sandbox_bench:*' -e sched:sched_process_exec \
	-e syscalls:sys_enter_pivot_root -e syscalls:sys_exit_seccomp -- \
	"$BIN" --only split --rounds 1 --iterations "$N" --warmup 2 --alive "$ALIVE" --no-cli --no-bwrap --no-crun
echo "+ $*" >&2
"$@" >"$tmp/bench.out"
grep -E '^(create|exec_first|destroy) ' "$tmp/bench.out" >&2 || true
perf script -i "$tmp/perf.data" -F comm,tid,time,event,trace 2>/dev/null >"$tmp/events.txt"

python3 - "$tmp/events.txt" "$N" <<'EOF'
import re, sys, statistics
path, n = sys.argv[1], int(sys.argv[2])
ev = []
for line in open(path):
    m = re.match(r'\s*(\S.*?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)', line)
    if m:
        comm, tid, t, name, rest = m.groups()
        ev.append((float(t) * 1e3, comm.strip(), name.split(':')[-1], rest))
# one sample = from hu_sandbox_create to the return of the first sandbox_exec
samples, cur = [], None
for t, comm, name, rest in ev:
    if name == 'hu_sandbox_create':
        cur = {'_t0': t}
    elif cur is not None:
        key = name.replace('__return', '')
        if name == 'sched_process_exec':
            key = 'exec_init' if 'filename=/dev/fd/' in rest else 'exec_cmd'
        if name.startswith('sys_') and not comm.startswith('memfd:'):
            continue  # the benchmark's own seccomp calls (libseccomp probing at start-up)
        if key not in cur:  # the first occurrence in the sample
            cur[key] = t
        if key == 'sandbox_exec_ret':
            samples.append(cur)
            cur = None
samples = samples[-n:]  # the warm-up's samples come first
phases = [
    ('slot (uid/gid range)', 'hu_slot_acquire', 'hu_slot_acquire_ret'),
    ('sandbox dir + size-capped tmpfs mount', 'hu_slot_acquire_ret', 'hu_cgroup_create'),
    ('cgroups (4 hierarchies, limits)', 'hu_cgroup_create', 'hu_cgroup_create_ret'),
    ('bind the init socket', 'hu_sbx_bind_init_socket', 'hu_sbx_bind_init_socket_ret'),
    ('clone (6 namespaces) until hutch-init execs, pidfile', 'hu_sbx_start_child', 'hu_cgroup_attach'),
    ('cgroup attach, uid/gid maps, network', 'hu_cgroup_attach', 'idmapped_tree'),
    ('idmapped template + /usr trees, hand-over', 'idmapped_tree', 'hu_sbx_start_child_ret'),
    ('setup stage: mounts until pivot_root', 'hu_sbx_start_child_ret', 'sys_enter_pivot_root'),
    ('setup stage: pivot, detach, caps, seccomp', 'sys_enter_pivot_root', 'sys_exit_seccomp'),
    ('setup stage: verdict to the caller', 'sys_exit_seccomp', 'hu_sandbox_create_finish'),
    ('create total', '_t0', 'hu_sandbox_create_ret'),
    ('first exec: connect to hutch-init', 'sandbox_exec', 'hu_init_connect_ret'),
    ('first exec: SPAWN until the command execs', 'hu_init_connect_ret', 'exec_cmd'),
    ('first exec: command runs, EXIT back', 'exec_cmd', 'sandbox_exec_ret'),
    ('first exec total', 'sandbox_exec', 'sandbox_exec_ret'),
    ('create + first exec', '_t0', 'sandbox_exec_ret'),
]
print(f'{len(samples)} samples; ms: median p90')
for label, a, b in phases:
    xs = sorted(s[b] - s[a] for s in samples if a in s and b in s)
    if not xs:
        print(f'  {label:45s} (no events)')
        continue
    p90 = xs[min(len(xs) - 1, int(0.9 * len(xs)))]
    print(f'  {label:45s} {statistics.median(xs):7.2f} {p90:7.2f}')
EOF
