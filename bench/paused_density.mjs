// Paused-session density (issue 21): --sessions paused sessions, each a shell and a Python
// process holding 20 MiB (its pages written), half of them with their memory released, beside
// --running sandboxes doing work, through one real `hutch serve`; then resumes and creates
// while the host is full.
//   node bench/paused_density.mjs [--sessions 2000] [--running 50] [--samples 50] [--concurrency 4]
//                                 [--floor-gib 4] [--abort-gib 3] [--pids 256] [--fill-seconds 420]
//                                 [--build build]
// Phases (one invocation):
//   running   first, --running sandboxes each running a shell loop (md5sum of 64 KiB of
//             /dev/urandom every 100 ms) for the rest of the run: they commit their limits,
//             the frozen sessions get what is left
//   fill      --sessions times: POST /v2/sandboxes, envd process.Start of an idle `bash` (stdin
//             open) and of `python3` allocating 20 MiB of non-zero bytes (it prints when they
//             are written), then POST /sandboxes/{id}/pause; every second one with
//             {"memory": false} (released: its processes end, its files stay)
//   full      memory (MemAvailable, /proc/meminfo deltas), the daemon's RSS and fds, /metrics
//             (committed vs held by state, releases by reason)
//   resume    --samples resumes of frozen sessions and --samples of released ones, alternating,
//             each followed by a command round trip (`true`) and paused again as it was; then
//             --samples creates (POST /v2/sandboxes + `true`, then DELETE) with the host full
//   drain     DELETE everything; nothing may be left (cgroups, mounts, dirs, processes)
// Memory guard (the machine is shared): the fill waits while MemAvailable is below --floor-gib
// + 1 GiB (the daemon's pressure.min_available is set to --floor-gib + 1.5 GiB: below it, its
// lifecycle tick releases the least recently used frozen sessions, and admission refuses creates
// once none holds memory); MemAvailable below --abort-gib at any time aborts the run (drain and
// exit 1). Frozen sessions beyond what the host holds are therefore released by the daemon:
// the figures say how many stayed frozen.
// Configuration it sets (docs/benchmarks.md says why): default_pids --pids (100 running
// sandboxes at the default 512 exceed this kind of host's pid_max budget; 50 plus the frozen
// ones' tasks need less), max_sandboxes sessions + running + 64 (released ones do not count, but
// the frozen ones beside the running do), pressure.min_available as above.
// Not a test: prints figures (JSON in <build>/bench/paused_density.json); exits non-zero when
// something failed or was left behind.
import { mkdirSync, writeFileSync, readFileSync, readdirSync, existsSync, rmSync, mkdtempSync } from 'node:fs'
import { resolve, dirname, join } from 'node:path'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'
import { arg, now, sleep, stats, harness } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const sessions = Number(arg('sessions', 2000))
const running = Number(arg('running', 50))
const samples = Number(arg('samples', 50))
const concurrency = Number(arg('concurrency', 4))
const floorGiB = Number(arg('floor-gib', 4))
const abortGiB = Number(arg('abort-gib', 3))
const pids = Number(arg('pids', 256))
const fillSeconds = Number(arg('fill-seconds', 420)) // the fill stops there (a shared, loaded machine): figures say how far it got
if (process.getuid() !== 0) {
  console.error('paused_density: hutch creates namespaces, mounts and cgroups: run as root')
  process.exit(1)
}
const { startDaemon, api } = await harness()
const GiB = 1024
function meminfo() {
  const m = {}
  for (const line of readFileSync('/proc/meminfo', 'utf8').split('\n')) {
    const x = line.match(/^(\w+):\s+(\d+)/)
    if (x) m[x[1]] = Number(x[2]) / 1024 // MiB
  }
  return m
}
const available = () => meminfo().MemAvailable
const status = (pid, key) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${key}:\\s+(\\d+)`))[1]) / 1024
const fmt = (st) => `${st.median.toFixed(1)} / ${st.p99.toFixed(1)} / ${st.max.toFixed(1)} (n=${st.n})`

const confDir = mkdtempSync(join(tmpdir(), 'hutch-paused-conf-'))
const conf = join(confDir, 'hutch.conf')
const minAvailMiB = Math.round((floorGiB + 1.5) * GiB)
writeFileSync(conf, `default_pids = ${pids}\nmax_sandboxes = ${sessions + running + 64}\n` +
  `pressure.min_available = ${minAvailMiB}M\n`)
const d = await startDaemon(['--config', conf])
const parent = d.env.HUTCH_CGROUP_PARENT

// the memory guard: checked every 200 ms for the whole run
let aborted = null, minSeen = Infinity
const guard = setInterval(() => {
  const a = available()
  minSeen = Math.min(minSeen, a)
  if (a < abortGiB * GiB && !aborted) aborted = `MemAvailable ${a.toFixed(0)} MiB fell below ${abortGiB} GiB`
}, 200)
const check = () => { if (aborted) throw new Error(`aborted: ${aborted}`) }

async function must(method, path, body, want) {
  const r = await api(d, method, path, body)
  if (!want.includes(r.status)) throw new Error(`${method} ${path}: ${r.status} ${r.text}`)
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
async function run(s, argv) {
  const r = await fetch(`${d.url}/process.Process/Start`, { method: 'POST', headers: envdHeaders(s),
    body: envelope({ process: { cmd: argv[0], args: argv.slice(1) } }) })
  const body = Buffer.from(await r.arrayBuffer())
  if (r.status !== 200 || !body.includes('"exited":true')) throw new Error(`run ${argv}: ${r.status} ${body}`)
}
// process.Start of argv, read until `until` shows in the stream, then drop the stream (the
// process stays)
async function startKept(s, argv, until, stdin = false) {
  const ctl = new AbortController()
  const r = await fetch(`${d.url}/process.Process/Start`, { method: 'POST', headers: envdHeaders(s), signal: ctl.signal,
    body: envelope({ process: { cmd: argv[0], args: argv.slice(1) }, stdin }) })
  if (r.status !== 200) throw new Error(`start ${argv[0]}: ${r.status} ${await r.text()}`)
  const reader = r.body.getReader()
  let seen = ''
  while (!seen.includes(until)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`start ${argv[0]}: the stream ended before ${until}: ${seen}`)
    seen += Buffer.from(value).toString()
  }
  ctl.abort()
}
// 20 MiB of non-zero bytes, written (resident), then a line on stdout and sleep (-S: no site
// module, a faster start)
const HOLD = 'import sys, time\nb = bytes(range(256)) * (20 * 4096)\nprint(len(b), flush=True)\ntime.sleep(1e9)\n'
const WORK = 'while :; do head -c 65536 /dev/urandom | md5sum >/dev/null; sleep 0.1; done'
// a freeze not done within the daemon's 2 s (504: a host at load 80 was seen to need longer)
// is tried again, twice at most; anything else fails the run
async function pauseRetry(s, released) {
  for (let k = 0; ; k++) {
    const r = await api(d, 'POST', `/sandboxes/${s.sandboxID}/pause`, released ? { memory: false } : {})
    if (r.status === 204) return
    if (r.status !== 504 || k === 2) throw new Error(`pause ${s.sandboxID}: ${r.status} ${r.text}`)
    pauseRetries++
  }
}
let pauseRetries = 0
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
async function metrics() {
  const text = await (await fetch(d.url + '/metrics')).text()
  const out = {}
  for (const l of text.split('\n')) {
    const m = l.match(/^(hutch_(?:memory_by_state_bytes|pids_by_state|sandbox_releases_total|sandboxes|open_files|pool_sandboxes)\S*) (\S+)$/)
    if (m) out[m[1]] = Number(m[2])
  }
  return out
}
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
    // the daemon's own layer store (a btrfs image it mounts) goes with the daemon
    if (mp && mp.startsWith(d.base + '/') && mp !== join(d.base, 'data', 'layers')) out.push(`mount ${mp}`)
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

const out = { sessions, running, samples, concurrency, config: readFileSync(conf, 'utf8'), date: new Date().toISOString() }
const all = [] // every sandbox made, for the drain
const paused = [] // { s, released }
let failed = false
try {
  const memStart = meminfo()
  const rssStart = status(d.pid, 'VmRSS')
  console.log(`paused_density: ${sessions} sessions (half released) + ${running} running, daemon pid ${d.pid}, ` +
    `MemAvailable ${(memStart.MemAvailable / GiB).toFixed(1)} GiB, guard: wait below ${floorGiB + 1} GiB, abort below ${abortGiB} GiB`)

  // running sandboxes doing work
  const workers = []
  await pool(running, async () => {
    check()
    const s = await must('POST', '/v2/sandboxes', { templateID: 'base', timeout: 3600 }, [201])
    all.push(s)
    workers.push(s)
    await startKept(s, ['/bin/bash', '-c', WORK], '"start"')
  })
  // fill
  const t0 = now()
  let last = t0, waitedMs = 0
  const sessionMs = []
  const phase = { create: [], shell: [], python: [], pause: [], pause_release: [] }
  await pool(sessions, async (i) => {
    check()
    if (now() - t0 > fillSeconds * 1000) return
    // the guard: wait while the host is near the floor (the daemon releases frozen ones)
    const w0 = now()
    while (available() < (floorGiB + 1) * GiB) {
      check()
      if (now() - w0 > 60000) throw new Error(`MemAvailable stayed below ${floorGiB + 1} GiB for 60 s`)
      await sleep(250)
    }
    waitedMs += now() - w0
    const t = now()
    const s = await must('POST', '/v2/sandboxes', { templateID: 'base', timeout: 3600 }, [201])
    all.push(s)
    const t1 = now()
    await startKept(s, ['/bin/bash'], '"start"', true)
    const t2 = now()
    await startKept(s, ['/usr/bin/python3', '-S', '-c', HOLD], '"stdout"')
    const t3 = now()
    const released = i % 2 === 1
    await pauseRetry(s, released)
    paused.push({ s, released })
    sessionMs.push(now() - t)
    phase.create.push(t1 - t)
    phase.shell.push(t2 - t1)
    phase.python.push(t3 - t2)
    phase[released ? 'pause_release' : 'pause'].push(now() - t3)
    if (now() - last > 15000) {
      last = now()
      console.log(`  ${paused.length} paused after ${((now() - t0) / 1000).toFixed(0)} s; MemAvailable ` +
        `${(available() / GiB).toFixed(1)} GiB; daemon RSS ${status(d.pid, 'VmRSS').toFixed(1)} MiB`)
    }
  })
  out.fill = { seconds: (now() - t0) / 1000, guard_waited_s: waitedMs / 1000, pause_retries: pauseRetries,
    session_ms: stats(sessionMs),
    phases_ms: Object.fromEntries(Object.entries(phase).map(([k, v]) => [k, stats(v)])) }
  console.log(`fill: ${paused.length} paused sessions in ${out.fill.seconds.toFixed(0)} s ` +
    `(the memory guard waited ${out.fill.guard_waited_s.toFixed(0)} s, ${pauseRetries} pauses tried again); create + shell + python + pause, ms ` +
    `(median / p99 / max): ${fmt(out.fill.session_ms)}`)
  for (const [k, v] of Object.entries(out.fill.phases_ms)) console.log(`  ${k.padEnd(14)} ${fmt(v)}`)

  await sleep(5000)
  check()

  // the full host
  const memFull = meminfo()
  const m = await metrics()
  out.full = {
    mem_available_start_mib: memStart.MemAvailable, mem_available_full_mib: memFull.MemAvailable,
    host_used_mib: memStart.MemAvailable - memFull.MemAvailable,
    meminfo_delta_mib: Object.fromEntries(['MemFree', 'Cached', 'Shmem', 'Slab', 'SUnreclaim', 'KernelStack', 'PageTables',
      'AnonPages', 'Percpu'].map((k) => [k, (memFull[k] ?? 0) - (memStart[k] ?? 0)])),
    daemon_rss_start_mib: rssStart, daemon_rss_full_mib: status(d.pid, 'VmRSS'),
    daemon_fds: readdirSync(`/proc/${d.pid}/fd`).length, metrics: m,
  }
  console.log(`full host: MemAvailable ${(memStart.MemAvailable / GiB).toFixed(1)} -> ${(memFull.MemAvailable / GiB).toFixed(1)} GiB ` +
    `(${(out.full.host_used_mib / GiB).toFixed(2)} GiB used by ${all.length} sandboxes); daemon RSS ` +
    `${rssStart.toFixed(1)} -> ${out.full.daemon_rss_full_mib.toFixed(1)} MiB, ${out.full.daemon_fds} fds`)
  console.log(`  /proc/meminfo deltas (MiB): ${Object.entries(out.full.meminfo_delta_mib).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`)
  console.log(`  /metrics: ${Object.entries(m).filter(([k]) => /by_state|releases|sandboxes\{/.test(k)).map(([k, v]) => `${k} ${v}`).join('\n            ')}`)

  // resumes (frozen and released alternating) and creates while full
  const res = { frozen: [], released: [], frozen_rt: [], released_rt: [] }
  const pick = (rel) => {
    const c = paused.filter((p) => p.released === rel)
    return c[Math.floor(Math.random() * c.length)]
  }
  for (let i = 0; i < 2 * samples; i++) {
    check()
    const p = pick(i % 2 === 1)
    const key = p.released ? 'released' : 'frozen'
    const t = now()
    await must('POST', `/sandboxes/${p.s.sandboxID}/resume`, { timeout: 3600 }, [200, 201])
    const tr = now()
    await run(p.s, ['/bin/true'])
    res[key].push(tr - t)
    res[key + '_rt'].push(now() - t)
    await must('POST', `/sandboxes/${p.s.sandboxID}/pause`, p.released ? { memory: false } : {}, [204])
    await sleep(50)
  }
  const cr = [], crRun = []
  for (let i = 0; i < samples; i++) {
    check()
    const t = now()
    const s = await must('POST', '/v2/sandboxes', { templateID: 'base', timeout: 600 }, [201])
    cr.push(now() - t)
    await run(s, ['/bin/true'])
    crRun.push(now() - t)
    await must('DELETE', `/sandboxes/${s.sandboxID}`, undefined, [204])
    await sleep(50)
  }
  // a "frozen" session may have been released by the daemon meanwhile (pressure or room): its
  // resume is then a cold boot; the metrics say how many were
  const m2 = await metrics()
  out.latency = { resume_frozen: stats(res.frozen), resume_released: stats(res.released),
    resume_frozen_then_true: stats(res.frozen_rt), resume_released_then_true: stats(res.released_rt),
    create_full: stats(cr), create_full_then_true: stats(crRun), metrics_after: m2 }
  console.log('latency, ms (median / p99 / max):')
  console.log(`  resume, frozen session:            ${fmt(out.latency.resume_frozen)}`)
  console.log(`  resume, released session:          ${fmt(out.latency.resume_released)}`)
  console.log(`  resume + \`true\`, frozen:           ${fmt(out.latency.resume_frozen_then_true)}`)
  console.log(`  resume + \`true\`, released:         ${fmt(out.latency.resume_released_then_true)}`)
  console.log(`  create with the host full:         ${fmt(out.latency.create_full)}`)
  console.log(`  create + \`true\`, host full:        ${fmt(out.latency.create_full_then_true)}`)
  console.log(`  releases by reason after: ${Object.entries(m2).filter(([k]) => k.includes('releases')).map(([k, v]) => `${k.match(/reason="(\w+)"/)[1]} ${v}`).join(', ')}`)
} catch (e) {
  failed = true
  console.error(`paused_density: ${e.stack || e}`)
  try { console.error(`daemon log (tail):\n${d.log().split('\n').slice(-20).join('\n')}`) } catch {}
}
// drain (also after a failure): every sandbox, then nothing may be left
try {
  const t1 = now()
  const list = await api(d, 'GET', '/sandboxes') // the v1 list: every sandbox, running or paused
  const ids = new Set([...all.map((s) => s.sandboxID), ...(Array.isArray(list.json) ? list.json : []).map((x) => x.sandboxID)])
  const idv = [...ids]
  await pool(idv.length, async (i) => { await api(d, 'DELETE', `/sandboxes/${idv[i]}`) })
  await sleep(1000)
  const left = leftovers()
  out.drain = { seconds: (now() - t1) / 1000, left, daemon_rss_mib: status(d.pid, 'VmRSS') }
  out.min_mem_available_mib = minSeen
  console.log(`drain: ${idv.length} deleted in ${out.drain.seconds.toFixed(1)} s; daemon RSS ${out.drain.daemon_rss_mib.toFixed(1)} MiB; ` +
    `lowest MemAvailable seen ${(minSeen / GiB).toFixed(2)} GiB`)
  if (left.length) {
    failed = true
    console.log(`LEFT BEHIND (${left.length}):\n  ${left.slice(0, 20).join('\n  ')}`)
  } else {
    console.log('left behind: nothing (no cgroup, mount, sandbox dir or process)')
  }
} catch (e) {
  failed = true
  console.error(`paused_density: drain: ${e.stack || e}`)
}
clearInterval(guard)
if (aborted) {
  failed = true
  console.error(`paused_density: ${aborted}`)
}
mkdirSync(resolve(here, '..', process.env.HUTCH_BUILD, 'bench'), { recursive: true })
writeFileSync(resolve(here, '..', process.env.HUTCH_BUILD, 'bench', 'paused_density.json'), JSON.stringify(out, null, 2))
await d.stop()
rmSync(confDir, { recursive: true, force: true })
process.exit(failed ? 1 : 0)
