"""Contexts: a kernel with its state, language and working directory, and the runs of cells in it.

A context runs one cell at a time. While a cell runs, the answer's writer is polled: a client that went away (or
timed out, which is the same to us) interrupts the cell, and a kernel that does not stop within a grace period is
restarted. A kernel that died is restarted at once, and the next cell starts with a stderr line saying that its
state was lost; so does the first cell after a restart of the whole server (a memory release of the sandbox),
which finds the contexts of the previous run in its state file.
"""
import json
import os
import threading
import time
import uuid

import events
import kernels
import sandbox_env

LANGUAGES = ("python", "javascript", "typescript", "bash", "r")
ALIASES = {"js": "javascript", "ts": "typescript", "py": "python", "sh": "bash", "shell": "bash"}
# Contexts that exist from the start, as in E2B's server. Python's kernel starts with the server, so that a
# sandbox is ready for a first cell when its readiness check passes; JavaScript's starts at its first cell
# (0.2 s), since the TypeScript parser it loads costs 50 MB that an idle sandbox should not pay.
DEFAULT_LANGUAGES = {"python": True, "javascript": False}
KEEPALIVE_S = 5
POLL_S = 0.1  # how often a running cell's client is checked (and its answer's head sent, if not yet)
INTERRUPT_GRACE_S = 3


class ClientGone(Exception):
    """The client of the running cell disconnected."""


class UnknownLanguage(ValueError):
    pass


def normalize(language):
    lang = (language or "python").strip().lower()
    lang = ALIASES.get(lang, lang)
    if lang not in LANGUAGES or (lang == "r" and not kernels.r_available()):
        raise UnknownLanguage(f"language '{language}' is not supported here (supported: {', '.join(available())})")
    return lang


def available():
    return [lang for lang in LANGUAGES if lang != "r" or kernels.r_available()]


class Context:
    def __init__(self, cid, language, cwd, spec_manager, notice=None, senv=None):
        self.id = cid
        self.senv = senv or sandbox_env.SandboxEnv(None)
        self.language = language
        self.cwd = cwd
        self._ksm = spec_manager
        self.kernel = None
        self.lock = threading.Lock()
        self.notice = notice  # said (stderr) at the start of the next cell

    def describe(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    def _start(self):
        self.senv.refresh()  # a kernel starts with the sandbox's environment as it is now
        self.kernel = kernels.make(self.language, self.cwd, self._ksm)
        self.kernel.env_generation = self.senv.generation
        try:
            self.kernel.start()
        except Exception:
            self.kernel = None
            raise

    def ensure_started(self):
        with self.lock:
            if self.kernel is None:
                self._start()

    def _restart(self, why):
        if self.kernel is not None:
            self.kernel.stop()
            self.kernel = None
        self._start()
        self.notice = why

    def restart(self):
        """A fresh kernel on request: the caller knows the state is gone, so no notice."""
        if self.kernel is not None and self.kernel.alive():
            self.kernel.interrupt()  # lets a running cell end, so that the lock comes free
        with self.lock:
            if self.kernel is not None:
                self.kernel.stop()
                self.kernel = None
            self._start()
            self.notice = None

    def stop(self):
        with self.lock:
            if self.kernel is not None:
                self.kernel.stop()
                self.kernel = None

    def _lost(self, status):
        how = f"exit status {status}" if status is not None and status >= 0 else \
            f"signal {-status}" if status is not None else "unknown cause"
        return (f"The {self.language} kernel of this context died ({how}; out of memory, for example) and was "
                "restarted: the state of earlier cells (variables, imports, definitions) is lost.\n")

    def execute(self, code, env, send, client_gone):
        """Runs one cell. send(events) writes lines as they come (one write for what arrived together; an
        empty list writes what is pending: the answer's head) and raises ClientGone when the client is gone.
        The last lines, which came with the end of the cell, are returned instead, for the caller to write with
        its end marker."""
        with self.lock:
            if self.kernel is None:
                self._start()
            elif not self.kernel.alive():
                self._restart(self._lost(self.kernel.exit_status()))
            env = self._sandbox_env(env)
            if self.notice:
                note, self.notice = self.notice, None
                send([events.stream("stderr", note)])
            self.kernel.begin(code, env)
            try:
                return self._wait(send, client_gone)
            except ClientGone:
                self._abandon()
                raise

    def _sandbox_env(self, env):
        """The sandbox's environment changed since the kernel started (a create took this sandbox from a warm
        pool): the kernel gets it now. The cell's own env_vars are returned, with what could not be set for good
        merged under them."""
        generation, senv = self.senv.refresh()
        if self.kernel.env_generation == generation:
            return env
        if self.kernel.set_env(senv):
            self.kernel.env_generation = generation
            return env
        if not self.kernel.cells:  # a pipe kernel that has run nothing yet: restarting it costs no state
            self.kernel.stop()
            self._start()
            return env
        return dict(senv, **env)

    def _wait(self, send, client_gone):
        started = last = time.monotonic()
        while True:
            out, done = self.kernel.poll(POLL_S)
            if done:
                return out
            if out or time.monotonic() - started >= POLL_S:
                send(out)  # with nothing yet, the answer's head: a cell that takes longer has begun
            if out:
                last = time.monotonic()
            if not self.kernel.alive():
                why = self._lost(self.kernel.exit_status())
                self._restart(why)
                return [events.error("DeadKernelError", why.strip(), "")]
            if client_gone():
                raise ClientGone()
            if time.monotonic() - last >= KEEPALIVE_S:  # read at each use: --keepalive sets it
                send([events.keepalive()])
                last = time.monotonic()

    def _abandon(self):
        """Nobody waits for the cell any more: interrupt it, and restart a kernel that ignores that."""
        self.kernel.interrupt()
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        while time.monotonic() < deadline and self.kernel.alive():
            _, done = self.kernel.poll(0.1)
            if done:
                return
        self._restart("The previous cell did not stop when it was interrupted, so its kernel was restarted: "
                      "the state of earlier cells (variables, imports, definitions) is lost.\n")


class Registry:
    """All contexts, the default one of each language, and the state file that outlives the server."""

    def __init__(self, spec_manager, state_file, home, env_file=None):
        self._ksm = spec_manager
        self.senv = sandbox_env.SandboxEnv(env_file)
        self._state = state_file
        self.home = home
        self._lock = threading.Lock()
        self._default_lock = threading.Lock()  # two first calls in one language make one default context
        self._contexts = {}
        self._defaults = {}
        self._load()

    def _load(self):
        try:
            with open(self._state) as f:
                saved = json.load(f)
        except (OSError, ValueError):
            return
        note = ("The sandbox was restarted (its memory was released while it was paused, for example): the state "
                "of earlier cells (variables, imports, definitions) is lost.\n")
        for c in saved.get("contexts", []):
            try:
                lang = normalize(c["language"])
            except (UnknownLanguage, KeyError):
                continue
            ctx = Context(c["id"], lang, c.get("cwd") or self.home, self._ksm, notice=note, senv=self.senv)
            self._contexts[ctx.id] = ctx
            if c.get("default"):
                self._defaults[lang] = ctx.id

    def _save(self):
        data = {"contexts": [dict(c.describe(), default=self._defaults.get(c.language) == c.id)
                             for c in self._contexts.values()]}
        tmp = self._state + ".tmp"
        os.makedirs(os.path.dirname(self._state), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self._state)

    def create(self, language, cwd=None, default=False, start=True):
        lang = normalize(language)
        ctx = Context(str(uuid.uuid4()), lang, cwd or self.home, self._ksm, senv=self.senv)
        if start:
            ctx.ensure_started()
        with self._lock:
            self._contexts[ctx.id] = ctx
            if default:
                self._defaults[lang] = ctx.id
            self._save()
        return ctx

    def default(self, language, start=True):
        """The context a call with only a language runs in, made on first use."""
        lang = normalize(language)
        with self._default_lock:
            with self._lock:
                cid = self._defaults.get(lang)
                if cid in self._contexts:
                    return self._contexts[cid]
            return self.create(lang, default=True, start=start)

    def get(self, cid):
        with self._lock:
            return self._contexts.get(cid)

    def list(self):
        with self._lock:
            return [c.describe() for c in self._contexts.values()]

    def remove(self, cid):
        with self._lock:
            ctx = self._contexts.pop(cid, None)
            for lang, d in list(self._defaults.items()):
                if d == cid:
                    del self._defaults[lang]
            self._save()
        if ctx is not None:
            if ctx.kernel is not None and ctx.kernel.alive():
                ctx.kernel.interrupt()
            ctx.stop()
        return ctx is not None

    def start_defaults(self):
        for lang, eager in DEFAULT_LANGUAGES.items():
            ctx = self.default(lang, start=eager)
            if eager:
                ctx.ensure_started()
                with ctx.lock:
                    ctx.kernel.warm()

    def stop_all(self):
        with self._lock:
            ctxs = list(self._contexts.values())
        for c in ctxs:
            c.stop()
