// A slow nftables transaction for the DNS proxy's learned addresses delays
// only the answers that wait for it: the daemon's HTTP, another sandbox's
// DNS and the allowlisted sandbox's own refused names are answered at once.
// The test build's HUTCH_TEST_DNS_LEARN_DELAY_MS makes every learn
// transaction of the proxy's worker take 3 s (src/daemon/dns/
// dns_learn_queue.c); the release build has no such delay and the file is
// skipped there (its answers come back at once). Same world as
// network_dns.test.mjs (tests/integration/net/world.sh), traffic nowhere else.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { netWorld } from './networld.mjs'

const net = netWorld({ prefix: 'hns', seed: process.pid + 70000, pool: `10.${202 + (process.pid % 7) * 8}.0.0/17` })
const { skip, run } = net
const DELAY = 3000
let d

before(async () => {
  if (!skip) d = await net.up({ HUTCH_TEST_DNS_LEARN_DELAY_MS: String(DELAY) })
})
after(() => net.down(d))

// resolve NAME inside sbx: "<ms> <address|FAIL>"
const resolver = (name) => `python3 -c "
import socket, time
t = time.monotonic()
try:
    a = socket.getaddrinfo('${name}', 80, socket.AF_INET)[0][4][0]
except OSError:
    a = 'FAIL'
print(int((time.monotonic() - t) * 1000), a)"`
const resolve = async (sbx, name) => {
  const [ms, addr] = (await sbx.commands.run(resolver(name), { timeoutMs: 30_000 })).stdout.trim().split(' ')
  return { ms: Number(ms), addr }
}

test('a slow learn transaction delays only the answer waiting for it', { skip }, async (t) => {
  const allow = await Sandbox.create({ network: { allowOut: ['allowed.test'], denyOut: ['0.0.0.0/0'] }, timeoutMs: 120_000 })
  const open = await Sandbox.create({ timeoutMs: 120_000 })
  try {
    // warm both sandboxes' command paths, so the timings below are DNS only
    await allow.commands.run('true')
    await open.commands.run('true')
    const slow = resolve(allow, 'allowed.test')
    await new Promise((r) => setTimeout(r, 300)) // the answer is now waiting for the worker
    const others = []
    const t0 = Date.now()
    let worstHttp = 0
    while (Date.now() - t0 < DELAY - 800) {
      const h0 = Date.now()
      const res = await fetch(d.url + '/health')
      await res.arrayBuffer()
      assert.equal(res.status, 200)
      worstHttp = Math.max(worstHttp, Date.now() - h0)
      if (others.length === 0) others.push(resolve(open, 'allowed.test'), resolve(allow, 'denied.test'))
      await new Promise((r) => setTimeout(r, 50))
    }
    const [other, refused] = await Promise.all(others)
    const mine = await slow
    if (mine.ms < DELAY - 500) return t.skip(`the learn delay exists only in the test (sanitizer) build (answered in ${mine.ms} ms)`)
    assert.equal(mine.addr, '198.51.100.10', 'the allowlisted name resolves once its addresses are in')
    assert.ok(worstHttp < 1000, `HTTP answered while the transaction ran (worst ${worstHttp} ms)`)
    assert.equal(other.addr, '198.51.100.10')
    assert.ok(other.ms < 1000, `another sandbox's DNS answered at once (${other.ms} ms)`)
    assert.equal(refused.addr, 'FAIL')
    assert.ok(refused.ms < 1000, `a refused name answered at once (${refused.ms} ms)`)
    // and the learned address opens, as without the delay
    const out = await run(allow, 'tcp:198.51.100.10:8080')
    assert.match(out, /^tcp 198\.51\.100\.10:8080 OK/m)
  } finally {
    await allow.kill().catch(() => {})
    await open.kill().catch(() => {})
  }
})
