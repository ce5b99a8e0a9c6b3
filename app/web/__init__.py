"""The browser pages: problems, statements with math, the editor with Run and Submit, live
verdicts, submissions with their per-test table and error heatmap, accounts, leaderboard."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response

from app.web.views import STATIC_DIR


def install(app: FastAPI) -> None:
    """Mount the pages and their static files (/static) on the application."""
    from app.lti.routes import router as lti_router
    from app.web.course_routes import router as course_router
    from app.web.problem_routes import router as problem_router
    from app.web.routes import router

    app.include_router(problem_router)
    app.include_router(course_router)
    app.include_router(lti_router)
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")


def not_found_page(request: Request) -> Response:
    """The HTML 404 page, for browsers asking for a path that does not exist."""
    from app.web.routes import not_found

    return not_found(request)
