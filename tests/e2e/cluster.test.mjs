// Three hutch nodes on one machine sharing one PostgreSQL store
// (E2E_STORE=postgresql; skipped otherwise). Each node has its own data and
// run dirs, cgroup parent and port; they share the uid slots (--slots-dir)
// so that no two sandboxes of the host get one uid range, and one cluster
// secret. Nodes register and renew leases, every sandbox row has its owner
// node, a node adopts only its own sandboxes at restart, any node answers
// any call (forwarded to the owner: control plane, envd's data plane with
// its streams, ports and WebSockets), any node lists every node's
// sandboxes, signed URLs work through any node, creates are placed on the
// least loaded node, an Idempotency-Key is unique across the nodes, a
// client cannot pass for a node or for another address, a node fenced out
// of its lease admits no creates, and the session-gateway example runs with
// a replica on each node.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, useDaemon, api, sleep, root, hutchBin } from './harness.mjs'

const pgDir = process.env.E2E_STORE === 'postgresql' ? process.env.HUTCH_TEST_PG_DIR : null
const skip = pgDir ? false : 'E2E_STORE=postgresql is not set (tests/e2e/run.sh starts a server then)'
const pgsh = (...args) => execFileSync(join(root, 'tests', 'pg.sh'), args).toString().trim()
const dbName = `hutch_cluster_${process.pid}`
let uri, slots, secretDir, secret, nodes = []

function sql(query) {
  return execFileSync('psql', [uri, '-Atc', query]).toString().trim()
}

// signed_url.scan: a signed URL that names no sandbox is found on any node
function nodeArgs(name) {
  return ['--store', uri, '--node-name', name, '--slots-dir', slots, '--cluster-secret-file', join(secretDir, 'secret'),
    '--signed-url-scan', 'true']
}

const ownerOf = (id) => sql(`SELECT owner FROM sandboxes WHERE id = '${id}'`)
const nodeIndex = (name) => Number(name.slice(1)) - 1

const nodeEnv = (name) => ({ HUTCH_CGROUP_PARENT: `hutch-e2e-${process.pid}-${name}` })

async function startNode(name, apiKey) {
  return startDaemon(nodeArgs(name), apiKey ? { apiKey } : null, nodeEnv(name))
}

before(async () => {
  if (skip) return
  uri = pgsh('createdb', pgDir, dbName)
  slots = mkdtempSync(join(tmpdir(), 'hutch-slots-'))
  secretDir = mkdtempSync(join(tmpdir(), 'hutch-secret-'))
  secret = randomBytes(24).toString('hex')
  writeFileSync(join(secretDir, 'secret'), secret + '\n', { mode: 0o600 })
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
  if (secretDir) rmSync(secretDir, { recursive: true, force: true })
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

test('every sandbox row has its owner node, placement spreads them; a restarted node adopts its own only', { skip }, async () => {
  const made = []
  for (const n of nodes) {
    const r = await create(n)
    assert.equal(r.status, 201, r.text)
    made.push(r.json.sandboxID)
  }
  // three equal empty nodes, one create each in turn: one on each node
  made.sort((a, b) => ownerOf(a).localeCompare(ownerOf(b)))
  try {
    for (let i = 0; i < 3; i++)
      assert.equal(ownerOf(made[i]), `n${i + 1}`)
    // n2 stops and starts again on its dirs: it takes back its sandbox and
    // leaves the others' rows alone
    process.kill(nodes[1].pid, 'SIGTERM')
    nodes[1] = await nodes[1].restart(nodeArgs('n2'), nodeEnv('n2'))
    // its own (the sandboxes it runs: /metrics counts them) is only made[1]
    const metrics = await (await fetch(`${nodes[1].url}/metrics`)).text()
    assert.match(metrics, /^hutch_sandboxes\{state="running"\} 1$/m)
    // and it lists every node's
    const listed = (await api(nodes[1], 'GET', '/v2/sandboxes')).json.map((s) => s.sandboxID)
    assert.deepEqual(listed.sort(), [...made].sort())
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

test("another node's sandbox: answered by its owner through any node while it lives, 503 naming it while its lease is expired", { skip }, async () => {
  const r = await create(nodes[0])
  assert.equal(r.status, 201, r.text)
  const id = r.json.sandboxID
  const owner = nodeIndex(ownerOf(id))
  const other = (owner + 1) % 3, third = (owner + 2) % 3
  try {
    const info = await api(nodes[other], 'GET', `/sandboxes/${id}`)
    assert.equal(info.status, 200, info.text)
    assert.equal(info.json.sandboxID, id)
    // the data plane: the owner's envd answers
    const dp = await fetch(`${nodes[other].url}/health`, { headers: { 'E2b-Sandbox-Id': id } })
    assert.equal(dp.status, 204, await dp.text())
    // another team does not learn of it
    const otherKey = execFileSync(join(root, process.env.HUTCH_BUILD || 'build', 'hutch'),
      ['keys', 'create', '--team', 'cluster-other', '--store', uri]).toString().match(/((?:e2b|hutch)_[0-9a-f]+)/)[1]
    assert.equal((await api({ url: nodes[other].url, apiKey: otherKey }, 'GET', `/sandboxes/${id}`)).status, 404)
    // the owner stops renewing (stopped, as if dead) and its lease runs out
    process.kill(nodes[owner].pid, 'SIGSTOP')
    try {
      sql(`UPDATE nodes SET lease_until = now() - interval '1 second' WHERE name = 'n${owner + 1}'`)
      const down = await api(nodes[third], 'GET', `/sandboxes/${id}`)
      assert.equal(down.status, 503, down.text)
      assert.match(down.json.message, new RegExp(`node n${owner + 1}, which is unavailable`))
      assert.ok(Number(down.headers.get('retry-after')) > 0)
    } finally {
      process.kill(nodes[owner].pid, 'SIGCONT')
    }
    // back: its next renewal makes it live again
    let back
    for (let i = 0; i < 40; i++) {
      back = await api(nodes[third], 'GET', `/sandboxes/${id}`)
      if (back.status === 200) break
      await sleep(100)
    }
    assert.equal(back.status, 200, back.text)
    assert.equal((await api(nodes[owner], 'GET', `/sandboxes/${id}`)).status, 200)
  } finally {
    await api(nodes[0], 'DELETE', `/sandboxes/${id}`)
  }
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id = '${id}'`), '0', 'killed through a non-owner')
})

test('kill -9 of a node: the others serve theirs, its sandbox is unavailable once the lease runs out, its restart takes it back', { skip }, async () => {
  // n1's and n2's own (placement elsewhere is switched off by draining)
  sql("UPDATE nodes SET draining = true WHERE name <> 'n1'")
  const mine = await create(nodes[0])
  sql("UPDATE nodes SET draining = (name <> 'n2')")
  const theirs = await create(nodes[1])
  sql('UPDATE nodes SET draining = false')
  assert.equal(mine.status, 201, mine.text)
  assert.equal(theirs.status, 201, theirs.text)
  const a = mine.json.sandboxID, b = theirs.json.sandboxID
  assert.equal(ownerOf(a), 'n1')
  assert.equal(ownerOf(b), 'n2')
  try {
    process.kill(nodes[1].pid, 'SIGKILL')
    await nodes[1].exited
    const killedAt = Date.now()
    assert.equal((await api(nodes[0], 'GET', `/sandboxes/${a}`)).status, 200, 'n1 serves its own')
    // no renewal any more: within the lease (10 s) it is still believed
    // alive, and the call forwarded to it finds nobody there (503 naming
    // it); once the lease ran out, 503 naming it as unavailable
    let r
    for (let i = 0; i < 140; i++) {
      r = await api(nodes[2], 'GET', `/sandboxes/${b}`)
      assert.equal(r.status, 503, r.text)
      assert.match(r.json.message, /node n2/)
      if (/which is unavailable/.test(r.json.message)) break
      assert.match(r.json.message, /cannot be reached/)
      await sleep(100)
    }
    const waited = Date.now() - killedAt
    assert.match(r.json.message, /node n2, which is unavailable/)
    assert.ok(waited > 6000 && waited < 13000, `unavailable once the 10 s lease ran out (${waited} ms)`)
    nodes[1] = await nodes[1].restart(nodeArgs('n2'), nodeEnv('n2'))
    const back = await api(nodes[1], 'GET', `/sandboxes/${b}`)
    assert.equal(back.status, 200, back.text)
    assert.equal(back.json.state, 'running')
    assert.equal((await api(nodes[2], 'GET', `/sandboxes/${b}`)).status, 200, 'live again: forwarded to it')
    assert.equal(sql(`SELECT owner FROM sandboxes WHERE id = '${b}'`), 'n2')
  } finally {
    await api(nodes[0], 'DELETE', `/sandboxes/${a}`).catch(() => {})
    await api(nodes[1], 'DELETE', `/sandboxes/${b}`).catch(() => {})
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
  for (const r of results) {
    // every one is sent to the node of the key's sandbox, or of its
    // create's reservation while it is on its way there, whose queue
    // answers with the same sandbox, as a retry on one node is answered
    assert.ok(r.status === 201 || r.status === 200, `through n${r.node + 1}: ${r.status} ${r.text}`)
    assert.equal(r.json.sandboxID, id)
    assert.equal(r.json.envdAccessToken, made[0].json.envdAccessToken, 'the one sandbox, with its token')
  }
  assert.deepEqual([...new Set(results.map((r) => r.node))].sort(), [0, 1, 2], 'asked through every node')
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE idem_key = '${key}'`), '1')
  for (const n of nodes) {
    const listed = (await api(n, 'GET', '/v2/sandboxes')).json.map((s) => s.sandboxID)
    assert.deepEqual(listed, [id], `one sandbox on the three nodes, listed by ${n.url}`)
  }
  // once it exists, the key leads every node to it
  const again = await Promise.all(nodes.map((n) => create(n, { 'Idempotency-Key': key })))
  for (const r of again) {
    assert.equal(r.status, 200, r.text)
    assert.equal(r.json.sandboxID, id)
  }
  assert.equal(sql('SELECT count(*) FROM placements'), '0', 'no reservation left')
  assert.equal((await api(nodes[1], 'DELETE', `/sandboxes/${id}`)).status, 204)
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
  // a new process under n3's name takes over (the next tests need n3)
  process.kill(nodes[2].pid, 'SIGTERM')
  nodes[2] = await nodes[2].restart(nodeArgs('n3'), nodeEnv('n3'))
  assert.equal((await create(nodes[2], { 'Idempotency-Key': 'n3-back' })).status, 201)
  const id = sql("SELECT id FROM sandboxes WHERE idem_key = 'n3-back'")
  assert.equal((await api(nodes[2], 'DELETE', `/sandboxes/${id}`)).status, 204)
})

// The SDK, unmodified, with one URL for the whole cluster: node 2, which
// takes no placements here (draining), so that every call it gets is
// forwarded to the sandbox's owner.
test('the SDK through a node that does not own the sandbox: create, commands, files, a port, pause/resume, kill', { skip }, async () => {
  sql("UPDATE nodes SET draining = (name = 'n2')")
  useDaemon(nodes[1])
  let sbx
  try {
    sbx = await Sandbox.create({ timeoutMs: 120_000 })
    const owner = ownerOf(sbx.sandboxId)
    assert.ok(owner === "n1" || owner === "n3", `placed on another node: ${owner}`)
    // a command with streamed output (a Connect server stream, relayed)
    const seen = []
    const res = await sbx.commands.run('for i in 1 2 3; do echo line$i; sleep 0.2; done; echo err >&2',
      { onStdout: (d) => seen.push(d) })
    assert.equal(res.exitCode, 0)
    assert.equal(res.stdout, 'line1\nline2\nline3\n')
    assert.equal(res.stderr, 'err\n')
    assert.ok(seen.length >= 1)
    // a background command and its input (unary calls on a running process)
    const cat = await sbx.commands.run('cat', { background: true, stdin: true })
    await sbx.commands.sendStdin(cat.pid, 'hello through n2\n')
    await sleep(300)
    await cat.kill()
    // files, both ways, one of 3 MiB
    const big = randomBytes(3 << 20)
    await sbx.files.write('/tmp/big.bin', big)
    const back = await sbx.files.read('/tmp/big.bin', { format: 'bytes' })
    assert.equal(Buffer.compare(Buffer.from(back), big), 0)
    await sbx.files.write('/tmp/a.txt', 'forwarded')
    assert.equal(await sbx.files.read('/tmp/a.txt'), 'forwarded')
    assert.ok((await sbx.files.list('/tmp')).some((e) => e.name === 'a.txt'))
    // a port: plain HTTP by header and by Host, and a WebSocket
    await sbx.files.write('/tmp/srv.py', WS_SERVER)
    await sbx.commands.run('python3 /tmp/srv.py 8000', { background: true })
    let hello
    for (let i = 0; i < 100; i++) {
      hello = await fetch(`${nodes[1].url}/hello`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' } })
        .catch(() => null)
      if (hello?.status === 200) break
      await sleep(100)
    }
    assert.equal(hello.status, 200)
    assert.equal(await hello.text(), 'hello')
    const viaHost = await rawRequest(nodes[1], `GET /hello HTTP/1.1\r\nHost: ${sbx.getHost(8000)}\r\nConnection: close\r\n\r\n`)
    assert.match(viaHost, /^HTTP\/1\.1 200/)
    assert.match(viaHost, /\r\n\r\nhello$/)
    assert.equal(await wsEcho(nodes[1], sbx.sandboxId, 'ping through a forwarding node'), 'ping through a forwarding node')
    // metrics, timeout and pause/resume through the SDK
    await sbx.setTimeout(90_000)
    await sbx.pause()
    assert.equal(sql(`SELECT state FROM sandboxes WHERE id = '${sbx.sandboxId}'`), 'paused')
    const again = await Sandbox.connect(sbx.sandboxId)
    assert.equal((await again.commands.run('cat /tmp/a.txt')).stdout, 'forwarded')
    assert.ok(await sbx.isRunning())
    await sbx.kill()
    assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id = '${sbx.sandboxId}'`), '0')
    sbx = null
  } finally {
    if (sbx) await sbx.kill().catch(() => {})
    sql('UPDATE nodes SET draining = false')
  }
})

// Any node lists every node's sandboxes: its own from memory, the others'
// from their rows in the store, in the JSON their owners give; the filters,
// pages and X-Total-Running are the cluster's, and the platform's reclaim
// loop (list paused + tagged, DELETE ?state=paused) works through any node.
test('the list through any node: every node lists all nodes\' sandboxes as their owners do; filters, pages, the reclaim loop', { skip }, async () => {
  const tag = 'list-' + Date.now()
  const q = `/v2/sandboxes?metadata=${encodeURIComponent(`tag=${tag}`)}`
  const made = []
  try {
    for (let i = 0; i < 3; i++) {
      const r = await api(nodes[i], 'POST', '/sandboxes', { templateID: 'base', timeout: 120, metadata: { tag, i: String(i) } })
      assert.equal(r.status, 201, r.text)
      made.push(r.json.sandboxID)
    }
    assert.ok(new Set(made.map(ownerOf)).size >= 2, `spread over nodes: ${made.map(ownerOf)}`)
    const paused = made[0]
    const viaOther = (id) => nodes[(nodeIndex(ownerOf(id)) + 1) % 3]
    assert.equal((await api(viaOther(paused), 'POST', `/sandboxes/${paused}/pause`)).status, 204)
    // what each owner lists of its own
    const mine = {}
    for (const id of made) {
      const r = await api(nodes[nodeIndex(ownerOf(id))], 'GET', q)
      mine[id] = r.json.find((s) => s.sandboxID === id)
      assert.ok(mine[id], `the owner lists ${id}`)
    }
    assert.equal(mine[paused].state, 'paused')
    const totals = new Set()
    for (const n of nodes) {
      const all = await api(n, 'GET', q)
      assert.equal(all.status, 200, all.text)
      assert.deepEqual(all.json.map((s) => s.sandboxID).sort(), [...made].sort(), n.url)
      for (const s of all.json) assert.deepEqual(s, mine[s.sandboxID], `${n.url} lists ${s.sandboxID} as its owner does`)
      totals.add(all.headers.get('x-total-running'))
      const onlyPaused = await api(n, 'GET', q + '&state=paused')
      assert.deepEqual(onlyPaused.json.map((s) => s.sandboxID), [paused])
      const byTemplate = await api(n, 'GET', q + '&state=running&template=base')
      assert.deepEqual(byTemplate.json.map((s) => s.sandboxID).sort(), made.slice(1).sort())
      // the deprecated list: the running ones
      const v1 = await api(n, 'GET', `/sandboxes?metadata=${encodeURIComponent(`tag=${tag}`)}`)
      assert.equal(v1.status, 200, v1.text)
      assert.deepEqual(v1.json.map((s) => s.sandboxID).sort(), made.slice(1).sort())
      // pages of one walk the whole list in its order, across nodes
      for (const order of ['', '&order=asc']) {
        const whole = (await api(n, 'GET', q + order)).json.map((s) => s.sandboxID)
        const seen = []
        let token = null
        for (let page = 0; page < 6; page++) {
          const r = await api(n, 'GET', q + order + '&limit=1' + (token ? '&nextToken=' + encodeURIComponent(token) : ''))
          assert.equal(r.status, 200, r.text)
          seen.push(...r.json.map((s) => s.sandboxID))
          token = r.headers.get('x-next-token')
          if (!token) break
        }
        assert.deepEqual(seen, whole, `pages through ${n.url}${order}`)
      }
    }
    assert.equal(totals.size, 1, `one X-Total-Running on every node: ${[...totals]}`)
    // the unmodified SDK through a node that owns none of them
    useDaemon(nodes[1])
    const listed = await Sandbox.list({ query: { metadata: { tag }, state: ['running', 'paused'] } }).nextItems()
    assert.deepEqual(listed.map((s) => s.sandboxId).sort(), [...made].sort())
    assert.equal(listed.find((s) => s.sandboxId === paused).state, 'paused')
    // another team sees none of them, on any node
    const otherKey = execFileSync(hutchBin, ['keys', 'create', '--team', 'cluster-list-other', '--store', uri])
      .toString().match(/((?:e2b|hutch)_[0-9a-f]+)/)[1]
    for (const n of nodes) {
      const r = await api({ url: n.url, apiKey: otherKey }, 'GET', '/v2/sandboxes?state=running,paused')
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json.filter((s) => made.includes(s.sandboxID)), [])
    }
    // the reclaim loop through a node that does not own the paused one
    const via = viaOther(paused)
    for (const s of (await api(via, 'GET', q + '&state=paused')).json) {
      assert.equal((await api(via, 'DELETE', `/sandboxes/${s.sandboxID}?state=paused`)).status, 204)
    }
    assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id = '${paused}'`), '0')
    // a running one is not taken by it
    assert.equal((await api(viaOther(made[1]), 'DELETE', `/sandboxes/${made[1]}?state=paused`)).status, 409)
    for (const n of nodes) {
      assert.deepEqual((await api(n, 'GET', q)).json.map((s) => s.sandboxID).sort(), made.slice(1).sort())
    }
  } finally {
    useDaemon(nodes[0])
    await Promise.all(made.map((id) => api(nodes[0], 'DELETE', `/sandboxes/${id}`)))
  }
})

// A sandbox created through n2 (draining, so it lands on another node), with
// the SDK pointed at n2; fn gets it and its owner. Killed and undrained after.
async function throughN2(fn) {
  sql("UPDATE nodes SET draining = (name = 'n2')")
  useDaemon(nodes[1])
  let sbx
  try {
    sbx = await Sandbox.create({ timeoutMs: 120_000 })
    await fn(sbx, nodes[nodeIndex(ownerOf(sbx.sandboxId))])
  } finally {
    if (sbx) await sbx.kill().catch(() => {})
    sql('UPDATE nodes SET draining = false')
    useDaemon(nodes[0])
  }
}

// The SDK's uploadUrl()/downloadUrl() name no sandbox (the shared
// E2B_SANDBOX_URL): a node that does not own the sandbox finds it among the
// other nodes' (the store hashes their tokens, signed_url.scan) and sends
// the call to the owner, which checks the signature; by host name and by
// E2b-Sandbox-Id they are forwarded too. A bad signature is 401 however
// it comes.
test('signed URLs through a node that does not own the sandbox: by signature alone, by host name, by E2b-Sandbox-Id', { skip }, async () => {
  await throughN2(async (sbx, owner) => {
    assert.notEqual(owner, nodes[1])
    await sbx.files.write('/home/user/s.txt', 'signed, through n2')
    const down = await sbx.downloadUrl('/home/user/s.txt', { useSignatureExpiration: 120 })
    assert.equal(new URL(down).port, new URL(nodes[1].url).port, down)
    assert.equal(new URL(down).pathname, '/files')
    for (let i = 0; i < 2; i++) { // first found by the store, then by n2's signature index
      const r = await fetch(down)
      assert.equal(r.status, 200, `try ${i}`)
      assert.equal(await r.text(), 'signed, through n2')
    }
    const third = nodes.find((n) => n !== owner && n !== nodes[1])
    const u = new URL(down)
    const elsewhere = await fetch(third.url + u.pathname + u.search)
    assert.equal(elsewhere.status, 200)
    assert.equal(await elsewhere.text(), 'signed, through n2')
    // an upload: its body goes on with it
    const up = await sbx.uploadUrl('/home/user/up.txt', { useSignatureExpiration: 60 })
    const form = new FormData()
    form.append('file', 'uploaded through n2')
    const put = await fetch(up, { method: 'POST', body: form })
    assert.equal(put.status, 200, await put.clone().text())
    assert.deepEqual(await put.json(), [{ name: 'up.txt', path: '/home/user/up.txt', type: 'file' }])
    assert.equal(await sbx.files.read('/home/user/up.txt'), 'uploaded through n2')
    // by the sandbox's host name and by E2b-Sandbox-Id
    const viaHost = await rawRequest(nodes[1], `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${sbx.getHost(49983)}\r\nConnection: close\r\n\r\n`)
    assert.match(viaHost, /^HTTP\/1\.1 200/)
    assert.match(viaHost, /\r\n\r\n(?:[0-9a-f]+\r\n)?signed, through n2(?:\r\n0\r\n\r\n)?$/)
    const byId = await fetch(down, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId } })
    assert.equal(byId.status, 200)
    // refused: tampered, expired, a read signature used to write, on any node
    const sig = u.searchParams.get('signature')
    const tampered = new URL(u)
    tampered.searchParams.set('signature', sig.slice(0, -1) + (sig.endsWith('A') ? 'B' : 'A'))
    const expired = new URL(await sbx.downloadUrl('/home/user/s.txt', { useSignatureExpiration: -10 }))
    for (const n of nodes) {
      for (const [what, url] of [['tampered', tampered], ['expired', expired]]) {
        const r = await fetch(n.url + url.pathname + url.search)
        assert.equal(r.status, 401, `${what} through ${n.url}`)
      }
      const f = new FormData()
      f.append('file', 'overwritten?')
      assert.equal((await fetch(n.url + u.pathname + u.search, { method: 'POST', body: f })).status, 401)
    }
    assert.equal(await sbx.files.read('/home/user/s.txt'), 'signed, through n2')
  })
})

// X-Forwarded-For that a client sends is never believed: a sandbox's port
// server gets the address hutch got the connection from, and through a
// forwarding node the client's (127.0.0.2/.3 here), which the node vouches
// for inside its proof, never the node's own (127.0.0.1) or a forged one.
test('attack: a client forging X-Forwarded-For, to the owner or through a node, does not pass for another address', { skip }, async () => {
  await throughN2(async (sbx, owner) => {
    await sbx.files.write('/tmp/xff.py', XFF_SERVER)
    await sbx.commands.run('python3 /tmp/xff.py 8001', { background: true })
    const ask = (node, from, extra = '') => rawRequest(node, `GET /xff HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${sbx.sandboxId}\r\n` +
      `E2b-Sandbox-Port: 8001\r\n${extra}Connection: close\r\n\r\n`, from)
    let first
    for (let i = 0; i < 100; i++) {
      first = await ask(owner, '127.0.0.2').catch(() => '')
      if (/^HTTP\/1\.1 200/.test(first)) break
      await sleep(100)
    }
    assert.match(first, /\r\n\r\nxff=127\.0\.0\.2$/)
    const forged = 'X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 6.6.6.7\r\nForwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\n'
    for (const [node, from] of [[owner, '127.0.0.2'], [nodes[1], '127.0.0.2'], [nodes[1], '127.0.0.3']]) {
      const r = await ask(node, from, forged)
      assert.match(r, /^HTTP\/1\.1 200/, r)
      assert.match(r, new RegExp(`\r\n\r\nxff=${from.replace(/\./g, '\\.')}$`), `${node.url} from ${from}: ${r}`)
    }
    // a made-up proof naming another client is refused before any port
    const t = Date.now()
    const bad = `v2 t=${t} n=n2 p=- c=6.6.6.6 s=` + createHmac('sha256', 'not-the-cluster-secret')
      .update(`hutch-forward-v2\nGET\n/xff\n${t}\nn2\n-\n6.6.6.6`).digest('hex')
    assert.match(await ask(owner, '127.0.0.2', `X-Hutch-Forwarded: ${bad}\r\n`), /^HTTP\/1\.1 403/)
  })
})

// GET /xff answers "xff=" and the X-Forwarded-For header it got (all of them).
const XFF_SERVER = String.raw`
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        body = ('xff=' + ','.join(self.headers.get_all('X-Forwarded-For') or [])).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
S(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
`

// examples/session-gateway with three replicas, each talking to its own
// node (as behind a load balancer that spreads them): one sandbox per
// session whatever replica and node the first messages reach, idle pause
// and auto-resume through any node, and the reclaim loop (list paused +
// tagged, DELETE ?state=paused) through a node that does not own it.
const gatewayDir = join(root, 'examples', 'session-gateway')
const gatewaySkip = skip || (!existsSync(join(gatewayDir, 'node_modules', 'e2b')) && 'run npm ci in examples/session-gateway')

function startReplica(port, node, idleMs) {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, [join(gatewayDir, 'gateway.mjs'), '--port', String(port), '--idle-ms', String(idleMs),
      '--reclaim-interval-ms', '3600000', '--workspace', 'none'], {
      env: { ...process.env, E2B_API_KEY: node.apiKey, E2B_API_URL: node.url, E2B_SANDBOX_URL: node.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    const t = setTimeout(() => rej(new Error('gateway did not start: ' + out)), 15000)
    p.stdout.on('data', (c) => {
      out += c
      const m = out.match(/listening on 127\.0\.0\.1:(\d+)/)
      if (m) { clearTimeout(t); res({ p, port: Number(m[1]), out: () => out }) }
    })
    p.stderr.on('data', (c) => { out += c })
    p.on('exit', (code) => rej(new Error(`gateway exited ${code}: ${out}`)))
  })
}

test('examples/session-gateway: three replicas on three nodes: one sandbox per session, pause, auto-resume, reclaim through any node', { skip: gatewaySkip }, async () => {
  const IDLE_MS = 2500
  const replicas = []
  const session = 'chat-' + Date.now()
  const rows = () => sql(`SELECT count(*) FROM sandboxes WHERE metadata->>'lea.session_id' = '${session}'`)
  const exec = async (i, code) => {
    const r = await fetch(`http://127.0.0.1:${replicas[i].port}/sessions/acme/${session}/exec`, { method: 'POST', body: JSON.stringify({ code }) })
    const body = await r.json()
    assert.equal(r.status, 200, JSON.stringify(body) + replicas[i].out().slice(-1500))
    return body
  }
  const stateOf = (id) => sql(`SELECT state FROM sandboxes WHERE id = '${id}'`)
  try {
    for (let i = 0; i < 3; i++) replicas.push(await startReplica(0, nodes[i], IDLE_MS))
    // the first messages arrive at every replica, so at every node, at once
    const first = await Promise.all([0, 1, 2, 0, 1, 2].map((i) => exec(i, 'mkdir -p wd && echo v1 > wd/state && echo ok')))
    const id = first[0].sandboxId
    assert.ok(first.every((r) => r.sandboxId === id && r.exitCode === 0), 'every replica got the same sandbox')
    assert.equal(rows(), '1', 'no duplicate sandbox')
    const owner = nodeIndex(ownerOf(id))
    // idle: paused by its owner; the next message, on any replica and node, resumes it
    await sleep(IDLE_MS + 1500)
    assert.equal(stateOf(id), 'paused')
    for (const i of [2, 0, 1]) {
      const r = await exec(i, 'cat wd/state')
      assert.equal(r.sandboxId, id, 'resumed, not re-created')
      assert.equal(r.stdout, 'v1\n', 'working directory intact after auto-resume')
    }
    // idle again, then a reclaim pass on a replica whose node does not own it
    await sleep(IDLE_MS + 1500)
    assert.equal(stateOf(id), 'paused')
    const via = (owner + 1) % 3
    const pass = await fetch(`http://127.0.0.1:${replicas[via].port}/admin/reclaim`, { method: 'POST' }).then((r) => r.json())
    assert.deepEqual(pass.reclaimed, [id], 'exactly the paused, tagged sandbox was reclaimed')
    assert.equal(rows(), '0')
    // the next message makes a new one, once
    const again = await Promise.all([0, 1, 2].map((i) => exec(i, 'test -e wd/state && echo old || echo fresh')))
    assert.ok(again.every((r) => r.sandboxId === again[0].sandboxId && r.sandboxId !== id), 'one new sandbox')
    assert.equal(again[0].stdout, 'fresh\n')
    assert.equal(rows(), '1')
    await api(nodes[0], 'DELETE', `/sandboxes/${again[0].sandboxId}`)
  } finally {
    for (const r of replicas) r.p.kill('SIGKILL')
    for (const id of sql(`SELECT id FROM sandboxes WHERE metadata->>'lea.session_id' = '${session}'`).split('\n').filter(Boolean)) {
      await api(nodes[0], 'DELETE', `/sandboxes/${id}`)
    }
  }
})

// `hutch node`, as an operator runs it against the store
function nodeCli(...args) {
  const r = spawnSync(hutchBin, ['node', ...args, '--store', uri])
  return { code: r.status, out: r.stdout.toString(), err: r.stderr.toString() }
}

test('creates spread over the nodes; a draining node takes none', { skip }, async () => {
  const drained = nodeCli('drain', 'n3')
  assert.equal(drained.code, 0, drained.err)
  assert.match(drained.out, /node n3 is draining/)
  assert.equal(sql("SELECT string_agg(name, ',' ORDER BY name) FROM nodes WHERE draining"), 'n3')
  const made = []
  try {
    const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => create(nodes[i % 3])))
    for (const r of rs) {
      assert.equal(r.status, 201, r.text)
      made.push(r.json.sandboxID)
    }
    const by = {}
    for (const id of made) by[ownerOf(id)] = (by[ownerOf(id)] || 0) + 1
    // budgets of the same host, published a moment apart, differ a little:
    // the split is even within one
    assert.deepEqual(Object.keys(by).sort(), ['n1', 'n2'], JSON.stringify(by))
    assert.ok(Math.abs(by.n1 - by.n2) <= 2, JSON.stringify(by))
    assert.equal(sql('SELECT count(*) FROM placements'), '0', 'every reservation ended with its create')
  } finally {
    sql('UPDATE nodes SET draining = false')
    await Promise.all(made.map((id, i) => api(nodes[i % 3], 'DELETE', `/sandboxes/${id}`)))
  }
})

// A control-plane call through a node that does not own its sandbox goes
// on a connection to the owner kept from the call before (the forwarding
// node's hutch_forward_connections_total says which), and its answer keeps
// the client's connection open: sequential calls from a keep-alive client
// use one socket. A kept connection idle for over a second is not used.
test('control-plane calls through a non-owner keep the client\'s connection and reuse one to the owner', { skip }, async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const call = (n, method, path, body) => new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body)
    const req = http.request(n.url + path, {
      agent, method,
      headers: { 'X-API-KEY': n.apiKey, 'Content-Type': 'application/json', ...(data ? { 'Content-Length': Buffer.byteLength(data) } : {}) },
    }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c) => { text += c })
      res.on('end', () => resolve({ status: res.status ?? res.statusCode, connection: res.headers.connection, reused: req.reusedSocket, text }))
    })
    req.on('error', reject)
    req.end(data)
  })
  const counters = async (n) => {
    const text = (await api(n, 'GET', '/metrics')).text
    const get = (how) => Number((text.match(new RegExp(`^hutch_forward_connections_total\\{how="${how}"\\} (\\d+)$`, 'm')) || [])[1] ?? NaN)
    return { dialled: get('dialled'), reused: get('reused') }
  }
  const made = []
  try {
    const r = await create(nodes[0])
    assert.equal(r.status, 201, r.text)
    const id = r.json.sandboxID
    made.push(id)
    const owner = ownerOf(id)
    const other = nodes[(nodeIndex(owner) + 1) % 3]
    const before = await counters(other)
    const got = []
    for (let i = 0; i < 10; i++) got.push(await call(other, 'GET', `/sandboxes/${id}`))
    for (const g of got) {
      assert.equal(g.status, 200, g.text)
      assert.equal(JSON.parse(g.text).sandboxID, id)
      assert.notEqual(g.connection, 'close', 'the forwarding node keeps the client\'s connection')
    }
    assert.deepEqual(got.slice(1).map((g) => g.reused), Array(9).fill(true), 'one client connection for the ten calls')
    assert.ok(Number.isFinite(before.dialled) && Number.isFinite(before.reused), 'the counters are in /metrics')
    const after = await counters(other)
    assert.ok(after.dialled - before.dialled <= 1, `one connection to the owner at most: ${JSON.stringify({ before, after })}`)
    assert.ok(after.reused - before.reused >= 9, `the others kept: ${JSON.stringify({ before, after })}`)
    // a create placed on the owner through the other node, and a kill, on the same connections
    sql(`UPDATE nodes SET draining = (name <> '${owner}')`)
    const c = await call(other, 'POST', '/sandboxes', { templateID: 'base', timeout: 60 })
    sql('UPDATE nodes SET draining = false')
    assert.equal(c.status, 201, c.text)
    made.push(JSON.parse(c.text).sandboxID)
    assert.equal(ownerOf(made[1]), owner)
    assert.equal(c.reused, true)
    const k = await call(other, 'DELETE', `/sandboxes/${made[1]}`)
    assert.equal(k.status, 204, k.text)
    assert.equal(k.reused, true)
    made.pop()
    const kept = await counters(other)
    assert.ok(kept.reused - after.reused >= 2, JSON.stringify({ after, kept }))
    // idle for over a second: the next call dials again
    await sleep(1500)
    const late = await call(other, 'GET', `/sandboxes/${id}`)
    assert.equal(late.status, 200, late.text)
    const last = await counters(other)
    assert.equal(last.dialled - kept.dialled, 1, JSON.stringify({ kept, last }))
  } finally {
    sql('UPDATE nodes SET draining = false')
    agent.destroy()
    await Promise.all(made.map((id) => api(nodes[0], 'DELETE', `/sandboxes/${id}`)))
  }
})

// The forwarding proof: a client that sends it without the secret (made
// up, copied from another call, or too old) is refused, and so is one
// that tries to have a create placed where it wants.
test('attack: a client forging X-Hutch-Forwarded is refused', { skip }, async () => {
  const sign = (method, target, t, node = 'n1', p = '-', key = secret, c = '127.0.0.1') =>
    `v2 t=${t} n=${node} p=${p} c=${c} s=` + createHmac('sha256', key).update(`hutch-forward-v2\n${method}\n${target}\n${t}\n${node}\n${p}\n${c}`).digest('hex')
  const now = Date.now()
  const cases = {
    'no proof at all': 'v1',
    'made up': `v2 t=${now} n=n1 p=- c=- s=${'0'.repeat(64)}`,
    'another secret': sign('POST', '/sandboxes', now, 'n1', '-', 'not-the-cluster-secret'),
    'another target': sign('GET', '/sandboxes', now),
    'too old': sign('POST', '/sandboxes', now - 60_000),
    'garbage': 'v2 t=1 n=\u00ff s=zz',
    'the version before': `v1 t=${now} n=n1 p=- s=${'0'.repeat(64)}`,
  }
  const before = sql('SELECT count(*) FROM sandboxes')
  for (const [what, value] of Object.entries(cases)) {
    const r = await api(nodes[1], 'POST', '/sandboxes', { templateID: 'base', timeout: 60 }, { 'X-Hutch-Forwarded': value })
    assert.equal(r.status, 403, `${what}: ${r.status} ${r.text}`)
    // and on the data plane, before any sandbox is looked up
    const dp = await fetch(`${nodes[1].url}/health`, { headers: { 'E2b-Sandbox-Id': 'inope', 'X-Hutch-Forwarded': value } })
    assert.equal(dp.status, 403, what)
  }
  // two proofs, one of them valid: refused too
  const two = await rawRequest(nodes[1], `GET /health HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: inope\r\nX-Hutch-Forwarded: ${sign('GET', '/health', Date.now())}\r\nX-Hutch-Forwarded: v1\r\nConnection: close\r\n\r\n`)
  assert.match(two, /^HTTP\/1\.1 403/)
  assert.equal(sql('SELECT count(*) FROM sandboxes'), before, 'nothing was created')
  assert.match(nodes[1].log(), /refused a forwarded call/)
})

// One request on a raw socket (from localAddress, a loopback address): the
// answer as text.
function rawRequest(node, text, localAddress = undefined) {
  return new Promise((res, rej) => {
    const sock = net.connect({ port: Number(new URL(node.url).port), host: '127.0.0.1', localAddress })
    let out = ''
    sock.on('connect', () => sock.write(text))
    sock.on('data', (c) => { out += c })
    sock.on('end', () => res(out))
    sock.on('error', rej)
    setTimeout(() => { sock.destroy(); rej(new Error('raw request timed out')) }, 20_000)
  })
}

// A WebSocket through `node` to port 8000 of sandbox id: one text frame
// out, its echo back.
function wsEcho(node, id, text) {
  return new Promise((res, rej) => {
    const sock = net.connect(Number(new URL(node.url).port), '127.0.0.1')
    const key = randomBytes(16).toString('base64')
    let buf = Buffer.alloc(0), opened = false
    sock.on('connect', () => sock.write(`GET /ws HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${id}\r\nE2b-Sandbox-Port: 8000\r\n` +
      `Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`))
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c])
      if (!opened) {
        const end = buf.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = buf.subarray(0, end).toString()
        if (!/^HTTP\/1\.1 101/.test(head)) { sock.destroy(); return rej(new Error(`no upgrade: ${head}`)) }
        buf = buf.subarray(end + 4)
        opened = true
        const payload = Buffer.from(text), mask = randomBytes(4)
        sock.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, Buffer.from(payload.map((b, i) => b ^ mask[i % 4]))]))
      }
      if (buf.length >= 2 && buf.length >= 2 + (buf[1] & 127)) {
        const data = buf.subarray(2, 2 + (buf[1] & 127)).toString()
        sock.destroy()
        res(data)
      }
    })
    sock.on('error', rej)
    setTimeout(() => { sock.destroy(); rej(new Error('WebSocket timed out')) }, 20_000)
  })
}

// GET /hello answers "hello"; GET /ws echoes WebSocket frames (short ones).
const WS_SERVER = String.raw`
import base64, hashlib, http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith('/ws'):
            key = self.headers['Sec-WebSocket-Key']
            acc = base64.b64encode(hashlib.sha1((key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').encode()).digest()).decode()
            self.send_response(101)
            self.send_header('Upgrade', 'websocket')
            self.send_header('Connection', 'Upgrade')
            self.send_header('Sec-WebSocket-Accept', acc)
            self.end_headers()
            self.wfile.flush()
            while True:
                h = self.rfile.read(2)
                if len(h) < 2: return
                ln = h[1] & 127
                mask = self.rfile.read(4)
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(ln)))
                self.wfile.write(bytes([0x81, len(data)]) + data)
                self.wfile.flush()
        else:
            self.send_response(200)
            self.send_header('Content-Length', '5')
            self.end_headers()
            self.wfile.write(b'hello')
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
S(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
`

// A node whose listener is TLS is reached over TLS: its address is
// https://, and a forwarding node checks its certificate against
// cluster.ca; a node that does not trust the certificate forwards nothing.
test('forwarding over TLS to a node with an https:// address, its certificate checked', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hutch-cluster-tls-'))
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=n4', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
  { stdio: 'ignore' })
  process.kill(nodes[0].pid, 'SIGTERM')
  nodes[0] = await nodes[0].restart([...nodeArgs('n1'), '--cluster-ca', join(dir, 'cert.pem')], nodeEnv('n1'))
  const n4 = await startDaemon([...nodeArgs('n4'), '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')],
    { apiKey: nodes[0].apiKey }, nodeEnv('n4'))
  let id
  try {
    assert.match(sql("SELECT address FROM nodes WHERE name = 'n4'"), /^https:\/\/127\.0\.0\.1:\d+$/)
    sql("UPDATE nodes SET draining = (name <> 'n4')")
    const r = await create(nodes[0])
    assert.equal(r.status, 201, r.text)
    id = r.json.sandboxID
    assert.equal(ownerOf(id), 'n4')
    assert.equal((await api(nodes[0], 'GET', `/sandboxes/${id}`)).status, 200)
    const dp = await fetch(`${nodes[0].url}/health`, { headers: { "E2b-Sandbox-Id": id } })
    assert.equal(dp.status, 204)
    // n2 has no cluster.ca: the system's CAs do not know n4's certificate
    const refused = await api(nodes[1], 'GET', `/sandboxes/${id}`)
    assert.equal(refused.status, 503, refused.text)
    assert.match(refused.json.message, /node n4, which serves this call, cannot be reached from this node: TLS/)
    assert.equal((await api(nodes[0], 'DELETE', `/sandboxes/${id}`)).status, 204)
    id = null
  } finally {
    sql('UPDATE nodes SET draining = false')
    if (id) await api(nodes[0], 'DELETE', `/sandboxes/${id}`).catch(() => {})
    await n4.stop()
    sql("DELETE FROM nodes WHERE name = 'n4'")
    rmSync(dir, { recursive: true, force: true })
  }
})

test('hutch node: list, drain and undrain, and remove only a stopped node that owns nothing', { skip }, async () => {
  const list = nodeCli('list')
  assert.equal(list.code, 0, list.err)
  for (const n of ['n1', 'n2', 'n3']) assert.match(list.out, new RegExp(`^${n} +http://\\S+ +lease live, +\\d+ s left`, 'm'))
  assert.equal(nodeCli('drain', 'n2').code, 0)
  assert.match(nodeCli('list').out, /^ +draining: takes no new placements$/m)
  assert.equal(nodeCli('undrain', 'n2').code, 0)
  assert.equal(sql("SELECT draining FROM nodes WHERE name = 'n2'"), 'f')
  // a live node is not removed; nor is an unknown one
  const live = nodeCli('remove', 'n2')
  assert.equal(live.code, 1)
  assert.match(live.err, /node n2 has a live lease: stop it first/)
  const unknown = nodeCli('drain', 'no-such-node')
  assert.equal(unknown.code, 1)
  assert.match(unknown.err, /no node no-such-node in the store/)
  // a node gone for a while (its row as a stopped node leaves it), first
  // still owning a sandbox row, then owning none
  sql("INSERT INTO nodes (name, address, memory, cpu, pids, max_sandboxes, generation, lease_until, registered_at)" +
    " VALUES ('gone', 'http://127.0.0.1:9', 1, 1, 1, 1, 1, now() - interval '1 minute', now() - interval '1 hour')")
  try {
    const c = await create(nodes[0])
    assert.equal(c.status, 201, c.text)
    const owner = ownerOf(c.json.sandboxID)
    sql(`UPDATE sandboxes SET owner = 'gone' WHERE id = '${c.json.sandboxID}'`)
    const owns = nodeCli('remove', 'gone')
    assert.equal(owns.code, 1)
    assert.match(owns.err, /node gone still owns 1 sandbox/)
    sql(`UPDATE sandboxes SET owner = '${owner}' WHERE id = '${c.json.sandboxID}'`)
    assert.equal((await api(nodes[0], 'DELETE', `/sandboxes/${c.json.sandboxID}`)).status, 204)
    const removed = nodeCli('remove', 'gone')
    assert.equal(removed.code, 0, removed.err)
    assert.equal(sql("SELECT count(*) FROM nodes WHERE name = 'gone'"), '0')
  } finally {
    sql("DELETE FROM nodes WHERE name = 'gone'")
  }
})
