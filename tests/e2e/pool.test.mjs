// Warm pools (docs/operations.md "Warm pools"): creates answered with a
// sandbox built ahead of time, the pool refilled in the background, never
// over the admission budget, never handing a sandbox out twice, and nothing
// of it left behind by a restart.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, existsSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox, Volume } from 'e2b'
import { startDaemon, api, sleep, makeRoot } from './harness.mjs'

const sh = (cmd) => execFileSync('sh', ['-c', cmd]).toString().trim()
const opts = (d) => ({ apiKey: d.apiKey, apiUrl: d.url, sandboxUrl: d.url })

async function metrics(d) {
  const text = await (await fetch(d.url + '/metrics')).text()
  const get = (series) => {
    const line = text.split('\n').find((l) => l.startsWith(series + ' '))
    return line ? Number(line.split(' ')[1]) : undefined
  }
  return {
    ready: get('hutch_pool_sandboxes{template="base",state="ready"}'),
    building: get('hutch_pool_sandboxes{template="base",state="building"}'),
    target: get('hutch_pool_sandboxes{template="base",state="target"}'),
    pool: get('hutch_sandbox_creates_by_source_total{source="pool"}'),
    cold: get('hutch_sandbox_creates_by_source_total{source="cold"}'),
    built: get('hutch_pool_events_total{event="built"}'),
    dropped: get('hutch_pool_events_total{event="dropped"}'),
  }
}

async function poolReady(d, n, ms = 20000) {
  let m
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
    m = await metrics(d)
    if (m.ready === n && m.building === 0) return m
  }
  assert.fail(`the pool did not reach ${n} ready: ${JSON.stringify(m)}`)
}

// What exists on the host for a daemon's dirs and cgroup parent.
function hostState(d) {
  const parent = d.env.HUTCH_CGROUP_PARENT
  const groups = sh(`for g in /sys/fs/cgroup/*/${parent}/*/ /sys/fs/cgroup/${parent}/*/; do [ -d "$g" ] && basename "$g"; done 2>/dev/null | sort -u`).split('\n').filter(Boolean)
  const procs = Number(sh(`cat /sys/fs/cgroup/*/${parent}/*/cgroup.procs 2>/dev/null | sort -u | wc -l`))
  const sbxDir = join(d.env.HUTCH_RUN_DIR, 'sandboxes')
  const dirs = existsSync(sbxDir) ? readdirSync(sbxDir).sort() : []
  const mounts = Number(sh(`grep -c " ${d.base}/" /proc/self/mountinfo || true`))
  const rows = sh(`python3 -c "import sqlite3,sys; print(' '.join(r[0] for r in sqlite3.connect(sys.argv[1]).execute('select id from sandboxes order by id')))" ${join(d.env.HUTCH_DATA_DIR, 'hutch.db')}`).split(' ').filter(Boolean)
  return { groups, procs, dirs, mounts, rows }
}

function memoryLimit(d, id) {
  const f = `/sys/fs/cgroup/memory/${d.env.HUTCH_CGROUP_PARENT}/${id}/memory.limit_in_bytes`
  return existsSync(f) ? Number(readFileSync(f, 'utf8')) : undefined
}

test('creates take pool sandboxes with their own metadata, env and limits; the pool refills; no sandbox twice', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hutch-conf-'))
  writeFileSync(join(dir, 'hutch.conf'), 'default_memory = 300M\n')
  const d = await startDaemon(['--pool-size', '3', '--config', join(dir, 'hutch.conf')])
  try {
    const m0 = await poolReady(d, 3)
    assert.equal(m0.target, 3)
    const poolIds = hostState(d).dirs
    assert.equal(poolIds.length, 3, 'three pool sandboxes on the host')
    assert.deepEqual((await api(d, 'GET', '/v2/sandboxes')).json, [], 'pool sandboxes are not listed')

    const sbx = await Sandbox.create({ ...opts(d), metadata: { session: 's-1' }, envs: { POOL_TEST: 'yes' }, timeoutMs: 60000 })
    const m1 = await metrics(d)
    assert.equal(m1.pool, 1, 'served from the pool')
    assert.equal(m1.cold, 0)
    assert.ok(poolIds.includes(sbx.sandboxId), 'the sandbox is one the pool had built')
    const info = (await api(d, 'GET', `/sandboxes/${sbx.sandboxId}`)).json
    assert.deepEqual(info.metadata, { session: 's-1' })
    assert.equal(info.state, 'running')
    assert.equal((await sbx.commands.run('echo $POOL_TEST')).stdout, 'yes\n', 'the request\'s env')
    assert.equal((await sbx.commands.run('hostname')).stdout, sbx.sandboxId + '\n', 'its hostname is its id')
    assert.equal(memoryLimit(d, sbx.sandboxId), 300 * 2 ** 20, 'the configured memory limit')
    // a limit that bites: 400 MiB in a 300 MiB sandbox is killed
    const hog = await sbx.commands.run('python3 -c "b = bytearray(400 << 20); print(len(b))"').catch((e) => e)
    assert.notEqual(hog.exitCode, 0, 'the memory limit holds inside')
    assert.deepEqual((await api(d, 'GET', '/v2/sandboxes')).json.map((s) => s.sandboxID), [sbx.sandboxId])

    const m2 = await poolReady(d, 3)
    assert.ok(m2.built >= 4, 'the pool refilled')

    // many creates at once: all distinct, the pool's three among them
    const many = await Promise.all(Array.from({ length: 8 }, (_, i) =>
      Sandbox.create({ ...opts(d), metadata: { n: String(i) }, timeoutMs: 60000 })))
    const ids = many.map((s) => s.sandboxId)
    assert.equal(new Set([...ids, sbx.sandboxId]).size, 9, 'no sandbox handed out twice')
    const m3 = await metrics(d)
    assert.ok(m3.pool >= 4, `pool creates: ${JSON.stringify(m3)}`)
    assert.equal(m3.pool + m3.cold, 9)
    for (const [i, s] of many.entries())
      assert.deepEqual((await api(d, 'GET', `/sandboxes/${s.sandboxId}`)).json.metadata, { n: String(i) })
    // a killed sandbox never comes back as a pool sandbox; the pool now
    // follows the burst (its peak of creates within a second)
    await Promise.all([sbx, ...many].map((s) => s.kill()))
    const m4 = await metrics(d)
    assert.ok(m4.target >= 8 && m4.target <= 9, `the target follows the burst: ${JSON.stringify(m4)}`)
    await poolReady(d, m4.target)
    const again = hostState(d).dirs
    for (const id of [sbx.sandboxId, ...ids]) assert.ok(!again.includes(id), `${id} is gone for good`)
  } finally {
    assert.equal((await d.stop()).code, 0)
    rmSync(dir, { recursive: true, force: true })
  }
})

test('volume mounts are built cold; ready pool sandboxes commit what they hold; a tiny budget caps builds, and a create the pool cannot make room for drops nothing', async () => {
  const total = Number(sh("awk '/MemTotal/ {print $2 * 1024}' /proc/meminfo"))
  const dir = mkdtempSync(join(tmpdir(), 'hutch-conf-'))
  // a budget of 2.5 default (512 MiB) sandboxes
  writeFileSync(join(dir, 'hutch.conf'), `admission.reserve = 4G\nadmission.memory_overcommit = ${(2.5 * 512 * 2 ** 20 / (total - 4 * 2 ** 30)).toFixed(4)}\n`)
  const d = await startDaemon(['--pool-size', '4', '--config', join(dir, 'hutch.conf')])
  try {
    // ready pool sandboxes commit what they hold, not 512 MiB each: all
    // four fit in a budget of 2.5
    const m0 = await poolReady(d, 4)
    const poolCommitted = async () => {
      const text = await (await fetch(d.url + '/metrics')).text()
      return Number(text.match(/hutch_memory_by_state_bytes\{state="pool",kind="committed"\} (\d+)/)[1])
    }
    assert.ok(await poolCommitted() < 4 * 64 * 2 ** 20, `four idle pool sandboxes commit little (${await poolCommitted()})`)
    assert.equal(hostState(d).dirs.length, 4)

    // a volume mount cannot be added to a built sandbox: cold, and it fits
    // beside the pool without taking any of it
    await Volume.create('pooled-vol', opts(d))
    const v = await Sandbox.create({ ...opts(d), volumeMounts: { '/data': 'pooled-vol' }, timeoutMs: 60000 })
    const m1 = await metrics(d)
    assert.equal(m1.cold, 1, 'built for the request')
    assert.equal(m1.pool, 0)
    assert.equal(m1.dropped, m0.dropped, 'no pool sandbox had to give way')
    await v.files.write('/data/x', 'y')
    // a pool sandbox serves the next create; a build (512 MiB while it is
    // built) no longer fits, so the pool stays one short
    const p = await Sandbox.create({ ...opts(d), timeoutMs: 60000 })
    assert.equal((await metrics(d)).pool, 1)
    await sleep(1500)
    assert.equal((await metrics(d)).ready, 3, 'no refill over the budget')
    // over the budget, and the pool's few MiB cannot make room: refused
    // without giving up a pool sandbox for nothing
    const over = await api(d, 'POST', '/v2/sandboxes', { timeout: 60 })
    assert.equal(over.status, 429, over.text)
    const m2 = await metrics(d)
    assert.equal(m2.ready, 3)
    assert.equal(m2.dropped, m0.dropped)
    assert.equal(hostState(d).dirs.length, 5)
    // room again: the pool refills
    await p.kill()
    await poolReady(d, 4)
  } finally {
    assert.equal((await d.stop()).code, 0)
    rmSync(dir, { recursive: true, force: true })
  }
})

test('restarts leave no pool sandbox behind: SIGTERM destroys them, kill -9 leftovers are removed at the next start', async () => {
  const d1 = await startDaemon(['--pool-size', '2'])
  await poolReady(d1, 2)
  const kept = await Sandbox.create({ ...opts(d1), timeoutMs: 120000 })
  await poolReady(d1, 2)
  // SIGTERM: the session sandbox stays for adoption, the pool's go
  process.kill(d1.pid, 'SIGTERM')
  assert.equal((await d1.exited).code, 0)
  let h = hostState(d1)
  assert.deepEqual(h.dirs, [kept.sandboxId], 'only the session sandbox is left')
  assert.deepEqual(h.groups, [kept.sandboxId])
  assert.deepEqual(h.rows, [kept.sandboxId])
  assert.equal(h.mounts, 1)

  const d2 = await d1.restart()
  await poolReady(d2, 2)
  const pooled = hostState(d2).dirs.filter((id) => id !== kept.sandboxId)
  assert.equal(pooled.length, 2)
  // kill -9 with a full pool: their rows say `creating`, so the next start
  // removes them like interrupted creates
  process.kill(d2.pid, 'SIGKILL')
  await d2.exited
  const d3 = await d2.restart(['--pool-size', '0'])
  try {
    h = hostState(d3)
    assert.deepEqual(h.dirs, [kept.sandboxId], 'the pool sandboxes are gone')
    assert.deepEqual(h.groups, [kept.sandboxId])
    assert.deepEqual(h.rows, [kept.sandboxId])
    assert.equal(h.mounts, 1)
    const keptProcs = Number(sh(`cat /sys/fs/cgroup/*/${d3.env.HUTCH_CGROUP_PARENT}/${kept.sandboxId}/cgroup.procs 2>/dev/null | sort -u | wc -l`))
    assert.equal(h.procs, keptProcs, 'no process outside the session sandbox')
    assert.deepEqual((await api(d3, 'GET', '/v2/sandboxes')).json.map((s) => s.sandboxID), [kept.sandboxId])
    const k = await Sandbox.connect(kept.sandboxId, opts(d3))
    assert.equal((await k.commands.run('echo kept')).stdout, 'kept\n')
  } finally {
    assert.equal((await d3.stop()).code, 0)
  }
})

test('SIGTERMs that keep arriving during the shutdown do not cut it short: the pool is still destroyed', async () => {
  const d = await startDaemon(['--pool-size', '6'])
  await poolReady(d, 6)
  // a process group signalled again, or make forwarding the signal: the
  // later ones land while the daemon destroys its pool
  process.kill(d.pid, 'SIGTERM')
  for (let i = 0; i < 8; i++) {
    await sleep(3)
    try { process.kill(d.pid, 'SIGTERM') } catch { break } // gone
  }
  try {
    const st = await d.exited
    assert.deepEqual(st, { code: 0, signal: null }, 'a clean exit, not death by the second signal')
    const h = hostState(d)
    assert.deepEqual(h.dirs, [])
    assert.deepEqual(h.groups, [])
    assert.deepEqual(h.rows, [])
  } finally {
    await d.stop() // removes whatever a failure left
  }
})

test('a pool sandbox whose init died while it waited is removed and replaced, never handed out', async () => {
  const d = await startDaemon(['--pool-size', '1'])
  const kill = (id) => sh(`for g in /sys/fs/cgroup/unified/${d.env.HUTCH_CGROUP_PARENT}/${id} /sys/fs/cgroup/${d.env.HUTCH_CGROUP_PARENT}/${id}; do [ -e $g/cgroup.kill ] && echo 1 > $g/cgroup.kill; done; true`)
  try {
    await poolReady(d, 1)
    // no create needed: the lifecycle tick reaps it and the pool refills
    const [first] = hostState(d).dirs
    kill(first)
    let dirs
    for (const end = Date.now() + 10000; Date.now() < end; await sleep(100)) {
      dirs = hostState(d).dirs
      if (dirs.length === 1 && dirs[0] !== first && (await metrics(d)).ready === 1) break
    }
    assert.ok(dirs.length === 1 && dirs[0] !== first, `reaped and replaced without a create: ${dirs}`)
    // a death just before a take: found at the take. cgroup.kill only sends
    // the signals: wait until init has exited (its group is empty), or the
    // take may meet an init that is still dying, which nothing can tell
    // from a live one
    const [victim] = dirs
    kill(victim)
    const procs = `/sys/fs/cgroup/unified/${d.env.HUTCH_CGROUP_PARENT}/${victim}/cgroup.procs`
    for (const end = Date.now() + 5000; Date.now() < end; await sleep(20)) {
      if (!sh(`cat ${procs} 2>/dev/null || true`).trim()) break
    }
    const sbx = await Sandbox.create({ ...opts(d), timeoutMs: 60000 })
    assert.notEqual(sbx.sandboxId, victim)
    assert.equal((await sbx.commands.run('echo ok')).stdout, 'ok\n')
    assert.ok(!hostState(d).dirs.includes(victim), 'the dead one is cleaned up')
    await sbx.kill()
  } finally {
    assert.equal((await d.stop()).code, 0)
  }
})

test('a team template gets its own pool, with its limits and files; deleting the template drops its pool', async () => {
  const conf = mkdtempSync(join(tmpdir(), 'hutch-pool-tpl-'))
  writeFileSync(join(conf, 'hutch.conf'), 'pool.size.pooltpl = 1\n')
  const d = await startDaemon(['--pool-size', '0', '--config', join(conf, 'hutch.conf')])
  const tplPool = async () => {
    const text = await (await fetch(d.url + '/metrics')).text()
    const get = (state) => Number((text.split('\n').find((l) => l.startsWith(`hutch_pool_sandboxes{template="pooltpl",state="${state}"} `)) || ' NaN').split(' ')[1])
    return { ready: get('ready'), building: get('building') }
  }
  const filled = async () => {
    let m
    for (const end = Date.now() + 20000; Date.now() < end; await sleep(100)) {
      m = await tplPool()
      if (m.ready === 1 && m.building === 0) return m
    }
    assert.fail(`the template's pool did not fill: ${JSON.stringify(m)}`)
  }
  try {
    // the pool waits for its template, uploaded while the daemon runs (the
    // upload goes through the confined builder)
    const root = join(conf, 'root')
    makeRoot(root)
    writeFileSync(join(root, 'marker'), 'pooled template\n')
    const tar = join(conf, 'root.tar')
    execFileSync('tar', ['-C', root, '-cf', tar, '.'])
    const up = await fetch(d.url + '/templates?name=pooltpl&memoryMB=300', {
      method: 'POST', headers: { 'X-API-KEY': d.apiKey, 'Content-Type': 'application/octet-stream' }, body: readFileSync(tar),
    })
    assert.equal(up.status, 201, await up.text())
    await filled()
    const [pooled] = hostState(d).dirs
    const before = await metrics(d)
    const sbx = await Sandbox.create('pooltpl', { ...opts(d), timeoutMs: 60000 })
    assert.equal(sbx.sandboxId, pooled, 'served by the pool sandbox')
    assert.equal((await metrics(d)).pool, before.pool + 1)
    assert.equal((await sbx.commands.run('cat /marker')).stdout, 'pooled template\n')
    assert.equal(memoryLimit(d, sbx.sandboxId), 300 * 1024 * 1024, 'the template\'s memory default')
    assert.equal((await api(d, 'DELETE', '/templates/pooltpl')).status, 409, 'in use')
    await sbx.kill()
    await filled()
    // the delete drops the pool sandbox that holds the template's files
    assert.equal((await api(d, 'DELETE', '/templates/pooltpl')).status, 204)
    assert.equal((await tplPool()).ready, 0)
    assert.deepEqual(hostState(d).dirs, [], 'no pool sandbox of a deleted template is left')
    await sleep(1500)
    assert.deepEqual((await tplPool()), { ready: 0, building: 0 }, 'no refill without the template')
  } finally {
    assert.equal((await d.stop()).code, 0)
    rmSync(conf, { recursive: true, force: true })
  }
})
