// Released sandboxes cost only what they hold, their files and a row
// (docs/operations.md "Capacity and admission control"): they do not count
// against max_sandboxes (nor the descriptor budget, by the same count); a
// create or a resume at the maximum releases the least recently used frozen
// sandbox to get in, and with none to release it is refused whole, the
// sandbox it would resume left as it was.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, api } from './harness.mjs'

const MAX = 3
let d, confDir
before(async () => {
  confDir = mkdtempSync(join(tmpdir(), 'hutch-slots-'))
  const conf = join(confDir, 'hutch.conf')
  writeFileSync(conf, `max_sandboxes = ${MAX}\n`)
  d = await startDaemon(['--config', conf])
})
after(async () => {
  if (!d) return
  const st = await d.stop()
  rmSync(confDir, { recursive: true, force: true })
  assert.equal(st.code, 0, 'the daemon exits cleanly (no sanitizer report)\n' + d.log().slice(-3000))
})

const opts = () => ({ apiKey: d.apiKey, apiUrl: d.url, sandboxUrl: d.url })
const info = async (id) => (await api(d, 'GET', `/sandboxes/${id}`)).json
const create = () => api(d, 'POST', '/sandboxes', { templateID: 'base', timeout: 120 })
async function metric(series) {
  const text = await (await fetch(d.url + '/metrics')).text()
  const line = text.split('\n').find((l) => l.startsWith(series + ' '))
  return line ? Number(line.split(' ')[1]) : undefined
}

test('released sandboxes do not count against max_sandboxes; frozen ones make room; none: refused whole', async () => {
  const made = []
  try {
    for (let i = 0; i < MAX; i++) {
      const s = await Sandbox.create({ ...opts(), timeoutMs: 120000 })
      made.push(s)
      await s.files.write('/home/user/keep.txt', `file of ${i}\n`)
    }
    const [a, b] = made
    let r = await create()
    assert.equal(r.status, 429, r.text)
    assert.match(r.json.message, /maximum of 3 sandboxes/)

    // a released one holds only its files: a create gets its slot
    r = await api(d, 'POST', `/sandboxes/${a.sandboxId}/pause`, { memory: false })
    assert.equal(r.status, 204, r.text)
    assert.equal((await info(a.sandboxId)).memoryReleased, true)
    r = await create()
    assert.equal(r.status, 201, r.text)
    const c = r.json.sandboxID
    made.push({ sandboxId: c, kill: () => Sandbox.kill(c, opts()) })

    // a frozen one holds processes: at the maximum, a create releases it (files kept)
    assert.equal(await b.pause(), true)
    assert.equal((await info(b.sandboxId)).memoryReleased, false)
    r = await create()
    assert.equal(r.status, 201, r.text)
    const e = r.json.sandboxID
    made.push({ sandboxId: e, kill: () => Sandbox.kill(e, opts()) })
    assert.equal((await info(b.sandboxId)).memoryReleased, true, 'released to make room')
    assert.equal(await metric('hutch_sandbox_releases_total{reason="room"}'), 1)

    // three running, two released: resuming one has nothing to release, refused whole
    r = await api(d, 'POST', `/sandboxes/${a.sandboxId}/connect`, { timeout: 60 })
    assert.equal(r.status, 503, r.text)
    assert.match(r.json.message, /maximum of 3 sandboxes/)
    const st = await info(a.sandboxId)
    assert.equal(st.state, 'paused')
    assert.equal(st.memoryReleased, true)

    // room again: the resumes get in, every file intact
    await Sandbox.kill(e, opts())
    await Sandbox.kill(c, opts())
    for (const [s, i] of [[a, 0], [b, 1]]) {
      const back = await Sandbox.connect(s.sandboxId, opts())
      assert.equal(await back.files.read('/home/user/keep.txt'), `file of ${i}\n`)
    }
    r = await create()
    assert.equal(r.status, 429, 'all three hold processes again')
  } finally {
    await Promise.all(made.map((s) => s.kill().catch(() => {})))
  }
})
