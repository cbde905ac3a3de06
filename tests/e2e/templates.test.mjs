// Templates through the unmodified e2b SDK: `hutch template build` from a
// directory, a tar and an OCI image layout (layers with a whiteout and an
// opaque directory), created by templateID (Sandbox.create('name')) with the
// template's defaults (env, cwd, user); GET/DELETE /templates and team
// scoping; templates across a daemon restart and a memory release; and
// hostile archives (absolute paths, '..', a symlink then a write through it,
// a hard link out, device nodes, a too-big file) that are refused or
// neutralised with nothing written outside the build directory; and
// `hutch template rm` with its refusals (daemon running, base, bad ids, a
// symlink, in use) and a removal that survives a restart.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync, existsSync, readdirSync, rmSync, readFileSync, symlinkSync, mkdirSync, lstatSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, api, hutchBin, sleep, makeRoot, runResult as sh } from './harness.mjs'

let d, work, outside
const dataDir = () => join(d.base, 'data')
const tplDir = () => join(dataDir(), 'templates')

function build(name, args, env = {}) {
  return spawnSync(hutchBin, ['template', 'build', name, '--data-dir', dataDir(), ...args], {
    env: { ...d.env, ...env }, encoding: 'utf8',
  })
}

function mustBuild(name, args) {
  const r = build(name, args)
  assert.equal(r.status, 0, `build ${name}: ${r.stderr}`)
  return r
}

// python3 writes tars and OCI layouts: full control over names and types
function py(script, ...args) {
  const r = spawnSync('python3', ['-c', script, ...args], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  return r.stdout
}

const noLeftovers = () => assert.deepEqual(readdirSync(tplDir()).filter((n) => n.startsWith('.')), [], 'no build dir left')

before(async () => {
  d = await startDaemon()
  work = mkdtempSync(join(tmpdir(), 'hutch-e2e-tpl-'))
  outside = mkdtempSync(join(tmpdir(), 'hutch-e2e-tpl-outside-'))
  writeFileSync(join(outside, 'canary'), 'untouched\n')
  makeRoot(join(work, 'root'))
  writeFileSync(join(work, 'root', 'marker'), 'from the dir\n')
})
after(async () => {
  const st = await d?.stop()
  rmSync(work, { recursive: true, force: true })
  rmSync(outside, { recursive: true, force: true })
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

test('a template built from a directory: create by templateID, marker, env, cwd and user from its defaults', async () => {
  // built while the daemon runs: it appears without a restart
  mustBuild('dirtpl', ['--from', join(work, 'root'), '--env', 'TPL_VAR=from-template', '--cwd', '/tmp', '--memory', '256'])
  noLeftovers()
  const sbx = await Sandbox.create('dirtpl', { envs: { OWN: 'mine' } })
  try {
    assert.equal((await sh(sbx, 'cat /marker')).stdout, 'from the dir\n')
    assert.equal((await sh(sbx, 'echo $TPL_VAR $OWN')).stdout, 'from-template mine\n')
    assert.equal((await sh(sbx, 'pwd')).stdout, '/tmp\n')
    assert.equal((await sh(sbx, 'id -un; id -u')).stdout, 'user\n1000\n')
    // its own /usr: the host's python3 is not there
    assert.equal((await sh(sbx, 'ls /usr/bin/python3')).exitCode, 2)
    // a command's own cwd and user still win
    assert.equal((await sh(sbx, 'pwd; id -u', { cwd: '/home/user', user: 'root' })).stdout, '/home/user\n0\n')
    const info = await sbx.getInfo()
    assert.equal(info.templateId, 'dirtpl')
    assert.equal(info.memoryMB, 256)
    // the template is read-only and shared: writes land in the sandbox's own layer
    assert.equal((await sh(sbx, 'echo changed > /marker && cat /marker', { user: 'root' })).stdout, 'changed\n')
    assert.equal(readFileSync(join(tplDir(), 'dirtpl', 'rootfs', 'marker'), 'utf8'), 'from the dir\n')
    const other = await Sandbox.create('dirtpl')
    assert.equal((await sh(other, 'cat /marker')).stdout, 'from the dir\n')
    await other.kill()
  } finally {
    await sbx.kill()
  }
  const list = await api(d, 'GET', '/templates')
  assert.equal(list.status, 200)
  const t = list.json.find((x) => x.templateID === 'dirtpl')
  assert.ok(t, JSON.stringify(list.json))
  assert.deepEqual(t.aliases, ['dirtpl'])
  assert.equal(t.public, true)
  assert.equal(t.memoryMB, 256)
  assert.equal(t.envs.TPL_VAR, 'from-template')
  assert.ok(list.json.find((x) => x.templateID === 'base'))
  assert.equal((await api(d, 'GET', '/templates/aliases/dirtpl')).status, 200)
  // the same name again is refused: delete first
  const again = build('dirtpl', ['--from', join(work, 'root')])
  assert.notEqual(again.status, 0)
  assert.match(again.stderr, /exists/)
})

test('a template from a gzip tar, and from an OCI layout with a whiteout and an opaque directory', async () => {
  const tgz = join(work, 'root.tar.gz')
  execFileSync('tar', ['-C', join(work, 'root'), '-czf', tgz, '.'])
  mustBuild('tartpl', ['--from-tar', tgz])
  const s1 = await Sandbox.create('tartpl')
  assert.equal((await sh(s1, 'cat /marker')).stdout, 'from the dir\n')
  await s1.kill()

  // layer 1: the root, plus /gone and /opq/{a,b}; layer 2 (zstd unsupported
  // in python, so gzip): a whiteout for /gone, an opaque /opq with a new c
  const layout = join(work, 'oci')
  py(`
import tarfile, hashlib, json, os, io, sys, gzip
root, layout = sys.argv[1], sys.argv[2]
os.makedirs(layout + '/blobs/sha256', exist_ok=True)
def blob(data):
    h = hashlib.sha256(data).hexdigest()
    open(layout + '/blobs/sha256/' + h, 'wb').write(data)
    return 'sha256:' + h, len(data)
def add(t, name, data=b'', kind='file'):
    i = tarfile.TarInfo(name)
    if kind == 'dir':
        i.type = tarfile.DIRTYPE; i.mode = 0o755; t.addfile(i)
    else:
        i.size = len(data); i.mode = 0o644; t.addfile(i, io.BytesIO(data))
b1 = io.BytesIO()
with tarfile.open(fileobj=b1, mode='w') as t:
    t.add(root, arcname='.')
    add(t, 'gone', b'should be whited out\\n')
    add(t, 'opq', kind='dir'); add(t, 'opq/a', b'a\\n'); add(t, 'opq/b', b'b\\n')
b2 = io.BytesIO()
with tarfile.open(fileobj=b2, mode='w') as t:
    add(t, 'opq', kind='dir'); add(t, 'opq/c', b'c\\n'); add(t, 'opq/.wh..wh..opq')
    add(t, '.wh.gone')
    add(t, 'layer2', b'second layer\\n')
l1 = blob(gzip.compress(b1.getvalue()))
l2 = blob(gzip.compress(b2.getvalue()))
cfg = blob(json.dumps({'architecture': 'amd64', 'os': 'linux', 'config': {'Env': ['IMG_VAR=from-image', 'PATH=/usr/bin:/bin'], 'WorkingDir': '/opq'},
    'rootfs': {'type': 'layers', 'diff_ids': []}}).encode())
man = blob(json.dumps({'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',
    'config': {'mediaType': 'application/vnd.oci.image.config.v1+json', 'digest': cfg[0], 'size': cfg[1]},
    'layers': [{'mediaType': 'application/vnd.oci.image.layer.v1.tar+gzip', 'digest': l[0], 'size': l[1]} for l in (l1, l2)]}).encode())
json.dump({'schemaVersion': 2, 'manifests': [{'mediaType': 'application/vnd.oci.image.manifest.v1+json', 'digest': man[0], 'size': man[1],
    'platform': {'architecture': 'amd64', 'os': 'linux'}}]}, open(layout + '/index.json', 'w'))
open(layout + '/oci-layout', 'w').write('{"imageLayoutVersion": "1.0.0"}')
`, join(work, 'root'), layout)
  mustBuild('ocitpl', ['--from-oci', layout])
  const s2 = await Sandbox.create('ocitpl')
  try {
    assert.equal((await sh(s2, 'cat /layer2')).stdout, 'second layer\n')
    assert.equal((await sh(s2, 'ls /gone')).exitCode, 2, 'the whiteout removed /gone')
    assert.equal((await sh(s2, 'ls -A /opq')).stdout, 'c\n', 'the opaque dir hides the lower layer')
    assert.equal((await sh(s2, 'echo $IMG_VAR; pwd')).stdout, 'from-image\n/opq\n', 'the image config gives defaults')
    assert.equal((await sh(s2, 'id -un')).stdout, 'user\n')
  } finally {
    await s2.kill()
  }
  // a blob that does not match its digest is refused
  const man = JSON.parse(readFileSync(join(layout, 'index.json'))).manifests[0].digest.slice(7)
  const manifest = JSON.parse(readFileSync(join(layout, 'blobs', 'sha256', man)))
  const layerPath = join(layout, 'blobs', 'sha256', manifest.layers[1].digest.slice(7))
  writeFileSync(layerPath, Buffer.concat([readFileSync(layerPath), Buffer.from('x')]))
  const bad = build('ocibad', ['--from-oci', layout])
  assert.notEqual(bad.status, 0)
  assert.match(bad.stderr, /sha256/)
  assert.equal(existsSync(join(tplDir(), 'ocibad')), false)
  noLeftovers()
})

test('hostile archives are refused or neutralised; nothing outside the build directory changes', async () => {
  const mk = (name, spec) => {
    const p = join(work, name + '.tar')
    py(`
import tarfile, io, sys, json
spec = json.loads(sys.argv[2])
with tarfile.open(sys.argv[1], 'w') as t:
    for e in spec:
        i = tarfile.TarInfo(e['name'])
        kind = e.get('kind', 'file')
        if kind == 'symlink': i.type = tarfile.SYMTYPE; i.linkname = e['target']; t.addfile(i)
        elif kind == 'hardlink': i.type = tarfile.LNKTYPE; i.linkname = e['target']; t.addfile(i)
        elif kind == 'chr': i.type = tarfile.CHRTYPE; i.devmajor = 1; i.devminor = 3; t.addfile(i)
        elif kind == 'fifo': i.type = tarfile.FIFOTYPE; t.addfile(i)
        elif kind == 'big': i.size = e['size']; t.addfile(i, io.BytesIO(b'\\0' * e['size']))
        else:
            data = e.get('data', 'pwned\\n').encode(); i.size = len(data); i.mode = e.get('mode', 0o644); t.addfile(i, io.BytesIO(data))
`, p, JSON.stringify(spec))
    return p
  }
  const refused = [
    ['abs', [{ name: join(outside, 'pwned-abs') }], /absolute/],
    ['dotdot', [{ name: '../../../../../../' + outside.slice(1) + '/pwned-dotdot' }], /'\.\.'/],
    ['symlink-write', [{ name: 'evil', kind: 'symlink', target: outside }, { name: 'evil/pwned-link' }], /./],
    ['hardlink-out', [{ name: 'h', kind: 'hardlink', target: '../../../../../etc/passwd' }], /'\.\.'/],
    ['big', [{ name: 'big', kind: 'big', size: 3 << 20 }], /size cap/],
  ]
  for (const [name, spec, why] of refused) {
    const r = build('hostile-' + name, ['--from-tar', mk(name, spec), '--max-size', '2'])
    assert.notEqual(r.status, 0, `${name} must be refused`)
    assert.match(r.stderr, why, name)
    assert.equal(existsSync(join(tplDir(), 'hostile-' + name)), false)
  }
  noLeftovers()
  assert.deepEqual(readdirSync(outside), ['canary'], 'nothing was written outside')
  assert.equal(readFileSync(join(outside, 'canary'), 'utf8'), 'untouched\n')

  // neutralised: a symlink to the host's directory that the layer then
  // writes through resolves inside the template; device nodes and fifos
  // are dropped; setuid bits are cleared
  const relOut = '../../../../../../../..' + outside
  const ok = build('hostile-neutral', ['--from-tar', mk('neutral', [
    { name: 'tmp', kind: 'file', data: '' },
    { name: 'up', kind: 'symlink', target: relOut },
    { name: 'dev/mem', kind: 'chr' },
    { name: 'pipe', kind: 'fifo' },
    { name: 'suid', mode: 0o4755 },
    { name: 'etc', kind: 'symlink', target: '/etc' },
  ])])
  assert.equal(ok.status, 0, ok.stderr)
  const rootfs = join(tplDir(), 'hostile-neutral', 'rootfs')
  assert.equal(existsSync(join(rootfs, 'dev', 'mem')), false)
  assert.equal(existsSync(join(rootfs, 'pipe')), false)
  assert.equal(execFileSync('stat', ['-c', '%a', join(rootfs, 'suid')]).toString().trim(), '755')
  // etc and tmp became real directories of the template; the passwd that
  // was added is the template's, not the host's
  assert.equal(execFileSync('stat', ['-c', '%F', join(rootfs, 'etc')]).toString().trim(), 'directory')
  assert.equal(execFileSync('stat', ['-c', '%F', join(rootfs, 'tmp')]).toString().trim(), 'directory')
  assert.match(readFileSync(join(rootfs, 'etc', 'passwd'), 'utf8'), /^user:x:1000:/m)
  assert.deepEqual(readdirSync(outside), ['canary'])
  // the layer writing through its own symlink lands inside the tree
  const through = build('hostile-through', ['--from-tar', mk('through', [
    { name: 'd', kind: 'file', data: '' },
    { name: 'x', kind: 'symlink', target: '/' },
    { name: 'x/inside-root', data: 'here\n' },
  ])])
  assert.equal(through.status, 0, through.stderr)
  assert.equal(readFileSync(join(tplDir(), 'hostile-through', 'rootfs', 'inside-root'), 'utf8'), 'here\n')
  assert.equal(existsSync('/inside-root'), false)
  // too many entries
  const many = build('hostile-many', ['--from-tar', mk('many', Array.from({ length: 20 }, (_, i) => ({ name: 'f' + i }))), '--max-files', '10'])
  assert.notEqual(many.status, 0)
  assert.match(many.stderr, /cap of 10 files/)
  noLeftovers()
})

test('team scoping and DELETE /templates: another team\'s template is 404; in use is 409', async () => {
  // a private template of another team
  mustBuild('private-other', ['--from', join(work, 'root'), '--team', 'someone-else'])
  assert.equal((await api(d, 'GET', '/templates/aliases/private-other')).status, 404)
  assert.equal((await api(d, 'GET', '/templates/private-other')).status, 404)
  assert.ok(!(await api(d, 'GET', '/templates')).json.find((t) => t.templateID === 'private-other'))
  await assert.rejects(Sandbox.create('private-other'), /not found/i)
  assert.equal((await api(d, 'DELETE', '/templates/private-other')).status, 404)
  // our team's own private template
  const team = execFileSync('python3', ['-c', 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select team from api_keys limit 1").fetchone()[0])', join(dataDir(), 'hutch.db')]).toString().trim()
  mustBuild('mine', ['--from', join(work, 'root'), '--team', team])
  const t = (await api(d, 'GET', '/templates/mine')).json
  assert.equal(t.public, false)
  const sbx = await Sandbox.create('mine')
  const busy = await api(d, 'DELETE', '/templates/mine')
  assert.equal(busy.status, 409, busy.text)
  await sbx.pause()
  assert.equal((await api(d, 'DELETE', '/templates/mine')).status, 409, 'a paused sandbox uses it too')
  await Sandbox.kill(sbx.sandboxId)
  assert.equal((await api(d, 'DELETE', '/templates/mine')).status, 204)
  assert.equal(existsSync(join(tplDir(), 'mine')), false)
  await assert.rejects(Sandbox.create('mine'), /not found/i)
  // operator templates (public) and base cannot be deleted through the API
  assert.equal((await api(d, 'DELETE', '/templates/dirtpl')).status, 403)
  assert.equal((await api(d, 'DELETE', '/templates/base')).status, 403)
})

test('restart and memory release: a template sandbox is re-adopted and restarts on the same template', async () => {
  const sbx = await Sandbox.create('dirtpl', { timeoutMs: 120000 })
  await sh(sbx, 'echo kept > /home/user/kept')
  d.pid && process.kill(d.pid, 'SIGKILL')
  d = await d.restart()
  const again = await Sandbox.connect(sbx.sandboxId)
  assert.equal((await sh(again, 'cat /marker /home/user/kept')).stdout, 'from the dir\nkept\n')
  assert.ok((await api(d, 'GET', '/templates')).json.find((t) => t.templateID === 'dirtpl'), 'templates survive a restart')
  // pause with memory released, then resume: a fresh init over the same files and template
  assert.equal((await api(d, 'POST', `/sandboxes/${sbx.sandboxId}/pause`, { memory: false })).status, 204)
  const resumed = await Sandbox.connect(sbx.sandboxId)
  assert.equal((await sh(resumed, 'cat /marker /home/user/kept; echo $TPL_VAR; pwd')).stdout, 'from the dir\nkept\nfrom-template\n/tmp\n')
  assert.equal((await sh(resumed, 'ls /usr/bin/python3')).exitCode, 2, 'still its own /usr')
  await resumed.kill()
})

test('POST /templates builds a team template from an uploaded tar; a hostile upload is a 400 and leaves nothing', async () => {
  const tgz = join(work, 'upload.tar.gz')
  execFileSync('tar', ['-C', join(work, 'root'), '-czf', tgz, '.'])
  const post = (query, body) => fetch(`${d.url}/templates?${query}`, {
    method: 'POST', headers: { 'X-API-KEY': d.apiKey, 'Content-Type': 'application/octet-stream' }, body,
  })
  const res = await post('name=uploaded&memoryMB=300&cwd=/home/user', readFileSync(tgz))
  const body = await res.json()
  assert.equal(res.status, 201, JSON.stringify(body))
  assert.equal(body.templateID, 'uploaded')
  assert.equal(body.public, false)
  assert.equal(body.memoryMB, 300)
  assert.ok(existsSync(join(tplDir(), 'uploaded', 'rootfs', 'opt', 'hutch', 'bin', 'sudo')), 'the daemon installed its sudo shim')
  const sbx = await Sandbox.create('uploaded')
  assert.equal((await sh(sbx, 'cat /marker; pwd')).stdout, 'from the dir\n/home/user\n')
  await sbx.kill()
  assert.equal((await post('name=uploaded', readFileSync(tgz))).status, 409)
  assert.equal((await post('name=Bad_Name', readFileSync(tgz))).status, 400)
  assert.equal((await post('name=empty', '')).status, 400)
  const evil = py(`
import tarfile, io, sys
b = io.BytesIO()
with tarfile.open(fileobj=b, mode='w') as t:
    i = tarfile.TarInfo(sys.argv[1] + '/pwned-upload'); data = b'x'; i.size = 1; t.addfile(i, io.BytesIO(data))
sys.stdout.write(b.getvalue().hex())
`, outside)
  const bad = await post('name=evil-upload', Buffer.from(evil, 'hex'))
  const badBody = await bad.json()
  assert.equal(bad.status, 400, JSON.stringify(badBody))
  assert.match(badBody.message, /absolute/)
  assert.equal(existsSync(join(tplDir(), 'evil-upload')), false)
  assert.deepEqual(readdirSync(outside), ['canary'])
  noLeftovers()
  assert.equal((await api(d, 'DELETE', '/templates/uploaded')).status, 204)
})

test('a start command runs at sandbox start and create answers only after the readiness check passes; a failing check fails the create and leaves no sandbox', async () => {
  mustBuild('startable', ['--from', join(work, 'root'), '--env', 'GREETING=hi',
    '--start-cmd', 'sleep 1; echo "$GREETING from $(id -un)" > /tmp/ready-flag; exec sleep 600',
    '--ready-cmd', 'cat /tmp/ready-flag'])
  const t0 = Date.now()
  const sbx = await Sandbox.create('startable')
  try {
    assert.ok(Date.now() - t0 >= 900, 'create waited for the readiness check')
    assert.equal((await sh(sbx, 'cat /tmp/ready-flag')).stdout, 'hi from user\n')
    const procs = await sbx.commands.list()
    assert.ok(procs.find((p) => p.tag === 'template-start'), JSON.stringify(procs))
  } finally {
    await sbx.kill()
  }
  const before = (await api(d, 'GET', '/v2/sandboxes')).json.length
  mustBuild('never-ready', ['--from', join(work, 'root'), '--ready-cmd', 'exit 1', '--ready-timeout', '2'])
  await assert.rejects(Sandbox.create('never-ready'), /readiness check: did not pass within 2 s/)
  assert.equal((await api(d, 'GET', '/v2/sandboxes')).json.length, before, 'nothing half-created')
  mustBuild('bad-start', ['--from', join(work, 'root'), '--start-cmd', 'true', '--user', 'nosuchuser'])
  await assert.rejects(Sandbox.create('bad-start'), /start command/)
  assert.equal((await api(d, 'GET', '/v2/sandboxes')).json.length, before)
})

test('after a memory release, the resume runs the template start command again', async () => {
  mustBuild('restartable', ['--from', join(work, 'root'),
    '--start-cmd', 'echo started >> /home/user/starts; exec sleep 600',
    '--ready-cmd', 'test -s /home/user/starts'])
  const sbx = await Sandbox.create('restartable')
  try {
    assert.equal((await sh(sbx, 'cat /home/user/starts')).stdout, 'started\n')
    assert.equal((await api(d, 'POST', `/sandboxes/${sbx.sandboxId}/pause`, { memory: false })).status, 204)
    const again = await Sandbox.connect(sbx.sandboxId) // a fresh init over the same files
    let starts = ''
    for (let i = 0; i < 50 && starts !== 'started\nstarted\n'; i++) {
      starts = (await sh(again, 'cat /home/user/starts')).stdout
      if (starts !== 'started\nstarted\n') await sleep(200)
    }
    assert.equal(starts, 'started\nstarted\n', 'the start command ran once at create and once after the cold boot')
    const procs = await again.commands.list()
    assert.ok(procs.find((p) => p.tag === 'template-start'), JSON.stringify(procs))
  } finally {
    await sbx.kill()
  }
})

test('hutch template rm: refused while the daemon runs, for base, bad ids, a symlink and a template in use; a removal is gone after a restart', async () => {
  const rm = (...args) => spawnSync(hutchBin, ['template', 'rm', ...args, '--data-dir', dataDir()], { env: d.env, encoding: 'utf8' })
  const stopDaemon = async () => { process.kill(d.pid, 'SIGTERM'); await d.exited }
  mustBuild('rmme', ['--from', join(work, 'root')])
  const sbx = await Sandbox.create('rmme', { timeoutMs: 120000 })
  const id = sbx.sandboxId
  // a daemon on the data dir: refused, it may be building on the template
  let r = rm('rmme')
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stderr, new RegExp(`\\(pid ${d.pid}\\) is using data dir .*stop it first`))
  assert.ok(existsSync(join(tplDir(), 'rmme', 'template.json')))
  // names that are no template id never reach the file system
  r = rm('base')
  assert.equal(r.status, 1)
  assert.match(r.stderr, /'base' cannot be removed/)
  for (const bad of ['..', '../outside', 'a/b', '/etc', 'UPPER', 'x_y', '.delete-rmme', '']) {
    r = rm(bad)
    assert.equal(r.status, 1, `rm '${bad}': ${r.stderr}`)
    assert.match(r.stderr, /is not a template id/)
  }
  assert.deepEqual(readdirSync(outside), ['canary'])
  // the daemon stopped: its sandbox keeps running and is in the store
  await stopDaemon()
  r = rm('rmme')
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stderr, /template 'rmme' is in use by 1 sandbox/)
  assert.ok(existsSync(join(tplDir(), 'rmme', 'rootfs')), 'nothing changed')
  // a symlink at a template's name is refused and left alone, its target untouched
  symlinkSync(outside, join(tplDir(), 'linked'))
  r = rm('linked')
  assert.equal(r.status, 1)
  assert.match(r.stderr, /is not a directory \(a symlink\): refusing/)
  assert.ok(lstatSync(join(tplDir(), 'linked')).isSymbolicLink())
  assert.deepEqual(readdirSync(outside), ['canary'])
  unlinkSync(join(tplDir(), 'linked'))
  // a template whose rootfs is a symlink out: the link goes, never what it points at
  mkdirSync(join(tplDir(), 'rootlink'))
  symlinkSync(outside, join(tplDir(), 'rootlink', 'rootfs'))
  r = rm('rootlink')
  assert.equal(r.status, 0, r.stderr)
  assert.equal(existsSync(join(tplDir(), 'rootlink')), false)
  assert.deepEqual(readdirSync(outside), ['canary'])
  // missing: an error, unless --force
  r = rm('nosuch')
  assert.equal(r.status, 1)
  assert.match(r.stderr, /template 'nosuch' not found/)
  assert.equal(rm('nosuch', '--force').status, 0)
  // its sandbox killed, the template goes
  d = await d.restart()
  await Sandbox.kill(id)
  await stopDaemon()
  r = rm('rmme')
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, 'template rmme removed\n')
  assert.equal(existsSync(join(tplDir(), 'rmme')), false)
  noLeftovers()
  const ls = spawnSync(hutchBin, ['template', 'ls', '--data-dir', dataDir()], { env: d.env, encoding: 'utf8' })
  assert.equal(ls.status, 0)
  assert.doesNotMatch(ls.stdout, /^rmme /m)
  assert.match(ls.stdout, /^dirtpl /m)
  d = await d.restart()
  const list = (await api(d, 'GET', '/templates')).json
  assert.ok(!list.find((t) => t.templateID === 'rmme'), 'gone after a restart')
  assert.ok(list.find((t) => t.templateID === 'dirtpl'), 'the others stay')
  assert.equal((await api(d, 'GET', '/templates/rmme')).status, 404)
  await assert.rejects(Sandbox.create('rmme'), /not found/i)
})
