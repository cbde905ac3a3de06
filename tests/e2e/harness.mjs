// Starts a real `hutch serve` for a test file and points the unmodified e2b
// SDK at it. Each test file gets its own daemon, data dir, run dir and
// cgroup parent; everything is removed when the file's tests end.
import { spawn, execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, readFileSync, writeFileSync, existsSync, appendFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CommandExitError } from 'e2b'

const here = dirname(fileURLToPath(import.meta.url))
export const root = resolve(here, '..', '..')
export const build = process.env.HUTCH_BUILD || 'build'
// an absolute build dir (a copy of another commit, for A/B benchmarks) or one relative to the tree
export const hutchBin = resolve(root, build, 'hutch')

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer()
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => res(port))
    })
    srv.on('error', rej)
  })
}

// E2E_LEDGER (set by run.sh): a file where every daemon a test file starts
// is written down as it starts, so that run.sh can sweep what a file left
// when it never reached stop(): a file killed by its timeout, or a test that
// threw before its cleanup. Its daemons outlive it, with their mounts (the
// layers image) and cgroups; sweep.mjs ends them.
function ledger(entry) {
  if (process.env.E2E_LEDGER) appendFileSync(process.env.E2E_LEDGER, JSON.stringify(entry) + '\n')
}

// Resolves with the first match of pattern in the process's output. The
// listeners go when it settles: left attached, each would scan the whole
// (growing) output again at every chunk the daemon prints, for as long as it
// runs, and a long benchmark's client would spend more CPU on that than on
// its requests.
// `seen` is output already read (by an earlier waitFor).
function waitFor(proc, pattern, ms, seen = '') {
  return new Promise((res, rej) => {
    if (seen.match(pattern)) return res({ match: seen.match(pattern), output: seen })
    const settle = (fn, v) => {
      clearTimeout(timer)
      proc.stdout.off('data', onData)
      proc.stderr.off('data', onData)
      proc.off('exit', onExit)
      fn(v)
    }
    const timer = setTimeout(() => settle(rej, new Error(`daemon did not print ${pattern} in ${ms} ms; output: ${seen}`)), ms)
    const onData = (chunk) => {
      seen += chunk.toString()
      const m = seen.match(pattern)
      if (m) settle(res, { match: m, output: seen })
    }
    const onExit = (code) => settle(rej, new Error(`daemon exited with ${code}; output: ${seen}`))
    proc.stdout.on('data', onData)
    proc.stderr.on('data', onData)
    proc.on('exit', onExit)
  })
}

// E2E_STORE=postgresql (run.sh starts the server, tests/pg.sh): every
// daemon gets a database of its own on that server, made here and dropped
// when it stops, and finds it through `store = ...` in a config file (or
// the --store flag when the test brings a config file of its own).
const pgDir = process.env.E2E_STORE === 'postgresql' ? process.env.HUTCH_TEST_PG_DIR : null
let pgCount = 0

function pgDatabase(base) {
  const saved = join(base, 'store-uri')
  if (existsSync(saved)) return readFileSync(saved, 'utf8').trim()
  const name = `hutch_e2e_${process.pid}_${++pgCount}`
  const uri = execFileSync(join(root, 'tests', 'pg.sh'), ['createdb', pgDir, name]).toString().trim()
  writeFileSync(saved, uri + '\n')
  return uri
}

function pgDrop(base) {
  const saved = join(base, 'store-uri')
  if (!pgDir || !existsSync(saved)) return
  const name = readFileSync(saved, 'utf8').trim().match(/^postgresql:\/\/\/([^?]+)/)[1]
  try { execFileSync(join(root, 'tests', 'pg.sh'), ['dropdb', pgDir, name]) } catch {}
}

function storeArgs(base, extraArgs) {
  if (!pgDir || extraArgs.includes('--store')) return []
  const uri = pgDatabase(base)
  if (extraArgs.includes('--config')) return ['--store', uri]
  const conf = join(base, 'store.conf')
  writeFileSync(conf, `store = ${uri}\n`)
  return ['--config', conf]
}

// E2E_VIA_NODE=1 (with E2E_STORE=postgresql): every daemon gets a second
// node on its database, which takes no placements (draining), and the
// test talks to that one: every call is forwarded to the daemon the test
// started (docs/operations.md "Any node answers any call"). `url` is the
// forwarding node's; pid, log and restart stay the daemon's.
export const viaNode = pgDir && process.env.E2E_VIA_NODE === '1'

function viaNodeArgs(base) {
  if (!viaNode) return []
  const secret = join(base, 'cluster-secret')
  if (!existsSync(secret)) writeFileSync(secret, 'e2e-cluster-secret-' + process.pid + '\n', { mode: 0o600 })
  return ['--cluster-secret-file', secret, '--slots-dir', join(base, 'slots')]
}

// The daemon's own settings that the nodes of a cluster share (lifecycle
// windows, signed_url.scan): the forwarding node is started with them too,
// as every node of a real cluster runs one configuration. Not its store,
// config file (paths, budgets of its own) or pool.
function sharedArgs(extraArgs) {
  const own = new Set(['--store', '--config', '--pool-size', '--node-name', '--slots-dir', '--cluster-secret-file'])
  const out = []
  for (let i = 0; i < extraArgs.length; i++) {
    if (own.has(extraArgs[i])) i++
    else out.push(extraArgs[i])
  }
  return out
}

async function startForwarder(base, ownerArgs, env) {
  const port = await freePort()
  const name = `fwd-${port}`
  const proc = spawn(hutchBin, ['serve', '--listen', '127.0.0.1', '--port', String(port), '--pool-size', '0',
    ...ownerArgs, '--node-name', name], {
    env: { ...env, HUTCH_DATA_DIR: join(base, 'fwd-data'), HUTCH_RUN_DIR: join(base, 'fwd-run'),
      HUTCH_CGROUP_PARENT: env.HUTCH_CGROUP_PARENT + '-fwd' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  ledger({ base, pid: proc.pid, cgroupParent: env.HUTCH_CGROUP_PARENT + '-fwd' })
  await waitFor(proc, /listening on/, 20000)
  execFileSync('psql', [pgDatabase(base), '-Atc', `UPDATE nodes SET draining = true WHERE name = '${name}'`])
  const exited = new Promise((res) => proc.on('exit', () => res()))
  return { url: `http://127.0.0.1:${port}`, async stop() { proc.kill('SIGTERM'); await exited } }
}

// startDaemon() -> { url, nodeUrl, apiKey, pid, base, storeArgs, stop(), restart() }
// `reuse` ({ base, apiKey }) starts on the dirs of an earlier daemon (a
// restart); the key is not printed again then. { apiKey } alone: new dirs,
// a store that has keys already (another node of a cluster).
// `extraEnv` adds variables (HUTCH_FAULT for the fault-injection tests).
// `bin`: another build's hutch (a benchmark's A/B peer, bench/interp_bench.mjs).
export async function startDaemon(extraArgs = [], reuse = null, extraEnv = {}, bin = hutchBin) {
  const base = reuse?.base ?? mkdtempSync(join(tmpdir(), 'hutch-e2e-'))
  const port = await freePort()
  const env = {
    ...process.env,
    HUTCH_DATA_DIR: join(base, 'data'),
    HUTCH_RUN_DIR: join(base, 'run'),
    HUTCH_CGROUP_PARENT: 'hutch-e2e-' + process.pid,
    // a smaller quarantine than ASan's 256 MiB default: the tests that bound
    // the daemon's RSS measure what it holds, not what ASan keeps of what it
    // freed (streamed uploads free as much as they move; a log stream to a
    // slow client frees several times the bytes it sends, and since answers
    // are written to the socket as they are made it sends more before the
    // kernel's buffers fill: with 64 MiB of quarantine that test's daemon grew
    // 75 MiB in the sanitizer build, 3.7 MiB with none, 0.5 MiB in the plain one).
    // 16 MiB, as tests/security/http_bodies.py uses for the same reason
    ASAN_OPTIONS: process.env.ASAN_OPTIONS || 'detect_leaks=1:quarantine_size_mb=16',
    // a test daemon provisions the code interpreter template only when its test asks (provision.h)
    HUTCH_INTERPRETER_PROVISION: process.env.HUTCH_INTERPRETER_PROVISION || '0',
    ...extraEnv,
  }
  // no warm pool unless a test asks (pool.test.mjs): the other files count
  // cgroups, directories and budgets that a pool would change under them
  const poolArgs = extraArgs.includes('--pool-size') ? [] : ['--pool-size', process.env.E2E_POOL_SIZE || '0']
  const ownerArgs = [...storeArgs(base, extraArgs), ...viaNodeArgs(base)]
  const proc = spawn(bin, ['serve', '--listen', '127.0.0.1', '--port', String(port), ...poolArgs,
    ...ownerArgs, ...extraArgs], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  ledger({ base, pid: proc.pid, cgroupParent: env.HUTCH_CGROUP_PARENT })
  let log = ''
  proc.stdout.on('data', (c) => { log += c })
  proc.stderr.on('data', (c) => { log += c })
  let apiKey = reuse?.apiKey
  let early = ''
  if (!apiKey) {
    const w = await waitFor(proc, /((?:e2b|hutch)_[0-9a-f]{16,})/, 20000)
    apiKey = w.match[1]
    early = w.output
  }
  await waitFor(proc, /listening on/, 20000, early).catch(() => {})
  const fwd = !viaNode ? null
    : reuse?.fwd ?? await startForwarder(base, ['--store', pgDatabase(base), ...viaNodeArgs(base), ...sharedArgs(extraArgs)], env)
  const url = fwd ? fwd.url : `http://127.0.0.1:${port}`
  useDaemon({ apiKey, url })
  const exited = new Promise((res) => proc.on('exit', (code, signal) => res({ code, signal })))
  const self = {
    url,
    // the daemon's own address: what is per node (GET /metrics) is read
    // there, also when `url` is a forwarding node's (E2E_VIA_NODE)
    nodeUrl: `http://127.0.0.1:${port}`,
    apiKey,
    pid: proc.pid,
    base,
    env,
    // what a CLI verb needs to reach this daemon's store (`keys create`)
    storeArgs: !pgDir ? [] : extraArgs.includes('--store') ? ['--store', extraArgs[extraArgs.indexOf('--store') + 1]]
      : ['--store', pgDatabase(base)],
    log: () => log,
    async stop() {
      if (fwd) await fwd.stop()
      proc.kill('SIGTERM')
      const t = setTimeout(() => proc.kill('SIGKILL'), 10000)
      const st = await exited
      clearTimeout(t)
      pgDrop(base)
      cleanupDir(base, env.HUTCH_CGROUP_PARENT)
      if (fwd) cleanupDir(base, env.HUTCH_CGROUP_PARENT + '-fwd')
      return st
    },
    // a new daemon on the same data and run dirs (after this one died)
    async restart(args = extraArgs, env = {}) {
      await exited
      return startDaemon(args, { base, apiKey, fwd }, env, bin)
    },
    exited,
  }
  return self
}

// Kill whatever a test left behind (sandboxes outlive the daemon by design,
// so that a restarted daemon can adopt them), then remove the directories.
export function cleanupDir(base, cgroupParent) {
  const script = `
    for g in /sys/fs/cgroup/*/${cgroupParent}/* /sys/fs/cgroup/${cgroupParent}/*; do
      [ -d "$g" ] || continue
      if [ -e "$g/cgroup.kill" ]; then echo 1 > "$g/cgroup.kill"; else for p in $(cat "$g/cgroup.procs"); do kill -9 $p; done; fi
    done 2>/dev/null
    sleep 0.3
    for g in /sys/fs/cgroup/*/${cgroupParent}/* /sys/fs/cgroup/${cgroupParent}/*; do rmdir "$g"; done 2>/dev/null
    for g in /sys/fs/cgroup/*/${cgroupParent} /sys/fs/cgroup/${cgroupParent}; do rmdir "$g"; done 2>/dev/null
    grep -o " ${base}/[^ ]*" /proc/self/mountinfo | sort -r | while read m; do umount -l "$m"; done 2>/dev/null
    true`
  try { execFileSync('sh', ['-c', script]) } catch {}
  rmSync(base, { recursive: true, force: true })
}

// Point the SDK's environment at daemon d (startDaemon does it for the newest
// daemon; a test that started a second one points back at the first).
export function useDaemon(d) {
  process.env.E2B_API_KEY = d.apiKey
  process.env.E2B_API_URL = d.url
  process.env.E2B_SANDBOX_URL = d.url
  process.env.E2B_DOMAIN = '127.0.0.1'
}

export async function api(d, method, path, body, headers = {}) {
  const res = await fetch(d.url + path, {
    method,
    headers: { 'X-API-KEY': d.apiKey, 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  let json
  try { json = text ? JSON.parse(text) : undefined } catch { json = undefined }
  return { status: res.status, headers: res.headers, text, json }
}

export function rssKiB(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(s.match(/VmRSS:\s+(\d+)/)[1])
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// `total` bytes of a repeating pattern, as a ReadableStream, hashed as it goes.
export function patternStream(total, hash) {
  const block = Buffer.alloc(1 << 20)
  for (let i = 0; i < block.length; i += 32) createHash('sha256').update(String(i)).digest().copy(block, i)
  let sent = 0
  return new ReadableStream({
    pull(ctrl) {
      if (sent >= total) return ctrl.close()
      const n = Math.min(block.length, total - sent)
      const piece = block.subarray(0, n)
      hash.update(piece)
      sent += n
      ctrl.enqueue(new Uint8Array(piece))
    },
  })
}

// Sample a process's RSS (KiB) every 50 ms while `work` runs: the peak growth.
export async function peakGrowth(pid, work) {
  const before = rssKiB(pid)
  let peak = before
  const timer = setInterval(() => { peak = Math.max(peak, rssKiB(pid)) }, 50)
  try {
    await work()
  } finally {
    clearInterval(timer)
  }
  return peak - before
}

// A minimal foreign root: bash and a few tools with the libraries they load
// (nothing from the host's /usr is bound into a built template's sandboxes).
const mkroot = `set -e
r=$1
mkdir -p $r/usr/bin $r/usr/lib $r/usr/lib64 $r/etc
ln -s usr/bin $r/bin; ln -s usr/lib $r/lib; ln -s usr/lib64 $r/lib64
for b in bash cat env id ls sh readlink sleep; do
  p=/usr/bin/$b; [ -e $p ] || p=/bin/$b
  cp -L $p $r/usr/bin/$b
  for l in $(ldd $p | grep -o '/[^ ]*'); do
    dir=$(dirname $l); dir=\${dir#/usr}; mkdir -p $r/usr$dir; cp -L $l $r/usr$dir/ 2>/dev/null || true
  done
done`

export function makeRoot(dir) {
  execFileSync('sh', ['-c', mkroot, 'mkroot', dir])
}

// Run a command in a sandbox; a non-zero exit is a result, not an exception.
export async function runResult(sbx, cmd, opts = {}) {
  try {
    const r = await sbx.commands.run(cmd, opts)
    return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }
  } catch (e) {
    if (e instanceof CommandExitError) return { exitCode: e.exitCode, stdout: e.stdout, stderr: e.stderr }
    throw e
  }
}
