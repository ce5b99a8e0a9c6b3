"""The REST API under generated and hand-made hostile requests, on SQLite and PostgreSQL.

Schemathesis generates requests from /openapi.json, valid and invalid, with and without a
token: no answer may be a 5xx, and every status must be one the document declares. Then the
requests a fuzzer is unlikely to find: bodies far too large, bytes that are not UTF-8, the
wrong JSON types, NUL characters and lone surrogates, ids beyond what the database holds.
"""

from __future__ import annotations

import time

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, status_code_conformance

from app.main import create_app
from tests.app.tj_testlib import PASSWORD, login, register

pytestmark = pytest.mark.adversarial

# Per operation; 13 operations x 2 backends stay well under a minute.
MAX_EXAMPLES = 25


@pytest.fixture
def api(ctx):
    """The application, and a way to get a fresh token for its user (the fuzzer revokes the
    one it holds when it reaches DELETE /tokens/current). Long polls are capped short (a
    generated `wait=60` should not hold the run); no rate limit in the fuzzer's way."""
    from fastapi.testclient import TestClient

    ctx.settings = ctx.settings.model_copy(update={"max_wait_seconds": 0.2, "rate_limit": 10**6})
    app = create_app(ctx.settings, ctx=ctx)
    with TestClient(app) as c:
        register(c, "fuzzer", PASSWORD)
        yield app, lambda: login(c, "fuzzer", PASSWORD)


def _fuzz(operation, headers: dict[str, str], mode: GenerationMode) -> str | None:
    """Run one operation's generated cases; the (shrunk) failure, if any."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case):
        case.call_and_validate(headers=headers,
                               checks=[not_a_server_error, status_code_conformance])

    try:
        run()
    except Unsatisfiable:
        pass  # nothing to make invalid (an operation without parameters or body)
    except Exception as e:  # noqa: BLE001 - collected, reported together
        return f"{operation.label} [{mode.value}]: {str(e)[:1500]}"
    return None


def test_no_server_errors_and_only_documented_statuses(api):
    """Every operation, valid and invalid inputs, with a token of a user (the operations
    without auth ignore it). The event stream is left out: for a submission nobody judges it
    never ends (it has tests of its own)."""
    app, fresh_token = api
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    ran = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path.endswith("/events"):
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            if (failure := _fuzz(operation, fresh_token(), mode)) is not None:
                failures.append(failure)
        ran += 1
    assert ran >= 10
    assert not failures, "\n\n".join(failures)


# --- requests the fuzzer does not make -----------------------------------------------------


@pytest.fixture
def auth(client):
    return register(client, "mallory")


def _detail(r) -> str:
    return str(r.json().get("detail"))


def test_oversized_body_is_413_before_it_is_read(client, auth):
    big = b'{"problem": "double", "code": "' + b"x" * (8 << 20) + b'"}'
    t0 = time.monotonic()
    r = client.post("/api/v1/submissions", content=big,
                    headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 413, r.text
    assert time.monotonic() - t0 < 10
    for path in ("/api/v1/users", "/api/v1/tokens"):
        r = client.post(path, content=b'{"username": "' + b"a" * (8 << 20) + b'"}',
                        headers={"Content-Type": "application/json"})
        assert r.status_code == 413, (path, r.text)


def test_code_over_the_limit_is_413_with_the_numbers(client, auth, ctx):
    limit = ctx.settings.max_code_bytes
    r = client.post("/api/v1/submissions", headers=auth,
                    json={"problem": "double", "code": "#" * (limit + 1)})
    assert r.status_code == 413
    assert str(limit) in _detail(r)


@pytest.mark.parametrize("path", ["/api/v1/users", "/api/v1/tokens", "/api/v1/submissions"])
@pytest.mark.parametrize("body", [b"\xff\xfe{not utf-8}", b'{"code": "\xc3\x28"}',
                                  b"\xed\xa0\x80", b"{", b"", b"null", b"[]", b'"text"'])
def test_invalid_utf8_and_malformed_json_are_422(client, auth, path, body):
    r = client.post(path, content=body, headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert _detail(r)


@pytest.mark.parametrize("field,value", [
    ("problem", 7), ("problem", None), ("problem", ["double"]), ("code", 3.5),
    ("code", {"a": 1}), ("code", True), ("mode", "exec"), ("mode", 1),
])
def test_wrong_types_are_422_naming_the_field(client, auth, field, value):
    body = {"problem": "double", "code": "def double(x):\n    return x\n", "mode": "submit"}
    body[field] = value
    r = client.post("/api/v1/submissions", headers=auth, json=body)
    assert r.status_code == 422, r.text
    assert field in r.text


@pytest.mark.parametrize("body", [
    {"username": 123, "password": PASSWORD}, {"username": "bob"},
    {"username": ["bob"], "password": PASSWORD}, {"username": "bob", "password": None},
])
def test_wrong_types_for_accounts_are_422(client, body):
    for path in ("/api/v1/users", "/api/v1/tokens"):
        r = client.post(path, json=body)
        assert r.status_code == 422, (path, r.text)


@pytest.mark.parametrize("text", ["nul\x00inside", "lone\ud800surrogate"])
def test_nul_and_lone_surrogates_are_4xx_everywhere(client, auth, text):
    """NUL cannot be stored in PostgreSQL text, a lone surrogate cannot be encoded as UTF-8:
    both must be refused as bad input, never reach the database as a 500."""
    import json

    def post(path, body, headers=None):
        raw = json.dumps(body).encode()  # \\u escapes: valid JSON for any of these
        return client.post(path, content=raw, headers={**(headers or {}),
                                                       "Content-Type": "application/json"})

    # (A NUL in a password is fine: only its hash is stored. A lone surrogate is not.)
    if "\x00" not in text:
        r = post("/api/v1/users", {"username": "carol", "password": f"{text}-long-enough"})
        assert r.status_code == 422, r.text
    for r in (
        post("/api/v1/submissions", {"problem": "double", "code": f"# {text}\n"}, auth),
        post("/api/v1/submissions", {"problem": text, "code": "x = 1\n"}, auth),
        post("/api/v1/users", {"username": text, "password": PASSWORD}),
        post("/api/v1/tokens", {"username": text, "password": PASSWORD}),
        post("/api/v1/tokens", {"username": "mallory", "password": text}),
        client.get("/api/v1/problems/"
                   + text.replace("\x00", "%00").replace("\ud800", "%ED%A0%80")),
    ):
        assert 400 <= r.status_code < 500, (r.request.url, r.status_code, r.text)
    # A filter no problem matches: an empty page, not an error.
    r = client.get("/api/v1/submissions", params={"problem": text.replace("\ud800", "")},
                   headers=auth)
    assert (r.status_code, r.json()) == (200, [])


@pytest.mark.parametrize("sid", [2**31, 2**63, 2**64 + 5, -(2**63) - 1, 0, 10**30])
def test_ids_beyond_the_database_range_are_4xx(client, auth, sid):
    for r in (client.get(f"/api/v1/submissions/{sid}", headers=auth),
              client.get("/api/v1/submissions", params={"before": sid}, headers=auth),
              client.post(f"/api/v1/submissions/{sid}/rejudge", headers=auth),
              client.get(f"/api/v1/submissions/{sid}/events", headers=auth)):
        assert 400 <= r.status_code < 500, (r.request.url, r.status_code, r.text)
