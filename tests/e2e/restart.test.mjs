// Restart safety: the store is the source of truth. A daemon killed with
// SIGKILL (or stopped with SIGTERM) leaves its sandboxes running; the next
// start re-adopts them with their processes, states and deadlines. A crash
// at any step of an operation (HUTCH_FAULT, fault.h) leaks nothing: no
// process, mount, cgroup, directory or row without a sandbox behind it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, api, sleep } from './harness.mjs'

const sh = (cmd) => execFileSync('sh', ['-c', cmd]).toString().trim()
const opts = (d) => ({ apiKey: d.apiKey, apiUrl: d.url, sandboxUrl: d.url })

// What exists on the host for a daemon's dirs and cgroup parent.
function hostState(d) {
  const parent = d.env.HUTCH_CGROUP_PARENT
  const groups = new Set(sh(`for g in /sys/fs/cgroup/*/${parent}/*/ /sys/fs/cgroup/${parent}/*/; do [ -d "$g" ] && basename "$g"; done 2>/dev/null | sort -u`).split('\n').filter(Boolean))
  const procs = Number(sh(`cat /sys/fs/cgroup/*/${parent}/*/cgroup.procs 2>/dev/null | sort -u | wc -l`))
  const sbxDir = join(d.env.HUTCH_RUN_DIR, 'sandboxes')
  const dirs = new Set(existsSync(sbxDir) ? readdirSync(sbxDir) : [])
  const mounts = Number(sh(`grep -c " ${d.base}/" /proc/self/mountinfo || true`))
  // the writable layers: a directory per sandbox under <data>/layers (on the
  // one layers image, which is the only mount a daemon makes for them)
  const layersDir = join(d.env.HUTCH_DATA_DIR, 'layers')
  const layers = new Set(existsSync(layersDir) ? readdirSync(layersDir).filter((n) => /^[a-z0-9][a-z0-9-]*$/.test(n)) : [])
  const rows = Number(sh(`python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from sandboxes').fetchone()[0])" ${join(d.env.HUTCH_DATA_DIR, 'hutch.db')}`))
  return { groups, procs, dirs, mounts, layers, rows }
}

async function listed(d) {
  const r = await api(d, 'GET', '/v2/sandboxes')
  return r.json.map((s) => s.sandboxID).sort()
}

function assertConsistent(d, ids, what) {
  const h = hostState(d)
  const want = [...ids].sort()
  assert.deepEqual([...h.groups].sort(), want, `${what}: cgroups are exactly the sandboxes'`)
  assert.deepEqual([...h.dirs].sort(), want, `${what}: sandbox dirs are exactly the sandboxes'`)
  assert.deepEqual([...h.layers].sort(), want, `${what}: writable layers are exactly the sandboxes'`)
  assert.ok(h.mounts <= 1, `${what}: no mount per sandbox, at most the layers image (${h.mounts})`)
  assert.equal(h.rows, want.length, `${what}: one row per sandbox`)
  if (!want.length) assert.equal(h.procs, 0, `${what}: no process left`)
}

test('kill -9 and SIGTERM: running sandboxes keep running and are re-adopted with state and deadlines', async () => {
  const d1 = await startDaemon()
  const o1 = opts(d1)
  const run = await Sandbox.create({ ...o1, timeoutMs: 120000 })
  const ticker = await run.commands.run('for i in $(seq 1 300); do echo tick$i; sleep 0.1; done', { background: true, timeoutMs: 0 })
  await ticker.disconnect()
  const paused = await Sandbox.create({ ...o1, timeoutMs: 120000 })
  await paused.files.write('/home/user/state.txt', 'paused-state')
  await paused.pause()
  const released = await Sandbox.create({ ...o1, timeoutMs: 120000 })
  await released.files.write('/home/user/state.txt', 'released-state')
  await released.pause({ keepMemory: false })
  const short = await Sandbox.create({ ...o1, timeoutMs: 6000 })
  const shortBorn = Date.now()

  process.kill(d1.pid, 'SIGKILL')
  await sleep(1000)
  const d2 = await d1.restart()
  const o2 = opts(d2)
  try {
    assert.deepEqual(await listed(d2), [run, paused, released, short].map((s) => s.sandboxId).sort(), 'all four are back')
    const info = async (s) => (await api(d2, 'GET', `/sandboxes/${s.sandboxId}`)).json
    assert.equal((await info(run)).state, 'running')
    assert.equal((await info(paused)).state, 'paused')
    assert.equal((await info(paused)).memoryReleased, false)
    assert.equal((await info(released)).memoryReleased, true)
    // the background command was never interrupted: re-attach to its output
    const again = await Sandbox.connect(run.sandboxId, o2)
    const running = await again.commands.list()
    assert.ok(running.some((p) => p.pid === ticker.pid), 'the process kept running across the crash')
    const seen = []
    const h = await again.commands.connect(ticker.pid, { onStdout: (s) => seen.push(s) })
    await sleep(600)
    await h.disconnect()
    assert.ok(seen.join('').includes('tick'), 'process Connect re-attaches to its output')
    // paused stays paused until asked; its files and memory are intact
    const p2 = await Sandbox.connect(paused.sandboxId, o2)
    assert.equal(await p2.files.read('/home/user/state.txt'), 'paused-state')
    const r2 = await Sandbox.connect(released.sandboxId, o2)
    assert.equal(await r2.files.read('/home/user/state.txt'), 'released-state')
    // the deadline continued from the stored endAt (it was not restarted)
    await sleep(Math.max(0, shortBorn + 8000 - Date.now()))
    assert.equal((await api(d2, 'GET', `/sandboxes/${short.sandboxId}`)).status, 404, 'killed at its original deadline')

    // SIGTERM: a graceful stop leaves them running too
    process.kill(d2.pid, 'SIGTERM')
    assert.equal((await d2.exited).code, 0, 'clean exit on SIGTERM')
    const d3 = await d2.restart()
    try {
      const r3 = await Sandbox.connect(run.sandboxId, opts(d3))
      assert.equal((await r3.commands.run('echo alive')).stdout, 'alive\n')
      // an init that dies while no daemon runs: cleaned up and reported as lost
      process.kill(d3.pid, 'SIGKILL')
      await d3.exited
      sh(`for g in /sys/fs/cgroup/*/${d3.env.HUTCH_CGROUP_PARENT}/${run.sandboxId}; do [ -e $g/cgroup.kill ] && echo 1 > $g/cgroup.kill; done; true`)
      await sleep(500)
      const d4 = await d3.restart()
      try {
        const gone = await api(d4, 'GET', `/sandboxes/${run.sandboxId}`)
        assert.equal(gone.status, 404)
        assert.match(gone.json.message, /lost while the server was down/)
        assertConsistent(d4, await listed(d4), 'after a lost sandbox')
      } finally {
        await d4.stop()
      }
    } finally {
      if (d3.pid && existsSync(`/proc/${d3.pid}`)) await d3.stop()
    }
  } finally {
    if (existsSync(`/proc/${d2.pid}`)) await d2.stop()
  }
})

// Each fault point, what the operation was, and what must exist after the
// restart (the ids of `make` that survive).
const faults = [
  { point: 'create.stored', op: async () => {}, survivors: 0 },
  { point: 'create.started', op: async () => {}, survivors: 0 },
  { point: 'kill.marked', op: async (s) => s.kill(), survivors: 0 },
  { point: 'kill.destroyed', op: async (s) => s.kill(), survivors: 0 },
  { point: 'pause.frozen', op: async (s) => s.pause(), survivors: 1, state: 'running' },
  { point: 'release.stopped', op: async (s) => s.pause({ keepMemory: false }), survivors: 1, state: 'paused' },
]

test('a crash at any step leaks nothing and loses nothing', async () => {
  for (const f of faults) {
    const d = await startDaemon([], null, { HUTCH_FAULT: f.point })
    let sbx = null
    const isCreate = f.point.startsWith('create.')
    try {
      sbx = await Sandbox.create({ ...opts(d), timeoutMs: 120000 })
    } catch (e) {
      assert.ok(isCreate, `${f.point}: create fails only when the crash is in create (${e.message})`)
    }
    if (!isCreate) await f.op(sbx).catch(() => {})
    const st = await d.exited
    assert.equal(st.signal, 'SIGKILL', `${f.point}: the daemon died at the fault point`)
    const d2 = await d.restart([], {})
    try {
      const ids = await listed(d2)
      assert.equal(ids.length, f.survivors, `${f.point}: ${f.survivors} sandbox(es) after the restart`)
      assertConsistent(d2, ids, f.point)
      if (f.survivors) {
        const info = (await api(d2, 'GET', `/sandboxes/${ids[0]}`)).json
        assert.equal(info.state, f.state, `${f.point}: the sandbox reads ${f.state}`)
        const s2 = await Sandbox.connect(ids[0], opts(d2))
        assert.equal((await s2.commands.run('echo ok')).stdout, 'ok\n', `${f.point}: and works`)
        await s2.kill()
        assertConsistent(d2, [], `${f.point} then kill`)
      }
    } finally {
      await d2.stop()
    }
  }
})

test('a crash while deleting a volume: a listed volume keeps its files, a deleted one leaves none', async () => {
  const { Volume } = await import('e2b')
  for (const [point, listedAfter] of [['volume.retired', true], ['volume.deleted', false]]) {
    const d = await startDaemon([], null, { HUTCH_FAULT: point })
    const o = opts(d)
    const vol = await Volume.create('crash-' + point.replace('.', '-'), o)
    const s = await Sandbox.create({ ...o, timeoutMs: 60000, volumeMounts: { '/data': vol } })
    await s.files.write('/data/keep.txt', 'precious')
    await s.kill()
    await Volume.destroy(vol.volumeId, o).catch(() => {})
    assert.equal((await d.exited).signal, 'SIGKILL', `${point}: the daemon died at the fault point`)
    const d2 = await d.restart([], {})
    try {
      const o2 = opts(d2)
      const listed = (await Volume.list(o2)).some((v) => v.volumeId === vol.volumeId)
      assert.equal(listed, listedAfter, `${point}: listed after the restart`)
      const root = join(d2.env.HUTCH_DATA_DIR, 'volumes')
      if (listed) {
        const s2 = await Sandbox.create({ ...o2, timeoutMs: 60000, volumeMounts: { '/data': vol.volumeId } })
        assert.equal(await s2.files.read('/data/keep.txt'), 'precious', `${point}: the files are back`)
        await s2.kill()
        assert.equal(await Volume.destroy(vol.volumeId, o2), true)
      }
      // nothing of a deleted volume stays on disk (its removal runs in the background)
      for (let t = 0; t < 20 && readdirSync(root).some((n) => n.includes(vol.volumeId)); t++) await sleep(100)
      assert.deepEqual(readdirSync(root).filter((n) => n.includes(vol.volumeId)), [], `${point}: no files left`)
    } finally {
      await d2.stop()
    }
  }
})
