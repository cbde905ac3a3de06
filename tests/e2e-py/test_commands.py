"""Commands through the unmodified Python SDK: foreground, background,
stdin, kill, pty."""
import time

import pytest
from e2b import CommandExitException, PtySize


def test_foreground_output_and_exit_code(sandbox):
    r = sandbox.commands.run('echo out; echo err >&2; python3 -c "print(1)"')
    assert r.exit_code == 0
    assert r.stdout == "out\n1\n"
    assert r.stderr == "err\n"


def test_non_zero_exit_raises_with_code_and_output(sandbox):
    with pytest.raises(CommandExitException) as e:
        sandbox.commands.run("echo partial; exit 3")
    assert e.value.exit_code == 3
    assert e.value.stdout == "partial\n"


def test_cwd_envs_and_users(sandbox):
    r = sandbox.commands.run("pwd; echo $FOO; whoami", cwd="/tmp", envs={"FOO": "bar"})
    assert r.stdout == "/tmp\nbar\nuser\n"
    assert sandbox.commands.run("whoami", user="root").stdout == "root\n"


def test_streaming_callbacks(sandbox):
    seen = []
    sandbox.commands.run("for i in 1 2 3; do echo $i; sleep 0.1; done", on_stdout=seen.append)
    assert "".join(seen) == "1\n2\n3\n"


def test_background_wait_list_connect_kill(sandbox):
    h = sandbox.commands.run("sleep 0.3; echo done", background=True)
    assert h.wait().stdout == "done\n"

    long = sandbox.commands.run("sleep 60", background=True)
    assert any(p.pid == long.pid for p in sandbox.commands.list())
    again = sandbox.commands.connect(long.pid)
    assert sandbox.commands.kill(long.pid) is True
    with pytest.raises(CommandExitException) as e:
        again.wait()
    assert e.value.exit_code != 0
    assert not any(p.pid == long.pid for p in sandbox.commands.list())
    assert sandbox.commands.kill(long.pid) is False  # already gone


def test_stdin_send_and_close(sandbox):
    h = sandbox.commands.run("cat", background=True, stdin=True)
    sandbox.commands.send_stdin(h.pid, "hello ")
    sandbox.commands.send_stdin(h.pid, "world\n")
    sandbox.commands.close_stdin(h.pid)
    assert h.wait().stdout == "hello world\n"


def test_timeout_bounds_the_process(sandbox):
    t0 = time.monotonic()
    with pytest.raises(Exception):
        sandbox.commands.run("sleep 30", timeout=1)
    assert time.monotonic() - t0 < 10


def test_pty_create_input_resize_kill(sandbox):
    h = sandbox.pty.create(PtySize(rows=24, cols=80))
    sandbox.pty.send_stdin(h.pid, b"stty size; echo mark$((40+2))\n")
    out = b""
    deadline = time.monotonic() + 20
    for _stdout, _stderr, pty in h:
        if pty:
            out += pty
        if b"mark42" in out and b"24 80" in out:
            break
        assert time.monotonic() < deadline, out
    sandbox.pty.resize(h.pid, PtySize(rows=30, cols=100))
    sandbox.pty.send_stdin(h.pid, b"stty size\n")
    for _stdout, _stderr, pty in h:
        if pty:
            out += pty
        if b"30 100" in out:
            break
        assert time.monotonic() < deadline, out
    assert sandbox.pty.kill(h.pid) is True


def test_large_output_intact(sandbox):
    r = sandbox.commands.run("head -c 5000000 /dev/zero | tr '\\0' a")
    assert len(r.stdout) == 5_000_000 and set(r.stdout) == {"a"}


def test_relative_cwd_is_taken_from_home(sandbox):
    sandbox.files.make_dir("rel/dir")
    h = sandbox.commands.run("sleep 30", background=True, cwd="rel/dir")
    assert sandbox.commands.run("pwd", cwd="rel/dir").stdout == "/home/user/rel/dir\n"
    assert sandbox.commands.run("pwd", cwd="/tmp").stdout == "/tmp\n"
    listed = next(p for p in sandbox.commands.list() if p.pid == h.pid)
    assert listed.cwd == "/home/user/rel/dir"
    h.kill()
    with pytest.raises(Exception):
        sandbox.commands.run("pwd", cwd="no/such/dir")
