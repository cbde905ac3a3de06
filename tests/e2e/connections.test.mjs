// 10,000 idle connections: the daemon keeps answering, its memory stays
// bounded, and it closes idle connections after its idle timeout.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { writeFileSync, mkdirSync, rmSync } from 'node:fs'
import { startDaemon, api, rssKiB, sleep } from './harness.mjs'

const N = Number(process.env.HUTCH_E2E_IDLE_CONNS || 10000)
let d

before(async () => {
  d = await startDaemon(['--config', await idleConfig()])
})
after(async () => {
  rmSync(`/tmp/hutch-e2e-conf-${process.pid}`, { recursive: true, force: true })
  const st = await d?.stop()
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

// a short idle timeout so the test can watch the daemon close them
async function idleConfig() {
  const dir = `/tmp/hutch-e2e-conf-${process.pid}`
  mkdirSync(dir, { recursive: true })
  const file = `${dir}/hutch.conf`
  writeFileSync(file, 'idle_timeout = 5s\n')
  return file
}

function open(port) {
  return new Promise((res) => {
    const s = connect({ port, host: '127.0.0.1' })
    s.on('connect', () => res(s))
    s.on('error', () => res(null))
  })
}

test(`${N} idle connections: the daemon stays responsive and bounded`, async () => {
  const port = Number(new URL(d.url).port)
  const before = rssKiB(d.pid)
  const socks = []
  let closedByServer = 0
  for (let i = 0; i < N; i += 500) {
    const batch = await Promise.all(Array.from({ length: Math.min(500, N - i) }, () => open(port)))
    for (const s of batch) if (s) { s.on('close', () => closedByServer++); socks.push(s) }
  }
  assert.ok(socks.length >= N * 0.98, `opened ${socks.length} of ${N}`)
  const t0 = performance.now()
  const r = await api(d, 'GET', '/health')
  const ms = performance.now() - t0
  assert.equal(r.status, 200)
  assert.ok(ms < 1000, `health answered in ${ms.toFixed(1)} ms with ${socks.length} idle connections`)
  const grown = rssKiB(d.pid) - before
  assert.ok(grown < 200 * 1024, `daemon RSS grew by ${grown} KiB for ${socks.length} connections`)
  // the idle timeout (5 s here) closes them
  for (let i = 0; i < 40 && closedByServer < socks.length * 0.98; i++) await sleep(250)
  assert.ok(closedByServer >= socks.length * 0.98, `${closedByServer} of ${socks.length} closed by the idle timeout`)
  for (const s of socks) s.destroy()
  assert.equal((await api(d, 'GET', '/health')).status, 200)
})
