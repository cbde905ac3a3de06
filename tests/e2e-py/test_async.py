"""The async client (AsyncSandbox) of the unmodified Python SDK, with many
sandboxes at once."""
import asyncio
import uuid

from e2b import AsyncSandbox, SandboxQuery


async def test_many_sandboxes_at_once(daemon):
    tag = uuid.uuid4().hex
    n = 20
    sbxs = await asyncio.gather(*(AsyncSandbox.create(metadata={"tag": tag}, timeout=60) for _ in range(n)))
    try:
        assert len({s.sandbox_id for s in sbxs}) == n
        outs = await asyncio.gather(*(s.commands.run(f"echo {i}; hostname") for i, s in enumerate(sbxs)))
        for i, (s, o) in enumerate(zip(sbxs, outs)):
            assert o.stdout == f"{i}\n{s.sandbox_id}\n"
        await asyncio.gather(*(s.files.write("/tmp/who", s.sandbox_id) for s in sbxs))
        reads = await asyncio.gather(*(s.files.read("/tmp/who") for s in sbxs))
        assert reads == [s.sandbox_id for s in sbxs], "each sandbox sees only its own files"
        listed = await AsyncSandbox.list(query=SandboxQuery(metadata={"tag": tag}), limit=100).next_items()
        assert len(listed) == n
    finally:
        killed = await asyncio.gather(*(s.kill() for s in sbxs), return_exceptions=True)
    assert killed == [True] * n


async def test_async_background_stdin_and_streams(daemon):
    sbx = await AsyncSandbox.create(timeout=60)
    try:
        got = []
        h = await sbx.commands.run("cat", background=True, stdin=True, on_stdout=got.append)
        await sbx.commands.send_stdin(h.pid, "ping\n")
        await sbx.commands.close_stdin(h.pid)
        r = await h.wait()
        assert r.stdout == "ping\n" and "".join(got) == "ping\n"
        long = await sbx.commands.run("sleep 60", background=True)
        assert await sbx.commands.kill(long.pid) is True
        assert await sbx.pause() is True
        again = await AsyncSandbox.connect(sbx.sandbox_id)
        assert (await again.commands.run("echo back")).stdout == "back\n"
    finally:
        await sbx.kill()
