"""The control plane through the unmodified Python SDK: create, info, list
by metadata and state, pause and resume, timeouts, metrics, kill; and the
code interpreter package's Sandbox class on the same server."""
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from e2b import NotFoundException, Sandbox, SandboxQuery, SandboxState


def test_create_with_metadata_and_envs(daemon):
    tag = uuid.uuid4().hex
    sbx = Sandbox.create(metadata={"suite": "py", "tag": tag}, envs={"GREETING": "hi"}, timeout=60)
    try:
        info = sbx.get_info()
        assert info.sandbox_id == sbx.sandbox_id
        assert info.metadata == {"suite": "py", "tag": tag}
        assert info.state == SandboxState.RUNNING
        assert info.end_at > datetime.now(timezone.utc)
        assert sbx.commands.run("echo $GREETING").stdout == "hi\n"
        assert sbx.is_running()
    finally:
        assert sbx.kill() is True
    assert Sandbox.kill(sbx.sandbox_id) is False, "a second kill finds nothing"


def test_list_by_metadata_and_state(daemon):
    tag = uuid.uuid4().hex
    made = [Sandbox.create(metadata={"tag": tag, "i": str(i)}, timeout=60) for i in range(3)]
    try:
        listed = Sandbox.list(query=SandboxQuery(metadata={"tag": tag})).next_items()
        assert sorted(s.sandbox_id for s in listed) == sorted(s.sandbox_id for s in made)
        one = Sandbox.list(query=SandboxQuery(metadata={"tag": tag, "i": "1"})).next_items()
        assert [s.sandbox_id for s in one] == [made[1].sandbox_id]
        assert made[0].pause() is True
        paused = Sandbox.list(query=SandboxQuery(metadata={"tag": tag}, state=[SandboxState.PAUSED])).next_items()
        assert [s.sandbox_id for s in paused] == [made[0].sandbox_id]
        running = Sandbox.list(query=SandboxQuery(metadata={"tag": tag}, state=[SandboxState.RUNNING])).next_items()
        assert len(running) == 2
        pages = Sandbox.list(query=SandboxQuery(metadata={"tag": tag}), limit=2)
        first = pages.next_items()
        assert len(first) == 2 and pages.has_next
        assert len(pages.next_items()) == 1
    finally:
        for s in made:
            s.kill()


def test_pause_and_resume_keep_processes(daemon):
    sbx = Sandbox.create(timeout=60)
    try:
        sbx.commands.run("sh -c 'i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.1; done'",
                         background=True)
        time.sleep(0.5)
        assert sbx.pause() is True
        assert Sandbox.get_info(sbx.sandbox_id).state == SandboxState.PAUSED
        assert sbx.pause() is False, "pausing a paused sandbox"
        again = Sandbox.connect(sbx.sandbox_id)
        assert again.get_info().state == SandboxState.RUNNING
        a = int(again.commands.run("cat /tmp/count").stdout)
        time.sleep(0.4)
        b = int(again.commands.run("cat /tmp/count").stdout)
        assert b > a
    finally:
        sbx.kill()


def test_set_timeout_ends_the_sandbox(daemon):
    sbx = Sandbox.create(timeout=120)
    sbx.set_timeout(2)
    assert sbx.get_info().end_at - datetime.now(timezone.utc) <= timedelta(seconds=2.5)
    time.sleep(4)
    with pytest.raises(NotFoundException):
        Sandbox.get_info(sbx.sandbox_id)
    assert not sbx.is_running()
    assert sbx.kill() is False


def test_on_timeout_pause_and_auto_resume(daemon):
    sbx = Sandbox.create(timeout=2, lifecycle={"on_timeout": "pause", "auto_resume": True})
    try:
        sbx.files.write("/tmp/kept", "yes")
        deadline = time.monotonic() + 15
        while Sandbox.get_info(sbx.sandbox_id).state != SandboxState.PAUSED:
            assert time.monotonic() < deadline, "paused at its timeout"
            time.sleep(0.5)
        assert sbx.files.read("/tmp/kept") == "yes", "a data-plane call resumes it"
        assert Sandbox.get_info(sbx.sandbox_id).state == SandboxState.RUNNING
    finally:
        sbx.kill()


def test_set_timeout_zero_times_out_now(daemon):
    sbx = Sandbox.create(timeout=60, lifecycle={"on_timeout": "pause", "auto_resume": False})
    try:
        sbx.commands.run("echo 1 > /tmp/mark")
        sbx.set_timeout(0)
        deadline = time.monotonic() + 5
        while Sandbox.get_info(sbx.sandbox_id).state != SandboxState.PAUSED:
            assert time.monotonic() < deadline, "paused at once"
            time.sleep(0.2)
        again = Sandbox.connect(sbx.sandbox_id, timeout=60)
        assert again.files.read("/tmp/mark") == "1\n"
    finally:
        sbx.kill()


def test_metrics_are_real_samples(daemon):
    sbx = Sandbox.create(timeout=60)
    try:
        sbx.commands.run('python3 -c "x = bytearray(32 << 20); import time; time.sleep(0.2)"')
        m = sbx.get_metrics()
        assert len(m) >= 1
        last = m[-1]
        assert 0 < last.mem_used <= last.mem_total
        assert last.disk_total > 0 and last.cpu_count >= 1
        old = sbx.get_metrics(start=datetime.now(timezone.utc) - timedelta(hours=1),
                              end=datetime.now(timezone.utc) - timedelta(minutes=30))
        assert old == []
    finally:
        sbx.kill()


def test_code_interpreter_package_sandbox_class(daemon):
    # e2b-code-interpreter's Sandbox is e2b's plus run_code, which needs the
    # code-interpreter template's server (images/code-interpreter, tested by
    # its own suite); here the class itself creates, runs and kills on base
    from e2b_code_interpreter import Sandbox as CISandbox

    sbx = CISandbox.create(template="base", timeout=60)
    try:
        assert sbx.commands.run("echo ci").stdout == "ci\n"
        sbx.files.write("/tmp/ci.txt", "ok")
        assert sbx.files.read("/tmp/ci.txt") == "ok"
    finally:
        assert sbx.kill() is True
