#!/usr/bin/env python3
"""The file-heavy task of bench/peers.sh, reduced: which file system costs what, in one invocation.

    sudo bench/files_fs.py [--rounds 3] [--only tmpfs,ext4,btrfs,...] [--hutch build/hutch] [--json FILE]

The task is peers.mjs's: unpack a 20,000-file tar (tiny files), `find -exec` an lstat of each
(perl), `git init && git add -A && git commit`. Each sample runs it in a fresh directory of one
"place", timed step by step (wall), with the CPU time of the whole task (user + system of it and
its children, from wait4). Places alternate inside every round, in an order that turns each round.

Places (all made here, under one temporary directory on the file system of /var/tmp, and removed
at the end; the btrfs ones are images on a loop device with direct I/O, as hutch's layers.img):

  tmpfs          a tmpfs (the host's row of bench/peers.sh; every peer's /tmp)
  ext4           a directory on /var/tmp's file system (ext4 on this host)
  btrfs          a subvolume of a btrfs image mounted as hutch mounts layers.img
                 (noatime,discard=async), simple quotas, a 4 GiB limit on the subvolume
  btrfs-noquota  the same without quotas
  btrfs-nodatasum  the same as btrfs, mounted with nodatasum (no data checksums)
  ovl-btrfs      an overlay (empty lower dir, userxattr) whose upper dir is in the btrfs subvolume:
                 a hutch sandbox's /tmp without the sandbox
  ovl-btrfs-volatile  the same with overlay's `volatile`
  ovl-tmpfs      an overlay whose upper dir is on a tmpfs
  hutch-tmp      `hutch run --cpus 2 --memory 2G` doing the task in its /tmp (with --hutch)
  hutch-tmpfs    the same in its /tmp made a tmpfs by `--tmpfs /tmp:2G` (with --hutch)
  hutch-shm      the same in the sandbox's /dev/shm, a tmpfs (with --hutch)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import io
import fcntl
import statistics
import struct
import tempfile
import time

TASK = r'''set -eu
cd "$2"
mkdir tree
cd tree
t() { date +%s%N; }
a=$(t)
tar -xf "$1/files.tar"
b=$(t)
find . -type f -exec perl -e 'for (@ARGV) { my @s = lstat $_ or die "$_: $!\n" }' {} +
c=$(t)
git init -q
git -c gc.auto=0 -c maintenance.auto=false add -A
d=$(t)
git -c gc.auto=0 -c maintenance.auto=false -c user.name=bench -c user.email=bench@localhost commit -q -m files
e=$(t)
echo "steps $a $b $c $d $e"
'''
STEPS = ['tar', 'lstat', 'git add', 'commit']


def sh(*argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout.strip()


def make_data(d):
    with open(f'{d}/files.sh', 'w') as f:
        f.write(TASK)
    with tarfile.open(f'{d}/files.tar', 'w') as t:
        for i in range(20000):
            b = (f'file {i}\n' * (1 + i % 7)).encode()
            ti = tarfile.TarInfo(f'd{i // 100:03d}/f{i:05d}.txt')
            ti.size = len(b)
            ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(b))


class Places:
    def __init__(self, T):
        self.T = T
        self.mounts = []
        self.loops = []

    def mount(self, *argv):
        sh('mount', *argv)
        self.mounts.append(argv[-1])

    def btrfs(self, name, opts, quota):
        img = f'{self.T}/{name}.img'
        with open(img, 'wb') as f:
            f.truncate(8 << 30)
        dev = sh('losetup', '--direct-io=on', '--find', '--show', img)
        self.loops.append(dev)
        sh('mkfs.btrfs', '-q', dev)
        mnt = f'{self.T}/{name}'
        os.mkdir(mnt)
        self.mount('-t', 'btrfs', '-o', opts, dev, mnt)
        if quota:
            # simple quotas, as hutch enables them (BTRFS_IOC_QUOTA_CTL, ENABLE_SIMPLE_QUOTA; older
            # btrfs-progs have no --simple)
            fd = os.open(mnt, os.O_RDONLY)
            try:
                fcntl.ioctl(fd, 0xc0109428, struct.pack('QQ', 4, 0))
            finally:
                os.close(fd)
        sh('btrfs', 'subvolume', 'create', f'{mnt}/layer')
        if quota:
            sh('btrfs', 'qgroup', 'limit', '4G', f'{mnt}/layer')
        return f'{mnt}/layer'

    def overlay(self, name, upper_base, extra=''):
        for d in ('lower', 'upper', 'work'):
            os.makedirs(f'{upper_base}/{name}-{d}')
        mnt = f'{self.T}/{name}'
        os.mkdir(mnt)
        opts = f'lowerdir={upper_base}/{name}-lower,upperdir={upper_base}/{name}-upper,workdir={upper_base}/{name}-work,userxattr'
        self.mount('-t', 'overlay', '-o', opts + extra, 'overlay', mnt)
        return mnt

    def close(self):
        for m in reversed(self.mounts):
            subprocess.run(['umount', m], check=False)
        for d in self.loops:
            subprocess.run(['losetup', '-d', d], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--only', default='tmpfs,ext4,btrfs,btrfs-noquota,btrfs-nodatasum,ovl-btrfs,ovl-btrfs-volatile,ovl-tmpfs')
    ap.add_argument('--hutch', help='a build\'s hutch: adds hutch-tmp, hutch-tmpfs and hutch-shm')
    ap.add_argument('--json')
    a = ap.parse_args()
    names = a.only.split(',')
    if a.hutch:
        names += ['hutch-tmp', 'hutch-tmpfs', 'hutch-shm']
    T = tempfile.mkdtemp(prefix='hutch-filesfs.', dir='/var/tmp')
    os.chmod(T, 0o755)
    data = f'{T}/data'
    os.mkdir(data)
    make_data(data)
    p = Places(T)
    where = {}
    hutch_env = None
    shm = None
    try:
        for n in names:
            if n == 'tmpfs':
                os.mkdir(f'{T}/tmpfs')
                p.mount('-t', 'tmpfs', '-o', 'size=4g', 'tmpfs', f'{T}/tmpfs')
                where[n] = f'{T}/tmpfs'
            elif n == 'ext4':
                os.mkdir(f'{T}/ext4')
                where[n] = f'{T}/ext4'
            elif n == 'btrfs':
                where[n] = where.get('btrfs-base') or p.btrfs('btrfs', 'noatime,discard=async', True)
                where['btrfs-base'] = where[n]
            elif n == 'btrfs-noquota':
                where[n] = p.btrfs('btrfs-noquota', 'noatime,discard=async', False)
            elif n == 'btrfs-nodatasum':
                where[n] = p.btrfs('btrfs-nodatasum', 'noatime,discard=async,nodatasum', True)
            elif n.startswith('ovl-btrfs'):
                if 'btrfs-base' not in where:
                    where['btrfs-base'] = where.get('btrfs') or p.btrfs('btrfs', 'noatime,discard=async', True)
                base = where['btrfs-base']
                where[n] = p.overlay(n, base, ',volatile' if n.endswith('volatile') else '')
            elif n == 'ovl-tmpfs':
                os.mkdir(f'{T}/ovltmp')
                p.mount('-t', 'tmpfs', '-o', 'size=4g', 'tmpfs', f'{T}/ovltmp')
                where[n] = p.overlay(n, f'{T}/ovltmp')
            elif n in ('hutch-tmp', 'hutch-tmpfs', 'hutch-shm'):
                where[n] = '/dev/shm' if n == 'hutch-shm' else '/tmp'
                shm = shm or tempfile.mkdtemp(prefix='hutch-filesfs.', dir='/dev/shm')
                hutch_env = dict(os.environ, HUTCH_DATA_DIR=f'{T}/hutch-data', HUTCH_RUN_DIR=f'{shm}/run',
                                 HUTCH_CGROUP_PARENT='hutch-filesfs',
                                 HUTCH_INIT=os.path.join(os.path.dirname(os.path.abspath(a.hutch)), 'hutch-init'))
            else:
                raise SystemExit(f'unknown place {n}')
        if hutch_env:
            # the base template and the layers image are made by the first run: not a sample
            subprocess.run([os.path.abspath(a.hutch), 'run', '--', 'true'], env=hutch_env, check=True)
        res = {n: {'wall': [], 'cpu': [], 'steps': {s: [] for s in STEPS}} for n in names}
        for r in range(a.rounds):
            turn = r % len(names)
            for n in names[turn:] + names[:turn]:
                if n.startswith('hutch'):
                    argv = [os.path.abspath(a.hutch), 'run', '--cpus', str(os.cpu_count()), '--memory', '2G',
                            '--pids', '1024', '--volume', f'{data}:/data:ro',
                            *(['--tmpfs', '/tmp:2G'] if n == 'hutch-tmpfs' else []), '--', 'sh', '-c',
                            f'mkdir {where[n]}/w && sh /data/files.sh /data {where[n]}/w']
                    env = hutch_env
                else:
                    w = f'{where[n]}/w{r}'
                    os.mkdir(w)
                    argv = ['/bin/sh', f'{data}/files.sh', data, w]
                    env = dict(os.environ)
                t0 = time.monotonic()
                proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
                out = proc.stdout.read()
                _, status, ru = os.wait4(proc.pid, 0)
                wall = (time.monotonic() - t0) * 1000
                if os.waitstatus_to_exitcode(status) != 0:
                    raise SystemExit(f'{n}: the task failed ({out})')
                ts = [int(x) for x in out.split('steps ')[1].split()]
                res[n]['wall'].append(wall)
                res[n]['cpu'].append((ru.ru_utime + ru.ru_stime) * 1000)
                for i, s in enumerate(STEPS):
                    res[n]['steps'][s].append((ts[i + 1] - ts[i]) / 1e6)
                if not n.startswith('hutch'):
                    shutil.rmtree(w)
                    subprocess.run(['sync', '-f', where[n]], check=False)
    finally:
        if hutch_env:
            subprocess.run(['sh', '-c', f'for p in /proc/[0-9]*; do tr "\\0" "\\n" 2>/dev/null <"$p/environ" | grep -q "^HUTCH_DATA_DIR={T}/" '
                            f'  2>/dev/null && [ "$(cat $p/comm)" = hutch-layers ] && kill ${{p#/proc/}}; done; true'], check=False)
            for _ in range(100):
                if f' {T}/hutch-data' not in open('/proc/self/mountinfo').read():
                    break
                time.sleep(0.1)
        p.close()
        shutil.rmtree(T, ignore_errors=True)
        if shm:
            shutil.rmtree(shm, ignore_errors=True)
        # the (empty) cgroup parents the hutch runs made
        for d in ['/sys/fs/cgroup/hutch-filesfs'] + [f'/sys/fs/cgroup/{c}/hutch-filesfs' for c in os.listdir('/sys/fs/cgroup')]:
            try:
                os.rmdir(d)
            except OSError:
                pass
    med = statistics.median
    print(f'# {a.rounds} samples per place (medians, ms); load average {os.getloadavg()[0]:.1f}')
    print('| place | task (wall) | CPU | ' + ' | '.join(STEPS) + ' | × tmpfs |')
    print('|---|---:|---:|' + '---:|' * len(STEPS) + '---:|')
    base = med(res['tmpfs']['wall']) if 'tmpfs' in res else None
    for n in names:
        x = res[n]
        print(f'| {n} | {med(x["wall"]):.0f} | {med(x["cpu"]):.0f} | ' +
              ' | '.join(f'{med(x["steps"][s]):.0f}' for s in STEPS) +
              (f' | {med(x["wall"]) / base:.2f}× |' if base else ' | |'))
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(res, f)


if __name__ == '__main__':
    sys.exit(main())
