// Port ingress speed, three paths to the same servers inside one sandbox, in
// one invocation, rounds interleaved (the order rotates every round):
//   direct: from inside the sandbox's network namespace (the floor);
//   nginx:  Debian's nginx as a reverse proxy, running on the host's files in
//           the sandbox's network namespace (nsenter --net), one worker, its
//           defaults for proxying (a new upstream connection per request,
//           response and request buffering on);
//   hutch:  from the host through `hutch serve` (E2b-Sandbox-Id/-Port).
// The clients are the same programs on every path: bench/ports_client.mjs
// (node) for latency and transfers, wrk for requests per second.
//   sudo node bench/ports_bench.mjs [--rounds 5] [--n 300] [--seconds 5] [--mib 1024] [--ws 1000] [--build build]
// Figures per path: latency of a small GET, new connection and keep-alive
// (median, p99 over all rounds' samples; added = path - direct); requests per
// second at 50 concurrent connections (wrk -t2 -c50, keep-alive and
// Connection: close; median of the rounds); MB/s for a --mib download and
// upload (median of the rounds); the daemon's RSS growth with --ws idle
// WebSockets open (to an asyncio server that answers 101 and then waits).
// The origins in the sandbox: nginx (the sandbox user's, its own config) on
// 8000 answers GET /small with "ok"; a Python server on 8001 streams /big
// and reads /up whole before it answers.
import http from 'node:http'
import net from 'node:net'
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, readdirSync, existsSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, stats, sleep, harness, sdk } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const { Sandbox } = sdk()
const { startDaemon } = await harness()
const rounds = Number(arg('rounds', 5))
const n = Number(arg('n', 300))
const seconds = Number(arg('seconds', 5))
const mib = Number(arg('mib', 1024))
const nws = Number(arg('ws', 1000))
const NGINX = arg('nginx', '/usr/sbin/nginx')
for (const tool of [NGINX, 'wrk', 'nsenter']) {
  if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
    console.error(`ports_bench: ${tool} is missing (scripts/install-deps.sh installs it)`)
    process.exit(1)
  }
}

// One thread for all upgrades: the sandbox's pids limit bounds threads.
const WS_SERVER = String.raw`
import asyncio
async def conn(r, w):
    while (await r.readline()) not in (b'\r\n', b''): pass
    w.write(b'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n')
    await w.drain()
    await r.read()
async def main():
    s = await asyncio.start_server(conn, '127.0.0.1', 8002, backlog=2048)
    await s.serve_forever()
asyncio.run(main())
`
const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1])

const BIG_SERVER = String.raw`
import http.server, socketserver
BLOCK = b'x' * (1 << 20)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        n = int(self.path.split('=')[1]) if '=' in self.path else 2
        self.send_response(200); self.send_header('Content-Length', str(n)); self.end_headers()
        while n > 0:
            b = BLOCK[:min(n, len(BLOCK))]; self.wfile.write(b); n -= len(b)
    def do_POST(self):
        n = int(self.headers['Content-Length'])
        while n > 0:
            n -= len(self.rfile.read(min(n, 1 << 20)))
        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(('127.0.0.1', 8001), H).serve_forever()
`

const ORIGIN_NGINX = `daemon off;
worker_processes 1;
pid /tmp/origin/nginx.pid;
error_log /tmp/origin/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path /tmp/origin/body;
  proxy_temp_path /tmp/origin/proxy;
  fastcgi_temp_path /tmp/origin/fastcgi;
  uwsgi_temp_path /tmp/origin/uwsgi;
  scgi_temp_path /tmp/origin/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:8000 backlog=1024;
    location / { default_type text/plain; return 200 "ok"; }
  }
}
`

// the reverse proxy hutch is compared with: a plain proxy_pass, the
// X-Forwarded-* headers hutch sets too, no body size limit, everything else
// nginx's defaults (an access log line per request, as hutch logs one)
const frontNginx = (dir) => `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 4096; }
http {
  access_log ${dir}/access.log; # its default (hutch logs every proxied request too)
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 0;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:8080 backlog=1024;
    proxy_set_header Host $host;
    proxy_set_header X-Forwarded-For $remote_addr;
    proxy_set_header X-Forwarded-Proto $scheme;
    proxy_set_header X-Forwarded-Host $host;
    location / { proxy_pass http://127.0.0.1:8000; }
    location /big { proxy_pass http://127.0.0.1:8001; }
    location /up { proxy_pass http://127.0.0.1:8001; }
  }
}
`

// A process of the sandbox, to enter its network namespace: the first pid
// in a cgroup named after it under the daemon's cgroup parent.
function sandboxPid(id) {
  const parent = process.env.HUTCH_CGROUP_PARENT || `hutch-e2e-${process.pid}`
  const roots = ['/sys/fs/cgroup', ...readdirSync('/sys/fs/cgroup').map((c) => join('/sys/fs/cgroup', c))]
  for (const r of roots) {
    const dir = join(r, parent)
    if (!existsSync(dir)) continue
    for (const g of readdirSync(dir)) {
      if (!g.includes(id)) continue
      const pid = readFileSync(join(dir, g, 'cgroup.procs'), 'utf8').split('\n').find(Boolean)
      if (pid) return Number(pid)
    }
  }
  throw new Error(`no process of sandbox ${id} under cgroup parent ${parent}`)
}

function exec(cmd, args) {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    p.stdout.on('data', (c) => { out += c })
    p.stderr.on('data', (c) => { err += c })
    p.on('exit', (c) => (c === 0 ? res(out) : rej(new Error(`${cmd} ${args.join(' ')}: exit ${c}: ${err}`))))
    p.on('error', rej)
  })
}

const confDir = mkdtempSync(join(tmpdir(), 'hutch-ports-bench-'))
// the per-sandbox connection limit (256 by default) must not cap --ws, and
// the upload is read whole before it is relayed (max_body bounds it today)
writeFileSync(join(confDir, 'hutch.conf'), `ingress.max_per_sandbox = ${nws + 100}\ningress.max_per_team = ${nws + 100}\n` +
  `max_body = ${Math.max(256, mib + 16)}M\n`)
const d = await startDaemon(['--config', join(confDir, 'hutch.conf')])
const hport = Number(new URL(d.url).port)
const sbx = await Sandbox.create({ timeoutMs: 3_600_000 })
let front = null

function get(path, sport) {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port: hport, path, headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': String(sport) }, agent: false }, (r) => {
      r.resume()
      r.on('end', () => res(r.statusCode))
    })
    req.on('error', rej)
    req.end()
  })
}
async function waitFor(what, f) {
  for (let i = 0; i < 100; i++) {
    if (await f().catch(() => false)) return
    await sleep(100)
  }
  throw new Error(`${what} did not start`)
}

try {
  await sbx.files.write('/tmp/big.py', BIG_SERVER)
  await sbx.files.write('/tmp/origin/nginx.conf', ORIGIN_NGINX)
  await sbx.commands.run('python3 /tmp/big.py', { background: true, timeoutMs: 0 })
  await sbx.commands.run('/usr/sbin/nginx -p /tmp/origin -c /tmp/origin/nginx.conf -e /tmp/origin/error.log', { background: true, timeoutMs: 0 })
  await waitFor('the origin on 8000', async () => (await get('/small', 8000)) === 200)
  await waitFor('the origin on 8001', async () => (await get('/small', 8001)) === 200)

  const netns = `--net=/proc/${sandboxPid(sbx.sandboxId)}/ns/net`
  const frontDir = mkdtempSync(join(tmpdir(), 'hutch-ports-nginx-'))
  chmodSync(frontDir, 0o755) // nginx's workers (its default user) write its temporary files there
  writeFileSync(join(frontDir, 'nginx.conf'), frontNginx(frontDir))
  front = spawn('nsenter', [netns, '--', NGINX, '-p', frontDir, '-c', join(frontDir, 'nginx.conf'), '-e', join(frontDir, 'error.log')], { stdio: 'inherit' })
  front.dir = frontDir

  const paths = {
    direct: { pre: ['nsenter', netns, '--'], small: 8000, big: 8001, hdr: () => [] },
    nginx: { pre: ['nsenter', netns, '--'], small: 8080, big: 8080, hdr: () => [] },
    hutch: { pre: [], small: hport, big: hport, hdr: (p) => ['E2b-Sandbox-Id: ' + sbx.sandboxId, 'E2b-Sandbox-Port: ' + p] },
  }
  const client = (p, mode, port, sport, extra) => {
    const argv = [...p.pre, process.execPath, join(here, 'ports_client.mjs'), mode, '--port', String(port),
      ...p.hdr(sport).flatMap((h) => ['--hdr', h]), ...extra]
    return exec(argv[0], argv.slice(1)).then((o) => JSON.parse(o))
  }
  await waitFor('nginx in the sandbox\'s namespace', () => client(paths.nginx, 'lat', 8080, 0, ['--n', '1']).then(() => true))

  // idle WebSockets first, while the heap is small: the daemon's RSS before and with them open
  await sbx.files.write('/tmp/ws.py', WS_SERVER)
  await sbx.commands.run('python3 /tmp/ws.py', { background: true, timeoutMs: 0 })
  const socks = []
  const wsOpen = () => new Promise((res, rej) => {
    const s = net.connect(hport, '127.0.0.1', () => s.write(`GET /ws HTTP/1.1\r\nHost: ${sbx.getHost(8002)}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a2V5a2V5a2V5a2V5a2V5aw==\r\nSec-WebSocket-Version: 13\r\n\r\n`))
    let b = ''
    s.on('data', (c) => { b += c; if (b.includes('\r\n\r\n')) { if (/^HTTP\/1\.1 101/.test(b)) res(s); else { s.destroy(); rej(new Error(b)) } } })
    s.on('error', rej)
  })
  // the server is up once an upgrade succeeds (a loaded machine takes a while)
  await waitFor('the WebSocket server on 8002', async () => { (await wsOpen()).destroy(); return true })
  await sleep(500)
  const rss0 = rssKiB(d.pid)
  for (let i = 0; i < nws; i += 50)
    await Promise.all(Array.from({ length: Math.min(50, nws - i) }, () => wsOpen().then((s) => socks.push(s))))
  await sleep(1000)
  const rss1 = rssKiB(d.pid)
  socks.forEach((s) => s.destroy())
  await sleep(1000)

  const names = Object.keys(paths)
  const lat = { new: {}, keepalive: {} }
  const per = {}
  const push = (o, k, v) => { (o[k] ??= []).push(v) }
  for (let r = 0; r < rounds; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length])
    for (const name of order) {
      const p = paths[name]
      for (const ka of ['new', 'keepalive']) {
        const out = await client(p, 'lat', p.small, 8000, ['--n', String(n), '--keepalive', ka === 'keepalive' ? '1' : '0'])
        lat[ka][name] = (lat[ka][name] ?? []).concat(out.ms)
        push(per, `${name}.lat_${ka}_median`, stats(out.ms).median)
      }
      for (const [k, extra] of [['rps_keepalive', []], ['rps_new_conn', ['-H', 'Connection: close']]]) {
        const argv = [...p.pre, 'wrk', '-t2', '-c50', `-d${seconds}s`, ...p.hdr(8000).flatMap((h) => ['-H', h]), ...extra,
          `http://127.0.0.1:${p.small}/small`]
        const out = await exec(argv[0], argv.slice(1))
        const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1])
        const errs = /Non-2xx or 3xx responses: (\d+)/.exec(out)
        if (errs) throw new Error(`${name}: wrk saw ${errs[1]} non-2xx answers`)
        push(per, `${name}.${k}`, rps)
      }
      push(per, `${name}.download_MBps`, (await client(p, 'down', p.big, 8001, ['--bytes', String(mib << 20)])).MBps)
      push(per, `${name}.upload_MBps`, (await client(p, 'up', p.big, 8001, ['--bytes', String(mib << 20)])).MBps)
      console.error(`round ${r + 1}/${rounds} ${name} done`)
    }
  }
  const med = (xs) => stats(xs).median
  const fix = (x, k = 3) => +x.toFixed(k)
  const result = {}
  for (const name of names) {
    const o = {}
    for (const ka of ['new', 'keepalive']) {
      const s = stats(lat[ka][name])
      const base = stats(lat[ka].direct)
      o[`lat_${ka}_ms`] = { median: fix(s.median), p99: fix(s.p99), round_medians: per[`${name}.lat_${ka}_median`].map((x) => fix(x)) }
      if (name !== 'direct') o[`added_${ka}_ms`] = { median: fix(s.median - base.median), p99: fix(s.p99 - base.p99) }
    }
    for (const k of ['rps_keepalive', 'rps_new_conn', 'download_MBps', 'upload_MBps'])
      o[k] = { median: Math.round(med(per[`${name}.${k}`])), rounds: per[`${name}.${k}`].map((x) => Math.round(x)) }
    result[name] = o
  }
  const ratio = (k, sub) => fix(result.hutch[k][sub] / result.nginx[k][sub], 2)
  result.hutch_over_nginx = {
    added_new_median: ratio('added_new_ms', 'median'), added_new_p99: ratio('added_new_ms', 'p99'),
    added_keepalive_median: ratio('added_keepalive_ms', 'median'), added_keepalive_p99: ratio('added_keepalive_ms', 'p99'),
    rps_keepalive: ratio('rps_keepalive', 'median'), rps_new_conn: ratio('rps_new_conn', 'median'),
    download: ratio('download_MBps', 'median'), upload: ratio('upload_MBps', 'median'),
  }
  result.idle_websockets = { count: nws, daemon_rss_growth_MiB: fix((rss1 - rss0) / 1024, 1) }
  result.params = { rounds, n, seconds, mib }
  console.log(JSON.stringify(result, null, 1))
} catch (e) {
  console.error(e)
  console.error('the daemon\'s log, last lines:\n' + d.log().split('\n').slice(-40).join('\n'))
  if (front) console.error('nginx\'s log:\n' + readFileSync(join(front.dir, 'error.log'), 'utf8').split('\n').slice(-20).join('\n'))
  const ps = await sbx.commands.run('ps -eo pid,rss,args; cat /tmp/origin/error.log; cat /sys/fs/cgroup/memory.events 2>/dev/null', { timeoutMs: 10_000 }).catch((e) => ({ stdout: String(e) }))
  console.error('in the sandbox:\n' + ps.stdout)
  process.exitCode = 1
} finally {
  if (front) {
    front.kill('SIGTERM')
    await new Promise((r) => front.exitCode !== null ? r() : front.once('exit', r))
    rmSync(front.dir, { recursive: true, force: true })
  }
  await sbx.kill().catch(() => {})
  await d.stop()
  rmSync(confDir, { recursive: true, force: true })
}
