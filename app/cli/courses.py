"""`tensorjudge courses ...` and `tensorjudge assignments ...`: courses, their members and
assignments, grades, regrades and similarity, as an administrator."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from app.cli.common import admin_context, fail, service_call

courses_cli = typer.Typer(no_args_is_help=True, help="Courses and their members.")
assignments_cli = typer.Typer(no_args_is_help=True,
                              help="Assignments: grades, regrades, similarity.")


def _time(value: str, name: str) -> datetime:
    """ISO 8601; without a zone it is UTC."""
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        fail(f"{name}: not an ISO 8601 time ({value!r}), e.g. 2026-03-01T09:00Z")
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t


@courses_cli.command("create")
def courses_create(
    title: Annotated[str, typer.Argument(help="the course's title")],
    instructor: Annotated[str | None, typer.Option(help="username of its instructor")] = None,
) -> None:
    """Create a course; prints its id and invitation code."""
    from app.services import courses

    ctx = admin_context()
    c = service_call(courses.create_course, ctx, courses.ADMIN, title, instructor=instructor)
    typer.echo(f"course {c.id} created: {c.title} (invitation code {c.invite_code})")


@courses_cli.command("list")
def courses_list() -> None:
    """Every course: id, members, invitation code, title."""
    from app.services import courses

    ctx = admin_context()
    for c in courses.list_courses(ctx, courses.ADMIN, all_courses=True):
        typer.echo(f"{c.id:6} {c.members:5} members  {c.invite_code:14} "
                   f"{'LTI ' if c.lti else ''}{c.title}")


@courses_cli.command("members")
def courses_members(course: Annotated[str, typer.Argument(help="id or exact title")]) -> None:
    """A course's members and their roles."""
    from app.services import courses

    ctx = admin_context()
    cid = service_call(courses.find_course, ctx, course)
    for m in service_call(courses.members, ctx, courses.ADMIN, cid):
        typer.echo(f"{m.username:32} {m.role:10} {m.joined_via}")


@courses_cli.command("add")
def courses_add(
    course: Annotated[str, typer.Argument(help="id or exact title")],
    username: Annotated[str, typer.Argument()],
    role: Annotated[str, typer.Option(help="instructor, ta or learner")] = "learner",
) -> None:
    """Add a user to a course (or change a member's role)."""
    from app.services import courses

    ctx = admin_context()
    cid = service_call(courses.find_course, ctx, course)
    m = service_call(courses.add_member, ctx, courses.ADMIN, cid, username, role)
    typer.echo(f"{m.username} is {m.role} of course {cid}")


@courses_cli.command("invite")
def courses_invite(
    course: Annotated[str, typer.Argument(help="id or exact title")],
    renew: Annotated[bool, typer.Option("--renew", help="a new code; the old stops working")]
    = False,
) -> None:
    """Print a course's invitation code (learners join with it on /courses)."""
    from app.services import courses

    ctx = admin_context()
    cid = service_call(courses.find_course, ctx, course)
    if renew:
        typer.echo(service_call(courses.renew_invite, ctx, courses.ADMIN, cid))
    else:
        typer.echo(service_call(courses.get_course, ctx, courses.ADMIN, cid).invite_code)


@assignments_cli.command("create")
def assignments_create(
    course: Annotated[str, typer.Argument(help="course id or exact title")],
    title: Annotated[str, typer.Argument()],
    problem: Annotated[list[str], typer.Option(
        "--problem", help="SLUG or SLUG:POINTS (default 100 points); repeatable")],
    due: Annotated[str, typer.Option(help="due time, ISO 8601 (UTC without a zone)")],
    opens: Annotated[str | None, typer.Option(help="opening time (default now)")] = None,
    late_until: Annotated[str | None, typer.Option(
        help="the last moment late submissions count")] = None,
    penalty: Annotated[float, typer.Option(help="late penalty, percent per day")] = 0.0,
    scoring: Annotated[str, typer.Option(help="best or last")] = "best",
    exam: Annotated[bool, typer.Option("--exam", help="verdicts only until it closes")] = False,
) -> None:
    """Create an assignment."""
    from app.services import assignments, courses

    items = []
    for p in problem:
        slug, _, points = p.partition(":")
        try:
            items.append(assignments.ProblemPoints(slug, float(points or 100)))
        except ValueError:
            fail(f"--problem {p!r}: SLUG or SLUG:POINTS")
    spec = assignments.AssignmentSpec(
        title, tuple(items), _time(opens, "--opens") if opens else datetime.now(UTC),
        _time(due, "--due"), _time(late_until, "--late-until") if late_until else None,
        penalty, scoring, "exam" if exam else "full")
    ctx = admin_context()
    cid = service_call(courses.find_course, ctx, course)
    a = service_call(assignments.create, ctx, courses.ADMIN, cid, spec)
    typer.echo(f"assignment {a.id} created: {a.title} ({len(a.problems)} problems, "
               f"{a.max_points:g} points, due {a.due_at.isoformat()})")


@assignments_cli.command("list")
def assignments_list(course: Annotated[str, typer.Argument(help="id or exact title")]) -> None:
    """A course's assignments."""
    from app.services import assignments, courses

    ctx = admin_context()
    cid = service_call(courses.find_course, ctx, course)
    for a in service_call(assignments.list_for_course, ctx, courses.ADMIN, cid):
        typer.echo(f"{a.id:6} {a.status():8} due {a.due_at:%Y-%m-%d %H:%M} UTC  "
                   f"{a.feedback:4} {a.title}")


@assignments_cli.command("grades")
def assignments_grades(
    assignment: Annotated[int, typer.Argument(help="assignment id")],
    csv: Annotated[Path | None, typer.Option(help="write the CSV export here ('-': stdout)")]
    = None,
) -> None:
    """The gradebook: a line per learner, or the CSV export."""
    from app.services import courses, gradebook

    ctx = admin_context()
    a, rows = service_call(gradebook.gradebook, ctx, courses.ADMIN, assignment)
    if csv is not None:
        text = gradebook.to_csv(a, rows)
        if str(csv) == "-":
            typer.echo(text, nl=False)
        else:
            csv.write_text(text, encoding="utf-8")
            typer.echo(f"{len(rows)} learners written to {csv}")
        return
    for r in rows:
        typer.echo(f"{r.username:32} {r.points:8g} / {r.max_points:g}  late {r.late_days} d  "
                   f"{r.status}")


@assignments_cli.command("regrade")
def assignments_regrade(
    assignment: Annotated[int, typer.Argument(help="assignment id")],
    problem: Annotated[str, typer.Option(help="the problem whose package changed")],
    apply: Annotated[int | None, typer.Option(
        help="apply this regrade (its preview must be complete)")] = None,
    wait: Annotated[float, typer.Option(help="seconds to wait for the preview")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Preview a regrade (the flips it would make), or apply one with --apply RUN."""
    from app.services import courses, regrades

    ctx = admin_context()
    if apply is not None:
        run = service_call(regrades.apply, ctx, courses.ADMIN, apply)
    else:
        run = service_call(regrades.start, ctx, courses.ADMIN, assignment, problem)
        deadline = time.monotonic() + wait
        while not run.done and time.monotonic() < deadline:
            time.sleep(0.5)
            run = service_call(regrades.get, ctx, courses.ADMIN, run.id)
    if as_json:
        from app.api.course_schemas import RegradeOut

        typer.echo(json.dumps(RegradeOut.of(run).model_dump(), indent=2))
        return
    typer.echo(f"regrade {run.id} of {run.problem} (version {run.version}): "
               f"{'complete' if run.done else 'being judged'}, {len(run.flips)} flips")
    for i in run.items:
        mark = "FLIP" if i.flips else "    "
        typer.echo(f"  {mark} #{i.submission_id:<6} {i.username:24} {i.before_verdict or '-':4}"
                   f" -> {i.preview_verdict or i.preview_status}")


@assignments_cli.command("similarity")
def assignments_similarity(
    assignment: Annotated[int, typer.Argument(help="assignment id")],
    problem: Annotated[str, typer.Option()],
    limit: Annotated[int, typer.Option()] = 20,
) -> None:
    """The most similar pairs of accepted submissions of a problem."""
    from app.services import courses, similarity

    ctx = admin_context()
    for p in service_call(similarity.pairs, ctx, courses.ADMIN, assignment, problem, limit):
        typer.echo(f"{p.similarity:6.1%}  #{p.a.submission_id} {p.a.username}  "
                   f"#{p.b.submission_id} {p.b.username}")
