#!/usr/bin/env python3
"""Abuse of the daemon's HTTP front door with request bodies and heads
(docs/security.md, "Request bodies"). Runs on the host against a `hutch
serve` of its own (loopback, an ephemeral port, its own data and run dirs),
with one sandbox, and asserts that every attack fails cleanly:

- a truncated upload (the client closes mid-body) leaves no file behind,
  neither the destination nor a temporary one;
- a lying Content-Length (more bytes than it says) gets the announced bytes
  written and the rest read as a new request, which is refused, never
  written;
- huge or malformed chunk sizes are 400 and write nothing;
- a malformed multipart body is 400 and writes nothing;
- a head over the limit is 431 with a JSON body, on the API and on a port;
- the daemon answers other requests throughout, and its memory stays
  bounded while a client pushes a large body at full speed.

Usage: http_bodies.py HUTCH WORKDIR. Prints "ok - ..." / "not ok - ..." and
"# end" (tests/security/run.sh counts them).
"""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

HUTCH, WORK = sys.argv[1], sys.argv[2]
failures = 0


def ok(cond, what):
    global failures
    print(("ok - " if cond else "not ok - ") + what, flush=True)
    if not cond:
        failures += 1


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def raw(port, data, read_timeout=10.0, close_write=False, keep_open=0.0):
    """Send bytes, return everything the server sends until it closes (or
    the timeout)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    s.sendall(data)
    if close_write:
        s.shutdown(socket.SHUT_WR)
    if keep_open:
        time.sleep(keep_open)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    s.close()
    return out


def request(port, method, path, headers=None, body=b""):
    h = {"Host": "127.0.0.1", "Content-Length": str(len(body)), "Connection": "close"}
    h.update(headers or {})
    head = "%s %s HTTP/1.1\r\n%s\r\n" % (method, path, "".join("%s: %s\r\n" % kv for kv in h.items()))
    out = raw(port, head.encode() + body)
    status = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else 0
    head, _, rest = out.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return status, rest
    body = b""
    while rest:
        line, _, rest = rest.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            break
        body, rest = body + rest[:size], rest[size + 2:]
    return status, body


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


# A sanitizer build keeps freed memory in ASan's quarantine and allocator
# caches: its RSS says little about what the daemon holds, so it gets a
# small quarantine and a looser bound (the release build is held to 48 MiB).
with open(HUTCH, "rb") as f:
    SAN = b"__asan_init" in f.read()
BOUND_KIB = (192 if SAN else 48) * 1024
port = free_port()
env = dict(os.environ, HUTCH_DATA_DIR=os.path.join(WORK, "data"), HUTCH_RUN_DIR=os.path.join(WORK, "run"),
           HUTCH_CGROUP_PARENT="hutch-sec-http-%d" % os.getpid())
if SAN:
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "detect_leaks=1") + ":quarantine_size_mb=16"
os.makedirs(WORK, exist_ok=True)
log = open(os.path.join(WORK, "serve.log"), "w+")
proc = subprocess.Popen([HUTCH, "serve", "--listen", "127.0.0.1", "--port", str(port), "--pool-size", "0"], env=env,
                        stdout=log, stderr=subprocess.STDOUT)
sbx = None
try:
    key = None
    for _ in range(400):
        log.seek(0)
        text = log.read()
        m = re.search(r"((?:e2b|hutch)_[0-9a-f]{16,})", text)
        if m and "listening on" in text:
            key = m.group(1)
            break
        time.sleep(0.05)
    ok(key is not None, "hutch serve started and printed its API key")
    if key is None:
        raise SystemExit
    status, body = request(port, "POST", "/sandboxes", {"X-API-KEY": key, "Content-Type": "application/json"},
                           json.dumps({"templateID": "base", "timeout": 120}).encode())
    ok(status == 201, "a sandbox was created (%d)" % status)
    sbx = json.loads(body)
    sid, token = sbx["sandboxID"], sbx.get("envdAccessToken") or ""
    envd = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "X-Access-Token": token}

    def envd_head(path, extra):
        h = dict(envd, Host="127.0.0.1")
        h.update(extra)
        return ("POST %s HTTP/1.1\r\n%s\r\n" % (path, "".join("%s: %s\r\n" % kv for kv in h.items()))).encode()

    def listing(d):
        st, b = request(port, "POST", "/filesystem.Filesystem/ListDir", dict(envd, **{"Content-Type": "application/json"}),
                        json.dumps({"path": d}).encode())
        return [e["name"] for e in json.loads(b).get("entries", [])] if st == 200 else None

    st, _ = request(port, "POST", "/filesystem.Filesystem/MakeDir", dict(envd, **{"Content-Type": "application/json"}),
                    json.dumps({"path": "/tmp/abuse"}).encode())
    ok(st == 200, "made /tmp/abuse (%d)" % st)

    # 1. truncated multipart upload: the client closes 9,000 bytes early
    b = "hutchsecboundary"
    part = ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/tmp/abuse/trunc\"\r\n\r\n" % b).encode()
    head = envd_head("/files", {"Content-Type": "multipart/form-data; boundary=" + b, "Content-Length": "10000"})
    raw(port, head + part + b"x" * 800, read_timeout=5, close_write=True)
    time.sleep(0.5)
    ok(listing("/tmp/abuse") == [], "a truncated upload leaves nothing behind (%s)" % listing("/tmp/abuse"))

    # 2. malformed multipart (no closing boundary, then garbage): 400, nothing written
    body = part + b"data" + b"\r\n--" + b.encode() + b"XX-not-a-delimiter"
    head = envd_head("/files", {"Content-Type": "multipart/form-data; boundary=" + b, "Content-Length": str(len(body)),
                                "Connection": "close"})
    out = raw(port, head + body)
    ok(out.startswith(b"HTTP/1.1 400") and b"multipart" in out, "a malformed multipart body is a clear 400: %r" % out[:60])
    ok(listing("/tmp/abuse") == [], "and leaves nothing behind")

    # 3. lying Content-Length: 5 announced, 60 sent
    head = envd_head("/files?path=/tmp/abuse/lie", {"Content-Type": "application/octet-stream", "Content-Length": "5"})
    smuggled = b"POST /files?path=/tmp/abuse/smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
    out = raw(port, head + b"hello" + smuggled, read_timeout=5)
    statuses = re.findall(rb"HTTP/1.1 (\d+)", out)
    ok(statuses[:1] == [b"200"] and len(statuses) == 2 and statuses[1].startswith(b"4"),
       "a lying Content-Length: the announced bytes are the body, the rest a new request, refused (%s)" % statuses)
    names = listing("/tmp/abuse")
    ok(names == ["lie"], "only the announced file exists (%s)" % names)
    st, content = request(port, "GET", "/files?path=/tmp/abuse/lie", envd)
    ok(st == 200 and content == b"hello", "it holds exactly the 5 announced bytes (%r)" % content[:20])

    # 4. huge and malformed chunk sizes
    for size in (b"fffffffffffffffffffffffffff", b"-5", b"0x10", b"5 5", b""):
        head = envd_head("/files?path=/tmp/abuse/chunk", {"Content-Type": "application/octet-stream",
                                                          "Transfer-Encoding": "chunked"})
        out = raw(port, head + size + b"\r\nhello\r\n0\r\n\r\n", read_timeout=5)
        ok(out.startswith(b"HTTP/1.1 400"), "chunk size %r is a 400: %r" % (size, out[:40]))
    # a size that fits but is never sent: truncated when the client leaves
    head = envd_head("/files?path=/tmp/abuse/chunk", {"Content-Type": "application/octet-stream",
                                                      "Transfer-Encoding": "chunked"})
    raw(port, head + b"ffffffffffff\r\n" + b"z" * 1000, read_timeout=3, close_write=True)
    time.sleep(0.5)
    ok(listing("/tmp/abuse") == ["lie"], "chunked abuse leaves nothing behind (%s)" % listing("/tmp/abuse"))

    # 5. heads over the limit: 431 with JSON, on the API and on a port
    for what, extra in (("API", ""), ("port", "E2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 8000\r\n" % sid)):
        out = raw(port, ("GET /health HTTP/1.1\r\nHost: x\r\n%sX-Pad: %s\r\n\r\n" % (extra, "a" * 70000)).encode())
        ok(out.startswith(b"HTTP/1.1 431") and b'"code":431' in out, "a 70 KB head on the %s is 431 JSON: %r" % (what, out[:40]))

    # 6. a client pushing a large body at full speed while others are answered
    before = rss_kib(proc.pid)
    peak = [before]
    n = 256 << 20
    head = envd_head("/files?path=/tmp/abuse/big", {"Content-Type": "application/octet-stream", "Content-Length": str(n)})

    def push():
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(head)
        chunk = b"\xa5" * (1 << 20)
        for _ in range(n >> 20):
            s.sendall(chunk)
        s.settimeout(30)
        push.reply = s.recv(4096)
        s.close()
    push.reply = b""
    t = threading.Thread(target=push)
    t.start()
    health_ok = True
    while t.is_alive():
        peak[0] = max(peak[0], rss_kib(proc.pid))
        st, _ = request(port, "GET", "/health")
        health_ok &= st == 200
        time.sleep(0.1)
    t.join()
    ok(push.reply.startswith(b"HTTP/1.1 200"), "the 256 MiB upload was written: %r" % push.reply[:40])
    ok(health_ok, "other requests were answered while it ran")
    ok(peak[0] - before < BOUND_KIB, "the daemon's RSS grew by %d KiB at most during it" % (peak[0] - before))
    ok(proc.poll() is None, "the daemon is still running")
finally:
    if sbx:
        try:
            request(port, "DELETE", "/sandboxes/" + sbx["sandboxID"], {"X-API-KEY": key})
        except OSError:
            pass
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    # the daemon's cgroup parent, in every hierarchy: nothing left behind
    # (its sandboxes' groups went with their kill)
    for top in glob.glob("/sys/fs/cgroup/*/") + ["/sys/fs/cgroup/"]:
        parent = os.path.join(top, env["HUTCH_CGROUP_PARENT"])
        if os.path.isdir(parent):
            for d in sorted((r for r, _, _ in os.walk(parent)), key=len, reverse=True):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
    log.seek(0)
    text = log.read()
    if re.search(r"ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:", text):
        ok(False, "the daemon's log has a sanitizer report")
        print("# | " + "\n# | ".join(text.splitlines()[-40:]))
print("# end")
sys.exit(1 if failures else 0)
