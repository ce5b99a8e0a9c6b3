"""The submission rows of API.md: create, read (and long-poll), list, rejudge; errors included."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import func, select

from app.db.models import Judgement
from tests.app.tj_testlib import AC_CODE, WA_CODE, FakeJudge, slow_checks_for


def submit(client, headers, code=AC_CODE, problem="double", mode="submit"):
    return client.post("/api/v1/submissions", headers=headers,
                       json={"problem": problem, "code": code, "mode": mode})


# --- POST /api/v1/submissions ------------------------------------------------------------


def test_create_202(client, alice):
    r = submit(client, alice)
    assert r.status_code == 202
    body = r.json()
    assert body["status"] == "queued" and isinstance(body["id"], int)
    assert r.headers["location"] == f"/api/v1/submissions/{body['id']}"


def test_create_needs_a_token_401(client):
    assert submit(client, {}).status_code == 401
    assert submit(client, {"Authorization": "Bearer tj_forged"}).status_code == 401


def test_create_unknown_problem_404(client, alice):
    r = submit(client, alice, problem="nope")
    assert r.status_code == 404 and "nope" in r.json()["detail"]


def test_create_code_too_large_413(client, alice):
    r = submit(client, alice, code="#" * (64 * 1024 + 1))
    assert r.status_code == 413
    assert "65537 bytes" in r.json()["detail"] and "65536" in r.json()["detail"]
    # Exactly at the limit is fine; the limit counts UTF-8 bytes, not characters.
    assert submit(client, alice, code="#" * (64 * 1024)).status_code == 202
    assert submit(client, alice, code="é" * (32 * 1024 + 1)).status_code == 413


def test_create_body_too_large_413(client, alice):
    huge = json.dumps({"problem": "double", "code": "#" * (2 << 20)})
    r = client.post("/api/v1/submissions", headers={**alice, "content-type": "application/json"},
                    content=huge)
    assert r.status_code == 413

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"problem": "double", "code": "'
        for _ in range(64):
            yield b"#" * (64 << 10)
        yield b'"}'

    r = client.post("/api/v1/submissions", headers={**alice, "content-type": "application/json"},
                    content=chunks())
    assert r.status_code == 413


@pytest.mark.parametrize("body", [
    {"problem": "double", "code": ""},
    {"problem": "double", "code": "   \n\t"},
    {"problem": "double", "code": AC_CODE, "mode": "debug"},
    {"problem": "double"},
    {"code": AC_CODE},
    {"problem": "double", "code": 42},
])
def test_create_invalid_422(client, alice, body):
    r = client.post("/api/v1/submissions", headers=alice, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"]


def test_create_not_utf8_422(client, alice):
    # A lone surrogate is valid JSON but cannot be UTF-8.
    raw = b'{"problem": "double", "code": "def double(x): pass  # \\ud800"}'
    r = client.post("/api/v1/submissions", headers={**alice, "content-type": "application/json"},
                    content=raw)
    assert r.status_code == 422
    assert "UTF-8" in r.json()["detail"]
    r = client.post("/api/v1/submissions", headers={**alice, "content-type": "application/json"},
                    content=b'{"problem": "double", "code": "\xff\xfe"}')
    assert r.status_code == 422


def test_create_malformed_json_422(client, alice):
    r = client.post("/api/v1/submissions", headers={**alice, "content-type": "application/json"},
                    content=b'{"problem": "double", "code": ')
    assert r.status_code == 422


def test_rate_limit_429(client, alice, bob, configure):
    configure(rate_limit=3, rate_window_seconds=120)
    for _ in range(3):
        assert submit(client, alice).status_code == 202
    r = submit(client, alice)
    assert r.status_code == 429
    assert 1 <= int(r.headers["retry-after"]) <= 120
    assert "3 submissions" in r.json()["detail"]
    # Per user: bob is not affected, and nothing of alice's was lost.
    assert submit(client, bob).status_code == 202
    assert len(client.get("/api/v1/submissions", headers=alice).json()) == 3


def test_rate_limit_window_passes(client, alice, configure):
    configure(rate_limit=1, rate_window_seconds=0.5)
    assert submit(client, alice).status_code == 202
    assert submit(client, alice).status_code == 429
    time.sleep(0.6)
    assert submit(client, alice).status_code == 202


def test_queue_full_503(client, alice, bob, configure):
    configure(queue_max=2)
    assert submit(client, alice).status_code == 202
    assert submit(client, bob).status_code == 202
    r = submit(client, alice)
    assert r.status_code == 503
    assert int(r.headers["retry-after"]) >= 1
    assert "full" in r.json()["detail"]


# --- GET /api/v1/submissions/{id} --------------------------------------------------------


def test_get_owner_200(client, alice):
    sid = submit(client, alice, mode="run").json()["id"]
    r = client.get(f"/api/v1/submissions/{sid}", headers=alice)
    assert r.status_code == 200
    s = r.json()
    assert s["id"] == sid and s["problem"] == "double" and s["mode"] == "run"
    assert s["status"] == "queued" and s["verdict"] is None and s["result"] is None
    assert s["finished_at"] is None and s["created_at"]
    assert s["code"] == AC_CODE


def test_get_someone_elses_404(client, alice, bob):
    sid = submit(client, alice).json()["id"]
    r = client.get(f"/api/v1/submissions/{sid}", headers=bob)
    assert r.status_code == 404
    assert client.get(f"/api/v1/submissions/{sid + 1000}", headers=alice).status_code == 404
    assert client.get(f"/api/v1/submissions/{sid}").status_code == 401


def test_get_admin_200(client, alice, admin):
    sid = submit(client, alice).json()["id"]
    r = client.get(f"/api/v1/submissions/{sid}", headers=admin)
    assert r.status_code == 200 and r.json()["code"] == AC_CODE


def test_judged_by_a_real_worker(client, alice, workers):
    workers(1)
    ac = submit(client, alice).json()["id"]
    wa = submit(client, alice, code=WA_CODE).json()["id"]
    run = submit(client, alice, mode="run").json()["id"]
    done = {sid: client.get(f"/api/v1/submissions/{sid}?wait=30", headers=alice).json()
            for sid in (ac, wa, run)}
    s = done[ac]
    assert s["status"] == "done" and s["verdict"] == "AC" and s["finished_at"]
    res = s["result"]
    assert res["verdict"] == "AC" and res["score"] == {"passed": 3, "total": 3}
    assert res["message"] is None
    t = res["tests"][0]
    for key in ("name", "verdict", "time_ms", "max_abs_err", "max_rel_err", "mismatches",
                "message"):
        assert key in t
    assert done[wa]["verdict"] == "WA" and done[wa]["result"]["tests"][0]["mismatches"] > 0
    # Run: the samples only.
    assert done[run]["verdict"] == "AC" and done[run]["result"]["score"]["total"] == 1


def test_non_finite_output_is_stored(client, alice, workers):
    workers(1)
    code = "import numpy as np\n\ndef double(x):\n    return (x * np.inf).reshape(-1)\n"
    sid = submit(client, alice, code=code).json()["id"]
    s = client.get(f"/api/v1/submissions/{sid}?wait=30", headers=alice).json()
    assert s["verdict"] == "WA" and s["result"]["tests"][0]["verdict"] == "WA"


def test_long_poll_returns_when_done(client, alice, workers):
    judge = FakeJudge("AC", delay=0.5)
    workers(1, judge_fn=judge)
    sid = submit(client, alice).json()["id"]
    t0 = time.monotonic()
    s = client.get(f"/api/v1/submissions/{sid}?wait=20", headers=alice).json()
    elapsed = time.monotonic() - t0
    assert s["status"] == "done" and s["verdict"] == "AC"
    assert elapsed < 5


def test_long_poll_hears_a_worker_of_another_process(client, ctx, alice, workers, backend):
    """PostgreSQL: the worker's NOTIFY wakes the waiting request at once; the fallback
    poll (5 s) would be far slower. SQLite has no NOTIFY: the request's own looks hear it."""
    from app.context import Context
    from app.notify import Hub

    elsewhere = Context(ctx.settings, ctx.db, Hub())  # shares no memory with the API
    workers(1, judge_fn=FakeJudge("AC", delay=0.3), c=elsewhere)
    sid = submit(client, alice).json()["id"]
    t0 = time.monotonic()
    s = client.get(f"/api/v1/submissions/{sid}?wait=20", headers=alice).json()
    assert s["verdict"] == "AC"
    if backend == "postgresql":
        assert time.monotonic() - t0 < 2


def test_a_long_wait_looks_at_the_database_less_and_less(client, alice, monkeypatch):
    """Nothing wakes a request waiting behind the queue: its looks back off (0.5, 1, 2 s...),
    rather than one every half second for the whole wait."""
    from app.services import submissions

    looks = []
    real = submissions.status_of
    monkeypatch.setattr(submissions, "status_of", lambda *a: looks.append(1) or real(*a))
    sid = submit(client, alice).json()["id"]  # no worker: stays queued
    r = client.get(f"/api/v1/submissions/{sid}?wait=4", headers=alice)
    assert r.json()["status"] == "queued"
    assert 2 <= len(looks) <= 6, len(looks)


def test_long_poll_times_out(client, alice):
    sid = submit(client, alice).json()["id"]  # no worker: stays queued
    t0 = time.monotonic()
    r = client.get(f"/api/v1/submissions/{sid}?wait=1", headers=alice)
    elapsed = time.monotonic() - t0
    assert r.status_code == 200 and r.json()["status"] == "queued"
    assert 0.9 <= elapsed < 3


def test_long_poll_is_capped(client, alice, configure):
    configure(max_wait_seconds=0.3)
    sid = submit(client, alice).json()["id"]
    t0 = time.monotonic()
    client.get(f"/api/v1/submissions/{sid}?wait=100", headers=alice)
    assert time.monotonic() - t0 < 2


def test_long_poll_404(client, alice, bob):
    sid = submit(client, alice).json()["id"]
    assert client.get(f"/api/v1/submissions/{sid}?wait=5", headers=bob).status_code == 404
    assert client.get(f"/api/v1/submissions/{sid}?wait=-1", headers=alice).status_code == 422


# --- GET /api/v1/submissions -------------------------------------------------------------


def test_list_own_newest_first_paginated(client, ctx, alice, bob, tmp_path):
    from app.services import problems
    from tests.app.tj_testlib import DOUBLE, copy_package

    problems.store(ctx, copy_package(DOUBLE, tmp_path, "triple"), mode="add", validator=None)
    mine = [submit(client, alice, problem="double" if i % 2 else "triple").json()["id"]
            for i in range(5)]
    submit(client, bob)
    r = client.get("/api/v1/submissions", headers=alice)
    assert r.status_code == 200
    assert [s["id"] for s in r.json()] == mine[::-1]
    assert all(s["status"] == "queued" and s["verdict"] is None for s in r.json())
    # Paginated: limit + before, and a Link to the next page.
    page1 = client.get("/api/v1/submissions?limit=2", headers=alice)
    assert [s["id"] for s in page1.json()] == mine[::-1][:2]
    assert 'rel="next"' in page1.headers["link"]
    page2 = client.get(f"/api/v1/submissions?limit=2&before={page1.json()[-1]['id']}",
                       headers=alice)
    assert [s["id"] for s in page2.json()] == mine[::-1][2:4]
    # Filtered by problem.
    only = client.get("/api/v1/submissions?problem=double", headers=alice).json()
    assert [s["id"] for s in only] == [m for i, m in enumerate(mine) if i % 2][::-1]
    assert client.get("/api/v1/submissions", headers=bob).json()[0]["problem"] == "double"
    assert client.get("/api/v1/submissions").status_code == 401
    assert client.get("/api/v1/submissions?limit=0", headers=alice).status_code == 422


# --- POST /api/v1/submissions/{id}/rejudge -----------------------------------------------


def test_rejudge_202_keeps_the_old_result(client, ctx, alice, admin, workers):
    judge = FakeJudge("WA", "AC")
    workers(1, judge_fn=judge)
    sid = submit(client, alice).json()["id"]
    first = client.get(f"/api/v1/submissions/{sid}?wait=20", headers=alice).json()
    assert first["verdict"] == "WA"
    r = client.post(f"/api/v1/submissions/{sid}/rejudge", headers=admin)
    assert r.status_code == 202 and r.json() == {"id": sid, "status": "queued"}
    second = client.get(f"/api/v1/submissions/{sid}?wait=20", headers=alice).json()
    assert second["status"] == "done" and second["verdict"] == "AC"
    assert [j["verdict"] for j in second["judgements"]] == ["WA", "AC"]
    with ctx.db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Judgement)) == 2


def test_rejudge_needs_admin_403(client, alice):
    sid = submit(client, alice).json()["id"]
    r = client.post(f"/api/v1/submissions/{sid}/rejudge", headers=alice)
    assert r.status_code == 403
    assert client.post(f"/api/v1/submissions/{sid}/rejudge").status_code == 401


def test_rejudge_unknown_404(client, admin):
    assert client.post("/api/v1/submissions/999999/rejudge", headers=admin).status_code == 404


# --- GET /api/v1/submissions/{id}/events -------------------------------------------------


def test_events_stream_status_changes(client, alice, workers):
    judge = FakeJudge("AC")
    judge.release.clear()  # hold the judge until the stream is open
    workers(1, judge_fn=judge)
    sid = submit(client, alice).json()["id"]
    events = []
    with client.stream("GET", f"/api/v1/submissions/{sid}/events", headers=alice) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["status"] == "running":
                    judge.release.set()
    statuses = [e["status"] for e in events]
    assert statuses[-1] == "done" and events[-1]["verdict"] == "AC"
    assert "running" in statuses
    assert statuses == sorted(statuses, key=["queued", "running", "done"].index)


def test_events_404(client, alice, bob):
    sid = submit(client, alice).json()["id"]
    assert client.get(f"/api/v1/submissions/{sid}/events", headers=bob).status_code == 404


def test_submissions_are_queued_in_the_order_their_posts_arrived(client, alice, monkeypatch):
    """The first POST's checks are slow (a busy server): the second, posted after it,
    still joins the queue after it."""
    import threading

    first_code = AC_CODE + "\n# first\n"
    slow_checks_for(monkeypatch, first_code, 0.5)
    ids: dict[str, int] = {}
    t = threading.Thread(target=lambda: ids.setdefault(
        "first", submit(client, alice, code=first_code).json()["id"]))
    t.start()
    time.sleep(0.15)
    ids["second"] = submit(client, alice).json()["id"]
    t.join()
    assert ids["first"] < ids["second"]
