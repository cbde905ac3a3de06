"""The kernels a context runs its code in.

Two kinds, with one interface (begin a cell, poll it for events until it is done, interrupt, stop):
- JupyterKernel drives a Jupyter kernel with jupyter_client: ipykernel for Python (rich results: matplotlib figures,
  pandas tables) and IRkernel for R.
- PipeKernel drives a small kernel of our own over pipes: pipe_kernel.js for JavaScript and TypeScript on Node.js,
  pipe_kernel.sh for bash. Their stdout and stderr are the cell's output; requests go in on one pipe and events
  (result, error, done) come back on another.

Every kernel is its own process group (session), so an interrupt (SIGINT) reaches what the cell started too.
"""
import codecs
import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import zmq

import events

HERE = os.path.dirname(os.path.abspath(__file__))


class KernelError(Exception):
    """A kernel could not be started or talked to."""


def env_names_ok(env):
    return all(k and (k[0].isalpha() or k[0] == "_") and all(c.isalnum() or c == "_" for c in k) and k.isascii()
               for k in env)


class JupyterKernel:
    """A Jupyter kernel (ipykernel, IRkernel): started by jupyter_client's KernelManager, spoken to over plain
    (blocking) ZeroMQ sockets of our own. jupyter_client's blocking client runs an asyncio event loop for every
    message it waits for (and a new loop in every thread, and this server has a thread per connection): a cell
    took several ms of that alone. Here one zmq poll waits for the shell and IOPub sockets together."""

    def __init__(self, language, cwd, spec_manager, spec_name):
        self.language = language
        self.cwd = cwd
        self._ksm = spec_manager
        self._spec = spec_name
        self.km = None
        self._shell = self._iopub = None
        self._poller = None
        self._msg = None
        self._idle = False  # the running cell's "idle" status arrived
        self._reply = None  # and its execute_reply
        self._idle_at = 0.0
        self.cells = 0
        self.env_generation = 0  # of the sandbox's environment it has (sandbox_env.py)

    def start(self):
        from jupyter_client import KernelManager

        self.km = KernelManager(kernel_name=self._spec, kernel_spec_manager=self._ksm)
        try:
            self.km.start_kernel(cwd=self.cwd, env=dict(os.environ), independent=False)
        except OSError as e:  # a working directory the user may not enter, for example
            self.km = None
            raise KernelError(f"the {self.language} kernel did not start in {self.cwd}: {e}") from e
        self._shell = self.km.connect_shell()
        self._iopub = self.km.connect_iopub()
        self._poller = zmq.Poller()
        self._poller.register(self._shell, zmq.POLLIN)
        self._poller.register(self._iopub, zmq.POLLIN)
        try:
            self._wait_ready(60)
        except KernelError:
            self.stop()
            raise

    def _send(self, msg_type, content):
        return self.km.session.send(self._shell, msg_type, content)["header"]["msg_id"]

    def _recv(self, sock):
        """The next message waiting on sock, or None."""
        _, msg = self.km.session.recv(sock, mode=zmq.NOBLOCK)
        return msg

    def _drain_iopub(self):
        while self._recv(self._iopub) is not None:
            pass

    def _wait_ready(self, timeout):
        """Until the kernel answers a kernel_info_request and its IOPub messages reach us: a SUB socket gets
        nothing until its subscription has reached the kernel, so the request is repeated until one does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._shell_reply(self._send("kernel_info_request", {}), 1.0) is not None:
                if self._iopub.poll(200):
                    self._drain_iopub()  # what is left comes later, and is nobody's (poll passes over it)
                    return
            if not self.alive():
                raise KernelError(f"the {self.language} kernel did not start: it exited ({self.exit_status()})")
        raise KernelError(f"the {self.language} kernel did not start: no answer in {timeout} s")

    def _shell_reply(self, msg_id, timeout):
        """The shell reply to msg_id within timeout (None without one: late, or the kernel died)."""
        deadline = time.monotonic() + timeout
        while True:
            while (msg := self._recv(self._shell)) is not None:
                if msg["parent_header"].get("msg_id") == msg_id:
                    return msg
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive():
                return None
            self._shell.poll(min(left, 0.2) * 1000)

    def _execute(self, code, silent, store_history):
        # stop_on_error off: with it, a cell's error makes ipykernel abort every request that reaches it until
        # its loop has gone round once more, and the next cell (or the env_pop after this one), sent as soon as
        # this one's reply came, could be aborted unrun; a context runs one cell at a time, so nothing of ours is
        # ever queued behind an error
        return self._send("execute_request", {"code": code, "silent": silent, "store_history": store_history,
                                              "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})

    def _proc(self):
        return getattr(getattr(self.km, "provisioner", None), "process", None)

    def alive(self):
        proc = self._proc()
        return proc is not None and proc.poll() is None

    def exit_status(self):
        proc = self._proc()
        return proc.poll() if proc is not None else None

    def _quiet(self, code, timeout=15):
        """Runs code without history, output or a count (the per-execution environment), waiting for it. Its
        IOPub messages are nobody's: the next poll passes over them."""
        self._shell_reply(self._execute(code, True, False), timeout)

    def _env_push(self, env):
        if self.language == "python":
            self._quiet(f"__import__('_hutch').env_push({env!r})")
        elif self.language == "r":
            keys = ", ".join(json.dumps(k) for k in env)
            sets = ", ".join(f"`{k}` = {json.dumps(v)}" for k, v in env.items())
            # names = TRUE: a single name's value is otherwise unnamed, and the restore would find no name
            self._quiet(f".hutch_env <- Sys.getenv(c({keys}), unset = NA, names = TRUE); Sys.setenv({sets})")

    def _env_pop(self):
        if self.language == "python":
            self._quiet("__import__('_hutch').env_pop()")
        elif self.language == "r":
            self._quiet("local({o <- .hutch_env; for (k in names(o)) if (is.na(o[[k]])) Sys.unsetenv(k) else "
                        "do.call(Sys.setenv, setNames(list(o[[k]]), k))}); rm(.hutch_env)")

    def warm(self):
        """A first cell that shows its result but leaves no count or history: IPython's first execution sets up
        its display machinery (a few hundred ms on a busy machine), which a warm pool sandbox then has done
        before a create takes it."""
        self._shell_reply(self._execute("None", False, False), 15)
        while self._iopub.poll(50):  # its IOPub messages are nobody's
            self._drain_iopub()

    def set_env(self, env):
        """The sandbox's environment, for good (a quiet cell); True when done."""
        if self.language == "python":
            self._quiet(f"__import__('os').environ.update({env!r})")
        elif self.language == "r" and env:
            self._quiet("Sys.setenv(" + ", ".join(f"`{k}` = {json.dumps(v)}" for k, v in env.items()) + ")")
        return True

    def begin(self, code, env):
        self.cells += 1
        self._env = bool(env)
        if env:
            self._env_push(env)
        self._idle, self._reply = False, None
        self._msg = self._execute(code, False, True)

    def poll(self, timeout):
        """Events of the running cell that arrived within timeout, and whether the cell is done: its "idle"
        status (after all its output) and its execute_reply (with the count) both came."""
        out = []
        if not self._idle and self._reply is None:
            self._poller.poll(timeout * 1000)
        elif not self._idle:
            self._iopub.poll(timeout * 1000)
        elif self._reply is None:
            self._shell.poll(timeout * 1000)
        while not self._idle and (msg := self._recv(self._iopub)) is not None:
            if msg["parent_header"].get("msg_id") == self._msg and self._event(msg, out):
                self._idle, self._idle_at = True, time.monotonic()
        while self._reply is None and (msg := self._recv(self._shell)) is not None:
            if msg["parent_header"].get("msg_id") == self._msg:
                self._reply = msg
        # a reply that never comes after the idle status (it always does) does not hold the cell for ever
        if self._idle and (self._reply is not None or time.monotonic() - self._idle_at > 5):
            return out + self._finish(), True
        return out, False

    def _event(self, msg, out):
        kind, c = msg["header"]["msg_type"], msg["content"]
        if kind == "stream":
            out.append(events.stream("stderr" if c.get("name") == "stderr" else "stdout", c.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            out.append(events.result(c.get("data", {}), kind == "execute_result"))
        elif kind == "error":
            out.append(events.error(c.get("ename", ""), c.get("evalue", ""), "\n".join(c.get("traceback", []))))
        elif kind == "status" and c.get("execution_state") == "idle":
            return True
        return False

    def _finish(self):
        out = []
        n = self._reply["content"].get("execution_count") if self._reply is not None else None
        if isinstance(n, int):
            out.append(events.count(n))
        self._reply = None
        if self._env:
            self._env_pop()
        return out

    def interrupt(self):
        self.km.interrupt_kernel()

    def stop(self):
        for sock in (self._shell, self._iopub):
            if sock is not None:
                sock.close(linger=0)
        self._shell = self._iopub = self._poller = None
        if self.km is not None:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:  # a dead kernel has nothing left to shut down
                pass
        self.km = None


class PipeKernel:
    """One of our own kernels, spoken to over pipes (see the module comment)."""

    def __init__(self, language, cwd):
        self.language = language
        self.cwd = cwd
        self.proc = None
        self._id = 0
        self._buf = b""
        self._tmp = None
        self.cells = 0
        self.env_generation = 0

    def _argv(self):
        if self.language in ("javascript", "typescript"):
            node = shutil.which("node") or shutil.which("nodejs") or "node"
            return [node, os.path.join(HERE, "pipe_kernel.js"), self.language]
        return ["/bin/bash", "--noprofile", "--norc", os.path.join(HERE, "pipe_kernel.sh")]

    def start(self):
        self._tmp = tempfile.mkdtemp(prefix=f"hutch-{self.language}-")
        req_r, self._req = os.pipe()
        self._ev, ev_w = os.pipe()
        env = dict(os.environ, HUTCH_KERNEL_REQ_FD=str(req_r), HUTCH_KERNEL_EV_FD=str(ev_w),
                   HUTCH_KERNEL_DIR=self._tmp)
        try:
            self.proc = subprocess.Popen(self._argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, pass_fds=(req_r, ev_w), cwd=self.cwd, env=env,
                                         start_new_session=True)
        except OSError as e:
            for fd in (req_r, ev_w, self._req, self._ev):
                os.close(fd)
            raise KernelError(f"the {self.language} kernel did not start: {e}") from e
        finally:
            if self.proc is not None:
                os.close(req_r)
                os.close(ev_w)
        self._decoders = {self.proc.stdout.fileno(): ("stdout", codecs.getincrementaldecoder("utf-8")("replace")),
                          self.proc.stderr.fileno(): ("stderr", codecs.getincrementaldecoder("utf-8")("replace"))}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got, _ = self._read(0.2)
            if any(e.get("type") == "ready" for e in got):
                return
            if self.proc.poll() is not None:
                break
        err = self.proc.stderr.read1(4096).decode(errors="replace") if self.proc.poll() is not None else ""
        self.stop()
        raise KernelError(f"the {self.language} kernel did not start {err}".strip())

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def exit_status(self):
        return self.proc.poll() if self.proc is not None else None

    def warm(self):
        pass

    def set_env(self, env):
        """Our pipe kernels take an environment per cell only: the caller restarts or merges instead."""
        return False

    def begin(self, code, env):
        self.cells += 1
        if not env_names_ok(env):
            raise ValueError("env_vars: names are letters, digits and _")
        self._id += 1
        if self.language == "bash":
            # bash reads the cell from files: no JSON parser needed in the kernel
            with open(os.path.join(self._tmp, "cell"), "w") as f:
                f.write(code)
            with open(os.path.join(self._tmp, "env"), "w") as f:
                f.write("".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()))
            line = f"{self._id} {' '.join(env)}\n"
        else:
            line = json.dumps({"id": self._id, "code": code, "env": env}) + "\n"
        data = line.encode()
        while data:  # a large cell fills the pipe: the kernel reads as we write
            data = data[os.write(self._req, data):]

    def _read(self, timeout):
        """What arrived within timeout: (the kernel's events, the cell's output as stream events)."""
        fds = [self._ev] + list(self._decoders)
        out, ctl = [], []
        ready, _, _ = select.select(fds, [], [], timeout)
        for fd in ready:
            data = os.read(fd, 65536)
            if fd == self._ev:
                self._buf += data
                *lines, self._buf = self._buf.split(b"\n")
                for line in lines:
                    try:
                        ctl.append(json.loads(line))
                    except ValueError:  # the cell's own processes inherit the pipe: what they write is no event
                        continue
            elif data:
                name, dec = self._decoders[fd]
                text = dec.decode(data)
                if text:
                    out.append(events.stream(name, text))
        return ctl, out

    def poll(self, timeout):
        ctl, out = self._read(timeout)
        done = False
        for e in ctl:
            if e.get("id") != self._id:
                continue
            kind = e.get("type")
            if kind == "result":
                out.append(events.result(e.get("data", {}), True))
            elif kind == "error":
                out.append(events.error(e.get("name", ""), e.get("value", ""), e.get("traceback", "")))
            elif kind == "done":
                done = True
                # the cell's own writes reach the pipes before its done: read what is left of them
                while True:
                    _, rest = self._read(0)
                    out.extend(rest)
                    if not rest:
                        break
                if "count" in e:
                    out.append(events.count(e["count"]))
        return out, done

    def interrupt(self):
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def stop(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()
            for fd in (self._req, self._ev):
                os.close(fd)
            self.proc = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def write_specs(directory):
    """The Jupyter kernel specs this server starts: Python on this interpreter, R when IRkernel is there."""
    specs = {
        "hutch-python": {
            "argv": [sys.executable, os.path.join(HERE, "kernel_launcher.py"), "-f", "{connection_file}",
                     "--InteractiveShell.colors=NoColor", "--PlainTextFormatter.max_seq_length=0",
                     # no SQLite history (In, Out and _i<n> stay, in memory): its thread wrote every cell to
                     # ~/.ipython and held the lock the next cell's input waits for while it did
                     "--HistoryManager.enabled=False",
                     # ipykernel sleeps 0.5 ms before every execute_reply (its comment: "on rare occasions, the
                     # flush doesn't seem to make it to the clients"); the server ends a cell at its idle status
                     # on IOPub, which comes after all of the cell's output, so the reply's timing carries nothing
                     "--IPythonKernel._execute_sleep=0",
                     f"--IPKernelApp.exec_lines=__import__('runpy').run_path({os.path.join(HERE, 'ipython_startup.py')!r}) and None"],
            "display_name": "Python 3", "language": "python",
            "env": {"PYDEVD_DISABLE_FILE_VALIDATION": "1"},  # else the debugger warns on every start
        },
        "hutch-r": {
            "argv": ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"],
            "display_name": "R", "language": "R",
        },
    }
    for name, spec in specs.items():
        os.makedirs(os.path.join(directory, name), exist_ok=True)
        with open(os.path.join(directory, name, "kernel.json"), "w") as f:
            json.dump(spec, f)


def r_available():
    return shutil.which("R") is not None and any(
        os.path.isdir(os.path.join(d, "IRkernel")) for d in ("/usr/lib/R/site-library", "/usr/local/lib/R/site-library",
                                                           "/usr/lib/R/library"))


def make(language, cwd, spec_manager):
    """A kernel (not started) for one of the languages LANGUAGES lists."""
    if language == "python":
        return JupyterKernel(language, cwd, spec_manager, "hutch-python")
    if language == "r":
        return JupyterKernel(language, cwd, spec_manager, "hutch-r")
    return PipeKernel(language, cwd)
