"""The Python SDK beside the JS SDK, through one real `hutch serve`.

    tests/e2e-py/.venv/bin/python bench/py_sdk_bench.py [--n 50] [--concurrent 100] [--build build]
        [--memory 256M] [--pids 256] [--pool N]

--memory, --pids: the daemon's default_memory and default_pids (config file), so that --concurrent
sandboxes fit the admission budget of a small machine (pids: kernel.pid_max less a reserve); --pool N: a warm pool of N (the concurrent creates are measured once it is full).

Figures (milliseconds, nearest-rank quantiles):
  py_create_run   Sandbox.create() + commands.run('python3 -c "print(1)"') with the Python SDK (sync)
  js_create_run   the same with the JS SDK, from a Node process kept running (no Node start-up in the figure)
                  the two alternate, one sample each per iteration, against the same daemon
  async_create    latency of each of --concurrent AsyncSandbox.create() issued at once from one client
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

    made = await asyncio.gather(*(one() for _ in range(n)))
    await asyncio.gather(*(s.kill() for s in made if s))
    return lat, errors


def wait_pool_full(d, size, seconds=300):
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with urllib.request.urlopen(d.url + "/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith('hutch_pool_sandboxes{template="base",state="ready"} '):
                    if float(line.split()[1]) >= size:
                        return
        time.sleep(0.5)
    raise RuntimeError("the pool did not fill")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--concurrent", type=int, default=100)
    ap.add_argument("--build", default="build")
    ap.add_argument("--memory", default=None)
    ap.add_argument("--pids", default=None)
    ap.add_argument("--pool", type=int, default=0)
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
        if a.pool:
            wait_pool_full(d, a.pool)
        lat, errors = asyncio.run(concurrent_creates(a.concurrent))
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
        print(row(f"{a.concurrent} concurrent AsyncSandbox.create()", lat))
    print(f"\nPython - JS, median: {q(py, .5) - q(js, .5):+.2f} ms; p99: {q(py, .99) - q(js, .99):+.2f} ms")
    if errors:
        print(f"concurrent creates refused: {len(errors)}; first: {errors[0]}")


if __name__ == "__main__":
    main()
