"""The course pages: courses (join, create), a course (members, invitation code, its
assignments), an assignment (its problems and the learner's grade), and for staff its
gradebook with the CSV export, regrades with their preview, and similarity. Thin handlers
over app/services; every form carries the session's CSRF token."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from app.services import assignments, courses, gradebook, problems, regrades, similarity
from app.services.assignments import AssignmentSpec, ProblemPoints
from app.services.errors import Invalid, NotFound, ServiceError
from app.services.users import UserView
from app.web import session as web_session
from app.web.routes import ctx_of, error_page, not_found, render, signin_redirect

router = APIRouter(include_in_schema=False)


def _user(request: Request) -> UserView | None:
    return web_session.state(request).user


def _guarded(request: Request, fn: Callable[[UserView], Response]) -> Response:
    """Signed in, or to the sign-in page; a refusal of the services as an error page."""
    user = _user(request)
    if user is None:
        return signin_redirect(request)
    try:
        return fn(user)
    except NotFound as e:
        return not_found(request, e.message)
    except ServiceError as e:
        return error_page(request, e.status, "Not allowed", e.message)


def _redirect(request: Request, url: str) -> Response:
    return web_session.apply_cookie(request, RedirectResponse(url, status_code=303))


def parse_time(value: str, name: str) -> datetime:
    """A datetime-local field's value, in UTC."""
    try:
        t = datetime.fromisoformat(value.strip())
    except ValueError as e:
        raise Invalid(f"{name}: a date and time, e.g. 2026-03-01T09:00") from e
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def local(t: datetime | None) -> str:
    """A UTC datetime as a datetime-local field's value (seconds shown)."""
    return "" if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


# --- courses -----------------------------------------------------------------------------


@router.get("/courses", response_class=HTMLResponse)
def courses_page(request: Request) -> Response:
    return _guarded(request, lambda user: render(
        request, "courses.html", rows=courses.list_courses(ctx_of(request), user), error=None))


def _courses_form(request: Request, csrf: str, act: Callable[[UserView], int]) -> Response:
    def run(user: UserView) -> Response:
        try:
            web_session.check_form(request, csrf)
            cid = act(user)
        except ServiceError as e:
            return render(request, "courses.html", e.status,
                          rows=courses.list_courses(ctx_of(request), user), error=e.message)
        return _redirect(request, f"/courses/{cid}")

    return _guarded(request, run)


@router.post("/courses")
def create_course(request: Request, title: Annotated[str, Form()] = "",
                  csrf: Annotated[str, Form()] = "") -> Response:
    return _courses_form(request, csrf, lambda user: courses.create_course(
        ctx_of(request), user, title).id)


@router.post("/courses/join")
def join_course(request: Request, code: Annotated[str, Form()] = "",
                csrf: Annotated[str, Form()] = "") -> Response:
    return _courses_form(request, csrf, lambda user: courses.join(ctx_of(request), user,
                                                                  code).id)


@router.get("/courses/{cid}", response_class=HTMLResponse)
def course_page(request: Request, cid: int) -> Response:
    def page(user: UserView) -> Response:
        ctx = ctx_of(request)
        course = courses.get_course(ctx, user, cid)
        return render(request, "course.html", course=course,
                      rows=assignments.list_for_course(ctx, user, cid),
                      members=courses.members(ctx, user, cid) if course.is_staff else [],
                      role_words=courses.ROLE_WORDS, error=None)

    return _guarded(request, page)


@router.post("/courses/{cid}/members")
def add_member(request: Request, cid: int, username: Annotated[str, Form()] = "",
               role: Annotated[str, Form()] = "learner",
               csrf: Annotated[str, Form()] = "") -> Response:
    def act(user: UserView) -> Response:
        web_session.check_form(request, csrf)
        courses.add_member(ctx_of(request), user, cid, username.strip(), role)
        return _redirect(request, f"/courses/{cid}")

    return _guarded(request, act)


# --- assignments -------------------------------------------------------------------------


def _spec(form: FormData) -> AssignmentSpec:
    chosen = [str(v) for v in form.getlist("problem")]
    items = []
    for slug in chosen:
        try:
            points = float(str(form.get(f"points-{slug}") or "100"))
        except ValueError as e:
            raise Invalid(f"points of {slug}: a number") from e
        items.append(ProblemPoints(slug, points))
    late_until = str(form.get("late_until") or "").strip()
    try:
        penalty = float(str(form.get("late_penalty_pct") or "0"))
    except ValueError as e:
        raise Invalid("late penalty: a percentage per day") from e
    return AssignmentSpec(
        str(form.get("title") or ""), tuple(items),
        parse_time(str(form.get("opens_at") or ""), "opens"),
        parse_time(str(form.get("due_at") or ""), "due"),
        parse_time(late_until, "last day") if late_until else None, penalty,
        str(form.get("scoring") or "best"), str(form.get("feedback") or "full"))


def _form_page(request: Request, status: int, *, course_id: int, values: dict[str, Any],
               error: str | None, assignment_id: int | None = None) -> Response:
    return render(request, "assignment_form.html", status, course_id=course_id,
                  assignment_id=assignment_id, v=values, error=error,
                  catalogue=problems.list_problems(ctx_of(request)))


def _values(spec: AssignmentSpec | assignments.AssignmentView | None) -> dict[str, Any]:
    if spec is None:
        now = datetime.now(UTC).replace(microsecond=0)
        return {"title": "", "points": {}, "opens_at": local(now),
                "due_at": local(now + timedelta(days=7)), "late_until": "",
                "late_penalty_pct": 0, "scoring": "best", "feedback": "full"}
    return {"title": spec.title, "points": {p.slug: p.points for p in spec.problems},
            "opens_at": local(spec.opens_at), "due_at": local(spec.due_at),
            "late_until": local(spec.late_until), "late_penalty_pct": spec.late_penalty_pct,
            "scoring": spec.scoring, "feedback": spec.feedback}


def _form_values(form: FormData) -> dict[str, Any]:
    points = {str(s): form.get(f"points-{s}") for s in form.getlist("problem")}
    return {k: form.get(k) or "" for k in ("title", "opens_at", "due_at", "late_until",
                                           "late_penalty_pct", "scoring", "feedback")
            } | {"points": points}


@router.get("/courses/{cid}/assignments/new", response_class=HTMLResponse)
def new_assignment(request: Request, cid: int) -> Response:
    def page(user: UserView) -> Response:
        course = courses.get_course(ctx_of(request), user, cid)
        if course.role not in ("instructor", "admin"):
            return error_page(request, 403, "Not allowed",
                              "only the course's instructors may do this")
        return _form_page(request, 200, course_id=cid, values=_values(None), error=None)

    return _guarded(request, page)


@router.post("/courses/{cid}/assignments")
async def create_assignment(request: Request, cid: int) -> Response:
    form = await request.form()

    def act(user: UserView) -> Response:
        try:
            web_session.check_form(request, str(form.get("csrf") or ""))
            a = assignments.create(ctx_of(request), user, cid, _spec(form))
        except (Invalid, NotFound) as e:
            return _form_page(request, e.status, course_id=cid, values=_form_values(form),
                              error=e.message)
        return _redirect(request, f"/assignments/{a.id}")

    return await run_in_threadpool(_guarded, request, act)


@router.get("/assignments/{aid}/edit", response_class=HTMLResponse)
def edit_assignment(request: Request, aid: int) -> Response:
    def page(user: UserView) -> Response:
        a = assignments.get(ctx_of(request), user, aid)
        return _form_page(request, 200, course_id=a.course_id, values=_values(a), error=None,
                          assignment_id=aid)

    return _guarded(request, page)


@router.post("/assignments/{aid}/edit")
async def update_assignment(request: Request, aid: int) -> Response:
    form = await request.form()

    def act(user: UserView) -> Response:
        a = assignments.get(ctx_of(request), user, aid)
        try:
            web_session.check_form(request, str(form.get("csrf") or ""))
            assignments.update(ctx_of(request), user, aid, _spec(form))
        except (Invalid, NotFound) as e:
            return _form_page(request, e.status, course_id=a.course_id,
                              values=_form_values(form), error=e.message, assignment_id=aid)
        return _redirect(request, f"/assignments/{aid}")

    return await run_in_threadpool(_guarded, request, act)


@router.get("/assignments/{aid}", response_class=HTMLResponse)
def assignment_page(request: Request, aid: int) -> Response:
    def page(user: UserView) -> Response:
        ctx = ctx_of(request)
        a, mine = gradebook.my_grade(ctx, user, aid)
        course = courses.get_course(ctx, user, a.course_id)
        return render(request, "assignment.html", a=a, course=course,
                      mine=mine if course.role == "learner" else None, now=datetime.now(UTC))

    return _guarded(request, page)


@router.get("/assignments/{aid}/gradebook", response_class=HTMLResponse)
def gradebook_page(request: Request, aid: int) -> Response:
    def page(user: UserView) -> Response:
        a, rows = gradebook.gradebook(ctx_of(request), user, aid)
        return render(request, "gradebook.html", a=a, rows=rows)

    return _guarded(request, page)


@router.get("/assignments/{aid}/gradebook.csv")
def gradebook_csv(request: Request, aid: int) -> Response:
    def download(user: UserView) -> Response:
        a, rows = gradebook.gradebook(ctx_of(request), user, aid)
        return Response(gradebook.to_csv(a, rows), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition":
                                 f'attachment; filename="{gradebook.csv_filename(a)}"',
                                 "Cache-Control": "no-store"})

    return _guarded(request, download)


# --- regrades and similarity (staff) -----------------------------------------------------


@router.get("/assignments/{aid}/regrades", response_class=HTMLResponse)
def regrades_page(request: Request, aid: int,
                  run: Annotated[int | None, Query()] = None) -> Response:
    def page(user: UserView) -> Response:
        ctx = ctx_of(request)
        a = assignments.get(ctx, user, aid)
        runs = regrades.list_runs(ctx, user, aid)
        shown = next((r for r in runs if r.id == run), runs[0] if runs else None)
        return render(request, "regrades.html", a=a, runs=runs, shown=shown)

    return _guarded(request, page)


@router.post("/assignments/{aid}/regrades")
def start_regrade(request: Request, aid: int, problem: Annotated[str, Form()] = "",
                  csrf: Annotated[str, Form()] = "") -> Response:
    def act(user: UserView) -> Response:
        web_session.check_form(request, csrf)
        run = regrades.start(ctx_of(request), user, aid, problem)
        return _redirect(request, f"/assignments/{aid}/regrades?run={run.id}")

    return _guarded(request, act)


@router.post("/regrades/{rid}/apply")
def apply_regrade(request: Request, rid: int, csrf: Annotated[str, Form()] = "") -> Response:
    def act(user: UserView) -> Response:
        web_session.check_form(request, csrf)
        run = regrades.apply(ctx_of(request), user, rid)
        return _redirect(request, f"/assignments/{run.assignment_id}/regrades?run={rid}")

    return _guarded(request, act)


@router.get("/assignments/{aid}/similarity", response_class=HTMLResponse)
def similarity_page(request: Request, aid: int,
                    problem: Annotated[str | None, Query()] = None) -> Response:
    def page(user: UserView) -> Response:
        ctx = ctx_of(request)
        a = assignments.get(ctx, user, aid)
        slug = problem or (a.problems[0].slug if a.problems else "")
        return render(request, "similarity.html", a=a, slug=slug,
                      pairs=similarity.pairs(ctx, user, aid, slug))

    return _guarded(request, page)


@router.get("/assignments/{aid}/similarity/{first}/{second}", response_class=HTMLResponse)
def similarity_pair_page(request: Request, aid: int, first: int, second: int,
                         problem: Annotated[str, Query()] = "") -> Response:
    def page(user: UserView) -> Response:
        ctx = ctx_of(request)
        a = assignments.get(ctx, user, aid)
        p = similarity.pair(ctx, user, aid, problem, first, second)
        return render(request, "similarity_pair.html", a=a, p=p,
                      left=list(similarity.numbered(p.a.code, p.a.regions)),
                      right=list(similarity.numbered(p.b.code, p.b.regions)))

    return _guarded(request, page)


@router.post("/courses/{cid}/roster")
def sync_roster(request: Request, cid: int, csrf: Annotated[str, Form()] = "") -> Response:
    """The learning platform's roster (an LTI course's instructors)."""
    def act(user: UserView) -> Response:
        from app.lti.launches import sync_roster as sync

        web_session.check_form(request, csrf)
        sync(ctx_of(request), user, cid)
        return _redirect(request, f"/courses/{cid}")

    return _guarded(request, act)
