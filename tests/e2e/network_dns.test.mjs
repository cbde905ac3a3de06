// Domain rules and DNS through the unmodified e2b SDK: allowOut names with
// denyOut all (E2B's allowlist), wildcards, updateNetwork adding a name to a
// live sandbox, refused names that never leave the host (no DNS
// exfiltration from an allowlisted sandbox), the proxy reachable for DNS
// only, one sandbox's names not opening anything for another, and the rules
// surviving a memory release and a daemon restart; with IPv6 for sandboxes,
// AAAA answers open the IPv6 addresses of allowed names (set dallow6) but
// never a denied range. The test builds its own
// world (tests/integration/net/world.sh; its DNS server logs every name it
// is asked) and sends traffic nowhere else.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, existsSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { sleep } from './harness.mjs'
import { netWorld } from './networld.mjs'

const net = netWorld({ prefix: 'hnd', seed: process.pid + 50000, pool: `10.${201 + (process.pid % 7) * 8}.0.0/17` })
const { tag, name, skip, run, table } = net
const dnsLog = `/tmp/hutnet-${tag}/dns.log`
const ALL = ['0.0.0.0/0']

let d
before(async () => {
  if (!skip) d = await net.up()
})
after(() => net.down(d))

const queried = () => existsSync(dnsLog) ? readFileSync(dnsLog, 'utf8') : ''
const proxyPort = () => table().match(/redirect to :(\d+)/)?.[1]

test('allowOut names + denyOut all: the names resolve and their addresses open, nothing else', { skip }, async () => {
  const sbx = await Sandbox.create({ network: { allowOut: ['Allowed.Test.'], denyOut: ALL }, timeoutMs: 120_000 })
  try {
    const out = await run(sbx, 'tcp:198.51.100.10:8080', 'name:allowed.test', 'tcp:allowed.test:8080', 'tcp:198.51.100.20:8080',
      'name:denied.test', 'name:secret.attacker.test', 'name:x.allowed.test', 'udpdns:198.51.100.53', 'gw')
    assert.match(out, /^tcp 198\.51\.100\.10:8080 TIMEOUT$/m, 'an allowed name\'s address is closed before it was resolved')
    assert.match(out, /^name allowed\.test 198\.51\.100\.10$/m)
    assert.match(out, /^tcp allowed\.test:8080 OK internet-allowed$/m, 'and open once resolved through the proxy')
    assert.match(out, /^tcp 198\.51\.100\.20:8080 TIMEOUT$/m)
    assert.match(out, /^name denied\.test FAIL$/m, 'a name not in allowOut does not resolve')
    assert.match(out, /^name x\.allowed\.test FAIL$/m, 'a plain name does not cover its subdomains')
    assert.match(out, /^udpdns 198\.51\.100\.53 NOANSWER$/m, 'the resolver itself is not reachable')
    const log = queried()
    assert.match(log, /^allowed\.test$/m, 'the allowed name was forwarded')
    assert.doesNotMatch(log, /attacker|denied\.test|x\.allowed/, 'refused names never reached the resolver (no DNS exfiltration)')
    assert.deepEqual((await sbx.getInfo()).network?.allowOut, ['allowed.test'])
    assert.match(table(), new RegExp(`"${name}-[0-9]+" \\. 198\\.51\\.100\\.10 timeout`), 'the learned address has a timeout')

    // the proxy is for DNS only: no other datagram, no TCP, no other port
    const gw = out.match(/^gw (\S+)$/m)[1]
    const port = proxyPort()
    assert.ok(port, 'the table redirects to the proxy')
    const out2 = await run(sbx, `udp:${gw}:53`, `udp:${gw}:${port}`, `tcp:${gw}:53`, `tcp:${gw}:${port}`, `udpdns:${gw}`)
    assert.match(out2, new RegExp(`^udp ${gw}:53 NOANSWER$`, 'm'), 'a datagram that is not DNS gets nothing')
    assert.match(out2, new RegExp(`^udp ${gw}:${port} NOANSWER$`, 'm'), 'the proxy port itself is closed')
    assert.match(out2, new RegExp(`^tcp ${gw}:53 TIMEOUT$`, 'm'), 'DNS over TCP is dropped for an allowlist')
    assert.match(out2, new RegExp(`^tcp ${gw}:${port} TIMEOUT$`, 'm'))
    assert.match(out2, new RegExp(`^udpdns ${gw} ANSWER$`, 'm'), 'DNS for an allowed name works on the gateway')
    // the proxy path is rate-limited per sandbox like the direct one
    const n = Number((await run(sbx, 'burst:200')).match(/^burst 200 (\d+)$/m)?.[1])
    assert.ok(n >= 1 && n <= 100, `a burst of 200 queries is cut down by the limit (${n} answered)`)
  } finally {
    await sbx.kill()
  }
  for (let i = 0; i < 30 && new RegExp(`"${name}-[0-9]+"`).test(table()); i++) await sleep(100)
  assert.doesNotMatch(table(), new RegExp(`"${name}-[0-9]+"`), 'no element keyed by the sandbox\'s interface after kill')
})

test('a wildcard matches the names below it, not the name itself; a CNAME chain opens its end; an IP-only allowlist resolves nothing', { skip }, async () => {
  const sbx = await Sandbox.create({ network: { allowOut: ['*.wild.test'], denyOut: ALL }, timeoutMs: 120_000 })
  const ips = await Sandbox.create({ network: { allowOut: ['198.51.100.10'], denyOut: ALL }, timeoutMs: 120_000 })
  try {
    const out = await run(sbx, 'name:a.wild.test', 'tcp:a.wild.test:8080', 'name:b.a.wild.test', 'name:wild.test',
      'tcp:198.51.100.10:8080')
    assert.match(out, /^name a\.wild\.test 198\.51\.100\.20$/m)
    assert.match(out, /^tcp a\.wild\.test:8080 OK internet-denied$/m)
    assert.match(out, /^name b\.a\.wild\.test 198\.51\.100\.20$/m, 'any depth below')
    assert.match(out, /^name wild\.test FAIL$/m, '*.wild.test does not match wild.test')
    assert.match(out, /^tcp 198\.51\.100\.10:8080 TIMEOUT$/m)
    await sbx.updateNetwork({ allowOut: ['alias.test'], denyOut: ALL })
    const o3 = await run(sbx, 'name:alias.test', 'tcp:alias.test:8080', 'name:denied.test')
    assert.match(o3, /^name alias\.test 198\.51\.100\.20$/m, 'the queried name is what is matched')
    assert.match(o3, /^tcp alias\.test:8080 OK internet-denied$/m, 'and the chain\'s A record is opened')
    assert.match(o3, /^name denied\.test FAIL$/m, 'the CNAME target itself is not allowed by name')
    const o2 = await run(ips, 'name:allowed.test', 'tcp:198.51.100.10:8080')
    assert.match(o2, /^name allowed\.test FAIL$/m, 'an allowlist without names resolves nothing')
    assert.match(o2, /^tcp 198\.51\.100\.10:8080 OK/m)
  } finally {
    await sbx.kill()
    await ips.kill()
  }
})

test('updateNetwork adds a name to a live sandbox; another sandbox\'s names open nothing for it', { skip }, async () => {
  const a = await Sandbox.create({ network: { allowOut: ['denied.test'], denyOut: ALL }, timeoutMs: 120_000 })
  const b = await Sandbox.create({ network: { allowOut: ['allowed.test'], denyOut: ALL }, timeoutMs: 120_000 })
  try {
    let out = await run(b, 'name:allowed.test', 'tcp:198.51.100.10:8080')
    assert.match(out, /^tcp 198\.51\.100\.10:8080 OK/m, 'B reaches its name')
    out = await run(a, 'tcp:198.51.100.10:8080', 'name:allowed.test', 'name:denied.test', 'tcp:198.51.100.20:8080')
    assert.match(out, /^tcp 198\.51\.100\.10:8080 TIMEOUT$/m, 'what B resolved is not open for A')
    assert.match(out, /^name allowed\.test FAIL$/m, 'nor does A resolve B\'s name')
    assert.match(out, /^tcp 198\.51\.100\.20:8080 OK/m)

    await a.updateNetwork({ allowOut: ['allowed.test'], denyOut: ALL })
    out = await run(a, 'name:allowed.test', 'tcp:198.51.100.10:8080', 'name:denied.test', 'tcp:198.51.100.20:8080')
    assert.match(out, /^name allowed\.test 198\.51\.100\.10$/m, 'the new name resolves')
    assert.match(out, /^tcp 198\.51\.100\.10:8080 OK/m)
    assert.match(out, /^name denied\.test FAIL$/m, 'the removed name does not')
    assert.match(out, /^tcp 198\.51\.100\.20:8080 TIMEOUT$/m, 'and what it resolved to is closed at once')
    assert.deepEqual((await a.getInfo()).network?.allowOut, ['allowed.test'])
  } finally {
    await a.kill()
    await b.kill()
  }
})

test('IPv6: AAAA answers open an allowed name\'s IPv6 addresses after it resolved, never a denied range; PUT /network, release and kill remove them', { skip }, async () => {
  assert.match(d.log(), /IPv4 and IPv6/, 'sandboxes get IPv6 in this test')
  const names = ['allowed.test', 'private6.test', 'mapped6.test', 'nat64.test', 'denied.test']
  const sbx = await Sandbox.create({ network: { allowOut: names, denyOut: ALL }, timeoutMs: 120_000 })
  const el = (addr) => new RegExp(`"${name}-[0-9]+" \\. ${addr.replaceAll('.', '\\.')} timeout`)
  try {
    let out = await run(sbx, 'tcp:3fff:0:100::10:8080', 'name6:allowed.test', 'tcp:3fff:0:100::10:8080', 'tcp:3fff:0:100::20:8080')
    assert.match(out, /^tcp 3fff:0:100::10:8080 TIMEOUT$/m, 'an allowed name\'s IPv6 address is closed before it was resolved')
    assert.match(out, /^name6 allowed\.test 3fff:0:100::10$/m, 'the AAAA answer reaches the sandbox')
    assert.match(out, /^tcp 3fff:0:100::10:8080 OK internet-allowed6$/m, 'and its address is open once resolved')
    assert.match(out, /^tcp 3fff:0:100::20:8080 TIMEOUT$/m, 'other IPv6 stays closed')
    assert.match(table(), el('3fff:0:100::10'), 'the learned IPv6 address is an element of dallow6 with a timeout')

    // names whose AAAA lies in a range no sandbox reaches: they resolve (the
    // elements are even there), but the operator's denials come first
    out = await run(sbx, 'name6:private6.test', 'tcp:fdff:100::10:8080', 'name6:mapped6.test', 'tcp:::ffff:10.99.77.2:8080',
      'name6:nat64.test', 'tcp:64:ff9b::a63:4d02:8080')
    assert.match(out, /^name6 private6\.test fdff:100::10$/m)
    assert.match(out, /^tcp fdff:100::10:8080 TIMEOUT$/m, 'a unique local answer opens nothing')
    assert.match(out, /^name6 mapped6\.test ::ffff:10\.99\.77\.2$/m)
    assert.match(out, /^tcp ::ffff:10\.99\.77\.2:8080 TIMEOUT$/m, 'an IPv4-mapped private answer opens nothing')
    assert.match(out, /^name6 nat64\.test 64:ff9b::a63:4d02$/m)
    assert.match(out, /^tcp 64:ff9b::a63:4d02:8080 TIMEOUT$/m, 'a NAT64 answer for a private address opens nothing')
    assert.match(table(), el('fdff:100::10'), 'learned, and still closed: the rule order holds, not the learning')

    // a name with only A records works as before with IPv6 on
    out = await run(sbx, 'name6:denied.test', 'name:denied.test', 'tcp:198.51.100.20:8080', 'tcp:allowed.test:8080')
    assert.match(out, /^name6 denied\.test FAIL$/m, 'no AAAA record: nothing over IPv6')
    assert.match(out, /^name denied\.test 198\.51\.100\.20$/m)
    assert.match(out, /^tcp 198\.51\.100\.20:8080 OK internet-denied$/m, 'and its A record opens its IPv4 address')
    assert.match(out, /^tcp allowed\.test:8080 OK internet-allowed6?$/m, 'a connection by name works')

    // PUT /network: what the old names resolved to is closed at once
    await sbx.updateNetwork({ allowOut: ['denied.test'], denyOut: ALL })
    assert.doesNotMatch(table(), /3fff:0:100::10/, 'the rules changed: no dallow6 element left')
    out = await run(sbx, 'tcp:3fff:0:100::10:8080', 'name6:allowed.test')
    assert.match(out, /^tcp 3fff:0:100::10:8080 TIMEOUT$/m)
    assert.match(out, /^name6 allowed\.test FAIL$/m)

    // a memory release removes the elements; kill too
    await sbx.updateNetwork({ allowOut: ['allowed.test'], denyOut: ALL })
    out = await run(sbx, 'name6:allowed.test', 'tcp:3fff:0:100::10:8080')
    assert.match(out, /^tcp 3fff:0:100::10:8080 OK internet-allowed6$/m)
    assert.equal(await sbx.pause({ keepMemory: false }), true)
    assert.doesNotMatch(table(), /3fff:0:100::10/, 'a released sandbox has no dallow6 element')
    await Sandbox.connect(sbx.sandboxId)
    out = await run(sbx, 'tcp:3fff:0:100::10:8080', 'name6:allowed.test', 'tcp:3fff:0:100::10:8080')
    assert.match(out, /^tcp 3fff:0:100::10:8080 TIMEOUT\nname6 allowed\.test 3fff:0:100::10\ntcp 3fff:0:100::10:8080 OK internet-allowed6$/m,
      'closed after the resume until resolved again, open once it is')
    assert.match(table(), el('3fff:0:100::10'))
  } finally {
    await sbx.kill()
  }
  for (let i = 0; i < 30 && new RegExp(`"${name}-[0-9]+"`).test(table()); i++) await sleep(100)
  assert.doesNotMatch(table(), /3fff:0:100::10|fdff:100::10/, 'no dallow6 element after kill')
  assert.doesNotMatch(table(), new RegExp(`"${name}-[0-9]+"`), 'nor any other element of the sandbox')
})

test('bad domain rules are refused with a clear 400 and change nothing', { skip }, async () => {
  await assert.rejects(Sandbox.create({ network: { allowOut: ['allowed.test'] } }), /denyOut to deny all other traffic/)
  await assert.rejects(Sandbox.create({ network: { denyOut: ['blocked.test'] } }), /allowOut only/)
  for (const bad of ['a..test', '-a.test', '*.test', 'a*.test', 'a_b c.test', 'x'.repeat(64) + '.test', 'a.test/8'])
    await assert.rejects(Sandbox.create({ network: { allowOut: [bad], denyOut: ALL } }), /400|domain|IPv4|label|wildcard/, bad)
  const sbx = await Sandbox.create({ network: { allowOut: ['allowed.test'], denyOut: ALL }, timeoutMs: 60_000 })
  try {
    await assert.rejects(sbx.updateNetwork({ allowOut: ['bad..name'], denyOut: ALL }), /label/)
    await assert.rejects(sbx.updateNetwork({ allowOut: ['allowed.test'] }), /denyOut/)
    assert.deepEqual((await sbx.getInfo()).network?.allowOut, ['allowed.test'], 'the rules are unchanged')
  } finally {
    await sbx.kill()
  }
})

test('domain rules survive a memory release and a daemon restart', { skip }, async () => {
  const sbx = await Sandbox.create({ network: { allowOut: ['allowed.test'], denyOut: ALL }, timeoutMs: 120_000 })
  try {
    assert.equal(await sbx.pause({ keepMemory: false }), true)
    assert.doesNotMatch(table(), /198\.51\.100\.10/, 'a released sandbox has no element')
    await Sandbox.connect(sbx.sandboxId)
    let out = await run(sbx, 'name:allowed.test', 'tcp:198.51.100.10:8080', 'name:denied.test')
    assert.match(out, /^name allowed\.test 198\.51\.100\.10$/m, 'the resumed sandbox resolves its name')
    assert.match(out, /^tcp 198\.51\.100\.10:8080 OK/m)
    assert.match(out, /^name denied\.test FAIL$/m)
    process.kill(d.pid, 'SIGKILL')
    d = await d.restart()
    const again = await Sandbox.connect(sbx.sandboxId)
    out = await run(again, 'name:allowed.test', 'tcp:198.51.100.10:8080', 'name:denied.test', 'name:secret2.attacker.test')
    assert.match(out, /^name allowed\.test 198\.51\.100\.10$/m, 'the new daemon\'s proxy knows the sandbox\'s names')
    assert.match(out, /^tcp 198\.51\.100\.10:8080 OK/m)
    assert.match(out, /^name denied\.test FAIL$/m)
    assert.doesNotMatch(queried(), /secret2/, 'and still refuses the others without asking the resolver')
  } finally {
    await Sandbox.kill(sbx.sandboxId).catch(() => {})
  }
})

test('without IPv6 for sandboxes, AAAA answers go over unchanged and open nothing; IPv6 fails at once, IPv4 by name works', { skip }, async () => {
  process.kill(d.pid, 'SIGTERM')
  d = await d.restart(undefined, { HUTCH_NET_POOL6: 'none' })
  assert.match(d.log(), /IPv4 only, no IPv6 for sandboxes: network_pool6 is none/)
  assert.doesNotMatch(table(), /@dallow6/, 'no IPv6 rules at all')
  const sbx = await Sandbox.create({ network: { allowOut: ['allowed.test'], denyOut: ALL }, timeoutMs: 60_000 })
  try {
    const out = await run(sbx, 'name6:allowed.test', 'tcp:3fff:0:100::10:8080', 'tcp:allowed.test:8080')
    assert.match(out, /^name6 allowed\.test 3fff:0:100::10$/m, 'the AAAA answer is handed over as the resolver gave it')
    assert.match(out, /^tcp 3fff:0:100::10:8080 ERR .*unreachable/mi, 'no IPv6 route: a client trying IPv6 fails at once (not TIMEOUT)')
    assert.match(out, /^tcp allowed\.test:8080 OK internet-allowed$/m, 'and reaches the name over IPv4')
    assert.doesNotMatch(table(), /3fff:0:100::10/, 'nothing learned from the AAAA answer')
  } finally {
    await sbx.kill()
  }
})
