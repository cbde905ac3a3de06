"""The code interpreter's HTTP server, on port 49999 inside a code-interpreter sandbox.

It speaks what the code-interpreter SDKs (@e2b/code-interpreter, e2b-code-interpreter) send:
  POST   /execute               {code, context_id | language, env_vars} -> a stream of JSON lines (events.py)
  POST   /contexts              {language, cwd} -> {id, language, cwd}
  GET    /contexts              -> [{id, language, cwd}, ...]
  DELETE /contexts/{id}
  POST   /contexts/{id}/restart
  GET    /health                -> "OK" (only once the default Python kernel is up)

Python's standard HTTP server with a thread per connection is enough: one client (the SDK, through the
sandbox's ingress) and a few concurrent cells, each of which mostly waits for its kernel. The port is bound only
after the default Python kernel has started, so a readiness check on /health passes when a first cell can run at once.
"""
import argparse
import atexit
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import contexts  # noqa: E402
import events  # noqa: E402
import kernels  # noqa: E402
import sandbox_env  # noqa: E402

MAX_BODY = 16 << 20


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hutch-interpreter"
    registry = None  # set by main
    _head = b""  # an /execute answer's head, until its first write

    def setup(self):
        super().setup()
        # an answer goes out as several small writes (headers, then one chunk a line): without this, Nagle's
        # algorithm holds each behind the client's delayed ACK, 40 ms a cell
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    # ---- plumbing ----

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("request body too large")
        raw = self.rfile.read(n) if n else b""
        if not raw.strip():
            return {}
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        return body

    def _reply(self, status, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else (json.dumps(body) if ctype == "application/json" else body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _text(self, status, text):
        self._reply(status, text, "text/plain; charset=utf-8")

    def _route(self, method):
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        parts = path.strip("/").split("/")
        try:
            if method == "GET" and path == "/health":
                return self._text(200, "OK")
            if method == "POST" and path == "/execute":
                return self._execute(self._body())
            if path == "/contexts":
                if method == "POST":
                    return self._create(self._body())
                if method == "GET":
                    return self._reply(200, self.registry.list())
            if len(parts) == 2 and parts[0] == "contexts" and method == "DELETE":
                self._body()
                if not self.registry.remove(parts[1]):
                    return self._text(404, f"context '{parts[1]}' not found")
                return self._reply(200, {})
            if len(parts) == 3 and parts[0] == "contexts" and parts[2] == "restart" and method == "POST":
                self._body()
                ctx = self.registry.get(parts[1])
                if ctx is None:
                    return self._text(404, f"context '{parts[1]}' not found")
                ctx.restart()
                return self._reply(200, {})
            return self._text(404, f"no route {method} {path}")
        except (ValueError, contexts.UnknownLanguage) as e:
            return self._text(400, str(e))
        except kernels.KernelError as e:
            return self._text(500, str(e))

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def do_DELETE(self):
        self._route("DELETE")

    # ---- handlers ----

    def _create(self, body):
        cwd = body.get("cwd")
        if cwd is not None and (not isinstance(cwd, str) or not cwd.startswith("/")):
            raise ValueError("cwd must be an absolute path")
        if cwd and not os.path.isdir(cwd):
            raise ValueError(f"cwd '{cwd}' is not a directory")
        ctx = self.registry.create(body.get("language"), cwd)
        self._reply(200, ctx.describe())

    def _execute(self, body):
        code = body.get("code")
        if not isinstance(code, str):
            raise ValueError("code must be a string")
        cid, language = body.get("context_id"), body.get("language")
        if cid and language:
            raise ValueError("Only one of context_id or language can be provided")
        env = body.get("env_vars") or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ValueError("env_vars must map names to strings")
        if not kernels.env_names_ok(env):
            raise ValueError("env_vars: names are letters, digits and _")
        if cid:
            ctx = self.registry.get(cid)
            if ctx is None:
                return self._text(404, f"Context {cid} not found")
        else:
            ctx = self.registry.default(language)

        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-store")
        # the head waits for the first lines (or for the cell to take longer than a poll, contexts.py): a short
        # cell's whole answer is then one write, which each hop on the way passes on in one go
        self._headers_buffer.append(b"\r\n")
        self._head = b"".join(self._headers_buffer)
        self._headers_buffer = []
        try:
            last = ctx.execute(code, env, self._send_events, self._client_gone)
            # the cell's last lines, the end marker and the chunked body's end in one write: one segment
            self._send_events(last + [events.end()], end=True)
        except contexts.ClientGone:
            self.close_connection = True
        except kernels.KernelError as e:
            try:
                self._send_events([events.error("KernelError", str(e), ""), events.end()], end=True)
            except contexts.ClientGone:
                pass
            self.close_connection = True

    def _send_events(self, evs, end=False):
        """Writes events as chunks of the body (the whole body's end too when end), after the head if it has
        not gone yet, in one write."""
        out = bytearray(self._head)
        self._head = b""
        for ev in evs:
            data = events.encode(ev)
            out += b"%x\r\n%s\r\n" % (len(data), data)
        if end:
            out += b"0\r\n\r\n"
        if not out:
            return
        try:
            self.wfile.write(out)
            self.wfile.flush()
        except OSError as e:
            raise contexts.ClientGone() from e

    def _client_gone(self):
        """True once the client closed its side (EOF) or reset the connection."""
        sock = self.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    verbose = False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=49999)
    ap.add_argument("--home", default=None, help="the default working directory (default: $HOME)")
    ap.add_argument("--state", default=None, help="where the contexts are remembered across restarts")
    ap.add_argument("--no-defaults", action="store_true", help="start no kernel before the first request")
    ap.add_argument("--keepalive", type=float, default=contexts.KEEPALIVE_S,
                    help="seconds without output after which a running cell's answer gets a keepalive line")
    ap.add_argument("--env-file", default=sandbox_env.ENV_FILE,
                    help="the sandbox's environment as hutch writes it when a create takes a pooled sandbox")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)

    from jupyter_client.kernelspec import KernelSpecManager

    contexts.KEEPALIVE_S = args.keepalive
    home = args.home or os.environ.get("HOME") or os.getcwd()
    state = args.state or os.path.join(home, ".cache", "hutch-interpreter", "contexts.json")
    specs = tempfile.mkdtemp(prefix="hutch-kernelspecs-")
    # gone with the server however it ends but SIGKILL (in a sandbox /tmp goes with it anyway; a server run on a
    # host, as images/code-interpreter/tests/run.sh does, left one directory per start)
    atexit.register(shutil.rmtree, specs, True)
    kernels.write_specs(specs)
    ksm = KernelSpecManager(kernel_dirs=[specs], ensure_native_kernel=False)
    registry = contexts.Registry(ksm, state, home, args.env_file)
    Handler.registry = registry
    running = []

    def stop(signum, frame):
        if not running:
            raise SystemExit(1)
        threading.Thread(target=running[0].shutdown, daemon=True).start()

    # Handled before any kernel starts: a kernel inherits an ignored SIGINT (a server started in the background
    # by a shell has one) and could then not be interrupted; a handled one is reset to the default at exec.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if not args.no_defaults:
        registry.start_defaults()
    server = Server((args.host, args.port), Handler)
    server.verbose = args.verbose
    running.append(server)
    print(f"hutch-interpreter: listening on {args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        registry.stop_all()
        server.server_close()


if __name__ == "__main__":
    main()
