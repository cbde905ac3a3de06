"""Two copies of the server side by side (A: another branch's server/, B: this one's, by default), each on loopback
with its own warm Python context, timed cell by cell in alternation, so that the load of the moment weighs on
both alike. For each cell: the round trip of POST /execute until end_of_execution, median and p99, and the
size of the answer.

    mkdir -p /tmp/a && git archive main images/code-interpreter/server | tar -x -C /tmp/a
    /usr/bin/python3 images/code-interpreter/tests/bench_ab.py /tmp/a/images/code-interpreter/server [B] [N]
"""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_server import stop_server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SETUP = "import matplotlib.pyplot as plt\nimport numpy as np"
CELLS = {
    "x += 1": "x = globals().get('x', 0) + 1",
    "bar, 4 bars": "plt.bar(['a', 'b', 'c', 'd'], [1, 2, 3, 4]); plt.title('t'); plt.show()",
    "line, 1000 points": "plt.plot(np.arange(1000), np.random.rand(1000)); plt.show()",
    "line, 100000 points": "plt.plot(np.arange(100000), np.random.rand(100000)); plt.show()",
}


def start(server_dir, home):
    proc = subprocess.Popen([sys.executable, os.path.join(server_dir, "server.py"), "--host", "127.0.0.1", "--port",
                             "0", "--env-file", os.path.join(home, "sandbox-envs.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, HOME=home),
                            cwd=home, start_new_session=True)
    line = proc.stdout.readline().decode()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"{server_dir}: the server did not start: {line!r}")
    return proc, http.client.HTTPConnection("127.0.0.1", int(line.rsplit(":", 1)[1]), timeout=120)


def execute(conn, code):
    conn.request("POST", "/execute", body=json.dumps({"code": code, "language": "python"}),
                 headers={"Content-Type": "application/json"})
    body = conn.getresponse().read()
    lines = [json.loads(line) for line in body.splitlines()]
    assert lines[-1]["type"] == "end_of_execution" and not [e for e in lines if e["type"] == "error"], lines
    return len(body)


def main():
    a = sys.argv[1]
    b = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else os.path.join(HERE, "..", "server")
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    homes = [tempfile.mkdtemp(prefix="hutch-interp-ab-") for _ in (a, b)]
    servers = []
    try:
        for d, home in zip((a, b), homes):
            servers.append(start(d, home))
        for _, conn in servers:
            execute(conn, SETUP)
        print(f"load average {os.getloadavg()[0]:.2f} at the start; n={n} a cell and server, alternating")
        for name, code in CELLS.items():
            times, sizes = ([], []), [0, 0]
            for _, conn in servers:
                execute(conn, code)  # warm: the first figure loads the backend (and charts.py)
            for i in range(n):
                for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                    t0 = time.perf_counter()
                    sizes[k] = execute(servers[k][1], code)
                    times[k].append((time.perf_counter() - t0) * 1000)
            for k, label in enumerate(("A", "B")):
                t = sorted(times[k])
                print(f"{name:22} {label}  median {statistics.median(t):8.2f} ms  p99 {t[max(0, int(n * 0.99) - 1)]:8.2f} ms"
                      f"  answer {sizes[k]} bytes")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        for proc, conn in servers:
            conn.close()
            stop_server(proc)
        for home in homes:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
