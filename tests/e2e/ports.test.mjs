// Port ingress through the unmodified SDK: servers inside a sandbox
// (Python's standard library only) reached by the E2b-Sandbox-Port header
// and by Host `<port>-<id>.<domain>`, over plain HTTP, streams, large bodies
// and WebSockets; the traffic token; pause, resume and kill; hostile servers.
// Every request goes to the test's own daemon on 127.0.0.1.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import https from 'node:https'
import tls from 'node:tls'
import { execFileSync, spawn } from 'node:child_process'
import net from 'node:net'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, useDaemon, sleep, root } from './harness.mjs'

// One server with an endpoint per case. ThreadingHTTPServer: a stream open
// on one connection must not hold up the others.
const SERVER = String.raw`
import base64, hashlib, http.server, json, socketserver, struct, sys, time

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def send_body(self, code, body, ctype='application/json'):
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        p = self.path
        if p.startswith('/hello'):
            self.send_body(200, json.dumps({'path': p, 'method': 'GET', 'headers': {k.lower(): v for k, v in self.headers.items()}}).encode())
        elif p.startswith('/late'):
            time.sleep(float(p.split('=')[1]))
            self.send_body(200, b'late')
        elif p.startswith('/peer'):
            self.send_body(200, json.dumps({'port': self.client_address[1]}).encode())
        elif p.startswith('/seen'):
            self.send_body(200, json.dumps(SEEN).encode())
        elif p.startswith('/drop-second'):
            # the second request on a connection is not answered: the
            # connection closes, as when a server's keep-alive runs out
            self.seen = getattr(self, 'seen', 0) + 1
            if self.seen > 1:
                self.close_connection = True
                return
            self.send_body(200, json.dumps({'port': self.client_address[1]}).encode())
        elif p.startswith('/stream'):
            n = int(p.split('=')[1]) if '=' in p else 5
            self.send_response(200)
            self.send_header('Content-Type', 'text/event-stream')
            self.send_header('Transfer-Encoding', 'chunked')
            self.end_headers()
            i = 0
            while n < 0 or i < n:
                data = ('data: %d\n\n' % i).encode()
                self.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
                self.wfile.flush()
                time.sleep(0.2)
                i += 1
            self.wfile.write(b'0\r\n\r\n')
        elif p.startswith('/download'):
            n = int(p.split('=')[1])
            block = hashlib.sha256(b'seed').digest() * 2048
            h = hashlib.sha256()
            self.send_response(200)
            self.send_header('Content-Length', str(n))
            self.end_headers()
            left = n
            while left > 0:
                b = block[:min(left, len(block))]
                h.update(b)
                self.wfile.write(b)
                left -= len(b)
        elif p.startswith('/until-close') or p.startswith('/short'):
            # a body delimited by the server's close, or one the close cuts
            # short of its Content-Length
            n = int(p.split('=')[1])
            block = hashlib.sha256(b'seed').digest() * 2048
            self.send_response(200)
            if p.startswith('/short'):
                self.send_header('Content-Length', str(n))
                n //= 2
            self.end_headers()
            while n > 0:
                b = block[:min(n, len(block))]
                self.wfile.write(b)
                n -= len(b)
            self.close_connection = True
        elif p.startswith('/ws'):
            key = self.headers['Sec-WebSocket-Key']
            acc = base64.b64encode(hashlib.sha1((key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').encode()).digest()).decode()
            self.send_response(101)
            self.send_header('Upgrade', 'websocket')
            self.send_header('Connection', 'Upgrade')
            self.send_header('Sec-WebSocket-Accept', acc)
            self.end_headers()
            self.wfile.flush()
            r = self.rfile
            while True:
                h = r.read(2)
                if len(h) < 2: return
                op, ln = h[0] & 15, h[1] & 127
                if ln == 126: ln = struct.unpack('>H', r.read(2))[0]
                elif ln == 127: ln = struct.unpack('>Q', r.read(8))[0]
                mask = r.read(4) if h[1] & 128 else b'\0\0\0\0'
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(r.read(ln)))
                if op == 8:
                    self.wfile.write(b'\x88\x00'); self.wfile.flush(); return
                out = bytes([0x80 | op])
                if len(data) < 126: out += bytes([len(data)])
                elif len(data) < 65536: out += bytes([126]) + struct.pack('>H', len(data))
                else: out += bytes([127]) + struct.pack('>Q', len(data))
                self.wfile.write(out + data); self.wfile.flush()
        else:
            self.send_body(404, b'{}')
    def do_POST(self):
        n = int(self.headers.get('Content-Length', '0'))
        h, left = hashlib.sha256(), n
        while left > 0:
            b = self.rfile.read(min(left, 1 << 16))
            if not b: break
            h.update(b); left -= len(b)
        if self.path.startswith('/late'):
            time.sleep(float(self.path.split('=')[1]))
        out = {'length': n - left, 'sha256': h.hexdigest()}
        if self.path.startswith('/once'):
            # /once*/ID: every request is counted by its id and told its
            # connection's port; /once-close/ID
            # answers and then closes (without saying so, as when a
            # server's keep-alive runs out), /once-drop/ID closes without an
            # answer unless it is its connection's first request
            SEEN.append(self.path.rsplit('/', 1)[1])
            self.posts = getattr(self, 'posts', 0) + 1
            if self.path.startswith('/once-drop') and self.posts > 1:
                self.close_connection = True
                return
            if self.path.startswith('/once-close'):
                self.close_connection = True
            out['port'] = self.client_address[1]
        self.send_body(200, json.dumps(out).encode())

SEEN = []

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
S((sys.argv[2] if len(sys.argv) > 2 else '127.0.0.1', int(sys.argv[1])), H).serve_forever()
`

// Servers that misbehave: accept and never read or answer; answer one
// byte of headers every 2 s (slowloris); send headers without end.
const HOSTILE = String.raw`
import socket, sys, threading, time
def serve(port, fn):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('127.0.0.1', port)); s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=fn, args=(c,), daemon=True).start()
def never(c): time.sleep(3600)
def slow(c):
    for b in b'HTTP/1.1 200 OK\r\n' * 1000:
        c.send(bytes([b])); time.sleep(2)
def endless(c):
    c.send(b'HTTP/1.1 200 OK\r\n')
    try:
        while True: c.sendall(b'X-Endless: ' + b'a' * 1000 + b'\r\n')
    except OSError: pass
for port, fn in ((9001, never), (9002, slow), (9003, endless)):
    threading.Thread(target=serve, args=(port, fn), daemon=True).start()
time.sleep(3600)
`

let d, sbx, daemonPort
before(async () => {
  d = await startDaemon()
  daemonPort = Number(new URL(d.url).port)
  sbx = await Sandbox.create({ timeoutMs: 300_000 })
  await startServer(sbx, 8000)
})
after(async () => {
  await sbx?.kill().catch(() => {})
  const st = await d?.stop()
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

async function startServer(s, port, bind = '127.0.0.1', daemon = daemonPort) {
  await s.files.write('/tmp/srv.py', SERVER)
  await s.commands.run(`python3 /tmp/srv.py ${port} ${bind}`, { background: true })
  for (let i = 0; i < 100; i++) {
    const r = await request({ headers: portHeaders(s, port), path: '/hello', port: daemon })
    if (r.status === 200) return
    await sleep(100)
  }
  throw new Error(`the server on port ${port} did not come up`)
}

function portHeaders(s, port, extra = {}) {
  return { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': String(port), ...extra }
}

// One request to the daemon on loopback; the body is collected whole
// unless onData is given. `timeoutMs` bounds the whole exchange.
function request({ method = 'GET', path = '/', headers = {}, body, onData, timeoutMs = 60_000, port = daemonPort }) {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (resp) => {
      const chunks = []
      resp.on('data', (c) => (onData ? onData(c) : chunks.push(c)))
      resp.on('end', () => { clearTimeout(t); res({ status: resp.statusCode, headers: resp.headers, body: Buffer.concat(chunks) }) })
      resp.on('error', (e) => { clearTimeout(t); rej(e) })
    })
    const t = setTimeout(() => { req.destroy(new Error(`request ${path} timed out`)) }, timeoutMs)
    req.on('error', (e) => { clearTimeout(t); rej(e) })
    if (body) req.end(body)
    else req.end()
  })
}

const json = (r) => JSON.parse(r.body.toString())

test('create returns the domain, and getHost names the port', async () => {
  assert.equal(sbx.getHost(8000), `8000-${sbx.sandboxId}.localhost`)
})

test('a request by E2b-Sandbox-Port reaches the server, with X-Forwarded-* and without hop-by-hop headers', async () => {
  const r = await request({
    path: '/hello?x=1',
    headers: portHeaders(sbx, 8000, { 'X-Custom': 'kept', 'Keep-Alive': 'timeout=5', 'X-Forwarded-For': '6.6.6.6', TE: 'trailers', Connection: 'keep-alive, TE' }),
  })
  assert.equal(r.status, 200)
  const j = json(r)
  assert.equal(j.path, '/hello?x=1')
  assert.equal(j.headers['x-custom'], 'kept')
  assert.equal(j.headers['x-forwarded-for'], '127.0.0.1', 'the client cannot spoof its address')
  assert.equal(j.headers['x-forwarded-proto'], 'http')
  assert.equal(j.headers['x-forwarded-host'], `127.0.0.1:${daemonPort}`)
  assert.equal(j.headers['keep-alive'], undefined)
  assert.equal(j.headers.te, undefined)
  assert.equal(j.headers.connection, undefined, 'keep-alive, HTTP/1.1\'s default')
})

// The daemon keeps its connection to the server for the next request
// (idle.h): the server sees the same client port; one that the server
// closes instead of answering is taken for closed under the request, which
// goes again on a new connection.
test('requests reuse the connection to the server, and one the server drops goes again', async () => {
  const ports = []
  for (let i = 0; i < 3; i++) {
    const r = await request({ path: '/peer', headers: portHeaders(sbx, 8000) })
    assert.equal(r.status, 200)
    ports.push(json(r).port)
  }
  assert.equal(new Set(ports).size, 1, `one connection to the server: ${ports}`)
  const a = await request({ path: '/drop-second', headers: portHeaders(sbx, 8000) })
  assert.equal(a.status, 200)
  const b = await request({ path: '/drop-second', headers: portHeaders(sbx, 8000) })
  assert.equal(b.status, 200, b.body.toString())
  assert.notEqual(json(b).port, json(a).port, 'the dropped connection was replaced')
})

// A small sized body goes on a kept connection too, one idle for under a
// second (ingress.c: reuse_window), and is never sent twice: a server that
// closes instead of answering it gets a 502 through, not the request again.
test('small POSTs reuse the connection to the server, and none is sent twice or lost', async () => {
  const post = (path) => request({ method: 'POST', path, headers: portHeaders(sbx, 8000), body: 'cell' })
  const ports = []
  for (let i = 0; i < 3; i++) {
    const r = await post(`/once/a${i}`)
    assert.equal(r.status, 200, r.body.toString())
    ports.push(json(r).port)
  }
  assert.equal(new Set(ports).size, 1, `consecutive POSTs on one connection to the server: ${ports}`)
  // the server closes after its answer: the next POST goes on a new connection
  const closing = await post('/once-close/b0')
  assert.equal(closing.status, 200)
  await sleep(200)
  const next = await post('/once/b1')
  assert.equal(next.status, 200, next.body.toString())
  assert.notEqual(json(next).port, json(closing).port, 'the closed connection was not used')
  // the server reads the next POST on the kept connection and closes without answering
  const dropped = await post('/once-drop/c0')
  assert.equal(dropped.status, 502, dropped.body.toString())
  assert.match(json(dropped).message, /not sent twice/)
  const later = await post('/once/c1')
  assert.equal(later.status, 200)
  // a connection idle for over a second is not used for a body
  await sleep(1300)
  const idle = await post('/once/d0')
  assert.equal(idle.status, 200)
  assert.notEqual(json(idle).port, json(later).port, 'a new connection after a second idle')
  const seen = json(await request({ path: '/seen', headers: portHeaders(sbx, 8000) }))
  assert.deepEqual(seen.filter((x) => /^[a-d]\d$/.test(x)), ['a0', 'a1', 'a2', 'b0', 'b1', 'c0', 'c1', 'd0'],
    'each request reached the server once')
})

test('a request by Host <port>-<id>.<domain> reaches the server', async () => {
  const r = await request({ path: '/hello', headers: { Host: `${sbx.getHost(8000)}:${daemonPort}` } })
  assert.equal(r.status, 200)
  assert.equal(json(r).headers.host, `${sbx.getHost(8000)}:${daemonPort}`, 'the Host reaches the server unchanged')
  assert.equal(r.headers.connection, 'close', 'the client is told the connection ends with the response')
})

test('Host 49983-<id>.<domain> reaches envd', async () => {
  const r = await request({ path: '/health', headers: { Host: sbx.getHost(49983) } })
  assert.equal(r.status, 204)
})

test('a server bound to 0.0.0.0 on another port is reachable too', async () => {
  await startServer(sbx, 8001, '0.0.0.0')
  const r = await request({ path: '/hello', headers: portHeaders(sbx, 8001) })
  assert.equal(r.status, 200)
})

test('nothing listening is a quick 502 naming the port', async () => {
  const t0 = Date.now()
  const r = await request({ path: '/', headers: portHeaders(sbx, 8999) })
  assert.equal(r.status, 502)
  assert.match(json(r).message, /port 8999/)
  assert.equal(json(r).port, 8999)
  assert.ok(Date.now() - t0 < 2000, `took ${Date.now() - t0} ms`)
})

test('an unknown sandbox is 502 by header and by Host', async () => {
  let r = await request({ path: '/', headers: { 'E2b-Sandbox-Id': 'nosuchsandbox', 'E2b-Sandbox-Port': '8000' } })
  assert.equal(r.status, 502)
  r = await request({ path: '/', headers: { Host: 'nosuchsandbox'.replace(/^/, '8000-') + '.localhost' } })
  assert.equal(r.status, 502)
})

test('a chunked event stream arrives as it is written', async () => {
  const times = []
  const t0 = Date.now()
  const r = await request({ path: '/stream?n=5', headers: portHeaders(sbx, 8000), onData: () => times.push(Date.now() - t0) })
  assert.equal(r.status, 200)
  assert.equal(r.headers['content-type'], 'text/event-stream')
  assert.ok(times.length >= 3, `chunks: ${times}`)
  assert.ok(times[times.length - 1] - times[0] >= 500, `the chunks came spread out, not at once: ${times}`)
})

test('a 32 MiB upload and a 64 MiB download arrive intact', async () => {
  const up = randomBytes(32 << 20)
  const r = await request({ method: 'POST', path: '/upload', headers: portHeaders(sbx, 8000, { 'Content-Type': 'application/octet-stream' }), body: up })
  assert.equal(r.status, 200)
  assert.deepEqual(json(r), { length: up.length, sha256: createHash('sha256').update(up).digest('hex') })

  const n = 64 << 20
  const h = createHash('sha256')
  let got = 0
  const dl = await request({ path: `/download?n=${n}`, headers: portHeaders(sbx, 8000), onData: (c) => { h.update(c); got += c.length } })
  assert.equal(dl.status, 200)
  assert.equal(got, n)
  const block = Buffer.concat(Array(2048).fill(createHash('sha256').update('seed').digest()))
  const want = createHash('sha256')
  for (let left = n; left > 0; left -= block.length) want.update(left >= block.length ? block : block.subarray(0, left))
  assert.equal(h.digest('hex'), want.digest('hex'))
})

// GET path on port 8000, the body hashed as it arrives; a client that reads
// nothing for `lateMs` first. Resolves when the response is over, whole
// or cut (`complete` says which).
function hashedGet(path, lateMs = 0) {
  return new Promise((res, rej) => {
    const h = createHash('sha256')
    let got = 0
    const req = http.request({ host: '127.0.0.1', port: daemonPort, path, headers: portHeaders(sbx, 8000), agent: false }, (resp) => {
      if (lateMs) {
        resp.pause()
        setTimeout(() => resp.resume(), lateMs)
      }
      resp.on('data', (c) => { h.update(c); got += c.length })
      resp.on('error', () => {}) // a cut body: `complete` is false
      resp.on('close', () => { clearTimeout(t); res({ status: resp.statusCode, complete: resp.complete, got, sha256: h.digest('hex') }) })
    })
    const t = setTimeout(() => req.destroy(new Error(`request ${path} timed out`)), 60_000)
    req.on('error', (e) => { clearTimeout(t); rej(e) })
    req.end()
  })
}

test('a body that ends with the server closing arrives whole, also to a client that reads late; one the close cuts short is cut', async () => {
  const block = Buffer.concat(Array(2048).fill(createHash('sha256').update('seed').digest()))
  const sha = (n) => {
    const h = createHash('sha256')
    for (let left = n; left > 0; left -= block.length) h.update(left >= block.length ? block : block.subarray(0, left))
    return h.digest('hex')
  }
  const n = 16 << 20
  // late: the daemon stops reading the server (the client is behind) while
  // the server writes its last bytes and closes
  for (const lateMs of [0, 1000]) {
    const r = await hashedGet(`/until-close?n=${n}`, lateMs)
    assert.equal(r.status, 200)
    assert.ok(r.complete, `late ${lateMs} ms: the body was cut after ${r.got} bytes`)
    assert.equal(r.got, n)
    assert.equal(r.sha256, sha(n))
  }
  for (const lateMs of [0, 1000]) {
    const r = await hashedGet(`/short?n=${n}`, lateMs)
    assert.equal(r.status, 200)
    assert.equal(r.complete, false, 'a body shorter than its Content-Length must not look complete')
    assert.ok(r.got <= n / 2, `got ${r.got} bytes of a ${n / 2}-byte cut body`)
  }
  const ok = await request({ headers: portHeaders(sbx, 8000), path: '/hello' })
  assert.equal(ok.status, 200)
})

test('a slow reader holds the daemon to bounded memory (backpressure)', async () => {
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(require_proc(d.pid))[1])
  const before = rss()
  const n = 200 << 20
  const sock = net.connect(daemonPort, '127.0.0.1')
  await new Promise((r) => sock.on('connect', r))
  sock.write(`GET /download?n=${n} HTTP/1.1\r\nHost: ${sbx.getHost(8000)}\r\n\r\n`)
  sock.pause() // read nothing for a while
  await sleep(3000)
  const during = rss()
  let got = 0
  // the connection stays open for the next request (keep-alive): the
  // response is over once its Content-Length worth of body has arrived
  const done = new Promise((r) => sock.on('data', (c) => { got += c.length; if (got > n) r() }))
  sock.resume()
  await done
  sock.destroy()
  assert.ok(got > n, `got ${got}`)
  assert.ok(during - before < 64 * 1024, `RSS grew by ${during - before} KiB while the client read nothing`)
})

// The head lines that route a raw request to port 8000 of s.
const rawPortHeaders = (s) => `Host: 127.0.0.1\r\nE2b-Sandbox-Id: ${s.sandboxId}\r\nE2b-Sandbox-Port: 8000\r\n`

// A sized body's rest moves by splice (http/splice.c) once its head has
// gone out: the bytes, the connection's keep-alive after it, a reader that
// stalls and one that leaves halfway must all come out as on the buffered
// path.
test('a spliced download: a slow reader gets it whole, and the connection serves the next request', async () => {
  const n = (24 << 20) + 12345 // not a multiple of the pipe's size
  const block = Buffer.concat(Array(2048).fill(createHash('sha256').update('seed').digest()))
  const want = createHash('sha256')
  for (let left = n; left > 0; left -= block.length) want.update(left >= block.length ? block : block.subarray(0, left))
  const sock = net.connect(daemonPort, '127.0.0.1')
  await new Promise((r) => sock.on('connect', r))
  const host = rawPortHeaders(sbx)
  sock.write(`GET /download?n=${n} HTTP/1.1\r\n${host}\r\n`)
  let buf = Buffer.alloc(0)
  let waiter = null
  sock.on('data', (c) => { buf = Buffer.concat([buf, c]); if (waiter) waiter() })
  const until = async (f, what) => {
    const t0 = Date.now()
    while (!f()) {
      if (Date.now() - t0 > 60_000) throw new Error(`timed out waiting for ${what} (${buf.length} bytes so far)`)
      await new Promise((r) => { waiter = r; setTimeout(r, 100) })
    }
  }
  // read in bursts with pauses: the daemon waits on the client with bytes
  // in its pipe, then goes on
  const h = createHash('sha256')
  let got = 0, end = -1
  await until(() => (end = buf.indexOf('\r\n\r\n')) >= 0, 'the head')
  assert.match(buf.subarray(0, end).toString(), /^HTTP\/1\.1 200/)
  assert.match(buf.subarray(0, end).toString(), new RegExp(`content-length: ${n}`, 'i'))
  buf = buf.subarray(end + 4)
  for (let i = 0; got < n; i++) {
    if (i % 32 === 31) {
      sock.pause()
      await sleep(300)
      sock.resume()
    }
    await until(() => buf.length > 0, 'body bytes')
    const take = buf.subarray(0, Math.min(buf.length, n - got))
    h.update(take)
    got += take.length
    buf = buf.subarray(take.length)
  }
  assert.equal(h.digest('hex'), want.digest('hex'))
  assert.equal(buf.length, 0, 'bytes after the body')
  // keep-alive: the same connection answers again, a small body after the
  // spliced one
  sock.write(`GET /hello HTTP/1.1\r\n${host}\r\n`)
  await until(() => buf.indexOf('\r\n\r\n') >= 0 && /"path"/.test(buf.toString()), 'the second response')
  assert.match(buf.toString(), /^HTTP\/1\.1 200/)
  // and a second large one on it
  buf = Buffer.alloc(0)
  const m = 4 << 20
  sock.write(`GET /download?n=${m} HTTP/1.1\r\n${host}\r\n`)
  await until(() => { const e = buf.indexOf('\r\n\r\n'); return e >= 0 && buf.length - e - 4 >= m }, 'the third response')
  assert.equal(buf.length - buf.indexOf('\r\n\r\n') - 4, m)
  sock.destroy()
})

test('clients that leave in the middle of a spliced body leave the daemon serving', async () => {
  for (const stalled of [false, true]) {
    for (let i = 0; i < 4; i++) {
      const sock = net.connect(daemonPort, '127.0.0.1')
      sock.on('error', () => {})
      await new Promise((r) => sock.on('connect', r))
      sock.write(`GET /download?n=${256 << 20} HTTP/1.1\r\n${rawPortHeaders(sbx)}\r\n`)
      let got = 0
      await new Promise((r) => sock.on('data', (c) => { got += c.length; if (got > (2 + i) << 20) r() }))
      if (stalled) { // the daemon is waiting on the client's full socket
        sock.pause()
        await sleep(500)
      }
      i % 2 ? sock.resetAndDestroy() : sock.destroy()
    }
  }
  await sleep(300)
  const r = await request({ path: '/hello', headers: portHeaders(sbx, 8000) })
  assert.equal(r.status, 200)
  assert.equal((await fetch(`${d.url}/health`)).status, 200)
})

test('killing the sandbox cuts a sized download in the middle', async () => {
  const s = await Sandbox.create({ timeoutMs: 120_000 })
  await startServer(s, 8000)
  let got = 0
  const p = new Promise((res) => {
    const req = http.request({ host: '127.0.0.1', port: daemonPort, path: `/download?n=${2 ** 33}`, headers: portHeaders(s, 8000), agent: false }, (resp) => {
      resp.on('data', (c) => { got += c.length })
      resp.on('error', () => {})
      resp.on('close', () => res(resp.complete))
    })
    req.on('error', () => res(false))
    req.end()
  })
  while (got < 4 << 20) await sleep(50)
  const t0 = Date.now()
  await s.kill()
  assert.equal(await p, false, 'a download the kill cut must not look complete')
  assert.ok(Date.now() - t0 < 5000, `the download outlived the kill by ${Date.now() - t0} ms`)
})

function require_proc(pid) {
  return readFileSync(`/proc/${pid}/status`, 'utf8')
}

// A WebSocket client on a raw socket: the handshake, masked frames out,
// unmasked frames in.
function wsConnect(headers, path = '/ws', port = daemonPort) {
  return new Promise((res, rej) => {
    const sock = net.connect(port, '127.0.0.1')
    const key = randomBytes(16).toString('base64')
    let buf = Buffer.alloc(0)
    const frames = []
    let waiters = []
    let opened = false
    sock.on('connect', () => {
      const h = Object.entries({ Host: `127.0.0.1:${daemonPort}`, Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13', ...headers })
        .map(([k, v]) => `${k}: ${v}\r\n`).join('')
      sock.write(`GET ${path} HTTP/1.1\r\n${h}\r\n`)
    })
    const parse = () => {
      for (;;) {
        if (buf.length < 2) return
        let len = buf[1] & 127, off = 2
        if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4 }
        else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10 }
        if (buf.length < off + len) return
        frames.push({ op: buf[0] & 15, data: buf.subarray(off, off + len) })
        buf = buf.subarray(off + len)
        waiters.forEach((w) => w()); waiters = []
      }
    }
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c])
      if (!opened) {
        const end = buf.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = buf.subarray(0, end).toString()
        buf = buf.subarray(end + 4)
        opened = true
        if (!/^HTTP\/1\.1 101/.test(head)) return rej(new Error(`no upgrade: ${head}`))
        const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
        assert.match(head, new RegExp(`Sec-WebSocket-Accept: ${accept.replace(/[+/]/g, '\\$&')}`, 'i'))
        res(ws)
      }
      parse()
    })
    sock.on('error', rej)
    const ws = {
      sock,
      send(data, op = data instanceof Buffer ? 2 : 1) {
        const payload = Buffer.from(data)
        const mask = randomBytes(4)
        let hdr
        if (payload.length < 126) hdr = Buffer.from([0x80 | op, 0x80 | payload.length])
        else if (payload.length < 65536) { hdr = Buffer.alloc(4); hdr[0] = 0x80 | op; hdr[1] = 0x80 | 126; hdr.writeUInt16BE(payload.length, 2) }
        else { hdr = Buffer.alloc(10); hdr[0] = 0x80 | op; hdr[1] = 0x80 | 127; hdr.writeBigUInt64BE(BigInt(payload.length), 2) }
        const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]))
        sock.write(Buffer.concat([hdr, mask, masked]))
      },
      async next(ms = 10_000) {
        const t0 = Date.now()
        while (!frames.length) {
          if (Date.now() - t0 > ms) throw new Error('no frame')
          await new Promise((r) => { waiters.push(r); setTimeout(r, 100) })
        }
        return frames.shift()
      },
      close() { sock.destroy() },
    }
  })
}

test('a WebSocket echoes text and a 1 MiB binary message, by header and by Host', async () => {
  for (const headers of [portHeaders(sbx, 8000), { Host: sbx.getHost(8000) }]) {
    const ws = await wsConnect(headers)
    ws.send('hello')
    let f = await ws.next()
    assert.equal(f.op, 1)
    assert.equal(f.data.toString(), 'hello')
    const big = randomBytes(1 << 20)
    ws.send(big)
    f = await ws.next(30_000)
    assert.equal(f.op, 2)
    assert.ok(f.data.equals(big))
    ws.close()
  }
})

test('allowPublicTraffic false: ports need the traffic token (403 without), envd does not', async () => {
  const priv = await Sandbox.create({ timeoutMs: 120_000, network: { allowPublicTraffic: false } })
  try {
    assert.match(priv.trafficAccessToken, /^[0-9a-f]{64}$/)
    await priv.files.write('/tmp/srv.py', SERVER)
    await priv.commands.run('python3 /tmp/srv.py 8000', { background: true })
    let r
    for (let i = 0; i < 100; i++) {
      r = await request({ path: '/hello', headers: portHeaders(priv, 8000, { 'E2B-Traffic-Access-Token': priv.trafficAccessToken }) })
      if (r.status === 200) break
      await sleep(100)
    }
    assert.equal(r.status, 200)
    assert.equal(json(r).headers['e2b-traffic-access-token'], undefined, 'the token is not passed to the server')
    r = await request({ path: '/hello', headers: portHeaders(priv, 8000) })
    assert.equal(r.status, 403)
    r = await request({ path: '/hello', headers: portHeaders(priv, 8000, { 'E2B-Traffic-Access-Token': 'f'.repeat(64) }) })
    assert.equal(r.status, 403)
    r = await request({ path: '/hello', headers: { Host: priv.getHost(8000) } })
    assert.equal(r.status, 403)
    // the public sandbox needs none
    r = await request({ path: '/hello', headers: portHeaders(sbx, 8000) })
    assert.equal(r.status, 200)
  } finally {
    await priv.kill().catch(() => {})
  }
})

test('maskRequestHost rewrites the Host the server sees', async () => {
  const m = await Sandbox.create({ timeoutMs: 120_000, network: { maskRequestHost: 'localhost:${PORT}' } })
  try {
    await startServer(m, 8000)
    const r = await request({ path: '/hello', headers: { Host: m.getHost(8000) } })
    assert.equal(r.status, 200)
    assert.equal(json(r).headers.host, 'localhost:8000')
    assert.equal(json(r).headers['x-forwarded-host'], m.getHost(8000))
  } finally {
    await m.kill().catch(() => {})
  }
})

test('a paused sandbox: 502 without autoResume, resumed by a port request with it', async () => {
  const a = await Sandbox.create({ timeoutMs: 120_000, lifecycle: { onTimeout: 'pause' } })
  const b = await Sandbox.create({ timeoutMs: 120_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  try {
    await startServer(a, 8000)
    await startServer(b, 8000)
    const peer = async () => json(await request({ path: '/peer', headers: portHeaders(b, 8000) })).port
    const before = await peer()
    assert.equal(await peer(), before, 'a kept connection')
    assert.equal(await a.pause(), true)
    assert.equal(await b.pause(), true)
    let r = await request({ path: '/hello', headers: portHeaders(a, 8000) })
    assert.equal(r.status, 502)
    assert.match(json(r).message, /paused/)
    r = await request({ path: '/hello', headers: portHeaders(b, 8000) })
    assert.equal(r.status, 200, r.body.toString())
    assert.equal((await Sandbox.getInfo(b.sandboxId)).state, 'running')
    assert.notEqual(await peer(), before, 'no connection kept across a pause is used again')
  } finally {
    await a.kill().catch(() => {})
    await b.kill().catch(() => {})
  }
})

test('an open connection keeps the sandbox awake past its timeout', async () => {
  const s = await Sandbox.create({ timeoutMs: 3000 })
  try {
    await startServer(s, 8000)
    const ws = await wsConnect(portHeaders(s, 8000))
    await sleep(5000)
    ws.send('still here')
    assert.equal((await ws.next()).data.toString(), 'still here')
    assert.equal(await s.isRunning(), true)
    ws.close()
  } finally {
    await s.kill().catch(() => {})
  }
})

test('killing the sandbox cuts its open streams', async () => {
  const s = await Sandbox.create({ timeoutMs: 120_000 })
  await startServer(s, 8000)
  let got = 0
  const p = request({ path: '/stream?n=-1', headers: portHeaders(s, 8000), onData: (c) => { got += c.length } }).then(() => 'ended', () => 'cut')
  while (got === 0) await sleep(50)
  const t0 = Date.now()
  await s.kill()
  assert.ok(['ended', 'cut'].includes(await p))
  assert.ok(Date.now() - t0 < 5000, `the stream outlived the kill by ${Date.now() - t0} ms`)
})

// The client leaves after its request and before the server's head: evhttp
// notices (the body is read as a stream) and detaches the request; the
// reply must not start on it (it crashed the daemon under wrk's close), and
// one still waiting for the server when the daemon stops is freed too.
test('clients that leave before the server answers leave the daemon serving', async () => {
  const socks = []
  for (let i = 0; i < 20; i++) {
    const sock = net.connect(daemonPort, '127.0.0.1')
    sock.on('error', () => {})
    socks.push(sock)
    const body = i % 2 ? 'x'.repeat(1000) : ''
    sock.write(`${body ? 'POST' : 'GET'} /late=0.5 HTTP/1.1\r\nHost: 127.0.0.1\r\nE2b-Sandbox-Id: ${sbx.sandboxId}\r\n` +
      `E2b-Sandbox-Port: 8000\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
  }
  await sleep(150)
  socks.forEach((s) => s.destroy())
  await sleep(800) // the server's answers arrive for clients that are gone
  const r = await request({ path: '/hello', headers: portHeaders(sbx, 8000) })
  assert.equal(r.status, 200)
  assert.equal((await fetch(`${d.url}/health`)).status, 200)
})

test('hostile servers (never reading, slowloris, endless headers) stall no one else', async () => {
  const h = await Sandbox.create({ timeoutMs: 120_000 })
  const socks = []
  try {
    await h.files.write('/tmp/hostile.py', HOSTILE)
    await h.commands.run('python3 /tmp/hostile.py', { background: true })
    await sleep(1000)
    // a big upload to a server that never reads, many times over
    const pending = []
    for (const port of [9001, 9002, 9003]) {
      for (let i = 0; i < 5; i++) {
        const sock = net.connect(daemonPort, '127.0.0.1')
        sock.on('error', () => {})
        sock.on('data', () => {})
        socks.push(sock)
        sock.write(`POST /x HTTP/1.1\r\nE2b-Sandbox-Id: ${h.sandboxId}\r\nE2b-Sandbox-Port: ${port}\r\nContent-Length: ${4 << 20}\r\n\r\n`)
        sock.write(Buffer.alloc(4 << 20))
        pending.push(sock)
      }
    }
    // a client that reads nothing of the endless headers
    const quiet = net.connect(daemonPort, '127.0.0.1')
    quiet.on('error', () => {})
    socks.push(quiet)
    quiet.write(`GET / HTTP/1.1\r\nHost: ${h.getHost(9003)}\r\n\r\n`)
    quiet.pause()
    await sleep(2000)
    // meanwhile the daemon and the other sandbox answer at once
    for (let i = 0; i < 10; i++) {
      const t0 = Date.now()
      const r = await request({ path: '/hello', headers: portHeaders(sbx, 8000) })
      assert.equal(r.status, 200, r.body.toString())
      assert.ok(Date.now() - t0 < 1000, `a request took ${Date.now() - t0} ms`)
    }
    // endless headers end in a 502, in bounded memory
    const t0 = Date.now()
    const r = await request({ path: '/', headers: portHeaders(h, 9003), timeoutMs: 10_000 })
    assert.equal(r.status, 502)
    assert.match(json(r).message, /response head is over/)
    assert.ok(Date.now() - t0 < 5000)
    const rh = await fetch(`${d.url}/health`)
    assert.equal(rh.status, 200)
  } finally {
    socks.forEach((s) => s.destroy())
    await h.kill().catch(() => {})
  }
})

// A self-signed certificate for *.sbx.test (and 127.0.0.1), made by openssl.
function makeCert(dir, name) {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', `/CN=${name}`, '-addext', 'subjectAltName=DNS:*.sbx.test,IP:127.0.0.1',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' })
  return readFileSync(join(dir, 'cert.pem'))
}

// The peer certificate's CN on a new TLS connection to 127.0.0.1:port.
function peerName(port, ca) {
  return new Promise((res, rej) => {
    const s = tls.connect({ host: '127.0.0.1', port, ca, servername: '8000-x.sbx.test' }, () => {
      res(s.getPeerCertificate().subject.CN)
      s.end()
    })
    s.on('error', rej)
  })
}

test('TLS on the listener: the unmodified SDK over https, ports by Host with SNI, SIGHUP reloads the certificate', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hutch-ports-tls-'))
  let d4
  try {
    const ca1 = makeCert(dir, 'first')
    d4 = await startDaemon(['--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem'), '--sandbox-domain', 'sbx.test'])
    const p4 = Number(new URL(d4.url).port)
    const url = `https://127.0.0.1:${p4}`
    // the SDK in a child process, trusting the test CA the way a deployment would
    const script = `
      import { Sandbox } from 'e2b'
      import https from 'node:https'
      import { createHash } from 'node:crypto'
      const SERVER = ${JSON.stringify(SERVER)}
      const get = (opts) => new Promise((res, rej) => {
        const req = https.request({ host: '127.0.0.1', port: ${p4}, path: '/hello', agent: false, ...opts }, (r) => {
          let b = ''; r.on('data', (c) => (b += c)); r.on('end', () => res({ status: r.statusCode, body: b }))
        })
        req.on('error', rej); req.end()
      })
      const sbx = await Sandbox.create({ timeoutMs: 60_000 })
      try {
        await sbx.files.write('/tmp/srv.py', SERVER)
        await sbx.commands.run('python3 /tmp/srv.py 8000', { background: true })
        let byHeader
        for (let i = 0; i < 100; i++) {
          byHeader = await get({ headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' } })
          if (byHeader.status === 200) break
          await new Promise((r) => setTimeout(r, 100))
        }
        const host = sbx.getHost(8000)
        const byHost = await get({ servername: host, headers: { Host: host } })
        // large bodies through a port arrive whole over TLS too, on a kept-alive connection and with Connection: close
        const keep = new https.Agent({ keepAlive: true, maxSockets: 1 })
        const download = (n, opts) => new Promise((res, rej) => {
          const h = createHash('sha256')
          let len = 0
          const req = https.request({ host: '127.0.0.1', port: ${p4}, path: '/download?n=' + n, timeout: 10_000, ...opts,
            headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000', ...opts.headers } }, (r) => {
            r.on('data', (c) => { len += c.length; h.update(c) })
            r.on('end', () => res({ n, len, sha: h.digest('hex') }))
            r.on('error', rej)
          })
          req.on('timeout', () => { req.destroy(); res({ n, len, sha: 'timed out after ' + len + ' bytes' }) })
          req.on('error', rej); req.end()
        })
        const want = (n) => {
          const block = Buffer.concat(Array(2048).fill(createHash('sha256').update('seed').digest()))
          const h = createHash('sha256')
          for (let left = n; left > 0; left -= block.length) h.update(block.subarray(0, Math.min(left, block.length)))
          return h.digest('hex')
        }
        const downloads = []
        for (const [n, opts] of [[4 << 20, { agent: keep }], [4 << 20, { agent: keep }], [4 << 20, { agent: false, headers: { Connection: 'close' } }],
          [64 << 10, { agent: false, headers: { Connection: 'close' } }], [64 << 10, { agent: keep }]]) {
          const got = await download(n, opts)
          downloads.push({ ...got, ok: got.len === n && got.sha === want(n) })
        }
        keep.destroy()
        console.log(JSON.stringify({ host, byHeader, byHost, downloads }))
      } finally { await sbx.kill() }
    `
    const out = await new Promise((res, rej) => {
      const c = spawn(process.execPath, ['--input-type=module', '-e', script], {
        cwd: join(root, 'tests', 'e2e'),
        env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem'), E2B_API_URL: url, E2B_SANDBOX_URL: url },
      })
      let o = ''
      c.stdout.on('data', (x) => (o += x))
      c.stderr.on('data', (x) => (o += x))
      const t = setTimeout(() => c.kill('SIGKILL'), 90_000)
      c.on('exit', (code) => { clearTimeout(t); code === 0 ? res(o) : rej(new Error(`child exit ${code}: ${o}`)) })
    })
    const r = JSON.parse(out.trim().split('\n').pop())
    assert.match(r.host, /^8000-[a-z0-9]+\.sbx\.test$/)
    assert.equal(r.byHeader.status, 200)
    assert.equal(JSON.parse(r.byHeader.body).headers['x-forwarded-proto'], 'https')
    assert.equal(r.byHost.status, 200)
    assert.equal(JSON.parse(r.byHost.body).headers.host, r.host)
    assert.equal(r.downloads.length, 5)
    for (const dl of r.downloads) assert.ok(dl.ok, `a download over TLS arrived short or changed: ${JSON.stringify(dl)}`)
    // plain HTTP to a TLS listener gets nowhere
    await assert.rejects(request({ path: '/health', port: p4, timeoutMs: 5000 }))

    assert.equal(await peerName(p4, ca1), 'first')
    const ca2 = makeCert(dir, 'second')
    process.kill(d4.pid, 'SIGHUP')
    let name
    for (let i = 0; i < 50 && name !== 'second'; i++) {
      await sleep(100)
      name = await peerName(p4, ca2).catch(() => null)
    }
    assert.equal(name, 'second', 'new connections get the reloaded certificate')
    // a broken pair is refused and the last good one keeps serving
    writeFileSync(join(dir, 'cert.pem'), 'not a certificate')
    process.kill(d4.pid, 'SIGHUP')
    await sleep(500)
    assert.equal(await peerName(p4, ca2), 'second')
    assert.match(d4.log(), /SIGHUP: .*old certificate stays/)
  } finally {
    const st = await d4?.stop()
    useDaemon(d)
    rmSync(dir, { recursive: true, force: true })
    if (d4) assert.equal(st?.code, 0, `TLS daemon exit ${JSON.stringify(st)}`)
  }
})

// Last: it starts a second daemon (with a limit of 2) and points the SDK back
// at the first one when done.
test('over the per-sandbox connection limit is 429, a slot frees when a connection ends; the traffic token survives a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hutch-ports-'))
  writeFileSync(join(dir, 'hutch.conf'), 'ingress.max_per_sandbox = 2\n')
  const d2 = await startDaemon(['--config', join(dir, 'hutch.conf')])
  const p2 = Number(new URL(d2.url).port)
  let s
  const open = []
  try {
    s = await Sandbox.create({ timeoutMs: 120_000 })
    await startServer(s, 8000, '127.0.0.1', p2)
    open.push(await wsConnect(portHeaders(s, 8000), '/ws', p2))
    open.push(await wsConnect(portHeaders(s, 8000), '/ws', p2))
    let r = await request({ path: '/hello', headers: portHeaders(s, 8000), port: p2 })
    assert.equal(r.status, 429)
    assert.match(json(r).message, /too many open connections/)
    open.pop().close()
    for (let i = 0; i < 50; i++) {
      r = await request({ path: '/hello', headers: portHeaders(s, 8000), port: p2 })
      if (r.status === 200) break
      await sleep(50)
    }
    assert.equal(r.status, 200)
  } finally {
    open.forEach((w) => w.close())
    await s?.kill().catch(() => {})
  }
  // a private sandbox stays private across a daemon restart
  let d3, priv
  try {
    priv = await Sandbox.create({ timeoutMs: 120_000, network: { allowPublicTraffic: false } })
    const tok = { 'E2B-Traffic-Access-Token': priv.trafficAccessToken }
    await priv.files.write('/tmp/srv.py', SERVER)
    await priv.commands.run('python3 /tmp/srv.py 8000', { background: true })
    let r
    for (let i = 0; i < 100 && r?.status !== 200; i++) {
      if (i) await sleep(100)
      r = await request({ path: '/hello', headers: portHeaders(priv, 8000, tok), port: p2 })
    }
    assert.equal(r.status, 200)
    process.kill(d2.pid, 'SIGTERM')
    d3 = await d2.restart()
    const p3 = Number(new URL(d3.url).port)
    r = await request({ path: '/hello', headers: portHeaders(priv, 8000), port: p3 })
    assert.equal(r.status, 403, 'the restarted daemon still asks for the token')
    r = await request({ path: '/hello', headers: portHeaders(priv, 8000, tok), port: p3 })
    assert.equal(r.status, 200, r.body.toString())
  } finally {
    await priv?.kill().catch(() => {})
    const st = await (d3 ?? d2).stop()
    useDaemon(d)
    rmSync(dir, { recursive: true, force: true })
    assert.equal(st?.code, 0, `second daemon exit ${JSON.stringify(st)}`)
  }
})

// Last, as it leaves its connection open: the daemon stops (after()) with a
// spliced body in flight, its client not reading, and must exit cleanly
// (no leak, no crash under ASan). The sandbox is its own (the restart test
// before it leaves `sbx` to another daemon) and is killed first: a splice
// waiting on a client that takes nothing does not watch the server, so the
// body is still in flight when the daemon stops.
test('the daemon stops with a spliced body in flight', async () => {
  const s = await Sandbox.create({ timeoutMs: 120_000 })
  try {
    await startServer(s, 8000)
    const sock = net.connect(daemonPort, '127.0.0.1')
    sock.on('error', () => {})
    await new Promise((r) => sock.on('connect', r))
    sock.write(`GET /download?n=${256 << 20} HTTP/1.1\r\n${rawPortHeaders(s)}\r\n`)
    let got = 0, head = ''
    await new Promise((res, rej) => {
      sock.on('data', (c) => { if (!got) head = c.subarray(0, 300).toString(); got += c.length; if (got > 1 << 20) res() })
      sock.on('close', () => rej(new Error(`the connection closed after ${got} bytes: ${head}`)))
      setTimeout(() => rej(new Error(`${got} bytes in 20 s: ${head}`)), 20_000)
    })
    sock.pause()
    await sleep(300)
    sock.unref() // the daemon's stop closes it
  } finally {
    await s.kill().catch(() => {})
  }
})
