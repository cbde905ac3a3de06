// examples/session-gateway as three replicas against a real hutch, with
// timeouts of seconds: one sandbox per session however the requests are
// spread, idle pause and auto-resume with the working directory intact,
// reclaim of tagged paused sandboxes only, and the workspace volume intact
// after reclaim and re-create.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { existsSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { startDaemon, api, sleep, root } from './harness.mjs'

const gatewayDir = join(root, 'examples', 'session-gateway')
const IDLE_MS = 2500
let d
const replicas = []

function startReplica(port) {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, [join(gatewayDir, 'gateway.mjs'), '--port', String(port), '--idle-ms', String(IDLE_MS),
      '--reclaim-interval-ms', '3600000'], { env: { ...process.env }, stdio: ['ignore', 'pipe', 'pipe'] })
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

before(async () => {
  d = await startDaemon()
  for (let i = 0; i < 3; i++) replicas.push(await startReplica(0))
})
after(async () => {
  for (const r of replicas) r.p.kill('SIGKILL')
  const st = await d.stop()
  assert.equal(st.code, 0, 'the daemon exits cleanly\n' + d.log().slice(-2000))
})

async function exec(replica, tenant, session, code) {
  const r = await fetch(`http://127.0.0.1:${replicas[replica].port}/sessions/${tenant}/${session}/exec`, {
    method: 'POST', body: JSON.stringify({ code }),
  })
  const body = await r.json()
  assert.equal(r.status, 200, JSON.stringify(body) + replicas[replica].out().slice(-1500))
  return body
}
const info = async (id) => api(d, 'GET', `/sandboxes/${id}`)
const ofSession = async (session) => (await api(d, 'GET', '/v2/sandboxes?metadata=' +
  encodeURIComponent(`lea.session_id=${session}`))).json

test('three replicas, one session: one sandbox, pause, auto-resume, reclaim, workspace kept', { skip: !existsSync(join(gatewayDir, 'node_modules', 'e2b')) && 'run npm ci in examples/session-gateway' }, async () => {
  // bystanders the reclaim loop must never delete: an untagged paused sandbox, and a tagged session kept busy
  const untagged = await Sandbox.create({ timeoutMs: 120000 })
  await untagged.pause()
  const busyId = (await exec(0, 'acme', 'busy', 'true')).sandboxId
  let stopBusy = false
  const busy = (async () => {
    while (!stopBusy) {
      assert.equal((await exec(1, 'acme', 'busy', 'true')).sandboxId, busyId, 'the busy session keeps its sandbox')
      await sleep(400)
    }
  })()

  // the first messages of a session arrive at all replicas at once
  const first = await Promise.all([0, 1, 2, 0, 1, 2].map((i) => exec(i, 'acme', 'chat-1',
    'mkdir -p /home/user/wd && echo v1 > /home/user/wd/state && echo kept > /workspace/report.txt && echo ok')))
  const id = first[0].sandboxId
  assert.ok(first.every((r) => r.sandboxId === id && r.exitCode === 0), 'every replica got the same sandbox')
  assert.equal((await ofSession('chat-1')).length, 1, 'no duplicate sandbox')

  // idle: it pauses; the next message (on any replica) resumes it with everything in place
  await sleep(IDLE_MS + 1500)
  assert.equal((await info(id)).json.state, 'paused')
  for (const i of [2, 0, 1]) {
    const r = await exec(i, 'acme', 'chat-1', 'cat /home/user/wd/state; cat report.txt')
    assert.equal(r.sandboxId, id, 'resumed, not re-created')
    assert.equal(r.stdout, 'v1\nkept\n', 'working directory and workspace intact after auto-resume')
  }
  assert.equal((await ofSession('chat-1')).length, 1)

  // idle again: paused; then a reclaim pass (the loop's work, triggered now) deletes it
  await sleep(IDLE_MS + 1500)
  assert.equal((await info(id)).json.state, 'paused')
  const pass = await fetch(`http://127.0.0.1:${replicas[2].port}/admin/reclaim`, { method: 'POST' }).then((r) => r.json())
  assert.deepEqual(pass.reclaimed, [id], 'exactly the paused, tagged sandbox was reclaimed')
  assert.equal((await info(id)).status, 404)
  // the next message re-creates it; the workspace volume carried the files over
  const again = await exec(1, 'acme', 'chat-1', 'cat /workspace/report.txt; test -e /home/user/wd/state && echo old-root || echo fresh-root')
  assert.notEqual(again.sandboxId, id)
  assert.equal(again.stdout, 'kept\nfresh-root\n', 'workspace intact after reclaim and re-create')
  assert.equal((await ofSession('chat-1')).length, 1)

  stopBusy = true
  await busy
  assert.equal((await info(untagged.sandboxId)).json.state, 'paused', 'an untagged paused sandbox was not deleted')
  assert.equal((await info(busyId)).json.state, 'running', 'a running tagged sandbox was not deleted')
  await untagged.kill()
})
