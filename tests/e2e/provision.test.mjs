// `hutch serve` provisions the code interpreter template itself (src/daemon/sandboxes/provision.h), here with
// a recipe that builds in seconds: the same protocol as images/code-interpreter/build.sh (--daemon, the
// "step N/M:" lines, the recipe checksum in the template, exit 4 when an old template is in place), over a
// minimal root with a start command. It checks the progress in GET /templates and the log, the 503 with
// Retry-After of a create before the template exists, a restart that finds it up to date (no rebuild), a
// changed recipe rebuilt while a sandbox keeps the old template (the replacement waits for it), and a warm
// pool sandbox of a template with a start command: started before the create, it gets the create's envs
// in /run/hutch/envs.json (src/daemon/sandboxes/sbx_envfile.h). The real recipe (a Debian download) runs in
// images/code-interpreter/tests/sandbox.sh and the code interpreter's conformance suites (tests/conformance).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync, readFileSync, rmSync, chmodSync, existsSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startDaemon, api, sleep, makeRoot, runResult as sh } from './harness.mjs'

const NAME = 'code-interpreter-v1'
let d, work, recipe

// The quick recipe: steps 1 and 2 take a moment each so that the test sees them; each real build appends a
// line to <cache>/builds.
const buildSh = `#!/bin/bash
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DAEMON=0
while [ $# -gt 0 ]; do
	case $1 in
	--data-dir) DATA=$2; shift 2 ;; --cache-dir) CACHE=$2; shift 2 ;; --hutch) HUTCH=$2; shift 2 ;;
	--name) NAME=$2; shift 2 ;; --daemon) DAEMON=1; shift ;; *) echo "bad argument $1" >&2; exit 2 ;;
	esac
done
say() { printf 'code-interpreter: %s\\n' "$*"; }
hash=$(cat "$HERE/build.sh" "$HERE/payload" | sha256sum | cut -c1-64)
meta=$DATA/templates/$NAME/template.json
if [ -f "$meta" ] && grep -q "\\"recipe\\": *\\"$hash\\"" "$meta"; then say "template $NAME is up to date"; exit 0; fi
mkdir -p "$CACHE"
say "step 1/3: prepare the tree"
sleep "$(cat "$HERE/delay")"
rm -rf "$CACHE/tree"; cp -a "$HERE/root" "$CACHE/tree"; cp "$HERE/payload" "$CACHE/tree/payload"
say "step 2/3: a slow part"
say "  (an indented line)"
sleep "$(cat "$HERE/delay")"
if [ -d "$DATA/templates/$NAME" ] && [ "$DAEMON" = 1 ]; then say "the old template is in place"; exit 4; fi
rm -rf "$DATA"/templates/.stale-"$NAME"-*
say "step 3/3: copy the tree into the template"
"$HUTCH" template build "$NAME" --from "$CACHE/tree" --data-dir "$DATA" --recipe "$hash" --memory 256 \\
	--start-cmd 'env > /tmp/start-env; exec sleep 100000' --ready-cmd 'test -s /tmp/start-env'
echo built >>"$CACHE/builds"
`

const templates = async () => (await api(d, 'GET', '/templates')).json
const entry = async () => (await templates()).find((t) => t.templateID === NAME)
const builds = () => (existsSync(join(work, 'cache', 'builds')) ? readFileSync(join(work, 'cache', 'builds'), 'utf8').split('\n').filter(Boolean).length : 0)

async function until(what, fn, ms = 60000) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; log tail: ${d.log().slice(-3000)}`)
    await sleep(100)
  }
}

// SIGTERM leaves the sandboxes running; the next daemon on the same dirs adopts them
async function restart() {
  process.kill(d.pid, 'SIGTERM')
  assert.equal((await d.exited).code, 0)
  return d.restart(args(), env)
}

const args = () => ['--interpreter-recipe', recipe, '--interpreter-cache-dir', join(work, 'cache'), '--config', join(work, 'hutch.conf')]
const env = { HUTCH_INTERPRETER_PROVISION: '1' }

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'hutch-e2e-prov-'))
  recipe = join(work, 'recipe')
  makeRoot(join(recipe, 'root'))
  writeFileSync(join(recipe, 'build.sh'), buildSh)
  chmodSync(join(recipe, 'build.sh'), 0o755)
  writeFileSync(join(recipe, 'payload'), 'one\n')
  writeFileSync(join(recipe, 'delay'), '2\n')
  writeFileSync(join(work, 'hutch.conf'), `pool.size.${NAME} = 1\n`)
  d = await startDaemon(args(), null, env)
})
after(async () => {
  const st = await d?.stop()
  rmSync(work, { recursive: true, force: true })
  assert.equal(st?.code, 0, `daemon exit ${JSON.stringify(st)}; log tail: ${d?.log().slice(-3000)}`)
})

test('a first start builds the template in the background: its steps in GET /templates and the log, a create before it is ready gets 503 with Retry-After', async () => {
  const building = await until('step 1 or 2 in GET /templates', async () => {
    const t = await entry()
    return t?.provision?.step ? t : null
  })
  assert.equal(building.buildStatus, 'building')
  assert.equal(building.provision.state, 'building')
  assert.equal(building.provision.steps, 3)
  assert.match(building.provision.stepName, /prepare the tree|a slow part/)
  const r = await fetch(`${d.url}/sandboxes`, {
    method: 'POST',
    headers: { 'X-API-KEY': d.apiKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: NAME }),
  })
  const body = await r.json()
  assert.equal(r.status, 503, JSON.stringify(body))
  assert.equal(r.headers.get('retry-after'), '5')
  assert.match(body.message, /template code-interpreter-v1 is still building \(step [12] of 3: /)
  const ready = await until('the template to be ready', async () => {
    const t = await entry()
    return t?.buildStatus === 'ready' && t.provision?.state === 'ready' ? t : null
  })
  assert.equal(ready.provision.step, undefined, 'a ready template shows no step')
  assert.equal(builds(), 1)
  assert.match(d.log(), /template code-interpreter-v1: step 1 of 3: prepare the tree/)
  assert.match(d.log(), /template code-interpreter-v1: built in \d+ s/)
  const sbx = await Sandbox.create(NAME)
  try {
    assert.equal((await sh(sbx, 'cat /payload')).stdout, 'one\n')
  } finally {
    await sbx.kill()
  }
})

test('a pool sandbox of a template with a start command: started before the create, it gets the create\'s envs in /run/hutch/envs.json', async () => {
  const poolReady = async () => /hutch_pool_sandboxes\{template="code-interpreter-v1",state="ready"\} 1/.test((await api(d, 'GET', '/metrics')).text)
  await until('a ready pool sandbox', poolReady)
  const sbx = await Sandbox.create(NAME, { envs: { TAKEN_WITH: 'my-envs', SECOND: 'two words' } })
  try {
    // the start command ran when the pool built it: without the create's envs
    const start = (await sh(sbx, 'cat /tmp/start-env')).stdout
    assert.doesNotMatch(start, /TAKEN_WITH/, 'the sandbox came from the pool')
    const f = await sh(sbx, 'cat /run/hutch/envs.json; echo; ls -ln /run/hutch/envs.json')
    const [json, ls] = f.stdout.split('\n')
    assert.deepEqual(JSON.parse(json), { TAKEN_WITH: 'my-envs', SECOND: 'two words' })
    assert.match(ls, /^-rw-r--r-- 1 0 0 /, 'root owns it; the user reads it')
    assert.notEqual((await sh(sbx, 'echo x > /run/hutch/envs.json')).exitCode, 0, 'the user cannot change it')
    // a command of the create sees the envs directly, as before
    assert.equal((await sh(sbx, 'echo $TAKEN_WITH')).stdout, 'my-envs\n')
  } finally {
    await sbx.kill()
  }
  // a cold create (pool empty for a moment, or not: either way the envs are right) still starts with them
  assert.match(d.log(), /\(warm pool\)/)
})

test('a restart with the same recipe does not rebuild; a changed recipe is rebuilt once the sandbox on the old template is gone', async () => {
  const keep = await Sandbox.create(NAME, { timeoutMs: 120000 })
  d = await restart()
  await until('the up-to-date check', () => /template code-interpreter-v1: up to date/.test(d.log()))
  assert.equal(builds(), 1, 'not rebuilt')
  assert.equal((await entry()).provision.state, 'ready')

  writeFileSync(join(recipe, 'payload'), 'two\n')
  writeFileSync(join(recipe, 'delay'), '0\n')
  d = await restart()
  // the new tree is ready, but a sandbox (adopted across the restart) uses the old template: it is kept
  const waiting = await until('the waiting state', async () => {
    const t = await entry()
    return t?.provision?.state === 'waiting' ? t : null
  })
  assert.equal(waiting.buildStatus, 'ready', 'the old template still serves')
  const still = await Sandbox.connect(keep.sandboxId)
  assert.equal((await sh(still, 'cat /payload')).stdout, 'one\n')
  await still.kill()
  const ready = await until('the rebuilt template', async () => {
    const t = await entry()
    return t?.provision?.state === 'ready' && builds() === 2 ? t : null
  }, 90000)
  assert.ok(ready)
  const sbx = await Sandbox.create(NAME)
  try {
    assert.equal((await sh(sbx, 'cat /payload')).stdout, 'two\n')
  } finally {
    await sbx.kill()
  }
  const dir = join(d.base, 'data', 'templates')
  await until('the old template removed', () => readdirSync(dir).filter((n) => n.startsWith('.stale-')).length === 0, 10000)
})

test('interpreter.provision off: nothing is built and GET /templates does not list it', async () => {
  const off = await startDaemon(['--interpreter-recipe', recipe, '--interpreter-provision', 'false'], null, env)
  try {
    await sleep(500)
    const list = (await api(off, 'GET', '/templates')).json
    assert.equal(list.find((t) => t.templateID === NAME), undefined)
    assert.match(off.log(), /not provisioned \(interpreter.provision is off\)/)
  } finally {
    await off.stop()
  }
})
