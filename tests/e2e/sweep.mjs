// Ends what the test files of one run left behind: run.sh calls it after
// node's test runner has exited, with the ledger harness.mjs wrote. A file
// that reached stop() removed its base dir, so only the dirs still present
// are swept: their daemons (named by pid, and killed only if that pid is
// still a daemon on that base, not a reused pid), then the sandboxes,
// cgroups and mounts under it (cleanupDir, as stop() does).
import { existsSync, readFileSync } from 'node:fs'
import { cleanupDir } from './harness.mjs'

function daemonOn(pid, base) {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').some((v) => v.startsWith(`HUTCH_DATA_DIR=${base}/`))
  } catch {
    return false
  }
}

const path = process.argv[2]
const entries = !path || !existsSync(path) ? []
  : readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
const left = entries.filter((e) => existsSync(e.base))
for (const e of left) {
  if (daemonOn(e.pid, e.base)) {
    try { process.kill(e.pid, 'SIGKILL') } catch {}
  }
}
// the daemons' deaths before the mounts go: a live daemon would hold them
if (left.length) await new Promise((res) => setTimeout(res, 300))
const swept = new Set()
for (const e of left) {
  cleanupDir(e.base, e.cgroupParent)
  swept.add(e.base)
}
if (swept.size) console.log(`e2e: swept ${swept.size} data dir(s) a test file left behind: ${[...swept].join(' ')}`)
