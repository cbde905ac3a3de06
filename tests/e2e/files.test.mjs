// filesystem.Filesystem and /files through the SDK.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { Sandbox, NotFoundError, FileType } from 'e2b'
import { startDaemon, rssKiB, sleep } from './harness.mjs'

let d, sbx
before(async () => {
  d = await startDaemon(['--signed-url-scan', 'true']) // the rate-limited scan is tested here
  sbx = await Sandbox.create({ timeoutMs: 300_000 })
})
after(async () => {
  await sbx?.kill().catch(() => {})
  const st = await d?.stop()
  // a clean exit: under ASan, a leak or memory error makes it non-zero
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

test('write and read text and bytes; nested paths are created', async () => {
  await sbx.files.write('/home/user/a/b/c.txt', 'hello file')
  assert.equal(await sbx.files.read('/home/user/a/b/c.txt'), 'hello file')
  const bytes = randomBytes(4096)
  await sbx.files.write('/tmp/bin.dat', bytes)
  const back = await sbx.files.read('/tmp/bin.dat', { format: 'bytes' })
  assert.deepEqual(Buffer.from(back), bytes)
  const who = await sbx.commands.run('stat -c "%U %a" /home/user/a/b/c.txt')
  assert.equal(who.stdout, 'user 644\n')
  await sbx.files.write('/home/user/empty', '')
  assert.equal(await sbx.files.read('/home/user/empty'), '')
})

test('several files in one write', async () => {
  const r = await sbx.files.write([
    { path: '/tmp/multi/one', data: '1' },
    { path: '/tmp/multi/two', data: '2' },
  ])
  // the reply lists each file's entry (init's answer to its WRITE_CLOSE), in the order of the body
  assert.deepEqual(r.map((e) => [e.path, e.name]), [
    ['/tmp/multi/one', 'one'],
    ['/tmp/multi/two', 'two'],
  ])
  assert.equal(await sbx.files.read('/tmp/multi/two'), '2')
})

test('list with depth, exists, getInfo', async () => {
  await sbx.files.write('/tmp/tree/x/y/z.txt', 'z')
  const one = await sbx.files.list('/tmp/tree')
  assert.deepEqual(one.map((e) => e.name), ['x'])
  assert.equal(one[0].type, FileType.DIR)
  const deep = await sbx.files.list('/tmp/tree', { depth: 3 })
  assert.ok(deep.some((e) => e.path === '/tmp/tree/x/y/z.txt' && e.type === FileType.FILE))
  assert.equal(await sbx.files.exists('/tmp/tree/x/y/z.txt'), true)
  assert.equal(await sbx.files.exists('/tmp/tree/nope'), false)
  const info = await sbx.files.getInfo('/tmp/tree/x/y/z.txt')
  assert.equal(info.name, 'z.txt')
  assert.equal(info.size, 1)
  assert.equal(info.owner, 'user')
})

test('makeDir, rename, remove', async () => {
  assert.equal(await sbx.files.makeDir('/tmp/newdir/sub'), true)
  assert.equal(await sbx.files.makeDir('/tmp/newdir/sub'), false, 'an existing dir returns false')
  await sbx.files.write('/tmp/newdir/sub/f', 'f')
  const moved = await sbx.files.rename('/tmp/newdir/sub/f', '/tmp/newdir/g')
  assert.equal(moved.path, '/tmp/newdir/g')
  assert.equal(await sbx.files.exists('/tmp/newdir/sub/f'), false)
  await sbx.files.remove('/tmp/newdir')
  assert.equal(await sbx.files.exists('/tmp/newdir'), false)
})

test('reading a missing file raises NotFoundError', async () => {
  await assert.rejects(sbx.files.read('/tmp/does-not-exist'), NotFoundError)
})

test('user permissions apply: user cannot write into /root', async () => {
  await assert.rejects(sbx.files.write('/root/x', 'no'))
  await sbx.files.write('/root/x', 'yes', { user: 'root' })
  assert.equal(await sbx.files.read('/root/x', { user: 'root' }), 'yes')
})

test('a signed URL acts as the user it was signed for, whatever Authorization says', async () => {
  await sbx.files.write('/root/only-root.txt', 'root secret', { user: 'root' })
  await sbx.commands.run('chmod 600 /root/only-root.txt', { user: 'root' })
  const asRoot = { Authorization: 'Basic ' + Buffer.from('root:').toString('base64') }
  // signed for the default user: the header must not turn it into root
  const url = await sbx.downloadUrl('/root/only-root.txt')
  let res = await fetch(url, { headers: asRoot })
  assert.ok([401, 403].includes(res.status), `download as root through a user link: ${res.status}`)
  assert.doesNotMatch(await res.text(), /root secret/)
  res = await fetch(url)
  assert.ok([401, 403].includes(res.status), `download through a user link: ${res.status}`)
  const up = await sbx.uploadUrl('/root/planted.txt')
  const form = new FormData()
  form.append('file', 'planted')
  res = await fetch(up, { method: 'POST', body: form, headers: asRoot })
  assert.ok([401, 403].includes(res.status), `upload as root through a user link: ${res.status}`)
  assert.equal(await sbx.files.exists('/root/planted.txt', { user: 'root' }), false)
  // a link signed for root works as root, and the matching header is accepted
  const rootUrl = await sbx.downloadUrl('/root/only-root.txt', { user: 'root' })
  res = await fetch(rootUrl, { headers: asRoot })
  assert.equal(res.status, 200)
  assert.equal(await res.text(), 'root secret')
  // ... but a root link cannot be narrowed or changed by a header either
  res = await fetch(rootUrl, { headers: { Authorization: 'Basic ' + Buffer.from('user:').toString('base64') } })
  assert.equal(res.status, 403)
})

test('paths with .. and symlinks stay inside the sandbox', async () => {
  const passwd = await sbx.files.read('/home/user/../../../../etc/passwd')
  assert.match(passwd, /^user:x:1000:1000/m)
  assert.doesNotMatch(passwd, /^(daemon|bin|sys|systemd)/m, 'the host passwd is not readable')
  await sbx.commands.run('ln -sfn / /home/user/rootlink')
  const again = await sbx.files.read('/home/user/rootlink/etc/passwd')
  assert.equal(again, passwd)
})

test('watchDir reports a created file', async () => {
  await sbx.files.makeDir('/tmp/watched')
  const events = []
  const w = await sbx.files.watchDir('/tmp/watched', (e) => events.push(e))
  await sbx.files.write('/tmp/watched/new.txt', 'x')
  for (let i = 0; i < 50 && !events.some((e) => e.name === 'new.txt'); i++) await sleep(100)
  await w.stop()
  assert.ok(events.some((e) => e.name === 'new.txt'), JSON.stringify(events))
})

test('upload and download of 50 MB, intact, without buffering it all in the daemon', async () => {
  const data = randomBytes(50 << 20)
  const want = createHash('sha256').update(data).digest('hex')
  await sbx.files.write('/tmp/big.bin', data)
  const sum = (await sbx.commands.run('sha256sum /tmp/big.bin')).stdout.split(' ')[0]
  assert.equal(sum, want)
  const back = await sbx.files.read('/tmp/big.bin', { format: 'bytes' })
  assert.equal(createHash('sha256').update(back).digest('hex'), want)
  assert.ok(rssKiB(d.pid) < 400 * 1024, 'daemon RSS stays bounded')
})

test('random signatures: token scans are rate-limited (429), links seen before and named sandboxes keep working', async () => {
  await sbx.files.write('/home/user/known.txt', 'known')
  const known = await sbx.downloadUrl('/home/user/known.txt')
  assert.equal((await fetch(known)).status, 200) // scanned once, now in the signature index
  const statuses = {}
  const t0 = Date.now()
  const base = new URL(known)
  // 20 at a time until the budget runs out: 800 at least; more on a loaded
  // host, where the sends are slower than the refill (100 a second) for a
  // while; 4000 forged links without a 429 is a failure
  for (let i = 0; i < 200 && (i < 40 || !statuses[429]); i++) {
    await Promise.all(Array.from({ length: 20 }, async () => {
      const u = new URL(base)
      u.searchParams.set('signature', 'v1_' + randomBytes(32).toString('base64url').slice(0, 43))
      const res = await fetch(u)
      await res.arrayBuffer()
      statuses[res.status] = (statuses[res.status] ?? 0) + 1
    }))
  }
  const secs = (Date.now() - t0) / 1000
  // of the forged links, at most the burst (200) plus 100 a second were hashed
  // against the tokens; the rest cost a table lookup and got a 429
  assert.ok((statuses[401] ?? 0) <= 200 + 100 * secs + 10, JSON.stringify({ statuses, secs }))
  assert.ok((statuses[429] ?? 0) > 0, JSON.stringify(statuses))
  assert.deepEqual(Object.keys(statuses).sort(), ['401', '429'])
  // the budget is spent, yet a known link and a link naming its sandbox work
  let res = await fetch(known)
  assert.equal(res.status, 200)
  assert.equal(await res.text(), 'known')
  const fresh = await sbx.downloadUrl('/home/user/known.txt', { useSignatureExpiration: 60 })
  res = await fetch(fresh, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId } })
  assert.equal(res.status, 200)
})

test('unauthenticated failures log short lines, at a bounded rate', async () => {
  await sleep(5500) // a full log budget
  const mark = d.log().length
  const t0 = Date.now()
  const long = '/' + 'a'.repeat(900) + '" sandbox=forged msg="x'
  for (let i = 0; i < 30; i++)
    await Promise.all(Array.from({ length: 20 }, () => fetch(d.url + long).then((r) => r.arrayBuffer())))
  const secs = (Date.now() - t0) / 1000
  await sleep(300)
  await fetch(d.url + '/one-more').then((r) => r.arrayBuffer())
  const lines = d.log().slice(mark).split('\n').filter((l) => l.includes('unauthenticated GET'))
  // 601 404s without an API key: at most the burst (100) plus 20 a second logged
  assert.ok(lines.length >= 2 && lines.length <= 100 + 20 * (secs + 0.3) + 5, `${lines.length} lines in ${secs} s`)
  for (const l of lines) assert.ok(l.length < 400, `a long line: ${l.slice(0, 200)}...`)
  assert.match(lines.at(-1), /one-more -> 404 .* \[\d+ similar lines left out\]/)
  // the path cannot forge a field: quotes stay escaped inside msg
  assert.ok(lines.every((l) => !/ sandbox=forged/.test(l.replace(/msg=".*/, ''))))
})
