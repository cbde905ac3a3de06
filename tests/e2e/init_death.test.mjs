// When a sandbox's hutch-init dies on its own, the daemon says why: in its
// log, and, for a while, to the sandbox's team (control plane) and to
// holders of its access token (data plane), instead of a bare not-found.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { Sandbox } from 'e2b'
import { startDaemon, api, sleep } from './harness.mjs'

let d, work
before(async () => {
  work = mkdtempSync(join(tmpdir(), 'hutch-initdeath-'))
  writeFileSync(join(work, 'hutch.conf'), 'default_memory = 128M\n')
  d = await startDaemon(['--config', join(work, 'hutch.conf')])
})
after(async () => {
  if (work) rmSync(work, { recursive: true, force: true })
  const st = await d?.stop()
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

test('hutch-init killed in a sandbox that hit its memory limit: logged with its cause, and the API says so', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  const id = sbx.sandboxId
  const token = sbx.envdAccessToken ?? (await sbx.getInfo()).envdAccessToken
  assert.ok(token)
  // root cannot make PID 1 the OOM killer's first choice any more (its
  // oom_score_adj is read-only): a process that fills the limit is the
  // one killed, and init lives on
  const adj = await sbx.commands.run('echo 1000 > /proc/1/oom_score_adj', { user: 'root' }).catch((e) => e)
  assert.notEqual(adj.exitCode, 0, 'PID 1\'s OOM score cannot be raised')
  await sbx.commands.run('python3 -c "a = bytearray(400 << 20)"').catch(() => {})
  assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n', 'init survived the OOM kill')
  // then init dies (SIGKILLed from the host, as the kernel would): PID 1
  // of the sandbox is the process whose innermost pid is 1
  execFileSync('sh', ['-c', `for p in $(cat /sys/fs/cgroup/unified/${d.env.HUTCH_CGROUP_PARENT}/${id}/cgroup.procs); do
    grep -q '^NSpid:.*[[:space:]]1$' /proc/$p/status 2>/dev/null && kill -9 $p; done; true`])
  let r
  for (let i = 0; i < 100; i++) {
    r = await api(d, 'GET', `/sandboxes/${id}`)
    if (r.status === 404) break
    await sleep(100)
  }
  assert.equal(r.status, 404, r.text)
  assert.match(r.json.message, new RegExp(`sandbox ${id} not found: hutch-init died: killed by SIGKILL \\(memory limit: \\d+ OOM kills? in the sandbox\\)`))
  assert.match(d.log(), new RegExp(`sandbox=${id} req=- msg="hutch-init died: killed by SIGKILL \\(memory limit`))
  // the data plane, with the sandbox's token: the same reason
  const res = await fetch(`${d.url}/files?path=/etc/hostname`, { headers: { 'E2b-Sandbox-Id': id, 'X-Access-Token': token } })
  const body = await res.json()
  assert.equal(res.status, 502)
  assert.match(body.message, /hutch-init died: killed by SIGKILL/)
  // without the token, or with another key: nothing but not-found
  const anon = await (await fetch(`${d.url}/files?path=/etc/hostname`, { headers: { 'E2b-Sandbox-Id': id } })).json()
  assert.doesNotMatch(anon.message, /died/)
  const other = await api({ url: d.url, apiKey: d.apiKey + 'x' }, 'GET', `/sandboxes/${id}`)
  assert.doesNotMatch(other.text, /died/)
})
