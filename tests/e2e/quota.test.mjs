// Per-team quotas (quota.sandboxes, quota.memory, quota.builds): over quota
// is a 429 that names the quota, and one team's use never counts against
// another's.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync, readFileSync, rmSync, mkdirSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startDaemon, api, hutchBin } from './harness.mjs'

let d, work, b
const made = []
before(async () => {
  work = mkdtempSync(join(tmpdir(), 'hutch-quota-'))
  writeFileSync(join(work, 'hutch.conf'),
    'default_memory = 128M\nquota.sandboxes = 2\nquota.memory = 300M\nquota.builds = 1\n')
  d = await startDaemon(['--config', join(work, 'hutch.conf')])
  const key = execFileSync(hutchBin, ['keys', 'create', '--team', 'team-b', '--data-dir', join(d.base, 'data')], { env: d.env })
    .toString().match(/\b(e2b_[0-9a-f]{40})\b/)[1]
  b = { url: d.url, apiKey: key }
})
after(async () => {
  for (const [who, id] of made) await api(who, 'DELETE', `/sandboxes/${id}`).catch(() => {})
  if (work) rmSync(work, { recursive: true, force: true })
  const st = await d?.stop()
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

async function create(who) {
  const r = await api(who, 'POST', '/v2/sandboxes', { timeout: 120 })
  if (r.status === 201) made.push([who, r.json.sandboxID])
  return r
}

test('quota.sandboxes and quota.memory: 429 with the quota named, per team, pauses and resumes counted', async () => {
  const a1 = await create(d), a2 = await create(d)
  assert.equal(a1.status, 201, a1.text)
  assert.equal(a2.status, 201, a2.text)
  let r = await create(d)
  assert.equal(r.status, 429)
  assert.match(r.json.message, /quota of 2 running sandboxes \(quota\.sandboxes\)/)
  // another team is not affected
  const b1 = await create(b)
  assert.equal(b1.status, 201, b1.text)
  // a paused sandbox that keeps its memory frees a slot but not its memory
  assert.equal((await api(d, 'POST', `/sandboxes/${a2.json.sandboxID}/pause`)).status, 204)
  r = await create(d)
  assert.equal(r.status, 429)
  assert.match(r.json.message, /hold 256 MiB, this one asks 128 MiB, the quota is 300 MiB \(quota\.memory\)/)
  // released, it holds nothing: the create fits, and its resume does not
  assert.equal((await api(d, 'POST', `/sandboxes/${a1.json.sandboxID}/pause`, { memory: false })).status, 204)
  const a3 = await create(d)
  assert.equal(a3.status, 201, a3.text)
  r = await api(d, 'POST', `/sandboxes/${a1.json.sandboxID}/resume`, {})
  assert.equal(r.status, 429, r.text)
  assert.match(r.json.message, /quota\.(sandboxes|memory)/)
})

test('quota.builds: one template build at a time per team', async () => {
  const root = join(work, 'root')
  mkdirSync(join(root, 'etc'), { recursive: true })
  writeFileSync(join(root, 'etc', 'blob'), randomBytes(24 << 20)) // takes the builder a moment
  execFileSync('tar', ['-C', root, '-cf', join(work, 't.tar'), '.'])
  const body = readFileSync(join(work, 't.tar'))
  const post = (who, name) => fetch(`${d.url}/templates?name=${name}`, {
    method: 'POST', headers: { 'X-API-KEY': who.apiKey, 'Content-Type': 'application/octet-stream' }, body,
  }).then(async (res) => ({ status: res.status, json: await res.json() }))
  const rs = await Promise.all([post(d, 'qa1'), post(d, 'qa2'), post(d, 'qa3'), post(b, 'qb1')])
  const a = rs.slice(0, 3)
  assert.ok(a.some((x) => x.status === 201), JSON.stringify(rs))
  assert.ok(a.some((x) => x.status === 429 && /quota of 1 template builds at once \(quota\.builds\)/.test(x.json.message)),
    JSON.stringify(rs))
  assert.equal(rs[3].status, 201, JSON.stringify(rs[3]))
  for (const [who, name] of [[d, 'qa1'], [d, 'qa2'], [d, 'qa3'], [b, 'qb1']]) await api(who, 'DELETE', `/templates/${name}`)
})
