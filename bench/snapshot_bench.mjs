// Snapshots and forks through hutch serve's HTTP API.
//   node bench/snapshot_bench.mjs [--rounds 5] [--files 10000] [--mb 500] [--forks 10] [--build build]
// Figures (ms; median, p99 and per-round values):
//   snapshot_dirty   POST /sandboxes/{id}/snapshots right after the sandbox rewrote 1% of its files
//                    (btrfs writes the dirty pages out inside the freeze)
//   snapshot_clean   the same after a `sync` inside the sandbox (nothing to write out)
//   frozen_dirty, frozen_clean   the daemon's own measure of the freeze window (its log line)
//   create_from      POST /sandboxes from the snapshot, until answered (the new layer: a writable
//                    snapshot, its files moved to the new uid range)
//   fork             POST /sandboxes/{id}/fork {count: --forks}, until every fork is answered
// The source holds --mb MB of random data in --files files under /home/user/data.
// Not a test: it prints numbers (and JSON to <build>/bench/snapshot_bench.json).
import { writeFileSync, mkdirSync } from 'node:fs'
import { resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, now, stats, recorder, harness, envdRun } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const { startDaemon, api } = await harness()
const rounds = Number(arg('rounds', 5))
const files = Number(arg('files', 10000))
const mb = Number(arg('mb', 500))
const forks = Number(arg('forks', 10))
const build = arg('build', 'build')
const { figures, perRound, add } = recorder()

const d = await startDaemon()
const frozenMs = () => [...d.log().matchAll(/of its files taken \((?:frozen|paused) for (\d+) ms\)/g)].map((m) => Number(m[1]))
try {
  const src = await api(d, 'POST', '/sandboxes', { templateID: 'base', timeout: 3600 })
  if (src.status !== 201) throw new Error(`create: ${src.status} ${JSON.stringify(src.json)}`)
  const id = src.json.sandboxID
  const tok = src.json.envdAccessToken
  const per = Math.floor((mb * 1e6) / files)
  const fill = `import os\nos.makedirs('/home/user/data', exist_ok=True)\nfor i in range(${files}):\n    open('/home/user/data/f%05d' % i, 'wb').write(os.urandom(${per}))\n`
  const t0 = now()
  await envdRun(d, id, tok, ['python3', '-c', fill])
  await envdRun(d, id, tok, ['sync'])
  console.log(`source: ${files} files, ${mb} MB written in ${(now() - t0).toFixed(0)} ms`)
  const touch = `import os\nfor i in range(0, ${files}, 100):\n    open('/home/user/data/f%05d' % i, 'r+b').write(os.urandom(4096))\n`
  const snaps = []
  for (let r = 0; r < rounds; r++) {
    await envdRun(d, id, tok, ['python3', '-c', touch])
    let before = frozenMs().length
    let t = now()
    let s = await api(d, 'POST', `/sandboxes/${id}/snapshots`, {})
    add('snapshot_dirty', now() - t, r)
    if (s.status !== 201) throw new Error(`snapshot: ${s.status}`)
    add('frozen_dirty', frozenMs()[before], r)
    snaps.push(s.json.snapshotID)
    await envdRun(d, id, tok, ['sync'])
    before = frozenMs().length
    t = now()
    s = await api(d, 'POST', `/sandboxes/${id}/snapshots`, {})
    add('snapshot_clean', now() - t, r)
    add('frozen_clean', frozenMs()[before], r)
    snaps.push(s.json.snapshotID)
    t = now()
    const c = await api(d, 'POST', '/sandboxes', { templateID: s.json.snapshotID, timeout: 60 })
    add('create_from', now() - t, r)
    if (c.status !== 201) throw new Error(`create from snapshot: ${c.status} ${JSON.stringify(c.json)}`)
    await api(d, 'DELETE', `/sandboxes/${c.json.sandboxID}`)
  }
  for (const s of snaps) await api(d, 'DELETE', `/templates/${s}`)
  for (let r = 0; r < Math.max(1, Math.floor(rounds / 2)); r++) {
    const t = now()
    const f = await api(d, 'POST', `/sandboxes/${id}/fork`, { count: forks, timeout: 60 })
    add('fork', now() - t, r)
    const ok = f.json.filter((x) => x.sandbox)
    if (ok.length !== forks) throw new Error(`fork: ${JSON.stringify(f.json)}`)
    for (const x of ok) await api(d, 'DELETE', `/sandboxes/${x.sandbox.sandboxID}`)
  }
  await api(d, 'DELETE', `/sandboxes/${id}`)
} finally {
  await d.stop()
}
const out = {}
for (const [k, xs] of Object.entries(figures)) {
  out[k] = { ...stats(xs), rounds: perRound[k].map((x) => stats(x).median) }
  const s = out[k]
  console.log(`${k.padEnd(16)} median ${s.median.toFixed(1).padStart(7)}  p99 ${s.p99.toFixed(1).padStart(7)}  rounds ${s.rounds.map((x) => x.toFixed(1)).join(' ')}`)
}
mkdirSync(resolve(here, '..', build, 'bench'), { recursive: true })
writeFileSync(resolve(here, '..', build, 'bench', 'snapshot_bench.json'), JSON.stringify(out, null, 1))
