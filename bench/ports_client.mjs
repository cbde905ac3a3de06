// The one HTTP client of bench/ports_bench.mjs, run as a child process so that
// the same code measures every path: on the host (through hutch) or, under
// `nsenter --net`, inside the sandbox's network namespace (direct, nginx).
//   node bench/ports_client.mjs lat  --port P [--hdr 'K: V' ...] --n N --keepalive 0|1
//   node bench/ports_client.mjs down --port P [--hdr ...] --bytes B
//   node bench/ports_client.mjs up   --port P [--hdr ...] --bytes B
// Prints one JSON line: lat -> {"ms": [...]} (one sample per request, after
// 20 warm-up requests); down/up -> {"MBps": x, "bytes": n}.
import http from 'node:http'

const argv = process.argv.slice(2)
const mode = argv[0]
const opt = (name, def) => {
  const i = argv.indexOf('--' + name)
  return i > 0 ? argv[i + 1] : def
}
const headers = {}
argv.forEach((a, i) => {
  if (a === '--hdr') {
    const [k, ...v] = argv[i + 1].split(':')
    headers[k.trim()] = v.join(':').trim()
  }
})
const port = Number(opt('port'))
const now = () => Number(process.hrtime.bigint()) / 1e6

function request(method, path, agent, body, onData) {
  return new Promise((res, rej) => {
    const h = { ...headers }
    if (body !== undefined) h['Content-Length'] = String(body)
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: h, agent }, (r) => {
      let text = ''
      r.on('data', r.statusCode === 200 ? onData || (() => {}) : (c) => { text += c })
      r.on('end', () => (r.statusCode === 200 ? res() : rej(new Error(`${method} ${path}: ${r.statusCode} ${text}`))))
      r.on('error', rej)
    })
    req.on('error', rej)
    if (body === undefined) return req.end()
    const chunk = Buffer.alloc(1 << 20, 120)
    let left = body
    const write = () => {
      while (left > 0) {
        const c = left >= chunk.length ? chunk : chunk.subarray(0, left)
        left -= c.length
        if (!req.write(c)) return req.once('drain', write)
      }
      req.end()
    }
    write()
  })
}

if (mode === 'lat') {
  const n = Number(opt('n', 200))
  const agent = opt('keepalive', '0') === '1' ? new http.Agent({ keepAlive: true, maxSockets: 1 }) : false
  const ms = []
  for (let i = 0; i < n + 20; i++) {
    const t = now()
    await request('GET', '/small', agent)
    if (i >= 20) ms.push(now() - t)
  }
  if (agent) agent.destroy()
  console.log(JSON.stringify({ ms }))
} else if (mode === 'down' || mode === 'up') {
  const bytes = Number(opt('bytes'))
  let got = 0
  const t = now()
  if (mode === 'down') await request('GET', `/big?n=${bytes}`, false, undefined, (c) => { got += c.length })
  else {
    await request('POST', '/up', false, bytes)
    got = bytes
  }
  if (got !== bytes) throw new Error(`${mode}: ${got} of ${bytes} bytes`)
  console.log(JSON.stringify({ MBps: bytes / 1e6 / ((now() - t) / 1000), bytes }))
} else {
  console.error('usage: ports_client.mjs lat|down|up --port P ...')
  process.exit(2)
}
