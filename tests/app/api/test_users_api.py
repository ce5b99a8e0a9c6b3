"""POST /api/v1/users and POST /api/v1/tokens (API.md rows 1 and 2), and token handling."""

from __future__ import annotations

from sqlalchemy import select

from app.db.models import Token, User
from tests.app.tj_testlib import PASSWORD


def test_register_201(client):
    r = client.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
    assert r.status_code == 201
    body = r.json()
    assert body["username"] == "alice" and isinstance(body["id"], int)
    assert "password" not in r.text


def test_register_taken_409(client):
    assert client.post("/api/v1/users", json={"username": "alice", "password": PASSWORD}
                       ).status_code == 201
    r = client.post("/api/v1/users", json={"username": "alice", "password": "another one"})
    assert r.status_code == 409
    assert "taken" in r.json()["detail"]


def test_register_invalid_422(client):
    cases = [
        {"username": "al", "password": PASSWORD},  # too short
        {"username": "bad name!", "password": PASSWORD},
        {"username": "alice", "password": "short"},
        {"username": "alice"},  # missing field
        {"username": 5, "password": PASSWORD},  # wrong type
    ]
    for body in cases:
        r = client.post("/api/v1/users", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["detail"]


def test_register_malformed_json_422(client):
    r = client.post("/api/v1/users", content=b'{"username": "x"',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422


def test_password_stored_with_argon2(client, ctx):
    client.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
    with ctx.db.transaction() as s:
        stored = s.scalar(select(User.password_hash).where(User.username == "alice"))
    assert stored.startswith("$argon2id$") and PASSWORD not in stored


def test_token_201_and_use(client, ctx):
    client.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
    r = client.post("/api/v1/tokens", json={"username": "alice", "password": PASSWORD})
    assert r.status_code == 201
    body = r.json()
    assert body["token_type"] == "bearer" and body["token"]
    # Stored hashed, never as given.
    with ctx.db.transaction() as s:
        hashes = list(s.scalars(select(Token.token_hash)))
    assert len(hashes) == 1 and body["token"] not in hashes[0]
    me = client.get("/api/v1/users/me", headers={"Authorization": f"Bearer {body['token']}"})
    assert me.status_code == 200 and me.json()["username"] == "alice"


def test_token_wrong_401(client):
    client.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
    for body in ({"username": "alice", "password": "wrong password"},
                 {"username": "nobody", "password": PASSWORD}):
        r = client.post("/api/v1/tokens", json=body)
        assert r.status_code == 401
        assert r.json()["detail"] == "wrong username or password"


def test_token_malformed_422(client):
    assert client.post("/api/v1/tokens", json={"username": "alice"}).status_code == 422


def test_bad_tokens_401(client):
    for headers in ({}, {"Authorization": "Bearer tj_nonsense"},
                    {"Authorization": "Basic YWxpY2U6eA=="}, {"Authorization": "Bearer"}):
        r = client.get("/api/v1/users/me", headers=headers)
        assert r.status_code == 401, headers
        assert r.headers["www-authenticate"] == "Bearer"


def test_revoked_token_401(client, alice):
    assert client.get("/api/v1/users/me", headers=alice).status_code == 200
    assert client.delete("/api/v1/tokens/current", headers=alice).status_code == 204
    r = client.get("/api/v1/users/me", headers=alice)
    assert r.status_code == 401 and "revoked" in r.json()["detail"]


def test_expired_token_401(client, configure):
    configure(token_ttl_hours=1e-9)
    client.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
    token = client.post("/api/v1/tokens", json={"username": "alice", "password": PASSWORD}
                        ).json()["token"]
    r = client.get("/api/v1/users/me", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401 and "expired" in r.json()["detail"]
