// The PostgreSQL store through the API (E2E_STORE=postgresql, run.sh then
// starts the server; skipped otherwise): the daemon's rows are in the
// database, and an outage of the database is 503 with Retry-After while it
// lasts, then everything is served again with nothing lost.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, api, sleep, root } from './harness.mjs'

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
