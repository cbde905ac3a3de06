"""The sandbox's own environment (a create's `envs`), as the kernels should see it.

A sandbox taken from a warm pool was started, with this server and its kernels, before anyone asked for it, so
its processes began with the template's environment only. When a create takes it, hutch writes the create's
environment (the template's envs under the create's envs) to ENV_FILE, a JSON object of names to strings, owned by
root, before the create answers. Each cell checks the file (one stat) and, when it changed, the server makes that
environment its own: new kernels start with it, and a running kernel gets it set (Python and R once, in a cell of
their own that leaves no trace; our pipe kernels through the next cell's environment until they restart).
"""
import json
import os
import threading

import kernels

ENV_FILE = "/run/hutch/envs.json"
MAX_BYTES = 1 << 20


class SandboxEnv:
    def __init__(self, path=ENV_FILE):
        self.path = path
        self.generation = 0  # changes each time the file does; 0: never read
        self.env = {}
        self._seen = None
        self._lock = threading.Lock()

    def refresh(self):
        """(generation, env): the file read again if it changed since the last call."""
        try:
            st = os.stat(self.path) if self.path else None
            key = (st.st_ino, st.st_mtime_ns, st.st_size) if st else None
        except OSError:
            key = None
        with self._lock:
            if key == self._seen:
                return self.generation, self.env
            self._seen = key
            env = self._read() if key is not None else {}
            if env is not None and env != self.env:
                self.env = env
                self.generation += 1
                os.environ.update(env)  # kernels started from now on inherit it
            return self.generation, self.env

    def _read(self):
        try:
            with open(self.path, "rb") as f:
                raw = f.read(MAX_BYTES + 1)
            data = json.loads(raw) if len(raw) <= MAX_BYTES else None
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            return None
        return {k: v for k, v in data.items() if kernels.env_names_ok([k]) and "\0" not in v}
