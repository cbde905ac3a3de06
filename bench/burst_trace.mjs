// Where one burst of 50 pooled Sandbox.create() waits, seen from the system calls of the daemon and of the client
// (docs/benchmarks.md "A pooled create inside the daemon").
//   node bench/burst_trace.mjs [--build build] [--bursts 5] [--traced 5]
// Root, perf(1) installed. One hutch serve with the default pool (which grows to 50 with the demand); --bursts
// unmeasured bursts, then --traced traced bursts of creates, each followed by one of getInfo() on the same
// sandboxes (each from a full pool).
// `perf trace` records readv/writev of the daemon and read/write of this process (no ptrace, so the daemon runs
// at nearly its own speed). Per connection: the daemon's first readv of the request to its first writev of the
// answer ("in the daemon"), and the client's first write to its first read ("at the client"); median and p95 of
// each, and when the first and last requests were read and answered (ms from the burst's first client write).
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { arg, sleep, stats, harness, sdk } from './lib.mjs'

const { Sandbox } = sdk()
const { startDaemon } = await harness()
const bursts = Number(arg('bursts', 5))
const traced = Number(arg('traced', 5))
const run = mkdtempSync('/dev/shm/hutch-bench-')
const outDir = mkdtempSync(join(tmpdir(), 'hutch-trace-'))
const out = join(outDir, 'perf.txt')
const d = await startDaemon(['--pool-size', '2'], null, { HUTCH_RUN_DIR: run })
const o = { apiKey: d.apiKey, apiUrl: d.url, sandboxUrl: d.url }

async function poolFull(want) {
  for (;;) {
    const m = await (await fetch(d.url + '/metrics')).text()
    const get = (st) => Number(m.match(new RegExp(`hutch_pool_sandboxes\\{template="base",state="${st}"\\} (\\d+)`))?.[1] ?? 0)
    if (get('ready') >= want && get('building') === 0) return
    await sleep(5)
  }
}
const createBurst = () => Promise.all(Array.from({ length: 50 }, () => Sandbox.create(o)))

try {
  for (let b = 0; b < bursts; b++) {
    await poolFull(b ? 50 : 2)
    await Promise.all((await createBurst()).map((s) => s.kill()))
  }
  const all = { create: { daemon: [], client: [] }, getInfo: { daemon: [], client: [] } }
  for (let t = 0; t < traced; t++) {
    await poolFull(50)
    const perf = spawn('perf', ['trace', '--no-inherit', '-o', out, '-e', 'read,readv,write,writev', '-p', `${d.pid},${process.pid}`],
      { stdio: 'inherit' })
    await sleep(1500) // perf attached
    const made = await createBurst()
    await sleep(50) // a gap between the two bursts
    await Promise.all(made.map((s) => Sandbox.getInfo(s.sandboxId, o)))
    await sleep(100)
    perf.kill('SIGINT')
    await new Promise((res) => perf.on('exit', res))
    await Promise.all(made.map((s) => s.kill()))
    report(readFileSync(out, 'utf8'), all)
  }
  for (const [name, v] of Object.entries(all)) {
    const s = stats(v.daemon), c = stats(v.client)
    console.log(`all ${traced} ${name} bursts: in the daemon median ${s.median.toFixed(2)} p95 ${s.p95.toFixed(2)} ms (n ${s.n}); ` +
      `at the client median ${c.median.toFixed(2)} p95 ${c.p95.toFixed(2)} ms`)
  }
} finally {
  await d.stop()
  rmSync(run, { recursive: true, force: true })
  rmSync(outDir, { recursive: true, force: true })
}

// perf trace lines: "  12.345 ( 0.004 ms): hutch-full/123 readv(fd: 18, ...) = 471"
function report(text, all) {
  const ev = []
  for (const line of text.split('\n')) {
    const m = line.match(/^\s*([\d.]+) \(\s*[\d.]* ms\): (\S+)\/\d+ (\w+)\(fd: (\d+).*\)\s+= (-?\d+)/)
    if (m && Number(m[5]) > 0) ev.push({ t: Number(m[1]), daemon: m[2].startsWith('hutch'), sc: m[3], fd: Number(m[4]) })
  }
  // the client's socket writes (fds 0-2 are stdio): two bursts, split at the widest gap
  const cw = ev.filter((e) => !e.daemon && e.sc.startsWith('write') && e.fd > 2).map((e) => e.t)
  let split = 1
  for (let i = 1; i < cw.length; i++) if (cw[i] - cw[i - 1] > cw[split] - cw[split - 1]) split = i
  const windows = [['create', cw[0], cw[split]], ['getInfo', cw[split], Infinity]]
  for (const [name, start, end] of windows) {
    const first = (pred) => {
      const m = new Map()
      for (const e of ev) if (e.t >= start - 1 && e.t < end - 1 && pred(e) && !m.has(e.fd)) m.set(e.fd, e.t - start)
      return m
    }
    const dIn = first((e) => e.daemon && e.sc === 'readv'), dOut = first((e) => e.daemon && e.sc === 'writev')
    const cOut = first((e) => !e.daemon && e.sc.startsWith('write') && e.fd > 2), cIn = first((e) => !e.daemon && e.sc === 'read' && e.fd > 2)
    const pair = (a, b) => [...a].filter(([fd]) => b.has(fd)).map(([fd, t]) => b.get(fd) - t)
    const inDaemon = pair(dIn, dOut), atClient = pair(cOut, cIn)
    if (!inDaemon.length || !atClient.length) {
      console.log(`${name}: perf recorded no request of this burst (${ev.length} calls in the trace)`)
      continue
    }
    all[name].daemon.push(...inDaemon)
    all[name].client.push(...atClient)
    const s = stats(inDaemon), c = stats(atClient)
    const span = (m) => `${Math.min(...m.values()).toFixed(1)}-${Math.max(...m.values()).toFixed(1)}`
    console.log(`${name}: in the daemon (read -> answer written) median ${s.median.toFixed(2)} p95 ${s.p95.toFixed(2)} ms (n ${s.n}); ` +
      `at the client (sent -> answer read) median ${c.median.toFixed(2)} p95 ${c.p95.toFixed(2)} ms; ` +
      `requests read at ${span(dIn)} ms, answers written at ${span(dOut)} ms`)
  }
}
