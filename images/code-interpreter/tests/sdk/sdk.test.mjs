// The unmodified @e2b/code-interpreter SDK (pinned by package-lock.json) against the code interpreter server on
// an ephemeral loopback port. The daemon's port ingress is not part of this: the SDK's sandboxUrl points straight
// at the server, which is what the SDK does with E2B_SANDBOX_URL, so these are its own requests and its own
// parsing of the answers. Run: node --test sdk.test.mjs (run.sh does, after npm ci).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import { Sandbox } from '@e2b/code-interpreter'

const here = dirname(fileURLToPath(import.meta.url))
const server = join(here, '..', '..', 'server', 'server.py')
let proc, home, sbx

before(async () => {
  home = mkdtempSync(join(tmpdir(), 'hutch-interp-sdk-'))
  proc = spawn('/usr/bin/python3', [server, '--host', '127.0.0.1', '--port', '0'], {
    cwd: home, env: { ...process.env, HOME: home, TEST_ENV_VAR: 'supertest' }, stdio: ['ignore', 'pipe', 'ignore'],
  })
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start')), 60_000)
    createInterface({ input: proc.stdout }).on('line', (line) => {
      const m = line.match(/listening on .*:(\d+)$/)
      if (m) { clearTimeout(timer); resolve(Number(m[1])) }
    })
    proc.on('exit', (code) => reject(new Error(`the server exited with ${code}`)))
  })
  // what Sandbox.create would return, minus the control plane: every call goes to sandboxUrl
  sbx = new Sandbox({
    sandboxId: 'local', sandboxUrl: `http://127.0.0.1:${port}`, apiKey: 'e2b_' + '0'.repeat(40),
    envdAccessToken: 'token', requestTimeoutMs: 10_000, // the SDK leaves this timer running after an error answer
  })
})

after(async () => {
  const t0 = Date.now()
  if (proc && proc.exitCode === null) {
    const exited = new Promise((resolve) => proc.on('exit', resolve))
    proc.kill('SIGTERM')
    await exited
  }
  console.error('server stopped in', Date.now() - t0, 'ms')
  rmSync(home, { recursive: true, force: true })
})

test('statefulness and execution count', async () => {
  const ctx = await sbx.createCodeContext()
  await sbx.runCode('x = 1', { context: ctx })
  const r = await sbx.runCode('x += 1; x', { context: ctx })
  assert.equal(r.text, '2')
  assert.equal(r.executionCount, 2)
})

test('streaming callbacks', async () => {
  const out = [], err = [], results = []
  await sbx.runCode('print(1)', { onStdout: (m) => out.push(m) })
  assert.deepEqual(out.map((m) => m.line), ['1\n'])
  await sbx.runCode('import sys; print(1, file=sys.stderr)', { onStderr: (m) => err.push(m) })
  assert.deepEqual(err.map((m) => m.line), ['1\n'])
  await sbx.runCode('import matplotlib.pyplot as plt\nimport numpy as np\nx = np.linspace(0, 20, 100)\n' +
    'plt.plot(x, np.sin(x))\nplt.show()\nx', { onResult: (r) => results.push(r) })
  assert.equal(results.length, 2)
})

test('display data: a matplotlib PNG and its chart', async () => {
  const r = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], label="up")\nplt.show()')
  const image = r.results[0]
  assert.ok(image.png)
  assert.ok(image.text)
  assert.deepEqual(image.extra, {})
  assert.ok(image.formats().includes('png'))
  assert.equal(image.chart.type, 'line') // formats() of the JS SDK does not list chart; Python's does
  assert.deepEqual(image.chart.elements, [{ label: 'up', points: [[0, 1], [1, 2], [2, 3]] }])
})

test('pandas: HTML and data', async () => {
  const r = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2, 3]})')
  assert.match(r.results[0].html, /<table/)
  assert.deepEqual(r.results[0].data, { a: [1, 2, 3] })
})

test('errors', async () => {
  const errors = []
  const r = await sbx.runCode('xyz', { onError: (e) => errors.push(e) })
  assert.equal(errors.length, 1)
  assert.equal(r.error.name, 'NameError')
  assert.equal(r.error.value, "name 'xyz' is not defined")
  assert.match(r.error.traceback, /NameError/)
})

test('contexts: create, list, restart, remove, isolation', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python', cwd: '/tmp' })
  assert.equal(ctx.cwd, '/tmp')
  let list = await sbx.listCodeContexts()
  assert.ok(list.some((c) => c.id === ctx.id))
  assert.ok(['python', 'javascript'].every((l) => list.some((c) => c.language === l)))
  await sbx.runCode('x = 1', { context: ctx })
  await sbx.restartCodeContext(ctx.id)
  const r = await sbx.runCode('x', { context: ctx })
  assert.equal(r.error?.value, "name 'x' is not defined")
  const other = await sbx.createCodeContext()
  await sbx.runCode('y = 1', { context: ctx })
  assert.equal((await sbx.runCode('y', { context: other })).error?.name, 'NameError')
  await sbx.removeCodeContext(ctx.id)
  list = await sbx.listCodeContexts()
  assert.ok(!list.some((c) => c.id === ctx.id))
  await assert.rejects(sbx.runCode('1', { context: ctx }))
  await assert.rejects(sbx.runCode('1', { context: other, language: 'python' }))
})

test('env vars: per execution, then the sandbox value again', async () => {
  for (const [language, read] of [['python', 'import os; os.getenv("TEST_ENV_VAR")'],
    ['javascript', 'process.env.TEST_ENV_VAR']]) {
    const r = await sbx.runCode(read, { language, envs: { TEST_ENV_VAR: 'overwrite' } })
    assert.equal(r.results[0]?.text.trim(), 'overwrite')
    const back = await sbx.runCode(read, { language })
    assert.equal(back.results[0]?.text.trim(), 'supertest')
  }
  const b = await sbx.runCode('echo $FOO', { language: 'bash', envs: { FOO: 'bar' } })
  assert.equal(b.logs.stdout[0], 'bar\n')
  const b2 = await sbx.runCode('echo ${FOO:-default}', { language: 'bash' })
  assert.equal(b2.logs.stdout[0], 'default\n')
})

test('JavaScript and TypeScript kernels', async () => {
  assert.deepEqual((await sbx.runCode('console.log("Hello World!")', { language: 'js' })).logs.stdout, ['Hello World!\n'])
  const esm = await sbx.runCode('\n    import { readFileSync } from "fs"\n    console.log(typeof readFileSync)\n    ',
    { language: 'js' })
  assert.deepEqual(esm.logs.stdout, ['function\n'])
  assert.equal((await sbx.runCode("\n    await Promise.resolve('Hello World!')\n    ", { language: 'js' })).text,
    'Hello World!')
  const ts = await sbx.runCode('const message: string = "Hello World!"; console.log(message)', { language: 'ts' })
  assert.deepEqual(ts.logs.stdout, ['Hello World!\n'])
  assert.equal((await sbx.runCode('process.cwd()', { language: 'ts' })).text, home)
})

test('bash through IPython and the bash kernel', async () => {
  assert.equal((await sbx.runCode('!pwd')).logs.stdout.join().trim(), home)
  assert.equal((await sbx.runCode('pwd', { language: 'bash' })).logs.stdout.join().trim(), home)
})

test('a client timeout interrupts the cell and the next one runs', async () => {
  await assert.rejects(sbx.runCode('import time; time.sleep(300)', { timeoutMs: 2_000 }))
  const r = await sbx.runCode('1 + 1', { timeoutMs: 10_000 })
  assert.equal(r.text, '2')
})
