// What an unauthenticated signed /files request costs the daemon: at most one
// token hashed, with many sandboxes alive, unless the daemon opts into the
// token scan (signed_url.scan). The test build answers every signed request
// with X-Hutch-Test-Signature-Hashes, the number of tokens it hashed
// (src/daemon/envd/signed_url.c); the release build has no such header and
// the file is skipped there.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { randomBytes } from 'node:crypto'
import { Sandbox } from 'e2b'
import { startDaemon } from './harness.mjs'

const N = 16 // sandboxes alive
let d
const sbxs = []

function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }))
    })
    req.on('error', reject)
    req.end()
  })
}
const hashes = (res) => res.headers['x-hutch-test-signature-hashes']
const forged = (url) => {
  const u = new URL(url)
  u.searchParams.set('signature', 'v1_' + randomBytes(32).toString('base64url').slice(0, 43))
  return u.toString()
}

before(async () => {
  d = await startDaemon()
  for (let i = 0; i < N; i++) sbxs.push(await Sandbox.create({ timeoutMs: 300_000 }))
  await sbxs[0].files.write('/home/user/f.txt', 'the file')
})
after(async () => {
  await Promise.all(sbxs.map((s) => s.kill().catch(() => {})))
  const st = await d?.stop()
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}`)
})

test('default: a forged signature that names no sandbox hashes no token at all, however many sandboxes run', async (t) => {
  const url = await sbxs[0].downloadUrl('/home/user/f.txt')
  const probe = await get(forged(url))
  if (hashes(probe) === undefined) return t.skip('the hash counter exists only in the test (sanitizer) build')
  for (let i = 0; i < 50; i++) {
    const res = await get(forged(url))
    assert.equal(res.status, 401)
    assert.equal(hashes(res), '0', `request ${i}`)
  }
  // a genuine link without a name is refused the same way, and says why
  const res = await get(url)
  assert.equal(res.status, 401)
  assert.equal(hashes(res), '0')
  assert.match(JSON.parse(res.body).message, /names no sandbox.*E2b-Sandbox-Id.*per-sandbox host name/)
})

test('default: a name costs exactly one hash, right or wrong', async (t) => {
  const url = await sbxs[0].downloadUrl('/home/user/f.txt')
  if (hashes(await get(forged(url))) === undefined) return t.skip('test build only')
  let res = await get(url, { 'E2b-Sandbox-Id': sbxs[0].sandboxId })
  assert.equal(res.status, 200)
  assert.equal(res.body, 'the file')
  assert.equal(hashes(res), '1')
  res = await get(forged(url), { 'E2b-Sandbox-Id': sbxs[5].sandboxId })
  assert.equal(res.status, 401)
  assert.equal(hashes(res), '1')
  // E2B's per-sandbox host name (a domain this daemon does not serve, so the
  // request reaches the signed-URL path with its Host)
  res = await get(url, { Host: `49983-${sbxs[0].sandboxId}.elsewhere.test` })
  assert.equal(res.status, 200)
  assert.equal(hashes(res), '1')
  for (const s of sbxs.slice(1, 6)) {
    res = await get(forged(url), { Host: `49983-${s.sandboxId}.elsewhere.test` })
    assert.equal(res.status, 401)
    assert.equal(hashes(res), '1')
  }
})

test('signed_url.scan (opt-in): a first sight tries every token, later uses one index hit', async (t) => {
  const probeUrl = await sbxs[0].downloadUrl('/home/user/f.txt')
  if (hashes(await get(forged(probeUrl))) === undefined) return t.skip('test build only')
  // SIGTERM leaves the sandboxes running; the next daemon on the same dirs
  // adopts them, tokens included
  process.kill(d.pid, 'SIGTERM')
  d = await d.restart(['--signed-url-scan', 'true'])
  // (the SDK objects still hold the old daemon's port)
  const url = (await sbxs[0].downloadUrl('/home/user/f.txt', { useSignatureExpiration: 120 })).replace(/^http:\/\/[^/]+/, d.url)
  let res = await get(url)
  assert.equal(res.status, 200)
  // the scan hashes every running sandbox's token (the counter counts)
  assert.ok(Number(hashes(res)) >= N, `first sight hashed ${hashes(res)} tokens`)
  res = await get(url)
  assert.equal(res.status, 200)
  assert.equal(hashes(res), '1', 'a link seen before: the signature index')
})

