// Paused sandboxes cost what they hold (docs/operations.md "Capacity and
// admission control"): a daemon whose pids budget admits 4 sandboxes at
// their limits holds 10 paused ones beside its running ones; creates and
// resumes beyond that release the least recently used frozen sandboxes
// (files kept) instead of being refused, and every file survives.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, api } from './harness.mjs'

const PAUSED = 10
const RUNNING = 3
const SLEEPS = 20 // background processes per paused sandbox: what it holds when frozen

// the smallest pids budget the settings allow (pids_overcommit 0.01), and
// default_pids so that it admits 4.5 sandboxes at their limits
const pidMax = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8'))
const budget = Math.floor((pidMax - 4096) * 0.01)
const defaultPids = Math.floor(budget / 4.5)
const fits = defaultPids >= 48 && defaultPids <= 256 // SLEEPS must matter beside a limit

let d, confDir
before(async () => {
  if (!fits) return
  confDir = mkdtempSync(join(tmpdir(), 'hutch-room-'))
  const conf = join(confDir, 'hutch.conf')
  writeFileSync(conf, `admission.pids_overcommit = 0.01\ndefault_pids = ${defaultPids}\n`)
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
async function metric(series) {
  const text = await (await fetch(d.url + '/metrics')).text()
  const line = text.split('\n').find((l) => l.startsWith(series + ' '))
  return line ? Number(line.split(' ')[1]) : undefined
}
// the ids in the order the daemon released them to make room (its log)
const roomReleases = () => [...d.log().matchAll(/sandbox=(\S+) req=\S+ msg="memory released \(room for/g)].map((m) => m[1])

test('paused sandboxes beyond the old limit; creates and resumes release the oldest frozen ones, no file lost',
  { skip: fits ? false : `kernel.pid_max ${pidMax} makes the smallest pids budget too large for this test` },
  async () => {
    const made = []
    try {
      const paused = []
      for (let i = 0; i < PAUSED; i++) {
        const s = await Sandbox.create({ ...opts(), timeoutMs: 120000 })
        made.push(s)
        await s.files.write('/home/user/keep.txt', `file of ${i}\n`)
        await s.commands.run(`for i in $(seq ${SLEEPS}); do sleep 1000 & done; wait`, { background: true })
        for (let t = 0; t < 100 && Number((await s.commands.run('ls /proc | grep -c "^[0-9]"')).stdout) < SLEEPS; t++);
        assert.equal(await s.pause(), true, `pause ${i}`)
        paused.push(s.sandboxId)
      }
      // ten paused sandboxes where the old rule (limits) admitted four in all
      assert.ok(PAUSED > Math.floor(budget / defaultPids))
      const heldFrozen = await metric('hutch_pids_by_state{state="frozen",kind="held"}')
      const committedFrozen = await metric('hutch_pids_by_state{state="frozen",kind="committed"}')
      assert.ok(heldFrozen >= PAUSED * SLEEPS, `frozen sandboxes hold their tasks (${heldFrozen})`)
      assert.equal(committedFrozen, heldFrozen, 'and commit what they hold, not their limits')
      assert.ok(committedFrozen < PAUSED * defaultPids)

      // running sandboxes at their limits: each needs room the frozen ones give
      const running = []
      for (let i = 0; i < RUNNING; i++) {
        const s = await Sandbox.create({ ...opts(), timeoutMs: 120000 })
        made.push(s)
        running.push(s)
      }
      const first = roomReleases()
      assert.ok(first.length > 0, 'frozen sandboxes were released to make room')
      assert.deepEqual(first, paused.slice(0, first.length), 'the least recently used first')
      for (const id of paused) {
        const st = await info(id)
        assert.equal(st.state, 'paused')
        assert.equal(st.memoryReleased, first.includes(id), `${id}: released only if it gave room`)
      }
      assert.equal(await metric('hutch_sandbox_releases_total{reason="room"}'), first.length)

      // every paused one resumes (making room again as needed), its file intact
      for (let i = 0; i < PAUSED; i++) {
        const back = await Sandbox.connect(paused[i], opts())
        assert.equal(await back.files.read('/home/user/keep.txt'), `file of ${i}\n`, `the file of ${i} survives`)
        assert.equal(await back.pause(), true)
      }
      const all = roomReleases()
      assert.ok(all.length > first.length, 'resumes made room too')
      // nothing running was stopped for room
      for (const s of running) assert.equal((await info(s.sandboxId)).state, 'running')
      assert.equal(await metric('hutch_sandbox_create_failures_total{reason="capacity"}'), 0)
    } finally {
      await Promise.all(made.map((s) => s.kill().catch(() => {})))
    }
  })

test('a resume (or an auto-resume) that no release can make room for is refused whole with 503 and Retry-After',
  { skip: fits ? false : `kernel.pid_max ${pidMax}` },
  async () => {
    const made = []
    try {
      const p = await Sandbox.create({ ...opts(), timeoutMs: 120000, lifecycle: { onTimeout: 'pause', autoResume: true } })
      made.push(p)
      await p.files.write('/home/user/keep.txt', 'kept\n')
      assert.equal(await p.pause(), true)
      // four running sandboxes at their limits: nothing frozen can make room for a fifth
      for (let i = 0; i < 4; i++) made.push(await Sandbox.create({ ...opts(), timeoutMs: 120000 }))
      const before = await info(p.sandboxId)
      const r = await api(d, 'POST', `/sandboxes/${p.sandboxId}/connect`, { timeout: 60 })
      assert.equal(r.status, 503, r.text)
      assert.equal(r.headers.get('retry-after'), '5')
      assert.match(r.json.message, /not enough pids/)
      // a data-plane request that would auto-resume it: 503 too, not the
      // 502 that tells the SDK the sandbox is gone
      const token = p.envdAccessToken ?? (await p.getInfo()).envdAccessToken
      const dp = await fetch(`${d.url}/files?path=/home/user/keep.txt`, {
        headers: { 'E2b-Sandbox-Id': p.sandboxId, 'X-Access-Token': token },
      })
      assert.equal(dp.status, 503, await dp.text())
      assert.equal(dp.headers.get('retry-after'), '5')
      const after = await info(p.sandboxId)
      assert.equal(after.state, 'paused', 'still paused')
      assert.equal(after.memoryReleased, before.memoryReleased, 'and nothing was released for a refused resume')
      // room again: one running sandbox goes, the auto-resume succeeds over the same files
      await made.pop().kill()
      assert.equal(await p.files.read('/home/user/keep.txt'), 'kept\n')
      assert.equal((await info(p.sandboxId)).state, 'running')
    } finally {
      await Promise.all(made.map((s) => s.kill().catch(() => {})))
    }
  })
