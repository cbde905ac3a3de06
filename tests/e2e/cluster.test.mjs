// Three hutch nodes on one machine sharing one PostgreSQL store
// (E2E_STORE=postgresql; skipped otherwise). Each node has its own data and
// run dirs, cgroup parent and port; they share the uid slots (--slots-dir)
// so that no two sandboxes of the host get one uid range. Nodes register
// and renew leases, every sandbox row has its owner node, a node adopts
// only its own sandboxes at restart, an Idempotency-Key is unique across
// the nodes, and a node fenced out of its lease admits no creates.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startDaemon, api, sleep, root } from './harness.mjs'

const pgDir = process.env.E2E_STORE === 'postgresql' ? process.env.HUTCH_TEST_PG_DIR : null
const skip = pgDir ? false : 'E2E_STORE=postgresql is not set (tests/e2e/run.sh starts a server then)'
const pgsh = (...args) => execFileSync(join(root, 'tests', 'pg.sh'), args).toString().trim()
const dbName = `hutch_cluster_${process.pid}`
let uri, slots, nodes = []

function sql(query) {
  return execFileSync('psql', [uri, '-Atc', query]).toString().trim()
}

function nodeArgs(name) {
  return ['--store', uri, '--node-name', name, '--slots-dir', slots]
}

const nodeEnv = (name) => ({ HUTCH_CGROUP_PARENT: `hutch-e2e-${process.pid}-${name}` })

async function startNode(name, apiKey) {
  return startDaemon(nodeArgs(name), apiKey ? { apiKey } : null, nodeEnv(name))
}

before(async () => {
  if (skip) return
  uri = pgsh('createdb', pgDir, dbName)
  slots = mkdtempSync(join(tmpdir(), 'hutch-slots-'))
  nodes.push(await startNode('n1'))
  nodes.push(await startNode('n2', nodes[0].apiKey))
  nodes.push(await startNode('n3', nodes[0].apiKey))
})

after(async () => {
  for (const n of nodes) {
    const st = await n.stop()
    assert.equal(st.code, 0, `${n.url} exit ${JSON.stringify(st)}; log tail: ${n.log().slice(-2000)}`)
  }
  if (uri) { try { pgsh('dropdb', pgDir, dbName) } catch {} }
  if (slots) rmSync(slots, { recursive: true, force: true })
})

const create = (n, headers = {}) => api(n, 'POST', '/sandboxes', { templateID: 'base', timeout: 120 }, headers)

test('three nodes register with their address and capacity and renew their leases', { skip }, async () => {
  const rows = sql("SELECT name || ' ' || address || ' ' || generation || ' ' || (lease_until > now()) || ' ' || (memory > 0)" +
    ' FROM nodes ORDER BY name').split('\n')
  assert.deepEqual(rows, nodes.map((n, i) => `n${i + 1} ${n.url} 1 true true`))
  const before = sql("SELECT lease_until FROM nodes WHERE name = 'n1'")
  await sleep(2500)
  assert.notEqual(sql("SELECT lease_until FROM nodes WHERE name = 'n1'"), before, 'renewed within 2.5 s')
  const left = Number(sql("SELECT extract(epoch FROM lease_until - now()) FROM nodes WHERE name = 'n2'"))
  assert.ok(left > 7 && left <= 10, `a lease of 10 s, renewed every 2 s: ${left} s left`)
})

test('every sandbox row has its owner node; a restarted node adopts its own only', { skip }, async () => {
  const made = []
  for (const n of nodes) {
    const r = await create(n)
    assert.equal(r.status, 201, r.text)
    made.push(r.json.sandboxID)
  }
  try {
    for (let i = 0; i < 3; i++)
      assert.equal(sql(`SELECT owner FROM sandboxes WHERE id = '${made[i]}'`), `n${i + 1}`)
    // n2 stops and starts again on its dirs: it takes back its sandbox and
    // leaves the others' rows alone
    process.kill(nodes[1].pid, 'SIGTERM')
    nodes[1] = await nodes[1].restart(nodeArgs('n2'), nodeEnv('n2'))
    const listed = (await api(nodes[1], 'GET', '/v2/sandboxes')).json.map((s) => s.sandboxID)
    assert.deepEqual(listed, [made[1]])
    assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id IN ('${made.join("','")}')`), '3', 'no row lost')
    assert.equal(sql("SELECT generation FROM nodes WHERE name = 'n2'"), '2', 'registered again')
    for (let i = 0; i < 3; i++) {
      const r = await api(nodes[i], 'GET', `/sandboxes/${made[i]}`)
      assert.equal(r.status, 200, `n${i + 1} serves its sandbox: ${r.text}`)
      assert.equal(r.json.state, 'running')
    }
  } finally {
    for (let i = 0; i < 3; i++) await api(nodes[i], 'DELETE', `/sandboxes/${made[i]}`)
  }
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id IN ('${made.join("','")}')`), '0')
})

test("another node's sandbox: 421 naming its owner while it lives, 503 naming it while its lease is expired", { skip }, async () => {
  const r = await create(nodes[0])
  assert.equal(r.status, 201, r.text)
  const id = r.json.sandboxID
  try {
    const info = await api(nodes[1], 'GET', `/sandboxes/${id}`)
    assert.equal(info.status, 421, info.text)
    assert.ok(info.json.message.includes('node n1') && info.json.message.includes(nodes[0].url), info.text)
    // the data plane, before any token is checked: the node's name only
    const dp = await fetch(`${nodes[1].url}/health`, { headers: { 'E2b-Sandbox-Id': id } })
    const dpText = await dp.text()
    assert.equal(dp.status, 421, dpText)
    assert.ok(dpText.includes('node n1') && !dpText.includes(nodes[0].url), dpText)
    // another team does not learn of it
    const other = execFileSync(join(root, process.env.HUTCH_BUILD || 'build', 'hutch'),
      ['keys', 'create', '--team', 'cluster-other', '--store', uri]).toString().match(/((?:e2b|hutch)_[0-9a-f]+)/)[1]
    assert.equal((await api({ url: nodes[1].url, apiKey: other }, 'GET', `/sandboxes/${id}`)).status, 404)
    // n1 stops renewing (stopped, as if dead) and its lease runs out
    process.kill(nodes[0].pid, 'SIGSTOP')
    try {
      sql("UPDATE nodes SET lease_until = now() - interval '1 second' WHERE name = 'n1'")
      const down = await api(nodes[2], 'GET', `/sandboxes/${id}`)
      assert.equal(down.status, 503, down.text)
      assert.match(down.json.message, /node n1, which is unavailable/)
      assert.ok(Number(down.headers.get('retry-after')) > 0)
    } finally {
      process.kill(nodes[0].pid, 'SIGCONT')
    }
    // back: its next renewal makes it live again
    let back
    for (let i = 0; i < 40; i++) {
      back = await api(nodes[2], 'GET', `/sandboxes/${id}`)
      if (back.status === 421) break
      await sleep(100)
    }
    assert.equal(back.status, 421, back.text)
    assert.equal((await api(nodes[0], 'GET', `/sandboxes/${id}`)).status, 200)
  } finally {
    await api(nodes[0], 'DELETE', `/sandboxes/${id}`)
  }
})

test('kill -9 of a node: the others serve theirs, its sandbox is unavailable once the lease runs out, its restart takes it back', { skip }, async () => {
  const mine = await create(nodes[0])
  const theirs = await create(nodes[1])
  assert.equal(mine.status, 201, mine.text)
  assert.equal(theirs.status, 201, theirs.text)
  const a = mine.json.sandboxID, b = theirs.json.sandboxID
  try {
    process.kill(nodes[1].pid, 'SIGKILL')
    await nodes[1].exited
    const killedAt = Date.now()
    assert.equal((await api(nodes[0], 'GET', `/sandboxes/${a}`)).status, 200, 'n1 serves its own')
    // no renewal any more: within the lease (10 s) it is still believed alive
    let r
    for (let i = 0; i < 140; i++) {
      r = await api(nodes[2], 'GET', `/sandboxes/${b}`)
      if (r.status === 503) break
      await sleep(100)
    }
    const waited = Date.now() - killedAt
    assert.equal(r.status, 503, r.text)
    assert.match(r.json.message, /node n2, which is unavailable/)
    assert.ok(waited > 6000 && waited < 13000, `unavailable once the 10 s lease ran out (${waited} ms)`)
    nodes[1] = await nodes[1].restart(nodeArgs('n2'), nodeEnv('n2'))
    const back = await api(nodes[1], 'GET', `/sandboxes/${b}`)
    assert.equal(back.status, 200, back.text)
    assert.equal(back.json.state, 'running')
    assert.equal((await api(nodes[2], 'GET', `/sandboxes/${b}`)).status, 421, 'live again: 421 naming it')
    assert.equal(sql(`SELECT owner FROM sandboxes WHERE id = '${b}'`), 'n2')
  } finally {
    await api(nodes[0], 'DELETE', `/sandboxes/${a}`)
    await api(nodes[1], 'DELETE', `/sandboxes/${b}`)
  }
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id IN ('${a}', '${b}')`), '0')
})

test('50 concurrent creates with one Idempotency-Key over the three nodes: exactly one sandbox', { skip }, async () => {
  const key = 'cluster-' + Date.now()
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) =>
    create(nodes[i % 3], { 'Idempotency-Key': key }).then((r) => ({ node: i % 3, ...r }))))
  const made = results.filter((r) => r.status === 201)
  assert.equal(made.length, 1, `one 201: ${results.map((r) => r.status)}`)
  const id = made[0].json.sandboxID
  const owner = made[0].node
  for (const r of results) {
    if (r.node === owner) {
      // the owner's own queue: the same sandbox
      assert.ok(r.status === 201 || r.status === 200, `owner: ${r.status} ${r.text}`)
      assert.equal(r.json.sandboxID, id)
    } else {
      // another node's store write is refused by the unique index
      assert.ok(r.status === 409 || r.status === 200, `other node: ${r.status} ${r.text}`)
      if (r.status === 200) assert.equal(r.json.sandboxID, id)
    }
  }
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE idem_key = '${key}'`), '1')
  let live = 0
  for (const n of nodes) live += (await api(n, 'GET', '/v2/sandboxes')).json.length
  assert.equal(live, 1, 'one sandbox on the three nodes')
  assert.equal((await api(nodes[owner], 'DELETE', `/sandboxes/${id}`)).status, 204)
})

test('a node fenced out of its lease admits no creates; the others do', { skip }, async () => {
  // another registration of n3's name, as a second process would make
  sql("UPDATE nodes SET generation = generation + 1 WHERE name = 'n3'")
  const r = await create(nodes[2])
  assert.equal(r.status, 503, r.text)
  assert.ok(Number(r.headers.get('retry-after')) > 0)
  for (let i = 0; i < 30 && !/fenced out/.test(nodes[2].log()); i++) await sleep(100)
  assert.match(nodes[2].log(), /fenced out/, 'its renewal found the new generation')
  assert.equal(sql("SELECT count(*) FROM sandboxes WHERE owner = 'n3'"), '0', 'it wrote nothing')
  const ok = await create(nodes[0])
  assert.equal(ok.status, 201, ok.text)
  await api(nodes[0], 'DELETE', `/sandboxes/${ok.json.sandboxID}`)
})
