// Where a runCode('x += 1') through the port ingress spends its time, from the daemon's side: strace of
// `hutch serve` while the unmodified @e2b/code-interpreter SDK runs cells on a warm context of
// code-interpreter-v1 (provisioned from the cached Debian tree, as bench/interp_bench.mjs does). As root:
//   node bench/cell_trace.mjs [--build build] [--cells 20] [--cache /var/cache/hutch-interpreter] [--out FILE]
// Per cell, medians in ms: the request read from the client -> its head sent to the server in the sandbox
// (`sendmsg`), -> the server's response head read, -> the response written to the client; between cells (the
// SDK's own time); and how many sockets the daemon made and connected while tracing. Then the same number of
// cells untraced, timed from the client. The strace output is kept in --out.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, now, sleep, stats, harness } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const { Sandbox } = createRequire(join(resolve(here, '..', 'images', 'code-interpreter', 'tests', 'sdk'), 'package.json'))(
  '@e2b/code-interpreter')
const cells = Number(arg('cells', 20)), cache = arg('cache', '/var/cache/hutch-interpreter')
const NAME = 'code-interpreter-v1'
const { startDaemon, useDaemon, api } = await harness()
const work = mkdtempSync(join(tmpdir(), 'hutch-cell-trace-'))
const out = arg('out', join(work, 'strace.txt'))
const med = (xs) => +stats(xs).median.toFixed(3)

// the cells in an strace -f -ttt output: each POST /execute read from a client to its response written back
function split(text) {
  const done = []
  let cur = null
  for (const line of text.split('\n')) {
    const m = line.match(/^\d+\s+([\d.]+)\s+(\w+)\((.*)$/)
    if (!m) continue
    const [t, call, rest] = [Number(m[1]) * 1000, m[2], m[3]]
    if (call === 'readv' && rest.includes('POST /execute')) cur = { in: t }
    else if (cur && call === 'sendmsg' && rest.includes('POST /execute') && !cur.up) cur.up = t
    else if (cur && cur.up && call === 'readv' && rest.includes('HTTP/1.1 ') && !cur.resp) cur.resp = t
    else if (cur && cur.resp && call === 'writev' && rest.includes('HTTP/1.1 ')) {
      done.push({ ...cur, out: t })
      cur = null
    }
  }
  const calls = (name) => text.split('\n').filter((l) => new RegExp(`^\\d+\\s+[\\d.]+\\s+${name}\\(`).test(l)).length
  return {
    cells: done.length,
    in_to_upstream: med(done.map((c) => c.up - c.in)),
    upstream_to_response_head: med(done.map((c) => c.resp - c.up)),
    response_head_to_client: med(done.map((c) => c.out - c.resp)),
    in_to_out: med(done.map((c) => c.out - c.in)),
    between_cells: med(done.slice(1).map((c, i) => c.in - done[i].out)),
    socket_calls: calls('socket'),
    connect_calls: calls('connect'),
  }
}

writeFileSync(join(work, 'hutch.conf'), `pool.size.${NAME} = 1\n`)
const d = await startDaemon(['--config', join(work, 'hutch.conf'), '--interpreter-cache-dir', cache], null,
  { HUTCH_INTERPRETER_PROVISION: '1' })
try {
  for (let t = 0; ; t++) {
    const tpl = ((await api(d, 'GET', '/templates')).json || []).find((x) => x.templateID === NAME)
    if (tpl?.provision?.state === 'ready') break
    if (tpl?.provision?.state === 'failed' || t > 6000) throw new Error(`no template: ${JSON.stringify(tpl)}`)
    await sleep(100)
  }
  useDaemon({ apiKey: d.apiKey, url: d.url })
  const sbx = await Sandbox.create()
  await sbx.runCode('x = 0')
  const st = spawn('strace', ['-f', '-ttt', '-e', 'trace=network,readv,writev', '-o', out, '-p', String(d.pid)],
    { stdio: 'ignore' })
  await sleep(1000) // strace attached
  for (let i = 0; i < 5; i++) await sbx.runCode('x += 1') // the first cell after the wait may dial
  const traced = []
  for (let i = 0; i < cells; i++) {
    const t0 = now()
    await sbx.runCode('x += 1')
    traced.push(now() - t0)
  }
  const exited = new Promise((res) => st.on('exit', res))
  st.kill('SIGINT')
  await exited
  const untraced = []
  for (let i = 0; i < cells; i++) {
    const t0 = now()
    await sbx.runCode('x += 1')
    untraced.push(now() - t0)
  }
  await sbx.kill()
  const all = split(readFileSync(out, 'utf8'))
  console.log(JSON.stringify({ ...all, traced_median: med(traced), untraced_median: med(untraced),
    load_average: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '), strace: arg('out', null) }))
} finally {
  await d.stop()
  if (!arg('out', null)) rmSync(work, { recursive: true, force: true })
  else rmSync(join(work, 'hutch.conf'), { force: true })
}
