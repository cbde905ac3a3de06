// The PostgreSQL store through the API (E2E_STORE=postgresql, run.sh then
// starts the server; skipped otherwise): the daemon's rows are in the
// database, and an outage of the database is 503 with Retry-After while it
// lasts, then everything is served again with nothing lost.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, api, sleep, root, hutchBin } from './harness.mjs'

const pgDir = process.env.E2E_STORE === 'postgresql' ? process.env.HUTCH_TEST_PG_DIR : null
const skip = pgDir ? false : 'E2E_STORE=postgresql is not set (tests/e2e/run.sh starts a server then)'
const pgsh = (...args) => execFileSync(join(root, 'tests', 'pg.sh'), args)
let d, serverDown = false

before(async () => { if (!skip) d = await startDaemon() })
after(async () => {
  if (serverDown) pgsh('up', pgDir)
  const st = await d?.stop()
  if (d) assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d.log().slice(-3000)}`)
})

function sql(query) {
  const uri = readFileSync(join(d.base, 'store-uri'), 'utf8').trim()
  return execFileSync('psql', [uri, '-Atc', query]).toString().trim()
}

test('the sandboxes and the key are rows in PostgreSQL', { skip }, async () => {
  assert.match(d.log(), /store postgresql/)
  const sbx = await Sandbox.create({ metadata: { who: 'pg' } })
  try {
    assert.equal(sql(`SELECT state || ' ' || (metadata->>'who') FROM sandboxes WHERE id = '${sbx.sandboxId}'`), 'running pg')
    assert.equal(sql('SELECT count(*) FROM api_keys'), '1')
  } finally {
    await sbx.kill()
  }
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id = '${sbx.sandboxId}'`), '0')
})

test('while PostgreSQL is down the API answers 503 with Retry-After; after, nothing is lost', { skip }, async () => {
  const a = await Sandbox.create({ timeoutMs: 120_000 })
  try {
    pgsh('down', pgDir)
    serverDown = true
    for (const [method, path, body] of [['GET', '/v2/sandboxes'], ['POST', '/sandboxes', { templateID: 'base' }]]) {
      const r = await api(d, method, path, body)
      assert.equal(r.status, 503, `${method} ${path}: ${r.status} ${r.text}`)
      assert.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After')
      assert.match(r.json.message, /postgresql/)
    }
    // the sandbox itself runs on (its data plane needs no store)
    assert.equal((await a.commands.run('echo up')).stdout, 'up\n')
    pgsh('up', pgDir)
    serverDown = false
    let r
    for (let i = 0; i < 50; i++) {
      r = await api(d, 'GET', '/v2/sandboxes')
      if (r.status === 200) break
      await sleep(100)
    }
    assert.equal(r.status, 200, r.text)
    assert.ok(r.json.some((s) => s.sandboxID === a.sandboxId), 'the sandbox is listed again')
    const b = await Sandbox.create()
    assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id IN ('${a.sandboxId}', '${b.sandboxId}')`), '2')
    await b.kill()
  } finally {
    if (serverDown) { pgsh('up', pgDir); serverDown = false }
    await a.kill()
  }
})

test('hutch doctor --config reads the PostgreSQL store: server, schema, clock, this node and its lease', { skip }, async () => {
  const uri = readFileSync(join(d.base, 'store-uri'), 'utf8').trim()
  const port = new URL(d.url).port
  const conf = join(d.base, 'doctor.conf')
  // the daemon runs with its default node name, <host name>-<port>: the
  // same port in the config names the same node
  writeFileSync(conf, `store = ${uri}\nport = ${port}\n`)
  const out = JSON.parse(spawnSync(hutchBin, ['doctor', '--json', '--config', conf]).stdout.toString())
  const store = out.checks.find((c) => c.name === 'store')
  assert.ok(store, JSON.stringify(out))
  assert.equal(store.status, 'ok', JSON.stringify(store))
  assert.match(store.finding, /postgresql 15\.\d+[^,]*, reached in \d+\.\d+ ms/)
  assert.match(store.finding, /schema \d+;/)
  assert.match(store.finding, /this host's clock is [+-]\d+ ms from the server's/)
  assert.match(store.finding, /1 node with a live lease/)
  assert.match(store.finding, new RegExp(`this node \\(.*-${port}\\): lease live for \\d+\\.\\d s more`))
  // a URI that reaches no server is a FAIL that names no password
  writeFileSync(conf, 'store = postgresql://hutch:s3cret@127.0.0.1:1/nothing\n')
  const bad = spawnSync(hutchBin, ['doctor', '--json', '--config', conf])
  assert.equal(bad.status, 1)
  const failed = JSON.parse(bad.stdout.toString()).checks.find((c) => c.name === 'store')
  assert.equal(failed.status, 'fail', JSON.stringify(failed))
  assert.doesNotMatch(JSON.stringify(failed), /s3cret/)
})

test('/metrics shows this node and every node of the store with its lease and clock', { skip }, async () => {
  const port = new URL(d.url).port
  const text = await (await fetch(`${d.url}/metrics`)).text()
  assert.match(text, new RegExp(`^hutch_node\\{node="[^"]*-${port}",generation="\\d+"\\} 1$`, 'm'))
  assert.match(text, /^hutch_cluster_nodes\{state="live"\} 1$/m)
  const lease = text.match(new RegExp(`^hutch_node_lease_seconds\\{node="[^"]*-${port}"\\} (-?[\\d.]+)$`, 'm'))
  assert.ok(lease && Number(lease[1]) > 0 && Number(lease[1]) <= 10, text)
  assert.match(text, /^hutch_node_clock_skew_seconds\{node="[^"]+"\} -?\d+\.\d{3}$/m)
})

test('PostgreSQL restarted under load: every call is answered (done, or 503 with Retry-After), and after it nothing is lost or left over', { skip }, async () => {
  const made = new Set()   // 201 from a create: the daemon promised this sandbox
  const killed = new Set() // 204 from a kill
  const codes = {}
  let stop = false
  const note = (r, what) => {
    codes[r.status] = (codes[r.status] ?? 0) + 1
    if (r.status === 503) assert.ok(Number(r.headers.get('retry-after')) > 0, `${what}: 503 without Retry-After`)
    else assert.ok(r.status < 500, `${what}: ${r.status} ${r.text}`)
  }
  async function worker() {
    while (!stop) {
      const c = await api(d, 'POST', '/sandboxes', { templateID: 'base', timeout: 120 })
      note(c, 'create')
      if (c.status !== 201) { await sleep(100); continue }
      made.add(c.json.sandboxID)
      const info = await api(d, 'GET', `/sandboxes/${c.json.sandboxID}`)
      note(info, 'info')
      assert.ok(info.status === 200 || info.status === 503, `a sandbox the daemon made is there: ${info.status} ${info.text}`)
      note(await api(d, 'GET', '/v2/sandboxes'), 'list')
      const k = await api(d, 'DELETE', `/sandboxes/${c.json.sandboxID}`)
      note(k, 'kill')
      if (k.status === 204) killed.add(c.json.sandboxID)
    }
  }
  const workers = Array.from({ length: 4 }, worker)
  try {
    await sleep(1500)
    pgsh('down', pgDir)
    serverDown = true
    await sleep(2500)
    pgsh('up', pgDir)
    serverDown = false
    await sleep(2500)
  } finally {
    stop = true
    await Promise.all(workers)
    if (serverDown) { pgsh('up', pgDir); serverDown = false }
  }
  assert.ok(codes[503] > 0, `the outage was seen: ${JSON.stringify(codes)}`)
  assert.ok(codes[201] > 0 && codes[204] > 0, `work was done before and after: ${JSON.stringify(codes)}`)
  // what a kill refused during the outage is killed now
  for (const id of made) {
    if (killed.has(id)) continue
    const k = await api(d, 'DELETE', `/sandboxes/${id}`)
    assert.ok(k.status === 204 || k.status === 404, `late kill ${id}: ${k.status} ${k.text}`)
    killed.add(id)
  }
  const listed = (await api(d, 'GET', '/v2/sandboxes')).json.map((s) => s.sandboxID).filter((id) => made.has(id))
  assert.deepEqual(listed, [], 'every sandbox the load made is gone from the API')
  const ids = [...made].map((id) => `'${id}'`).join(',')
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id IN (${ids})`), '0', 'and from the store')
  // and the daemon serves as before
  const b = await Sandbox.create()
  assert.equal((await b.commands.run('echo ok')).stdout, 'ok\n')
  await b.kill()
})
