"""The course commands: a course and its members, an assignment, the gradebook's CSV, an
LTI registration; refusals with the reason and exit status 1."""

from __future__ import annotations

from app.lti import registrations
from app.services import courses, users
from tests.app.test_cli import run  # noqa: F401 - the command line fixture
from tests.app.tj_testlib import PASSWORD


def test_courses_assignments_grades_and_lti(run, ctx):  # noqa: F811
    for name in ("prof", "stud"):
        users.create_user(ctx, name, PASSWORD)
    out = run("courses", "create", "Spring ML", "--instructor", "prof")
    assert "course" in out and "invitation code" in out
    run("courses", "add", "Spring ML", "stud")
    assert "stud" in run("courses", "members", "Spring ML")
    cid = courses.find_course(ctx, "Spring ML")
    code = run("courses", "invite", str(cid)).strip()
    assert code == courses.get_course(ctx, courses.ADMIN, cid).invite_code
    out = run("assignments", "create", "Spring ML", "Week 1", "--problem", "double:20",
              "--due", "2030-01-01T00:00Z", "--late-until", "2030-01-03T00:00Z",
              "--penalty", "5", "--exam")
    assert "20 points" in out
    aid = int(out.split()[1])
    assert "Week 1" in run("assignments", "list", "Spring ML")
    lines = run("assignments", "grades", str(aid), "--csv", "-").splitlines()
    assert lines[0].startswith("Student,ID,SIS Login ID,LTI User ID,Double it [double]")
    row = lines[1].split(",")
    assert row[0] == "stud" and row[4:7] == ["0", "0", "20"] and row[-1] == "complete"
    # Refusals: the reason, exit status 1.
    out = run("assignments", "create", "Spring ML", "Bad", "--problem", "double",
              "--due", "2020-01-01", "--opens", "2021-01-01", code=1)
    assert "due_at: before opens_at" in out
    assert "no course 'Nope'" in run("courses", "members", "Nope", code=1)
    out = run("lti", "register", "--issuer", "https://lms.example", "--client-id", "c1",
              "--login-url", "https://lms.example/auth", "--token-url",
              "https://lms.example/token", "--jwks-url", "https://lms.example/jwks",
              "--deployment", "1")
    assert "registration" in out and "/lti/login" in out
    assert [r.client_id for r in registrations.list_registrations(ctx)] == ["c1"]
    assert "https://lms.example" in run("lti", "list")
