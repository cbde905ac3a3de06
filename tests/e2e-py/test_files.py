"""Files through the unmodified Python SDK: text, bytes, streams, list,
and watching a directory, synchronously (envd's polling watcher) and
asynchronously (the WatchDir stream)."""
import asyncio
import io
import json
import os
import time
import urllib.request
import urllib.error

import pytest
from e2b import (AsyncSandbox, FileNotFoundException, FilesystemEventType, FileType, NotFoundException, Sandbox,
                 SandboxException)


def test_text_and_bytes_nested_paths(sandbox):
    sandbox.files.write("/tmp/a/b/c.txt", "héllo")
    assert sandbox.files.read("/tmp/a/b/c.txt") == "héllo"
    data = bytes(range(256)) * 100
    sandbox.files.write("/tmp/bin", data)
    assert sandbox.files.read("/tmp/bin", format="bytes") == bytes(data)


def test_streams_up_and_down(sandbox):
    payload = b"x" * (3 << 20) + b"end"
    sandbox.files.write("/tmp/big", io.BytesIO(payload))
    got = b"".join(sandbox.files.read("/tmp/big", format="stream"))
    assert got == payload
    assert sandbox.commands.run("wc -c < /tmp/big").stdout.strip() == str(len(payload))


def test_write_files_list_exists_info(sandbox):
    sandbox.files.write_files([{"path": "/tmp/l/one", "data": "1"}, {"path": "/tmp/l/sub/two", "data": "22"}])
    names = sorted(e.name for e in sandbox.files.list("/tmp/l"))
    assert names == ["one", "sub"]
    deep = sorted(e.path for e in sandbox.files.list("/tmp/l", depth=2))
    assert deep == ["/tmp/l/one", "/tmp/l/sub", "/tmp/l/sub/two"]
    assert sandbox.files.exists("/tmp/l/sub/two")
    assert not sandbox.files.exists("/tmp/l/nope")
    info = sandbox.files.get_info("/tmp/l/sub/two")
    assert info.type == FileType.FILE and info.size == 2


def test_make_dir_rename_remove(sandbox):
    assert sandbox.files.make_dir("/tmp/m/n") is True
    assert sandbox.files.make_dir("/tmp/m/n") is False
    sandbox.files.write("/tmp/m/n/f", "v")
    sandbox.files.rename("/tmp/m/n/f", "/tmp/m/g")
    assert sandbox.files.read("/tmp/m/g") == "v"
    sandbox.files.remove("/tmp/m")
    assert not sandbox.files.exists("/tmp/m")


def test_missing_file_is_not_found(sandbox):
    with pytest.raises(FileNotFoundException):
        sandbox.files.read("/tmp/does-not-exist")


def test_user_cannot_write_into_root_home(sandbox):
    with pytest.raises(SandboxException):
        sandbox.files.write("/root/x", "no")
    sandbox.files.write("/root/x", "yes", user="root")
    assert sandbox.files.read("/root/x", user="root") == "yes"


def events_until(handle, want, seconds=10):
    """Poll a sync WatchHandle until want(events) holds; all events seen."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen += handle.get_new_events()
        if want(seen):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"events seen: {seen}")


def test_watch_sync_events_in_order_then_empty(sandbox):
    sandbox.files.make_dir("/tmp/w")
    h = sandbox.files.watch_dir("/tmp/w")
    sandbox.files.write("/tmp/w/a.txt", "1")
    sandbox.files.rename("/tmp/w/a.txt", "/tmp/w/b.txt")
    sandbox.files.remove("/tmp/w/b.txt")
    seen = events_until(h, lambda s: any(e.type == FilesystemEventType.REMOVE for e in s))
    kinds = [(e.name, e.type) for e in seen]
    assert kinds.index(("a.txt", FilesystemEventType.CREATE)) < kinds.index(("a.txt", FilesystemEventType.RENAME))
    assert ("b.txt", FilesystemEventType.CREATE) in kinds
    assert h.get_new_events() == [], "a poll hands events over once"
    h.stop()
    with pytest.raises(SandboxException):
        h.get_new_events()  # the SDK refuses a stopped handle


def test_watch_sync_recursive_with_entry(sandbox):
    sandbox.files.make_dir("/tmp/wr/sub")
    h = sandbox.files.watch_dir("/tmp/wr", recursive=True, include_entry=True)
    sandbox.files.write("/tmp/wr/sub/deep.txt", "abc")
    seen = events_until(h, lambda s: any(e.name == "sub/deep.txt" and e.entry for e in s))
    e = next(e for e in seen if e.name == "sub/deep.txt" and e.entry)
    assert e.entry.path == "/tmp/wr/sub/deep.txt"
    h.stop()


def test_watch_sync_errors(sandbox):
    with pytest.raises(NotFoundException):
        sandbox.files.watch_dir("/tmp/no-such-dir")
    sandbox.files.write("/tmp/plainfile", "x")
    with pytest.raises(SandboxException):
        sandbox.files.watch_dir("/tmp/plainfile")


def rpc(daemon, sbx, method, body, token=None):
    """One Connect unary call to the data plane, outside the SDK."""
    req = urllib.request.Request(
        daemon.url + "/filesystem.Filesystem/" + method, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983",
                 "X-Access-Token": token if token is not None else sbx._envd_access_token})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_watcher_belongs_to_its_sandbox(daemon, sandbox):
    other = Sandbox.create(timeout=60)
    try:
        sandbox.files.make_dir("/tmp/mine")
        st, body = rpc(daemon, sandbox, "CreateWatcher", {"path": "/tmp/mine"})
        assert st == 200 and body["watcherId"].startswith("w")
        wid = body["watcherId"]
        # another sandbox's id and token: no such watcher, nothing removed
        assert rpc(daemon, other, "GetWatcherEvents", {"watcherId": wid})[0] == 404
        assert rpc(daemon, other, "RemoveWatcher", {"watcherId": wid})[0] == 404
        # the right sandbox with a wrong token: refused before anything
        assert rpc(daemon, sandbox, "GetWatcherEvents", {"watcherId": wid}, token="bad")[0] == 401
        assert rpc(daemon, sandbox, "GetWatcherEvents", {"watcherId": wid}) == (200, {"events": []})
        assert rpc(daemon, sandbox, "GetWatcherEvents", {"watcherId": "w" + "0" * 20})[0] == 404
        assert rpc(daemon, sandbox, "GetWatcherEvents", {"watcherId": 7})[0] == 400
        assert rpc(daemon, sandbox, "CreateWatcher", {"path": "/tmp/mine", "recursive": "yes"})[0] == 400
        assert rpc(daemon, sandbox, "RemoveWatcher", {"watcherId": wid}) == (200, {})
        assert rpc(daemon, sandbox, "GetWatcherEvents", {"watcherId": wid})[0] == 404
    finally:
        other.kill()


def test_watcher_buffer_is_bounded(daemon, sandbox):
    sandbox.files.make_dir("/tmp/flood")
    st, body = rpc(daemon, sandbox, "CreateWatcher", {"path": "/tmp/flood"})
    wid = body["watcherId"]
    # 3000 files: CREATE + WRITE each, past the 4096 events a watcher keeps
    sandbox.commands.run("cd /tmp/flood && for i in $(seq 3000); do echo > f$i; done")
    deadline = time.monotonic() + 10
    while True:
        st, body = rpc(daemon, sandbox, "GetWatcherEvents", {"watcherId": wid})
        if st != 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
        assert len(body["events"]) == 0, "the first poll comes after the flood, past the bound"
    assert st == 500 or body.get("code") == "data_loss", (st, body)
    assert body["code"] == "data_loss"
    assert rpc(daemon, sandbox, "RemoveWatcher", {"watcherId": wid}) == (200, {})


def test_watcher_nobody_polls_expires(daemon, sandbox):
    # the suite's daemon runs with watcher.idle_timeout = 4s (conftest.py)
    sandbox.files.make_dir("/tmp/idle")
    kept = sandbox.files.watch_dir("/tmp/idle")
    left = sandbox.files.watch_dir("/tmp/idle")
    for _ in range(6):
        time.sleep(1)
        assert kept.get_new_events() == []
    with pytest.raises(NotFoundException):
        left.get_new_events()
    kept.stop()


def open_fds(daemon):
    return len(os.listdir(f"/proc/{daemon.proc.pid}/fd"))


def test_watcher_goes_with_its_sandbox(daemon):
    sbx = Sandbox.create(timeout=60)
    sbx.files.make_dir("/tmp/d")
    time.sleep(0.5)  # the create's own connections settle
    before = open_fds(daemon)
    ids = [rpc(daemon, sbx, "CreateWatcher", {"path": "/tmp/d"})[1]["watcherId"] for _ in range(5)]
    assert open_fds(daemon) >= before + 5, "each watcher holds its init connection"
    sbx.kill()
    deadline = time.monotonic() + 10
    while open_fds(daemon) >= before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert open_fds(daemon) < before, "the killed sandbox's watchers closed their connections"
    assert rpc(daemon, sbx, "GetWatcherEvents", {"watcherId": ids[0]})[0] == 502  # no such sandbox


def test_watchers_per_sandbox_are_bounded(daemon, sandbox):
    sandbox.files.make_dir("/tmp/many")
    ids = []
    for _ in range(16):
        st, body = rpc(daemon, sandbox, "CreateWatcher", {"path": "/tmp/many"})
        assert st == 200
        ids.append(body["watcherId"])
    st, body = rpc(daemon, sandbox, "CreateWatcher", {"path": "/tmp/many"})
    assert (st, body["code"]) == (429, "resource_exhausted")
    assert rpc(daemon, sandbox, "RemoveWatcher", {"watcherId": ids.pop()}) == (200, {})
    assert rpc(daemon, sandbox, "CreateWatcher", {"path": "/tmp/many"})[0] == 200


async def test_watch_async_stream():
    sbx = await AsyncSandbox.create(timeout=60)
    try:
        await sbx.files.make_dir("/tmp/aw")
        got = asyncio.Queue()
        h = await sbx.files.watch_dir("/tmp/aw", on_event=got.put_nowait)
        await sbx.files.write("/tmp/aw/x.txt", "1")
        names = set()
        while ("x.txt", FilesystemEventType.WRITE) not in names:
            e = await asyncio.wait_for(got.get(), 10)
            names.add((e.name, e.type))
        assert ("x.txt", FilesystemEventType.CREATE) in names
        await h.stop()
    finally:
        await sbx.kill()


def test_watch_poll_right_after_a_write_has_all_its_events(sandbox):
    # no waiting: the poll hands over everything the write caused, in
    # envd's order for an upload (it chowns the file: CHMOD)
    sandbox.files.make_dir("/tmp/now")
    h = sandbox.files.watch_dir("/tmp/now")
    for i in range(5):
        sandbox.files.write(f"/tmp/now/f{i}", "data")
        got = [(e.name, e.type) for e in h.get_new_events()]
        assert got == [(f"f{i}", FilesystemEventType.CREATE), (f"f{i}", FilesystemEventType.CHMOD),
                       (f"f{i}", FilesystemEventType.WRITE)], got
    h.stop()
