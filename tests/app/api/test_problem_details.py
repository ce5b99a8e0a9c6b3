"""Every error of the REST API in one shape (RFC 9457 problem details, API.md "Errors"):
`application/problem+json`, `{type, title, status, detail}` with `detail` a string, and the
invalid fields under `errors` for 422; whichever layer answers (a service, validation, the
router, the body-size limit), and so documented in the OpenAPI schema."""

from __future__ import annotations

import json

import pytest

from tests.app.tj_testlib import AC_CODE, PASSWORD


def assert_problem(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].split(";")[0] == "application/problem+json", r.headers
    body = r.json()
    assert body["status"] == status
    assert isinstance(body["type"], str) and body["type"]
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"], body
    return body


def submit(client, headers, **body):
    return client.post("/api/v1/submissions", headers=headers,
                       json={"problem": "double", "code": AC_CODE, **body})


def test_401(client):
    body = assert_problem(client.get("/api/v1/users/me"), 401)
    assert "bearer token" in body["detail"]
    r = client.get("/api/v1/users/me", headers={"Authorization": "Bearer tj_forged"})
    assert_problem(r, 401)
    assert r.headers["www-authenticate"] == "Bearer"
    assert_problem(client.post("/api/v1/tokens", json={"username": "nobody",
                                                        "password": PASSWORD}), 401)


def test_403(client, alice):
    sid = submit(client, alice).json()["id"]
    body = assert_problem(client.post(f"/api/v1/submissions/{sid}/rejudge", headers=alice), 403)
    assert "admin" in body["detail"]


def test_404(client, alice):
    assert "nope" in assert_problem(client.get("/api/v1/problems/nope"), 404)["detail"]
    assert_problem(client.get("/api/v1/submissions/999999", headers=alice), 404)
    assert_problem(submit(client, alice, problem="nope"), 404)
    assert_problem(client.get("/api/v1/problems/nope/samples.npz"), 404)
    # The router's own 404 (no such path) and 405 too.
    assert_problem(client.get("/api/v1/no/such/path"), 404)
    assert_problem(client.delete("/api/v1/problems"), 405)


def test_409(client):
    client.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
    r = client.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
    assert "taken" in assert_problem(r, 409)["detail"]


def test_413_from_the_service(client, alice):
    body = assert_problem(submit(client, alice, code="#" * (64 * 1024 + 1)), 413)
    assert "65537 bytes" in body["detail"]


def test_413_from_the_server_layer(client, alice):
    # Content-Length beyond the limit: refused before the body is read.
    huge = json.dumps({"problem": "double", "code": "#" * (10 << 20)})
    r = client.post("/api/v1/submissions", content=huge,
                    headers={**alice, "content-type": "application/json"})
    assert "larger than" in assert_problem(r, 413)["detail"]
    # Same without a token: the limit answers first, in the same shape.
    r = client.post("/api/v1/users", content=huge, headers={"content-type": "application/json"})
    assert_problem(r, 413)

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"problem": "double", "code": "'
        for _ in range(64):
            yield b"#" * (64 << 10)
        yield b'"}'

    r = client.post("/api/v1/submissions", content=chunks(),
                    headers={**alice, "content-type": "application/json"})
    assert "larger than" in assert_problem(r, 413)["detail"]


@pytest.mark.parametrize(("body", "field"), [
    ({"problem": "double"}, "code"),
    ({"problem": "double", "code": AC_CODE, "mode": "debug"}, "mode"),
    ({"problem": "double", "code": 42}, "code"),
])
def test_422_validation_lists_the_fields(client, alice, body, field):
    r = client.post("/api/v1/submissions", headers=alice, json=body)
    problem = assert_problem(r, 422)
    assert [e["field"] for e in problem["errors"]] == [field]
    assert all(isinstance(e["message"], str) and e["message"] for e in problem["errors"])
    assert field in problem["detail"]


def test_422_from_the_service_and_query(client, alice):
    assert "empty" in assert_problem(submit(client, alice, code="  \n"), 422)["detail"]
    r = client.get("/api/v1/submissions?limit=0", headers=alice)
    assert assert_problem(r, 422)["errors"][0]["field"] == "limit"
    assert_problem(client.get("/api/v1/submissions/0", headers=alice), 422)


@pytest.mark.parametrize("raw", [b'{"problem": "double", "code": ', b"\xff\xfe", b"[1, 2"])
def test_422_malformed_json(client, alice, raw):
    r = client.post("/api/v1/submissions", content=raw,
                    headers={**alice, "content-type": "application/json"})
    assert "JSON" in assert_problem(r, 422)["detail"]


def test_429(client, alice, configure):
    configure(rate_limit=1, rate_window_seconds=120)
    assert submit(client, alice).status_code == 202
    r = submit(client, alice)
    assert "1 submissions" in assert_problem(r, 429)["detail"]
    assert 1 <= int(r.headers["retry-after"]) <= 120


def test_503(client, alice, configure):
    configure(queue_max=1)
    assert submit(client, alice).status_code == 202
    r = submit(client, alice)
    assert "full" in assert_problem(r, 503)["detail"]


def test_openapi_documents_the_shape(client):
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    problem = schemas["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail"}
    assert problem["properties"]["detail"]["type"] == "string"
    assert problem["properties"]["errors"]["items"]["required"] == ["field", "message"]
    seen = set()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for code, response in op["responses"].items():
                if code[0] in "45":
                    seen.add(code)
                    assert response["content"] == {"application/problem+json": {
                        "schema": {"$ref": "#/components/schemas/Problem"}}}, (path, method)
    assert {"401", "403", "404", "409", "413", "422", "429"} <= seen
