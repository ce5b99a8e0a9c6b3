"""The pages: thin handlers over app.services, rendered with Jinja2 (autoescaped: user code,
messages and output are always escaped). Submissions, accounts and the leaderboard here; the
problem pages in app/web/problem_routes.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from app.context import Context
from app.services import history, problems, progress, sessions, starters, submissions
from app.services.errors import NotFound, ServiceError
from app.web import session as web_session
from app.web import views

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"
templates = Jinja2Templates(directory=str(TEMPLATES_DIR))
templates.env.globals.update(asset=views.asset, verdict_words=views.verdict_words,
                             verdict_kind=views.verdict_kind, inline_js=views.INLINE_JS)
templates.env.filters.update(num=views.fmt_num, ms=views.fmt_ms, when=views.fmt_time,
                             iso=views.iso, pct=views.pct, g=lambda x: f"{x:g}",
                             pyval=views.fmt_value,
                             framework=lambda fw: starters.FRAMEWORK_WORDS.get(fw, fw))

router = APIRouter(include_in_schema=False)

HTML_404 = "Not found"


def ctx_of(request: Request) -> Context:
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


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _safe_next(value: str | None) -> str:
    """Only local paths: never `//host` or `http://...` (no open redirects)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def signin_redirect(request: Request) -> Response:
    nxt = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return web_session.apply_cookie(
        request, RedirectResponse(f"/signin?next={quote(nxt)}", status_code=303))


# --- submissions -------------------------------------------------------------------------


def _submission(request: Request, sid: int) -> dict[str, Any] | None:
    st = web_session.state(request)
    if st.user is None:
        return None
    try:
        return submissions.get(ctx_of(request), st.user, sid)
    except NotFound:
        return None


def _result(request: Request, view: dict[str, Any], wanted: str | None) -> dict[str, Any]:
    pending: list[str] = []
    if view["status"] != "done":
        pending = problems.test_names(ctx_of(request), view["problem"], view.get("version"),
                                      samples_only=view["mode"] == "run")
    return views.result_context(view, pending, wanted)


@router.get("/submissions", response_class=HTMLResponse)
def my_submissions(
    request: Request,
    problem: Annotated[str | None, Query()] = None,
    verdict: Annotated[str | None, Query()] = None,
    before: Annotated[int | None, Query()] = None,
) -> Response:
    """The user's history: framework, slowest test, score and verdict of each submission,
    filtered by problem and verdict."""
    st = web_session.state(request)
    if st.user is None:
        return signin_redirect(request)
    ctx = ctx_of(request)
    limit = 50
    verdict = verdict if verdict == history.PENDING or (verdict and views.is_verdict(verdict)) \
        else None
    items = history.list_history(ctx, st.user, problem=problem or None, verdict=verdict,
                                 limit=limit, before=before)
    titles = {p["slug"]: p["title"] for p in problems.list_problems(ctx)}
    return render(request, "submissions.html", rows=items, problem=problem or None,
                  verdict=verdict, titles=titles, verdicts=views.VERDICT_FILTERS,
                  next_before=items[-1]["id"] if len(items) == limit else None)


@router.get("/submissions/{sid}", response_class=HTMLResponse)
def submission_page(request: Request, sid: int,
                    test: Annotated[str | None, Query()] = None) -> Response:
    if web_session.state(request).user is None:
        return signin_redirect(request)
    view = _submission(request, sid)
    if view is None:
        return not_found(request, f"There is no submission #{sid} of yours.")
    try:
        title = problems.get_problem(ctx_of(request), view["problem"])["title"]
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


def _account_routes(kind: str, action: Callable[..., Any]) -> None:
    """GET and POST of /signin or /signup: the form, and on success a fresh session and a
    redirect, else the form again with the reason."""

    def page(request: Request,
             next: Annotated[str | None, Query()] = None) -> Response:  # noqa: A002
        return render(request, "account.html", kind=kind, next=_safe_next(next), error=None,
                      username="")

    def post(
        request: Request,
        username: Annotated[str, Form()] = "",
        password: Annotated[str, Form()] = "",
        csrf: Annotated[str, Form()] = "",
        next: Annotated[str, Form()] = "/",  # noqa: A002
    ) -> Response:
        try:
            web_session.check_form(request, csrf)
            user, session = action(ctx_of(request), username.strip(), password)
        except ServiceError as e:
            return render(request, "account.html", e.status, kind=kind, next=_safe_next(next),
                          error=e.message, username=username)
        web_session.replace(request, session, user)
        return web_session.apply_cookie(request, RedirectResponse(_safe_next(next), 303))

    router.add_api_route(f"/{kind}", page, methods=["GET"], response_class=HTMLResponse,
                         name=f"{kind}_page")
    router.add_api_route(f"/{kind}", post, methods=["POST"], name=kind)


_account_routes("signin", sessions.sign_in)
_account_routes("signup", sessions.sign_up)


@router.post("/signout")
def signout(request: Request, csrf: Annotated[str, Form()] = "") -> Response:
    ctx = ctx_of(request)
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
    rows = progress.leaderboard(ctx_of(request))
    return render(request, "leaderboard.html", rows=rows,
                  total=len(problems.list_problems(ctx_of(request))))
