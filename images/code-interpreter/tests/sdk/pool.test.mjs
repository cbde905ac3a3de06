// The unmodified @e2b/code-interpreter SDK against a real `hutch serve` that provisioned code-interpreter-v1
// itself and keeps a warm pool of it (kernels started before any create): a create's envs reach the kernels
// that were already running (src/daemon/sandboxes/sbx_envfile.h, server/sandbox_env.py). sandbox.sh starts the
// daemon and sets E2B_API_KEY, E2B_API_URL and E2B_SANDBOX_URL for this file.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'

const url = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY

async function poolReady() {
  const r = await fetch(`${url}/metrics`, { headers: { 'X-API-KEY': key } })
  return /hutch_pool_sandboxes\{template="code-interpreter-v1",state="ready"\} [1-9]/.test(await r.text())
}

async function until(what, fn, ms = 120_000) {
  const end = Date.now() + ms
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

test('a pooled sandbox: the kernels started before the create, and see its envs (Python, JavaScript, bash, a new context)', async () => {
  await until('a ready pool sandbox of code-interpreter-v1', poolReady)
  const before = Date.now()
  const sbx = await Sandbox.create({ envs: { POOLED_ENV: 'from-the-create', OTHER: 'x y' } })
  try {
    // the default Python kernel was started by the pool, before this create
    const started = await sbx.runCode(
      "import os, time\nboot = os.sysconf('SC_CLK_TCK')\nst = int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19])\n" +
      "up = float(open('/proc/uptime').read().split()[0])\nint((time.time() - (up - st / boot)) * 1000)")
    assert.ok(Number(started.text) < before, `kernel started at ${started.text}, create at ${before}`)
    // and its process environment (from the pool's start) does not have the envs: they came afterwards
    const startEnv = await sbx.runCode("'POOLED_ENV' in open('/proc/self/environ').read()")
    assert.equal(startEnv.text, 'False')
    assert.equal((await sbx.runCode("import os; os.environ['POOLED_ENV']")).text, 'from-the-create')
    assert.equal((await sbx.runCode("import os; os.getenv('OTHER')")).text, 'x y')
    assert.equal((await sbx.runCode('process.env.POOLED_ENV', { language: 'js' })).text, 'from-the-create')
    const sh = await sbx.runCode('echo $POOLED_ENV', { language: 'bash' })
    assert.equal(sh.logs.stdout.join(''), 'from-the-create\n')
    const ctx = await sbx.createCodeContext({ language: 'python' })
    assert.equal((await sbx.runCode("import os; os.environ['POOLED_ENV']", { context: ctx })).text, 'from-the-create')
    // a cell's envs still win for that cell only
    assert.equal((await sbx.runCode("import os; os.environ['POOLED_ENV']", { envs: { POOLED_ENV: 'cell' } })).text, 'cell')
    assert.equal((await sbx.runCode("import os; os.environ['POOLED_ENV']")).text, 'from-the-create')
  } finally {
    await sbx.kill()
  }
})

test('two pooled creates in a row: each sandbox has its own envs', async () => {
  for (const v of ['first', 'second']) {
    await until('a ready pool sandbox of code-interpreter-v1', poolReady)
    const sbx = await Sandbox.create({ envs: { WHICH: v } })
    try {
      assert.equal((await sbx.runCode("import os; os.environ['WHICH']")).text, v)
    } finally {
      await sbx.kill()
    }
  }
})
