"""The FastAPI application: `create_app(settings)`."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from app import web
from app.api import (
    assignments,
    courses,
    health,
    problem_details,
    problems,
    submissions,
    users,
)
from app.context import Context
from app.notify import PgListener
from app.services import samples
from app.settings import Settings, get_settings

log = logging.getLogger("tensorjudge.api")


def create_app(
    settings: Settings | None = None,
    *,
    workers: int = 0,
    sandbox: Any = None,
    judge_fn: Any = None,
    warm_samples: bool = False,
    ctx: Context | None = None,
) -> FastAPI:
    """The web application. `workers` embedded judge workers run as threads of this process
    while it serves. The schema must already be current (`tensorjudge serve` migrates)."""
    settings = settings or get_settings()
    ctx = ctx or Context.create(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = threading.Event()
        listener = None
        if ctx.db.is_postgres:
            listener = PgListener(ctx.db.libpq_conninfo(), ctx.hub, stop)
            listener.start()
            listener.ready.wait(5)
        pool = None
        if workers > 0:
            from app.worker import WorkerPool

            pool = WorkerPool(ctx, workers, kind="embedded", sandbox=sandbox,
                              judge_fn=judge_fn, listen=False)
            pool.start()
        if warm_samples:
            threading.Thread(target=samples.warm_samples, args=(ctx,),
                             name="warm-samples", daemon=True).start()
        app.state.pool = pool
        if settings.course_upkeep_seconds > 0:
            from app.course_upkeep import CourseUpkeep

            CourseUpkeep(ctx, stop, settings.course_upkeep_seconds).start()
        try:
            yield
        finally:
            stop.set()
            if pool is not None:
                pool.stop(timeout=30)
            if listener is not None:
                listener.join(timeout=2)

    app = FastAPI(
        title="tensorjudge",
        version="1",
        summary="An online judge for machine-learning implementation problems",
        lifespan=lifespan,
    )
    app.state.ctx = ctx
    app.state.registry = health.make_registry(ctx)
    # Every error in one shape; bodies beyond the limit get 413 as they arrive, whatever
    # Content-Length claims.
    problem_details.install(app, max_body_bytes=max(1 << 20, 8 * settings.max_code_bytes),
                            not_found_page=web.not_found_page)

    for r in (users.router, problems.router, submissions.router, courses.router,
              assignments.router, health.router):
        app.include_router(r)

    web.install(app)  # the pages ("/", "/problems/…", …) and /static

    return app
