"""Who sees what of a course's submissions, each role against each endpoint (REST and pages):
in exam mode the learner sees the verdict only until the assignment closes, then everything;
the course's staff see everything throughout; another course's staff, another learner and a
stranger see nothing. One real judgement (a wrong answer the diagnosis names)."""

from __future__ import annotations

import time
from datetime import timedelta

from fastapi.testclient import TestClient

from app.context import Context
from app.services import sessions, users
from tests.app.courses.conftest import Course_, iso, now
from tests.app.tj_testlib import PASSWORD, WA_CODE, login, register

VEIL_NOTE = "only the verdict is shown until the assignment closes"


def page_headers(ctx: Context, auth: dict[str, str]) -> dict[str, str]:
    """The pages' session cookie for the bearer token of `auth`."""
    token = auth["Authorization"].removeprefix("Bearer ")
    cookie = sessions.encode(ctx, sessions.Session(csrf="x" * 24, token=token))
    return {"Cookie": f"{sessions.COOKIE}={cookie}", "accept": "text/html"}


def wait_done(client: TestClient, sid: int, auth: dict[str, str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = client.get(f"/api/v1/submissions/{sid}?wait=10", headers=auth)
        if r.json()["status"] == "done":
            return
    raise AssertionError("not judged in time")


def full_result(body: dict) -> bool:
    """Per-test figures and the diagnosis are there."""
    r = body["result"]
    return bool(r["tests"]) and r["tests"][0]["max_abs_err"] is not None and bool(
        r["diagnosis"]) and r["score"] == {"passed": 0, "total": 3}


def test_exam_mode_each_role_against_each_endpoint(client, workers, ctx):
    a = Course_(client, "a")
    b = Course_(client, "b")  # its instructor is another course's staff
    stranger = register(client, "stranger")
    users.create_user(ctx, "root", PASSWORD, admin=True)
    admin = login(client, "root")
    exam = a.assignment(feedback="exam")
    aid = exam["id"]
    workers(1)
    sid = client.post("/api/v1/submissions", json={"problem": "double", "code": WA_CODE},
                      headers=a.learner).json()["id"]
    wait_done(client, sid, a.learner)

    def check(during: bool) -> None:
        owner = a.learner
        # The learner: the verdict, and nothing per test until the close.
        r = client.get(f"/api/v1/submissions/{sid}", headers=owner)
        assert r.status_code == 200 and r.json()["verdict"] == "WA"
        assert full_result(r.json()) is not during, r.json()["result"]
        assert (r.json()["score"] is None) is during
        listed = client.get("/api/v1/submissions", headers=owner).json()
        assert (listed[0]["score"] is None) is during
        me = client.get(f"/api/v1/assignments/{aid}/grades/me", headers=owner).json()
        assert me["cells"][0]["verdict"] == "WA"
        assert (me["points"] is None) is during and (me["cells"][0]["total"] is None) is during
        for path in (f"/submissions/{sid}", f"/submissions/{sid}/result"):
            html = client.get(path, headers=page_headers(ctx, owner)).text
            assert "Wrong Answer" in html
            assert ("Max abs error" in html) is not during, path
            assert ("What went wrong" in html) is not during, path
            assert (VEIL_NOTE in html) is during, path
        history = client.get("/submissions", headers=page_headers(ctx, owner)).text
        assert ("0/3" in history) is not during
        assert client.get(f"/api/v1/assignments/{aid}/gradebook",
                          headers=owner).status_code == 403
        # The course's staff: everything, throughout.
        for staff in (a.instructor, a.ta, admin):
            r = client.get(f"/api/v1/submissions/{sid}", headers=staff)
            assert r.status_code == 200 and full_result(r.json())
            html = client.get(f"/submissions/{sid}", headers=page_headers(ctx, staff)).text
            assert "Max abs error" in html and "What went wrong" in html
            book = client.get(f"/api/v1/assignments/{aid}/gradebook", headers=staff)
            assert book.status_code == 200
            assert [row["username"] for row in book.json()["rows"]] == ["alearn1", "alearn2"]
            assert client.get(f"/api/v1/assignments/{aid}/gradebook.csv",
                              headers=staff).status_code == 200
            assert client.get(f"/assignments/{aid}/gradebook",
                              headers=page_headers(ctx, staff)).status_code == 200
        # Another learner of the course, another course's staff, a stranger: nothing.
        for other in (a.other, b.instructor, b.ta, stranger):
            assert client.get(f"/api/v1/submissions/{sid}", headers=other).status_code == 404
            assert client.get(f"/submissions/{sid}",
                              headers=page_headers(ctx, other)).status_code == 404
            assert client.get(f"/submissions/{sid}/result",
                              headers=page_headers(ctx, other)).status_code == 404
            r = client.get(f"/api/v1/submissions/{sid}/events", headers=other)
            assert r.status_code == 404
        for outsider in (b.instructor, stranger):
            for path in (f"/api/v1/assignments/{aid}", f"/api/v1/assignments/{aid}/gradebook",
                         f"/api/v1/assignments/{aid}/gradebook.csv",
                         f"/api/v1/assignments/{aid}/grades/me",
                         f"/api/v1/assignments/{aid}/regrades",
                         f"/api/v1/assignments/{aid}/similarity?problem=double",
                         f"/api/v1/courses/{a.id}", f"/api/v1/courses/{a.id}/members"):
                r = client.get(path, headers=outsider)
                assert r.status_code == 404, (path, r.text)
                assert r.headers["content-type"].startswith("application/problem+json")
            assert client.get(f"/assignments/{aid}/gradebook",
                              headers=page_headers(ctx, outsider)).status_code == 404
        # A learner of the course is refused the staff's views, with the reason.
        for path in (f"/api/v1/assignments/{aid}/gradebook.csv",
                     f"/api/v1/assignments/{aid}/similarity?problem=double",
                     f"/api/v1/courses/{a.id}/members"):
            r = client.get(path, headers=a.other)
            assert r.status_code == 403 and r.json()["detail"] == \
                "only the course's staff may do this"

    check(during=True)
    # The exam closes (the due time moved to just now: the submission still counts).
    body = {**exam, "problems": [{"slug": "double", "points": 10}],
            "due_at": iso(now() - timedelta(milliseconds=1)), "late_until": None}
    r = client.put(f"/api/v1/assignments/{aid}", json=body, headers=a.instructor)
    assert r.status_code == 200 and r.json()["status"] == "closed", r.text
    check(during=False)
