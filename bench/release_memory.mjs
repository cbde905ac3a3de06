// Host memory held by released sandboxes (paused, memory released: no
// process, files kept on disk) through hutch serve's HTTP API.
//   node bench/release_memory.mjs [--sandboxes 200] [--mb 50] [--parallel 4] [--readings 5] [--build build]
// Each sandbox writes --mb MB into /home/user (dd, then sync) and is paused
// with {"memory": false}. Host memory is read at three points, each after
// `sync` and `echo 3 > /proc/sys/vm/drop_caches` (so that page cache and
// reclaimable slab, which the kernel gives back on demand, are out of the
// figure), as the median of --readings readings one second apart:
//   baseline   the daemon up, no sandbox
//   released   every sandbox released
//   deleted    every sandbox deleted again
// "used" is MemTotal - MemAvailable from /proc/meminfo: the whole host, so
// other processes' drift is in it; the attributable part is printed beside
// it: the daemon's RSS, the memory.current (or usage_in_bytes) of the
// daemon's cgroup parent (what its sandboxes' groups still hold), and the
// kernel's unreclaimable slab and per-CPU memory (a memory cgroup that is
// gone but still charged lingers there). "held" sums the daemon's RSS, the
// cgroup and the two kernel deltas: what released sandboxes can cost.
// Not a test: it prints numbers (and JSON to <build>/bench/release_memory.json).
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, stats, sleep, harness, envdRun } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const { startDaemon, api } = await harness()
const n = Number(arg('sandboxes', 200))
const mb = Number(arg('mb', 50))
const parallel = Number(arg('parallel', 4))
const readings = Number(arg('readings', 5))
const build = arg('build', 'build')

const meminfo = () => Object.fromEntries(readFileSync('/proc/meminfo', 'utf8').trim().split('\n')
  .map((l) => l.split(/:\s+/)).map(([k, v]) => [k, Number(v.split(' ')[0]) / 1024]))
const rssMiB = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024
function cgroupMiB(parent) {
  for (const f of [`/sys/fs/cgroup/${parent}/memory.current`, `/sys/fs/cgroup/memory/${parent}/memory.usage_in_bytes`])
    if (existsSync(f)) return Number(readFileSync(f, 'utf8')) / 1048576
  return 0
}
async function reading(d) {
  execFileSync('sh', ['-c', 'sync; echo 3 > /proc/sys/vm/drop_caches'])
  const xs = []
  for (let i = 0; i < readings; i++) {
    await sleep(1000)
    const m = meminfo()
    xs.push({ used: m.MemTotal - m.MemAvailable, sunreclaim: m.SUnreclaim, percpu: m.Percpu, cached: m.Cached,
      daemon: rssMiB(d.pid), cgroup: cgroupMiB(d.env.HUTCH_CGROUP_PARENT) })
  }
  const med = (k) => stats(xs.map((x) => x[k])).median
  return { used: med('used'), sunreclaim: med('sunreclaim'), percpu: med('percpu'), cached: med('cached'), daemon: med('daemon'),
    cgroup: med('cgroup'), spread: Math.max(...xs.map((x) => x.used)) - Math.min(...xs.map((x) => x.used)) }
}

const d = await startDaemon()
const out = { sandboxes: n, mb, readings: {} }
const ids = []
try {
  out.readings.baseline = await reading(d)
  let next = 0
  const t0 = Date.now()
  const worker = async () => {
    while (next < n) {
      next++
      const c = await api(d, 'POST', '/sandboxes', { templateID: 'base', timeout: 3600 })
      if (c.status !== 201) throw new Error(`create: ${c.status} ${JSON.stringify(c.json)}`)
      ids.push(c.json.sandboxID)
      await envdRun(d, c.json.sandboxID, c.json.envdAccessToken,
        ['sh', '-c', `dd if=/dev/zero of=/home/user/blob bs=1M count=${mb} 2>/dev/null && sync`])
      const p = await api(d, 'POST', `/sandboxes/${c.json.sandboxID}/pause`, { memory: false })
      if (p.status !== 204) throw new Error(`pause: ${p.status} ${JSON.stringify(p.json)}`)
    }
  }
  await Promise.all(Array.from({ length: parallel }, worker))
  console.log(`${n} sandboxes with ${mb} MB each, released, in ${((Date.now() - t0) / 1000).toFixed(0)} s`)
  const detail = await api(d, 'GET', `/sandboxes/${ids[0]}`)
  out.released_flag = detail.json?.memoryReleased
  out.readings.released = await reading(d)
  for (const id of ids) await api(d, 'DELETE', `/sandboxes/${id}`)
  ids.length = 0
  out.readings.deleted = await reading(d)
} finally {
  for (const id of ids) await api(d, 'DELETE', `/sandboxes/${id}`).catch(() => {})
  await d.stop()
}
const b = out.readings.baseline
console.log(`memoryReleased of the first: ${out.released_flag}`)
const cols = ['used', 'Δused', 'spread', 'daemon', 'Δdaemon', 'cgroup', 'ΔSUnreclaim', 'ΔPercpu', 'Δheld']
console.log('MiB        ' + cols.map((c) => c.padStart(11)).join(''))
for (const [k, r] of Object.entries(out.readings)) {
  r.held = r.daemon - b.daemon + (r.cgroup - b.cgroup) + (r.sunreclaim - b.sunreclaim) + (r.percpu - b.percpu)
  const v = [r.used, r.used - b.used, r.spread, r.daemon, r.daemon - b.daemon, r.cgroup, r.sunreclaim - b.sunreclaim,
    r.percpu - b.percpu, r.held]
  console.log(k.padEnd(11) + v.map((x) => x.toFixed(1).padStart(11)).join(''))
}
mkdirSync(resolve(here, '..', build, 'bench'), { recursive: true })
writeFileSync(resolve(here, '..', build, 'bench', 'release_memory.json'), JSON.stringify(out, null, 2) + '\n')
