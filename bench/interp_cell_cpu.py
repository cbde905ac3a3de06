"""Where a code-interpreter cell's time goes, on the host: `x += 1` on a warm Python context of the server in
images/code-interpreter/server, against the same server of other trees in the same run (rounds alternate), over
one kept-alive HTTP connection ("keep") and over a new connection per cell ("new", as the port ingress dials one
for each request). Besides the wall-clock round trip it gives the CPU time per cell of the server process and of
its kernel (utime + stime from /proc, over the whole round), which a loaded machine inflates far less than the
wall clock. As any user, with Debian's python3 (scripts/install-deps.sh):

    /usr/bin/python3 bench/interp_cell_cpu.py [--cells 100] [--rounds 3] SERVER_DIR [SERVER_DIR...]

SERVER_DIR: a folder holding server.py (images/code-interpreter/server of this tree, of an older checkout).
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def start(server_dir):
    home = tempfile.mkdtemp(prefix="hutch-interp-cpu-")
    proc = subprocess.Popen(["/usr/bin/python3", os.path.join(server_dir, "server.py"), "--host", "127.0.0.1",
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=home,
                            env=dict(os.environ, HOME=home), start_new_session=True)
    line = proc.stdout.readline().decode()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"{server_dir}: the server did not start")
    return proc, int(line.rsplit(":", 1)[1]), home


def execute(conn, code):
    conn.request("POST", "/execute", body=json.dumps({"code": code}), headers={"Content-Type": "application/json"})
    lines = [json.loads(line) for line in conn.getresponse()]
    assert lines[-1]["type"] == "end_of_execution", lines


def cpu_ms(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_MS


def cpu_of(pid):
    """CPU ms so far of the server and of its children (the default Python kernel; nothing else runs)."""
    kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
    return {"server": cpu_ms(pid), "kernel": sum(cpu_ms(int(k)) for k in kids)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("servers", nargs="+")
    args = ap.parse_args()
    servers = [os.path.abspath(s) for s in args.servers]
    running = [start(s) for s in servers]
    wall, cpu = {}, {}
    try:
        for r in range(args.rounds):
            order = list(zip(servers, running))
            for s, (proc, port, _) in (order if r % 2 == 0 else order[::-1]):
                for mode in ("keep", "new"):
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    execute(conn, "x = 0")
                    for _ in range(5):
                        execute(conn, "x += 1")
                    before = cpu_of(proc.pid)
                    for _ in range(args.cells):
                        if mode == "new":
                            conn.close()
                            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                        t0 = time.perf_counter()
                        execute(conn, "x += 1")
                        wall.setdefault((s, mode), []).append((time.perf_counter() - t0) * 1000)
                    after = cpu_of(proc.pid)
                    conn.close()
                    for who in after:
                        cpu.setdefault((s, mode, who), []).append((after[who] - before[who]) / args.cells)
        out = {}
        for (s, mode), xs in wall.items():
            xs.sort()
            out.setdefault(s, {})[mode] = {
                "wall_median_ms": round(statistics.median(xs), 2), "wall_p95_ms": round(xs[int(len(xs) * 0.95)], 2),
                "wall_p99_ms": round(xs[int(len(xs) * 0.99)], 2),
                "cpu_ms_per_cell": {who: [round(x, 2) for x in cpu[(s, mode, who)]] for who in ("server", "kernel")}}
        out["load_average"] = open("/proc/loadavg").read().split()[:3]
        print(json.dumps(out, indent=1))
    finally:
        for proc, _, home in running:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
