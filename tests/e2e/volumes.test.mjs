// Workspaces that outlive the sandbox, through the unmodified e2b SDK:
// named volumes (Volume.create/list/getInfo/destroy, volumeMounts on
// create), ownership across sandboxes with different host uid ranges
// (idmapped mounts), size caps, team isolation, and CubeSandbox host mounts
// (metadata["host-mount"]) with every rejection case.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync, readFileSync, symlinkSync, statSync, existsSync, chownSync, rmSync, readdirSync, renameSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox, Volume, VolumeNotFoundError } from 'e2b'
import { startDaemon, api, hutchBin, sleep, runResult as sh } from './harness.mjs'

let d, hostRoot, outside, tenants
before(async () => {
  // the operator's host mount root, and a directory outside it with a canary
  hostRoot = mkdtempSync(join(tmpdir(), 'hutch-e2e-hostroot-'))
  outside = mkdtempSync(join(tmpdir(), 'hutch-e2e-outside-'))
  writeFileSync(join(outside, 'secret'), 'host secret\n')
  mkdirSync(join(hostRoot, 'ws'))
  chownSync(join(hostRoot, 'ws'), 1000, 1000)
  writeFileSync(join(hostRoot, 'ws', 'from-host'), 'hello from the host\n')
  chownSync(join(hostRoot, 'ws', 'from-host'), 1000, 1000)
  mkdirSync(join(hostRoot, 'ro'))
  writeFileSync(join(hostRoot, 'ro', 'data'), 'read only\n')
  // owned by the sandbox's user: only the read-only mount stands in the way
  chownSync(join(hostRoot, 'ro'), 1000, 1000)
  chownSync(join(hostRoot, 'ro', 'data'), 1000, 1000)
  symlinkSync(outside, join(hostRoot, 'evil-abs'))            // leads outside: refused
  symlinkSync('../' + outside.split('/').pop(), join(hostRoot, 'evil-rel'))
  symlinkSync('ws', join(hostRoot, 'inside'))                 // stays beneath: refused too (no symlinks)
  // a per-team root: team T may mount only beneath tenants/T
  tenants = mkdtempSync(join(tmpdir(), 'hutch-e2e-tenants-'))
  for (const t of ['default', 'team-x']) {
    mkdirSync(join(tenants, t, 'ws', 'sub'), { recursive: true })
    chownSync(join(tenants, t, 'ws'), 1000, 1000)
    chownSync(join(tenants, t, 'ws', 'sub'), 1000, 1000)
    writeFileSync(join(tenants, t, 'ws', 'sub', 'owner'), t + '\n')
  }
  d = await startDaemon(['--host-mount-roots', `*:${hostRoot},${tenants}`])
})
after(async () => {
  const st = await d?.stop()
  rmSync(hostRoot, { recursive: true, force: true })
  rmSync(outside, { recursive: true, force: true })
  if (tenants) rmSync(tenants, { recursive: true, force: true })
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

const volumeDir = (id) => join(d.base, 'data', 'volumes', id)
const uidBase = async (sbx) => Number((await sh(sbx, 'cat /proc/self/uid_map')).stdout.trim().split(/\s+/)[1])
const sandboxCount = async () => (await api(d, 'GET', '/v2/sandboxes')).json.length
const sandboxDirs = () => { try { return readdirSync(join(d.base, 'run', 'sandboxes')).length } catch { return 0 } }

function otherTeamKey(team) {
  return execFileSync(hutchBin, ['keys', 'create', '--team', team, '--data-dir', join(d.base, 'data')], { env: d.env })
    .toString().trim()
}

test('a volume outlives its sandboxes, and files keep their owner across uid ranges', async () => {
  const vol = await Volume.create('workspace')
  assert.match(vol.volumeId, /^v[0-9a-f]{20}$/)
  assert.equal(vol.name, 'workspace')
  const a = await Sandbox.create({ volumeMounts: { '/data': vol }, timeoutMs: 120_000 })
  const b = await Sandbox.create({ volumeMounts: { '/home/user/work': 'workspace' }, timeoutMs: 120_000 })
  let c
  try {
    const info = await a.getInfo()
    assert.deepEqual(info.volumeMounts, [{ name: 'workspace', path: '/data' }])
    // two live sandboxes: two different host uid ranges
    const [ba, bb] = [await uidBase(a), await uidBase(b)]
    assert.ok(ba >= 2 ** 30 && bb >= 2 ** 30 && ba !== bb, `uid bases ${ba} ${bb}`)
    assert.equal((await sh(a, 'echo written-by-A > /data/x && mkdir -p /data/dir && echo 2 > /data/dir/y')).exitCode, 0)
    assert.equal((await sh(a, 'stat -c "%U %u %G" /data/x')).stdout, 'user 1000 user\n')
    // on disk: the canonical id 1000, not A's host uid
    const st = statSync(join(volumeDir(vol.volumeId), 'x'))
    assert.equal(st.uid, 1000)
    assert.equal(st.gid, 1000)
    // B (another uid range) sees the file as its own user's, and can change it
    assert.equal((await sh(b, 'cat /home/user/work/x')).stdout, 'written-by-A\n')
    assert.equal((await sh(b, 'stat -c "%U %u" /home/user/work/x /home/user/work/dir/y')).stdout, 'user 1000\nuser 1000\n')
    assert.equal((await sh(b, 'echo B >> /home/user/work/x && cat /home/user/work/x')).stdout, 'written-by-A\nB\n')
    // root inside writes root-owned files: canonical 0 on disk
    assert.equal((await sh(a, 'echo r > /data/by-root', { user: 'root' })).exitCode, 0)
    assert.equal(statSync(join(volumeDir(vol.volumeId), 'by-root')).uid, 0)
    assert.equal((await sh(b, 'stat -c %U /home/user/work/by-root')).stdout, 'root\n')

    // the volume cannot go while mounted
    const busy = await api(d, 'DELETE', `/volumes/${vol.volumeId}`)
    assert.equal(busy.status, 409)
    assert.match(busy.json.message, /mounted/)

    await a.kill()
    await b.kill()
    assert.ok(existsSync(join(volumeDir(vol.volumeId), 'x')), 'killing the sandboxes keeps the volume')
    c = await Sandbox.create({ volumeMounts: { '/data': 'workspace' } })
    assert.equal((await sh(c, 'cat /data/x; stat -c "%U %u" /data/x')).stdout, 'written-by-A\nB\nuser 1000\n')
  } finally {
    await a.kill().catch(() => {})
    await b.kill().catch(() => {})
    await c?.kill().catch(() => {})
  }
  // listed, found by id and by name, then deleted
  assert.ok((await Volume.list()).some((v) => v.volumeId === vol.volumeId && v.name === 'workspace'))
  assert.equal((await Volume.getInfo(vol.volumeId)).name, 'workspace')
  assert.equal((await api(d, 'GET', '/volumes/workspace')).json.volumeID, vol.volumeId)
  assert.equal(await Volume.destroy(vol.volumeId), true)
  await assert.rejects(Volume.getInfo(vol.volumeId), VolumeNotFoundError)
  assert.equal(await Volume.destroy(vol.volumeId), false)
  for (let i = 0; i < 50 && existsSync(volumeDir(vol.volumeId)); i++) await sleep(100)
  assert.ok(!existsSync(volumeDir(vol.volumeId)), 'the files are gone')
  const again = await api(d, 'POST', '/v2/sandboxes', { volumeMounts: [{ name: 'workspace', path: '/data' }] })
  assert.equal(again.status, 404)
  assert.match(again.json.message, /volume 'workspace' not found/)
})

test('volume API: validation, duplicates, unknown volumes create nothing', async () => {
  for (const body of [{}, { name: '' }, { name: '../x' }, { name: 'a/b' }, { name: 'x'.repeat(64) }, { name: 'ok', size: 1024 },
    { name: 'ok', size: 'huge' }, { name: 'ok', size: -5 }, { name: 'ok', size: true }]) {
    const r = await api(d, 'POST', '/volumes', body)
    assert.equal(r.status, 400, JSON.stringify(body))
    assert.equal(r.json.code, 400)
  }
  assert.equal((await api(d, 'POST', '/volumes', '{"name":')).status, 400)
  const v = await api(d, 'POST', '/volumes', { name: 'dup' })
  assert.equal(v.status, 201)
  assert.equal((await api(d, 'POST', '/volumes', { name: 'dup' })).status, 409)
  assert.equal((await api(d, 'GET', '/volumes/nope')).status, 404)
  assert.equal((await api(d, 'DELETE', '/volumes/nope')).status, 404)
  assert.equal((await api(d, 'GET', '/volumes', undefined, { 'X-API-KEY': 'hutch_bad' })).status, 401)
  const before = await sandboxCount()
  const bad = [
    { volumeMounts: [{ name: 'missing', path: '/data' }] },
    { volumeMounts: [{ name: 'dup', path: '/data' }, { name: 'missing', path: '/more' }] },
    { volumeMounts: [{ name: 'dup', path: '/proc/x' }] },
    { volumeMounts: [{ name: 'dup', path: '/usr/local' }] },
    { volumeMounts: [{ name: 'dup', path: '/' }] },
    { volumeMounts: [{ name: 'dup', path: 'data' }] },
    { volumeMounts: [{ name: 'dup', path: '/a/../etc' }] },
    { volumeMounts: [{ name: 'dup', path: '/bin/x' }] }, // /bin is a symlink in the template
    { volumeMounts: [{ name: 'dup', path: '/d' }, { name: 'dup', path: '/d' }] },
    { volumeMounts: 'dup' },
  ]
  for (const body of bad) {
    const r = await api(d, 'POST', '/v2/sandboxes', body)
    assert.ok(r.status === 400 || r.status === 404, `${JSON.stringify(body)} -> ${r.status} ${r.text}`)
    assert.ok(r.json.message.length > 10)
  }
  assert.equal(await sandboxCount(), before, 'no sandbox was created')
  assert.equal(sandboxDirs(), before)
  assert.equal((await api(d, 'DELETE', `/volumes/${v.json.volumeID}`)).status, 204)
})

test('volumes are team-scoped', async () => {
  const key = otherTeamKey('volteam')
  const mine = await Volume.create('shared-name')
  try {
    const opts = { apiKey: key }
    assert.ok(!(await Volume.list(opts)).some((v) => v.volumeId === mine.volumeId))
    await assert.rejects(Volume.getInfo(mine.volumeId, opts), VolumeNotFoundError)
    assert.equal((await api(d, 'GET', '/volumes/shared-name', undefined, { 'X-API-KEY': key })).status, 404)
    assert.equal(await Volume.destroy(mine.volumeId, opts), false)
    const r = await api(d, 'POST', '/v2/sandboxes', { volumeMounts: [{ name: 'shared-name', path: '/data' }] }, { 'X-API-KEY': key })
    assert.equal(r.status, 404)
    // the same name is free in the other team, and is another volume
    const theirs = await Volume.create('shared-name', opts)
    assert.notEqual(theirs.volumeId, mine.volumeId)
    const sbx = await Sandbox.create({ apiKey: key, volumeMounts: { '/data': 'shared-name' } })
    try {
      await sh(sbx, 'echo theirs > /data/f')
      assert.ok(existsSync(join(volumeDir(theirs.volumeId), 'f')))
      assert.ok(!existsSync(join(volumeDir(mine.volumeId), 'f')))
    } finally {
      await sbx.kill()
    }
    assert.equal(await Volume.destroy(theirs.volumeId, opts), true)
    assert.equal((await Volume.getInfo(mine.volumeId)).name, 'shared-name', 'untouched by the other team')
  } finally {
    await Volume.destroy(mine.volumeId)
  }
})

test('a capped volume: writing past the cap is ENOSPC inside; the cap survives sandboxes', async () => {
  const r = await api(d, 'POST', '/volumes', { name: 'small', size: '8M' })
  assert.equal(r.status, 201)
  assert.equal(r.json.size, 8 * 1024 * 1024)
  const sbx = await Sandbox.create({ volumeMounts: { '/cap': 'small' } })
  try {
    assert.equal((await sh(sbx, 'echo keep > /cap/keep && stat -c "%U" /cap /cap/keep')).stdout, 'user\nuser\n')
    const fill = await sh(sbx, `python3 -c '
import errno
f = open("/cap/big", "wb")
try:
    for i in range(64):
        f.write(b"x" * (1 << 20)); f.flush()
    print("wrote 64 MiB")
except OSError as e:
    print(errno.errorcode[e.errno], i)
'`)
    const [code, mib] = fill.stdout.trim().split(' ')
    assert.equal(code, 'ENOSPC', fill.stdout + fill.stderr)
    assert.ok(Number(mib) >= 4 && Number(mib) <= 8, `stopped at ${mib} MiB`)
    // root inside gets no reserved blocks either
    const rootFill = await sh(sbx, 'dd if=/dev/zero of=/cap/root bs=1M count=16', { user: 'root' })
    assert.notEqual(rootFill.exitCode, 0)
    assert.match(rootFill.stderr, /No space left on device/)
    // the rest of the sandbox is unaffected
    assert.equal((await sh(sbx, 'echo fine > /tmp/t && cat /tmp/t')).stdout, 'fine\n')
  } finally {
    await sbx.kill()
  }
  const again = await Sandbox.create({ volumeMounts: { '/cap': 'small' } })
  // readOnly (a hutch extension of volumeMounts) through the REST API
  const ro = await api(d, 'POST', '/v2/sandboxes', { volumeMounts: [{ name: 'small', path: '/ro', readOnly: true }] })
  assert.equal(ro.status, 201)
  const roSbx = await Sandbox.connect(ro.json.sandboxID)
  try {
    assert.equal((await sh(roSbx, 'cat /ro/keep')).stdout, 'keep\n')
    const w = await sh(roSbx, 'echo x > /ro/keep', { user: 'root' })
    assert.match(w.stderr, /Read-only file system/)
  } finally {
    await roSbx.kill()
  }
  try {
    assert.equal((await sh(again, 'cat /cap/keep; df -k /cap | tail -1 | awk "{print \\$2}"')).stdout.split('\n')[0], 'keep')
    assert.ok(Number((await sh(again, 'df -k --output=size /cap | tail -1')).stdout.trim()) <= 8192)
  } finally {
    await again.kill()
  }
  assert.equal((await api(d, 'DELETE', '/volumes/small')).status, 204)
  assert.ok(!existsSync(volumeDir(r.json.volumeID) + '.img'), 'the image is removed')
  assert.ok(!existsSync(join(d.base, 'run', 'volumes', r.json.volumeID)), 'its mount point is removed')
})

test('a symlink planted in a volume cannot reach host files, inside or at deletion', async () => {
  const vol = await Volume.create('planted')
  const canaryDir = mkdtempSync(join(tmpdir(), 'hutch-e2e-canary-'))
  writeFileSync(join(canaryDir, 'canary'), 'canary\n')
  try {
    const a = await Sandbox.create({ volumeMounts: { '/data': 'planted' } })
    try {
      await sh(a, `ln -s ${canaryDir} /data/abs && ln -s ../../../../../../${canaryDir} /data/rel && ln -s /proc/1/root/ /data/proc1`)
    } finally {
      await a.kill()
    }
    const b = await Sandbox.create({ volumeMounts: { '/data': 'planted' } })
    try {
      for (const l of ['abs', 'rel']) {
        const r = await sh(b, `cat /data/${l}/canary`)
        assert.notEqual(r.exitCode, 0, `${l} must not reach the host's canary`)
        assert.match(r.stderr, /No such file/)
      }
      const p = await sh(b, 'ls /data/proc1/')
      assert.ok(p.exitCode !== 0 || !p.stdout.includes('canary'))
      // hardlinks to files outside the volume cross a mount: refused
      for (const src of ['/etc/passwd', '/tmp/x']) {
        const r = await sh(b, `touch /tmp/x; ln ${src} /data/hl`, { user: 'root' })
        assert.notEqual(r.exitCode, 0)
        assert.match(r.stderr, /Invalid cross-device link/)
      }
    } finally {
      await b.kill()
    }
    assert.equal(await Volume.destroy(vol.volumeId), true)
    await sleep(500)
    assert.equal(readFileSync(join(canaryDir, 'canary'), 'utf8'), 'canary\n', 'deleting the volume did not follow its symlinks')
  } finally {
    rmSync(canaryDir, { recursive: true, force: true })
  }
})

const hostMount = (entries) => ({ metadata: { 'host-mount': typeof entries === 'string' ? entries : JSON.stringify(entries) } })

test('host mounts under host_mount_roots: ownership, readOnly is EROFS', async () => {
  const sbx = await Sandbox.create({
    ...hostMount([
      { hostPath: join(hostRoot, 'ws'), mountPath: '/workspace', readOnly: false },
      { hostPath: join(hostRoot, 'ro'), mountPath: '/home/user/ro', readOnly: true },
    ]),
  })
  try {
    assert.equal((await sh(sbx, 'cat /workspace/from-host; stat -c %U /workspace/from-host')).stdout, 'hello from the host\nuser\n')
    assert.equal((await sh(sbx, 'echo out > /workspace/result')).exitCode, 0)
    const st = statSync(join(hostRoot, 'ws', 'result'))
    assert.equal(st.uid, 1000, 'written as the canonical user id')
    assert.equal((await sh(sbx, 'cat /home/user/ro/data')).stdout, 'read only\n')
    for (const u of ['user', 'root']) {
      const w = await sh(sbx, 'echo x > /home/user/ro/new', { user: u })
      assert.notEqual(w.exitCode, 0)
      assert.match(w.stderr, /Read-only file system/)
      const py = await sh(sbx, `python3 -c 'import os,errno
try: os.open("/home/user/ro/data", os.O_WRONLY)
except OSError as e: print(errno.errorcode[e.errno])'`, { user: u })
      assert.equal(py.stdout.trim(), 'EROFS')
    }
    assert.ok(!existsSync(join(hostRoot, 'ro', 'new')))
  } finally {
    await sbx.kill()
  }
  assert.ok(existsSync(join(hostRoot, 'ws', 'result')), 'killing the sandbox leaves host files alone')
})

test('host mounts are scoped to teams: another team\'s directory is 403, a planted link is refused at resume', async () => {
  const other = { url: d.url, apiKey: otherTeamKey('team-x') }
  // team-x's tree, from the default team: 403, nothing made
  const before = await sandboxCount()
  let r = await api(d, 'POST', '/v2/sandboxes', hostMount([{ hostPath: join(tenants, 'team-x', 'ws'), mountPath: '/w' }]))
  assert.equal(r.status, 403, r.text)
  assert.match(r.json.message, /another team's host mount root/)
  r = await api(d, 'POST', '/v2/sandboxes', hostMount([{ hostPath: tenants, mountPath: '/w' }]))
  assert.equal(r.status, 403, r.text)
  assert.equal(await sandboxCount(), before)
  // team-x mounts its own
  r = await api(other, 'POST', '/v2/sandboxes', { timeout: 60, ...hostMount([{ hostPath: join(tenants, 'team-x', 'ws'), mountPath: '/w' }]) })
  assert.equal(r.status, 201, r.text)
  await api(other, 'DELETE', `/sandboxes/${r.json.sandboxID}`)
  // the default team mounts its ws and ws/sub, then swaps sub for a link
  // into team-x's tree (a relative one: it stays beneath the root)
  const sbx = await Sandbox.create({
    timeoutMs: 120_000,
    ...hostMount([
      { hostPath: join(tenants, 'default', 'ws'), mountPath: '/workspace' },
      { hostPath: join(tenants, 'default', 'ws', 'sub'), mountPath: '/sub' },
    ]),
  })
  try {
    assert.equal((await sh(sbx, 'cat /sub/owner')).stdout, 'default\n')
    const plant = await sh(sbx, 'mv /workspace/sub /workspace/sub.old && ln -s ../../team-x/ws/sub /workspace/sub')
    assert.equal(plant.exitCode, 0, plant.stderr)
    // release its memory: the resume mounts everything again, from the paths
    assert.equal((await api(d, 'POST', `/sandboxes/${sbx.sandboxId}/pause`, { memory: false })).status, 204)
    r = await api(d, 'POST', `/sandboxes/${sbx.sandboxId}/resume`, {})
    assert.notEqual(r.status, 200, r.text)
    assert.notEqual(r.status, 201, r.text)
    assert.match(r.text, /symlinks are not followed/)
  } finally {
    await sbx.kill().catch(() => {})
  }
  assert.equal(readFileSync(join(tenants, 'team-x', 'ws', 'sub', 'owner'), 'utf8'), 'team-x\n')
})

test('host mount rejections: 400, nothing mounted, no sandbox', async () => {
  const before = await sandboxCount()
  // mounts that involve this test's directories (other tests on the host may mount things meanwhile)
  const ours = () => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(hostRoot) || l.includes(d.base)).length
  const mountsBefore = ours()
  const cases = [
    [[{ hostPath: outside, mountPath: '/w' }], /not under an allowed/],
    [[{ hostPath: '/etc', mountPath: '/w' }], /not under an allowed/],
    [[{ hostPath: hostRoot + '/../' + outside.split('/').pop(), mountPath: '/w' }], /'\.\.'/],
    [[{ hostPath: join(hostRoot, 'ws') + '/../../etc', mountPath: '/w' }], /'\.\.'/],
    [[{ hostPath: join(hostRoot, 'evil-abs'), mountPath: '/w' }], /symlinks are not followed/],
    [[{ hostPath: join(hostRoot, 'evil-rel'), mountPath: '/w' }], /symlinks are not followed/],
    [[{ hostPath: join(hostRoot, 'inside'), mountPath: '/w' }], /symlinks are not followed/],
    [[{ hostPath: join(hostRoot, 'missing'), mountPath: '/w' }], /does not exist/],
    [[{ hostPath: join(hostRoot, 'ro', 'data'), mountPath: '/w' }], /not a directory/],
    [[{ hostPath: 'relative/ws', mountPath: '/w' }], /not absolute/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/proc' }], /\/proc/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/proc/sys/x' }], /\/proc/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/usr' }], /\/usr/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/usr/lib/x' }], /\/usr/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/sys' }], /\/sys/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/dev/shm' }], /\/dev/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/' }], /root/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: 'w' }], /not absolute/],
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/w', readOnly: 'yes' }], /boolean/],
    // one good entry and one bad: nothing at all
    [[{ hostPath: join(hostRoot, 'ws'), mountPath: '/ok' }, { hostPath: '/etc', mountPath: '/w' }], /not under/],
    ['[{"hostPath":', /not valid JSON/],
    ['{"hostPath":"/x","mountPath":"/w"}', /array/],
    ['["' + hostRoot + ':/w"]', /object/],
  ]
  for (const [entries, msg] of cases) {
    const r = await api(d, 'POST', '/v2/sandboxes', hostMount(entries))
    assert.equal(r.status, 400, `${JSON.stringify(entries)} -> ${r.status} ${r.text}`)
    assert.equal(r.json.code, 400)
    assert.match(r.json.message, msg)
  }
  // the SDK sees the same refusal
  await assert.rejects(Sandbox.create(hostMount([{ hostPath: '/etc', mountPath: '/w' }])))
  assert.equal(await sandboxCount(), before, 'no sandbox was created')
  assert.equal(sandboxDirs(), before)
  assert.equal(ours(), mountsBefore, 'nothing was mounted')
  assert.equal(readFileSync(join(outside, 'secret'), 'utf8'), 'host secret\n')
})

test('a server without host_mount_roots refuses host mounts; volume_max_size caps every volume', async () => {
  const d2 = await startDaemon(['--volume-max-size', '16M'])
  try {
    const dflt = await api(d2, 'POST', '/volumes', { name: 'dflt' })
    assert.equal(dflt.status, 201)
    assert.equal(dflt.json.size, 16 << 20, 'no size: the ceiling')
    const big = await api(d2, 'POST', '/volumes', { name: 'big', size: '64M' })
    assert.equal(big.status, 400)
    assert.match(big.json.message, /volume_max_size/)
    assert.equal((await api(d2, 'POST', '/volumes', { name: 'small', size: '8M' })).json.size, 8 << 20)
    assert.ok(existsSync(join(d2.base, 'data', 'volumes', dflt.json.volumeID + '.img')))
    const r = await api(d2, 'POST', '/v2/sandboxes', hostMount([{ hostPath: join(hostRoot, 'ws'), mountPath: '/w' }]))
    assert.equal(r.status, 400)
    assert.match(r.json.message, /host mounts are disabled/)
    assert.equal((await api(d2, 'GET', '/v2/sandboxes')).json.length, 0)
  } finally {
    const st = await d2.stop()
    // startDaemon pointed the SDK at d2: point it back
    process.env.E2B_API_KEY = d.apiKey
    process.env.E2B_API_URL = d.url
    process.env.E2B_SANDBOX_URL = d.url
    assert.equal(st.code, 0)
  }
})

test('volumes survive a daemon killed with SIGKILL; after the restart the capped image mount is reused, not stacked', async () => {
  const d2 = await startDaemon()
  let d3
  try {
    const plain = await api(d2, 'POST', '/volumes', { name: 'keep' })
    const capped = await api(d2, 'POST', '/volumes', { name: 'keepcap', size: '8M' })
    assert.equal(plain.status, 201)
    assert.equal(capped.status, 201)
    const mp = join(d2.base, 'run', 'volumes', capped.json.volumeID)
    const stacked = () => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4] === mp).length
    const sbx = await Sandbox.create({ volumeMounts: { '/a': 'keep', '/b': 'keepcap' } })
    await sh(sbx, 'echo plain > /a/f && echo capped > /b/f')
    assert.equal(stacked(), 1)
    process.kill(d2.pid, 'SIGKILL')
    await sleep(300)
    // as if the daemon had died in the middle of deletions: one volume was
    // moved aside but its row never deleted (must come back), and one was
    // moved aside after its row was deleted (must go)
    const vroot = join(d2.base, 'data', 'volumes')
    renameSync(join(vroot, plain.json.volumeID), join(vroot, '.trash-' + plain.json.volumeID))
    mkdirSync(join(vroot, '.trash-v0123456789abcdef0123', 'sub'), { recursive: true })
    d3 = await d2.restart()
    assert.ok(existsSync(join(vroot, plain.json.volumeID, 'f')), 'the unfinished deletion was undone')
    for (let i = 0; i < 50 && existsSync(join(vroot, '.trash-v0123456789abcdef0123')); i++) await sleep(100)
    assert.ok(!existsSync(join(vroot, '.trash-v0123456789abcdef0123')), 'a deleted volume is purged')
    const names = (await api(d3, 'GET', '/volumes')).json.map((v) => v.name).sort()
    assert.deepEqual(names, ['keep', 'keepcap'])
    const again = await Sandbox.create({ volumeMounts: { '/a': 'keep', '/b': 'keepcap' } })
    try {
      assert.equal((await sh(again, 'cat /a/f /b/f; stat -c %U /a/f /b/f')).stdout, 'plain\ncapped\nuser\nuser\n')
      assert.equal(stacked(), 1, 'one mount of the image, shared')
    } finally {
      await again.kill()
    }
    // the first sandbox outlived its daemon and was adopted: its volumes are
    // still mounted there, so they cannot be deleted until it is gone
    assert.equal((await api(d3, 'DELETE', '/volumes/keep')).status, 409)
    const adopted = await Sandbox.connect(sbx.sandboxId)
    assert.equal((await sh(adopted, 'cat /a/f /b/f')).stdout, 'plain\ncapped\n', 'the adopted sandbox still has its volumes')
    await adopted.kill()
    assert.equal((await api(d3, 'DELETE', '/volumes/keep')).status, 204)
    assert.equal((await api(d3, 'DELETE', '/volumes/keepcap')).status, 204)
    assert.equal(stacked(), 0, 'the image is unmounted')
  } finally {
    const st = await (d3 ?? d2).stop()
    process.env.E2B_API_KEY = d.apiKey
    process.env.E2B_API_URL = d.url
    process.env.E2B_SANDBOX_URL = d.url
    assert.equal(st.code, 0)
  }
})

test('a capped volume is one file system even if its host mount point is lost while sandboxes use it', async () => {
  const r = await api(d, 'POST', '/volumes', { name: 'onefs', size: '8M' })
  assert.equal(r.status, 201)
  const image = volumeDir(r.json.volumeID) + '.img'
  const mp = join(d.base, 'run', 'volumes', r.json.volumeID)
  const loopsOf = () => readdirSync('/sys/block').filter((n) => n.startsWith('loop')).filter((n) => {
    try { return readFileSync(`/sys/block/${n}/loop/backing_file`, 'utf8').trim() === image } catch { return false }
  })
  const a = await Sandbox.create({ volumeMounts: { '/v': 'onefs' } })
  let b
  try {
    await sh(a, 'echo 1 > /v/one')
    assert.equal(loopsOf().length, 1)
    // the host's mount point goes away (a wiped run dir); A keeps its clone
    execFileSync('umount', ['-l', mp])
    b = await Sandbox.create({ volumeMounts: { '/v': 'onefs' } })
    assert.equal(loopsOf().length, 1, 'the second sandbox uses the same loop device')
    // one file system: what A writes now, B sees at once
    await sh(a, 'echo 2 > /v/two')
    assert.equal((await sh(b, 'cat /v/one /v/two')).stdout, '1\n2\n')
  } finally {
    await a.kill()
    await b?.kill()
  }
  assert.equal((await api(d, 'DELETE', '/volumes/onefs')).status, 204)
})
