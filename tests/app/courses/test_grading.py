"""The gradebook's rules through the API: the late penalty per day begun, the best or the
last submission, a judge failure never a zero (marked, then rejudged), the CSV export with the
same figures as the JSON, and bad input refused with the reason. The judge is a stand-in
that returns the verdicts it is given: these rules do not depend on how code is judged."""

from __future__ import annotations

import csv
import io
import time
from datetime import timedelta

from fastapi.testclient import TestClient

from app.course_upkeep import rejudge_failures
from tests.app.courses.conftest import Course_, iso, now
from tests.app.tj_testlib import AC_CODE, WA_CODE, FakeJudge


def submit(client: TestClient, auth: dict[str, str], code: str) -> int:
    sid = client.post("/api/v1/submissions", json={"problem": "double", "code": code},
                      headers=auth).json()["id"]
    deadline = time.monotonic() + 30
    while client.get(f"/api/v1/submissions/{sid}?wait=5", headers=auth).json()["status"] \
            != "done":
        assert time.monotonic() < deadline
    return sid


def book(client: TestClient, aid: int, auth: dict[str, str]) -> dict[str, dict]:
    r = client.get(f"/api/v1/assignments/{aid}/gradebook", headers=auth)
    assert r.status_code == 200, r.text
    return {row["username"]: row for row in r.json()["rows"]}


def test_late_penalty_best_or_last_and_the_csv(client, workers, configure):
    configure(ie_retries=0)
    c = Course_(client)
    a = c.assignment(late_penalty_pct=10.0)
    aid = a["id"]
    workers(1, judge_fn=FakeJudge("WA", "AC", "WA", "IE", "AC"))
    submit(client, c.learner, WA_CODE)  # on time: 0 points
    # The due time moves to now: what follows is one day late (a day begun counts).
    spec = {**a, "due_at": iso(now()), "problems": [{"slug": "double", "points": 10}]}
    assert client.put(f"/api/v1/assignments/{aid}", json=spec,
                      headers=c.instructor).status_code == 200
    late_ac = submit(client, c.learner, AC_CODE)  # 10 points less 10%
    row = book(client, aid, c.instructor)["clearn1"]
    assert row["points"] == 9.0 and row["late_days"] == 1 and row["status"] == "complete"
    cell = row["cells"][0]
    assert (cell["submission_id"], cell["penalty_pct"], cell["verdict"]) == (late_ac, 10.0, "AC")
    submit(client, c.learner, WA_CODE)  # a later wrong answer: the best stays
    assert book(client, aid, c.instructor)["clearn1"]["points"] == 9.0
    spec["scoring"] = "last"
    assert client.put(f"/api/v1/assignments/{aid}", json=spec,
                      headers=c.instructor).status_code == 200
    assert book(client, aid, c.instructor)["clearn1"]["points"] == 0.0

    # A judge failure is never a zero: marked, then rejudged (by the course upkeep).
    failed = submit(client, c.other, AC_CODE)
    row = book(client, aid, c.instructor)["clearn2"]
    assert row["status"] == "judge-failure"
    assert row["cells"][0]["points"] is None and row["cells"][0]["status"] == "judge-failure"
    assert rejudge_failures(client.app.state.ctx) == 1
    deadline = time.monotonic() + 30
    while book(client, aid, c.instructor)["clearn2"]["status"] != "complete":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    row = book(client, aid, c.instructor)["clearn2"]
    assert row["cells"][0]["submission_id"] == failed and row["points"] == 9.0

    # The CSV export: the JSON's figures, in the columns it names.
    r = client.get(f"/api/v1/assignments/{aid}/gradebook.csv", headers=c.instructor)
    assert r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    lines = list(csv.reader(io.StringIO(r.text)))
    body = client.get(f"/api/v1/assignments/{aid}/gradebook", headers=c.instructor).json()
    assert lines[0] == body["columns"]
    assert lines[0][:4] == ["Student", "ID", "SIS Login ID", "LTI User ID"]
    rows = {line[0]: dict(zip(lines[0], line, strict=True)) for line in lines[1:]}
    for row in body["rows"]:
        got = rows[row["username"]]
        assert float(got["Total"]) == row["points"]
        assert float(got["Double it [double] (10 pts)"]) == row["cells"][0]["points"]
        assert int(got["Late Days"]) == row["late_days"] and got["Status"] == row["status"]
    assert rows["clearn1"]["Late Penalty %"] == "10"


def test_bad_input_is_refused_with_the_reason(client):
    c = Course_(client)
    url = f"/api/v1/courses/{c.id}/assignments"
    t = now()
    cases = [
        ({"due_at": iso(t - timedelta(days=2))}, 422, "due_at: before opens_at"),
        ({"late_until": iso(t)}, 422, "late_until: before due_at"),
        ({"problems": [{"slug": "nope", "points": 1}]}, 404, "no problem 'nope'"),
        ({"problems": [{"slug": "double", "points": 1}, {"slug": "double", "points": 2}]},
         422, "problems: each problem once"),
        ({"due_at": "2026-01-01T00:00:00"}, 422, "due_at"),  # no time zone
        ({"scoring": "median"}, 422, "scoring"),
    ]
    from tests.app.courses.conftest import assignment_body

    for over, status, detail in cases:
        r = client.post(url, json=assignment_body(**over), headers=c.instructor)
        assert r.status_code == status, (over, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
        assert detail in r.json()["detail"], r.json()
    r = client.post(url, json=assignment_body(), headers=c.learner)
    assert r.status_code == 403
    assert r.json()["detail"] == "only the course's instructors may do this"
    r = client.post("/api/v1/courses/join", json={"code": "not-a-code"}, headers=c.learner)
    assert r.status_code == 404 and r.json()["detail"] == "no course has this invitation code"
    assert client.get(f"/api/v1/courses/{c.id}/assignments",
                      headers=c.learner).json() == []  # nothing was made
