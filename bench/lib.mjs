// What the Node benchmarks under bench/ share: options, clocks, nearest-rank
// statistics, per-round figures, the bwrap baseline, and hutch serve through
// the e2e harness (with the SDK the e2e tests pin).
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const e2e = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'tests', 'e2e')

// --name VALUE from the command line, or def
export const arg = (name, def) => {
  const i = process.argv.indexOf('--' + name)
  return i > 0 ? process.argv[i + 1] : def
}

export const now = () => Number(process.hrtime.bigint()) / 1e6
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// nearest-rank quantiles
export function stats(xs) {
  const s = [...xs].sort((a, b) => a - b)
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))]
  return { n: s.length, median: q(0.5), p95: q(0.95), p99: q(0.99), min: s[0], max: s[s.length - 1] }
}

// figures[k]: every sample of figure k; perRound[k][r]: those of round r
export function recorder() {
  const figures = {}
  const perRound = {}
  const add = (k, v, r) => {
    ;(figures[k] ??= []).push(v)
    ;((perRound[k] ??= [])[r] ??= []).push(v)
  }
  return { figures, perRound, add }
}

// cmd with args, output ignored; rejects unless it exits 0
export function run(cmd, args) {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { stdio: 'ignore' })
    p.on('exit', (c) => (c === 0 ? res() : rej(new Error(`${cmd} exited ${c}`))))
    p.on('error', rej)
  })
}

// bwrap's arguments for the isolation docs/benchmarks.md compares with, running cmd
export const bwrapArgs = (...cmd) => ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net',
  '--unshare-cgroup', '--die-with-parent', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink',
  'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', ...cmd]

// The e2e harness (startDaemon, api, ...) running the hutch of --build
// (default build): HUTCH_BUILD must be set before the harness loads.
export async function harness() {
  process.env.HUTCH_BUILD = arg('build', 'build')
  return import(resolve(e2e, 'harness.mjs'))
}

// The unmodified e2b SDK, the version the e2e tests pin
export const sdk = () => createRequire(resolve(e2e, 'package.json'))('e2b')

// envd's process.Start of argv in sandbox `id` of daemon d, resolving when the process ends
// (what the SDK's commands.run does, without its login shell)
export async function envdRun(d, id, token, argv) {
  const msg = Buffer.from(JSON.stringify({ process: { cmd: argv[0], args: argv.slice(1) } }))
  const env = Buffer.alloc(5 + msg.length)
  env.writeUInt32BE(msg.length, 1)
  msg.copy(env, 5)
  const r = await fetch(`${d.url}/process.Process/Start`, {
    method: 'POST', body: env,
    headers: { 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1', 'E2b-Sandbox-Id': id,
      'X-Access-Token': token, Authorization: 'Basic ' + Buffer.from('user:').toString('base64') },
  })
  const body = Buffer.from(await r.arrayBuffer())
  if (r.status !== 200 || !body.includes('"end"')) throw new Error(`exec ${argv}: ${r.status} ${body}`)
}
