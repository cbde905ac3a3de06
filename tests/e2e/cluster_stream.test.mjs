// Streams through a node that does not own the sandbox (E2E_STORE=postgresql;
// skipped otherwise): two nodes on one PostgreSQL store, n1 owning the
// sandbox and n2 (draining, so that it places nothing on itself) forwarding
// every call to it. A 1 GiB files.write and an 8 MiB download through n2
// arrive intact while n2's RSS stays within a few MiB (bodies are streamed
// on, never held whole); several calls of the control and data planes go
// over one client connection to n2, which sends them on over one kept
// connection to n1; and an owner killed in the middle of an upload and a
// download leaves its clients a clear error (or a cut stream, never one
// that looks complete) and nothing behind on the forwarding node.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, useDaemon, sleep, root, build, patternStream, peakGrowth } from './harness.mjs'

const pgDir = process.env.E2E_STORE === 'postgresql' ? process.env.HUTCH_TEST_PG_DIR : null
const skip = pgDir ? false : 'E2E_STORE=postgresql is not set (tests/e2e/run.sh starts a server then)'
const pgsh = (...args) => execFileSync(join(root, 'tests', 'pg.sh'), args).toString().trim()
const dbName = `hutch_cluster_stream_${process.pid}`
const GiB = 1 << 30, MiB = 1 << 20
// The forwarding node's RSS growth allowed while a body passes through it:
// it holds two bounded buffers per call. ASan's allocator keeps what was
// freed in its quarantine (64 MiB in the tests, harness.mjs) and caches.
const BOUND_KIB = (build === 'build-san' ? 96 : 8) * 1024
let uri, dir, owner, fwd, sbx

const sql = (q) => execFileSync('psql', [uri, '-Atc', q]).toString().trim()
const nodeArgs = (name) => ['--config', join(dir, 'hutch.conf'), '--store', uri, '--node-name', name,
  '--slots-dir', join(dir, 'slots'), '--cluster-secret-file', join(dir, 'secret')]
const nodeEnv = (name) => ({ HUTCH_CGROUP_PARENT: `hutch-e2e-${process.pid}-${name}` })
const port = (n) => Number(new URL(n.url).port)

before(async () => {
  if (skip) return
  uri = pgsh('createdb', pgDir, dbName)
  dir = mkdtempSync(join(tmpdir(), 'hutch-cluster-stream-'))
  mkdirSync(join(dir, 'slots'))
  writeFileSync(join(dir, 'secret'), randomBytes(24).toString('hex') + '\n', { mode: 0o600 })
  // room for a 1 GiB file in the sandbox's layer
  writeFileSync(join(dir, 'hutch.conf'), 'default_disk = 3G\n')
  owner = await startDaemon(nodeArgs('n1'), null, nodeEnv('n1'))
  fwd = await startDaemon(nodeArgs('n2'), { apiKey: owner.apiKey }, nodeEnv('n2'))
  sql("UPDATE nodes SET draining = (name = 'n2')")
  useDaemon(fwd)
  sbx = await Sandbox.create({ timeoutMs: 600_000 })
  assert.equal(sql(`SELECT owner FROM sandboxes WHERE id = '${sbx.sandboxId}'`), 'n1', 'placed on n1 through n2')
})

after(async () => {
  if (skip) return
  if (sbx) await sbx.kill().catch(() => {})
  for (const n of [fwd, owner]) {
    if (!n) continue
    const st = await n.stop()
    assert.equal(st.code, 0, `${n.url} exit ${JSON.stringify(st)}; log tail: ${n.log().slice(-2000)}`)
  }
  if (uri) { try { pgsh('dropdb', pgDir, dbName) } catch {} }
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const envdHeaders = (extra = {}) => ({ 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983',
  'X-Access-Token': sbx.envdAccessToken ?? '', Authorization: 'Basic ' + Buffer.from('user:').toString('base64'), ...extra })

// One request to node n with http (agent: a keep-alive one, or none).
function request(n, method, path, headers, body, agent) {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port: port(n), method, path, headers, agent }, (r) => {
      const chunks = []
      r.on('data', (c) => chunks.push(c))
      r.on('end', () => res({ status: r.statusCode, headers: r.headers, text: Buffer.concat(chunks).toString(), reused: req.reusedSocket }))
    })
    req.on('error', rej)
    req.end(body)
  })
}

async function forwardCounters(n) {
  const text = (await request(n, 'GET', '/metrics', {})).text
  const get = (re) => Number(text.match(re)?.[1] ?? NaN)
  return { dialled: get(/^hutch_forward_connections_total\{how="dialled"\} (\d+)$/m),
    reused: get(/^hutch_forward_connections_total\{how="reused"\} (\d+)$/m) }
}

const openFds = (pid) => readdirSync(`/proc/${pid}/fd`).length

test('a 1 GiB files.write through a node that does not own the sandbox: intact, the forwarding node at bounded memory', { skip, timeout: 600_000 }, async (t) => {
  const hash = createHash('sha256')
  const growth = await peakGrowth(fwd.pid, () => sbx.files.write('/tmp/big.bin', patternStream(GiB, hash), { requestTimeoutMs: 0 }))
  const want = hash.digest('hex')
  const r = await sbx.commands.run('sha256sum /tmp/big.bin && stat -c %s /tmp/big.bin', { timeoutMs: 120_000 })
  assert.equal(r.stdout.split(' ')[0], want, 'the file in the sandbox has the checksum of what was sent')
  assert.match(r.stdout, new RegExp(`\\n${GiB}\\n`))
  t.diagnostic(`forwarding node RSS growth during the upload: ${growth} KiB`)
  assert.ok(growth < BOUND_KIB, `the forwarding node's RSS grew by ${growth} KiB during the upload`)
})

test('an 8 MiB download through the forwarding node: intact, streamed, at bounded memory', { skip, timeout: 120_000 }, async (t) => {
  const made = await sbx.commands.run(`head -c ${8 * MiB} /dev/urandom > /tmp/dl.bin && sha256sum /tmp/dl.bin`, { timeoutMs: 120_000 })
  const want = made.stdout.split(' ')[0]
  const hash = createHash('sha256')
  let got = 0, pieces = 0
  const growth = await peakGrowth(fwd.pid, async () => {
    const stream = await sbx.files.read('/tmp/dl.bin', { format: 'stream', requestTimeoutMs: 0 })
    for await (const c of stream) {
      hash.update(c)
      got += c.length
      pieces++
    }
  })
  assert.equal(got, 8 * MiB)
  assert.equal(hash.digest('hex'), want)
  assert.ok(pieces > 4, `the body arrived as it was sent (${pieces} pieces)`)
  t.diagnostic(`forwarding node RSS growth during the download: ${growth} KiB`)
  assert.ok(growth < BOUND_KIB, `the forwarding node's RSS grew by ${growth} KiB during the download`)
  await sbx.commands.run('rm -f /tmp/dl.bin')
})

test('keep-alive through the forwarding node: one client connection, one kept connection to the owner', { skip }, async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const key = { 'X-API-KEY': owner.apiKey }
  try {
    // the pool may hold a connection from the tests before: count from here
    await request(fwd, 'GET', `/sandboxes/${sbx.sandboxId}`, key, undefined, agent)
    const before = await forwardCounters(fwd)
    const calls = [
      () => request(fwd, 'GET', `/sandboxes/${sbx.sandboxId}`, key, undefined, agent),
      () => request(fwd, 'GET', '/health', { 'E2b-Sandbox-Id': sbx.sandboxId }, undefined, agent),
      () => request(fwd, 'POST', `/sandboxes/${sbx.sandboxId}/timeout`, { ...key, 'Content-Type': 'application/json' },
        JSON.stringify({ timeout: 600 }), agent),
      () => request(fwd, 'POST', '/files?path=/tmp/ka.txt', envdHeaders({ 'Content-Type': 'application/octet-stream',
        'Content-Length': '10' }), 'kept alive', agent),
      () => request(fwd, 'GET', '/files?path=/tmp/ka.txt', envdHeaders(), undefined, agent),
      () => request(fwd, 'GET', `/sandboxes/${sbx.sandboxId}`, key, undefined, agent),
    ]
    const got = []
    for (const call of calls) got.push(await call())
    assert.deepEqual(got.map((r) => r.status), [200, 204, 204, 200, 200, 200], got.map((r) => r.text).join('\n'))
    assert.equal(got[4].text, 'kept alive')
    assert.equal(JSON.parse(got[5].text).sandboxID, sbx.sandboxId)
    for (const r of got) {
      assert.equal(r.reused, true, 'every call went over the same client connection')
      assert.notEqual(r.headers.connection, 'close')
    }
    const after = await forwardCounters(fwd)
    assert.equal(after.reused - before.reused, calls.length, JSON.stringify({ before, after }))
    assert.equal(after.dialled, before.dialled, 'no new connection to the owner')
  } finally {
    agent.destroy()
  }
})

// A body whose chunked framing breaks in the middle: what follows it on the
// client's connection is not read as a request (smuggling one past the
// forwarding node), and the owner's connection, which got part of a
// request, is not kept for another call.
test('attack: a request smuggled after a broken chunked body through the forwarding node is never served', { skip }, async () => {
  const h = envdHeaders({ 'Content-Type': 'application/octet-stream', 'Transfer-Encoding': 'chunked', Host: 'x' })
  const head = Object.entries(h).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  const smuggled = `GET /sandboxes/${sbx.sandboxId} HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${owner.apiKey}\r\n\r\n`
  const out = await new Promise((res, rej) => {
    const sock = net.connect(port(fwd), '127.0.0.1')
    let text = ''
    sock.on('connect', async () => {
      sock.write(`POST /files?path=/tmp/smuggle.txt HTTP/1.1\r\n${head}\r\n5\r\nhello\r\n`)
      await sleep(300) // the owner has the head and the first chunk
      sock.write(smuggled + smuggled)
    })
    sock.on('data', (c) => { text += c })
    sock.on('end', () => res(text))
    sock.on('error', rej)
    setTimeout(() => { sock.destroy(); rej(new Error(`no end: ${text}`)) }, 20_000)
  })
  assert.match(out, /^HTTP\/1\.1 400 /, out)
  assert.match(out, /request body: /)
  assert.equal(out.match(/HTTP\/1\.1 \d{3}/g).length, 1, `one answer only, then the connection closed: ${out}`)
  const next = await request(fwd, 'GET', `/sandboxes/${sbx.sandboxId}`, { 'X-API-KEY': owner.apiKey })
  assert.equal(next.status, 200, next.text)
  assert.equal(JSON.parse(next.text).sandboxID, sbx.sandboxId)
})

test('the owner killed mid-upload and mid-download: a clear error, a cut stream, nothing left on the forwarding node', { skip, timeout: 120_000 }, async () => {
  const fdsBefore = openFds(fwd.pid)
  // a download of the 1 GiB file, and an upload, both under way when the owner dies
  let downloaded = 0
  const download = new Promise((res) => {
    const req = http.request({ host: '127.0.0.1', port: port(fwd), path: '/files?path=/tmp/big.bin', headers: envdHeaders() }, (r) => {
      r.on('data', (c) => { downloaded += c.length })
      r.on('error', () => {})
      r.on('close', () => res({ status: r.statusCode, complete: r.complete }))
    })
    req.on('error', (e) => res({ error: e.message }))
    req.end()
  })
  // an upload that keeps sending until it is answered
  let answered = null
  const upload = new Promise((res) => {
    const req = http.request({ host: '127.0.0.1', port: port(fwd), method: 'POST', path: '/files?path=/tmp/cut.bin',
      headers: envdHeaders({ 'Content-Type': 'application/octet-stream' }) }, (r) => {
      const chunks = []
      r.on('data', (c) => chunks.push(c))
      r.on('end', () => { answered = { status: r.statusCode, text: Buffer.concat(chunks).toString() }; res(answered) })
    })
    req.on('error', (e) => { if (!answered) res({ error: e.message }) })
    const piece = Buffer.alloc(256 << 10, 7)
    const pump = async () => {
      for (let i = 0; i < 4096 && !answered && !req.destroyed; i++) {
        if (!req.write(piece)) await new Promise((r) => req.once('drain', r))
        await sleep(5)
      }
      req.end()
    }
    pump().catch(() => {})
  })
  for (let i = 0; i < 200 && downloaded < 8 * MiB; i++) await sleep(50)
  assert.ok(downloaded >= 8 * MiB, `the download is under way (${downloaded} bytes)`)
  process.kill(owner.pid, 'SIGKILL')
  await owner.exited
  const up = await upload, down = await download
  assert.equal(up.status, 502, JSON.stringify(up))
  assert.match(JSON.parse(up.text).message, /node n1, which serves this call: it closed the connection without a response/)
  assert.ok(down.error || down.complete === false, `the download is cut, not complete: ${JSON.stringify(down)}`)
  assert.ok(downloaded < GiB)
  // the forwarding node holds nothing of either call (nor a kept connection to the dead node)
  let fds
  for (let i = 0; i < 50 && (fds = openFds(fwd.pid)) > fdsBefore; i++) await sleep(100)
  assert.ok(fds <= fdsBefore, `descriptors of the forwarding node: ${fdsBefore} before, ${fds} after`)
  assert.match(fwd.log(), /forward to node n1: response cut/)
  // a call meanwhile is answered 503 naming the node
  const down503 = await request(fwd, 'GET', `/sandboxes/${sbx.sandboxId}`, { 'X-API-KEY': owner.apiKey })
  assert.equal(down503.status, 503, down503.text)
  assert.match(JSON.parse(down503.text).message, /node n1/)
  // the owner comes back and takes its sandbox again, served through n2
  owner = await owner.restart(nodeArgs('n1'), nodeEnv('n1'))
  let back
  for (let i = 0; i < 50; i++) {
    back = await request(fwd, 'GET', `/sandboxes/${sbx.sandboxId}`, { 'X-API-KEY': owner.apiKey })
    if (back.status === 200) break
    await sleep(100)
  }
  assert.equal(back.status, 200, back.text)
  assert.equal((await sbx.commands.run('echo back')).stdout, 'back\n')
  await sbx.kill()
  assert.equal(sql(`SELECT count(*) FROM sandboxes WHERE id = '${sbx.sandboxId}'`), '0')
  sbx = null
})
