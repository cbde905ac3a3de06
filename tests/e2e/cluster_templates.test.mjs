// Templates and volumes across the nodes of a cluster (E2E_STORE=postgresql;
// skipped otherwise): a template built on one node is recorded in the store
// with the checksum of its transfer stream, placement prefers the nodes
// that have it, and a node placed a create without it fetches it from one
// that has it (node to node, authenticated, checksummed); a copy whose
// checksum does not match, or whose archive plays path tricks, installs
// nothing. A copy older than a rebuild under the same id is fetched again
// (its sandboxes keep the old one). A create that mounts a volume goes to
// the volume's node, and volume calls are sent there.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash, createHmac, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, useDaemon, api, sleep, root, hutchBin, makeRoot } from './harness.mjs'

const pgDir = process.env.E2E_STORE === 'postgresql' ? process.env.HUTCH_TEST_PG_DIR : null
const skip = pgDir ? false : 'E2E_STORE=postgresql is not set (tests/e2e/run.sh starts a server then)'
const pgsh = (...args) => execFileSync(join(root, 'tests', 'pg.sh'), args).toString().trim()
const dbName = `hutch_cltpl_${process.pid}`
let uri, slots, secretDir, secret, work, nodes = []

const sql = (query) => execFileSync('psql', [uri, '-Atc', query]).toString().trim()
const nodeArgs = (name) => ['--store', uri, '--node-name', name, '--slots-dir', slots,
  '--cluster-secret-file', join(secretDir, 'secret')]
const nodeEnv = (name) => ({ HUTCH_CGROUP_PARENT: `hutch-e2e-${process.pid}-${name}` })
const ownerOf = (id) => sql(`SELECT owner FROM sandboxes WHERE id = '${id}'`)
const tplDir = (n) => join(n.base, 'data', 'templates')
// what a failed fetch could leave: the template, its stream, a staged build
const leftovers = (n, id) => readdirSync(tplDir(n)).filter((e) => e === id || e.startsWith('.'))
const drain = (names) => sql(`UPDATE nodes SET draining = (name IN (${names.map((n) => `'${n}'`).join(',') || "''"}))`)
const sign = (method, target, t = Date.now(), node = 'n3', key = secret) =>
  `v2 t=${t} n=${node} p=- c=- s=` + createHmac('sha256', key).update(`hutch-forward-v2\n${method}\n${target}\n${t}\n${node}\n-\n-`).digest('hex')

async function until(what, fn, ms = 8000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) if (fn()) return
  assert.fail(`timed out waiting for ${what}`)
}

before(async () => {
  if (skip) return
  uri = pgsh('createdb', pgDir, dbName)
  slots = mkdtempSync(join(tmpdir(), 'hutch-slots-'))
  secretDir = mkdtempSync(join(tmpdir(), 'hutch-secret-'))
  work = mkdtempSync(join(tmpdir(), 'hutch-e2e-cltpl-'))
  secret = randomBytes(24).toString('hex')
  writeFileSync(join(secretDir, 'secret'), secret + '\n', { mode: 0o600 })
  nodes.push(await startDaemon(nodeArgs('n1'), null, nodeEnv('n1')))
  nodes.push(await startDaemon(nodeArgs('n2'), { apiKey: nodes[0].apiKey }, nodeEnv('n2')))
  nodes.push(await startDaemon(nodeArgs('n3'), { apiKey: nodes[0].apiKey }, nodeEnv('n3')))
  // built on n1 only, while it runs: n1 publishes it with its next renewal
  makeRoot(join(work, 'root'))
  writeFileSync(join(work, 'root', 'marker'), 'built on n1\n')
  const b = spawnSync(hutchBin, ['template', 'build', 'shipped', '--data-dir', join(nodes[0].base, 'data'),
    '--from', join(work, 'root'), '--env', 'SHIPPED=yes'], { env: nodes[0].env, encoding: 'utf8' })
  assert.equal(b.status, 0, b.stderr)
  await until('n1 to publish the template', () =>
    sql("SELECT count(*) FROM templates t JOIN nodes n ON n.name = t.node WHERE t.id = 'shipped'" +
      " AND n.name = 'n1' AND 'shipped' = ANY(string_to_array(n.templates, ','))") === '1')
})

after(async () => {
  for (const n of nodes) {
    const st = await n.stop()
    assert.equal(st.code, 0, `${n.url} exit ${JSON.stringify(st)}; log tail: ${n.log().slice(-2000)}`)
  }
  if (uri) { try { pgsh('dropdb', pgDir, dbName) } catch {} }
  for (const d of [slots, secretDir, work]) if (d) rmSync(d, { recursive: true, force: true })
})

test('the store records the template with the checksum of the stream its node sends', { skip }, async () => {
  const sum = sql("SELECT checksum FROM templates WHERE id = 'shipped'")
  assert.match(sum, /^sha256:[0-9a-f]{64}$/)
  assert.equal(JSON.parse(readFileSync(join(tplDir(nodes[0]), 'shipped', 'template.json'))).checksum, sum)
  // the stream n1 sends a node, hashed here: the same bytes as at build time
  const target = '/cluster/templates/shipped'
  const res = await fetch(nodes[0].url + target, { headers: { 'X-Hutch-Forwarded': sign('GET', target) } })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'application/x-tar')
  const body = Buffer.from(await res.arrayBuffer())
  assert.equal('sha256:' + createHash('sha256').update(body).digest('hex'), sum)
  assert.ok(body.includes('built on n1'), 'the marker is in the stream')
  assert.ok(!body.includes('opt/hutch/bin/sudo'), "each node's own sudo shim is not sent")
})

test('attack: a template fetch without a valid node proof is refused (403)', { skip }, async () => {
  const target = '/cluster/templates/shipped'
  const cases = {
    'no proof': {},
    'made up': { 'X-Hutch-Forwarded': `v1 t=${Date.now()} n=n3 p=- s=${'0'.repeat(64)}` },
    'another secret': { 'X-Hutch-Forwarded': sign('GET', target, Date.now(), 'n3', 'not-the-secret') },
    'another target': { 'X-Hutch-Forwarded': sign('GET', '/cluster/templates/base') },
    'too old': { 'X-Hutch-Forwarded': sign('GET', target, Date.now() - 60_000) },
    'an API key instead': { 'X-API-KEY': nodes[0].apiKey },
  }
  for (const [what, headers] of Object.entries(cases)) {
    const res = await fetch(nodes[0].url + target, { headers })
    const text = await res.text()
    assert.equal(res.status, 403, `${what}: ${res.status} ${text}`)
    assert.ok(!text.includes('built on n1'), what)
  }
  // nor does a proof open a path outside the templates
  const dots = '/cluster/templates/..%2f..%2fetc'
  const res = await fetch(nodes[0].url + dots, { headers: { 'X-Hutch-Forwarded': sign('GET', dots) } })
  assert.equal(res.status, 404)
})

test('a checksum that does not match: the create fails saying so, and nothing is installed', { skip }, async () => {
  const good = sql("SELECT checksum FROM templates WHERE id = 'shipped'")
  drain(['n1', 'n3'])
  sql(`UPDATE templates SET checksum = 'sha256:${'0'.repeat(64)}' WHERE id = 'shipped'`)
  try {
    const r = await api(nodes[1], 'POST', '/sandboxes', { templateID: 'shipped', timeout: 60 })
    assert.equal(r.status, 502, r.text)
    assert.match(r.json.message, /fetch template shipped from node n1: the copy's checksum sha256:[0-9a-f]{64} is not the store's/)
    assert.deepEqual(leftovers(nodes[1], 'shipped'), [], 'nothing left on n2')
    assert.equal(sql("SELECT count(*) FROM sandboxes WHERE template = 'shipped'"), '0')
  } finally {
    sql(`UPDATE templates SET checksum = '${good}' WHERE id = 'shipped'`)
    drain([])
  }
})

test('n1 draining: a create of its template through n2 is placed on n2, which fetches it and runs it', { skip }, async () => {
  drain(['n1', 'n3'])
  useDaemon(nodes[1])
  let sbx
  try {
    sbx = await Sandbox.create('shipped', { timeoutMs: 60_000 })
    assert.equal(ownerOf(sbx.sandboxId), 'n2')
    assert.equal((await sbx.commands.run('cat /marker; echo $SHIPPED')).stdout, 'built on n1\nyes\n')
    assert.match(nodes[1].log(), /template shipped fetched from node n1 and installed: \d+ bytes, \d+ files/)
    assert.deepEqual(leftovers(nodes[1], 'shipped'), ['shipped'], 'the template, and no stream or staged build')
    // n2's copy has the store's checksum, and n2 now offers it too
    assert.equal(JSON.parse(readFileSync(join(tplDir(nodes[1]), 'shipped', 'template.json'))).checksum,
      sql("SELECT checksum FROM templates WHERE id = 'shipped'"))
    await until('n2 to publish its copy', () =>
      sql("SELECT 'shipped' = ANY(string_to_array(templates, ',')) FROM nodes WHERE name = 'n2'") === 't')
  } finally {
    await sbx?.kill()
    drain([])
  }
})

// n2 has a copy of 'shipped' (the test above) when n1 builds it again
// under the same id: n2 notices by the store's record (a later build,
// another checksum), fetches the new build for its next create, and the
// sandbox that runs on the old copy keeps it until it ends.
test('a template rebuilt on n1: n2 refetches it at its next create; a sandbox on the old copy keeps it', { skip }, async () => {
  drain(['n1', 'n3'])
  useDaemon(nodes[1])
  let oldSbx, newSbx
  try {
    oldSbx = await Sandbox.create('shipped', { timeoutMs: 60_000 })
    assert.equal(ownerOf(oldSbx.sandboxId), 'n2')
    assert.equal((await oldSbx.commands.run('cat /marker')).stdout, 'built on n1\n')
    const before = sql("SELECT checksum FROM templates WHERE id = 'shipped'")
    // the rebuild on n1 (no sandbox of n1 uses it)
    rmSync(join(tplDir(nodes[0]), 'shipped'), { recursive: true, force: true })
    writeFileSync(join(work, 'root', 'marker'), 'rebuilt on n1\n')
    const b = spawnSync(hutchBin, ['template', 'build', 'shipped', '--data-dir', join(nodes[0].base, 'data'),
      '--from', join(work, 'root'), '--env', 'SHIPPED=again'], { env: nodes[0].env, encoding: 'utf8' })
    assert.equal(b.status, 0, b.stderr)
    await until('n1 to record the new build', () =>
      sql("SELECT checksum FROM templates WHERE id = 'shipped'") !== before)
    const after = sql("SELECT checksum FROM templates WHERE id = 'shipped'")
    assert.equal(sql("SELECT node FROM templates WHERE id = 'shipped'"), 'n1')
    newSbx = await Sandbox.create('shipped', { timeoutMs: 60_000 })
    assert.equal(ownerOf(newSbx.sandboxId), 'n2')
    assert.equal((await newSbx.commands.run('cat /marker; echo $SHIPPED')).stdout, 'rebuilt on n1\nagain\n')
    assert.match(nodes[1].log(), /template shipped: the copy here is older than the store's build; fetching it from node n1/)
    assert.equal(JSON.parse(readFileSync(join(tplDir(nodes[1]), 'shipped', 'template.json'))).checksum, after)
    // the old copy, set aside, still under the old sandbox
    const aside = () => readdirSync(tplDir(nodes[1])).filter((e) => e.startsWith('.stale-shipped-'))
    assert.equal(aside().length, 1, readdirSync(tplDir(nodes[1])).join(' '))
    assert.equal((await oldSbx.commands.run('cat /marker; ls /')).stdout.split('\n')[0], 'built on n1')
    await sleep(2500) // a sweep or more: it stays while its sandbox runs
    assert.equal(aside().length, 1)
    await oldSbx.kill()
    oldSbx = null
    await until('the old copy to be removed', () => aside().length === 0 &&
      !readdirSync(tplDir(nodes[1])).some((e) => e.startsWith('.delete-')))
    assert.equal((await newSbx.commands.run('cat /marker')).stdout, 'rebuilt on n1\n')
    // current now: the next create fetches nothing
    const fetches = (nodes[1].log().match(/template shipped fetched from node n1/g) || []).length
    const third = await api(nodes[1], 'POST', '/sandboxes', { templateID: 'shipped', timeout: 30 })
    assert.equal(third.status, 201, third.text)
    await api(nodes[1], 'DELETE', `/sandboxes/${third.json.sandboxID}`)
    assert.equal((nodes[1].log().match(/template shipped fetched from node n1/g) || []).length, fetches)
  } finally {
    await oldSbx?.kill()
    await newSbx?.kill()
    drain([])
  }
})

test('placement prefers the nodes that have the template; the others only when those are full', { skip }, async () => {
  // n1 and n2 have it now, n3 does not
  const made = []
  try {
    for (let i = 0; i < 4; i++) {
      const r = await api(nodes[2], 'POST', '/sandboxes', { templateID: 'shipped', timeout: 60 })
      assert.equal(r.status, 201, r.text)
      made.push(r.json.sandboxID)
    }
    assert.deepEqual([...new Set(made.map(ownerOf))].sort(), ['n1', 'n2'])
    assert.ok(!existsSync(join(tplDir(nodes[2]), 'shipped')), 'n3 fetched nothing')
  } finally {
    await Promise.all(made.map((id) => api(nodes[0], 'DELETE', `/sandboxes/${id}`)))
  }
})

test('a create that mounts a volume runs on the node whose disk holds it, or says why it cannot', { skip }, async () => {
  const v = await api(nodes[2], 'POST', '/volumes', { name: 'n3-data' })
  assert.equal(v.status, 201, v.text)
  assert.equal(sql("SELECT node FROM volumes WHERE name = 'n3-data'"), 'n3')
  const body = { templateID: 'base', timeout: 60, volumeMounts: [{ name: 'n3-data', path: '/data' }] }
  const made = []
  try {
    for (const n of [nodes[0], nodes[1]]) {
      const r = await api(n, 'POST', '/sandboxes', body)
      assert.equal(r.status, 201, r.text)
      made.push(r.json.sandboxID)
      assert.equal(ownerOf(r.json.sandboxID), 'n3')
    }
    drain(['n3'])
    const r = await api(nodes[0], 'POST', '/sandboxes', body)
    assert.equal(r.status, 503, r.text)
    assert.match(r.json.message, /volume 'n3-data' lives on node n3, which is draining/)
  } finally {
    drain([])
    await Promise.all(made.map((id) => api(nodes[0], 'DELETE', `/sandboxes/${id}`)))
    await api(nodes[2], 'DELETE', `/volumes/${v.json.volumeID}`)
  }
})

// A volume's files and mounts are on its node: a DELETE through another
// node is forwarded there (which checks its own sandboxes' mounts and
// removes its own files), and answered 503 naming the node while that
// node is down; reads are answered from the store by any node.
test('volume calls through another node reach the volume\'s node; 503 naming it while it is down', { skip }, async () => {
  const v = await api(nodes[2], 'POST', '/volumes', { name: 'n3-routed' })
  assert.equal(v.status, 201, v.text)
  const id = v.json.volumeID
  const files = () => readdirSync(join(nodes[2].base, 'data', 'volumes')).filter((e) => e.includes(id))
  assert.ok(files().length > 0, 'its files are on n3')
  const r = await api(nodes[0], 'POST', '/sandboxes',
    { templateID: 'base', timeout: 60, volumeMounts: [{ name: 'n3-routed', path: '/data' }] })
  assert.equal(r.status, 201, r.text)
  let sbx = r.json.sandboxID
  try {
    for (const n of nodes) {
      const got = await api(n, 'GET', `/volumes/${id}`)
      assert.equal(got.status, 200, got.text)
      assert.equal(got.json.name, 'n3-routed')
    }
    // n1 has no sandbox that mounts it: only n3 can say that one does
    const busy = await api(nodes[0], 'DELETE', '/volumes/n3-routed')
    assert.equal(busy.status, 409, busy.text)
    assert.match(busy.json.message, /mounted by a sandbox/)
    assert.equal((await api(nodes[1], 'DELETE', `/sandboxes/${sbx}`)).status, 204)
    sbx = null
    // n3 stopped: its lease runs out, and the call says where the volume is
    process.kill(nodes[2].pid, 'SIGSTOP')
    try {
      await until('n3\'s lease to expire', () => sql("SELECT lease_until < now() FROM nodes WHERE name = 'n3'") === 't', 15000)
      const down = await api(nodes[1], 'DELETE', `/volumes/${id}`)
      assert.equal(down.status, 503, down.text)
      assert.match(down.json.message, /volume 'n3-routed' lives on node n3, which is unavailable/)
      assert.ok(Number(down.headers.get('retry-after')) > 0)
      assert.equal(sql(`SELECT count(*) FROM volumes WHERE id = '${id}'`), '1', 'nothing deleted')
    } finally {
      process.kill(nodes[2].pid, 'SIGCONT')
    }
    await until('n3 to renew', () => sql("SELECT lease_until > now() FROM nodes WHERE name = 'n3'") === 't')
    const gone = await api(nodes[1], 'DELETE', `/volumes/${id}`)
    assert.equal(gone.status, 204, gone.text)
    assert.equal(sql(`SELECT count(*) FROM volumes WHERE id = '${id}'`), '0')
    assert.deepEqual(files(), [], 'n3 removed its files')
    assert.equal((await api(nodes[0], 'GET', `/volumes/${id}`)).status, 404)
  } finally {
    if (sbx) await api(nodes[0], 'DELETE', `/sandboxes/${sbx}`)
    await api(nodes[2], 'DELETE', `/volumes/${id}`)
  }
})

// A node of the store that sends an archive with path tricks, whose
// checksum the store even records (as if the store itself were not to be
// trusted): the copy is refused by the template writer, nothing is
// installed, and nothing is written outside the templates.
test('attack: a hostile archive from a node is refused and leaves nothing behind', { skip }, async () => {
  const outside = mkdtempSync(join(tmpdir(), 'hutch-e2e-cltpl-outside-'))
  const tar = execFileSync('python3', ['-c', `
import io, sys, tarfile
out = io.BytesIO()
with tarfile.open(fileobj=out, mode='w', format=tarfile.PAX_FORMAT) as t:
    def add(name, data=b'x', kind=tarfile.REGTYPE, link=''):
        i = tarfile.TarInfo(name); i.type = kind; i.linkname = link; i.size = len(data) if kind == tarfile.REGTYPE else 0
        t.addfile(i, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    add('etc/ok')
    add('up', kind=tarfile.SYMTYPE, link=sys.argv[1])
    add('up/planted-through-link')
    add('../../../../../../..' + sys.argv[1] + '/planted-by-dots')
sys.stdout.buffer.write(out.getvalue())`, outside])
  const sum = 'sha256:' + createHash('sha256').update(tar).digest('hex')
  const server = http.createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'application/x-tar' }); res.end(tar) })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const evilUrl = `http://127.0.0.1:${server.address().port}`
  // a live node that takes no placements (so the create is not sent to it)
  // and offers the template
  sql("INSERT INTO nodes (name, address, memory, cpu, pids, max_sandboxes, generation, lease_until, registered_at," +
    ` templates, draining) VALUES ('evil', '${evilUrl}', 1, 1, 1, 1, 1, now() + interval '1 hour', now(), 'hostile', true)`)
  sql("INSERT INTO templates (id, checksum, meta, node, created_at) VALUES ('hostile', '" + sum + "'," +
    ` '{"id":"hostile","public":true,"envs":{}}', 'evil', 1)`)
  try {
    const r = await api(nodes[0], 'POST', '/sandboxes', { templateID: 'hostile', timeout: 60 })
    assert.equal(r.status, 502, r.text)
    assert.match(r.json.message, /template hostile fetched from node evil, not installed: .*(\.\.|outside|refused)/)
    for (const n of nodes) assert.deepEqual(leftovers(n, 'hostile'), [], `nothing left on ${n.url}`)
    assert.deepEqual(readdirSync(outside), [], 'nothing written outside')
    assert.equal(sql("SELECT count(*) FROM sandboxes WHERE template = 'hostile'"), '0')
  } finally {
    server.close()
    sql("DELETE FROM nodes WHERE name = 'evil'")
    sql("DELETE FROM templates WHERE id = 'hostile'")
    rmSync(outside, { recursive: true, force: true })
  }
})
