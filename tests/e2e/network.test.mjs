// The network boundary through the unmodified e2b SDK: network.allowOut /
// denyOut on create, updateNetwork on a live sandbox, allowInternetAccess
// false, refused rules (domain names without deny-all, malformed IPv6), IPv6
// rules (the test internet's IPv6 is 3fff::/20: world.sh), and a kill that
// leaves no interface, rule or route.
// The test builds its own world (tests/integration/net/world.sh: a stand-in
// internet in a namespace of its own) and sends traffic nowhere else.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { Sandbox } from 'e2b'
import { sleep } from './harness.mjs'
import { netWorld } from './networld.mjs'

const net = netWorld({ prefix: 'hne', seed: process.pid, pool: `10.${200 + (process.pid % 7) * 8}.128.0/17` })
const { tag, name, pool6, skip, run } = net

let d
before(async () => {
  if (!skip) d = await net.up()
})
after(() => net.down(d))

function hostState() {
  const links = execFileSync('ip', ['-o', 'link', 'show']).toString()
  const table = net.table()
  const routes6 = execFileSync('ip', ['-6', 'route']).toString().split('\n').filter((l) => l.startsWith(pool6 + ':'))
  return { links: links.split('\n').filter((l) => l.includes(name + '-')), table, routes6 }
}

test('allowOut + denyOut all = allowlist; updateNetwork changes it live; getInfo echoes it', { skip }, async () => {
  const sbx = await Sandbox.create({ network: { allowOut: ['198.51.100.10'], denyOut: ['0.0.0.0/0'] }, timeoutMs: 120_000 })
  try {
    let out = await run(sbx, 'tcp:198.51.100.10:8080', 'tcp:198.51.100.20:8080', 'name:allowed.test', 'tcp:169.254.169.254:80')
    assert.match(out, /tcp 198\.51\.100\.10:8080 OK internet-allowed/)
    assert.match(out, /tcp 198\.51\.100\.20:8080 TIMEOUT/)
    // an allowlist resolves only the names it lists (network_dns.test.mjs)
    assert.match(out, /name allowed\.test FAIL/)
    assert.match(out, /tcp 169\.254\.169\.254:80 TIMEOUT/)
    const info = await sbx.getInfo()
    assert.deepEqual(info.network?.allowOut, ['198.51.100.10/32'])
    assert.deepEqual(info.network?.denyOut, ['0.0.0.0/0'])

    // a connection open across the change: its packets are judged by the new rules
    await sbx.files.write('/tmp/echo.py', [
      'import socket, time',
      's = socket.create_connection(("198.51.100.10", 7), timeout=2)',
      's.settimeout(1)',
      'for i in range(60):',
      '    try:',
      '        s.sendall(b"x\\n"); r = "ok" if s.recv(10) else "closed"',
      '    except OSError:',
      '        r = "lost"',
      '    open("/tmp/echo.log", "a").write(r + "\\n")',
      '    time.sleep(0.2)',
    ].join('\n') + '\n')
    const echo = await sbx.commands.run('python3 /tmp/echo.py', { background: true, timeoutMs: 60_000 })
    await sleep(1500)
    assert.match(await sbx.files.read('/tmp/echo.log'), /^ok$/m, 'the echo connection works before the change')

    await sbx.updateNetwork({ allowOut: ['198.51.100.20'], denyOut: ['0.0.0.0/0'] })
    await sleep(3000)
    const lines = (await sbx.files.read('/tmp/echo.log')).trim().split('\n')
    assert.deepEqual(lines.slice(-2), ['lost', 'lost'], `the open connection is cut by the new rules: ${lines.join(' ')}`)
    await echo.kill()
    out = await run(sbx, 'tcp:198.51.100.10:8080', 'tcp:198.51.100.20:8080')
    assert.match(out, /tcp 198\.51\.100\.20:8080 OK internet-denied/)
    assert.match(out, /tcp 198\.51\.100\.10:8080 TIMEOUT/)
    assert.deepEqual((await sbx.getInfo()).network?.allowOut, ['198.51.100.20/32'])

    await assert.rejects(sbx.updateNetwork({ allowOut: ['example.com'] }), /domain names need denyOut/)
    await assert.rejects(sbx.updateNetwork({ allowInternetAccess: false }), /cannot be changed/)
    const st = hostState()
    assert.equal(st.links.length, 1, 'one veth while one sandbox lives')
    assert.match(st.table, new RegExp(`"${name}-[0-9]+" \\. 198\\.51\\.100\\.20`), 'its rules are in the shared sets')
  } finally {
    await sbx.kill()
  }
  // the pair goes when the kernel frees the dead sandbox's namespace: soon
  let st = hostState()
  for (let i = 0; i < 50 && st.links.length; i++) { await new Promise((r) => setTimeout(r, 100)); st = hostState() }
  assert.equal(st.links.length, 0, `no veth after kill: ${st.links}`)
  assert.doesNotMatch(st.table, new RegExp(`"${name}-[0-9]+"`), 'no rule keyed by the sandbox\'s interface after kill')
})

test('allowInternetAccess false: loopback only', { skip }, async () => {
  const sbx = await Sandbox.create({ allowInternetAccess: false, timeoutMs: 60_000 })
  try {
    const out = await run(sbx, 'tcp:198.51.100.10:8080')
    assert.match(out, /Network is unreachable/)
    assert.equal((await sbx.getInfo()).allowInternetAccess, false)
    await assert.rejects(sbx.updateNetwork({ denyOut: ['1.2.3.4'] }), /no internet access/)
  } finally {
    await sbx.kill()
  }
})

test('domain rules without denyOut all and malformed IPv6 rules are refused at create with a clear error', { skip }, async () => {
  await assert.rejects(Sandbox.create({ network: { allowOut: ['api.example.com'] } }), /domain names need denyOut/)
  await assert.rejects(Sandbox.create({ network: { denyOut: ['3fff::/129'] } }), /bad prefix length/)
  await assert.rejects(Sandbox.create({ network: { denyOut: ['fe80::1%eth0'] } }), /not an IPv6 address/)
  assert.equal(hostState().links.length, 0)
})

test('IPv6: allowOut/denyOut with IPv6 CIDRs, an IPv4 allowlist blocks unlisted IPv6, nothing left after kill', { skip }, async () => {
  assert.match(d.log(), new RegExp(`network nat \\(${name}\\): IPv4 and IPv6 \\(pool ${pool6}::/64, IPv6 uplinks hnti${tag}\\)`),
    'the daemon says at start that sandboxes get IPv6, and through what')
  const sbx = await Sandbox.create({ network: { allowOut: ['3fff:0:100::10'], denyOut: ['0.0.0.0/0'] }, timeoutMs: 120_000 })
  try {
    let out = await run(sbx, 'addr6', 'tcp:3fff:0:100::10:8080', 'tcp:3fff:0:100::20:8080', 'tcp:198.51.100.10:8080',
      'tcp:fd99:77::2:8080', 'tcp:3fff:0:113::1:8081')
    assert.match(out, new RegExp(`addr6 ${pool6}::[0-9a-f]+`), 'an IPv6 address from the pool')
    assert.match(out, /tcp 3fff:0:100::10:8080 OK internet-allowed6/, 'the listed IPv6 address is reachable')
    assert.match(out, /tcp 3fff:0:100::20:8080 TIMEOUT/, 'unlisted IPv6 is not')
    assert.match(out, /tcp 198\.51\.100\.10:8080 TIMEOUT/, 'nor unlisted IPv4')
    assert.match(out, /tcp fd99:77::2:8080 TIMEOUT/, 'a ULA service is denied')
    assert.match(out, /tcp 3fff:0:113::1:8081 TIMEOUT/, 'a host address is denied')
    let info = await sbx.getInfo()
    assert.deepEqual(info.network?.allowOut, ['3fff:0:100::10/128'])
    assert.deepEqual(info.network?.denyOut, ['0.0.0.0/0'])

    // a denylist of one IPv6 address: the rest stays open
    await sbx.updateNetwork({ denyOut: ['3fff:0:100::20/128'] })
    out = await run(sbx, 'tcp:3fff:0:100::10:8080', 'tcp:3fff:0:100::20:8080', 'tcp:198.51.100.10:8080')
    assert.match(out, /tcp 3fff:0:100::10:8080 OK/)
    assert.match(out, /tcp 3fff:0:100::20:8080 TIMEOUT/)
    assert.match(out, /tcp 198\.51\.100\.10:8080 OK/)
    // an IPv4-only allowlist: IPv6 is blocked unless listed
    await sbx.updateNetwork({ allowOut: ['198.51.100.10'], denyOut: ['0.0.0.0/0'] })
    out = await run(sbx, 'tcp:3fff:0:100::10:8080', 'tcp:198.51.100.10:8080')
    assert.match(out, /tcp 3fff:0:100::10:8080 TIMEOUT/, 'an IPv4 allowlist blocks the IPv6 it does not list')
    assert.match(out, /tcp 198\.51\.100\.10:8080 OK/)
    // and ::/0 in allowOut opens IPv6 under it
    await sbx.updateNetwork({ allowOut: ['198.51.100.10', '::/0'], denyOut: ['0.0.0.0/0'] })
    out = await run(sbx, 'tcp:3fff:0:100::20:8080', 'tcp:fd99:77::2:8080')
    assert.match(out, /tcp 3fff:0:100::20:8080 OK/)
    assert.match(out, /tcp fd99:77::2:8080 TIMEOUT/, 'allowOut ::/0 does not open the operator denials')
    info = await sbx.getInfo()
    assert.deepEqual(info.network?.allowOut, ['198.51.100.10/32', '::/0'])
    assert.equal(hostState().routes6.length, 1, 'one IPv6 route (the /127) while one sandbox lives')
  } finally {
    await sbx.kill()
  }
  let st = hostState()
  for (let i = 0; i < 50 && (st.links.length || st.routes6.length); i++) { await sleep(100); st = hostState() }
  assert.equal(st.links.length, 0)
  assert.deepEqual(st.routes6, [], 'no IPv6 route left')
  assert.doesNotMatch(st.table, new RegExp(`"${name}-[0-9]+"`), 'no IPv6 (or IPv4) element left')
})

test('a memory release and a daemon restart keep a sandbox\'s network and rules', { skip }, async () => {
  const sbx = await Sandbox.create({ network: { allowOut: ['198.51.100.10', '3fff:0:100::10'], denyOut: ['0.0.0.0/0'] }, timeoutMs: 120_000 })
  try {
    assert.equal(await sbx.pause({ keepMemory: false }), true)
    // the rules go in the pause itself; the veth (and the IPv6 route on it)
    // goes with the namespace, which the kernel frees on its own a moment
    // later (hu_net_detach)
    let st = hostState()
    assert.doesNotMatch(st.table, /198\.51\.100\.10|3fff:0:100::10/, 'a released sandbox has no rule element')
    for (let t = 0; t < 50 && (st.links.length || st.routes6.length); t++) { await sleep(100); st = hostState() }
    assert.equal(st.links.length, 0, 'and, soon, no veth')
    assert.deepEqual(st.routes6, [], 'and no IPv6 route')
    await Sandbox.connect(sbx.sandboxId)
    let out = await run(sbx, 'tcp:198.51.100.10:8080', 'tcp:198.51.100.20:8080', 'tcp:3fff:0:100::10:8080', 'tcp:3fff:0:100::20:8080')
    assert.match(out, /tcp 198\.51\.100\.10:8080 OK internet-allowed/, 'the resumed sandbox has its network back')
    assert.match(out, /tcp 198\.51\.100\.20:8080 TIMEOUT/, 'and its rules')
    assert.match(out, /tcp 3fff:0:100::10:8080 OK internet-allowed6/, 'and its IPv6')
    assert.match(out, /tcp 3fff:0:100::20:8080 TIMEOUT/, 'and its IPv6 rules (the allowlist blocks unlisted IPv6)')
    // kill -9 the daemon: the next one adopts the sandbox, network and all
    process.kill(d.pid, 'SIGKILL')
    d = await d.restart()
    const again = await Sandbox.connect(sbx.sandboxId)
    out = await run(again, 'tcp:198.51.100.10:8080', 'tcp:198.51.100.20:8080', 'tcp:3fff:0:100::10:8080', 'tcp:3fff:0:100::20:8080')
    assert.match(out, /tcp 198\.51\.100\.10:8080 OK internet-allowed/)
    assert.match(out, /tcp 198\.51\.100\.20:8080 TIMEOUT/)
    assert.match(out, /tcp 3fff:0:100::10:8080 OK internet-allowed6/, 'IPv6 survives the adoption')
    assert.match(out, /tcp 3fff:0:100::20:8080 TIMEOUT/)
    assert.deepEqual((await again.getInfo()).network?.allowOut ?? (await fetch(`${d.url}/sandboxes/${sbx.sandboxId}`, { headers: { 'X-API-KEY': d.apiKey } }).then((r) => r.json())).network.allowOut, ['198.51.100.10/32', '3fff:0:100::10/128'], 'the rules survived in the store')
  } finally {
    // through the restarted daemon (sbx still points at the first one)
    await Sandbox.kill(sbx.sandboxId).catch(() => {})
  }
  // the veth goes with the namespace, which the kernel frees on its own
  for (let t = 0; t < 30 && hostState().links.length; t++) await sleep(100)
  assert.equal(hostState().links.length, 0, 'nothing left after the kill')
})

test('attack: symlinks planted in the writable layer are not followed when a resume rewrites /etc/resolv.conf', { skip }, async () => {
  const { existsSync, rmSync } = await import('node:fs')
  const victimFile = `/tmp/hutch-victim-file-${process.pid}`
  const victimDir = `/tmp/hutch-victim-dir-${process.pid}`
  rmSync(victimFile, { force: true })
  rmSync(victimDir, { recursive: true, force: true })
  for (const plant of [`rm -f /etc/resolv.conf && ln -s ${victimFile} /etc/resolv.conf`,
    `cp -a /etc /etc.keep && rm -rf /etc && ln -s ${victimDir} /etc`]) {
    const sbx = await Sandbox.create({ timeoutMs: 120_000 })
    try {
      await sbx.commands.run(plant, { user: 'root' })
      assert.equal(await sbx.pause({ keepMemory: false }), true)
      await Sandbox.connect(sbx.sandboxId) // a fresh init; its network set up again
      assert.equal((await sbx.commands.run('echo alive', { user: 'root' })).stdout, 'alive\n')
      assert.equal(existsSync(victimFile), false, `${plant}: no host file written through the symlink`)
      assert.equal(existsSync(victimDir), false, `${plant}: no host directory made through the symlink`)
    } finally {
      await sbx.kill().catch(() => {})
    }
  }
})
