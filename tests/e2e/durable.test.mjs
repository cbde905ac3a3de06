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
import { startDaemon, api, sleep } from './harness.mjs'

const sh = (cmd) => execFileSync('sh', ['-c', cmd]).toString().trim()
const opts = (d) => ({ apiKey: d.apiKey, apiUrl: d.url, sandboxUrl: d.url })

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
    assert.ok(!(await r.commands.list()).some((p) => p.cmd === 'sleep'), 'the old processes are gone')
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
