// The session lifecycle through the real SDK, with timeouts of seconds:
// the idle window, pause on timeout, auto-resume, memory release and
// resume over the same files, reclaim, timeout -1, and Idempotency-Key.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { request as httpRequest } from 'node:http'
import { startDaemon, api, sleep, hutchBin, useDaemon, rssKiB, viaNode } from './harness.mjs'

let d
before(async () => {
  // memory is released after 3 s paused, paused sandboxes are reclaimed after 8 s
  d = await startDaemon(['--pause-release-after', '3s', '--reclaim-after', '8s'])
})
after(async () => {
  const st = await d.stop()
  assert.equal(st.code, 0, 'the daemon exits cleanly (no sanitizer report)\n' + d.log().slice(-3000))
})

const info = async (id) => (await api(d, 'GET', `/sandboxes/${id}`)).json
const procsOf = (id) => {
  const out = execFileSync('sh', ['-c', `cat /sys/fs/cgroup/*/${d.env.HUTCH_CGROUP_PARENT}/${id}/cgroup.procs 2>/dev/null | sort -u | wc -l`])
  return Number(out.toString().trim())
}

test('timeout is an idle window: activity keeps the sandbox, idleness ends it', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 2000 })
  const t0 = Date.now()
  while (Date.now() - t0 < 4500) {
    await sbx.commands.run('true')
    const end = Date.parse((await info(sbx.sandboxId)).endAt)
    assert.ok(end > Date.now(), 'endAt is never in the past for a live sandbox')
    await sleep(700)
  }
  assert.equal(await sbx.isRunning(), true, 'alive after 4.5 s of activity with a 2 s window')
  // an open stream is activity too: a command running longer than the window
  const r = await sbx.commands.run('sleep 3; echo done', { timeoutMs: 10000 })
  assert.equal(r.stdout.trim(), 'done')
  await sleep(3500)
  assert.equal((await api(d, 'GET', `/sandboxes/${sbx.sandboxId}`)).status, 404, 'killed after 2 s idle')
})

test('onTimeout pause freezes the sandbox and autoResume wakes it with processes intact', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  const h = await sbx.commands.run('i=0; while true; do i=$((i+1)); echo $i > /tmp/c; sleep 0.1; done', { background: true, timeoutMs: 0 })
  // an attached command stream is activity; once nobody watches, idleness counts
  await h.disconnect()
  await sbx.files.write('/home/user/notes.txt', 'kept')
  await sleep(3000)
  const st = await info(sbx.sandboxId)
  assert.equal(st.state, 'paused', 'paused after the idle window')
  assert.ok(Date.parse(st.endAt) > Date.now(), 'a paused sandbox shows its reclaim time as endAt')
  assert.equal((await fetch(`${d.url}/health`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId } })).status, 502,
    'health of a paused sandbox is 502 and does not resume it')
  assert.equal((await info(sbx.sandboxId)).state, 'paused')
  const frozenAt = Date.now()
  await sleep(1000)
  // any data-plane request resumes it transparently
  const c1 = Number((await sbx.commands.run('cat /tmp/c')).stdout)
  await sleep(500)
  const c2 = Number((await sbx.commands.run('cat /tmp/c')).stdout)
  assert.ok(c2 > c1, `the counter continues after resume (${c1} -> ${c2})`)
  const elapsedTicks = (Date.now() - frozenAt) / 100
  assert.ok(c1 > 0 && c2 < 60 + elapsedTicks * 0.2, `it did not run while paused (${c2})`)
  assert.equal(await sbx.files.read('/home/user/notes.txt'), 'kept')
  assert.equal((await info(sbx.sandboxId)).state, 'running')
  await sbx.kill()
})

test('without autoResume the data plane answers 502 until connect', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60000, lifecycle: { onTimeout: 'pause' } })
  await sbx.files.write('/tmp/x', 'y')
  assert.equal(await sbx.pause(), true)
  await assert.rejects(sbx.files.read('/tmp/x'), 'a paused sandbox without autoResume refuses')
  assert.equal((await info(sbx.sandboxId)).state, 'paused', 'and stays paused')
  const again = await Sandbox.connect(sbx.sandboxId)
  assert.equal(await again.files.read('/tmp/x'), 'y')
  await sbx.kill()
})

test('memory release: processes stop, files stay, resume starts a fresh init', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60000 })
  await sbx.files.write('/home/user/work/data.csv', 'a,b\n1,2\n')
  await sbx.commands.run('sleep 1000', { background: true, timeoutMs: 0 })
  assert.ok(procsOf(sbx.sandboxId) >= 2)
  const bootId = async (s) => (await s.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout.trim()
  const boot1 = await bootId(sbx)
  const { readFileSync } = await import('node:fs')
  assert.notEqual(boot1, readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(), 'a sandbox has its own boot id')
  assert.equal(await sbx.pause(), true)
  assert.equal((await info(sbx.sandboxId)).memoryReleased, false)
  await sleep(4500) // pause.release_after is 3 s here
  const st = await info(sbx.sandboxId)
  assert.equal(st.state, 'paused')
  assert.equal(st.memoryReleased, true, 'the detail says memory was released')
  assert.equal(procsOf(sbx.sandboxId), 0, 'no process of the sandbox is left')
  const back = await Sandbox.connect(sbx.sandboxId)
  assert.equal(await back.files.read('/home/user/work/data.csv'), 'a,b\n1,2\n', 'files survive')
  const ps = await back.commands.run('ps -e -o comm= | grep -c sleep || true')
  assert.equal(ps.stdout.trim(), '0', 'running processes do not')
  assert.equal((await back.commands.run('echo hi > /tmp/new && cat /tmp/new')).stdout, 'hi\n')
  assert.notEqual(await bootId(back), boot1, 'the resume was a boot: a new boot id')
  assert.equal((await info(sbx.sandboxId)).memoryReleased, false)
  await sbx.kill()
})

test('pause with keepMemory false releases at once; connect with reboot is a cold boot', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60000 })
  await sbx.commands.run('echo 1 > /root/f', { user: 'root' })
  await sbx.commands.run('sleep 1000', { background: true, timeoutMs: 0 })
  assert.equal(await sbx.pause({ keepMemory: false }), true)
  assert.equal((await info(sbx.sandboxId)).memoryReleased, true)
  assert.equal(procsOf(sbx.sandboxId), 0)
  await Sandbox.connect(sbx.sandboxId)
  assert.equal((await sbx.commands.run('cat /root/f', { user: 'root' })).stdout, '1\n')
  // a frozen sandbox resumed with onResume 'reboot' loses its processes too
  assert.equal(await sbx.pause(), true)
  await sbx.commands.run('true').catch(() => {})
  await Sandbox.connect(sbx.sandboxId, { onResume: 'reboot' })
  assert.equal((await sbx.commands.run('ps -e -o comm= | grep -c sleep || true')).stdout.trim(), '0')
  await sbx.kill()
})

test('reclaim: paused sandboxes past reclaim.after are deleted, running ones and opted-out ones stay', async () => {
  const running = await Sandbox.create({ timeoutMs: 60000 })
  const paused = await Sandbox.create({ timeoutMs: 60000 })
  const keep = await api(d, 'POST', '/v2/sandboxes', { templateID: 'base', timeout: 60, reclaimAfter: -1 })
  assert.equal(keep.status, 201)
  await paused.pause()
  assert.equal((await api(d, 'POST', `/sandboxes/${keep.json.sandboxID}/pause`, {})).status, 204)
  assert.equal((await info(keep.json.sandboxID)).endAt, '9999-12-31T23:59:59.000Z', 'never reclaimed: endAt is the max date')
  await sleep(10000)
  assert.equal((await api(d, 'GET', `/sandboxes/${paused.sandboxId}`)).status, 404, 'reclaimed')
  assert.equal((await info(running.sandboxId)).state, 'running')
  assert.equal((await info(keep.json.sandboxID)).state, 'paused')
  // a platform's own reclaim: the conditional delete refuses a sandbox that is not paused (any more)
  assert.equal((await api(d, 'DELETE', `/sandboxes/${running.sandboxId}?state=paused`)).status, 409)
  assert.equal((await info(running.sandboxId)).state, 'running', 'untouched')
  assert.equal((await api(d, 'DELETE', `/sandboxes/${running.sandboxId}?state=bogus`)).status, 400)
  assert.equal((await api(d, 'DELETE', `/sandboxes/${keep.json.sandboxID}?state=paused`)).status, 204)
  await running.kill()
})

test('timeout -1 means never', async () => {
  const r = await api(d, 'POST', '/v2/sandboxes', { templateID: 'base', timeout: -1 })
  assert.equal(r.status, 201)
  const st = await info(r.json.sandboxID)
  assert.equal(st.endAt, '9999-12-31T23:59:59.000Z')
  assert.equal((await api(d, 'POST', `/sandboxes/${r.json.sandboxID}/timeout`, { timeout: 1 })).status, 204)
  assert.ok(Date.parse((await info(r.json.sandboxID)).endAt) < Date.now() + 5000, 'setTimeout can shorten it again')
  assert.equal((await api(d, 'POST', `/sandboxes/${r.json.sandboxID}/timeout`, { timeout: -1 })).status, 204)
  await sleep(1500)
  assert.equal((await info(r.json.sandboxID)).state, 'running')
  await api(d, 'DELETE', `/sandboxes/${r.json.sandboxID}`)
})

// 50 creates with one key from 10 separate processes, 5 at a time each.
function racers(key, procs, each) {
  const script = `
    const url = process.argv[1], apiKey = process.argv[2], key = process.argv[3], n = Number(process.argv[4])
    const one = () => fetch(url + '/v2/sandboxes', { method: 'POST', body: '{"timeout":60}',
      headers: { 'X-API-KEY': apiKey, 'Content-Type': 'application/json', 'Idempotency-Key': key } })
      .then(async (r) => [r.status, (await r.json()).sandboxID])
    Promise.all(Array.from({ length: n }, one)).then((v) => console.log(JSON.stringify(v)))`
  return Promise.all(Array.from({ length: procs }, () => new Promise((res, rej) => {
    const p = spawn(process.execPath, ['-e', script, d.url, d.apiKey, key, String(each)])
    let out = ''
    p.stdout.on('data', (c) => { out += c })
    p.on('exit', (code) => (code === 0 ? res(JSON.parse(out)) : rej(new Error('racer failed ' + code))))
  }))).then((all) => all.flat())
}

test('Idempotency-Key: 50 concurrent creates from separate processes give one sandbox', async () => {
  const key = 'session-' + Date.now()
  const results = await racers(key, 10, 5)
  const ids = new Set(results.map(([, id]) => id))
  assert.equal(ids.size, 1, `one sandbox for one key, got ${[...ids]}`)
  const statuses = results.map(([s]) => s).sort()
  assert.equal(statuses.filter((s) => s === 201).length, 1, 'one create answered 201')
  assert.equal(statuses.filter((s) => s === 200).length, 49, 'the rest got that sandbox with 200')
  const [id] = ids
  // paused: the key resumes it
  assert.equal((await api(d, 'POST', `/sandboxes/${id}/pause`, {})).status, 204)
  const again = await api(d, 'POST', '/v2/sandboxes', { timeout: 60 }, { 'Idempotency-Key': key })
  assert.equal(again.status, 200)
  assert.equal(again.json.sandboxID, id)
  assert.equal((await info(id)).state, 'running', 'resumed by the repeated create')
  // the SDK can send it too
  const viaSdk = await Sandbox.create({ headers: { 'Idempotency-Key': key } })
  assert.equal(viaSdk.sandboxId, id)
  // bad keys are refused
  assert.equal((await api(d, 'POST', '/v2/sandboxes', {}, { 'Idempotency-Key': 'x'.repeat(200) })).status, 400)
  // once it is gone, the key makes a new one
  assert.equal((await api(d, 'DELETE', `/sandboxes/${id}`)).status, 204)
  const fresh = await api(d, 'POST', '/v2/sandboxes', { timeout: 60 }, { 'Idempotency-Key': key })
  assert.equal(fresh.status, 201)
  assert.notEqual(fresh.json.sandboxID, id)
  // keys are per team
  const other = execFileSync(hutchBin, ['keys', 'create', '--team', 'other', ...d.storeArgs], { env: d.env }).toString()
    .match(/((?:e2b|hutch)_[0-9a-f]+)/)[1]
  const otherTeam = await api({ url: d.url, apiKey: other }, 'POST', '/v2/sandboxes', { timeout: 60 }, { 'Idempotency-Key': key })
  assert.equal(otherTeam.status, 201)
  assert.notEqual(otherTeam.json.sandboxID, fresh.json.sandboxID)
  await api({ url: d.url, apiKey: other }, 'DELETE', `/sandboxes/${otherTeam.json.sandboxID}`)
  await api(d, 'DELETE', `/sandboxes/${fresh.json.sandboxID}`)
})

test('memory pressure releases paused sandboxes, least recently used first', async () => {
  const { writeFileSync, mkdtempSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  // a threshold no host meets: the daemon sees pressure all the time
  const confDir = mkdtempSync(join(tmpdir(), 'hutch-conf-'))
  const conf = join(confDir, 'hutch.conf')
  writeFileSync(conf, 'pressure.min_available = 1000T\nadmission.refuse_under_pressure = false\n')
  const p = await startDaemon(['--config', conf])
  const o = { apiKey: p.apiKey, apiUrl: p.url, sandboxUrl: p.url }
  try {
    const sbxs = []
    for (let i = 0; i < 6; i++) sbxs.push(await Sandbox.create({ ...o, timeoutMs: 60000 }))
    // last activity in this order: sbxs[0] is the least recently used
    for (const s of sbxs) { await s.commands.run('true'); await sleep(30) }
    const running = await Sandbox.create({ ...o, timeoutMs: 60000 })
    await Promise.all(sbxs.map((s) => s.pause(o)))
    const released = async () => Promise.all(sbxs.map(async (s) =>
      (await api(p, 'GET', `/sandboxes/${s.sandboxId}`)).json.memoryReleased))
    let states
    for (let t = 0; t < 40; t++) {
      states = await released()
      const k = states.indexOf(false)
      assert.ok(k === -1 || states.slice(k).every((x) => !x), `released in LRU order: ${states}`)
      if (k === -1) break
      await sleep(100)
    }
    assert.ok(states.every(Boolean), 'all paused sandboxes released under pressure')
    assert.equal((await api(p, 'GET', `/sandboxes/${running.sandboxId}`)).json.state, 'running', 'running ones untouched')
    assert.equal((await running.commands.run('echo up')).stdout, 'up\n')
    const again = await Sandbox.connect(sbxs[0].sandboxId, o)
    assert.equal((await again.commands.run('echo back')).stdout, 'back\n')
  } finally {
    useDaemon(d)
    const st = await p.stop()
    rmSync(confDir, { recursive: true, force: true })
    assert.equal(st.code, 0)
  }
})

test('admission control: over the budget is 429 with Retry-After and builds nothing; pressure is 503', async () => {
  const { writeFileSync, mkdtempSync, readdirSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const { execFileSync } = await import('node:child_process')
  const dir = mkdtempSync(join(tmpdir(), 'hutch-conf-'))
  // a budget of 2.5 default (512 MiB) sandboxes: two fit, the third does not
  const total = Number(execFileSync('sh', ['-c', "awk '/MemTotal/ {print $2 * 1024}' /proc/meminfo"]).toString())
  writeFileSync(join(dir, 'a.conf'), `admission.reserve = 4G\nadmission.memory_overcommit = ${(2.5 * 512 * 2 ** 20 / (total - 4 * 2 ** 30)).toFixed(4)}\n`)
  const a = await startDaemon(['--config', join(dir, 'a.conf')])
  try {
    const ok1 = await api(a, 'POST', '/v2/sandboxes', { timeout: 60 })
    const ok2 = await api(a, 'POST', '/v2/sandboxes', { timeout: 60 })
    assert.equal(ok1.status, 201, ok1.text)
    assert.equal(ok2.status, 201, ok2.text)
    const over = await api(a, 'POST', '/v2/sandboxes', { timeout: 60 })
    assert.equal(over.status, 429, over.text)
    assert.equal(over.headers.get('retry-after'), '5')
    assert.match(over.json.message, /not enough memory/)
    assert.equal(readdirSync(join(a.env.HUTCH_RUN_DIR, 'sandboxes')).length, 2, 'nothing half-created')
    assert.equal((await api(a, 'GET', '/v2/sandboxes')).json.length, 2)
    // a released sandbox holds no memory: its commitment is free again
    assert.equal((await api(a, 'POST', `/sandboxes/${ok1.json.sandboxID}/pause`, { memory: false })).status, 204)
    assert.equal((await api(a, 'POST', '/v2/sandboxes', { timeout: 60 })).status, 201)
  } finally {
    useDaemon(d)
    assert.equal((await a.stop()).code, 0)
  }
  writeFileSync(join(dir, 'p.conf'), 'pressure.min_available = 1000T\n')
  const p = await startDaemon(['--config', join(dir, 'p.conf')])
  try {
    const r = await api(p, 'POST', '/v2/sandboxes', { timeout: 60 })
    assert.equal(r.status, 503, r.text)
    assert.equal(r.headers.get('retry-after'), '5')
    assert.match(r.json.message, /memory pressure/)
  } finally {
    useDaemon(d)
    rmSync(dir, { recursive: true, force: true })
    assert.equal((await p.stop()).code, 0)
  }
})

test('logs: the daemon\'s persisted lines about a sandbox, E2B shapes', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60000 })
  await sbx.pause()
  await Sandbox.connect(sbx.sandboxId)
  const v1 = await api(d, 'GET', `/sandboxes/${sbx.sandboxId}/logs`)
  assert.equal(v1.status, 200)
  const msgs = v1.json.logEntries.map((e) => e.message)
  assert.ok(msgs.some((m) => m.startsWith('created for team')), msgs.join(' | '))
  assert.ok(msgs.includes('paused') && msgs.includes('resumed'), msgs.join(' | '))
  assert.equal(v1.json.logs.length, v1.json.logEntries.length)
  assert.ok(v1.json.logEntries.every((e) => e.fields.sandboxID === sbx.sandboxId && !isNaN(Date.parse(e.timestamp))))
  const v2 = await api(d, 'GET', `/v2/sandboxes/${sbx.sandboxId}/logs?direction=backward&limit=1`)
  assert.equal(v2.status, 200)
  assert.deepEqual(v2.json.logs.map((e) => e.message), ['resumed'], 'backward, limit 1: the newest line')
  assert.equal((await api(d, 'GET', `/v2/sandboxes/${sbx.sandboxId}/logs?level=error`)).json.logs.length, 0)
  assert.equal((await api(d, 'GET', `/v2/sandboxes/${sbx.sandboxId}/logs?search=paus`)).json.logs.length, 1)
  assert.equal((await api(d, 'GET', `/sandboxes/${sbx.sandboxId}/logs?limit=0`)).status, 400)
  assert.equal((await api(d, 'GET', `/sandboxes/${sbx.sandboxId}/logs?start=soon`)).status, 400)
  assert.equal((await api(d, 'GET', '/sandboxes/inosuchsandbox/logs')).status, 404)
  await sbx.kill()
})

test('logs: a 50 MiB scan does not hold the event loop, and at most four run at once', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60000 })
  const logs = join(d.base, 'data', 'logs')
  // five full rotated files of this sandbox's lines: every one is parsed
  const line = `2026-11-29T10:00:00.123Z level=info sandbox=${sbx.sandboxId} req=- msg="${'filler '.repeat(12)}"\n`
  const chunk = line.repeat(Math.ceil((10 << 20) / line.length))
  try {
    for (let i = 1; i <= 5; i++) writeFileSync(join(logs, `hutch.log.${i}`), chunk)
    let done = false, healthy = 0, worst = 0
    const t0 = Date.now()
    const scan = api(d, 'GET', `/v2/sandboxes/${sbx.sandboxId}/logs?level=error`).finally(() => { done = true })
    while (!done) {
      const h0 = Date.now()
      const res = await fetch(`${d.url}/health`)
      await res.arrayBuffer()
      if (!done) {
        healthy++
        worst = Math.max(worst, Date.now() - h0)
      }
    }
    const r = await scan
    const took = Date.now() - t0
    assert.equal(r.status, 200)
    assert.equal(r.json.logs.length, 0)
    // a scan on the loop would answer no /health until it had finished
    assert.ok(healthy >= 3, `${healthy} /health answers during a ${took} ms scan (slowest ${worst} ms)`)
    const six = await Promise.all([1, 2, 3, 4, 5, 6].map(() => api(d, 'GET', `/v2/sandboxes/${sbx.sandboxId}/logs?level=error`)))
    const st = six.map((x) => x.status).sort()
    assert.deepEqual(st, [200, 200, 200, 200, 429, 429], JSON.stringify(six.map((x) => x.json?.message)))
  } finally {
    for (let i = 1; i <= 5; i++) rmSync(join(logs, `hutch.log.${i}`), { force: true })
    await sbx.kill()
  }
})

// Through a forwarding node the answer crosses two loopback connections
// whose kernel buffers (autotuned to several MiB each way) hold most of
// these 20 MB, so the daemon's memory cannot show the backpressure.
const backpressureSkip = viaNode ? 'E2E_VIA_NODE: two hops of socket buffers hold the 20 MB answer' : false

test('logs: streamed to a slow client with backpressure; the daemon stops producing and answers others meanwhile', { skip: backpressureSkip }, async () => {
  const sbx = await Sandbox.create({ timeoutMs: 120000 })
  const logs = join(d.base, 'data', 'logs')
  // two rotated files of numbered lines of this sandbox, about 20 MiB
  const lineOf = (n) => `2026-11-29T10:00:00.123Z level=info sandbox=${sbx.sandboxId} req=- msg="n=${n} ${'filler '.repeat(120)}"\n`
  const per = Math.ceil((10 << 20) / lineOf(0).length)
  const fileOf = (k) => Array.from({ length: per }, (_, i) => lineOf(k * per + i)).join('')
  try {
    writeFileSync(join(logs, 'hutch.log.2'), fileOf(0))
    writeFileSync(join(logs, 'hutch.log.1'), fileOf(1))
    const rss0 = rssKiB(d.pid)
    // v1, 10000 entries twice (logs and logEntries): about 20 MB of JSON
    let got = 0
    const chunks = []
    let res
    const done = new Promise((resolve, reject) => {
      const req = httpRequest(`${d.url}/sandboxes/${sbx.sandboxId}/logs?limit=10000`, { headers: { 'X-API-Key': d.apiKey } }, (r) => {
        res = r
        r.on('data', (c) => { got += c.length; chunks.push(c) })
        r.on('end', resolve)
        r.on('error', reject)
        r.pause() // a client that does not read
      })
      req.on('error', reject)
      req.end()
    })
    while (!res) await sleep(20)
    await sleep(1500)
    const held1 = rssKiB(d.pid), got1 = got
    // others are answered while it waits
    for (let i = 0; i < 5; i++) {
      const h0 = Date.now()
      assert.equal((await api(d, 'GET', '/sandboxes')).status, 200)
      assert.ok(Date.now() - h0 < 2000, `GET /sandboxes took ${Date.now() - h0} ms`)
    }
    await sleep(1000)
    const held2 = rssKiB(d.pid)
    // nothing was read, and the daemon did not go on producing into memory
    assert.equal(got, got1)
    assert.ok(held2 - held1 < 4096, `RSS grew ${held2 - held1} KiB while the client did not read`)
    assert.ok(held2 - rss0 < 64 * 1024, `RSS grew ${held2 - rss0} KiB for a 20 MB answer`)
    res.resume()
    await done
    assert.equal(res.statusCode, 200)
    assert.match(res.headers['content-type'], /^application\/json/)
    const body = JSON.parse(Buffer.concat(chunks).toString())
    assert.ok(got > 15 << 20, `${got} bytes`)
    assert.equal(body.logs.length, 10000)
    assert.equal(body.logEntries.length, 10000)
    assert.match(body.logEntries[0].message, /^n=0 /)
    assert.match(body.logEntries[9999].message, /^n=9999 /)
    assert.equal(body.logs[9999].line, body.logEntries[9999].message)
    // backward: the newest entries before the cursor, oldest first
    const back = await api(d, 'GET', `/v2/sandboxes/${sbx.sandboxId}/logs?direction=backward&limit=3&search=filler`)
    assert.deepEqual(back.json.logs.map((e) => e.message.split(' ')[0]), [`n=${2 * per - 3}`, `n=${2 * per - 2}`, `n=${2 * per - 1}`])
  } finally {
    rmSync(join(logs, 'hutch.log.1'), { force: true })
    rmSync(join(logs, 'hutch.log.2'), { force: true })
    await sbx.kill()
  }
})

test('GET /metrics: Prometheus text with states, lifecycle counters, latency histograms and capacity', async () => {
  const scrape = async () => {
    // per node: the daemon that ran the sandbox is scraped (E2E_VIA_NODE)
    const r = await fetch(`${d.nodeUrl}/metrics`)
    assert.equal(r.status, 200)
    assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
    const text = await r.text()
    const get = (series) => {
      const line = text.split('\n').find((l) => l.startsWith(series + ' '))
      assert.ok(line, `${series} in\n${text}`)
      return Number(line.slice(series.length + 1))
    }
    return { text, get }
  }
  const before = await scrape()
  const sbx = await Sandbox.create({ timeoutMs: 60000 })
  await sbx.commands.run('echo hi')
  await sbx.pause()
  await sbx.commands.run('true').catch(() => {}) // no autoResume: refused, paused
  await Sandbox.connect(sbx.sandboxId)
  const after = await scrape()
  assert.equal(after.get('hutch_sandbox_creates_total') - before.get('hutch_sandbox_creates_total'), 1)
  assert.equal(after.get('hutch_sandbox_lifecycle_total{event="pause"}') - before.get('hutch_sandbox_lifecycle_total{event="pause"}'), 1)
  assert.equal(after.get('hutch_sandbox_lifecycle_total{event="resume"}') - before.get('hutch_sandbox_lifecycle_total{event="resume"}'), 1)
  assert.ok(after.get('hutch_create_duration_seconds_count') > before.get('hutch_create_duration_seconds_count'))
  assert.ok(after.get('hutch_exec_start_duration_seconds_count') > before.get('hutch_exec_start_duration_seconds_count'))
  assert.ok(after.get('hutch_resume_duration_seconds_bucket{le="+Inf"}') >= 1)
  assert.ok(after.get('hutch_dataplane_bytes_total{direction="out"}') > before.get('hutch_dataplane_bytes_total{direction="out"}'))
  assert.ok(after.get('hutch_sandboxes{state="running"}') >= 1)
  assert.ok(after.get('hutch_memory_bytes{kind="committed"}') >= 512 * 2 ** 20)
  assert.ok(after.get('hutch_memory_bytes{kind="budget"}') > 0)
  assert.doesNotMatch(after.text, new RegExp(sbx.sandboxId), 'no sandbox id in the metrics')
  await sbx.kill()
})

// A volume's files are on the node that got POST /volumes; with every call
// through a draining node that node is not the one placement picks for the
// sandbox (volume affinity is not built yet, docs/operations.md).
const volumeSkip = viaNode ? 'E2E_VIA_NODE: volumes stay on the node that made them' : false

test('a volume is mounted again when a released sandbox resumes', { skip: volumeSkip }, async () => {
  const { Volume } = await import('e2b')
  const vol = await Volume.create('lifecycle-vol-' + Date.now())
  const sbx = await Sandbox.create({ timeoutMs: 60000, volumeMounts: { '/data': vol } })
  await sbx.files.write('/data/before.txt', 'kept in the volume')
  assert.equal(await sbx.pause({ keepMemory: false }), true)
  assert.equal((await info(sbx.sandboxId)).memoryReleased, true)
  const back = await Sandbox.connect(sbx.sandboxId)
  assert.equal(await back.files.read('/data/before.txt'), 'kept in the volume')
  assert.equal((await back.commands.run('touch /data/after && stat -c %U /data/after')).stdout, 'user\n')
  await sbx.kill()
  assert.equal(await Volume.destroy(vol.volumeId), true)
})
