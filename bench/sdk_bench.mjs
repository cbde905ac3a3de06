// Speed of hutch serve as the unmodified e2b SDK sees it.
//   node bench/sdk_bench.mjs [--rounds 3] [--n 40] [--build build]
// Figures (median, p95, p99 over all samples, plus per-round medians):
//   create        Sandbox.create()
//   first_python  Sandbox.create() then commands.run('python3 -c "print(1)"')
//   run_true      commands.run('true') on a warm sandbox
//   concurrent50  latency of each of 50 creates issued at once (p95 is the target)
// Baselines in the same run, alternating with hutch:
//   host_true     node spawning `bash --noprofile --norc -c true` on the host (commands.run runs `bash -l -c`,
//                 whose profile scripts cost ~10 ms more inside a sandbox; the host's root profile is not comparable)
//   bwrap_python  node spawning bwrap (equivalent namespaces) running python3 -c 'print(1)'
import { arg, now, stats, recorder, run, bwrapArgs as bwrap, harness, sdk } from './lib.mjs'

const { Sandbox } = sdk()
const { startDaemon } = await harness()
const rounds = Number(arg('rounds', 3))
const n = Number(arg('n', 40))
async function time(fn) {
  const t = now()
  await fn()
  return now() - t
}
const bwrapArgs = bwrap('/usr/bin/python3', '-c', 'print(1)')
const median = (xs) => stats(xs).median
const { figures, perRound, add } = recorder()

const d = await startDaemon()
try {
  const warm = await Sandbox.create()
  for (let i = 0; i < 5; i++) await warm.commands.run('true')
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < n; i++) {
      let sbx
      add('create', await time(async () => { sbx = await Sandbox.create() }), r)
      await sbx.kill()
      add('first_python', await time(async () => {
        const s = await Sandbox.create()
        await s.commands.run('python3 -c "print(1)"')
        sbx = s
      }), r)
      await sbx.kill()
      add('bwrap_python', await time(() => run('/usr/bin/bwrap', bwrapArgs)), r)
      for (let k = 0; k < 3; k++) {
        add('run_true', await time(() => warm.commands.run('true')), r)
        add('host_true', await time(() => run('/bin/bash', ['--noprofile', '--norc', '-c', 'true'])), r)
      }
    }
    const lat = []
    const made = await Promise.all(Array.from({ length: 50 }, async () => {
      const t = now()
      const s = await Sandbox.create()
      lat.push(now() - t)
      return s
    }))
    for (const l of lat) add('concurrent50', l, r)
    await Promise.all(made.map((s) => s.kill()))
    process.stderr.write(`round ${r + 1}/${rounds} done\n`)
  }
  await warm.kill()
} finally {
  await d.stop()
}

const fmt = (x) => x.toFixed(2).padStart(8)
console.log(`figure (ms)        n   median      p95      p99      min      max   round medians`)
for (const [k, xs] of Object.entries(figures)) {
  const s = stats(xs)
  const rm = perRound[k].map((v) => median(v).toFixed(2)).join(' ')
  console.log(`${k.padEnd(14)} ${String(s.n).padStart(5)} ${fmt(s.median)} ${fmt(s.p95)} ${fmt(s.p99)} ${fmt(s.min)} ${fmt(s.max)}   ${rm}`)
}
const ratio = (a, b) => (median(figures[a]) / median(figures[b])).toFixed(2)
console.log(`\nfirst_python / bwrap_python  ${ratio('first_python', 'bwrap_python')}x`)
console.log(`run_true / host_true          ${ratio('run_true', 'host_true')}x`)
