// What E2B's own SDK tests need beyond the basics (issue 7): signed /files
// URLs, file metadata in xattrs, gzip both ways, sudo, the data plane's
// /health of a dead sandbox, and streams cut when their sandbox is killed.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { gunzipSync, gzipSync } from 'node:zlib'
import { mkdirSync, writeFileSync, rmSync } from 'node:fs'
import { Sandbox, TimeoutError, InvalidArgumentError } from 'e2b'
import { startDaemon, api, sleep } from './harness.mjs'

const confDir = `/tmp/hutch-e2e-compat-${process.pid}`
let d, sbx, other

before(async () => {
  mkdirSync(confDir, { recursive: true })
  // links made with the shared E2B_SANDBOX_URL name no sandbox: this file
  // tests them on first sight, which takes the opt-in token scan
  writeFileSync(`${confDir}/hutch.conf`, 'log_level = debug\nsigned_url.scan = true\n')
  d = await startDaemon(['--config', `${confDir}/hutch.conf`])
  sbx = await Sandbox.create({ timeoutMs: 300_000 })
  other = await Sandbox.create({ timeoutMs: 300_000 })
})
after(async () => {
  await sbx?.kill().catch(() => {})
  await other?.kill().catch(() => {})
  rmSync(confDir, { recursive: true, force: true })
  const st = await d?.stop()
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

// A raw request (node:http: no automatic decompression, any Host header).
function raw(method, url, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

// How the daemon found the sandbox of the n-th signed request from now on.
function resolutionsSince(mark) {
  return [...d.log().slice(mark).matchAll(/signed URL: sandbox found by ([a-z ]+)/g)].map((m) => m[1])
}

test('signed download and upload URLs work without any sandbox header', async () => {
  await sbx.files.write('signed.txt', 'signed content')
  const url = await sbx.downloadUrl('signed.txt')
  assert.match(url, /signature=v1_/)
  const res = await fetch(url)
  assert.equal(res.status, 200)
  assert.equal(await res.text(), 'signed content')

  const up = await sbx.uploadUrl('up/new.txt', { useSignatureExpiration: 60 })
  const form = new FormData()
  form.append('file', 'uploaded through a signed URL')
  const put = await fetch(up, { method: 'POST', body: form })
  assert.equal(put.status, 200)
  assert.deepEqual(await put.json(), [{ name: 'new.txt', path: '/home/user/up/new.txt', type: 'file' }])
  assert.equal(await sbx.files.read('/home/user/up/new.txt'), 'uploaded through a signed URL')

  const rootUrl = await sbx.uploadUrl('r.txt', { user: 'root' })
  const f2 = new FormData()
  f2.append('file', 'as root')
  const r2 = await fetch(rootUrl, { method: 'POST', body: f2 })
  assert.deepEqual(await r2.json(), [{ name: 'r.txt', path: '/root/r.txt', type: 'file' }])
  assert.equal((await sbx.commands.run('stat -c %U /root/r.txt', { user: 'root' })).stdout, 'root\n')
})

test('expired, tampered, reused-for-another-operation and malformed signatures are 401', async () => {
  await sbx.files.write('secret.txt', 'nope')
  const expired = await sbx.downloadUrl('secret.txt', { useSignatureExpiration: -10 })
  let res = await fetch(expired)
  assert.equal(res.status, 401)
  assert.deepEqual(await res.json(), { code: 401, message: 'signature is already expired' })

  const good = new URL(await sbx.downloadUrl('secret.txt', { useSignatureExpiration: 60 }))
  const sig = good.searchParams.get('signature')
  const tampered = new URL(good)
  tampered.searchParams.set('signature', sig.slice(0, -1) + (sig.endsWith('A') ? 'B' : 'A'))
  res = await fetch(tampered)
  assert.equal(res.status, 401)
  assert.deepEqual(await res.json(), { code: 401, message: 'invalid signature' })

  // the signature covers path, user and expiry: changing any of them breaks it
  for (const [k, v] of [['path', 'signed.txt'], ['username', 'root'], ['signature_expiration', String(Math.floor(Date.now() / 1000) + 999)]]) {
    const u = new URL(good)
    u.searchParams.set(k, v)
    res = await fetch(u)
    assert.equal(res.status, 401, `changed ${k}`)
  }
  // a read signature does not allow a write
  const form = new FormData()
  form.append('file', 'overwritten?')
  res = await fetch(good, { method: 'POST', body: form })
  assert.equal(res.status, 401)
  assert.equal(await sbx.files.read('secret.txt'), 'nope')

  for (const bad of ['v1_short', 'v2_' + sig.slice(3), '', 'v1_' + '!'.repeat(43)]) {
    const u = new URL(good)
    u.searchParams.set('signature', bad)
    res = await fetch(u)
    assert.equal(res.status, 401, `signature ${bad}`)
  }
  const u = new URL(good)
  u.searchParams.set('signature_expiration', '-5')
  assert.equal((await fetch(u)).status, 401)
})

test('the sandbox of a signed URL is found by host name, then by the signature index; a scan only once', async () => {
  await other.files.write('o.txt', 'other sandbox')
  const url = await other.downloadUrl('o.txt')

  // first sight, no name in the request: the tokens are tried once ...
  let mark = d.log().length
  assert.equal(await (await fetch(url)).text(), 'other sandbox')
  // ... and every later use of the same URL is one lookup in the index
  assert.equal(await (await fetch(url)).text(), 'other sandbox')
  assert.equal(await (await fetch(url)).text(), 'other sandbox')
  await sleep(100)
  assert.deepEqual(resolutionsSince(mark), ['token scan', 'signature index', 'signature index'])

  // E2B's per-sandbox host name names the sandbox: no search at all
  mark = d.log().length
  const withHost = await raw('GET', url, { headers: { Host: `49983-${other.sandboxId}.hutch.test` } })
  assert.equal(withHost.status, 200)
  assert.equal(withHost.body.toString(), 'other sandbox')
  // a host naming another sandbox is checked against that one only
  const wrongHost = await raw('GET', url, { headers: { Host: `49983-${sbx.sandboxId}.hutch.test` } })
  assert.equal(wrongHost.status, 401)
  await sleep(100)
  assert.deepEqual(resolutionsSince(mark), ['host name'])
})

test('a signed URL of a killed sandbox stops working', async () => {
  const s = await Sandbox.create({ timeoutMs: 60_000 })
  await s.files.write('x.txt', 'x')
  const url = await s.downloadUrl('x.txt')
  assert.equal((await fetch(url)).status, 200)
  await s.kill()
  assert.equal((await fetch(url)).status, 401)
})

// (keys travel as header names, which HTTP clients may lowercase: Node does)
test('file metadata: X-Metadata-* on upload, user.e2b.* xattrs, returned on write, info, list and rename', async () => {
  const info = await sbx.files.write('meta/a.txt', 'content', { metadata: { author: 'mish', 'x-y_z.1': 'v a l' } })
  assert.deepEqual(info.metadata, { author: 'mish', 'x-y_z.1': 'v a l' })
  assert.deepEqual((await sbx.files.getInfo('meta/a.txt')).metadata, { author: 'mish', 'x-y_z.1': 'v a l' })
  const listed = (await sbx.files.list('meta')).find((e) => e.name === 'a.txt')
  assert.deepEqual(listed.metadata, { author: 'mish', 'x-y_z.1': 'v a l' })
  const moved = await sbx.files.rename('meta/a.txt', 'meta/b.txt')
  assert.deepEqual(moved.metadata, { author: 'mish', 'x-y_z.1': 'v a l' })

  // they are plain xattrs inside the sandbox, both ways
  const py = `import os; print(os.getxattr('/home/user/meta/b.txt', 'user.e2b.author').decode())`
  assert.equal((await sbx.commands.run(`python3 -c "${py}"`)).stdout, 'mish\n')
  await sbx.commands.run(`python3 -c "import os; os.setxattr('/home/user/meta/b.txt', 'user.e2b.added', b'by hand'); os.setxattr('/home/user/meta/b.txt', 'user.other', b'not metadata')"`)
  assert.deepEqual((await sbx.files.getInfo('meta/b.txt')).metadata, { author: 'mish', 'x-y_z.1': 'v a l', added: 'by hand' })

  // an upload replaces the metadata, also with none; octet-stream carries it too
  await sbx.files.write('meta/b.txt', 'again', { metadata: { only: 'this' }, useOctetStream: true })
  assert.deepEqual((await sbx.files.getInfo('meta/b.txt')).metadata, { only: 'this' })
  const plain = await sbx.files.write('meta/b.txt', 'plain')
  assert.equal(plain.metadata, undefined)
  assert.equal((await sbx.files.getInfo('meta/b.txt')).metadata, undefined)

  await assert.rejects(sbx.files.write('meta/c.txt', 'x', { metadata: { 'bad key': 'v' } }), InvalidArgumentError)
})

test('malformed metadata headers are a 400 and write nothing', async () => {
  const url = `${d.url}/files?path=${encodeURIComponent('/home/user/meta/never.txt')}`
  const headers = {
    'E2b-Sandbox-Id': sbx.sandboxId,
    'X-Access-Token': sbx.envdAccessToken,
    'Content-Type': 'application/octet-stream',
  }
  for (const extra of [{ ['X-Metadata-' + 'k'.repeat(300)]: 'v' }, { 'X-Metadata-ok': 'é' }]) {
    const res = await raw('POST', url, { headers: { ...headers, ...extra }, body: 'x' })
    assert.equal(res.status, 400, JSON.stringify(Object.keys(extra)))
  }
  assert.equal(await sbx.files.exists('/home/user/meta/never.txt'), false)
})

test('gzip: compressed uploads are inflated, downloads are compressed when asked', async () => {
  const text = 'compress me '.repeat(5000)
  await sbx.files.write('gz/up.txt', text, { gzip: true })
  assert.equal(await sbx.files.read('gz/up.txt'), text)
  assert.equal(await sbx.files.read('gz/up.txt', { gzip: true }), text)

  const url = `${d.url}/files?path=${encodeURIComponent('/home/user/gz/up.txt')}`
  const headers = { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': sbx.envdAccessToken }
  const zipped = await raw('GET', url, { headers: { ...headers, 'Accept-Encoding': 'gzip' } })
  assert.equal(zipped.status, 200)
  assert.equal(zipped.headers['content-encoding'], 'gzip')
  assert.ok(zipped.body.length < text.length / 10, `compressed to ${zipped.body.length} bytes`)
  assert.equal(gunzipSync(zipped.body).toString(), text)
  for (const accept of [undefined, 'identity', 'gzip;q=0', 'br']) {
    const res = await raw('GET', url, { headers: accept ? { ...headers, 'Accept-Encoding': accept } : headers })
    assert.equal(res.headers['content-encoding'], undefined, `Accept-Encoding ${accept}`)
    assert.equal(res.body.toString(), text)
  }
  // an empty file compressed is still a valid gzip stream
  await sbx.files.write('gz/empty', '')
  const empty = await raw('GET', `${d.url}/files?path=%2Fhome%2Fuser%2Fgz%2Fempty`, { headers: { ...headers, 'Accept-Encoding': 'gzip' } })
  assert.equal(gunzipSync(empty.body).length, 0)
  // a corrupt gzip upload is refused
  const bad = await raw('POST', `${d.url}/files?path=%2Ftmp%2Fbad.gz`, {
    headers: { ...headers, 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'gzip' },
    body: Buffer.concat([gzipSync('abc').subarray(0, 8), Buffer.from('garbage')]),
  })
  assert.equal(bad.status, 400)
})

test('uploads create missing parents for the user, owned by the user', async () => {
  await sbx.files.write('/srv/made/by/user.txt', 'x')
  const r = await sbx.commands.run('stat -c "%U %a" /srv/made /srv/made/by /srv/made/by/user.txt')
  assert.equal(r.stdout, 'user 755\nuser 755\nuser 644\n')
  assert.equal((await sbx.commands.run('stat -c %U /srv')).stdout, 'root\n') // existing parents are untouched
})

test('base template: user, home, umask, tools', async () => {
  const r = await sbx.commands.run('id -un; id -gn; pwd; umask; echo $HOME; for t in bash python3 git tput sudo; do command -v $t >/dev/null || echo missing $t; done; test -x "$(git --exec-path)/git-daemon" || echo no git daemon')
  assert.equal(r.stdout, 'user\nuser\n/home/user\n0022\n/home/user\n')
  const root = await sbx.commands.run('id -un; pwd; echo $HOME', { user: 'root' })
  assert.equal(root.stdout, 'root\n/root\n/root\n')
})

test('sudo: passwordless root for the sandbox user, through hutch-init', async () => {
  let r = await sbx.commands.run('sudo id -u; sudo -u root sh -c "echo \\$HOME \\$USER \\$SUDO_USER; pwd"; sudo -E -n true && echo ok')
  assert.equal(r.stdout, '0\n/root root user\n/home/user\nok\n')
  // stdin and exit status pass through; a missing command is 127
  r = await sbx.commands.run('echo piped | sudo cat; sudo sh -c "exit 7"; echo $?; sudo /nope; echo $?')
  assert.equal(r.stdout, 'piped\n7\n127\n')
  // root through sudo is the sandbox's root: files it makes are root's
  r = await sbx.commands.run('sudo touch /etc/by-sudo && stat -c %U /etc/by-sudo')
  assert.equal(r.stdout, 'root\n')
  // ... and still confined: no_new_privs and seccomp hold for it too
  r = await sbx.commands.run('sudo grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status')
  assert.equal(r.stdout, 'NoNewPrivs:\t1\nSeccomp:\t2\n')
  // only root may be asked for, and options it does not have are refused
  for (const cmd of ['sudo -u nobody id', 'sudo -X id', 'sudo']) {
    const e = await sbx.commands.run(cmd).catch((err) => err)
    assert.equal(e.exitCode, 1, cmd)
    assert.match(e.stderr, /sudo:/)
  }
})

test('the sudo socket exists only inside each sandbox', async () => {
  // abstract unix names are per network namespace: the host has none ...
  const err = await new Promise((res) => {
    const s = connect({ path: '\0hutch-sudo' })
    s.on('connect', () => { s.destroy(); res(null) })
    s.on('error', res)
  })
  assert.ok(err, 'connected to a sudo socket from the host')
  // ... and a sandbox reaches only its own init: sudo hostname is its own id
  assert.equal((await other.commands.run('sudo hostname')).stdout, `${other.sandboxId}\n`)
})

test('data-plane /health: 204 running, 502 paused or killed', async () => {
  const s = await Sandbox.create({ timeoutMs: 60_000 })
  const health = async () => (await raw('GET', `${d.url}/health`, { headers: { 'E2b-Sandbox-Id': s.sandboxId } })).status
  assert.equal(await health(), 204)
  assert.equal((await api(d, 'POST', `/sandboxes/${s.sandboxId}/pause`, {})).status, 204)
  assert.equal(await health(), 502)
  assert.equal(await s.isRunning(), false)
  await s.kill()
  assert.equal(await health(), 502)
})

test('killing a sandbox cuts its running command streams at once', async () => {
  const s = await Sandbox.create({ timeoutMs: 60_000 })
  const cmd = await s.commands.run('sleep 60', { background: true })
  const t0 = Date.now()
  await s.kill()
  const err = await cmd.wait().catch((e) => e)
  assert.ok(err instanceof TimeoutError, String(err))
  assert.match(err.message, /killed or reached its end of life/)
  assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`)
})
