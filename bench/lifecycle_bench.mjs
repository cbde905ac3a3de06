// The lifecycle's costs through hutch serve's HTTP API, with a host floor in
// the same run.
//   node bench/lifecycle_bench.mjs [--rounds 3] [--n 50] [--density 200] [--build build]
// Figures (median, p99 over all samples, plus per-round medians):
//   pause           POST /sandboxes/{id}/pause of a running sandbox (freeze; memory kept)
//   resume          POST /v2/sandboxes/{id}/connect of that paused sandbox (thaw)
//   host_freeze     the floor: cgroup2 cgroup.freeze = 1 on a host cgroup holding the same
//   host_thaw       workload (python3 holding 8 MiB), until cgroup.events says frozen / thawed
//   http_floor      GET /sandboxes/{id}: the HTTP round trip both API calls above include
//   server_pause    the same pause and resume (every one of the run, memory-releasing ones included), timed
//   server_resume   inside the daemon from request to reply (its debug log): freeze/thaw + the store write
//   release         POST /pause {"memory": false} of a running sandbox (freeze + every process ends)
//   resume_released POST /connect of a released sandbox (a fresh init over the same files) + first
//                   command (`true` through envd's process.Start, what the SDK's commands.run does)
//   cold_create     the comparison for it: POST /v2/sandboxes + the same first command
// Density: host memory (MemAvailable) held by --density paused sandboxes, each running the
// workload, before and after their memory is released.
// Not a test: it prints numbers (and JSON to build/bench/lifecycle_bench.json).
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync, readFileSync, rmdirSync, existsSync, rmSync } from 'node:fs'
import { resolve, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, now, sleep, stats, recorder, harness, envdRun } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const { startDaemon, api } = await harness()
const rounds = Number(arg('rounds', 3))
const n = Number(arg('n', 50))
const density = Number(arg('density', 200))
const WORKLOAD = "import time; b = bytearray(8 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1e6)"

const { figures, perRound, add } = recorder()
const memAvailableMiB = () => Number(readFileSync('/proc/meminfo', 'utf8').match(/MemAvailable:\s+(\d+)/)[1]) / 1024
// what the sandboxes' memory cgroups are charged (processes, page cache, tmpfs), exactly, unlike
// MemAvailable, which moves with everything else on a shared host
function chargedMiB(ids) {
  let sum = 0
  for (const id of ids) {
    for (const f of [`/sys/fs/cgroup/memory/${d.env.HUTCH_CGROUP_PARENT}/${id}/memory.usage_in_bytes`,
      `/sys/fs/cgroup/${d.env.HUTCH_CGROUP_PARENT}/${id}/memory.current`]) {
      if (existsSync(f)) { sum += Number(readFileSync(f, 'utf8')); break }
    }
  }
  return sum / (1 << 20)
}

// log_level debug: the daemon logs each request with the time it took inside the server
const { mkdtempSync } = await import('node:fs')
const { tmpdir } = await import('node:os')
const conf = join(mkdtempSync(join(tmpdir(), 'hutch-bench-conf-')), 'hutch.conf')
// and a memory budget that admits the density phase's sandboxes (their limits add up past the host's memory)
writeFileSync(conf, 'log_level = debug\nadmission.memory_overcommit = 100\ndefault_pids = 64\n')
const d = await startDaemon(['--config', conf, '--pause-release-after', '720h', '--reclaim-after', '720h'])
// server-side durations of the latency phase's requests, from the daemon's log
function serverTimes() {
  for (const line of d.log().split('\n')) {
    const m = line.match(/msg="POST \/(sandboxes\/i[a-z0-9]+\/pause|v2\/sandboxes\/i[a-z0-9]+\/connect) -> (204|201) \(([0-9.]+) ms\)"/)
    if (!m) continue
    ;(figures[m[1].endsWith('pause') ? 'server_pause' : 'server_resume'] ??= []).push(Number(m[3]))
  }
}

async function must(method, path, body, status) {
  const r = await api(d, method, path, body)
  if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} ${r.text}`)
  return r.json
}
// envd process.Start of `argv`, waiting for its end (what commands.run does)
const exec = (id, token, argv) => envdRun(d, id, token, argv)
async function createWithWorkload() {
  const s = await must('POST', '/v2/sandboxes', { templateID: 'base', timeout: 3600 }, 201)
  // background: the stream is cut after the start event, the process stays
  const ctl = new AbortController()
  const started = exec(s.sandboxID, s.envdAccessToken, ['python3', '-c', WORKLOAD]).catch(() => {})
  await sleep(50)
  ctl.abort()
  void started
  return s
}

// the host floor: a cgroup2 group with the same workload
const unified = existsSync('/sys/fs/cgroup/unified/cgroup.procs') ? '/sys/fs/cgroup/unified' : '/sys/fs/cgroup'
const hostGroup = join(unified, 'hutch-bench-floor-' + process.pid)
mkdirSync(hostGroup)
const hostProc = spawn('/usr/bin/python3', ['-c', WORKLOAD], { stdio: 'ignore' })
writeFileSync(join(hostGroup, 'cgroup.procs'), String(hostProc.pid))
async function hostFreeze(v) {
  writeFileSync(join(hostGroup, 'cgroup.freeze'), v ? '1' : '0')
  while (!readFileSync(join(hostGroup, 'cgroup.events'), 'utf8').includes(`frozen ${v ? 1 : 0}`)) await sleep(0)
}

try {
  const pool = []
  for (let i = 0; i < 10; i++) pool.push(await createWithWorkload())
  await sleep(500)
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < n; i++) {
      const s = pool[i % pool.length]
      let t = now()
      await must('POST', `/sandboxes/${s.sandboxID}/pause`, {}, 204)
      add('pause', now() - t, r)
      t = now()
      await hostFreeze(1)
      add('host_freeze', now() - t, r)
      t = now()
      await must('POST', `/v2/sandboxes/${s.sandboxID}/connect`, { timeout: 3600 }, 201)
      add('resume', now() - t, r)
      t = now()
      await must('GET', `/sandboxes/${s.sandboxID}`, undefined, 200)
      add('http_floor', now() - t, r)
      t = now()
      await hostFreeze(0)
      add('host_thaw', now() - t, r)
    }
    for (let i = 0; i < Math.max(5, n / 5); i++) {
      const s = pool[i % pool.length]
      let t = now()
      await must('POST', `/sandboxes/${s.sandboxID}/pause`, { memory: false }, 204)
      add('release', now() - t, r)
      t = now()
      await must('POST', `/v2/sandboxes/${s.sandboxID}/connect`, { timeout: 3600 }, 201)
      await exec(s.sandboxID, s.envdAccessToken, ['true'])
      add('resume_released', now() - t, r)
      t = now()
      const c = await must('POST', '/v2/sandboxes', { templateID: 'base', timeout: 3600 }, 201)
      await exec(c.sandboxID, c.envdAccessToken, ['true'])
      add('cold_create', now() - t, r)
      await must('DELETE', `/sandboxes/${c.sandboxID}`, undefined, 204)
      // give the pool sandbox its workload back
      exec(s.sandboxID, s.envdAccessToken, ['python3', '-c', WORKLOAD]).catch(() => {})
    }
  }
  for (const s of pool) await must('DELETE', `/sandboxes/${s.sandboxID}`, undefined, 204)
  serverTimes()
  for (const k of ['server_pause', 'server_resume']) perRound[k] = [figures[k] ?? []]

  // density: memory held by paused sandboxes, before and after release
  await sleep(1000)
  const before = memAvailableMiB()
  const many = []
  for (let i = 0; i < density; i++) many.push(await createWithWorkload())
  await sleep(2000)
  for (const s of many) await must('POST', `/sandboxes/${s.sandboxID}/pause`, {}, 204)
  await sleep(1000)
  const paused = memAvailableMiB()
  const ids = many.map((s) => s.sandboxID)
  const chargedPaused = chargedMiB(ids)
  for (const s of many) await must('POST', `/sandboxes/${s.sandboxID}/pause`, { memory: false }, 204)
  await sleep(2000)
  const released = memAvailableMiB()
  const chargedReleased = chargedMiB(ids)
  for (const s of many) await must('DELETE', `/sandboxes/${s.sandboxID}`, undefined, 204)
  const dens = {
    sandboxes: density,
    held_paused_mib: before - paused,
    held_released_mib: before - released,
    per_sandbox_paused_mib: (before - paused) / density,
    per_sandbox_released_mib: (before - released) / density,
    charged_paused_mib: chargedPaused,
    charged_released_mib: chargedReleased,
  }

  const out = { rounds, n, figures: {}, density: dens }
  console.log(`lifecycle_bench: ${rounds} rounds, n=${n}; ms (median / p99 / min / max; per-round medians)`)
  for (const [k, xs] of Object.entries(figures)) {
    const st = stats(xs)
    const rm = perRound[k].map((x) => stats(x).median.toFixed(2)).join(' ')
    out.figures[k] = { ...st, round_medians: perRound[k].map((x) => stats(x).median) }
    console.log(`  ${k.padEnd(16)} ${st.median.toFixed(2)} / ${st.p99.toFixed(2)} / ${st.min.toFixed(2)} / ${st.max.toFixed(2)}   [${rm}]  n=${st.n}`)
  }
  console.log(`  density: ${density} paused sandboxes (python3 holding 8 MiB each) hold ${dens.held_paused_mib.toFixed(0)} MiB ` +
    `(${dens.per_sandbox_paused_mib.toFixed(1)} MiB each); after release ${dens.held_released_mib.toFixed(0)} MiB ` +
    `(${dens.per_sandbox_released_mib.toFixed(2)} MiB each)`)
  console.log(`  charged to the sandboxes' memory cgroups: ${chargedPaused.toFixed(0)} MiB paused, ` +
    `${chargedReleased.toFixed(0)} MiB after release (${(chargedReleased / density).toFixed(2)} MiB each: the writable layer's pages)`)
  mkdirSync(resolve(here, '..', process.env.HUTCH_BUILD, 'bench'), { recursive: true })
  writeFileSync(resolve(here, '..', process.env.HUTCH_BUILD, 'bench', 'lifecycle_bench.json'), JSON.stringify(out, null, 2))
} finally {
  hostProc.kill('SIGKILL')
  rmSync(dirname(conf), { recursive: true, force: true })
  await sleep(100)
  try { rmdirSync(hostGroup) } catch {}
  await d.stop()
}
