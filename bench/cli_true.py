#!/usr/bin/env python3
"""`hutch run -- true` as a whole process, against bwrap and the host, in one invocation.

    sudo bench/cli_true.py [--rounds 5] [--n 40] [--hutch build/hutch] [--json FILE]
                           [--variant NAME=ENV,...] [--baseline OTHER/build/hutch]

Each sample is one process started with posix_spawn and reaped with wait4: its wall time
(spawn to reap) and its CPU time (user + system of it and every descendant it waited for:
hutch-init and the command for hutch, bwrap's sandbox for bwrap). The figures alternate inside
every iteration, in an order that turns each time, so that the machine's load falls on all of
them alike. Medians and p99 (nearest rank) over every sample, and each round's median.

By default hutch runs in private data and run dirs (one pair per hutch figure; the run dirs in
/dev/shm, a tmpfs as /run is on a host) (made here, removed at the end, the layers
image unmounted) and the cgroup parent hutch-clibench. `--variant linger0=HUTCH_LAYERS_LINGER=0`
adds a hutch figure with extra environment (repeatable; the default adds that one; `--variant ''`
adds none).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BWRAP = ['bwrap', '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net',
         '--unshare-cgroup', '--die-with-parent', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin',
         '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev',
         '--tmpfs', '/tmp', '/bin/true']


def sample(argv, env):
    t0 = time.monotonic()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_OPEN, 0, '/dev/null', os.O_RDONLY, 0)])
    _, status, ru = os.wait4(pid, 0)
    wall = (time.monotonic() - t0) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f'{argv[0]} exited {os.waitstatus_to_exitcode(status)}')
    return wall, (ru.ru_utime + ru.ru_stime) * 1000


def q(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--n', type=int, default=40)
    ap.add_argument('--warmup', type=int, default=5)
    ap.add_argument('--hutch', default='build/hutch')
    ap.add_argument('--variant', action='append', default=None)
    ap.add_argument('--baseline', help='another build\'s hutch (its hutch-init beside it): figure "hutch run (baseline)"')
    ap.add_argument('--json')
    a = ap.parse_args()
    hutch = os.path.abspath(a.hutch)
    tmp = tempfile.mkdtemp(prefix='hutch-clibench.')
    # the run dirs on a tmpfs, as /run/hutch is on a host (on ext4 the files every run creates and
    # deletes there cost ~1 ms more)
    shm = tempfile.mkdtemp(prefix='hutch-clibench.', dir='/dev/shm')
    # each hutch figure has data and run dirs of its own: one's layers image is not the other's
    dirs = lambda d, h=hutch: dict(os.environ, HUTCH_DATA_DIR=f'{tmp}/{d}/data', HUTCH_RUN_DIR=f'{shm}/{d}/run',
                          HUTCH_CGROUP_PARENT='hutch-clibench',
                          HUTCH_INIT=os.path.join(os.path.dirname(h), 'hutch-init'))
    figures = {'hutch run': ([hutch, 'run', '--', 'true'], dirs('default'))}
    for v in a.variant if a.variant is not None else ['linger0=HUTCH_LAYERS_LINGER=0']:
        if not v:
            continue  # `--variant ''`: no extra figure
        name, _, kv = v.partition('=')
        env = dirs(name)
        for pair in kv.split(','):
            k, _, val = pair.partition('=')
            env[k] = val
        figures[f'hutch run ({name})'] = ([hutch, 'run', '--', 'true'], env)
    if a.baseline:
        base = os.path.abspath(a.baseline)
        figures['hutch run (baseline)'] = ([base, 'run', '--', 'true'], dirs('baseline', base))
    figures['bwrap'] = ([shutil.which('bwrap')] + BWRAP[1:], dict(os.environ))
    figures['host'] = (['/bin/true'], dict(os.environ))
    names = list(figures)
    wall = {k: [] for k in names}
    cpu = {k: [] for k in names}
    rounds = {k: [] for k in names}
    try:
        for _ in range(a.warmup):
            for k in names:
                sample(*figures[k])
        for r in range(a.rounds):
            rw = {k: [] for k in names}
            for i in range(a.n):
                turn = (r * a.n + i) % len(names)
                for k in names[turn:] + names[:turn]:
                    w, c = sample(*figures[k])
                    wall[k].append(w)
                    cpu[k].append(c)
                    rw[k].append(w)
            for k in names:
                rounds[k].append(q(rw[k], 0.5))
    finally:
        # the keeper of the layers image (if any) decides at once on SIGTERM; then nothing is left
        subprocess.run(['sh', '-c', f'for p in /proc/[0-9]*; do tr "\\0" "\\n" 2>/dev/null <"$p/environ" | grep -q "^HUTCH_DATA_DIR={tmp}/" '
                        f'  2>/dev/null && [ "$(cat $p/comm)" = hutch-layers ] && kill ${{p#/proc/}}; '
                        'done; true'], check=False)
        for _ in range(100):
            if f' {tmp}/' not in open('/proc/self/mountinfo').read():
                break
            time.sleep(0.1)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
        # the (empty) cgroup parents the runs made
        for d in ['/sys/fs/cgroup/hutch-clibench'] + [f'/sys/fs/cgroup/{c}/hutch-clibench' for c in os.listdir('/sys/fs/cgroup')]:
            try:
                os.rmdir(d)
            except OSError:
                pass
    n = len(wall[names[0]])
    print(f'# {n} samples per figure ({a.rounds} rounds x {a.n}); load average {os.getloadavg()[0]:.1f}')
    print('| figure | wall median | wall p99 | CPU median | CPU p99 | round medians (wall) |')
    print('|---|---:|---:|---:|---:|---|')
    for k in names:
        print(f'| {k} | {q(wall[k], .5):.2f} | {q(wall[k], .99):.2f} | {q(cpu[k], .5):.2f} | {q(cpu[k], .99):.2f} | '
              + ' '.join(f'{x:.1f}' for x in rounds[k]) + ' |')
    for k in names[:-2]:
        print(f'{k} / bwrap: wall {q(wall[k], .5) / q(wall["bwrap"], .5):.2f}x (p99 '
              f'{q(wall[k], .99) / q(wall["bwrap"], .99):.2f}x), CPU {q(cpu[k], .5) / q(cpu["bwrap"], .5):.2f}x')
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'wall_ms': wall, 'cpu_ms': cpu, 'round_medians': rounds}, f)


if __name__ == '__main__':
    sys.exit(main())
