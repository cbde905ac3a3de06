// Port ingress speed: a Python server inside a sandbox reached through
// hutch serve (E2b-Sandbox-Port), and the same server reached directly from
// inside the sandbox's network namespace (a Python client in the sandbox: the
// floor, without hutch, with a slower client).
//   node bench/ports_bench.mjs [--n 500] [--seconds 5] [--mib 128] [--ws 1000] [--build build]
// Figures: latency of a small GET on a new connection (median, p99),
// requests per second with 50 concurrent clients, MB/s for a download and an
// upload of --mib MiB; the daemon's RSS growth with --ws idle WebSockets open
// (to an asyncio server that answers every upgrade with 101 and then waits).
import http from 'node:http'
import net from 'node:net'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { arg, now, stats, harness, sdk } from './lib.mjs'

const { Sandbox } = sdk()
const { startDaemon } = await harness()
const n = Number(arg('n', 500))
const seconds = Number(arg('seconds', 5))
const mib = Number(arg('mib', 128))
const nws = Number(arg('ws', 1000))

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

const SERVER = String.raw`
import http.server, socketserver, sys
BLOCK = b'x' * (1 << 20)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith('/big'):
            n = int(self.path.split('=')[1])
            self.send_response(200); self.send_header('Content-Length', str(n)); self.end_headers()
            while n > 0:
                b = BLOCK[:min(n, len(BLOCK))]; self.wfile.write(b); n -= len(b)
        else:
            self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')
    def do_POST(self):
        n = int(self.headers['Content-Length'])
        while n > 0:
            n -= len(self.rfile.read(min(n, 1 << 20)))
        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(('127.0.0.1', 8000), H).serve_forever()
`

// The floor: the same figures from inside the sandbox (Python's client).
const DIRECT = String.raw`
import http.client, json, sys, time
n, mib = int(sys.argv[1]), int(sys.argv[2])
lat = []
for i in range(n):
    t = time.perf_counter()
    c = http.client.HTTPConnection('127.0.0.1', 8000); c.request('GET', '/small'); c.getresponse().read(); c.close()
    lat.append((time.perf_counter() - t) * 1000)
lat.sort()
t = time.perf_counter()
c = http.client.HTTPConnection('127.0.0.1', 8000); c.request('GET', '/big?n=%d' % (mib << 20)); r = c.getresponse()
while r.read(1 << 20): pass
down = mib * 1.048576 / (time.perf_counter() - t)
print(json.dumps({'median': lat[len(lat) // 2], 'p99': lat[min(len(lat) - 1, int(len(lat) * 0.99))], 'download_MBps': down}))
`

// the per-sandbox connection limit (256 by default) must not cap --ws
const confDir = mkdtempSync(join(tmpdir(), 'hutch-ports-bench-'))
writeFileSync(join(confDir, 'hutch.conf'), `ingress.max_per_sandbox = ${nws + 100}\ningress.max_per_team = ${nws + 100}\n`)
const d = await startDaemon(['--config', join(confDir, 'hutch.conf')])
const port = Number(new URL(d.url).port)
const sbx = await Sandbox.create({ timeoutMs: 600_000 })
const headers = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' }

function get(path, onData) {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, agent: false }, (r) => {
      r.on('data', onData || (() => {}))
      r.on('end', () => res(r.statusCode))
    })
    req.on('error', rej)
    req.end()
  })
}

function post(bytes) {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/up', headers: { ...headers, 'Content-Length': bytes }, agent: false }, (r) => {
      r.resume()
      r.on('end', () => res(r.statusCode))
    })
    req.on('error', rej)
    const chunk = Buffer.alloc(1 << 20, 120)
    let left = bytes
    const write = () => {
      while (left > 0) {
        left -= chunk.length
        if (!req.write(chunk)) return req.once('drain', write)
      }
      req.end()
    }
    write()
  })
}

try {
  await sbx.files.write('/tmp/srv.py', SERVER)
  await sbx.files.write('/tmp/direct.py', DIRECT)
  await sbx.commands.run('python3 /tmp/srv.py', { background: true })
  for (let i = 0; i < 100; i++) {
    if ((await get('/small').catch(() => 0)) === 200) break
    await new Promise((r) => setTimeout(r, 100))
  }
  for (let i = 0; i < 50; i++) await get('/small') // warm up

  // first, while the heap is small: idle WebSockets, the daemon's RSS before and with them open
  await sbx.files.write('/tmp/ws.py', WS_SERVER)
  await sbx.commands.run('python3 /tmp/ws.py', { background: true })
  await new Promise((r) => setTimeout(r, 500))
  const rss0 = rssKiB(d.pid)
  const socks = []
  for (let i = 0; i < nws; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, nws - i) }, () => new Promise((res, rej) => {
      const s = net.connect(port, '127.0.0.1', () => s.write(`GET /ws HTTP/1.1\r\nHost: ${sbx.getHost(8002)}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a2V5a2V5a2V5a2V5a2V5aw==\r\nSec-WebSocket-Version: 13\r\n\r\n`))
      let b = ''
      s.on('data', (c) => { b += c; if (b.includes('\r\n\r\n')) { if (/^HTTP\/1\.1 101/.test(b)) res(); else rej(new Error(b)) } })
      s.on('error', rej)
      socks.push(s)
    })))
  }
  await new Promise((r) => setTimeout(r, 1000))
  const rss1 = rssKiB(d.pid)
  socks.forEach((s) => s.destroy())
  await new Promise((r) => setTimeout(r, 1000))


  const lat = []
  for (let i = 0; i < n; i++) {
    const t = now()
    await get('/small')
    lat.push(now() - t)
  }
  const l = stats(lat)

  let done = 0
  const until = now() + seconds * 1000
  await Promise.all(Array.from({ length: 50 }, async () => {
    while (now() < until) {
      await get('/small')
      done++
    }
  }))
  const rps = done / seconds

  let t = now()
  let got = 0
  await get(`/big?n=${mib << 20}`, (c) => { got += c.length })
  const down = (got / 1e6) / ((now() - t) / 1000)
  t = now()
  await post(mib << 20)
  const up = ((mib << 20) / 1e6) / ((now() - t) / 1000)

  const direct = JSON.parse((await sbx.commands.run(`python3 /tmp/direct.py ${n} ${mib}`, { timeoutMs: 600_000 })).stdout)
  console.log(JSON.stringify({
    hutch: { new_conn_latency_ms: { median: +l.median.toFixed(3), p99: +l.p99.toFixed(3) }, rps_50_concurrent: Math.round(rps),
      download_MBps: Math.round(down), upload_MBps: Math.round(up),
      idle_websockets: nws, rss_growth_MiB: +((rss1 - rss0) / 1024).toFixed(1) },
    direct_in_sandbox: { new_conn_latency_ms: { median: +direct.median.toFixed(3), p99: +direct.p99.toFixed(3) }, download_MBps: Math.round(direct.download_MBps) },
    n, seconds, mib,
  }, null, 1))
} finally {
  await sbx.kill().catch(() => {})
  await d.stop()
  rmSync(confDir, { recursive: true, force: true })
}
