"""The pages: thin handlers over app.services, rendered with Jinja2 (autoescaped: user code,
messages and output are always escaped)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from app.context import Context
from app.services import problems, progress, samples, sessions, submissions
from app.services.errors import NotFound, ServiceError
from app.web import session as web_session
from app.web import views
from app.web.markdown import render_statement, strip_title

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"
templates = Jinja2Templates(directory=str(TEMPLATES_DIR))
templates.env.globals.update(asset=views.asset, verdict_words=views.verdict_words,
                             verdict_kind=views.verdict_kind, inline_js=views.INLINE_JS)
templates.env.filters.update(num=views.fmt_num, ms=views.fmt_ms, when=views.fmt_time,
                             iso=views.iso, pct=views.pct, g=lambda x: f"{x:g}",
                             pyval=views.fmt_value)

router = APIRouter(include_in_schema=False)

HTML_404 = "Not found"


def _ctx(request: Request) -> Context:
    return request.app.state.ctx


def render(request: Request, template: str, status_code: int = 200, **context: Any
           ) -> Response:
    st = web_session.state(request)
    context.update(request=request, user=st.user, csrf=st.session.csrf)
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    response.headers.setdefault("Cache-Control", "no-store")
    response.headers.update(views.SECURITY_HEADERS)
    return web_session.apply_cookie(request, response)


def error_page(request: Request, status_code: int, title: str, message: str) -> Response:
    return render(request, "error.html", status_code, title=title, message=message)


def not_found(request: Request, message: str = "There is no such page.") -> Response:
    return error_page(request, 404, HTML_404, message)


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _safe_next(value: str | None) -> str:
    """Only local paths: never `//host` or `http://...` (no open redirects)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def _signin_redirect(request: Request) -> Response:
    nxt = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return web_session.apply_cookie(
        request, RedirectResponse(f"/signin?next={quote(nxt)}", status_code=303))


# --- problems ----------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
def problem_list(request: Request) -> Response:
    ctx = _ctx(request)
    user = web_session.state(request).user
    rows = problems.list_problems(ctx)
    stats = progress.problem_stats(ctx)
    solved = progress.solved_slugs(ctx, user)
    tried = progress.attempted_slugs(ctx, user)
    rows.sort(key=lambda p: (views.DIFFICULTY_ORDER.get(p["difficulty"], 9), p["title"]))
    for p in rows:
        st = stats.get(p["slug"], {})
        p["stats"] = st
        p["solved"] = p["slug"] in solved
        p["tried"] = p["slug"] in tried and not p["solved"]
    return render(request, "problems.html", problems=rows, solved_count=len(solved))


def _problem_context(request: Request, slug: str) -> dict[str, Any]:
    ctx = _ctx(request)
    user = web_session.state(request).user
    problem = problems.get_problem(ctx, slug)
    stats = progress.problem_stats(ctx).get(slug, {})
    recent = (submissions.list_for(ctx, user, problem=slug, limit=8) if user else [])
    solution = (progress.solution(ctx, user, slug)
                if progress.may_see_solution(ctx, user, slug) else None)
    return {
        "problem": problem,
        "statement_html": render_statement(strip_title(problem["statement"], problem["title"])),
        "starter": problem["starter"] or views.default_starter(problem["entry_point"],
                                                               problem["signature"]),
        "samples": samples.ready_samples(ctx, slug),
        "stats": stats,
        "solved": progress.has_solved(ctx, user, slug),
        "solution": solution,
        "recent": recent,
        "sample_names": problems.test_names(ctx, slug, samples_only=True),
        "test_names": problems.test_names(ctx, slug),
    }


@router.get("/problems/{slug}", response_class=HTMLResponse)
def problem_page(request: Request, slug: str) -> Response:
    try:
        context = _problem_context(request, slug)
    except NotFound:
        return not_found(request, f"There is no problem “{slug}”.")
    return render(request, "problem.html", **context, code=None, error=None)


@router.get("/problems/{slug}/samples", response_class=HTMLResponse)
def problem_samples(request: Request, slug: str) -> Response:
    """The samples as an HTML fragment (computed on first use: it runs the reference)."""
    try:
        problem = samples.problem_with_samples(_ctx(request), slug)
    except NotFound:
        return not_found(request)
    return render(request, "_samples.html", samples=problem["samples"], problem=problem)


@router.get("/problems/{slug}/solution", response_class=HTMLResponse)
def problem_solution(request: Request, slug: str) -> Response:
    """The reference solution as an HTML fragment, once the user has solved the problem."""
    user = web_session.state(request).user
    try:
        code = progress.solution(_ctx(request), user, slug)
    except NotFound:
        return not_found(request)
    except ServiceError as e:
        return error_page(request, e.status, "Not yet", e.message)
    return render(request, "_solution.html", solution=code)


@router.post("/problems/{slug}/submit")
def submit(
    request: Request, slug: str,
    code: Annotated[str, Form()] = "",
    mode: Annotated[str, Form()] = "submit",
    csrf: Annotated[str, Form()] = "",
) -> Response:
    """Run (samples) or Submit (all tests). The page's script posts this with fetch and gets
    JSON; without JavaScript the browser posts the form and is sent to the submission."""
    ctx = _ctx(request)
    st = web_session.state(request)
    try:
        web_session.check_form(request, csrf)
        if st.user is None:
            raise _SignInFirst()
        out = submissions.create(ctx, st.user, slug, code, mode)
    except _SignInFirst:
        if _wants_json(request):
            return JSONResponse({"detail": "sign in to run or submit code"}, 401)
        return web_session.apply_cookie(request, RedirectResponse(
            f"/signin?next={quote(f'/problems/{slug}')}", status_code=303))
    except ServiceError as e:
        if _wants_json(request):
            headers = {"Retry-After": str(int(e.retry_after))} if e.retry_after else {}
            return JSONResponse({"detail": e.message}, e.status, headers=headers)
        if isinstance(e, NotFound):
            return not_found(request, e.message)
        try:
            context = _problem_context(request, slug)
        except NotFound:
            return not_found(request)
        return render(request, "problem.html", e.status, **context, code=code, error=e.message)
    url = f"/submissions/{out['id']}"
    if _wants_json(request):
        return web_session.apply_cookie(request, JSONResponse(
            {"id": out["id"], "status": out["status"], "mode": mode, "url": url,
             "events": f"/api/v1/submissions/{out['id']}/events"}, status_code=202))
    return web_session.apply_cookie(request, RedirectResponse(url, status_code=303))


class _SignInFirst(Exception):
    pass


# --- submissions -------------------------------------------------------------------------


def _submission(request: Request, sid: int) -> dict[str, Any] | None:
    st = web_session.state(request)
    if st.user is None:
        return None
    try:
        return submissions.get(_ctx(request), st.user, sid)
    except NotFound:
        return None


def _result(request: Request, view: dict[str, Any], wanted: str | None) -> dict[str, Any]:
    pending: list[str] = []
    if view["status"] != "done":
        pending = problems.test_names(_ctx(request), view["problem"], view.get("version"),
                                      samples_only=view["mode"] == "run")
    return views.result_context(view, pending, wanted)


@router.get("/submissions", response_class=HTMLResponse)
def my_submissions(
    request: Request,
    problem: Annotated[str | None, Query()] = None,
    before: Annotated[int | None, Query()] = None,
) -> Response:
    st = web_session.state(request)
    if st.user is None:
        return _signin_redirect(request)
    limit = 50
    items = submissions.list_for(_ctx(request), st.user, problem=problem or None,
                                 limit=limit, before=before)
    return render(request, "submissions.html", items=items, problem=problem,
                  next_before=items[-1]["id"] if len(items) == limit else None)


@router.get("/submissions/{sid}", response_class=HTMLResponse)
def submission_page(request: Request, sid: int,
                    test: Annotated[str | None, Query()] = None) -> Response:
    if web_session.state(request).user is None:
        return _signin_redirect(request)
    view = _submission(request, sid)
    if view is None:
        return not_found(request, f"There is no submission #{sid} of yours.")
    try:
        title = problems.get_problem(_ctx(request), view["problem"])["title"]
    except NotFound:
        title = view["problem"]
    return render(request, "submission.html", sub=view, r=_result(request, view, test),
                  problem_title=title)


@router.get("/submissions/{sid}/result", response_class=HTMLResponse)
def submission_result(request: Request, sid: int,
                      test: Annotated[str | None, Query()] = None) -> Response:
    """The result panel alone (the live pages fetch it when the status changes)."""
    view = _submission(request, sid)
    if view is None:
        return not_found(request)
    return render(request, "_result.html", r=_result(request, view, test), standalone=True)


# --- accounts ----------------------------------------------------------------------------


@router.get("/signin", response_class=HTMLResponse)
def signin_page(request: Request, next: Annotated[str | None, Query()] = None) -> Response:  # noqa: A002
    return render(request, "signin.html", next=_safe_next(next), error=None, username="")


@router.post("/signin")
def signin(
    request: Request,
    username: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    csrf: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",  # noqa: A002
) -> Response:
    return _account_form(request, "signin.html", sessions.sign_in, username, password, csrf,
                         next)


@router.get("/signup", response_class=HTMLResponse)
def signup_page(request: Request, next: Annotated[str | None, Query()] = None) -> Response:  # noqa: A002
    return render(request, "signup.html", next=_safe_next(next), error=None, username="")


@router.post("/signup")
def signup(
    request: Request,
    username: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    csrf: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",  # noqa: A002
) -> Response:
    return _account_form(request, "signup.html", sessions.sign_up, username, password, csrf,
                         next)


def _account_form(request: Request, template: str, action: Any, username: str, password: str,
                  csrf: str, next_url: str) -> Response:
    """Sign in or sign up from a form: on success a fresh session and a redirect, else the
    form again with the reason."""
    try:
        web_session.check_form(request, csrf)
        user, session = action(_ctx(request), username.strip(), password)
    except ServiceError as e:
        return render(request, template, e.status, next=_safe_next(next_url), error=e.message,
                      username=username)
    web_session.replace(request, session, user)
    return web_session.apply_cookie(request, RedirectResponse(_safe_next(next_url), 303))


@router.post("/signout")
def signout(request: Request, csrf: Annotated[str, Form()] = "") -> Response:
    ctx = _ctx(request)
    try:
        web_session.check_form(request, csrf)
    except ServiceError as e:
        return error_page(request, e.status, "Not signed out", e.message)
    session = sessions.sign_out(ctx, web_session.state(request).session)
    web_session.replace(request, session, None)
    return web_session.apply_cookie(request, RedirectResponse("/", 303))


# --- the leaderboard ---------------------------------------------------------------------


@router.get("/leaderboard", response_class=HTMLResponse)
def leaderboard(request: Request) -> Response:
    rows = progress.leaderboard(_ctx(request))
    return render(request, "leaderboard.html", rows=rows,
                  total=len(problems.list_problems(_ctx(request))))
