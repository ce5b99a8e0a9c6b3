"""Who may see and do what: another user's code and results, admin routes, revoked tokens,
and what the logs keep (never a password, never a token). Complements tests/app/api, which
covers the plain 404/403/401 answers."""

from __future__ import annotations

import dataclasses
import secrets

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services import users
from tests.adversarial import harness
from tests.app.tj_testlib import PASSWORD, login, register

pytestmark = pytest.mark.adversarial

SECRET_CODE = "# alice's own work {nonce}\ndef double(x):\n    return (2 * x).reshape(-1)\n"


@pytest.fixture
def alice(client):
    return register(client, "alice")


@pytest.fixture
def bob(client):
    return register(client, "bob")


def test_another_users_submission_is_indistinguishable_from_none(client, alice, bob):
    nonce = secrets.token_hex(8)
    sid = client.post("/api/v1/submissions", headers=alice,
                      json={"problem": "double", "code": SECRET_CODE.format(nonce=nonce)}
                      ).json()["id"]
    missing = sid + 1000
    for path in ("", "?wait=0.1", "/events"):
        theirs = client.get(f"/api/v1/submissions/{sid}{path}", headers=bob)
        nothing = client.get(f"/api/v1/submissions/{missing}{path}", headers=bob)
        assert theirs.status_code == nothing.status_code == 404
        assert theirs.json()["detail"].replace(str(sid), "N") == \
            nothing.json()["detail"].replace(str(missing), "N")
        assert nonce not in theirs.text
    listed = client.get("/api/v1/submissions", headers=bob)
    assert listed.status_code == 200 and listed.json() == []
    assert client.get("/api/v1/submissions", headers=bob, params={"problem": "double"}
                      ).json() == []
    # The owner sees it all.
    own = client.get(f"/api/v1/submissions/{sid}", headers=alice)
    assert own.status_code == 200 and nonce in own.json()["code"]


def test_admin_routes_refuse_everyone_else_and_change_nothing(client, ctx, alice, bob):
    sid = client.post("/api/v1/submissions", headers=alice,
                      json={"problem": "double", "code": SECRET_CODE.format(nonce="x")}
                      ).json()["id"]
    before = client.get(f"/api/v1/submissions/{sid}", headers=alice).json()
    assert client.post(f"/api/v1/submissions/{sid}/rejudge").status_code == 401
    assert client.post(f"/api/v1/submissions/{sid}/rejudge",
                       headers={"Authorization": "Bearer tj_forged"}).status_code == 401
    for who in (alice, bob):  # the owner is no admin either
        r = client.post(f"/api/v1/submissions/{sid}/rejudge", headers=who)
        assert r.status_code == 403, r.text
    after = client.get(f"/api/v1/submissions/{sid}", headers=alice).json()
    assert after["attempts"] == before["attempts"]
    assert after["judgements"] == before["judgements"]
    users.create_user(ctx, "root", PASSWORD, admin=True)
    assert client.post(f"/api/v1/submissions/{sid}/rejudge",
                       headers=login(client, "root")).status_code == 202


def test_revoked_tokens_stop_working_and_only_they(client, ctx, alice):
    second = login(client, "alice")
    assert client.delete("/api/v1/tokens/current", headers=alice).status_code == 204
    assert client.get("/api/v1/users/me", headers=alice).status_code == 401
    assert client.post("/api/v1/submissions", headers=alice,
                       json={"problem": "double", "code": "x = 1\n"}).status_code == 401
    assert client.delete("/api/v1/tokens/current", headers=alice).status_code == 401
    assert client.get("/api/v1/users/me", headers=second).status_code == 200
    # `tensorjudge users revoke-tokens alice`: every token of hers, at once.
    third = login(client, "alice")
    assert users.revoke_all_tokens(ctx, "alice") == 2
    for h in (second, third):
        assert client.get("/api/v1/users/me", headers=h).status_code == 401
    assert client.get("/api/v1/users/me", headers=login(client, "alice")).status_code == 200


def test_a_new_secret_key_revokes_every_token(client, ctx, alice):
    other = dataclasses.replace(
        ctx, settings=ctx.settings.model_copy(update={"secret_key": "another key entirely"}))
    with TestClient(create_app(other.settings, ctx=other)) as c2:
        assert c2.get("/api/v1/users/me", headers=alice).status_code == 401


def test_passwords_and_tokens_never_reach_the_logs(server):
    """Against the real server of the corpus (JSON logs, uvicorn's access log included):
    sign-ups, good and bad sign-ins, token use, refused bodies and revoked tokens, then the
    whole log is searched for every password and token that went by."""
    name = f"logcheck{secrets.token_hex(3)}"
    password = f"pw-{secrets.token_hex(12)}"
    wrong = f"wrong-{secrets.token_hex(12)}"
    seen = [password, wrong]
    with server.client(timeout=60) as c:
        assert c.post("/api/v1/users", json={"username": name, "password": password}
                      ).status_code == 201
        assert c.post("/api/v1/tokens", json={"username": name, "password": wrong}
                      ).status_code == 401
        assert c.post("/api/v1/tokens", json={"username": "nobody", "password": wrong}
                      ).status_code == 401
        too_long = wrong * 100
        seen.append(too_long[:200])
        assert c.post("/api/v1/tokens", json={"username": name, "password": too_long}
                      ).status_code == 422
        assert c.post("/api/v1/users", json={"username": "x", "password": password}
                      ).status_code == 422
        token = c.post("/api/v1/tokens", json={"username": name, "password": password}
                       ).json()["token"]
        seen.append(token)
        h = {"Authorization": f"Bearer {token}"}
        assert c.get("/api/v1/users/me", headers=h).status_code == 200
        sid = harness.submit(c, h, "def double(x):\n    return (2 * x).reshape(-1)\n")
        assert harness.wait_done(c, h, sid)["verdict"] == "AC"
        assert c.delete("/api/v1/tokens/current", headers=h).status_code == 204
        assert c.get("/api/v1/users/me", headers=h).status_code == 401
    for header in (server.attacker, server.victim):
        seen.append(header["Authorization"].removeprefix("Bearer "))
    seen += [v for k, v in server.secrets.items() if k in ("victim password", "secret_key")]
    from tests.adversarial.conftest import PASSWORDS

    seen += list(PASSWORDS.values())
    log = server.log_text()
    assert '"logger": "uvicorn.access"' in log or "uvicorn.access" in log, "access log on"
    assert "/api/v1/tokens" in log  # the requests were logged, just not their secrets
    leaked = [s[:12] + "…" for s in seen if s in log]
    assert not leaked, f"secrets in the server log: {leaked}"
