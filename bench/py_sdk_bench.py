"""The Python SDK beside the JS SDK, through one real `hutch serve`.

    tests/e2e-py/.venv/bin/python bench/py_sdk_bench.py [--n 50] [--concurrent 100] [--build build]
        [--memory 256M] [--pids 256] [--pool N] [--pool-max N] [--warmup 3] [--bursts 5]

--memory, --pids: the daemon's default_memory and default_pids (config file), so that --concurrent
sandboxes fit the admission budget of a small machine (pids: kernel.pid_max less a reserve); --pool N:
pool.size (default 2, the server's default: a pool that follows demand up to pool.max); --pool-max N:
pool.max (default: the server's).

Figures (milliseconds, nearest-rank quantiles):
  py_create_run   Sandbox.create() + commands.run('python3 -c "print(1)"') with the Python SDK (sync)
  js_create_run   the same with the JS SDK, from a Node process kept running (no Node start-up in the figure)
                  the two alternate, one sample each per iteration, against the same daemon
  async_create    latency of each of --concurrent AsyncSandbox.create() issued at once from one client:
                  --warmup bursts first (the pool grows to the burst, the client's code warms), then
                  --bursts measured ones, each after the pool has refilled; per burst it prints the
                  wall time of the whole burst, the CPU the client process used meanwhile (Python and
                  the SDK's transport threads) and the daemon's, and what else the daemon did (pool
                  builds finished, creates served cold)
  info_baseline   in the same bursts, as many AsyncSandbox.get_info() at once on the sandboxes just made:
                  the client's and the HTTP path's share of a burst (the daemon does next to nothing)
Kills are outside the timings. Uses the clients the tests pin (tests/e2e-py/.venv, tests/e2e/node_modules).
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e-py"))

JS = r"""
const { Sandbox } = require(process.argv[1])
const rl = require('node:readline').createInterface({ input: process.stdin })
rl.on('line', async () => {
  const t = process.hrtime.bigint()
  const s = await Sandbox.create()
  await s.commands.run('python3 -c "print(1)"')
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  await s.kill()
  process.stdout.write(JSON.stringify(ms) + '\n')
})
"""


def q(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def row(name, xs):
    return f"| {name} | {len(xs)} | {q(xs, .5):.2f} | {q(xs, .95):.2f} | {q(xs, .99):.2f} | {min(xs):.2f} | {max(xs):.2f} |"


async def concurrent_creates(n):
    from e2b import AsyncSandbox

    lat, errors = [], []

    async def one():
        t = time.perf_counter()
        try:
            s = await AsyncSandbox.create()
        except Exception as e:  # admission may refuse (429): counted, not hidden
            errors.append(f"{type(e).__name__}: {str(e)[:160]}")
            return None
        lat.append((time.perf_counter() - t) * 1000)
        return s

    c0, t0 = time.process_time(), time.perf_counter()
    made = await asyncio.gather(*(one() for _ in range(n)))
    span, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
    # the baseline of the same burst: as many get_info calls at once, from
    # the same client, on the sandboxes just made; the daemon does next to
    # nothing for one, so this is the client's and the HTTP path's share
    info = []

    async def look(s):
        t = time.perf_counter()
        await s.get_info()
        info.append((time.perf_counter() - t) * 1000)

    c1 = time.process_time()
    await asyncio.gather(*(look(s) for s in made if s))
    info_cpu = (time.process_time() - c1) * 1000
    await asyncio.gather(*(s.kill() for s in made if s))
    return lat, errors, span, cpu, info, info_cpu


def metrics(d):
    import urllib.request

    with urllib.request.urlopen(d.url + "/metrics", timeout=10) as r:
        out = {}
        for line in r.read().decode().splitlines():
            if line.startswith("hutch_") and " " in line:
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out


def daemon_cpu_ms(d):
    """The daemon's (one thread's) time on a CPU: /proc/<pid>/schedstat, in ns (stat's ticks are 10 ms)."""
    with open(f"/proc/{d.proc.pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e6


def wait_pool_full(d, seconds=120):
    """Ready at least the target (demand) and nothing being built."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        m = metrics(d)
        get = lambda st: m.get(f'hutch_pool_sandboxes{{template="base",state="{st}"}}', 0)
        if get("ready") >= get("target") and get("building") == 0:
            return m
        time.sleep(0.2)
    raise RuntimeError("the pool did not fill")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--concurrent", type=int, default=100)
    ap.add_argument("--build", default="build")
    ap.add_argument("--memory", default=None)
    ap.add_argument("--pids", default=None)
    ap.add_argument("--pool", type=int, default=2)
    ap.add_argument("--pool-max", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--bursts", type=int, default=5)
    a = ap.parse_args()
    os.environ["HUTCH_BUILD"] = a.build
    import conftest  # the e2e harness: a daemon on a temp dir and a free port

    conftest.BUILD = a.build
    conftest.HUTCH = os.path.join(ROOT, a.build, "hutch")
    import tempfile

    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    if a.memory:
        conf.write(f"default_memory = {a.memory}\n")
    if a.pids:
        conf.write(f"default_pids = {a.pids}\n")
    if a.pool_max is not None:
        conf.write(f"pool.max = {a.pool_max}\n")
    conf.close()
    d = conftest.Daemon(["--config", conf.name, "--pool-size", str(a.pool)])
    os.unlink(conf.name)
    conftest.use(d)
    node = None
    try:
        from e2b import Sandbox

        node = subprocess.Popen(["node", "-e", JS, os.path.join(ROOT, "tests", "e2e", "node_modules", "e2b")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        py, js = [], []
        for i in range(a.n + 3):  # 3 warm-up iterations, not counted
            t = time.perf_counter()
            s = Sandbox.create()
            s.commands.run('python3 -c "print(1)"')
            ms = (time.perf_counter() - t) * 1000
            s.kill()
            node.stdin.write("go\n")
            node.stdin.flush()
            jms = json.loads(node.stdout.readline())
            if i >= 3:
                py.append(ms)
                js.append(jms)
        lat, infos, errors, bursts = [], [], [], []
        for b in range(a.warmup + a.bursts):
            m0 = wait_pool_full(d) if a.pool else metrics(d)
            ready = m0.get('hutch_pool_sandboxes{template="base",state="ready"}', 0)
            dc0 = daemon_cpu_ms(d)
            bl, be, span, cpu, bi, icpu = asyncio.run(concurrent_creates(a.concurrent))
            dcpu = daemon_cpu_ms(d) - dc0
            m1 = metrics(d)
            delta = lambda k: m1.get(k, 0) - m0.get(k, 0)
            built = delta('hutch_pool_events_total{event="built"}')
            cold = delta('hutch_sandbox_creates_by_source_total{source="cold"}')
            with open("/proc/loadavg") as f:
                load = " ".join(f.read().split()[:3])
            kind = "warm-up" if b < a.warmup else "measured"
            p95 = q(bl, .95) if bl else float("nan")
            print(f"burst {b + 1} ({kind}): pool ready {ready:.0f}; p95 {p95:.1f} ms, whole burst {span:.1f} ms; "
                  f"client CPU {cpu:.0f} ms, daemon CPU {dcpu:.0f} ms (and its kills); {built:.0f} pool builds finished, "
                  f"{cold:.0f} cold creates, {len(be)} refused; get_info burst p95 {q(bi, .95) if bi else float('nan'):.1f} ms, "
                  f"client CPU {icpu:.0f} ms; load {load}", file=sys.stderr, flush=True)
            if b >= a.warmup:
                lat += bl
                infos += bi
                errors += be
                bursts.append(p95)
    finally:
        if node:
            node.kill()
            node.wait()
        d.stop()
    print("| figure (ms) | n | median | p95 | p99 | min | max |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(row("Python SDK: create + run python3", py))
    print(row("JS SDK: create + run python3", js))
    if lat:
        print(row(f"{a.concurrent} concurrent AsyncSandbox.create(), {a.bursts} bursts", lat))
        print("per-burst p95: " + " ".join(f"{x:.1f}" for x in bursts))
    if infos:
        print(row(f"baseline: {a.concurrent} concurrent get_info() on them, same bursts", infos))
    print(f"\nPython - JS, median: {q(py, .5) - q(js, .5):+.2f} ms; p99: {q(py, .99) - q(js, .99):+.2f} ms")
    if errors:
        print(f"concurrent creates refused: {len(errors)}; first: {errors[0]}")


if __name__ == "__main__":
    main()
