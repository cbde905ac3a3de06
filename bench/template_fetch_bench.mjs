// Template distribution between two hutch nodes on one PostgreSQL store
// (run with HUTCH_TEST_PG_DIR set, e.g. `eval "$(tests/pg.sh start)"`;
// docs/operations.md "Templates across nodes"). A template of --mib MiB of
// incompressible files (plus a small root) is built on n1 --runs times under
// new names; with n1 draining, a create of each through n2 makes n2 fetch it
// (stream, sha256, unpack, rename) and then create. Figures, with their
// peers in the same run:
//   fetch      the fetch as n2 logs it (ms, MiB/s)   vs   the same tree copied
//              locally with `tar -cf - | tar -xf -` (ms, MiB/s)
//   create     the create that fetched               vs   a create of a template
//              n2 already has (the same one, again)
//   node bench/template_fetch_bench.mjs [--build build] [--mib 200] [--runs 5]
// A/B: --ab DIR_A,DIR_B --rounds N runs this bench N times for each build
// (hutch's build dirs, e.g. main's and a branch's), alternating A and B
// (the order swapped every round, so that a slow spell of a loaded
// machine hits both), and prints each figure for A and B over all rounds.
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, now, stats, harness } from './lib.mjs'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const pgDir = process.env.HUTCH_TEST_PG_DIR
if (!pgDir) throw new Error('HUTCH_TEST_PG_DIR is not set: eval "$(tests/pg.sh start)" first')
const fmt = (s, unit) => `median ${s.median.toFixed(1)}  p99 ${s.p99.toFixed(1)} ${unit}  (n ${s.n})`
const figures = {
  fetchMs: 'fetch node to node (ms)', fetchRate: 'fetch node to node (MiB/s)', streamMs: '  of it: stream + sha256 (ms)',
  unpackMs: '  of it: unpack (ms)', localMs: 'local tar | tar (ms)', localRate: 'local tar | tar (MiB/s)',
  createFetch: 'create that fetched (ms)', createHave: 'create, template on the node (ms)',
}

if (arg('ab', '')) {
  const builds = arg('ab', '').split(',')
  const rounds = Number(arg('rounds', 3))
  const all = builds.map(() => ({}))
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 ? [1, 0] : [0, 1]) {
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--build', builds[side],
        '--mib', arg('mib', 200), '--runs', arg('runs', 5), '--json', 'true'], { stdio: ['ignore', 'pipe', 'inherit'] })
      const got = JSON.parse(out.toString().trim().split('\n').pop())
      for (const [k, xs] of Object.entries(got)) (all[side][k] ||= []).push(...xs)
    }
  }
  console.log(`template of ${arg('mib', 200)} MiB, ${rounds} rounds of ${arg('runs', 5)} runs, A = ${builds[0]}, B = ${builds[1]}`)
  for (const [k, what] of Object.entries(figures)) {
    if (!all[0][k]?.length && !all[1][k]?.length) continue
    for (const side of [0, 1]) if (all[side][k]?.length) console.log(`${'AB'[side]} ${what.padEnd(36)} ${fmt(stats(all[side][k]), '')}`)
  }
  process.exit(0)
}
const { startDaemon, api, makeRoot, hutchBin } = await harness()
const mib = Number(arg('mib', 200))
const runs = Number(arg('runs', 5))

const pgsh = (...a) => execFileSync(join(root, 'tests', 'pg.sh'), a).toString().trim()
const uri = pgsh('createdb', pgDir, `hutch_tplfetch_bench_${process.pid}`)
const sql = (q) => execFileSync('psql', [uri, '-Atc', q]).toString().trim()
const dir = mkdtempSync(join(tmpdir(), 'hutch-tplfetch-bench-'))
mkdirSync(join(dir, 'slots'))
writeFileSync(join(dir, 'secret'), randomBytes(24).toString('hex') + '\n', { mode: 0o600 })
const nodes = []
const until = async (fn, ms = 20000) => {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) if (fn()) return
  throw new Error('timed out')
}

try {
  for (let i = 0; i < 2; i++)
    nodes.push(await startDaemon(['--store', uri, '--node-name', `n${i + 1}`, '--slots-dir', join(dir, 'slots'),
      '--cluster-secret-file', join(dir, 'secret')], i ? { apiKey: nodes[0].apiKey } : null,
    { HUTCH_CGROUP_PARENT: `hutch-bench-${process.pid}-n${i + 1}` }))
  // the tree: a runnable root and --mib MiB in 4 MiB files
  const tree = join(dir, 'tree')
  makeRoot(tree)
  mkdirSync(join(tree, 'data'))
  for (let i = 0; i < mib / 4; i++) writeFileSync(join(tree, 'data', `f${i}`), randomBytes(4 << 20))
  sql("UPDATE nodes SET draining = (name = 'n1')")
  const fetchMs = [], fetchRate = [], localMs = [], localRate = [], createFetch = [], createHave = []
  const streamMs = [], unpackMs = []
  for (let i = 0; i < runs; i++) {
    const id = `fetched-${i}`
    const b = spawnSync(hutchBin, ['template', 'build', id, '--data-dir', join(nodes[0].base, 'data'), '--from', tree],
      { env: nodes[0].env, encoding: 'utf8' })
    if (b.status !== 0) throw new Error(b.stderr)
    await until(() => sql(`SELECT count(*) FROM nodes WHERE name = 'n1' AND '${id}' = ANY(string_to_array(templates, ','))`) === '1' &&
      sql(`SELECT count(*) FROM templates WHERE id = '${id}'`) === '1')
    // the peer: the same tree copied on this host
    const dst = join(dir, `copy-${i}`)
    mkdirSync(dst)
    let t0 = now()
    execFileSync('sh', ['-c', `tar -C "$1" -cf - . | tar -C "$2" -xf -`, 'copy', join(nodes[0].base, 'data', 'templates', id, 'rootfs'), dst])
    const lm = now() - t0
    rmSync(dst, { recursive: true, force: true })
    localMs.push(lm)
    localRate.push(mib / (lm / 1000))
    t0 = now()
    const r = await api(nodes[1], 'POST', '/sandboxes', { templateID: id, timeout: 60 })
    createFetch.push(now() - t0)
    if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`)
    await api(nodes[1], 'DELETE', `/sandboxes/${r.json.sandboxID}`)
    const m = [...nodes[1].log().matchAll(new RegExp(`template ${id} fetched from node n1 and installed: (\\d+) bytes, \\d+ files in (\\d+) ms(?: \\(stream (\\d+) ms, unpack (\\d+) ms\\))?`, 'g'))]
    const ms = Number(m[m.length - 1][2])
    fetchMs.push(ms)
    // the phases, as a build that logs them says
    if (m[m.length - 1][3]) {
      streamMs.push(Number(m[m.length - 1][3]))
      unpackMs.push(Number(m[m.length - 1][4]))
    }
    fetchRate.push(mib / (ms / 1000))
    t0 = now()
    const again = await api(nodes[1], 'POST', '/sandboxes', { templateID: id, timeout: 60 })
    createHave.push(now() - t0)
    if (again.status !== 201) throw new Error(`create: ${again.status} ${again.text}`)
    await api(nodes[1], 'DELETE', `/sandboxes/${again.json.sandboxID}`)
  }
  if (arg('json', '')) {
    console.log(JSON.stringify({ fetchMs, fetchRate, streamMs, unpackMs, localMs, localRate, createFetch, createHave }))
  } else {
  console.log(`template of ${mib} MiB, ${runs} runs`)
  console.log(`fetch node to node  ${fmt(stats(fetchMs), 'ms')};  ${fmt(stats(fetchRate), 'MiB/s')}`)
  if (streamMs.length) console.log(`  stream ${fmt(stats(streamMs), 'ms')};  unpack ${fmt(stats(unpackMs), 'ms')}`)
  console.log(`local tar | tar     ${fmt(stats(localMs), 'ms')};  ${fmt(stats(localRate), 'MiB/s')}`)
  console.log(`create that fetched ${fmt(stats(createFetch), 'ms')}`)
  console.log(`create, template on the node ${fmt(stats(createHave), 'ms')}`)
  }
} finally {
  for (const n of nodes) await n.stop()
  try { pgsh('dropdb', pgDir, `hutch_tplfetch_bench_${process.pid}`) } catch {}
  rmSync(dir, { recursive: true, force: true })
}
