"""Errors through the unmodified Python SDK, with its API key validation on
(E2B_VALIDATE_API_KEY unset: its default): wrong key, wrong token, missing
file, bad input; and keys issued before the e2b_ shape still work."""
import hashlib
import json
import os
import re
import secrets
import sqlite3
import time
import urllib.error
import urllib.request

import pytest
from e2b import (AuthenticationException, FileNotFoundException, InvalidArgumentException, NotFoundException, Sandbox,
                 SandboxException)


def call(daemon, method, path, body=None, headers=None):
    data = body.encode() if isinstance(body, str) else (json.dumps(body).encode() if body is not None else None)
    h = {"X-API-KEY": daemon.key, "Content-Type": "application/json"}
    h.update(headers or {})
    req = urllib.request.Request(daemon.url + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw


def count(daemon):
    return len(call(daemon, "GET", "/v2/sandboxes")[1])


def test_issued_key_has_the_sdk_shape(daemon):
    # the pattern E2B's SDKs check before sending when E2B_VALIDATE_API_KEY is
    # on (the JS SDK's API_KEY_PATTERN); every test here runs with it on
    assert re.fullmatch(r"e2b_[0-9a-f]+", daemon.key) and len(daemon.key) == 44


def test_wrong_key_is_401_and_changes_nothing(daemon):
    before = count(daemon)
    with pytest.raises(AuthenticationException):
        Sandbox.create(api_key="e2b_" + "0" * 40)
    for bad in ("nope", "hutch_wrong", "e2b_" + "0" * 40, "e2b_XYZ", "e2b_" + "a" * 500):
        st, body = call(daemon, "POST", "/sandboxes", {"templateID": "base"}, {"X-API-KEY": bad})
        assert st == 401 and body["code"] == 401 and body["message"], bad
    st, _ = call(daemon, "GET", "/v2/sandboxes", headers={"X-API-KEY": ""})
    assert st == 401
    assert count(daemon) == before


def test_key_from_before_the_e2b_shape_still_works(daemon, monkeypatch):
    legacy = "hutch_" + secrets.token_hex(24)
    db = sqlite3.connect(os.path.join(daemon.env["HUTCH_DATA_DIR"], "hutch.db"), timeout=10)
    with db:
        db.execute("INSERT INTO api_keys (key_hash, team, created_at) VALUES (?, 'default', ?)",
                   (hashlib.sha256(legacy.encode()).hexdigest(), int(time.time())))
    db.close()
    st, body = call(daemon, "GET", "/v2/sandboxes", headers={"X-API-KEY": legacy})
    assert st == 200 and isinstance(body, list)
    # an SDK that checks the key's shape sends it only with its check off
    monkeypatch.setenv("E2B_VALIDATE_API_KEY", "false")
    sbx = Sandbox.create(api_key=legacy, timeout=30)
    try:
        assert sbx.commands.run("echo legacy").stdout == "legacy\n"
    finally:
        sbx.kill(api_key=legacy)


def test_wrong_access_token_is_401_unknown_sandbox_502(daemon, sandbox):
    h = {"E2b-Sandbox-Id": sandbox.sandbox_id, "E2b-Sandbox-Port": "49983"}
    st, _ = call(daemon, "POST", "/process.Process/List", {}, {**h, "X-Access-Token": "bad"})
    assert st == 401
    st, _ = call(daemon, "POST", "/process.Process/List", {}, h)
    assert st == 401
    st, body = call(daemon, "GET", "/health", headers={"E2b-Sandbox-Id": "nosuchsandbox"})
    assert st == 502 and body["sandboxId"] == "nosuchsandbox"
    # another sandbox's token opens nothing here
    other = Sandbox.create(timeout=30)
    try:
        st, _ = call(daemon, "POST", "/process.Process/List", {}, {**h, "X-Access-Token": other._envd_access_token})
        assert st == 401
    finally:
        other.kill()


def test_missing_file_and_sandbox(daemon, sandbox):
    with pytest.raises(FileNotFoundException):
        sandbox.files.read("/nope/nothing")
    with pytest.raises(NotFoundException):
        sandbox.files.get_info("/nope")
    with pytest.raises(NotFoundException):
        Sandbox.get_info("inosuchsandbox000000")
    with pytest.raises(NotFoundException):
        Sandbox.connect("inosuchsandbox000000")


def test_bad_input_is_a_clear_4xx_and_changes_nothing(daemon):
    before = count(daemon)
    for body in ('{', '[]', '{"timeout":"soon"}', '{"metadata":[1,2]}', '{"metadata":{"a":1}}', '{"timeout":-5}',
                 '{"templateID":"nosuch"}'):
        st, reply = call(daemon, "POST", "/sandboxes", body)
        assert 400 <= st < 500, (body, st)
        assert isinstance(reply.get("message"), str), body
    with pytest.raises(SandboxException):
        Sandbox.create(template="nosuch-template")
    with pytest.raises(SandboxException):
        Sandbox.create(metadata={"k": "v" * 100000})
    assert count(daemon) == before
    assert call(daemon, "GET", "/health")[0] == 200


def test_bad_input_on_the_data_plane(sandbox):
    with pytest.raises(InvalidArgumentException):
        sandbox.files.list("/tmp", depth=0)
    with pytest.raises(SandboxException):
        sandbox.commands.run("true", cwd="/no/such/dir")
