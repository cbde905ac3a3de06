// The template builder of POST /templates (hutch-build): started like
// hutch-init, not forked from the daemon, and confined before it reads a
// byte. In the test build, HUTCH_TEST_BUILD_PROBE=1 makes the builder try,
// after its confinement, what a compromised builder would: the daemon's
// descriptors, its port, its database, a sandbox's init socket, a file
// outside its build root, a signal to the daemon. All of it must fail.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, mkdtempSync, writeFileSync, rmSync, mkdirSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, sleep } from './harness.mjs'

let d, sbx, work
const tplDir = () => join(d.base, 'data', 'templates')
before(async () => {
  d = await startDaemon([], null, { HUTCH_TEST_BUILD_PROBE: '1' })
  sbx = await Sandbox.create({ timeoutMs: 120_000 })
  work = mkdtempSync(join(tmpdir(), 'hutch-builder-'))
  mkdirSync(join(work, 'root', 'etc'), { recursive: true })
  writeFileSync(join(work, 'root', 'etc', 'marker'), 'm')
  execFileSync('tar', ['-C', join(work, 'root'), '-czf', join(work, 'up.tar.gz'), '.'])
})
after(async () => {
  await sbx?.kill().catch(() => {})
  if (work) rmSync(work, { recursive: true, force: true })
  const st = await d?.stop()
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

test('the confined builder holds only its own descriptors and reaches nothing of the daemon', async (t) => {
  if (!process.env.HUTCH_BUILD?.includes('san')) {
    t.skip('the probe mode exists only in the test (sanitizer) build')
    return
  }
  const res = await fetch(`${d.url}/templates?name=probe`, {
    method: 'POST', headers: { 'X-API-KEY': d.apiKey, 'Content-Type': 'application/octet-stream' },
    body: readFileSync(join(work, 'up.tar.gz')),
  })
  const body = await res.json()
  const m = body.message?.match(/probe fds=(\S*) tcp=(\S+) db=(\S+) ctl=(\S+) outside=(\S+) parent=(\S+) signal=(\S+) inside=(\S+)/)
  assert.ok(m, JSON.stringify(body))
  t.diagnostic(body.message)
  const [, fds, tcp, db, ctl, outside, parent, signal, inside] = m
  // 0-2 /dev/null, 3 its verdict pipe, 4 the archive, 5 its build root: no
  // listener, no database, no connection to any hutch-init
  assert.equal(fds, '0,1,2,3,4,5')
  assert.notEqual(tcp, 'ok', 'the daemon\'s port')
  assert.notEqual(db, 'ok', 'the SQLite file')
  assert.notEqual(ctl, 'ok', 'a sandbox\'s init socket')
  assert.notEqual(outside, 'ok', 'a file beside the templates')
  assert.notEqual(parent, 'ok', 'a file next to its build root, through the root\'s fd')
  assert.notEqual(signal, 'ok', 'a signal to the daemon')
  // the probe ran confined, not broken: its own root is writable
  assert.equal(inside, 'ok')
  // the log shows that the init socket probed was a live one
  const sock = d.log().match(/template build probe \(HUTCH_TEST_BUILD_PROBE; tests only\): \S+ (\S+)/)?.[1]
  assert.ok(sock?.endsWith(`${sbx.sandboxId}.sock`) && existsSync(sock), `probed ${sock}`)
  // nothing is left: no template, no build directory, no stray file
  assert.equal(existsSync(join(tplDir(), 'probe')), false)
  assert.equal(existsSync(join(tplDir(), '.probe-outside')), false)
  assert.deepEqual(readdirSync(tplDir()).filter((n) => n.startsWith('.build-') || n.startsWith('.upload-')), [])
  // ... and no builder cgroup
  const groups = execFileSync('sh', ['-c', `ls -d /sys/fs/cgroup/${d.env.HUTCH_CGROUP_PARENT}/build-* /sys/fs/cgroup/*/${d.env.HUTCH_CGROUP_PARENT}/build-* 2>/dev/null || true`], { encoding: 'utf8' })
  assert.equal(groups.trim(), '')
})

test('a daemon stopped during a build answers 503, kills the builder and leaves nothing', async () => {
  const d2 = await startDaemon()
  let stopped = false
  try {
    const root = join(work, 'big')
    mkdirSync(join(root, 'etc'), { recursive: true })
    for (let i = 0; i < 4; i++) writeFileSync(join(root, 'etc', `blob${i}`), randomBytes(16 << 20))
    execFileSync('tar', ['-C', root, '-cf', join(work, 'big.tar'), '.'])
    const res = fetch(`${d2.url}/templates?name=interrupted`, {
      method: 'POST', headers: { 'X-API-KEY': d2.apiKey, 'Content-Type': 'application/octet-stream' },
      body: readFileSync(join(work, 'big.tar')),
    }).then(async (r) => ({ status: r.status, text: await r.text() }), (e) => ({ error: String(e) }))
    for (let i = 0; i < 200 && !/template interrupted: building/.test(d2.log()); i++) await sleep(25)
    assert.match(d2.log(), /template interrupted: building for team \S+ \(hutch-build pid \d+\)/)
    process.kill(d2.pid, 'SIGTERM')
    const st = await d2.exited
    assert.equal(st.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d2.log().slice(-2000)}`)
    const r = await res
    assert.ok(r.error || r.status === 503, JSON.stringify(r))
    // before the harness cleans up: no builder, cgroup, build dir or upload left
    const tpl = join(d2.base, 'data', 'templates')
    assert.deepEqual(readdirSync(tpl).filter((n) => n.startsWith('.build-') || n.startsWith('.upload-') || n === 'interrupted'), [])
    const groups = execFileSync('sh', ['-c', `ls -d /sys/fs/cgroup/${d2.env.HUTCH_CGROUP_PARENT}/build-* /sys/fs/cgroup/*/${d2.env.HUTCH_CGROUP_PARENT}/build-* 2>/dev/null || true`], { encoding: 'utf8' })
    assert.equal(groups.trim(), '')
    await d2.stop()
    stopped = true
  } finally {
    if (!stopped) await d2.stop()
  }
})
