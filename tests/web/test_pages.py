"""The pages through the application (TestClient), on SQLite and PostgreSQL: accounts with
CSRF-safe forms, the problem list and page, Run/Submit without JavaScript, the submission
page, the session cookie on the events stream, escaping, the leaderboard."""

from __future__ import annotations

import html
import json
import re

import pytest

from app.services import sessions
from tests.app.tj_testlib import AC_CODE, PASSWORD, WA_CODE, FakeJudge, register
from tests.web.conftest import Browserish

TITLE_RE = re.compile(r"<title>(.*?)</title>", re.S)


def title(r) -> str:
    return html.unescape(TITLE_RE.search(r.text).group(1).strip())


def wait_done(web: Browserish, sid: int) -> str:
    """The result fragment once the submission is done (the fake judges are quick)."""
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = web.get(f"/submissions/{sid}/result")
        if 'data-status="done"' in r.text:
            return r.text
        time.sleep(0.05)
    raise AssertionError(f"submission {sid} not judged in time")


# --- accounts --------------------------------------------------------------------------------


def test_sign_up_sign_in_sign_out(web):
    r = web.get("/signup")
    assert r.status_code == 200 and title(r) == "Sign up · tensorjudge"
    assert sessions.COOKIE in r.cookies
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie

    r = web.post("/signup", {"username": "alice", "password": PASSWORD, "next": "/problems/double"})
    assert r.status_code == 303 and r.headers["location"] == "/problems/double"
    assert "alice" in web.get("/").text

    r = web.get("/")
    r = web.post("/signout", {})
    assert r.status_code == 303
    page = web.get("/").text
    assert "Sign in" in page and "Sign out" not in page

    web.get("/signin")
    r = web.post("/signin", {"username": "alice", "password": "wrong password"})
    assert r.status_code == 401 and "wrong username or password" in r.text
    assert title(r) == "Sign in · tensorjudge"
    r = web.post("/signin", {"username": "alice", "password": PASSWORD})
    assert r.status_code == 303 and r.headers["location"] == "/"


def test_sign_up_errors_are_shown(web, client):
    web.get("/signup")
    r = web.post("/signup", {"username": "a", "password": PASSWORD})
    assert r.status_code == 422 and "3 to 32 characters" in r.text
    register(client, "taken")
    r = web.post("/signup", {"username": "taken", "password": PASSWORD})
    assert r.status_code == 409 and "is taken" in r.text
    assert 'value="taken"' in r.text  # the form keeps what was typed (but not the password)


def test_forms_need_the_csrf_token(web):
    web.get("/signup")
    good = web.csrf
    web.csrf = "forged"
    r = web.post("/signup", {"username": "mallory", "password": PASSWORD})
    assert r.status_code == 403
    web.csrf = ""
    assert web.post("/signup", {"username": "mallory", "password": PASSWORD}).status_code == 403
    # The right token but posted from another site.
    web.csrf = good
    r = web.post("/signup", {"username": "mallory", "password": PASSWORD},
                 headers={"origin": "https://evil.example"})
    assert r.status_code == 403
    assert web.post("/signup", {"username": "mallory", "password": PASSWORD}).status_code == 303


def test_a_forged_cookie_is_ignored(web, client):
    web.sign_up("alice")
    value = client.cookies[sessions.COOKIE]
    payload, _sig = value.split(".")
    client.cookies.set(sessions.COOKIE, payload + ".AAAA")
    assert "Sign out" not in web.get("/").text


def test_signing_out_revokes_the_session(web, client):
    web.sign_up("alice")
    old = client.cookies[sessions.COOKIE]
    web.get("/")
    web.post("/signout", {})
    client.cookies.set(sessions.COOKIE, old)  # a copy of the cookie kept from before
    assert "Sign out" not in web.get("/").text


def test_next_is_only_a_local_path(web):
    web.get("/signup")
    r = web.post("/signup", {"username": "alice", "password": PASSWORD,
                             "next": "//evil.example/"})
    assert r.status_code == 303 and r.headers["location"] == "/"


# --- problems ------------------------------------------------------------------------------


def test_problem_list(web):
    r = web.get("/")
    assert r.status_code == 200 and title(r) == "Problems · tensorjudge"
    assert 'href="/problems/double"' in r.text and "Double it" in r.text
    assert "Easy" in r.text and "warm-up" in r.text


def test_problem_page(web):
    r = web.get("/problems/double")
    assert r.status_code == 200 and title(r) == "Double it · tensorjudge"
    page = r.text
    assert "double(x: (N, M)) -&gt; (N*M,)" in page  # the signature, escaped
    assert '<span class="math math-inline">2x</span>' in page  # math left for KaTeX
    assert "data-samples-url" in page or "sample-1" in page
    # The plain form: works without JavaScript.
    assert 'method="post" action="/problems/double/submit"' in page
    assert '<textarea id="code" name="code"' in page
    assert "def double(x):" in page  # no starter.py: one made from the signature
    assert "Sign in</a> or" in page  # no Run/Submit before signing in
    # Each limit and how it was set (docs/judging.md, "Limits").
    assert "1.50 s of CPU per test <span class=\"muted\">(fixed by the problem)" in page
    assert "up to 60.00 s in all <span class=\"muted\">(the judge&#39;s default: the " \
        "problem is not calibrated)" in page


def test_samples_fragment(web):
    r = web.get("/problems/double/samples")
    assert r.status_code == 200 and "sample-1" in r.text
    assert "float32" in r.text and "(2, 3)" in r.text
    # Computed once: the problem page now shows them itself.
    assert "sample-1" in web.get("/problems/double").text


def test_unknown_problem_is_an_html_404(web):
    r = web.get("/problems/nope")
    assert r.status_code == 404 and title(r) == "Not found · tensorjudge"
    r = web.get("/no/such/page")
    assert r.status_code == 404 and "<!doctype html>" in r.text
    # The API keeps answering JSON.
    assert web.client.get("/api/v1/nope").headers["content-type"].startswith(
        "application/problem+json")


# --- Run and Submit --------------------------------------------------------------------------


def test_submit_without_javascript(web, workers):
    workers(1, judge_fn=FakeJudge("AC"))
    web.sign_up("alice")
    page = web.get("/problems/double").text
    assert 'value="run"' in page and 'value="submit"' in page
    r = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"})
    assert r.status_code == 303
    url = r.headers["location"]
    sid = int(url.rsplit("/", 1)[1])
    fragment = wait_done(web, sid)
    assert "Accepted" in fragment and "3/3 tests passed" in fragment
    r = web.get(url)
    assert title(r) == f"Submission #{sid} · tensorjudge"
    assert "Accepted" in r.text and 'http-equiv="refresh"' not in r.text
    # Solved: the mark on the list, and the reference solution on the problem page.
    listing = web.get("/").text
    assert 'aria-label="Solved"' in listing and "100%" in listing
    problem = web.get("/problems/double").text
    assert "View solution" in problem and "(2 * x).reshape(-1)" in problem


def test_run_with_fetch_gets_json(web, workers):
    workers(1, judge_fn=FakeJudge("WA"))
    web.sign_up("alice")
    web.get("/problems/double")
    r = web.post("/problems/double/submit", {"code": WA_CODE, "mode": "run"}, json=True)
    assert r.status_code == 202
    body = r.json()
    assert body["status"] == "queued" and body["url"] == f"/submissions/{body['id']}"
    fragment = wait_done(web, body["id"])
    assert "Wrong Answer" in fragment and "Run on the sample tests" in fragment
    # A Run proves nothing: no acceptance figures, no solved mark.
    assert "–" in web.get("/").text


def test_submit_needs_a_session(web):
    web.get("/problems/double")
    r = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"}, json=True)
    assert r.status_code == 401
    r = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"})
    assert r.status_code == 303 and r.headers["location"].startswith("/signin?next=")


def test_submit_needs_the_csrf_token(web):
    web.sign_up("alice")
    web.get("/problems/double")
    web.csrf = "nope"
    r = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"}, json=True)
    assert r.status_code == 403


def test_submit_errors_keep_the_code(web):
    web.sign_up("alice")
    web.get("/problems/double")
    r = web.post("/problems/double/submit", {"code": "   ", "mode": "submit"})
    assert r.status_code == 422 and "code: empty" in r.text
    r = web.post("/problems/double/submit", {"code": "#" * (64 * 1024 + 1), "mode": "submit"},
                 json=True)
    assert r.status_code == 413 and "bytes" in r.json()["detail"]


def test_pending_submission_shows_its_tests(web, workers):
    judge = FakeJudge("AC")
    judge.release.clear()
    workers(1, judge_fn=judge)
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"},
                   json=True).json()["id"]
    page = web.get(f"/submissions/{sid}").text
    for name in ("sample-1", "hidden-1", "hidden-2"):
        assert name in page
    assert 'http-equiv="refresh"' in page  # without JavaScript the page reloads itself
    assert re.search(r"Queued|Running", page)
    judge.release.set()
    assert "Accepted" in wait_done(web, sid)


def test_events_stream_takes_the_session_cookie(web, client, workers):
    workers(1, judge_fn=FakeJudge("AC"))
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"},
                   json=True).json()["id"]
    events = []
    with client.stream("GET", f"/api/v1/submissions/{sid}/events") as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    assert events[-1]["status"] == "done" and events[-1]["verdict"] == "AC"
    # Nobody else's: another user's session, and no session at all.
    other = Browserish(type(client)(client.app))
    other.sign_up("bob")
    assert other.client.get(f"/api/v1/submissions/{sid}/events").status_code == 404
    client.cookies.clear()
    assert client.get(f"/api/v1/submissions/{sid}/events").status_code == 401


def test_someone_elses_submission_is_not_shown(web, client, workers):
    workers(1, judge_fn=FakeJudge("AC"))
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"},
                   json=True).json()["id"]
    other = Browserish(type(client)(client.app))
    other.sign_up("bob")
    assert other.get(f"/submissions/{sid}").status_code == 404
    assert other.get(f"/submissions/{sid}/result").status_code == 404
    anon = Browserish(type(client)(client.app))
    r = anon.get(f"/submissions/{sid}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/signin")


def test_user_text_is_escaped(web, workers):
    evil = "<script>alert('x')</script>"
    code = f"# {evil}\ndef double(x):\n    print(\"{evil}\")\n    raise ValueError(\"{evil}\")\n"
    workers(1)  # the real sandbox: the traceback and the output come from the user's code
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": code, "mode": "run"},
                   json=True).json()["id"]
    fragment = wait_done(web, sid)
    assert "Runtime Error" in fragment
    page = web.get(f"/submissions/{sid}").text
    assert evil not in page
    assert html.escape(evil, quote=False) in page or "&lt;script&gt;" in page


def test_my_submissions(web, workers):
    workers(1, judge_fn=FakeJudge("WA"))
    r = web.get("/submissions", follow_redirects=False)
    assert r.status_code == 303 and "/signin?next=/submissions" in r.headers["location"]
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": WA_CODE, "mode": "submit"},
                   json=True).json()["id"]
    wait_done(web, sid)
    r = web.get("/submissions")
    assert title(r) == "My submissions · tensorjudge"
    assert f'href="/submissions/{sid}"' in r.text and "Wrong Answer" in r.text
    assert "Wrong Answer" in web.get("/submissions?problem=double").text


def test_wrong_answer_shows_the_heatmap(web, workers):
    workers(1)  # real judging: a real error grid
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": WA_CODE, "mode": "submit"},
                   json=True).json()["id"]
    fragment = wait_done(web, sid)
    assert "Wrong Answer" in fragment
    m = re.search(r'<svg[^>]*role="img"[^>]*aria-label="([^"]+)"', fragment)
    assert m, "no heatmap picture"
    label = html.unescape(m.group(1))
    assert "heatmap" in label.lower() and "worst element is at [" in label
    assert "Largest errors" in fragment  # the text alternative
    # Another test's picture on request.
    page = web.get(f"/submissions/{sid}?test=hidden-2").text
    assert "Where the output is wrong: <code>hidden-2</code>" in page


def test_solution_needs_an_accept(web, workers):
    web.sign_up("alice")
    r = web.get("/problems/double/solution")
    assert r.status_code == 403 and "reference" not in r.text.split("<main")[0]
    workers(1, judge_fn=FakeJudge("AC"))
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"},
                   json=True).json()["id"]
    wait_done(web, sid)
    r = web.get("/problems/double/solution")
    assert r.status_code == 200 and "(2 * x).reshape(-1)" in r.text


def test_leaderboard_page(web, workers):
    r = web.get("/leaderboard")
    assert r.status_code == 200 and title(r) == "Leaderboard · tensorjudge"
    assert "Nobody has solved" in r.text
    workers(1, judge_fn=FakeJudge("AC"))
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"},
                   json=True).json()["id"]
    wait_done(web, sid)
    r = web.get("/leaderboard")
    assert "alice" in r.text and "(you)" in r.text


@pytest.mark.parametrize("path", ["/", "/signin", "/signup", "/leaderboard",
                                  "/problems/double"])
def test_every_page_has_a_title_and_landmarks(web, path):
    r = web.get(path)
    assert r.status_code == 200
    assert title(r).endswith(" · tensorjudge")
    assert '<main id="main"' in r.text and 'class="skip-link" href="#main"' in r.text
    assert '<html lang="en">' in r.text and 'name="viewport"' in r.text
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
