"""tensorjudge as an LTI 1.3 tool, launched from a real LTI 1.3 platform (the
`lti1p3platform` package, tests/web/lti_platform.py) on 127.0.0.1 through a real headless
Chromium: the instructor's deep link makes an assignment and a resource link with a line
item; the learner's launch signs them in and opens it; their submission's grade arrives at
the platform through Assignment and Grade Services; the platform's roster comes in through
Names and Role Provisioning Services; an expired or forged launch token is refused with a
clear error."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from tests.web.conftest import shot
from tests.web.test_browser import AC_CODE, expect_title, replace_code, verdict
from tests.web.test_course_browser import page_of  # noqa: F401 - pages on this module's server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def course_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The tool: a server of this module's own with the `double` problem and a real judge;
    grades go out every half second."""
    from tests.web.conftest import require_browser
    from tests.web.liveserver import LiveServer

    require_browser()

    server = LiveServer(tmp_path_factory.mktemp("lti"), bundled=False,
                        course_upkeep_seconds=0.5).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def platform(course_server: Any) -> Iterator[Any]:
    """The platform, and the tool's registration of it (what `tensorjudge lti register`
    stores)."""
    from app.lti import registrations
    from tests.web.lti_platform import CLIENT_ID, DEPLOYMENT_ID, Platform

    p = Platform(course_server.url).start()
    registrations.register(course_server.ctx, issuer=p.url, client_id=CLIENT_ID,
                           auth_login_url=f"{p.url}/authorize",
                           auth_token_url=f"{p.url}/token", key_set_url=f"{p.url}/jwks",
                           deployment_ids=[DEPLOYMENT_ID])
    yield p
    p.stop()


def launch(page: Any, platform: Any, **params: str) -> None:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    page.goto(f"{platform.url}/start?{query}")


def test_deep_link_launch_submission_grade_and_roster(page_of, platform, course_server):  # noqa: F811
    # The instructor adds tensorjudge to the platform's course: deep linking, a problem.
    teacher = page_of()
    launch(teacher, platform, user="teacher", deep="1")
    expect_title(teacher, "Link an assignment · tensorjudge")
    assert "Deep learning on the platform" in teacher.locator("main").inner_text()
    shot(teacher, "lti-01-deep-link")
    teacher.get_by_label("Double it").check()
    teacher.get_by_role("button", name="Add it to the course").click()
    expect_title(teacher, "Linked")  # the platform's page, after the signed response
    [(link_id, link)] = platform.state.links.items()
    assert link["title"] == "Double it" and link["custom"]["tj_assignment"].isdigit()
    item = platform.state.lineitems[link["lineitem"]]
    assert item["scoreMaximum"] == 100 and item["label"] == "Double it"

    # The learner follows the link: signed in as the platform's user, in the assignment.
    learner = page_of()
    launch(learner, platform, user="learner", link=link_id)
    expect_title(learner, "Double it · tensorjudge")
    assert learner.url.endswith(f"/assignments/{link['custom']['tj_assignment']}")
    learner.get_by_role("link", name="Double it").click()
    learner.wait_for_selector(".cm-editor .cm-content")
    replace_code(learner, AC_CODE)
    learner.get_by_role("button", name="Submit").click()
    learner.wait_for_selector('#verdict .result[data-status="done"] >> text=Submission, '
                              'all tests', timeout=30_000)
    assert verdict(learner) == "Accepted"

    # The grade arrives at the platform (Assignment and Grade Services).
    deadline = time.monotonic() + 30
    while not platform.state.scores.get(link["lineitem"]):
        assert time.monotonic() < deadline, "no grade reached the platform"
        time.sleep(0.2)
    [score] = platform.state.scores[link["lineitem"]]
    assert (score["userId"], score["scoreGiven"], score["scoreMaximum"]) == \
        ("learner", 100.0, 100.0)
    assert score["gradingProgress"] == "FullyGraded"

    # The roster (Names and Role Provisioning Services): learner2 never launched.
    teacher.goto(f"/assignments/{link['custom']['tj_assignment']}")
    teacher.get_by_role("link", name="Deep learning on the platform").click()
    teacher.get_by_role("button", name="Add the learning platform's roster").click()
    expect_title(teacher, "Deep learning on the platform · tensorjudge")
    roles = teacher.locator("#members tbody tr td:nth-child(2)").all_inner_texts()
    assert sorted(roles) == ["Instructor", "Learner", "Learner"], roles
    shot(teacher, "lti-02-roster")


def test_an_expired_or_forged_launch_token_is_refused(page_of, platform,  # noqa: F811
                                                      course_server):
    # Expired: the real platform issues a token that expired a minute ago.
    platform.state.token_lifetime_s = -60
    try:
        page = page_of()
        launch(page, platform, user="learner", link="link-1")
        expect_title(page, "Launch refused · tensorjudge")
        text = page.locator("main").inner_text()
        assert "The launch was refused: its token has expired" in text, text
    finally:
        platform.state.token_lifetime_s = 300

    # Forged: a token with every claim right and the platform's key id, signed with another
    # key, after a genuine login (its state cookie and nonce).
    from tests.web.lti_platform import CLIENT_ID, DEPLOYMENT_ID, pem_pair

    tool = course_server.url
    with httpx.Client(base_url=tool, follow_redirects=False, timeout=10) as http:
        r = http.get("/lti/login", params={
            "iss": platform.url, "login_hint": "learner", "client_id": CLIENT_ID,
            "target_link_uri": f"{tool}/lti/launch", "lti_message_hint": "link-1",
            "lti_deployment_id": DEPLOYMENT_ID})
        assert r.status_code == 302, r.text
        auth = parse_qs(urlsplit(r.headers["location"]).query)
        claims = {
            "iss": platform.url, "aud": CLIENT_ID, "sub": "teacher", "nonce": auth["nonce"][0],
            "iat": int(time.time()), "exp": int(time.time()) + 300,
            "https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiResourceLinkRequest",
            "https://purl.imsglobal.org/spec/lti/claim/version": "1.3.0",
            "https://purl.imsglobal.org/spec/lti/claim/deployment_id": DEPLOYMENT_ID,
            "https://purl.imsglobal.org/spec/lti/claim/roles": [
                "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"],
            "https://purl.imsglobal.org/spec/lti/claim/resource_link": {"id": "link-1"},
            "https://purl.imsglobal.org/spec/lti/claim/context": {"id": "course-1"}}
        forged = jwt.encode(claims, pem_pair()[0], algorithm="RS256",
                            headers={"kid": platform.kid})
        r = http.post("/lti/launch", data={"id_token": forged, "state": auth["state"][0]},
                      headers={"accept": "text/html"})
        assert r.status_code == 401, r.text
        assert "The launch was refused: its token&#39;s signature does not verify" in r.text \
            or "The launch was refused: its token's signature does not verify" in r.text
        # Nobody was signed in: the page's session is an anonymous one.
        from app.services import sessions

        session = sessions.decode(course_server.ctx, r.cookies.get(sessions.COOKIE))
        assert session is not None and session.token is None
