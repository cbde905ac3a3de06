// A test file's own network world and the daemon that uses it: the stand-in
// internet of tests/integration/net/world.sh (namespaces and veths of the
// test's own, named after `tag`), a nat-mode `hutch serve` whose sandboxes
// use it (nftables table `name`, its own IPv4 and IPv6 pools), and the probe
// that sandboxes run. Nothing is sent anywhere else.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startDaemon, root } from './harness.mjs'

const have = (cmd) => { try { execFileSync('sh', ['-c', `command -v ${cmd}`]); return true } catch { return false } }
const ENV_KEYS = ['HUTCH_NET', 'HUTCH_NET_NAME', 'HUTCH_NET_POOL', 'HUTCH_NET_DNS', 'HUTCH_NET_UPLINK', 'HUTCH_NET_ALLOW',
  'HUTCH_NET_DENY', 'HUTCH_NET_POOL6']

// prefix: the table and interface prefix; seed: what tells this file's
// world, pools and table from another file's; pool: the IPv4 pool.
export function netWorld({ prefix, seed, pool }) {
  const tag = String(seed % 100000)
  const world = join(root, 'tests/integration/net/world.sh')
  const probe = readFileSync(join(root, 'tests/integration/net/probe.py'), 'utf8')
  const net = {
    tag,
    name: prefix + tag,
    pool6: `fd68:7574:6368:${(0x1000 + (seed % 0xe000)).toString(16)}`,
    skip: !have('ip') || !have('nft') ? 'ip or nft missing' : false,
    // the world up, then a daemon on it (extraEnv: more of its environment)
    async up(extraEnv = {}) {
      execFileSync(world, ['up', tag], { stdio: 'inherit' })
      Object.assign(process.env, {
        HUTCH_NET: 'nat', HUTCH_NET_NAME: net.name, HUTCH_NET_POOL: pool,
        HUTCH_NET_DNS: '198.51.100.53', HUTCH_NET_UPLINK: 'hnti' + tag, HUTCH_NET_ALLOW: '', HUTCH_NET_DENY: '',
        HUTCH_NET_POOL6: `${net.pool6}::/64`,
      })
      return startDaemon([], null, extraEnv)
    },
    // the daemon d stopped (it must exit 0), the world and table removed
    async down(d) {
      const st = await d?.stop()
      if (!net.skip) {
        try { execFileSync(world, ['down', tag]) } catch {}
        try { execFileSync('nft', ['delete', 'table', 'inet', net.name]) } catch {}
      }
      for (const k of ENV_KEYS) delete process.env[k]
      if (d) assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
    },
    // run probe.py in sbx (tcp:HOST:PORT, name:NAME, ...): its output
    async run(sbx, ...probes) {
      await sbx.files.write('/tmp/probe.py', probe)
      const r = await sbx.commands.run(`python3 /tmp/probe.py ${probes.join(' ')}`, { timeoutMs: 60_000 })
      return r.stdout
    },
    table: () => execFileSync('nft', ['list', 'table', 'inet', net.name]).toString(),
  }
  return net
}
