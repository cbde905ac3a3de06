// Create speed of hutch serve, with and without a warm pool (docs/benchmarks.md "Create speed and warm pools").
//   node bench/pool_bench.mjs [--rounds 3] [--n 100] [--seconds 10] [--workers 8] [--build build] [--only warm,cold,c50,c50d,tput]
//                             [--rundir shm|disk]
// The daemon's run dir is on tmpfs (/dev/shm) by default, as /run is on most hosts; --rundir disk puts it in the
// system temp dir (ext4 here), where the e2e tests run.
// Figures (median, p95, p99 over all samples, plus per-round medians), all in ms:
//   warm_http      POST /v2/sandboxes answered from the pool (the pool is full before each create)
//   cold_http      POST /v2/sandboxes with pool.size = 0 (the sandbox is built for the request)
//   c50_sdk_pool   each of 50 Sandbox.create() issued at once, pool.size = 50 (sized for the burst)
//   c50_sdk_pool2  the same with the default configuration (pool.size = 2, which grows with demand up to pool.max 64)
//   c50_sdk_cold   the same with pool.size = 0
//   *_info         baseline, same round: 50 Sandbox.getInfo() at once through the same client (the client's and
//                  the HTTP path's share of a burst; the daemon has next to nothing to do)
//   c50_http_pool  50 POST /v2/sandboxes at once through raw HTTP (keep-alive), pool.size = 50;
//                  baseline c50_http_health: 50 GET /health at once, same round
//   c50_sdk_first  the first of the --sdk-warmup (5) unmeasured bursts before c50_sdk_pool: a client whose V8 has not
//                  compiled the SDK's code yet
//   tput_*         sustained create+destroy through HTTP for --seconds with --workers clients: cycles per second,
//                  and the CPU time one cycle costs: the daemon's own thread, the sandbox processes it reaped
//                  (utime, stime, cutime, cstime of /proc/<daemon>/stat), the client (this Node process) and the
//                  whole machine (/proc/stat, which also holds the kernel's deferred cleanup in its workers)
//   floor_fork, floor_namespaces  bench/ns_floor: processes per second created and reaped by --workers workers,
//                  without and with the seven namespaces of a sandbox: the kernel's floor, same run
//   tput_bwrap     --workers parallel loops of bwrap running /bin/true, same run
// Baselines in the same run, alternating with the creates:
//   health_http    GET /health on the same keep-alive connection: the HTTP floor
//   bwrap_true     spawning bwrap (equivalent namespaces) running /bin/true: a comparable sandbox create
import http from 'node:http'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { arg, now, sleep, stats, recorder, run, bwrapArgs as bwrap, harness, sdk } from './lib.mjs'

const { Sandbox } = sdk()
const { startDaemon } = await harness()
const rounds = Number(arg('rounds', 3))
const n = Number(arg('n', 100))
const seconds = Number(arg('seconds', 10))
const workers = Number(arg('workers', 8))
const sdkWarmup = Math.max(1, Number(arg('sdk-warmup', 5)))
const only = arg('only', 'warm,cold,c50,tput').split(',')
const rundir = arg('rundir', 'shm')

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

// One request on a keep-alive connection; resolves with {status, body}.
function request(d, method, path, body) {
  const u = new URL(d.url)
  const data = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((res, rej) => {
    const req = http.request({
      host: u.hostname, port: u.port, method, path, agent,
      headers: { 'X-API-KEY': d.apiKey, ...(data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {}) },
    }, (r) => {
      let b = ''
      r.setEncoding('utf8')
      r.on('data', (c) => { b += c })
      r.on('end', () => res({ status: r.statusCode, body: b }))
    })
    req.on('error', rej)
    req.end(data)
  })
}
async function create(d) {
  const r = await request(d, 'POST', '/v2/sandboxes', { templateID: 'base', timeout: 60, metadata: { bench: '1' } })
  if (r.status !== 201) throw new Error(`create: ${r.status} ${r.body}`)
  return JSON.parse(r.body).sandboxID
}
async function kill(d, id) {
  const r = await request(d, 'DELETE', `/sandboxes/${id}`)
  if (r.status !== 204) throw new Error(`kill: ${r.status} ${r.body}`)
}
// The pool is full: as many ready as configured, or as its demand target
// (pools follow the recent peak of creates, docs/operations.md "Warm pools"),
// nothing being built; a refill admission holds back is waited for 30 s at most.
async function poolReady(d, want) {
  const end = now() + 30000
  for (;;) {
    const m = (await request(d, 'GET', '/metrics')).body
    const get = (st) => Number(m.match(new RegExp(`hutch_pool_sandboxes\\{template="base",state="${st}"\\} (\\d+)`))?.[1] ?? 0)
    const ready = get('ready'), building = get('building'), target = get('target')
    if ((ready >= Math.max(want, target) && building === 0) || now() > end) return
    await sleep(5)
  }
}
const bwrapArgs = bwrap('/bin/true')

const { figures, perRound, add } = recorder()
async function timed(fn) {
  const t = now()
  const v = await fn()
  return [now() - t, v]
}

async function withDaemon(poolSize, fn) {
  const run = rundir === 'shm' ? mkdtempSync('/dev/shm/hutch-bench-') : null
  const d = await startDaemon(['--pool-size', String(poolSize)], null, run ? { HUTCH_RUN_DIR: run } : {})
  try {
    await poolReady(d, poolSize)
    return await fn(d)
  } finally {
    await d.stop()
    // every sandbox was killed, the pool destroyed at SIGTERM: only empty dirs are left
    if (run) execFileSync('rm', ['-rf', '--one-file-system', run])
  }
}

async function latency(kind, poolSize) {
  await withDaemon(poolSize, async (d) => {
    for (let i = 0; i < 5; i++) await kill(d, await create(d)) // warm-up
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < n; i++) {
        await poolReady(d, poolSize)
        const [ms, id] = await timed(() => create(d))
        add(`${kind}_http`, ms, r)
        add('health_http', (await timed(() => request(d, 'GET', '/health')))[0], r)
        if (kind === 'cold') add('bwrap_true', (await timed(() => run('/usr/bin/bwrap', bwrapArgs)))[0], r)
        await kill(d, id)
      }
      process.stderr.write(`${kind}: round ${r + 1}/${rounds} done\n`)
    }
  })
}

// One burst of 50 Sandbox.create() at once; resolves with their latencies
// once all 50 are killed again. Each burst also prints what else the daemon
// did while it ran (a pool build completed, a create served cold) and the
// load average: what a slow burst coincided with.
const counter = (m, series) => Number(m.match(new RegExp(series.replace(/[{}]/g, '\\$&') + ' (\\d+)'))?.[1] ?? 0)
const BUILT = 'hutch_pool_events_total{event="built"}'
const COLD = 'hutch_sandbox_creates_by_source_total{source="cold"}'
// baseline (same round, after the creates): 50 Sandbox.getInfo() at once through the same SDK
// client: the client's and the HTTP path's share of a burst, with next to nothing for the daemon to do
async function burst50(d, o, label, baseline) {
  const lat = []
  const m0 = (await request(d, 'GET', '/metrics')).body
  const cpu0 = process.cpuUsage(), dcpu0 = runNs(d.pid)
  const t0 = now()
  const made = await Promise.all(Array.from({ length: 50 }, async () => {
    const t = now()
    const s = await Sandbox.create(o)
    lat.push(now() - t)
    return s
  }))
  const span = now() - t0
  const cpu1 = process.cpuUsage(cpu0), dcpu1 = runNs(d.pid)
  const m1 = (await request(d, 'GET', '/metrics')).body
  if (baseline) {
    await Promise.all(made.map(async (s) => {
      const t = now()
      await Sandbox.getInfo(s.sandboxId, o)
      baseline(now() - t)
    }))
  }
  if (label) {
    const st = stats(lat)
    process.stderr.write(`${label}: p95 ${st.p95.toFixed(1)} ms, all 50 in ${span.toFixed(1)} ms, client CPU ` +
      `${((cpu1.user + cpu1.system) / 1000).toFixed(0)} ms, daemon CPU ${((dcpu1 - dcpu0) / 1e6).toFixed(1)} ms; during it: ` +
      `${counter(m1, BUILT) - counter(m0, BUILT)} pool builds finished, ${counter(m1, COLD) - counter(m0, COLD)} cold creates; ` +
      `load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`)
  }
  await Promise.all(made.map((s) => s.kill()))
  return lat
}

// What the full pool costs while it waits: its size, what admission counts
// for it and what it holds (memory charged to its cgroups, tasks).
function poolCost(name, m) {
  const get = (re) => Number(m.match(re)?.[1] ?? NaN)
  const ready = get(/hutch_pool_sandboxes\{template="base",state="ready"\} (\d+)/)
  const mc = get(/hutch_memory_by_state_bytes\{state="pool",kind="committed"\} (\d+)/)
  const mh = get(/hutch_memory_by_state_bytes\{state="pool",kind="held"\} (\d+)/)
  const pc = get(/hutch_pids_by_state\{state="pool",kind="committed"\} (\d+)/)
  const budget = get(/hutch_memory_bytes\{kind="budget"\} (\d+)/)
  const peak = get(/hutch_pool_demand_peak\{template="base"\} (\d+)/)
  process.stderr.write(`${name}: pool at its peak: ${ready} ready (demand peak ${peak}), committing ${(mc / 2 ** 20).toFixed(1)} MiB ` +
    `(${(100 * mc / budget).toFixed(3)}% of the memory budget) and ${pc} pids, holding ${(mh / 2 ** 20).toFixed(1)} MiB\n`)
}

// `firstName` records the first warm-up burst: the SDK's code not yet
// compiled by V8, as in a client process that has just started.
async function concurrent50(name, poolSize, firstName) {
  await withDaemon(poolSize, async (d) => {
    const o = { apiKey: d.apiKey, apiUrl: d.url, sandboxUrl: d.url }
    // warm-up: --sdk-warmup bursts, so that V8 has optimised the SDK's code,
    // as in an agent platform's long-running client
    for (let w = 0; w < sdkWarmup; w++) {
      await poolReady(d, poolSize)
      const lat = await burst50(d, o, `${name} warm-up ${w + 1}`)
      if (w === 0 && firstName) for (const l of lat) add(firstName, l, 0)
    }
    await poolReady(d, poolSize)
    poolCost(name, (await request(d, 'GET', '/metrics')).body)
    for (let r = 0; r < rounds; r++) {
      await poolReady(d, poolSize)
      for (const l of await burst50(d, o, `${name} round ${r + 1}`, (ms) => add(`${name}_info`, ms, r))) add(name, l, r)
      process.stderr.write(`${name}: round ${r + 1}/${rounds} done\n`)
    }
  })
}

// 50 creates at once through raw HTTP (one keep-alive agent), and in the same
// round 50 GET /health at once: the HTTP floor of a burst
async function concurrent50raw(name, poolSize) {
  await withDaemon(poolSize, async (d) => {
    await Promise.all((await Promise.all(Array.from({ length: 50 }, () => create(d)))).map((id) => kill(d, id)))
    for (let r = 0; r < rounds; r++) {
      await poolReady(d, poolSize)
      const lat = await Promise.all(Array.from({ length: 50 }, async () => (await timed(() => create(d)))))
      for (const [ms] of lat) add(name, ms, r)
      for (const [ms] of await Promise.all(Array.from({ length: 50 }, () => timed(() => request(d, 'GET', '/health')))))
        add('c50_http_health', ms, r)
      await Promise.all(lat.map(([, id]) => kill(d, id)))
      process.stderr.write(`${name}: round ${r + 1}/${rounds} done\n`)
    }
  })
}

const throughput = {}
const perCycle = {} // name -> [{daemon, sandboxes, client, machine}] per round, ms
const machineBusyMs = () => {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number)
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) * 10 // user nice system irq softirq steal, USER_HZ = 100
}
// /proc/<pid>/stat after the comm; the daemon's reaped children (sandbox inits reap their own) are in cutime/cstime
const procStat = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').map(Number)
// the daemon's (one thread's) time on a CPU, ns: /proc/<pid>/schedstat, finer than stat's 10 ms ticks
const runNs = (pid) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0])
async function sustained(name, poolSize) {
  await withDaemon(poolSize, async (d) => {
    for (let r = 0; r < rounds; r++) {
      await poolReady(d, poolSize)
      let cycles = 0
      const end = now() + seconds * 1000
      const t0 = now()
      const p0 = procStat(d.pid), m0 = machineBusyMs(), u0 = process.cpuUsage()
      await Promise.all(Array.from({ length: workers }, async () => {
        while (now() < end) {
          await kill(d, await create(d))
          cycles++
        }
      }))
      ;(throughput[name] ??= []).push(cycles / ((now() - t0) / 1000))
      await poolReady(d, poolSize) // the refill's builds belong to these cycles
      await sleep(1000) // and so does the kernel's deferred cleanup (network namespaces, cgroups)
      const p1 = procStat(d.pid), u1 = process.cpuUsage()
      // fields 14-17 of /proc/<pid>/stat: utime stime cutime cstime (indices 11-14 after the comm)
      ;(perCycle[name] ??= []).push({
        daemon: (p1[11] + p1[12] - p0[11] - p0[12]) * 10 / cycles,
        sandboxes: (p1[13] + p1[14] - p0[13] - p0[14]) * 10 / cycles,
        client: (u1.user + u1.system - u0.user - u0.system) / 1000 / cycles,
        machine: (machineBusyMs() - m0) / cycles,
      })
      process.stderr.write(`${name}: round ${r + 1}/${rounds} done\n`)
    }
  })
}

// Baselines for the sustained rate, same run: the kernel's floor (a process
// in the seven namespaces, created and reaped, nothing else: bench/ns_floor.c)
// and bwrap running /bin/true in the same number of parallel loops.
function floor() {
  const out = execFileSync(resolve(process.env.HUTCH_BUILD, 'bench', 'ns_floor'),
    ['--seconds', String(Math.min(seconds, 5)), '--workers', String(workers)], { encoding: 'utf8' })
  for (const m of out.matchAll(/^(\w+) (\d+)\/s$/gm)) (throughput[`floor_${m[1]}`] ??= []).push(Number(m[2]))
}
async function bwrapLoops() {
  let cycles = 0
  const end = now() + seconds * 1000
  const t0 = now()
  await Promise.all(Array.from({ length: workers }, async () => {
    while (now() < end) {
      await run('/usr/bin/bwrap', bwrapArgs)
      cycles++
    }
  }))
  ;(throughput.tput_bwrap ??= []).push(cycles / ((now() - t0) / 1000))
}

if (only.includes('warm')) await latency('warm', 2)
if (only.includes('cold')) await latency('cold', 0)
if (only.includes('c50')) {
  await concurrent50('c50_sdk_pool', 50, 'c50_sdk_first')
  await concurrent50raw('c50_http_pool', 50)
  await concurrent50('c50_sdk_pool2', 2)
  await concurrent50('c50_sdk_cold', 0)
}
// the default configuration alone (docs/benchmarks.md: the demand-following pool's target)
if (only.includes('c50d')) await concurrent50('c50_sdk_pool2', 2)
if (only.includes('tput')) {
  await sustained('tput_pool2', 2)
  await sustained('tput_pool16', 16)
  await sustained('tput_cold', 0)
  for (let r = 0; r < rounds; r++) {
    floor()
    await bwrapLoops()
  }
}

const fmt = (x) => x.toFixed(2).padStart(8)
console.log(`figure (ms)        n   median      p95      p99      min      max   round medians`)
for (const [k, xs] of Object.entries(figures)) {
  const s = stats(xs)
  const rm = perRound[k].map((v) => stats(v).median.toFixed(2)).join(' ')
  console.log(`${k.padEnd(14)} ${String(s.n).padStart(5)} ${fmt(s.median)} ${fmt(s.p95)} ${fmt(s.p99)} ${fmt(s.min)} ${fmt(s.max)}   ${rm}`)
}
const f2 = (xs) => xs.map((x) => x.toFixed(2)).join(' ')
for (const [k, xs] of Object.entries(throughput)) {
  let line = `${k.padEnd(16)} per second (${workers} in parallel): ${xs.map((x) => x.toFixed(0)).join(' ')} (rounds)`
  const pc = perCycle[k]
  if (pc)
    line += `; CPU ms per cycle: daemon+sandboxes ${f2(pc.map((c) => c.daemon + c.sandboxes))} = daemon ${f2(pc.map((c) => c.daemon))}` +
      ` + sandboxes ${f2(pc.map((c) => c.sandboxes))}; client ${f2(pc.map((c) => c.client))};` +
      ` whole machine ${f2(pc.map((c) => c.machine))}`
  console.log(line)
}
console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').trim()}`)
