// What a large download through a port costs the daemon: --n downloads of
// --mib MiB each from the ports benchmark's Python server (ports_bench.mjs's
// /big) through `hutch serve`, one at a time, with the daemon's CPU time
// (utime + stime from /proc) and context switches over them, and each
// download's MB/s. CPU time per byte holds up on a loaded machine where MB/s
// do not. With --perf FILE, `perf record -g` on the daemon over the same
// downloads (perf report -i FILE --no-children --sort symbol).
//   sudo node bench/ports_dl_cpu.mjs [--build build] [--n 4] [--mib 256] [--perf FILE]
import http from 'node:http'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, harness, sdk, sleep } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const { Sandbox } = sdk()
const { startDaemon } = await harness()
const BIG = /const BIG_SERVER = String\.raw`([\s\S]*?)`\n/.exec(readFileSync(join(here, 'ports_bench.mjs'), 'utf8'))[1]
const n = Number(arg('n', 4))
const mib = Number(arg('mib', 256))
const perfOut = arg('perf', '')

const d = await startDaemon()
const port = Number(new URL(d.url).port)
const sbx = await Sandbox.create({ timeoutMs: 600_000 })
const download = () => new Promise((res, rej) => {
  const t0 = process.hrtime.bigint()
  let got = 0
  const req = http.request({ host: '127.0.0.1', port, path: `/big?n=${mib * 1048576}`, agent: false,
    headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8001' } }, (r) => {
    r.on('data', (c) => { got += c.length })
    r.on('end', () => (got === mib * 1048576 ? res(got / 1e6 / (Number(process.hrtime.bigint() - t0) / 1e9)) : rej(new Error(`${got} bytes`))))
  })
  req.on('error', rej)
  req.end()
})
const sample = () => {
  const st = readFileSync(`/proc/${d.pid}/stat`, 'utf8').split(') ')[1].split(' ')
  const status = readFileSync(`/proc/${d.pid}/status`, 'utf8')
  const sw = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)[1])
  // fields 14 and 15 of stat (utime, stime), counted after the command's ')'
  return { cpu: (Number(st[11]) + Number(st[12])) / 100, vol: sw('voluntary_ctxt_switches'), invol: sw('nonvoluntary_ctxt_switches') }
}
try {
  await sbx.files.write('/tmp/big.py', BIG)
  await sbx.commands.run('python3 /tmp/big.py', { background: true, timeoutMs: 0 })
  for (let i = 0; i < 100; i++) {
    if (await download().then(() => true, () => false)) break // also the warm-up
    await sleep(100)
  }
  const perf = perfOut ? spawn('perf', ['record', '-F', '999', '-e', 'cpu-clock', '-g', '-o', perfOut, '-p', String(d.pid)], { stdio: 'ignore' }) : null
  if (perf) await sleep(500)
  const s0 = sample()
  const rates = []
  for (let i = 0; i < n; i++) rates.push(Math.round(await download()))
  const s1 = sample()
  if (perf) {
    perf.kill('SIGINT')
    await new Promise((r) => perf.on('exit', r))
  }
  const gib = (n * mib) / 1024
  console.log(JSON.stringify({ MBps: rates, daemon_cpu_s_per_GiB: +((s1.cpu - s0.cpu) / gib).toFixed(3),
    voluntary_switches_per_GiB: Math.round((s1.vol - s0.vol) / gib), involuntary_switches_per_GiB: Math.round((s1.invol - s0.invol) / gib) }))
} finally {
  await sbx.kill().catch(() => {})
  await d.stop()
}
