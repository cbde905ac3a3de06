// Density: --count idle sandboxes alive at once through a real `hutch serve`,
// each with a shell waiting, and what they cost the host.
//   node bench/density_bench.mjs [--count 1000] [--build build] [--concurrency 4] [--probes 400]
//                                [--hold S] [--nofile N]
// Phases (one invocation; the "empty" figures, the same probes with one sandbox alive,
// are the baseline of the loaded ones):
//   empty     /health latency and a command round trip (envd process.Start of `true`,
//             waiting for its end) in one sandbox, with only that sandbox alive
//   fill      --count sandboxes: POST /v2/sandboxes, then envd process.Start of `bash`
//             with stdin kept open (an idle shell waiting for input; the stream is
//             dropped after the start event, the shell stays)
//   loaded    memory (below), the daemon's RSS, fds and CPU over an idle 10 s (the
//             lifecycle tick and the metrics sampler over every sandbox), /health latency
//             (probes 25 ms apart) and a command round trip in a random sandbox while all
//             are alive
//   drain     DELETE every sandbox; then nothing of them may be left: no cgroup under
//             the parent in any hierarchy, no mount under the run dir, no sandbox
//             directory, no process in their cgroups
// Memory: MemAvailable before the fill minus after it, per sandbox (host); the sum of
// the sandboxes' memory cgroups' charge (memory.usage_in_bytes / memory.current, which
// counts their processes, page cache, tmpfs and kernel memory charged to them); the Pss
// of their processes (smaps_rollup); and host minus charge per sandbox, the cost
// beyond what the sandboxes' processes are charged. /proc/meminfo deltas show where
// that goes (Slab, PageTables, KernelStack, Shmem).
// Limits it sets for itself (configuration, not the host): default_pids 16 (admission
// reserves pids_per_sandbox x sandboxes out of kernel.pid_max - 4096; an idle sandbox
// runs 2 processes), admission.memory_overcommit 100 (the 512 MiB default limits add
// up past the host's memory), max_sandboxes = count. --hold S keeps them all alive S
// seconds before the drain (to profile the loaded daemon).
// Not a test: it prints numbers (and JSON to <build>/bench/density_bench.json) and exits
// non-zero when something failed or something was left behind.
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync, readFileSync, readdirSync, existsSync, rmSync, mkdtempSync } from 'node:fs'
import { resolve, dirname, join } from 'node:path'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'
import { arg, now, sleep, harness } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const count = Number(arg('count', 1000))
const concurrency = Number(arg('concurrency', 4))
const probes = Number(arg('probes', 400))
const nofile = arg('nofile', null)
const hold = Number(arg('hold', 0))
if (process.getuid() !== 0) {
  console.error('density_bench: hutch creates namespaces, mounts and cgroups: run as root')
  process.exit(1)
}
const { startDaemon, api } = await harness()

// interpolated quantiles, not lib.mjs's nearest rank: the density figures in
// docs/benchmarks.md were computed this way
function stats(xs) {
  const s = [...xs].sort((a, b) => a - b)
  const q = (p) => {
    const pos = p * (s.length - 1), lo = Math.floor(pos)
    return lo + 1 >= s.length ? s[s.length - 1] : s[lo] + (pos - lo) * (s[lo + 1] - s[lo])
  }
  return { n: s.length, median: q(0.5), p99: q(0.99), min: s[0], max: s[s.length - 1] }
}
const fmt = (st) => `${st.median.toFixed(2)} / ${st.p99.toFixed(2)} / ${st.max.toFixed(2)} (n=${st.n})`
function meminfo() {
  const m = {}
  for (const line of readFileSync('/proc/meminfo', 'utf8').split('\n')) {
    const x = line.match(/^(\w+):\s+(\d+)/)
    if (x) m[x[1]] = Number(x[2]) / 1024 // MiB
  }
  return m
}
const status = (pid, key) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${key}:\\s+(\\d+)`))[1]) / 1024
const cpuTicks = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return Number(f[11]) + Number(f[12]) // utime + stime, clock ticks (100 Hz)
}

// a daemon of our own: its own dirs and cgroup parent (the harness), config and fd limit
const confDir = mkdtempSync(join(tmpdir(), 'hutch-density-conf-'))
const conf = join(confDir, 'hutch.conf')
writeFileSync(conf, `default_pids = 16\nadmission.memory_overcommit = 100\nmax_sandboxes = ${count + 1}\n`)
const memStart = meminfo()
const d = await startDaemon(['--config', conf])
// the daemon raises its RLIMIT_NOFILE soft limit to the hard one at start; --nofile N lowers
// it afterwards (to see what a lower limit does: creates fail at about N / 2 sandboxes)
if (nofile) {
  try {
    execFileSync('prlimit', ['--pid', String(d.pid), `--nofile=${nofile}:`], { stdio: ['ignore', 'ignore', 'pipe'] })
  } catch (e) {
    console.error(`density_bench: prlimit --nofile=${nofile}: ${e.stderr}`)
    await d.stop()
    rmSync(confDir, { recursive: true, force: true })
    process.exit(1)
  }
}
const parent = d.env.HUTCH_CGROUP_PARENT
const daemonPid = () => d.pid

async function must(method, path, body, want) {
  const r = await api(d, method, path, body)
  if (r.status !== want) throw new Error(`${method} ${path}: ${r.status} ${r.text}`)
  return r.json
}
function envdHeaders(s) {
  return { 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1', 'E2b-Sandbox-Id': s.sandboxID,
    'X-Access-Token': s.envdAccessToken, Authorization: 'Basic ' + Buffer.from('user:').toString('base64') }
}
function envelope(obj) {
  const msg = Buffer.from(JSON.stringify(obj))
  const env = Buffer.alloc(5 + msg.length)
  env.writeUInt32BE(msg.length, 1)
  msg.copy(env, 5)
  return env
}
// process.Start of argv, waiting for its end (what commands.run does)
async function run(s, argv) {
  const r = await fetch(`${d.url}/process.Process/Start`, { method: 'POST', headers: envdHeaders(s),
    body: envelope({ process: { cmd: argv[0], args: argv.slice(1) } }) })
  const body = Buffer.from(await r.arrayBuffer())
  if (r.status !== 200 || !body.includes('"end"') || !body.includes('"exited":true')) throw new Error(`run ${argv}: ${r.status} ${body}`)
}
// process.Start of an idle `bash` (stdin open: it waits for input); read until the
// start event, then drop the stream: the process stays
async function startShell(s) {
  const ctl = new AbortController()
  const r = await fetch(`${d.url}/process.Process/Start`, { method: 'POST', headers: envdHeaders(s), signal: ctl.signal,
    body: envelope({ process: { cmd: '/bin/bash', args: [] }, stdin: true }) })
  if (r.status !== 200) throw new Error(`start bash: ${r.status} ${await r.text()}`)
  const reader = r.body.getReader()
  let seen = ''
  while (!seen.includes('"start"')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`start bash: stream ended before the start event: ${seen}`)
    seen += Buffer.from(value).toString()
  }
  ctl.abort()
  const pid = Number(seen.match(/"pid":\s*(\d+)/)?.[1])
  if (!pid) throw new Error(`start bash: no pid in ${seen}`)
  return pid
}
// spaced out (GAP_MS apart, 10 s at the default 400 probes) so that the probes cover
// every periodic task of the daemon (the lifecycle tick each second, the metrics sampler)
const GAP_MS = 25
async function healthProbe(n) {
  const xs = []
  for (let i = 0; i < n; i++) {
    await sleep(GAP_MS)
    const t = now()
    const r = await fetch(`${d.url}/health`)
    await r.arrayBuffer()
    if (r.status !== 200 && r.status !== 204) throw new Error(`/health: ${r.status}`)
    xs.push(now() - t)
  }
  return xs
}
async function roundTrips(pick, n) {
  const xs = []
  for (let i = 0; i < n; i++) {
    await sleep(4 * GAP_MS)
    const s = pick()
    const t = now()
    await run(s, ['/bin/true'])
    xs.push(now() - t)
  }
  return xs
}
// the sandboxes' cgroups in the memory hierarchy (v1) or the unified one (v2)
const memRoot = existsSync(`/sys/fs/cgroup/memory`) ? `/sys/fs/cgroup/memory/${parent}` : `/sys/fs/cgroup/${parent}`
const chargeFile = existsSync('/sys/fs/cgroup/memory') ? 'memory.usage_in_bytes' : 'memory.current'
function charges(ids) {
  let bytes = 0, pss = 0, procs = 0
  for (const id of ids) {
    bytes += Number(readFileSync(join(memRoot, id, chargeFile), 'utf8'))
    for (const p of readFileSync(join(memRoot, id, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
      procs++
      try { pss += Number(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+)/m)[1]) / 1024 } catch {}
    }
  }
  return { charged_mib: bytes / (1 << 20), pss_mib: pss, processes: procs }
}
// what is left of the sandboxes of this daemon: cgroups, mounts, sandbox dirs, processes
function leftovers() {
  const out = []
  for (const h of readdirSync('/sys/fs/cgroup')) {
    for (const g of [join('/sys/fs/cgroup', h, parent), join('/sys/fs/cgroup', parent)]) {
      if (!existsSync(g)) continue
      try {
        for (const e of readdirSync(g, { withFileTypes: true })) if (e.isDirectory()) out.push(`cgroup ${join(g, e.name)}`)
      } catch {}
    }
  }
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const mp = line.split(' ')[4]
    if (mp && mp.startsWith(d.base + '/')) out.push(`mount ${mp}`)
  }
  const sbxDir = join(d.base, 'run', 'sandboxes')
  if (existsSync(sbxDir)) for (const e of readdirSync(sbxDir)) out.push(`dir ${join(sbxDir, e)}`)
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      if (readFileSync(`/proc/${p}/cgroup`, 'utf8').includes(`/${parent}/`)) out.push(`process ${p}`)
    } catch {}
  }
  return [...new Set(out)]
}
async function pool(n, fn) {
  let next = 0
  const errs = []
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, async () => {
    while (next < n && errs.length === 0) {
      const i = next++
      try { await fn(i) } catch (e) { errs.push(e) }
    }
  }))
  if (errs.length) throw errs[0]
}

const out = { count, concurrency, probes, nofile, config: readFileSync(conf, 'utf8'), date: new Date().toISOString() }
const sandboxes = []
let failed = false
try {
  console.log(`density_bench: ${count} sandboxes, concurrency ${concurrency}, daemon pid ${daemonPid()}, ` +
    `cgroup parent ${parent}, RLIMIT_NOFILE ` +
    readFileSync(`/proc/${d.pid}/limits`, 'utf8').match(/Max open files\s+(\d+)/)[1])
  // baseline: one sandbox alive
  const first = await must('POST', '/v2/sandboxes', { templateID: 'base', timeout: 3600 }, 201)
  await startShell(first)
  sandboxes.push(first)
  await run(first, ['/bin/true'])
  const healthEmpty = await healthProbe(probes)
  const rtEmpty = await roundTrips(() => first, Math.max(20, probes / 4))
  const rssEmpty = status(daemonPid(), 'VmRSS')
  await sleep(1500)
  const memBefore = meminfo()

  // fill
  const createMs = []
  const t0 = now()
  let lastReport = t0
  await pool(count - 1, async () => {
    const t = now()
    const s = await must('POST', '/v2/sandboxes', { templateID: 'base', timeout: 3600 }, 201)
    sandboxes.push(s)
    await startShell(s)
    createMs.push(now() - t)
    if (now() - lastReport > 10000) {
      lastReport = now()
      console.log(`  ${sandboxes.length} alive after ${((now() - t0) / 1000).toFixed(0)} s; daemon RSS ${status(daemonPid(), 'VmRSS').toFixed(1)} MiB`)
    }
  })
  const fillS = (now() - t0) / 1000
  await sleep(5000) // let the shells settle and the page cache stop moving
  const memAfter = meminfo()
  const ids = sandboxes.map((s) => s.sandboxID)
  const ch = charges(ids)
  const rss = status(daemonPid(), 'VmRSS')
  const fds = readdirSync(`/proc/${daemonPid()}/fd`).length
  const c0 = cpuTicks(daemonPid())
  await sleep(10000)
  const idleCpu = (cpuTicks(daemonPid()) - c0) / 100 / 10 // CPU seconds per second
  const healthLoaded = await healthProbe(probes)
  const rtLoaded = await roundTrips(() => sandboxes[Math.floor(Math.random() * sandboxes.length)], Math.max(20, probes / 4))
  const list = now()
  const listed = await must('GET', '/v2/sandboxes?limit=100', undefined, 200)
  const listMs = now() - list
  const shells = ch.processes - sandboxes.length // one init per sandbox; the rest are the shells

  const held = memBefore.MemAvailable - memAfter.MemAvailable
  const delta = (k) => (memAfter[k] ?? 0) - (memBefore[k] ?? 0)
  const n = sandboxes.length - 1 // the fill's sandboxes (the first was alive in both readings)
  out.memory = {
    sandboxes_alive: sandboxes.length,
    processes_in_sandboxes: ch.processes,
    host_held_mib: held,
    host_per_sandbox_mib: held / n,
    charged_total_mib: ch.charged_mib,
    charged_per_sandbox_mib: ch.charged_mib / sandboxes.length,
    pss_total_mib: ch.pss_mib,
    pss_per_sandbox_mib: ch.pss_mib / sandboxes.length,
    beyond_charge_per_sandbox_mib: held / n - ch.charged_mib / sandboxes.length,
    beyond_pss_per_sandbox_mib: held / n - ch.pss_mib / sandboxes.length,
    meminfo_delta_mib: Object.fromEntries(['MemAvailable', 'MemFree', 'Cached', 'Shmem', 'Slab', 'SReclaimable', 'SUnreclaim',
      'KernelStack', 'PageTables', 'AnonPages', 'Percpu'].map((k) => [k, delta(k)])),
    mem_available_at_start_mib: memStart.MemAvailable,
  }
  out.daemon = { rss_empty_mib: rssEmpty, rss_loaded_mib: rss, rss_anon_loaded_mib: status(daemonPid(), 'RssAnon'), fds_loaded: fds,
    idle_cpu_share_loaded: idleCpu }
  out.fill = { seconds: fillS, create_and_shell_ms: stats(createMs),
    first_100_ms: stats(createMs.slice(0, 100)), last_100_ms: stats(createMs.slice(-100)) }
  out.latency = { health_empty: stats(healthEmpty), health_loaded: stats(healthLoaded), roundtrip_empty: stats(rtEmpty),
    roundtrip_loaded: stats(rtLoaded), list_100_loaded_ms: listMs }

  console.log(`\nfill: ${sandboxes.length} sandboxes alive (${ch.processes} processes in them, ${shells} shells) in ${fillS.toFixed(1)} s`)
  console.log(`  create + shell start, ms (median / p99 / max): ${fmt(out.fill.create_and_shell_ms)}`)
  console.log(`    first 100: ${fmt(out.fill.first_100_ms)}   last 100: ${fmt(out.fill.last_100_ms)}`)
  console.log(`memory (MiB):`)
  console.log(`  host (MemAvailable) held by ${n} sandboxes: ${held.toFixed(0)} (${(held / n).toFixed(2)} each)`)
  console.log(`  charged to their memory cgroups: ${ch.charged_mib.toFixed(0)} (${(ch.charged_mib / sandboxes.length).toFixed(2)} each)`)
  console.log(`  Pss of their processes: ${ch.pss_mib.toFixed(0)} (${(ch.pss_mib / sandboxes.length).toFixed(2)} each)`)
  console.log(`  beyond the charge: ${out.memory.beyond_charge_per_sandbox_mib.toFixed(2)} per sandbox; beyond the Pss: ` +
    `${out.memory.beyond_pss_per_sandbox_mib.toFixed(2)}`)
  console.log(`  /proc/meminfo deltas: ${Object.entries(out.memory.meminfo_delta_mib).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`)
  console.log(`daemon: RSS ${rssEmpty.toFixed(1)} MiB with 1 sandbox, ${rss.toFixed(1)} MiB with ${sandboxes.length} ` +
    `(anon ${out.daemon.rss_anon_loaded_mib.toFixed(1)}); ${fds} fds; idle CPU ${(idleCpu * 100).toFixed(2)}% of a core`)
  console.log(`latency, ms (median / p99 / max):`)
  console.log(`  GET /health, 1 sandbox:          ${fmt(out.latency.health_empty)}`)
  console.log(`  GET /health, ${sandboxes.length} sandboxes:     ${fmt(out.latency.health_loaded)}`)
  console.log(`  run \`true\`, 1 sandbox:            ${fmt(out.latency.roundtrip_empty)}`)
  console.log(`  run \`true\` in a random one of ${sandboxes.length}: ${fmt(out.latency.roundtrip_loaded)}`)
  console.log(`  GET /v2/sandboxes?limit=100 (${listed.length} listed): ${listMs.toFixed(1)}`)

  if (hold) {
    console.log(`holding ${sandboxes.length} sandboxes for ${hold} s (daemon pid ${d.pid})`)
    await sleep(hold * 1000)
  }
  // drain
  const t1 = now()
  const delMs = []
  await pool(sandboxes.length, async (i) => {
    const t = now()
    await must('DELETE', `/sandboxes/${sandboxes[i].sandboxID}`, undefined, 204)
    delMs.push(now() - t)
  })
  out.drain = { seconds: (now() - t1) / 1000, delete_ms: stats(delMs) }
  sandboxes.length = 0
  await sleep(1000)
  const left = leftovers()
  out.leftovers = left
  out.daemon.rss_drained_mib = status(daemonPid(), 'VmRSS')
  out.memory.mem_available_drained_delta_mib = meminfo().MemAvailable - memBefore.MemAvailable
  console.log(`drain: ${out.drain.seconds.toFixed(1)} s, DELETE ms ${fmt(out.drain.delete_ms)}; daemon RSS afterwards ` +
    `${out.daemon.rss_drained_mib.toFixed(1)} MiB; MemAvailable ${out.memory.mem_available_drained_delta_mib >= 0 ? '+' : ''}` +
    `${out.memory.mem_available_drained_delta_mib.toFixed(0)} MiB against before the fill`)
  if (left.length) {
    failed = true
    console.log(`LEFT BEHIND (${left.length}):\n  ${left.slice(0, 20).join('\n  ')}`)
  } else {
    console.log('left behind: nothing (no cgroup, mount, sandbox dir or process)')
  }
  mkdirSync(resolve(here, '..', process.env.HUTCH_BUILD, 'bench'), { recursive: true })
  writeFileSync(resolve(here, '..', process.env.HUTCH_BUILD, 'bench', 'density_bench.json'), JSON.stringify(out, null, 2))
} catch (e) {
  failed = true
  console.error(`density_bench: ${e.stack || e}`)
  try { console.error(`daemon log (tail):\n${d.log().split('\n').slice(-30).join('\n')}`) } catch {}
} finally {
  // whatever is still alive goes with the daemon's dirs and cgroups (the harness)
  for (const s of sandboxes) await api(d, 'DELETE', `/sandboxes/${s.sandboxID}`).catch(() => {})
  await d.stop()
  rmSync(confDir, { recursive: true, force: true })
}
process.exit(failed ? 1 : 0)
