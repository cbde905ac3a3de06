// Three hutch nodes on one PostgreSQL store (tests/pg.sh's server: run with
// HUTCH_TEST_PG_DIR set, e.g. `eval "$(tests/pg.sh start)"`), one cluster
// secret, every call answered by any node (docs/operations.md "Several
// nodes"). Figures, each with its peer in the same run:
//   create     POST /sandboxes through the owner vs through another node
//              (placement forwards it), alternating, --creates of each
//   info       GET /sandboxes/{id} through the owner vs through another node
//              (the forwarding hop alone), alternating, --creates of each
//   exec       one command round trip (envd's process.Start of `true`)
//              through the owner vs through a forwarding node, --execs each
//   download   MB/s of a --mib MiB file (GET /files) through the owner vs
//              through a forwarding node, --downloads each
//   skew       --skew creates at --conc concurrent, spread over the three
//              nodes, whose memory budgets are 1:2:3 (admission's
//              memory_overcommit 0.2, 0.4, 0.6): where they land vs the
//              capacity shares
//   node bench/cluster_bench.mjs [--build build] [--creates 100] [--execs 300] [--mib 100] [--downloads 5]
//                                [--skew 300] [--conc 30]
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, now, stats, harness, envdRun } from './lib.mjs'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const pgDir = process.env.HUTCH_TEST_PG_DIR
if (!pgDir) throw new Error('HUTCH_TEST_PG_DIR is not set: eval "$(tests/pg.sh start)" first')
const { startDaemon, api } = await harness()
const nCreates = Number(arg('creates', 100))
const nExecs = Number(arg('execs', 300))
const mib = Number(arg('mib', 100))
const nDownloads = Number(arg('downloads', 5))
const nSkew = Number(arg('skew', 300))
const conc = Number(arg('conc', 30))

const pgsh = (...a) => execFileSync(join(root, 'tests', 'pg.sh'), a).toString().trim()
const uri = pgsh('createdb', pgDir, `hutch_cluster_bench_${process.pid}`)
const sql = (q) => execFileSync('psql', [uri, '-Atc', q]).toString().trim()
const dir = mkdtempSync(join(tmpdir(), 'hutch-cluster-bench-'))
mkdirSync(join(dir, 'slots'))
writeFileSync(join(dir, 'secret'), randomBytes(24).toString('hex') + '\n', { mode: 0o600 })
const overcommit = [0.2, 0.4, 0.6]
const nodes = []
const fmt = (s) => `median ${s.median.toFixed(2)}  p99 ${s.p99.toFixed(2)}  (n ${s.n})`

try {
  for (let i = 0; i < 3; i++) {
    const conf = join(dir, `n${i + 1}.conf`)
    // small sandboxes, so that 300 of them fit in the budgets; few pids each
    writeFileSync(conf, `admission.memory_overcommit = ${overcommit[i]}\ndefault_memory = 64M\ndefault_pids = 32\n`)
    nodes.push(await startDaemon(['--config', conf, '--store', uri, '--node-name', `n${i + 1}`, '--slots-dir', join(dir, 'slots'),
      '--cluster-secret-file', join(dir, 'secret')], i ? { apiKey: nodes[0].apiKey } : null,
    { HUTCH_CGROUP_PARENT: `hutch-bench-${process.pid}-n${i + 1}` }))
  }
  const budgets = sql("SELECT memory FROM nodes ORDER BY name").split('\n').map(Number)
  console.log(`nodes: budgets ${budgets.map((b) => (b / 2 ** 30).toFixed(1) + ' GiB').join(', ')}`)

  // ---- create: through the owner (n1) vs through n2, n1 the only placement
  sql("UPDATE nodes SET draining = (name <> 'n1')")
  const create = async (n) => {
    const t0 = now()
    const r = await api(n, 'POST', '/sandboxes', { templateID: 'base', timeout: 60 })
    const ms = now() - t0
    if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`)
    await api(nodes[0], 'DELETE', `/sandboxes/${r.json.sandboxID}`)
    return ms
  }
  for (let i = 0; i < 5; i++) { await create(nodes[0]); await create(nodes[1]) } // warm-up
  const direct = [], forwarded = []
  for (let i = 0; i < nCreates; i++) {
    direct.push(await create(nodes[0]))
    forwarded.push(await create(nodes[1]))
  }
  const cd = stats(direct), cf = stats(forwarded)
  console.log(`create ms   through the owner   ${fmt(cd)}`)
  console.log(`create ms   through another node ${fmt(cf)}   (+${(cf.median - cd.median).toFixed(2)} ms median)`)

  // ---- GET /sandboxes/{id}: the hop alone (no placement, no create)
  const info = { owner: [], fwd: [] }
  {
    const r = await api(nodes[0], 'POST', '/sandboxes', { templateID: 'base', timeout: 120 })
    const get = async (n, into) => {
      const t0 = now()
      const res = await api(n, 'GET', `/sandboxes/${r.json.sandboxID}`)
      if (res.status !== 200) throw new Error(`info: ${res.status} ${res.text}`)
      if (into) into.push(now() - t0)
    }
    for (let i = 0; i < 20; i++) { await get(nodes[0]); await get(nodes[1]) }
    for (let i = 0; i < nCreates; i++) { await get(nodes[0], info.owner); await get(nodes[1], info.fwd) }
    await api(nodes[0], 'DELETE', `/sandboxes/${r.json.sandboxID}`)
  }
  const io = stats(info.owner), inf = stats(info.fwd)
  console.log(`info ms     through the owner   ${fmt(io)}`)
  console.log(`info ms     through another node ${fmt(inf)}   (+${(inf.median - io.median).toFixed(2)} ms median)`)

  // ---- the data plane of one sandbox on n1, through n1 and through n2
  const r = await api(nodes[0], 'POST', '/sandboxes', { templateID: 'base', timeout: 600 })
  const id = r.json.sandboxID, token = r.json.envdAccessToken
  const ex = { owner: [], fwd: [] }
  for (let i = 0; i < 20; i++) { await envdRun(nodes[0], id, token, ['true']); await envdRun(nodes[1], id, token, ['true']) }
  for (let i = 0; i < nExecs; i++) {
    let t0 = now()
    await envdRun(nodes[0], id, token, ['true'])
    ex.owner.push(now() - t0)
    t0 = now()
    await envdRun(nodes[1], id, token, ['true'])
    ex.fwd.push(now() - t0)
  }
  const eo = stats(ex.owner), ef = stats(ex.fwd)
  console.log(`exec ms     through the owner   ${fmt(eo)}`)
  console.log(`exec ms     through another node ${fmt(ef)}   (+${(ef.median - eo.median).toFixed(2)} ms median)`)

  await envdRun(nodes[0], id, token, ['sh', '-c', `head -c ${mib << 20} /dev/urandom > /tmp/big`])
  const download = async (n) => {
    const t0 = now()
    const res = await fetch(`${n.url}/files?path=/tmp/big`, {
      headers: { 'E2b-Sandbox-Id': id, 'X-Access-Token': token, Authorization: 'Basic ' + Buffer.from('user:').toString('base64') },
    })
    let got = 0
    for await (const c of res.body) got += c.length
    if (res.status !== 200 || got !== mib << 20) throw new Error(`download: ${res.status}, ${got} bytes`)
    return (mib * 1.048576) / ((now() - t0) / 1000)
  }
  const dl = { owner: [], fwd: [] }
  for (let i = 0; i < nDownloads; i++) {
    dl.owner.push(await download(nodes[0]))
    dl.fwd.push(await download(nodes[1]))
  }
  const dOwner = stats(dl.owner), dFwd = stats(dl.fwd)
  console.log(`download MB/s through the owner   median ${dOwner.median.toFixed(0)}  min ${dOwner.min.toFixed(0)}  max ${dOwner.max.toFixed(0)}`)
  console.log(`download MB/s through another node median ${dFwd.median.toFixed(0)}  min ${dFwd.min.toFixed(0)}  max ${dFwd.max.toFixed(0)}`)
  await api(nodes[0], 'DELETE', `/sandboxes/${id}`)

  // ---- placement under skew: nSkew creates, conc at a time, sent round robin
  sql('UPDATE nodes SET draining = false')
  const made = []
  let next = 0, failed = 0
  const t0 = now()
  await Promise.all(Array.from({ length: conc }, async () => {
    while (next < nSkew) {
      const i = next++
      const res = await api(nodes[i % 3], 'POST', '/sandboxes', { templateID: 'base', timeout: 600 })
      if (res.status === 201) made.push(res.json.sandboxID)
      else failed++
    }
  }))
  const secs = (now() - t0) / 1000
  const owners = sql(`SELECT owner, count(*) FROM sandboxes GROUP BY owner ORDER BY owner`).split('\n')
  const total = budgets.reduce((a, b) => a + b, 0)
  console.log(`skew: ${made.length} created, ${failed} failed, in ${secs.toFixed(1)} s`)
  for (const line of owners) {
    const [name, count] = line.split('|')
    const share = budgets[Number(name.slice(1)) - 1] / total
    const got = Number(count) / made.length
    console.log(`  ${name}: ${count} (${(got * 100).toFixed(1)}%), capacity share ${(share * 100).toFixed(1)}%,` +
      ` off by ${((got / share - 1) * 100).toFixed(1)}% of its share`)
  }
  for (let i = 0; i < made.length; i += conc)
    await Promise.all(made.slice(i, i + conc).map((s, j) => api(nodes[j % 3], 'DELETE', `/sandboxes/${s}`)))
} finally {
  for (const n of nodes) await n.stop()
  try { pgsh('dropdb', pgDir, `hutch_cluster_bench_${process.pid}`) } catch {}
  rmSync(dir, { recursive: true, force: true })
}
