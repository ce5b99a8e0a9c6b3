"""The staff's pages without a browser: regrades (preview through the form), similarity side
by side, and the assignment form refusing bad input with the reason, keeping what was
typed."""

from __future__ import annotations

import time

from tests.app.courses.conftest import Course_
from tests.app.courses.test_exam_access import page_headers
from tests.app.courses.test_grading import submit
from tests.app.courses.test_similarity import ORIGINAL, RENAMED
from tests.app.tj_testlib import FakeJudge

CSRF = "x" * 24  # the session's, as page_headers makes it


def test_regrade_and_similarity_pages_and_the_form(client, workers, ctx):
    c = Course_(client)
    aid = c.assignment()["id"]
    workers(1, judge_fn=FakeJudge("AC"))
    first = submit(client, c.learner, ORIGINAL)
    second = submit(client, c.other, RENAMED)
    staff = page_headers(ctx, c.ta)

    r = client.post(f"/assignments/{aid}/regrades", data={"problem": "double", "csrf": CSRF},
                    headers=staff, follow_redirects=False)
    assert r.status_code == 303, r.text
    deadline = time.monotonic() + 30
    while "Preview complete: 0 of 2 verdicts would change" not in (
            html := client.get(r.headers["location"], headers=staff).text):
        assert time.monotonic() < deadline, html
        time.sleep(0.2)
    assert "Apply: rejudge these submissions" in html
    # Without the form's token nothing starts.
    r = client.post(f"/assignments/{aid}/regrades", data={"problem": "double"},
                    headers=staff, follow_redirects=False)
    assert r.status_code == 403

    html = client.get(f"/assignments/{aid}/similarity?problem=double", headers=staff).text
    assert "100.0%" in html and "side by side" in html
    html = client.get(f"/assignments/{aid}/similarity/{first}/{second}?problem=double",
                      headers=staff).text
    assert "clearn1" in html and "clearn2" in html and 'class="match"' in html
    learner = page_headers(ctx, c.learner)
    assert client.get(f"/assignments/{aid}/similarity",
                      headers=learner).status_code == 403

    teacher = page_headers(ctx, c.instructor)
    form = {"csrf": CSRF, "title": "Week 2", "problem": "double", "points-double": "5",
            "opens_at": "2030-01-02T00:00:00", "due_at": "2030-01-01T00:00:00",
            "late_until": "", "late_penalty_pct": "0", "scoring": "best", "feedback": "full"}
    r = client.post(f"/courses/{c.id}/assignments", data=form, headers=teacher,
                    follow_redirects=False)
    assert r.status_code == 422 and "due_at: before opens_at" in r.text
    assert 'value="Week 2"' in r.text  # what was typed stays
    form["due_at"] = "2030-01-03T00:00:00"
    r = client.post(f"/courses/{c.id}/assignments", data=form, headers=teacher,
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/assignments/")
