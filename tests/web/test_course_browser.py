"""Courses in a real headless Chromium against a real server and judge: an instructor creates
a course and an assignment with a late penalty; a learner joins by the invitation code and
submits before the due time and after it; the gradebook shows the late penalty, and the CSV
export it offers has the same figures."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.web.conftest import shot
from tests.web.test_browser import AC_CODE, WA_CODE, expect_title, replace_code, sign_up, verdict

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def course_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A server of this module's own: the `double` fixture problem only (the bundled ones
    are not needed), one embedded worker with the real sandbox."""
    from tests.web.conftest import require_browser
    from tests.web.liveserver import LiveServer

    require_browser()
    server = LiveServer(tmp_path_factory.mktemp("courses"), bundled=False).start()
    yield server
    server.stop()


@pytest.fixture
def page_of(chromium: Any, course_server: Any) -> Iterator[Any]:
    """Pages in fresh browser contexts on this module's server; JavaScript errors fail the
    test."""
    contexts: list[Any] = []
    errors: list[str] = []

    def make() -> Any:
        context = chromium.new_context(viewport={"width": 1280, "height": 900},
                                       base_url=course_server.url, accept_downloads=True)
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        return page

    yield make
    for c in contexts:
        c.close()
    assert not errors, errors


def local(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def submit(page: Any, code: str) -> str:
    page.goto("/problems/double")
    page.wait_for_selector(".cm-editor .cm-content")
    replace_code(page, code)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector('#verdict .result[data-status="done"] >> text=Submission, all tests',
                           timeout=30_000)
    return verdict(page)


def test_course_assignment_late_penalty_gradebook_and_csv(page_of):
    teacher = page_of()
    sign_up(teacher, "teacher1")
    teacher.get_by_role("link", name="Courses").click()
    expect_title(teacher, "Courses · tensorjudge")
    teacher.get_by_label("Title").fill("Deep learning, spring")
    teacher.get_by_role("button", name="Create the course").click()
    expect_title(teacher, "Deep learning, spring · tensorjudge")
    code = teacher.locator("#invite-code").inner_text().strip()
    teacher.get_by_role("link", name="New assignment").click()
    expect_title(teacher, "New assignment · tensorjudge")
    teacher.get_by_label("Title").fill("Doubling")
    teacher.locator('input[name="problem"][value="double"]').check()
    teacher.locator('input[name="points-double"]').fill("10")
    teacher.get_by_label("Late submissions count until").fill(
        local(datetime.now(UTC) + timedelta(days=14)))
    teacher.get_by_label("Late penalty, percent per day").fill("10")
    teacher.get_by_role("button", name="Create the assignment").click()
    expect_title(teacher, "Doubling · tensorjudge")
    assignment_url = teacher.url
    shot(teacher, "courses-01-assignment")

    learner = page_of()
    sign_up(learner, "learner1")
    learner.goto("/courses")
    learner.get_by_label("Invitation code").fill(code)
    learner.get_by_role("button", name="Join").click()
    expect_title(learner, "Deep learning, spring · tensorjudge")
    learner.get_by_role("link", name="Doubling").click()
    expect_title(learner, "Doubling · tensorjudge")
    assert learner.locator("#assignment-status").inner_text() == "open"
    assert submit(learner, WA_CODE) == "Wrong Answer"  # on time, no points

    # The instructor moves the due time to now: the next submission is a day late.
    teacher.goto(assignment_url)
    teacher.get_by_role("link", name="Edit").click()
    teacher.get_by_label("Due (UTC)").fill(local(datetime.now(UTC)))
    teacher.get_by_role("button", name="Save").click()
    expect_title(teacher, "Doubling · tensorjudge")
    assert teacher.locator("#assignment-status").inner_text() == "late"

    assert submit(learner, AC_CODE) == "Accepted"
    learner.goto(assignment_url)
    assert learner.locator("#my-total").inner_text() == "Your total: 9 of 10 points"
    shot(learner, "courses-02-learner-grade")

    teacher.goto(assignment_url)
    teacher.get_by_role("link", name="Gradebook").click()
    expect_title(teacher, "Gradebook: Doubling · tensorjudge")
    row = teacher.locator('#gradebook tr[data-user="learner1"]')
    cells = [c.strip() for c in row.locator("td").all_inner_texts()]
    assert cells == ["9 (−10% late)", "9", "1", "complete"], cells
    shot(teacher, "courses-03-gradebook")
    with teacher.expect_download() as info:
        teacher.get_by_role("link", name="Export CSV").click()
    download = info.value
    assert re.fullmatch(r"grades-\d+-doubling-\d{8}\.csv", download.suggested_filename)
    with open(download.path(), encoding="utf-8") as f:
        lines = list(csv.DictReader(io.StringIO(f.read())))
    assert len(lines) == 1
    got = lines[0]
    assert (got["Student"], got["SIS Login ID"]) == ("learner1", "learner1")
    assert (got["Double it [double] (10 pts)"], got["Total"], got["Max Points"]) == \
        ("9", "9", "10")
    assert (got["Percent"], got["Late Days"], got["Late Penalty %"], got["Status"]) == \
        ("90", "1", "10", "complete")
