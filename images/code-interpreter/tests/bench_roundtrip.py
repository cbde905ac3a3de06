"""Round trip of a small cell on a warm context: POST /execute 'x += 1' until end_of_execution, over one kept-alive
HTTP connection, as the SDKs do. Starts its own server on loopback; bounded (N cells per language).

    /usr/bin/python3 images/code-interpreter/tests/bench_roundtrip.py [N]
"""
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_server import start_server, stop_server  # noqa: E402

CELLS = {"python": ("x = 0", "x += 1"), "javascript": ("var x = 0", "x += 1"), "bash": ("x=0", "x=$((x + 1))")}


def execute(conn, body):
    conn.request("POST", "/execute", body=json.dumps(body), headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    lines = [json.loads(line) for line in resp]
    assert lines[-1]["type"] == "end_of_execution", lines


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    home = tempfile.mkdtemp(prefix="hutch-interp-bench-")
    proc, port = start_server(home)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for lang, (setup, step) in CELLS.items():
            execute(conn, {"code": setup, "language": lang})
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                execute(conn, {"code": step, "language": lang})
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            print(f"{lang:10} n={n} median {statistics.median(times):.2f} ms  p99 {times[int(n * 0.99) - 1]:.2f} ms")
        conn.close()
    finally:
        stop_server(proc)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
