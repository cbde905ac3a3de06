// Three hutch nodes on one machine sharing one PostgreSQL store
// (E2E_STORE=postgresql; skipped otherwise). Each node has its own data and
// run dirs, cgroup parent and port; they share the uid slots (--slots-dir)
// so that no two sandboxes of the host get one uid range, and one cluster
// secret. Nodes register and renew leases, every sandbox row has its owner
// node, a node adopts only its own sandboxes at restart, any node answers
// any call (forwarded to the owner: control plane, envd's data plane with
// its streams, ports and WebSockets), creates are placed on the least
// loaded node, an Idempotency-Key is unique across the nodes, a client
// cannot pass for a node, and a node fenced out of its lease admits no
// creates.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
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

function nodeArgs(name) {
  return ['--store', uri, '--node-name', name, '--slots-dir', slots, '--cluster-secret-file', join(secretDir, 'secret')]
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
    // the owner's queue answers with the same sandbox; a create that
    // placement sent to another node before the key's row existed is
    // refused there by the unique index
    assert.ok(r.status === 201 || r.status === 200 || r.status === 409, `${r.status} ${r.text}`)
    if (r.status !== 409) assert.equal(r.json.sandboxID, id)
  }
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE idem_key = '${key}'`), '1')
  let live = 0
  for (const n of nodes) live += (await api(n, 'GET', '/v2/sandboxes')).json.length
  assert.equal(live, 1, 'one sandbox on the three nodes')
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

// The forwarding proof: a client that sends it without the secret (made
// up, copied from another call, or too old) is refused, and so is one
// that tries to have a create placed where it wants.
test('attack: a client forging X-Hutch-Forwarded is refused', { skip }, async () => {
  const sign = (method, target, t, node = 'n1', p = '-', key = secret) =>
    `v1 t=${t} n=${node} p=${p} s=` + createHmac('sha256', key).update(`hutch-forward-v1\n${method}\n${target}\n${t}\n${node}\n${p}`).digest('hex')
  const now = Date.now()
  const cases = {
    'no proof at all': 'v1',
    'made up': `v1 t=${now} n=n1 p=- s=${'0'.repeat(64)}`,
    'another secret': sign('POST', '/sandboxes', now, 'n1', '-', 'not-the-cluster-secret'),
    'another target': sign('GET', '/sandboxes', now),
    'too old': sign('POST', '/sandboxes', now - 60_000),
    'garbage': 'v1 t=1 n=\u00ff s=zz',
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

// One request on a raw socket: the answer as text.
function rawRequest(node, text) {
  return new Promise((res, rej) => {
    const sock = net.connect(Number(new URL(node.url).port), '127.0.0.1')
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
    // the TLS connection to n4 is kept: the calls after the create went out on it
    const m = await (await fetch(`${nodes[0].url}/metrics`)).text()
    const reused = Number(m.match(/^hutch_forward_connections_total\{how="reused"\} (\d+)$/m)?.[1])
    assert.ok(reused >= 2, `calls sent on a kept TLS connection: ${reused}`)
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
    sql(`UPDATE sandboxes SET owner = 'gone' WHERE id = '${c.json.sandboxID}'`)
    const owns = nodeCli('remove', 'gone')
    assert.equal(owns.code, 1)
    assert.match(owns.err, /node gone still owns 1 sandbox/)
    sql(`UPDATE sandboxes SET owner = 'n1' WHERE id = '${c.json.sandboxID}'`)
    assert.equal((await api(nodes[0], 'DELETE', `/sandboxes/${c.json.sandboxID}`)).status, 204)
    const removed = nodeCli('remove', 'gone')
    assert.equal(removed.code, 0, removed.err)
    assert.equal(sql("SELECT count(*) FROM nodes WHERE name = 'gone'"), '0')
  } finally {
    sql("DELETE FROM nodes WHERE name = 'gone'")
  }
})
