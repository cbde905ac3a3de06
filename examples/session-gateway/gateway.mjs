// A session gateway: the flow an agent platform runs in front of hutch,
// written with the unmodified e2b SDK. Start as many replicas as you like;
// they share nothing but the hutch server.
//
//   E2B_API_KEY=... E2B_API_URL=http://127.0.0.1:3000 E2B_SANDBOX_URL=http://127.0.0.1:3000 \
//     node gateway.mjs --port 8081 [--idle-ms 900000] [--reclaim-interval-ms 60000] [--workspace volume|none]
//
//   POST /sessions/{tenant}/{session}/exec  {"code": "...", "language": "bash"|"python"}
//     -> {"sandboxId", "stdout", "stderr", "exitCode"}
//   POST /admin/reclaim   one reclaim pass now (operators, tests) -> {"reclaimed": [ids]}
//
// One sandbox per chat session, tagged lea.session_id / lea.tenant_id:
// - created on the session's first execution, with an Idempotency-Key derived from the session, so concurrent
//   first requests on different replicas (or a replica that restarted and forgot) get the same sandbox;
// - kept alive while the session is active and paused after --idle-ms without activity (onTimeout: pause), then
//   resumed by the next request (autoResume: any call to the sandbox wakes it, working directory intact);
// - reclaimed by a loop (every --reclaim-interval-ms) that deletes only sandboxes that are tagged and paused, with
//   hutch's conditional delete (DELETE ...?state=paused), so a session resumed a moment ago is never deleted;
// - its workspace, /workspace, is a named volume (ws-<tenant>-<session>) that outlives every sandbox of the session
//   (--workspace none: no volume, commands run in the sandbox's home; for hutch clusters, whose volumes stay on the
//   node that made them).
// Every decision is made from the server's state, never from a replica's memory: the cache below only saves a
// round trip.
import { createServer } from 'node:http'
import { createHash } from 'node:crypto'
import { Sandbox } from 'e2b'

const arg = (name, def) => {
  const i = process.argv.indexOf('--' + name)
  return i > 0 ? process.argv[i + 1] : def
}
const port = Number(arg('port', 8081))
const idleMs = Number(arg('idle-ms', 15 * 60 * 1000))
const reclaimEveryMs = Number(arg('reclaim-interval-ms', 60 * 1000))
const withVolume = arg('workspace', 'volume') !== 'none'
const workdir = withVolume ? '/workspace' : '/home/user'
const apiUrl = process.env.E2B_API_URL
const apiKey = process.env.E2B_API_KEY
const log = (...a) => console.log(new Date().toISOString(), `gateway:${port}`, ...a)

const safe = (s) => /^[A-Za-z0-9_-]{1,64}$/.test(s)
const sessionKey = (tenant, session) => `lea-${createHash('sha256').update(`${tenant}/${session}`).digest('hex').slice(0, 40)}`

async function hutch(method, path, body) {
  const r = await fetch(apiUrl + path, {
    method,
    headers: { 'X-API-KEY': apiKey, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await r.text()
  return { status: r.status, json: text ? JSON.parse(text) : undefined }
}

// The session's workspace volume: created once; "already exists" is fine (another replica did it).
async function ensureVolume(name) {
  const r = await hutch('POST', '/volumes', { name })
  if (r.status !== 201 && r.status !== 409) throw new Error(`volume ${name}: ${r.status} ${JSON.stringify(r.json)}`)
}

const cache = new Map() // session key -> Sandbox (only to save a round trip)

// A create with the session's Idempotency-Key. On a cluster of hutch nodes, creates with one key that reach
// different nodes at the same instant may meet on the store's unique key: the loser is answered 409, and asking
// again a moment later gets the sandbox the winner made (200).
async function createOnce(opts) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await Sandbox.create(opts)
    } catch (e) {
      if (attempt >= 5 || !/^409\b|idempotency key/.test(e?.message ?? '')) throw e
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)))
    }
  }
}

async function sandboxFor(tenant, session) {
  const key = sessionKey(tenant, session)
  const cached = cache.get(key)
  if (cached) return cached
  const volume = `ws-${key}`
  if (withVolume) await ensureVolume(volume)
  const sbx = await createOnce({
    timeoutMs: idleMs,
    lifecycle: { onTimeout: 'pause', autoResume: true },
    metadata: { 'lea.session_id': session, 'lea.tenant_id': tenant },
    ...(withVolume ? { volumeMounts: { '/workspace': volume } } : {}),
    headers: { 'Idempotency-Key': key },
  })
  cache.set(key, sbx)
  return sbx
}

async function execute(tenant, session, code, language) {
  const cmd = language === 'python' ? `python3 - <<'__LEA_EOF__'\n${code}\n__LEA_EOF__` : code
  for (let attempt = 0; ; attempt++) {
    const sbx = await sandboxFor(tenant, session)
    try {
      const r = await sbx.commands.run(cmd, { cwd: workdir, timeoutMs: 120000 })
      return { sandboxId: sbx.sandboxId, stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode }
    } catch (e) {
      if (e?.exitCode !== undefined) return { sandboxId: sbx.sandboxId, stdout: e.stdout, stderr: e.stderr, exitCode: e.exitCode }
      // reclaimed meanwhile (or killed): forget it and ask the server again, once
      cache.delete(sessionKey(tenant, session))
      if (attempt > 0) throw e
      log('sandbox gone, asking the server again:', e.message)
    }
  }
}

// Delete tagged, paused sandboxes. The delete is conditional on the server: a sandbox that a request resumed
// after the list was taken answers 409 and stays.
async function reclaim() {
  const paused = await Sandbox.list({ query: { state: ['paused'] }, limit: 1000 }).nextItems()
  const reclaimed = []
  for (const s of paused) {
    if (!s.metadata?.['lea.session_id']) continue // not ours
    const r = await hutch('DELETE', `/sandboxes/${s.sandboxId}?state=paused`)
    if (r.status === 204) {
      reclaimed.push(s.sandboxId)
      log('reclaimed', s.sandboxId, 'session', s.metadata['lea.session_id'])
    } else if (r.status !== 404 && r.status !== 409) {
      log('reclaim', s.sandboxId, '->', r.status)
    }
  }
  return reclaimed
}
let reclaiming = false
setInterval(async () => {
  if (reclaiming) return
  reclaiming = true
  try { await reclaim() } catch (e) { log('reclaim failed:', e.message) } finally { reclaiming = false }
}, reclaimEveryMs)

const server = createServer(async (req, res) => {
  const m = req.url.match(/^\/sessions\/([^/]+)\/([^/]+)\/exec$/)
  const reply = (status, body) => {
    res.writeHead(status, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify(body))
  }
  if (req.method === 'GET' && req.url === '/healthz') return reply(200, { ok: true })
  if (req.method === 'POST' && req.url === '/admin/reclaim') {
    try { return reply(200, { reclaimed: await reclaim() }) } catch (e) { return reply(502, { error: e.message }) }
  }
  if (req.method !== 'POST' || !m || !safe(m[1]) || !safe(m[2])) return reply(404, { error: 'POST /sessions/{tenant}/{session}/exec' })
  let body = ''
  for await (const chunk of req) body += chunk
  try {
    const { code, language = 'bash' } = JSON.parse(body || '{}')
    if (typeof code !== 'string') return reply(400, { error: 'code must be a string' })
    reply(200, await execute(m[1], m[2], code, language))
  } catch (e) {
    log('exec failed:', e.message)
    reply(502, { error: e.message })
  }
})
// --port 0 takes a free port: the line says which (tests start replicas that way, so no two can race for one)
server.listen(port, '127.0.0.1', () =>
  log(`listening on 127.0.0.1:${server.address().port}, idle ${idleMs} ms, reclaim every ${reclaimEveryMs} ms`))
