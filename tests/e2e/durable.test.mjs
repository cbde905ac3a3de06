// Durable sandboxes: a sandbox's files live on disk (its writable layer, a
// btrfs subvolume under <data>/layers), so they outlive its processes, the
// daemon and the host. A simulated reboot brings every sandbox back paused
// with memory released; pause/resume cycles lose no write.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { rmSync, readdirSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, api, sleep, hutchBin } from './harness.mjs'

const sh = (cmd) => execFileSync('sh', ['-c', cmd]).toString().trim()
const opts = (d) => ({ apiKey: d.apiKey, apiUrl: d.url, sandboxUrl: d.url })
// Does the sandbox run the `sleep 600` a test started in the background?
const sleeping = async (sbx) => (await sbx.commands.list()).some((p) => [p.cmd, ...(p.args ?? [])].join(' ').includes('sleep 600'))

// What a reboot leaves of a daemon's sandboxes: no process, no cgroup, no
// mount (the layers image too), an empty run dir. The data dir stays.
async function reboot(d) {
  process.kill(d.pid, 'SIGKILL')
  await d.exited
  const parent = d.env.HUTCH_CGROUP_PARENT
  sh(`for g in /sys/fs/cgroup/*/${parent}/* /sys/fs/cgroup/${parent}/*; do
        [ -d "$g" ] || continue
        if [ -e "$g/cgroup.kill" ]; then echo 1 > "$g/cgroup.kill"; else for p in $(cat "$g/cgroup.procs"); do kill -9 $p; done; fi
      done 2>/dev/null; sleep 0.3
      for g in /sys/fs/cgroup/*/${parent}/* /sys/fs/cgroup/${parent}/*; do rmdir "$g"; done 2>/dev/null
      grep -o " ${d.base}/[^ ]*" /proc/self/mountinfo | sort -r | while read m; do umount "$m" || umount -l "$m"; done; true`)
  assert.equal(Number(sh(`grep -c " ${d.base}/" /proc/self/mountinfo || true`)), 0, 'no hutch mount is left')
  rmSync(d.env.HUTCH_RUN_DIR, { recursive: true, force: true })
}

test('after a host reboot every sandbox comes back paused with memory released, files intact', async () => {
  const d1 = await startDaemon()
  const o1 = opts(d1)
  let d2 = null
  try {
    const run = await Sandbox.create({ ...o1, timeoutMs: 120000 })
    await run.files.write('/home/user/state.txt', 'running-state')
    await run.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    const paused = await Sandbox.create({ ...o1, timeoutMs: 120000 })
    await paused.commands.run('mkdir -p /opt/work && echo paused-state > /opt/work/s.txt', { user: 'root' })
    await paused.pause()
    const released = await Sandbox.create({ ...o1, timeoutMs: 120000 })
    await released.files.write('/home/user/state.txt', 'released-state')
    await released.pause({ keepMemory: false })
    const auto = await Sandbox.create({ ...o1, timeoutMs: 120000, lifecycle: { onTimeout: 'pause', autoResume: true } })
    await auto.files.write('/home/user/state.txt', 'auto-state')

    await reboot(d1)
    d2 = await d1.restart()
    const o2 = opts(d2)
    const ids = [run, paused, released, auto].map((s) => s.sandboxId)
    const listed = (await api(d2, 'GET', '/v2/sandboxes')).json.map((s) => s.sandboxID).sort()
    assert.deepEqual(listed, [...ids].sort(), 'all four are back')
    for (const id of ids) {
      const info = (await api(d2, 'GET', `/sandboxes/${id}`)).json
      assert.equal(info.state, 'paused', `${id} is paused`)
      assert.equal(info.memoryReleased, true, `${id} has no memory: its processes were lost`)
      assert.match(d2.log(), new RegExp(`${id}.*brought back after a host restart`), 'a log line per sandbox')
    }
    // resume boots a fresh init over the files
    const r = await Sandbox.connect(run.sandboxId, o2)
    assert.equal(await r.files.read('/home/user/state.txt'), 'running-state')
    assert.equal((await r.commands.run('echo fresh')).stdout, 'fresh\n')
    assert.ok(!(await sleeping(r)), 'the old processes are gone')
    const p = await Sandbox.connect(paused.sandboxId, o2)
    assert.equal((await p.commands.run('cat /opt/work/s.txt')).stdout, 'paused-state\n', 'a file outside home too')
    const rl = await Sandbox.connect(released.sandboxId, o2)
    assert.equal(await rl.files.read('/home/user/state.txt'), 'released-state')
    // autoResume: the next data-plane request boots it, no connect needed
    const a = await Sandbox.connect(auto.sandboxId, o2).catch(() => null)
    assert.ok(a)
    const raw = await fetch(`${d2.url}/files?path=/home/user/state.txt`, {
      headers: { 'E2b-Sandbox-Id': auto.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': auto.envdAccessToken ?? '' },
    })
    assert.equal(raw.status, 200)
    assert.equal(await raw.text(), 'auto-state')
    // and the sandboxes work as new ones do: writes, pause, resume
    await r.files.write('/home/user/after.txt', 'after')
    await r.pause()
    const r2 = await Sandbox.connect(run.sandboxId, o2)
    assert.equal(await r2.files.read('/home/user/after.txt'), 'after')
    for (const id of ids) await Sandbox.kill(id, o2)
    const layers = join(d2.env.HUTCH_DATA_DIR, 'layers')
    assert.deepEqual(readdirSync(layers).filter((n) => /^[a-z0-9][a-z0-9-]*$/.test(n)), [], 'kill removes their layers')
  } finally {
    if (d2) await d2.stop()
    else if (existsSync(`/proc/${d1.pid}`)) await d1.stop()
  }
})

test('a full disk fails the create that needs space with 507 and a clear message; nothing else breaks', async () => {
  // a 1 GiB layers image (the smallest hutch makes) filled by one sandbox
  const d = await startDaemon([], null, { HUTCH_LAYERS_SIZE: '1G', HUTCH_LAYERS: 'image' })
  const o = opts(d)
  try {
    const a = await Sandbox.create({ ...o, timeoutMs: 60000 })
    await a.files.write('/home/user/keep.txt', 'kept')
    const fill = await a.commands.run('fallocate -l 900M /home/user/big; dd if=/dev/zero of=/home/user/fill bs=1M count=400; sync', { timeoutMs: 60000 }).catch((e) => e)
    assert.match(String(fill.stderr ?? fill.message), /No space left on device|Disk quota exceeded/, 'the writer gets ENOSPC inside')
    const r = await api(d, 'POST', '/sandboxes', { templateID: 'base' })
    assert.equal(r.status, 507, JSON.stringify(r.json))
    assert.match(r.json.message, /no disk space for a new sandbox: the writable layers' file system .* is full/)
    const { NotEnoughSpaceError } = await import('e2b')
    await assert.rejects(Sandbox.create({ ...o, timeoutMs: 60000 }), (e) => e instanceof NotEnoughSpaceError || /507|disk space/.test(e.message))
    // the daemon is alive, the full sandbox works and its files are intact
    assert.equal((await api(d, 'GET', '/health')).status < 500, true)
    assert.equal(await a.files.read('/home/user/keep.txt'), 'kept')
    assert.equal((await api(d, 'GET', '/v2/sandboxes')).json.length, 1, 'no half-made sandbox is listed')
    // the full sandbox stays usable: it reads, and it writes once it frees its own space
    await a.commands.run('rm -f /home/user/fill; sync')
    assert.equal((await a.commands.run('echo ok')).stdout, 'ok\n')
  } finally {
    await d.stop()
  }
})

// The files under a daemon's layers: sandboxes' layers and kept snapshots.
function layerDirs(d) {
  const root = join(d.env.HUTCH_DATA_DIR, 'layers')
  const valid = (n) => /^[a-z0-9][a-z0-9-]*$/.test(n)
  const snaps = join(root, '.snapshots')
  return {
    layers: existsSync(root) ? readdirSync(root).filter(valid).sort() : [],
    snapshots: existsSync(snaps) ? readdirSync(snaps).filter(valid).sort() : [],
  }
}

test('snapshots: point-in-time files, usable as a templateID, listed, replaced by name, deleted through /templates', async () => {
  const d = await startDaemon()
  const o = opts(d)
  try {
    const src = await Sandbox.create({ ...o, timeoutMs: 120000 })
    await src.files.write('/home/user/a.txt', 'v1')
    await src.commands.run('mkdir -p /opt/sys && echo root-file > /opt/sys/r.txt && chmod 4755 /opt/sys && cp /bin/true /opt/sys/suid && chmod 4755 /opt/sys/suid', { user: 'root' })
    await src.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    const snap = await src.createSnapshot()
    assert.ok(snap.snapshotId, 'an id')
    assert.deepEqual(snap.names, [], 'unnamed')
    // the source runs on, its processes too
    assert.equal((await api(d, 'GET', `/sandboxes/${src.sandboxId}`)).json.state, 'running')
    assert.ok(await sleeping(src), 'the source kept its processes')
    assert.match(d.log(), /snapshot s[a-z0-9]+ of its files taken \(frozen for \d+ ms\)/)
    await src.files.write('/home/user/a.txt', 'v2')

    // a sandbox from it: the files of that instant, owned as they were
    const s2 = await Sandbox.create(snap.snapshotId, { ...o, timeoutMs: 60000 })
    assert.equal(await s2.files.read('/home/user/a.txt'), 'v1', 'the point in time, not the later write')
    const st = await s2.commands.run('stat -c %U /home/user/a.txt; stat -c %U /opt/sys/r.txt; stat -c %A /opt/sys/suid; id -un')
    assert.equal(st.stdout, 'user\nroot\n-rwsr-xr-x\nuser\n', 'owners and the set-user-ID bit carried over')
    assert.ok(!(await sleeping(s2)), 'memory is not part of a snapshot: fresh processes')
    await s2.files.write('/home/user/a.txt', 'mine')
    assert.equal(await src.files.read('/home/user/a.txt'), 'v2', 'copy on write: the source does not see it')
    const info2 = (await api(d, 'GET', `/sandboxes/${s2.sandboxId}`)).json
    assert.equal(info2.templateID, 'base', 'it stands on the source template')

    // named, then the name moved to a newer snapshot
    const raw = await api(d, 'POST', `/sandboxes/${src.sandboxId}/snapshots`, { name: 'my-snap' })
    assert.equal(raw.status, 201)
    assert.equal(raw.json.snapshotID, 'my-snap')
    assert.deepEqual(raw.json.names, ['my-snap'])
    assert.equal(raw.json.memory, 'not included', 'the reply says memory is not in it')
    await src.files.write('/home/user/a.txt', 'v3')
    await src.createSnapshot({ name: 'my-snap' })
    const s3 = await Sandbox.create('my-snap', { ...o, timeoutMs: 60000 })
    assert.equal(await s3.files.read('/home/user/a.txt'), 'v3', 'the name names the newest')
    const s3b = await Sandbox.create('my-snap:default', { ...o, timeoutMs: 60000 })
    assert.equal(await s3b.files.read('/home/user/a.txt'), 'v3', 'with a tag too')

    // listed (the replaced one is gone), filtered by sandbox
    const listed = await Sandbox.listSnapshots({ ...o }).nextItems()
    assert.deepEqual(listed.map((x) => x.snapshotId).sort(), [snap.snapshotId, 'my-snap'].sort())
    assert.equal((await api(d, 'GET', `/snapshots?sandboxID=${s2.sandboxId}`)).json.length, 0)
    assert.equal(layerDirs(d).snapshots.length, 2, 'the replaced snapshot\'s files are gone')
    // bad names
    assert.equal((await api(d, 'POST', `/sandboxes/${src.sandboxId}/snapshots`, { name: '../x' })).status, 400)
    assert.equal((await api(d, 'POST', `/sandboxes/nope/snapshots`, {})).status, 404)
    assert.equal((await api(d, 'POST', `/sandboxes/${src.sandboxId}/snapshots`, { name: 'base' })).status, 409, 'a name may not hide a template')

    // deleted through DELETE /templates/{id}; sandboxes made from it keep their files
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, o), true)
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, o), false, 'a second delete is a 404')
    await assert.rejects(Sandbox.create(snap.snapshotId, { ...o, timeoutMs: 60000 }))
    assert.equal(await s2.files.read('/home/user/a.txt'), 'mine')
    // the source's end does not end its snapshots
    await src.kill()
    const s4 = await Sandbox.create('my-snap', { ...o, timeoutMs: 60000 })
    assert.equal(await s4.files.read('/home/user/a.txt'), 'v3')
    for (const s of [s2, s3, s3b, s4]) await s.kill()
    assert.equal(await Sandbox.deleteSnapshot('my-snap', o), true)
    assert.deepEqual(layerDirs(d), { layers: [], snapshots: [] }, 'nothing left on disk')
  } finally {
    await d.stop()
  }
})

test('fork: count sandboxes from one point in time, each answered on its own; the source runs on', async () => {
  const { writeFileSync, mkdtempSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const confDir = mkdtempSync(join(tmpdir(), 'hutch-conf-'))
  writeFileSync(join(confDir, 'hutch.conf'), 'max_sandboxes = 4\n')
  const d = await startDaemon(['--config', join(confDir, 'hutch.conf')])
  const o = opts(d)
  try {
    const src = await Sandbox.create({ ...o, timeoutMs: 120000, envs: { FROM: 'source' } })
    await src.files.write('/home/user/f.txt', 'point')
    await src.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    const forks = await src.fork({ count: 2, timeoutMs: 60000 })
    assert.equal(forks.length, 2)
    for (const f of forks) {
      assert.ok(f instanceof Sandbox, String(f))
      assert.notEqual(f.sandboxId, src.sandboxId)
      assert.equal(await f.files.read('/home/user/f.txt'), 'point')
      assert.equal((await f.commands.run('echo $FROM')).stdout, 'source\n', 'the source\'s envs')
      assert.ok(!(await sleeping(f)), 'fresh processes: memory is not forked')
    }
    await forks[0].files.write('/home/user/f.txt', 'zero')
    assert.equal(await forks[1].files.read('/home/user/f.txt'), 'point', 'each fork has its own files')
    assert.equal(await src.files.read('/home/user/f.txt'), 'point')
    assert.ok(await sleeping(src), 'the source runs on')
    // 3 of 4 sandboxes are alive: of 3 forks, one starts and two are refused, each on its own
    const r = await api(d, 'POST', `/sandboxes/${src.sandboxId}/fork`, { count: 3, timeout: 60 })
    assert.equal(r.status, 201, JSON.stringify(r.json))
    assert.equal(r.json.length, 3)
    assert.equal(r.json.filter((x) => x.sandbox).length, 1, JSON.stringify(r.json))
    assert.deepEqual(r.json.filter((x) => x.error).map((x) => x.error.code), [429, 429])
    assert.equal((await api(d, 'POST', `/sandboxes/${src.sandboxId}/fork`, { count: 0 })).status, 400)
    assert.equal((await api(d, 'POST', `/sandboxes/nope/fork`, {})).status, 404)
    assert.equal((await api(d, 'GET', '/snapshots')).json.length, 0, 'a fork leaves no snapshot')
    assert.deepEqual(layerDirs(d).snapshots, [], 'nor its files')
    for (const id of (await api(d, 'GET', '/v2/sandboxes')).json.map((x) => x.sandboxID)) await Sandbox.kill(id, o)
    assert.deepEqual(layerDirs(d), { layers: [], snapshots: [] })
  } finally {
    await d.stop()
  }
})

test('a kill -9 in the middle of a snapshot or a fork leaves no half-made layer', async () => {
  for (const point of ['snapshot.stored', 'snapshot.made', 'fork.started']) {
    const d = await startDaemon([], null, { HUTCH_FAULT: point })
    const o = opts(d)
    const src = await Sandbox.create({ ...o, timeoutMs: 120000 })
    await src.files.write('/home/user/x.txt', 'x')
    const path = point.startsWith('fork') ? 'fork' : 'snapshots'
    await api(d, 'POST', `/sandboxes/${src.sandboxId}/${path}`, point.startsWith('fork') ? { count: 2 } : {}).catch(() => {})
    assert.equal((await d.exited).signal, 'SIGKILL', `${point}: the daemon died there`)
    const d2 = await d.restart([], {})
    try {
      assert.equal((await api(d2, 'GET', '/snapshots')).json.length, 0, `${point}: no snapshot is listed`)
      const ids = (await api(d2, 'GET', '/v2/sandboxes')).json.map((x) => x.sandboxID)
      assert.deepEqual(ids, [src.sandboxId], `${point}: only the source is left (no half-made fork)`)
      assert.deepEqual(layerDirs(d2), { layers: [src.sandboxId], snapshots: [] }, `${point}: no layer or snapshot files without an owner`)
      const rows = sh(`python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from snapshots').fetchone()[0])" ${join(d2.env.HUTCH_DATA_DIR, 'hutch.db')}`)
      assert.equal(rows, '0', `${point}: no snapshot row is left either`)
      const s = await Sandbox.connect(src.sandboxId, opts(d2))
      assert.equal((await s.commands.run('cat /home/user/x.txt')).stdout, 'x', `${point}: the source runs (thawed)`)
      await s.kill()
    } finally {
      await d2.stop()
    }
  }
})

test('ten pause/resume cycles, alternating frozen and released, lose no write', async () => {
  const d = await startDaemon()
  const o = opts(d)
  try {
    const sbx = await Sandbox.create({ ...o, timeoutMs: 120000 })
    const want = []
    for (let i = 1; i <= 10; i++) {
      // a write through the files API, one through a process (page cache
      // not yet written back), and an append to one growing file
      await sbx.files.write(`/home/user/cycle-${i}.txt`, `cycle ${i}`)
      await sbx.commands.run(`echo ${i} >> /home/user/log.txt; mkdir -p /tmp/c${i}; echo t${i} > /tmp/c${i}/f`)
      want.push(String(i))
      const released = i % 2 === 0
      await sbx.pause(released ? { keepMemory: false } : undefined)
      assert.equal((await api(d, 'GET', `/sandboxes/${sbx.sandboxId}`)).json.memoryReleased, released, `cycle ${i}: ${released ? 'released' : 'frozen'}`)
      await Sandbox.connect(sbx.sandboxId, o)
      for (let j = 1; j <= i; j++) {
        assert.equal(await sbx.files.read(`/home/user/cycle-${j}.txt`), `cycle ${j}`, `cycle ${i}: write ${j} is there`)
        assert.equal((await sbx.commands.run(`cat /tmp/c${j}/f`)).stdout, `t${j}\n`, `cycle ${i}: /tmp write ${j}`)
      }
      assert.deepEqual((await sbx.files.read('/home/user/log.txt')).trim().split('\n'), want, `cycle ${i}: every append`)
    }
    await sbx.kill()
  } finally {
    await d.stop()
  }
})

test('another team can neither see, use, delete, take nor fork snapshots and sandboxes not its own', async () => {
  const d = await startDaemon()
  const o = opts(d)
  try {
    const other = execFileSync(hutchBin, ['keys', 'create', '--team', 'other'], { env: d.env }).toString().match(/\b(e2b_[0-9a-f]{40})\b/)[1]
    const them = { url: d.url, apiKey: other }
    const src = await Sandbox.create({ ...o, timeoutMs: 60000 })
    await src.files.write('/home/user/secret.txt', 'mine')
    const snap = await src.createSnapshot({ name: 'private' })
    assert.deepEqual((await api(them, 'GET', '/snapshots')).json, [], 'not listed to them')
    const c1 = await api(them, 'POST', '/sandboxes', { templateID: snap.snapshotId })
    assert.equal(c1.status, 404, 'not usable by name')
    const ids = (await api(d, 'GET', '/snapshots')).json.map((x) => x.snapshotID)
    assert.deepEqual(ids, ['private'])
    const row = sh(`python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select id from snapshots').fetchone()[0])" ${join(d.env.HUTCH_DATA_DIR, 'hutch.db')}`)
    assert.equal((await api(them, 'POST', '/sandboxes', { templateID: row })).status, 404, 'nor by id')
    assert.equal((await api(them, 'DELETE', `/templates/${row}`)).status, 404, 'nor deletable')
    assert.equal((await api(them, 'DELETE', '/templates/private')).status, 404)
    assert.equal((await api(them, 'POST', `/sandboxes/${src.sandboxId}/snapshots`, {})).status, 404, 'no snapshot of another team\'s sandbox')
    assert.equal((await api(them, 'POST', `/sandboxes/${src.sandboxId}/fork`, { count: 1 })).status, 404, 'no fork of it')
    // their snapshot of the same name is theirs
    const mine = await api(them, 'POST', '/sandboxes', { templateID: 'base', timeout: 60 })
    assert.equal((await api(them, 'POST', `/sandboxes/${mine.json.sandboxID}/snapshots`, { name: 'private' })).status, 201)
    const theirs = await api(them, 'POST', '/sandboxes', { templateID: 'private', timeout: 60 })
    assert.equal(theirs.status, 201)
    const read = await fetch(`${d.url}/files?path=/home/user/secret.txt`, {
      headers: { 'E2b-Sandbox-Id': theirs.json.sandboxID, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': theirs.json.envdAccessToken },
    })
    assert.equal(read.status, 404, 'their "private" is their own files')
    assert.equal(await Sandbox.deleteSnapshot('private', o), true)
    assert.equal((await api(them, 'DELETE', '/templates/private')).status, 204)
    for (const id of [mine.json.sandboxID, theirs.json.sandboxID]) await api(them, 'DELETE', `/sandboxes/${id}`)
    await src.kill()
  } finally {
    await d.stop()
  }
})
