"""Starts a real `hutch serve` and points the unmodified e2b SDK at it.

One daemon per test session (a temp data dir, run dir and cgroup parent, a
free loopback port), removed when the session ends, whatever the outcome:
sandboxes outlive their daemon by design (a restarted daemon adopts them), so
the teardown kills what is left in the session's cgroups and unmounts what is
left under its directory. HUTCH_BUILD names the build tree (build, build-san).
"""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import glob

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("HUTCH_BUILD", "build")
HUTCH = os.path.join(ROOT, BUILD, "hutch")
KEY_RE = re.compile(r"((?:e2b|hutch)_[0-9a-f]{16,})")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, extra_args=(), env=None):
        self.base = tempfile.mkdtemp(prefix="hutch-e2e-py-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.cgroup_parent = f"hutch-e2e-py-{os.getpid()}-{self.port}"
        self.env = dict(os.environ)
        self.env.update(
            HUTCH_DATA_DIR=os.path.join(self.base, "data"),
            HUTCH_RUN_DIR=os.path.join(self.base, "run"),
            HUTCH_CGROUP_PARENT=self.cgroup_parent,
            ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "detect_leaks=1"),
            # no build of the code interpreter template per test daemon (provision.h)
            HUTCH_INTERPRETER_PROVISION=os.environ.get("HUTCH_INTERPRETER_PROVISION", "0"),
        )
        self.env.update(env or {})
        self.log = []
        self.key = None
        self._listening = threading.Event()
        self._keyed = threading.Event()
        # no warm pool unless asked (the benchmark): tests count what a pool would change
        pool = [] if "--pool-size" in extra_args else ["--pool-size", "0"]
        args = [HUTCH, "serve", "--listen", "127.0.0.1", "--port", str(self.port), *pool, *extra_args]
        self.proc = subprocess.Popen(args, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 20
        while not (self._keyed.is_set() and self._listening.is_set()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = "".join(self.log)
                self.stop()
                raise RuntimeError(f"hutch serve did not start; output:\n{out}")
            time.sleep(0.05)

    def _read(self):
        for line in self.proc.stdout:
            self.log.append(line)
            if len(self.log) > 20000:  # bounded: keep the start and the latest lines
                del self.log[100:10100]
            if not self.key:
                m = KEY_RE.search(line)
                if m:
                    self.key = m.group(1)
                    self._keyed.set()
            if "listening on" in line:
                self._listening.set()

    def output(self):
        return "".join(self.log)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._cleanup()
        return self.proc.returncode

    def _cleanup(self):
        groups = glob.glob(f"/sys/fs/cgroup/*/{self.cgroup_parent}/*") + glob.glob(f"/sys/fs/cgroup/{self.cgroup_parent}/*")
        for g in groups:
            try:
                with open(os.path.join(g, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                pass
        if groups:
            time.sleep(0.3)
        for g in sorted(groups, reverse=True) + glob.glob(f"/sys/fs/cgroup/*/{self.cgroup_parent}") + glob.glob(f"/sys/fs/cgroup/{self.cgroup_parent}"):
            try:
                os.rmdir(g)
            except OSError:
                pass
        try:
            with open("/proc/self/mountinfo") as f:
                mounts = [l.split()[4] for l in f if l.split()[4].startswith(self.base + "/")]
            for m in sorted(mounts, reverse=True):
                subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
        except OSError:
            pass
        shutil.rmtree(self.base, ignore_errors=True)


def use(d):
    """Point the SDK's environment at daemon d."""
    os.environ["E2B_API_KEY"] = d.key
    os.environ["E2B_API_URL"] = d.url
    os.environ["E2B_SANDBOX_URL"] = d.url
    os.environ.pop("E2B_VALIDATE_API_KEY", None)  # the SDK's default: validation on


@pytest.fixture(scope="session")
def daemon():
    # watcher.idle_timeout comes from a config file: short, so that expiry is testable
    cfg_dir = tempfile.mkdtemp(prefix="hutch-e2e-py-conf-")
    conf = os.path.join(cfg_dir, "hutch.conf")
    with open(conf, "w") as f:
        f.write("watcher.idle_timeout = 4s\n")
    d = Daemon(["--config", conf])
    use(d)
    try:
        yield d
    finally:
        rc = d.stop()
        shutil.rmtree(cfg_dir, ignore_errors=True)
        out = d.output()
        # the sanitizer build reports leaks and errors at exit
        assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out[-4000:]
        assert rc == 0, f"hutch serve exited with {rc}:\n{out[-4000:]}"


@pytest.fixture
def sandbox(daemon):
    from e2b import Sandbox

    sbx = Sandbox.create(timeout=120)
    try:
        yield sbx
    finally:
        try:
            sbx.kill()
        except Exception:
            pass
