// The code interpreter through the unmodified @e2b/code-interpreter SDK against hutch serve, which provisions
// code-interpreter-v1 itself (docs/benchmarks.md "The code interpreter"). As root, with the Debian tree cached:
//   node bench/interp_bench.mjs [--rounds 3] [--n 15] [--cells 100] [--alive 30] [--build build]
//                               [--cache /var/cache/hutch-interpreter] [--only warm,cold,cell,memory]
//                               [--baseline DIR] [--peer-build DIR] [--pids N]
// Two daemons in the same run, each on its own data dir (each copies the cached tree into its template first):
// one with a warm pool of the template (pool.size.code-interpreter-v1 = 2: the server and its Python kernel
// started ahead), one without. Figures, all in ms (median, p95, p99 over all samples, plus per-round medians):
//   warm_create_first  Sandbox.create() + the first runCode('1+1'), taken from the pool (a ready pool sandbox is
//                      waited for before each, outside the timing)
//   warm_create        the Sandbox.create() part alone
//   cold_create_first  the same with no pool (the sandbox, its server and its kernel are started for the create)
//   host_import        the baseline: `python3 -c 'import ipykernel'` on the host, alternating with the cold creates
//   cell               runCode('x += 1') on a warm context, one after another (--cells per round)
//   cell_host          the same SDK calls against the same server on the host's loopback (no sandbox, no
//                      ingress), the peer in the same run
// --baseline DIR: another copy of the recipe (images/code-interpreter of an older tree, say) as the peer in the
// same run: a third daemon provisions its template (interpreter.recipe = DIR), and the cell and memory figures are
// taken of it too, alternating with this tree's in every round (suffix _base; cell_host_base: DIR's server on
// the host's loopback).
// --peer-build DIR: another build of hutch (main's, say) as the peer in the same run: a daemon of it with the same
// recipe and pool, whose cell figure is taken alternating with this build's in every round (suffix _peer).
// --pids N sets the daemons' default_pids (100 running sandboxes do not fit kernel.pid_max 32768 at the default
// 512, docs/operations.md); with --alive above 40 the memory budget is raised to admit them (memory_overcommit).
// --alive N sandboxes are then kept idle with one Python context each (their default context, one cell run):
//   the memory each holds is given as PSS (shared pages divided among their users: /proc/<pid>/smaps_rollup of
//   every process in its memory cgroup), the cgroup's charge (memory.usage_in_bytes, page cache included), and
//   the fall of the host's MemAvailable divided by N.
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import { arg, now, sleep, stats, recorder, harness } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const sdkDir = resolve(here, '..', 'images', 'code-interpreter', 'tests', 'sdk')
const { Sandbox } = createRequire(join(sdkDir, 'package.json'))('@e2b/code-interpreter')
const rounds = Number(arg('rounds', 3)), n = Number(arg('n', 15)), cells = Number(arg('cells', 100))
const alive = Number(arg('alive', 30)), cache = arg('cache', '/var/cache/hutch-interpreter')
const only = (arg('only', 'warm,cold,cell,memory')).split(',')
const baseline = arg('baseline', null) ? resolve(arg('baseline')) : null
const pids = arg('pids', null)
const peerBin = arg('peer-build', null) ? resolve(arg('peer-build'), 'hutch') : null
const NAME = 'code-interpreter-v1'
const { startDaemon, useDaemon, api } = await harness()
const rec = recorder()

async function daemonWithTemplate(pool, recipe = null, bin = undefined) {
  const work = mkdtempSync(join(tmpdir(), 'hutch-interp-bench-'))
  writeFileSync(join(work, 'hutch.conf'), `pool.size.${NAME} = ${pool}\nmax_sandboxes = ${alive + 10}\n` +
    (recipe ? `interpreter.recipe = ${recipe}\n` : '') + (pids ? `default_pids = ${pids}\n` : '') +
    (alive > 40 ? 'admission.memory_overcommit = 8\n' : ''))
  const d = await startDaemon(['--config', join(work, 'hutch.conf'), '--interpreter-cache-dir', cache],
    null, { HUTCH_INTERPRETER_PROVISION: '1' }, bin)
  d.work = work
  for (let t = 0; ; t++) {
    const tpl = ((await api(d, 'GET', '/templates')).json || []).find((x) => x.templateID === NAME)
    if (tpl?.provision?.state === 'ready') break
    if (tpl?.provision?.state === 'failed' || t > 6000) throw new Error(`no template: ${JSON.stringify(tpl)}`)
    await sleep(100)
  }
  return d
}

async function poolReady(d) {
  const m = (await api(d, 'GET', '/metrics')).text
  return /hutch_pool_sandboxes\{template="code-interpreter-v1",state="ready"\} [1-9]/.test(m)
}

function use(d) {
  useDaemon({ apiKey: d.apiKey, url: d.url })
}

async function createFirst(d, r, prefix) {
  use(d)
  const t0 = now()
  const sbx = await Sandbox.create()
  const t1 = now()
  const e = await sbx.runCode('1+1')
  const t2 = now()
  if (e.text !== '2') throw new Error(`1+1 gave ${JSON.stringify(e)}`)
  rec.add(`${prefix}_create_first`, t2 - t0, r)
  rec.add(`${prefix}_create`, t1 - t0, r)
  return sbx
}

// the server on the host's loopback, as images/code-interpreter/tests/sdk/sdk.test.mjs runs it
async function hostServer(recipe = resolve(here, '..', 'images', 'code-interpreter')) {
  const home = mkdtempSync(join(tmpdir(), 'hutch-interp-bench-host-'))
  const proc = spawn('/usr/bin/python3', [join(recipe, 'server', 'server.py'),
    '--host', '127.0.0.1', '--port', '0'], { cwd: home, env: { ...process.env, HOME: home }, stdio: ['ignore', 'pipe', 'ignore'] })
  const port = await new Promise((res, rej) => {
    createInterface({ input: proc.stdout }).on('line', (l) => { const m = l.match(/listening on .*:(\d+)$/); if (m) res(Number(m[1])) })
    proc.on('exit', (c) => rej(new Error(`host server exited ${c}`)))
  })
  const sbx = new Sandbox({ sandboxId: 'host', sandboxUrl: `http://127.0.0.1:${port}`, apiKey: 'e2b_' + '0'.repeat(40), envdAccessToken: 't' })
  return { sbx, stop: () => { proc.kill('SIGTERM'); rmSync(home, { recursive: true, force: true }) } }
}

async function cellRound(sbx, key, r) {
  await sbx.runCode('x = 0')
  for (let i = 0; i < 5; i++) await sbx.runCode('x += 1') // warm-up
  for (let i = 0; i < cells; i++) {
    const t0 = now()
    await sbx.runCode('x += 1')
    rec.add(key, now() - t0, r)
  }
}

const memAvailable = () => Number(readFileSync('/proc/meminfo', 'utf8').match(/MemAvailable:\s+(\d+)/)[1]) * 1024

// which of a sandbox's processes a command line is
const role = (cmd) => cmd.includes('server.py') ? 'server' : /ipykernel|kernel_launcher/.test(cmd) ? 'kernel' : 'other'

function sandboxMemory(d, id) {
  const cg = `/sys/fs/cgroup/memory/${d.env.HUTCH_CGROUP_PARENT}/${id}`
  let pss = 0
  const by = { server: 0, kernel: 0, other: 0 }
  for (const pid of readFileSync(`${cg}/cgroup.procs`, 'utf8').split('\n').filter(Boolean)) {
    try {
      const p = Number(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+)/m)[1]) * 1024
      pss += p
      by[role(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))] += p
    } catch {}
  }
  return { pss, by, charged: Number(readFileSync(`${cg}/memory.usage_in_bytes`, 'utf8')) }
}

const warm = only.includes('warm') || only.includes('cell') || only.includes('memory') ? await daemonWithTemplate(2) : null
const cold = only.includes('cold') ? await daemonWithTemplate(0) : null
const host = only.includes('cell') ? await hostServer() : null
const base = baseline && (only.includes('cell') || only.includes('memory')) ? await daemonWithTemplate(2, baseline) : null
const hostBase = baseline && only.includes('cell') ? await hostServer(baseline) : null
const peer = peerBin && only.includes('cell') ? await daemonWithTemplate(2, null, peerBin) : null
try {
  for (let r = 0; r < rounds; r++) {
    if (warm && only.includes('warm')) {
      for (let i = 0; i < n; i++) {
        while (!(await poolReady(warm))) await sleep(50)
        await sleep(200) // the refill of the previous take has settled
        await (await createFirst(warm, r, 'warm')).kill()
      }
    }
    if (cold) {
      for (let i = 0; i < n; i++) {
        await (await createFirst(cold, r, 'cold')).kill()
        const t0 = now()
        const p = spawnSync('/usr/bin/python3', ['-c', 'import ipykernel'])
        if (p.status !== 0) throw new Error('python3 -c import ipykernel failed')
        rec.add('host_import', now() - t0, r)
      }
    }
    if (warm && only.includes('cell')) {
      // this tree's, the baseline's and the peer build's, in an order that alternates from round to round
      const sides = [[warm, '', host], [base, '_base', hostBase], [peer, '_peer', null]].filter((x) => x[0])
      for (const [d, suffix, h] of r % 2 ? sides.reverse() : sides) {
        while (!(await poolReady(d))) await sleep(50)
        use(d)
        const sbx = await Sandbox.create()
        await cellRound(sbx, 'cell' + suffix, r)
        await sbx.kill()
        if (h) await cellRound(h.sbx, 'cell_host' + suffix, r)
      }
    }
  }
  const out = {}
  for (const [k, v] of Object.entries(rec.figures)) {
    const s = stats(v)
    out[k] = { n: s.n, median: +s.median.toFixed(2), p95: +s.p95.toFixed(2), p99: +s.p99.toFixed(2),
      rounds: rec.perRound[k].map((x) => +stats(x).median.toFixed(2)) }
  }
  console.log(JSON.stringify(out)) // what is measured so far, should the memory part fail
  for (const [d, key] of [[warm, 'memory'], [base, 'memory_base']]) {
    if (!d || !only.includes('memory')) continue
    use(d)
    const before = memAvailable()
    const held = []
    for (let i = 0; i < alive; i++) {
      const sbx = await Sandbox.create({ timeoutMs: 900_000 })
      await sbx.runCode('1+1')
      held.push(sbx)
    }
    await sleep(5000)
    const after = memAvailable()
    const per = held.map((s) => sandboxMemory(d, s.sandboxId))
    const mib = (b) => +(b / 1048576).toFixed(1)
    out[key] = {
      alive, pss_median_mib: mib(stats(per.map((p) => p.pss)).median),
      charged_median_mib: mib(stats(per.map((p) => p.charged)).median),
      pss_median_mib_by_process: Object.fromEntries(['server', 'kernel', 'other'].map((k) =>
        [k, mib(stats(per.map((p) => p.by[k])).median)])),
      memavailable_drop_per_sandbox_mib: mib((before - after) / alive),
      load_average: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    }
    for (const s of held) await s.kill()
    console.log(JSON.stringify({ [key]: out[key] }))
  }
  console.log(JSON.stringify(out, null, 1))
} finally {
  host?.stop()
  hostBase?.stop()
  for (const d of [warm, cold, base, peer]) {
    if (!d) continue
    await d.stop()
    rmSync(d.work, { recursive: true, force: true })
  }
}
