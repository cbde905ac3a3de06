// hutch side by side with runsc (gVisor, ptrace platform), podman (crun), Docker (runc), bwrap,
// crun and the host, on the work an agent platform does. Started by bench/peers.sh (root, in a
// mount namespace of its own, with --dir and --tag); see docs/benchmarks.md.
//
//   --rounds R     rounds (default 3); figures alternate between the peers inside every round
//   --n N          samples per round of the light figures (true, python, exec, pause; default 5)
//   --n-heavy N    samples per round of the tasks (analysis, files, syscalls; default 1)
//   --heavy-rounds K  run the tasks in the first K rounds only (default: every round)
//   --idle N       idle sandboxes per peer for the memory figure (default 50)
//   --only LIST    figures: true,python,exec,pause,memory,analysis,syscalls,files
//   --peers LIST   host,hutch,hutch-durable,hutch-api,bwrap,crun,runsc,podman,docker
//   --budget-s S   stop starting new work after S seconds (default 840); the output says PARTIAL
//   --json FILE    default build/bench/peers.json
//
// One root filesystem serves every peer: mount points, the usrmerge symlinks and a small /etc;
// /usr is the host's, bind-mounted read-only (hutch's base template maps the host's /usr too).
// runsc and crun run the same OCI bundles (root.path is that directory); podman and Docker run
// an image imported from a tar of it, with the same /usr bind mount. The task data is
// bind-mounted read-only at /data, and every task works in /tmp, a tmpfs in every peer (the
// host's is a tmpfs that bench/peers.sh mounts; hutch's is `hutch run --tmpfs /tmp:2G` for the
// tasks, the OCI peers' size). hutch-durable runs the tasks as hutch does by default, in /tmp
// on the sandbox's disk layer (btrfs under overlay), which snapshots keep. Every sample is one
// fresh sandbox: create, run the command, destroy; exec, pause and memory use kept sandboxes.
import { spawn, execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync, readFileSync, readdirSync, rmSync, copyFileSync, mkdtempSync, openSync, closeSync } from 'node:fs'
import { resolve, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cpus } from 'node:os'
import { arg, now, sleep, stats, recorder, bwrapArgs, harness, envdRun } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const repo = resolve(here, '..')
const T = arg('dir')
const TAG = arg('tag')
if (!T || !TAG) {
  console.error('peers.mjs: start it through bench/peers.sh')
  process.exit(2)
}
const rounds = Number(arg('rounds', 3))
const nLight = Number(arg('n', 5))
const nHeavy = Number(arg('n-heavy', 1))
const heavyRounds = Number(arg('heavy-rounds', rounds))
const idleCount = Number(arg('idle', 50))
const only = arg('only', 'true,python,exec,pause,memory,analysis,syscalls,files').split(',')
const wanted = arg('peers', 'host,hutch,hutch-durable,hutch-api,bwrap,crun,runsc,podman,docker').split(',')
const budgetMs = Number(arg('budget-s', 840)) * 1000
const jsonPath = resolve(repo, arg('json', 'build/bench/peers.json'))
const build = arg('build', 'build')
const t0 = now()
let partial = false
const overBudget = () => {
  if (now() - t0 > budgetMs) partial = true
  return partial
}
const log = (...a) => console.error(`[${((now() - t0) / 1000).toFixed(0)}s]`, ...a)

// ---- processes ---------------------------------------------------------------------------
// cmd args; resolves with its output, rejects (with its stderr) unless it exits 0 in time
function sh(cmd, args, { timeout = 300000, env } = {}) {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env })
    let out = ''
    let err = ''
    p.stdout.on('data', (c) => { if (out.length < 65536) out += c })
    p.stderr.on('data', (c) => { if (err.length < 65536) err += c })
    const t = setTimeout(() => p.kill('SIGKILL'), timeout)
    p.on('error', (e) => { clearTimeout(t); rej(e) })
    p.on('exit', (code, sig) => {
      clearTimeout(t)
      if (code === 0) res(out)
      else rej(new Error(`${cmd} ${args.join(' ').slice(0, 300)}: exit ${code ?? sig}: ${err.trim().slice(-800)}`))
    })
  })
}
const version = (cmd, args) => { try { return execFileSync(cmd, args, { encoding: 'utf8' }).split('\n')[0].trim() } catch { return null } }

// ---- the data and the tasks --------------------------------------------------------------
const DATA = join(T, 'data')
const ROOTFS = join(T, 'rootfs')
const WORKLOAD = "import time; b = bytearray(200 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1e6)"
const SHELL = ['/bin/sh', '-c', 'sleep infinity; :']
// argv inside a sandbox (/data, /tmp); the host's is rewritten to the run's directories
const TASKS = {
  true: ['/usr/bin/true'],
  python: ['/usr/bin/python3', '-c', 'print(1)'],
  analysis: ['/usr/bin/python3', '/data/analysis.py', '/data', '/tmp'],
  files: ['/bin/sh', '/data/files.sh', '/data', '/tmp'],
  syscalls: ['/usr/bin/python3', '/data/syscalls.py', '/data'],
}
const HEAVY = new Set(['analysis', 'files', 'syscalls'])

function makeData() {
  mkdirSync(DATA, { recursive: true })
  writeFileSync(join(DATA, 'analysis.py'), `# the data-analysis task: pandas reads a 50 MB CSV, groups it, openpyxl writes XLSX
import sys
import pandas as pd
data, work = sys.argv[1], sys.argv[2]
df = pd.read_csv(data + '/sales.csv', parse_dates=['day'])
g = df.groupby(['region', 'product']).agg(units=('units', 'sum'), mean_price=('price', 'mean'),
                                          first=('day', 'min'), last=('day', 'max'))
monthly = df.groupby([df['day'].dt.to_period('M').astype(str), 'region'])['units'].sum().unstack()
with pd.ExcelWriter(work + '/report.xlsx', engine='openpyxl') as w:
    g.to_excel(w, sheet_name='by product')
    monthly.to_excel(w, sheet_name='monthly')
`)
  writeFileSync(join(DATA, 'files.sh'), `# the file-heavy task: unpack 20,000 files, lstat each, commit them all to a new git repository
set -eu
cd "$2"
mkdir tree
cd tree
tar -xf "$1/files.tar"
# lstat every file through perl: coreutils' stat uses statx, whose flags runsc (2022-12) refuses (EINVAL)
find . -type f -exec perl -e 'for (@ARGV) { my @s = lstat $_ or die "$_: $!\\n" }' {} +
# no automatic gc or maintenance: git may start it detached after the commit, writing into .git
# while the sample's work dir is being removed
git init -q
git -c gc.auto=0 -c maintenance.auto=false add -A
git -c gc.auto=0 -c maintenance.auto=false -c user.name=bench -c user.email=bench@localhost commit -q -m files
`)
  writeFileSync(join(DATA, 'syscalls.py'), `# the syscall-heavy task: 100,000 open/read/close, then 1,000 fork+exec+wait of /usr/bin/true
import os, sys
p = sys.argv[1] + '/small.txt'
for _ in range(100000):
    fd = os.open(p, os.O_RDONLY)
    os.read(fd, 256)
    os.close(fd)
for _ in range(1000):
    pid = os.fork()
    if pid == 0:
        try:
            os.execv('/usr/bin/true', ['true'])
        finally:
            os._exit(127)
    _, st = os.waitpid(pid, 0)
    if st != 0:
        sys.exit('true failed')
`)
  writeFileSync(join(DATA, 'small.txt'), 'x'.repeat(200) + '\n')
  // the 50 MB CSV and the 20,000-file archive, made by the host's python (deterministic)
  execFileSync('/usr/bin/python3', ['-c', `
import numpy as np, pandas as pd, tarfile, io, sys
d = sys.argv[1]
rng = np.random.default_rng(20)
n = 1_150_000
df = pd.DataFrame({
    'day': pd.Timestamp('2025-01-01') + pd.to_timedelta(rng.integers(0, 365, n), unit='D'),
    'region': rng.choice(['north', 'south', 'east', 'west', 'centre', 'islands'], n),
    'product': np.char.add('sku-', rng.integers(0, 500, n).astype(str)),
    'units': rng.integers(1, 100, n),
    'price': rng.random(n).round(4) * 100,
    'note': rng.choice(['', 'promo', 'return', 'bulk order'], n),
})
df.to_csv(d + '/sales.csv', index=False)
with tarfile.open(d + '/files.tar', 'w') as t:
    for i in range(20000):
        b = (f'file {i}\\n' * (1 + i % 7)).encode()
        ti = tarfile.TarInfo(f'd{i // 100:03d}/f{i:05d}.txt')
        ti.size = len(b)
        ti.mtime = 1700000000
        t.addfile(ti, io.BytesIO(b))
`, DATA], { stdio: 'inherit' })
}

// hutch's own base template (its /etc, mount points and usrmerge links; /usr is a mount point), copied:
// the root filesystem every peer starts from
function makeRootfs() {
  execFileSync('cp', ['-a', join(hutchEnv.HUTCH_DATA_DIR, 'templates', 'base', 'rootfs'), ROOTFS])
  mkdirSync(join(ROOTFS, 'data'), { recursive: true })
  execFileSync('tar', ['-C', ROOTFS, '-cf', join(T, 'rootfs.tar'), '.'])
}

// One OCI bundle per command, for crun and runsc alike (root.path is the shared root filesystem).
// The isolation bench/sandbox_bench's crun bundles have: user (root mapped to an unprivileged
// range), pid, ipc, uts, mount, network (loopback only) and cgroup namespaces, no capabilities,
// noNewPrivileges, memory and pids limits; no seccomp profile (crun's default is none).
let bundleSeq = 0
function bundle(argv, { userns = true } = {}) {
  const dir = join(T, 'bundles', String(bundleSeq++))
  mkdirSync(dir, { recursive: true })
  const ns = ['pid', 'ipc', 'uts', 'mount', 'network', 'cgroup'].map((type) => ({ type }))
  const linux = {
    namespaces: userns ? [{ type: 'user' }, ...ns] : ns,
    resources: { memory: { limit: 2 * 1024 ** 3 }, pids: { limit: 1024 } },
    cgroupsPath: `/${TAG}-oci/b${bundleSeq}`,
  }
  if (userns) {
    linux.uidMappings = [{ containerID: 0, hostID: 1600000, size: 65536 }]
    linux.gidMappings = [{ containerID: 0, hostID: 1600000, size: 65536 }]
  }
  const opts = ['nosuid', 'nodev']
  writeFileSync(join(dir, 'config.json'), JSON.stringify({
    ociVersion: '1.0.0',
    process: {
      terminal: false, user: { uid: 0, gid: 0 }, args: argv, cwd: '/tmp',
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'HOME=/root'],
      capabilities: { bounding: [], effective: [], permitted: [] }, noNewPrivileges: true,
    },
    root: { path: ROOTFS, readonly: true },
    hostname: 'sandbox',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'mode=755', 'size=65536k'] },
      { destination: '/usr', type: 'bind', source: '/usr', options: ['rbind', 'ro', ...opts] },
      { destination: '/data', type: 'bind', source: DATA, options: ['rbind', 'ro', ...opts] },
      { destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: [...opts, 'mode=1777', 'size=2g'] },
      { destination: '/home', type: 'tmpfs', source: 'tmpfs', options: opts },
    ],
    linux,
  }, null, 1))
  return dir
}

// ---- the peers ---------------------------------------------------------------------------
// oneshot(task) -> [cmd, args, destroy?]: one create + run + destroy as one process (the host's
// destroy, removing its work dir, is a function run after it and timed with it)
// keep(argv) -> handle { exec(argv), pause(), resume(), destroy() }: a sandbox left running
const peers = {}
let seq = 0
const uid = (p) => `${TAG}-${p}-${seq++}`

// a kept host or bwrap process started in a group of its own: the group is killed, not only its
// leader (the shell's child would outlive it; so would bwrap's sandbox)
async function killGroup(p) {
  try { process.kill(-p.pid, 'SIGKILL') } catch {}
  if (p.exitCode === null && p.signalCode === null) await new Promise((r) => p.on('exit', r))
}

peers.host = {
  oneshot(task) {
    const work = mkdtempSync(join(T, 'hostwork', 'w'))
    const argv = TASKS[task].map((a) => (a === '/tmp' ? work : a.replace(/^\/data/, DATA)))
    // its destroy: `rm -rf`, what a user would run (node's rmSync of the file task's 40,000 files
    // took twice as long)
    return ['/usr/bin/env', ['-C', work, ...argv], () => execFileSync('rm', ['-rf', '--', work])]
  },
  async keep(argv) {
    const p = spawn(argv[0], argv.slice(1), { stdio: 'ignore', detached: true })
    return { exec: (a) => sh(a[0], a.slice(1)), destroy: async () => killGroup(p) }
  },
}

const HBIN = join(T, 'bin')
const hutchEnv = {
  ...process.env, HUTCH_DATA_DIR: join(T, 'hutch', 'data'), HUTCH_RUN_DIR: join(T, 'hutch', 'run'),
  HUTCH_CGROUP_PARENT: `${TAG}-hutch`, HUTCH_INIT: join(HBIN, 'hutch-init'),
}
// `hutch run` as a whole process, as a user of the CLI would start it; no CPU limit below the
// host's CPU count (hutch's default is 1 CPU; the other peers get none)
const hutchRun = (task, extra) => [join(HBIN, 'hutch'), ['run', '--memory', '2G', '--pids', '1024', '--cpus', String(cpus().length),
  '--cwd', '/tmp', '--volume', `${DATA}:/data:ro`, ...extra, '--', ...TASKS[task]]]
// the tasks in a tmpfs /tmp, the configuration of every other peer
peers.hutch = {
  oneshot: (task) => hutchRun(task, HEAVY.has(task) ? ['--tmpfs', '/tmp:2G'] : []),
  env: hutchEnv,
}
// the tasks in hutch's default /tmp, on the durable disk layer (tasks only: elsewhere it is hutch)
peers['hutch-durable'] = {
  oneshot: (task) => hutchRun(task, []),
  env: hutchEnv,
  tasksOnly: true,
}

// hutch serve: kept sandboxes and create + first command through the HTTP API
let daemon = null
let api = null
async function hutchApi(method, path, body, status) {
  const r = await api(daemon, method, path, body)
  if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} ${r.text}`)
  return r.json
}
peers['hutch-api'] = {
  async setup() {
    const h = await harness()
    api = h.api
    const conf = join(T, 'hutchd.conf')
    // memory and pid budgets that admit the idle phase's sandboxes (200 idle shells at 512 pids each
    // would be 102,400 pids promised; this host's pid_max is 32768)
    writeFileSync(conf, 'admission.memory_overcommit = 100\nadmission.pids_overcommit = 8\n')
    process.env.TMPDIR = T // the daemon's data and run dirs
    daemon = await h.startDaemon(['--config', conf], null, { HUTCH_CGROUP_PARENT: `${TAG}-hutchd` })
  },
  // POST /v2/sandboxes + the command through envd's process.Start + DELETE
  async run(task) {
    const s = await hutchApi('POST', '/v2/sandboxes', { templateID: 'base', timeout: 600 }, 201)
    await envdRun(daemon, s.sandboxID, s.envdAccessToken, TASKS[task])
    await hutchApi('DELETE', `/sandboxes/${s.sandboxID}`, undefined, 204)
  },
  async keep(argv) {
    const s = await hutchApi('POST', '/v2/sandboxes', { templateID: 'base', timeout: 3600 }, 201)
    envdRun(daemon, s.sandboxID, s.envdAccessToken, argv).catch(() => {}) // runs until destroyed
    return {
      exec: (a) => envdRun(daemon, s.sandboxID, s.envdAccessToken, a),
      pause: () => hutchApi('POST', `/sandboxes/${s.sandboxID}/pause`, {}, 204),
      resume: () => hutchApi('POST', `/v2/sandboxes/${s.sandboxID}/connect`, { timeout: 3600 }, 201),
      destroy: () => hutchApi('DELETE', `/sandboxes/${s.sandboxID}`, undefined, 204),
    }
  },
  async teardown() { if (daemon) await daemon.stop() },
}

const bwrapFor = (argv) => bwrapArgs('--ro-bind', join(ROOTFS, 'etc'), '/etc', '--ro-bind', DATA, '/data', '--chdir', '/tmp', ...argv)
peers.bwrap = {
  oneshot: (task) => ['bwrap', bwrapFor(TASKS[task])],
  async keep(argv) {
    const p = spawn('bwrap', bwrapFor(argv), { stdio: 'ignore', detached: true })
    return { destroy: async () => killGroup(p) }
  },
}

// crun and runsc: the same bundles
function ociPeer(cmd, globals) {
  const bundles = {}
  const b = (task) => (bundles[task] ??= bundle(TASKS[task]))
  return {
    oneshot: (task) => [cmd, [...globals, 'run', '--bundle', b(task), uid(cmd)]],
    async keep(argv) {
      const id = uid(cmd)
      await sh(cmd, [...globals, 'run', '--detach', '--bundle', bundle(argv), id])
      return {
        exec: (a) => sh(cmd, [...globals, 'exec', id, ...a]),
        pause: () => sh(cmd, [...globals, 'pause', id]),
        resume: () => sh(cmd, [...globals, 'resume', id]),
        destroy: () => sh(cmd, [...globals, 'delete', '--force', id]),
      }
    },
  }
}
peers.crun = ociPeer('crun', ['--root', join(T, 'crun')])
peers.runsc = ociPeer('runsc', ['--root', join(T, 'runsc'), '--platform=ptrace', '--network=none'])

// podman and Docker: the image imported from the same root filesystem, the same mounts and limits
function enginePeer(cmd, globals, cgParent, pauseCmd, resumeCmd, extra = []) {
  const common = [...extra, '--network', 'none', '--memory', '2g', '--pids-limit', '1024', '--cgroup-parent', cgParent,
    '-v', '/usr:/usr:ro', '-v', `${DATA}:/data:ro`, '--tmpfs', '/tmp:rw,size=2g', '-w', '/tmp']
  return {
    oneshot: (task) => [cmd, [...globals, 'run', '--rm', ...common, 'hutch-peers:bench', ...TASKS[task]]],
    async keep(argv) {
      const id = uid('c')
      await sh(cmd, [...globals, 'run', '-d', '--name', id, ...common, 'hutch-peers:bench', ...argv])
      return {
        exec: (a) => sh(cmd, [...globals, 'exec', id, ...a]),
        pause: () => sh(cmd, [...globals, pauseCmd, id]),
        resume: () => sh(cmd, [...globals, resumeCmd, id]),
        destroy: () => sh(cmd, [...globals, 'rm', '-f', id]),
      }
    },
  }
}
const PODMAN = ['--root', join(T, 'podman', 'root'), '--runroot', join(T, 'podman', 'run'), '--tmpdir',
  join(T, 'podman', 'tmp'), '--storage-driver', 'overlay', '--cgroup-manager', 'cgroupfs', '--events-backend', 'file',
  '--runtime', 'crun', '--log-level', 'error']
// podman sets RLIMIT_NOFILE and RLIMIT_NPROC to its own defaults, which its runtime cannot set where
// they are above the caller's hard limits and it lacks CAP_SYS_RESOURCE: the caller's hard limit
// for files, and podman's own fallback (32768) for processes (not enforced for root anyway)
const nofile = readFileSync('/proc/self/limits', 'utf8').match(/Max open files\s+\S+\s+(\S+)/)[1]
const PODMAN_LIMITS = [...(nofile === 'unlimited' ? [] : ['--ulimit', `nofile=${nofile}:${nofile}`]),
  '--ulimit', 'nproc=32768:32768']
peers.podman = {
  ...enginePeer('podman', PODMAN, `/${TAG}-podman`, 'pause', 'unpause', PODMAN_LIMITS),
  setup: () => sh('podman', [...PODMAN, 'import', join(T, 'rootfs.tar'), 'hutch-peers:bench']),
  teardown: async () => {
    await sh('podman', [...PODMAN, 'rm', '-af', '-t', '0']).catch((e) => log(e.message))
    await sh('podman', [...PODMAN, 'system', 'reset', '-f']).catch((e) => log(e.message))
  },
}

const DOCKER = ['-H', `unix://${T}/docker.sock`]
let dockerd = null
peers.docker = {
  ...enginePeer('/usr/bin/docker', DOCKER, `/${TAG}-docker`, 'pause', 'unpause'),
  // a dockerd of its own: private socket, data and exec roots, and nothing on the host's network
  async setup() {
    mkdirSync(join(T, 'docker'), { recursive: true })
    writeFileSync(join(T, 'docker', 'daemon.json'), '{}\n')
    const logFd = openSync(join(T, 'docker', 'dockerd.log'), 'w')
    dockerd = spawn('/usr/sbin/dockerd', ['--data-root', join(T, 'docker', 'data'), '--exec-root', join(T, 'docker', 'exec'),
      '--pidfile', join(T, 'docker', 'dockerd.pid'), '-H', `unix://${T}/docker.sock`, '--config-file',
      join(T, 'docker', 'daemon.json'), '--iptables=false', '--ip-forward=false', '--ip-masq=false', '--bridge=none',
      '--userland-proxy=false', '--storage-driver=overlay2', '--exec-opt', 'native.cgroupdriver=cgroupfs',
      '--log-level=warn'], { stdio: ['ignore', logFd, logFd] })
    closeSync(logFd)
    for (let i = 0; ; i++) {
      try { await sh('/usr/bin/docker', [...DOCKER, 'version'], { timeout: 5000 }); break } catch (e) {
        if (i > 60 || dockerd.exitCode !== null) throw new Error('dockerd did not start: ' + readFileSync(join(T, 'docker', 'dockerd.log'), 'utf8').slice(-2000))
        await sleep(500)
      }
    }
    await sh('/usr/bin/docker', [...DOCKER, 'import', join(T, 'rootfs.tar'), 'hutch-peers:bench'])
  },
  async teardown() {
    if (!dockerd) return
    const ids = (await sh('/usr/bin/docker', [...DOCKER, 'ps', '-aq']).catch(() => '')).split('\n').filter(Boolean)
    if (ids.length) await sh('/usr/bin/docker', [...DOCKER, 'rm', '-f', ...ids]).catch((e) => log(e.message))
    await sh('/usr/bin/docker', [...DOCKER, 'rmi', '-f', 'hutch-peers:bench']).catch((e) => log(e.message))
    if (dockerd.exitCode === null) {
      const exited = new Promise((r) => dockerd.on('exit', r))
      dockerd.kill('SIGTERM')
      const t = setTimeout(() => dockerd.kill('SIGKILL'), 15000)
      await exited
      clearTimeout(t)
    }
  },
}

// ---- measuring ---------------------------------------------------------------------------
const { figures, perRound, add } = recorder()
const memory = {}
const failures = []
const active = []
const has = (p, k) => typeof peers[p][k] === 'function'

async function oneshot(p, task) {
  if (p === 'hutch-api') {
    const t = now()
    await peers[p].run(task)
    return now() - t
  }
  // a sample is create, run and destroy: the host's work dir is made and removed inside it too,
  // as every sandbox's files are (hutch run and podman/Docker --rm exit once they are gone)
  const t = now()
  const [cmd, args, done] = peers[p].oneshot(task)
  await sh(cmd, args, { env: peers[p].env, timeout: 600000 })
  done?.()
  return now() - t
}

// every peer once per iteration, in an order that turns, so drift hits all alike
const rotate = (xs, i) => xs.map((_, j) => xs[(i + j) % xs.length])
async function sample(name, list, fn, r, count) {
  for (let i = 0; i < count && !overBudget(); i++) {
    for (const p of rotate(list, i + r)) {
      try {
        add(`${name}/${p}`, await fn(p), r)
      } catch (e) {
        failures.push(`${name}/${p}: ${e.message}`)
        log(`FAILED ${name}/${p}: ${e.message}`)
        list.splice(list.indexOf(p), 1) // a peer that fails a figure is not retried in this run
      }
    }
  }
}

async function withKept(list, argv, fn) {
  const kept = {}
  for (const p of list) {
    try { kept[p] = await peers[p].keep(argv) } catch (e) {
      failures.push(`keep/${p}: ${e.message}`)
      log(`FAILED keep/${p}: ${e.message}`)
    }
  }
  try { await fn(kept) } finally {
    for (const k of Object.values(kept)) await k.destroy().catch((e) => log(e.message))
  }
}

const memAvailableNow = () => Number(readFileSync('/proc/meminfo', 'utf8').match(/MemAvailable:\s+(\d+)/)[1]) / 1024
// the median of 5 readings 200 ms apart (other work on a shared host moves it)
async function memAvailableMiB() {
  const xs = []
  for (let i = 0; i < 5; i++) { xs.push(memAvailableNow()); await sleep(200) }
  return stats(xs).median
}

// The proportional set size of the processes a phase added that belong to the run: in one of its
// cgroups, naming its directory, or carrying its variable (see bench/peers.sh). Other work on a
// shared host moves MemAvailable; this counts the sandboxes' own processes (their helpers: shims,
// conmon, runsc's sentry and gofer) and nothing else, but not kernel memory or tmpfs pages.
const pids = () => new Set(readdirSync('/proc').filter((d) => /^[0-9]+$/.test(d)))
function runPssMiB(before) {
  let kib = 0
  for (const pid of pids()) {
    if (before.has(pid) || pid === String(process.pid)) continue
    try {
      const cg = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
      const ours = cg.includes(TAG) || readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(T + '/') ||
        readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HUTCH_PEERS_RUN=${T}`)
      if (ours) kib += Number(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+)/m)?.[1] ?? 0)
    } catch {} // gone meanwhile
  }
  return kib / 1024
}

async function measureMemory(list) {
  for (const p of list) {
    if (overBudget()) return
    await sleep(2000)
    const before = await memAvailableMiB()
    const beforePids = pids()
    const kept = []
    try {
      let t = now()
      for (let i = 0; i < idleCount; i++) kept.push(await peers[p].keep(SHELL))
      const createS = (now() - t) / 1000
      await sleep(3000)
      const after = await memAvailableMiB()
      const pss = runPssMiB(beforePids)
      memory[p] = { sandboxes: kept.length, held_mib: before - after, mib_per_sandbox: (before - after) / kept.length,
        pss_mib: pss, pss_mib_per_sandbox: pss / kept.length, create_s: createS }
      log(`memory ${p}: ${memory[p].mib_per_sandbox.toFixed(1)} MiB (MemAvailable) / ` +
        `${memory[p].pss_mib_per_sandbox.toFixed(2)} MiB (PSS) per idle sandbox (${kept.length} alive)`)
    } catch (e) {
      failures.push(`memory/${p}: ${e.message}`)
      log(`FAILED memory/${p}: ${e.message}`)
    } finally {
      const t = now()
      for (const k of kept) await k.destroy().catch((e) => log(e.message))
      if (memory[p]) memory[p].destroy_s = (now() - t) / 1000
    }
  }
}

let interrupted = false
async function teardownAll() {
  for (const p of active.reverse()) if (has(p, 'teardown')) await peers[p].teardown().catch((e) => log(`teardown ${p}: ${e.message}`))
}
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(s, () => {
    if (interrupted) return
    interrupted = true
    partial = true
    log(`${s}: cleaning up`)
    teardownAll().finally(() => process.exit(130))
  })
}

try {
  log('making the data (50 MB CSV, 20,000-file archive) and the root filesystem')
  makeData()
  mkdirSync(HBIN, { recursive: true })
  for (const f of ['hutch', 'hutch-full', 'hutch-init']) copyFileSync(join(repo, build, f), join(HBIN, f))
  execFileSync('chmod', ['755', join(HBIN, 'hutch'), join(HBIN, 'hutch-init')])
  // hutch run builds its base template once (not part of any sample); the peers' root is a copy
  await sh(join(HBIN, 'hutch'), ['run', '--', '/usr/bin/true'], { env: hutchEnv })
  makeRootfs()
  for (const p of wanted) {
    if (!peers[p]) throw new Error(`unknown peer ${p}`)
    try {
      if (has(p, 'setup')) await peers[p].setup()
      active.push(p)
    } catch (e) {
      failures.push(`setup/${p}: ${e.message}`)
      log(`SKIPPED ${p}: ${e.message}`)
    }
  }
  log(`peers: ${active.join(' ')}`)
  const lst = (k) => active.filter((p) => (k === 'oneshot' ? has(p, 'oneshot') || p === 'hutch-api' : has(p, 'keep')))

  if (only.includes('memory')) await measureMemory(lst('keep'))
  for (let r = 0; r < rounds && !overBudget(); r++) {
    log(`round ${r + 1}/${rounds}`)
    for (const task of ['true', 'python']) {
      if (only.includes(task)) await sample(task, lst('oneshot').filter((p) => !peers[p].tasksOnly), (p) => oneshot(p, task), r, nLight)
    }
    if (only.includes('exec')) {
      await withKept(lst('keep').filter((p) => p !== 'bwrap'), SHELL, (kept) =>
        sample('exec', Object.keys(kept), async (p) => {
          const t = now()
          await kept[p].exec(TASKS.true)
          return now() - t
        }, r, nLight * 3))
    }
    if (only.includes('pause')) {
      await withKept(lst('keep').filter((p) => has(p, 'keep') && !['host', 'bwrap'].includes(p)), ['/usr/bin/python3', '-c', WORKLOAD],
        async (kept) => {
          await sleep(4000) // the 200 MB become resident (runsc's ptrace platform is slower at it)
          for (let i = 0; i < nLight && !overBudget(); i++) {
            for (const p of rotate(Object.keys(kept), i + r)) {
              try {
                let t = now()
                await kept[p].pause()
                add(`pause/${p}`, now() - t, r)
                await sleep(50)
                t = now()
                await kept[p].resume()
                add(`resume/${p}`, now() - t, r)
              } catch (e) {
                failures.push(`pause/${p}: ${e.message}`)
                log(`FAILED pause/${p}: ${e.message}`)
                delete kept[p]
              }
            }
          }
        })
    }
    for (const task of ['analysis', 'syscalls', 'files']) {
      if (only.includes(task) && r < heavyRounds) await sample(task, lst('oneshot').filter((p) => p !== 'hutch-api'), (p) => oneshot(p, task), r, nHeavy)
    }
  }
} finally {
  if (!interrupted) await teardownAll()
}

// ---- results -----------------------------------------------------------------------------
const out = {
  date: new Date().toISOString(), partial, rounds, n: nLight, n_heavy: nHeavy, idle: idleCount, elapsed_s: (now() - t0) / 1000,
  versions: {
    kernel: version('uname', ['-r']), runsc: version('runsc', ['--version']), podman: version('podman', ['--version']),
    docker: version('/usr/sbin/dockerd', ['--version']), runc: version('runc', ['--version']), crun: version('crun', ['--version']),
    bwrap: version('bwrap', ['--version']), python: version('/usr/bin/python3', ['--version']),
  },
  figures: {}, memory, ratios: {}, failures,
}
for (const [k, xs] of Object.entries(figures)) {
  const [fig, p] = k.split('/')
  out.figures[fig] ??= {}
  out.figures[fig][p] = { ...stats(xs), round_medians: perRound[k].filter(Boolean).map((x) => stats(x).median) }
}
// per figure: each peer's median (and p99) over the host's, and hutch's over each peer's
for (const [fig, byPeer] of Object.entries(out.figures)) {
  out.ratios[fig] = {}
  const h = byPeer.hutch ?? byPeer['hutch-api']
  for (const [p, s] of Object.entries(byPeer)) {
    out.ratios[fig][p] = {
      to_host: byPeer.host ? s.median / byPeer.host.median : null,
      p99_to_host: byPeer.host ? s.p99 / byPeer.host.p99 : null,
      hutch_over: h ? h.median / s.median : null,
    }
  }
}
mkdirSync(dirname(jsonPath), { recursive: true })
writeFileSync(jsonPath, JSON.stringify(out, null, 2))
console.log(`peers: ${rounds} rounds, n=${nLight} (tasks ${nHeavy}) per round${partial ? ' — PARTIAL (budget or interrupt)' : ''}; ms median / p99 [x host] {hutch / peer}`)
for (const [fig, byPeer] of Object.entries(out.figures)) {
  console.log(`  ${fig}`)
  for (const [p, s] of Object.entries(byPeer)) {
    const rt = out.ratios[fig][p]
    console.log(`    ${p.padEnd(10)} ${s.median.toFixed(1).padStart(9)} / ${s.p99.toFixed(1).padStart(9)}` +
      `${rt.to_host ? ` [${rt.to_host.toFixed(2)}x]` : ''}${rt.hutch_over ? ` {${rt.hutch_over.toFixed(2)}}` : ''}  n=${s.n}`)
  }
}
for (const [p, m] of Object.entries(memory)) {
  console.log(`  memory ${p.padEnd(10)} ${m.mib_per_sandbox.toFixed(1)} MiB (MemAvailable), ${m.pss_mib_per_sandbox.toFixed(2)} MiB (PSS) per idle sandbox (${m.sandboxes} alive)`)
}
if (failures.length) console.log(`failures:\n  ${failures.join('\n  ')}`)
console.log(`JSON written to ${jsonPath}`)
rmSync(join(T, 'bundles'), { recursive: true, force: true })
process.exit(failures.length ? 1 : 0)
