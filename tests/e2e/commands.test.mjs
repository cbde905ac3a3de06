// process.Process through the SDK: run, exit codes, streams, cwd, envs,
// users, background commands, connect, stdin, kill, list, pty, large output.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, CommandExitError } from 'e2b'
import { startDaemon, rssKiB, sleep } from './harness.mjs'

let d, sbx
before(async () => {
  d = await startDaemon()
  sbx = await Sandbox.create({ timeoutMs: 300_000 })
})
after(async () => {
  await sbx?.kill().catch(() => {})
  const st = await d?.stop()
  // a clean exit: under ASan, a leak or memory error makes it non-zero
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

test('stdout, stderr and exit code 0', async () => {
  const r = await sbx.commands.run('echo out; echo err >&2')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'out\n')
  assert.equal(r.stderr, 'err\n')
})

test('a non-zero exit raises CommandExitError with the code and output', async () => {
  await assert.rejects(sbx.commands.run('echo partial; exit 3'), (e) => {
    assert.ok(e instanceof CommandExitError)
    assert.equal(e.exitCode, 3)
    assert.equal(e.stdout, 'partial\n')
    return true
  })
})

test('cwd, envs and the default user', async () => {
  const r = await sbx.commands.run('pwd; echo $FOO; id -un; echo $HOME', { cwd: '/tmp', envs: { FOO: 'bar' } })
  assert.equal(r.stdout, '/tmp\nbar\nuser\n/home/user\n')
})

test('user root and user', async () => {
  assert.equal((await sbx.commands.run('id -u', { user: 'root' })).stdout, '0\n')
  assert.equal((await sbx.commands.run('id -u', { user: 'user' })).stdout, '1000\n')
  assert.equal((await sbx.commands.run('echo $HOME', { user: 'root' })).stdout, '/root\n')
})

test('streaming callbacks receive output as it comes', async () => {
  const chunks = []
  await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.1; done', { onStdout: (d) => chunks.push(d) })
  assert.equal(chunks.join(''), '1\n2\n3\n')
  assert.ok(chunks.length >= 2, 'output arrived in several chunks')
})

test('background command: wait, list, connect, kill', async () => {
  const h = await sbx.commands.run('sleep 0.5; echo done', { background: true })
  assert.ok(h.pid > 0)
  const r = await h.wait()
  assert.equal(r.stdout, 'done\n')

  const long = await sbx.commands.run('echo started; sleep 60', { background: true })
  await sleep(300)
  const procs = await sbx.commands.list()
  assert.ok(procs.some((p) => p.pid === long.pid), 'list shows the running process')
  const out = []
  const again = await sbx.commands.connect(long.pid, { onStdout: (x) => out.push(x) })
  assert.equal(again.pid, long.pid)
  assert.equal(await sbx.commands.kill(long.pid), true)
  await assert.rejects(again.wait(), (e) => e instanceof CommandExitError || /signal|killed/i.test(String(e)))
  assert.equal(await sbx.commands.kill(999999), false, 'killing an unknown pid returns false')
})

test('stdin: sendStdin and closeStdin', async () => {
  const h = await sbx.commands.run('cat', { background: true, stdin: true })
  await h.sendStdin('hello ')
  await h.sendStdin('world\n')
  await h.closeStdin()
  const r = await h.wait()
  assert.equal(r.stdout, 'hello world\n')
})

test('a client disconnect does not kill the process', async () => {
  const h = await sbx.commands.run('sleep 1; echo finished > /tmp/after-disconnect', { background: true })
  await h.disconnect()
  await sleep(1800)
  assert.equal((await sbx.commands.run('cat /tmp/after-disconnect')).stdout, 'finished\n')
})

test('timeoutMs bounds the process life', async () => {
  const t0 = Date.now()
  await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1000 }))
  assert.ok(Date.now() - t0 < 10_000)
})

test('pty: create, sendInput, resize, kill', async () => {
  let buf = ''
  const dec = new TextDecoder()
  const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { buf += dec.decode(d) } })
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size; echo pty-ok\n'))
  // the terminal echoes the typed line first: wait for the command's output
  for (let i = 0; i < 50 && !/24 80/.test(buf); i++) await sleep(100)
  assert.match(buf, /24 80/)
  await sbx.pty.resize(pty.pid, { cols: 100, rows: 40 })
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size\n'))
  for (let i = 0; i < 50 && !buf.includes('40 100'); i++) await sleep(100)
  assert.match(buf, /40 100/)
  assert.equal(await sbx.pty.kill(pty.pid), true)
})

test('20 MB of output arrives intact', async () => {
  const r = await sbx.commands.run('python3 -c "import sys; sys.stdout.write((\'0123456789abcdef\' * 64 + \'\\n\') * 20000)"')
  assert.equal(r.stdout.length, 1025 * 20000)
  assert.ok(r.stdout.split('\n').slice(0, -1).every((l) => l.length === 1024))
})

test('a client that reads nothing does not grow the daemon (backpressure)', async () => {
  const before = rssKiB(d.pid)
  const ac = new AbortController()
  const res = await fetch(process.env.E2B_SANDBOX_URL + '/process.Process/Start', {
    method: 'POST',
    signal: ac.signal,
    headers: {
      'Content-Type': 'application/connect+json',
      'Connect-Protocol-Version': '1',
      'E2b-Sandbox-Id': sbx.sandboxId,
      'X-Access-Token': sbx.envdAccessToken ?? (await sbx.getInfo()).envdAccessToken,
    },
    body: (() => {
      const msg = Buffer.from(JSON.stringify({ process: { cmd: '/bin/bash', args: ['-c', 'head -c 200000000 /dev/zero'] } }))
      const hdr = Buffer.alloc(5)
      hdr.writeUInt32BE(msg.length, 1)
      return Buffer.concat([hdr, msg])
    })(),
  })
  assert.equal(res.status, 200)
  await sleep(2000) // read nothing for two seconds
  const grown = rssKiB(d.pid) - before
  ac.abort()
  assert.ok(grown < 32 * 1024, `daemon RSS grew by ${grown} KiB while a client read nothing`)
})
