"""The problem pages: the list (filtered by tag), a problem's statement, samples, starters,
downloads and editor, the fragments its script fetches, and Run/Submit."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from app.api.deps import ArrivalDep
from app.api.problem_details import problem as problem_response
from app.services import history, problems, progress, samples, starters, submissions
from app.services.errors import NotFound, ServiceError
from app.web import session as web_session
from app.web import views
from app.web.markdown import render_statement, strip_title
from app.web.routes import ctx_of, error_page, not_found, render, wants_json

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def problem_list(request: Request, tag: Annotated[str | None, Query()] = None) -> Response:
    ctx = ctx_of(request)
    user = web_session.state(request).user
    rows = problems.list_problems(ctx)
    all_count = len(rows)
    if tag:
        rows = [p for p in rows if tag in p["tags"]]
    stats = progress.problem_stats(ctx)
    solved = progress.solved_slugs(ctx, user)
    tried = progress.attempted_slugs(ctx, user)
    rows.sort(key=lambda p: (views.DIFFICULTY_ORDER.get(p["difficulty"], 9), p["title"]))
    for p in rows:
        p["stats"] = stats.get(p["slug"], {})
        p["solved"] = p["slug"] in solved
        p["tried"] = p["slug"] in tried and not p["solved"]
    return render(request, "problems.html", rows=rows, tag=tag, all_count=all_count,
                  solved_count=len(solved))


def _live_context(request: Request, slug: str) -> dict[str, Any]:
    """What changes on a problem's page when a verdict arrives: its header (solved mark,
    acceptance, attempts) and the user's recent submissions."""
    ctx = ctx_of(request)
    user = web_session.state(request).user
    return {
        "problem": problems.get_problem(ctx, slug),
        "stats": progress.problem_stats(ctx).get(slug, {}),
        "solved": progress.has_solved(ctx, user, slug),
        "attempts": history.attempts(ctx, user, slug),
        "recent": (submissions.list_for(ctx, user, problem=slug, limit=8) if user else []),
    }


def _problem_context(request: Request, slug: str) -> dict[str, Any]:
    ctx = ctx_of(request)
    user = web_session.state(request).user
    context = _live_context(request, slug)
    problem = context["problem"]
    by_framework = starters.starters_of(ctx, slug)
    starter = next(iter(by_framework.values()), None) or views.default_starter(
        problem["entry_point"], problem["signature"])
    solution = (progress.solution(ctx, user, slug)
                if progress.may_see_solution(ctx, user, slug) else None)
    return {
        **context,
        "statement_html": render_statement(strip_title(problem["statement"], problem["title"])),
        "starter": starter,
        "starters": by_framework,
        "framework_words": starters.FRAMEWORK_WORDS,
        "samples": samples.ready_samples(ctx, slug),
        "solution": solution,
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


@router.get("/problems/{slug}/live", response_class=HTMLResponse)
def problem_live(request: Request, slug: str) -> Response:
    """The header and recent submissions of a problem's page, fetched again by its script
    when a verdict arrives."""
    try:
        context = _live_context(request, slug)
    except NotFound:
        return not_found(request)
    return render(request, "_problem_live.html", **context)


@router.get("/problems/{slug}/samples", response_class=HTMLResponse)
def problem_samples(request: Request, slug: str) -> Response:
    """The samples as an HTML fragment (computed on first use: it runs the reference)."""
    try:
        problem = samples.problem_with_samples(ctx_of(request), slug)
    except NotFound:
        return not_found(request)
    return render(request, "_samples.html", samples=problem["samples"], problem=problem)


@router.get("/problems/{slug}/solution", response_class=HTMLResponse)
def problem_solution(request: Request, slug: str) -> Response:
    """The reference solution as an HTML fragment, once the user has solved the problem."""
    user = web_session.state(request).user
    try:
        code = progress.solution(ctx_of(request), user, slug)
    except NotFound:
        return not_found(request)
    except ServiceError as e:
        return error_page(request, e.status, "Not yet", e.message)
    return render(request, "_solution.html", solution=code)


@router.post("/problems/{slug}/submit")
def submit(
    arrival: ArrivalDep, request: Request, slug: str,
    code: Annotated[str, Form()] = "",
    mode: Annotated[str, Form()] = "submit",
    csrf: Annotated[str, Form()] = "",
) -> Response:
    """Run (samples) or Submit (all tests). The page's script posts this with fetch and gets
    JSON (errors as problem details, like the API's); without JavaScript the browser posts
    the form and is sent to the submission."""
    ctx = ctx_of(request)
    st = web_session.state(request)
    try:
        web_session.check_form(request, csrf)
        if st.user is None:
            raise _SignInFirst()
        out = submissions.create(ctx, st.user, slug, code, mode, arrival)
    except _SignInFirst:
        if wants_json(request):
            return problem_response(401, "sign in to run or submit code")
        return web_session.apply_cookie(request, RedirectResponse(
            f"/signin?next={quote(f'/problems/{slug}')}", status_code=303))
    except ServiceError as e:
        if wants_json(request):
            headers = {"Retry-After": str(int(e.retry_after))} if e.retry_after else {}
            return problem_response(e.status, e.message, headers=headers)
        if isinstance(e, NotFound):
            return not_found(request, e.message)
        try:
            context = _problem_context(request, slug)
        except NotFound:
            return not_found(request)
        return render(request, "problem.html", e.status, **context, code=code, error=e.message)
    url = f"/submissions/{out['id']}"
    if wants_json(request):
        return web_session.apply_cookie(request, JSONResponse(
            {"id": out["id"], "status": out["status"], "mode": mode, "url": url,
             "events": f"/api/v1/submissions/{out['id']}/events"}, status_code=202))
    return web_session.apply_cookie(request, RedirectResponse(url, status_code=303))


class _SignInFirst(Exception):
    pass
