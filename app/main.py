"""The FastAPI application: `create_app(settings)`."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from app import web
from app.api import health, problems, submissions, users
from app.context import Context
from app.notify import PgListener
from app.services import samples
from app.services.errors import ServiceError
from app.settings import Settings, get_settings

log = logging.getLogger("tensorjudge.api")


def _service_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    headers = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(int(max(1, round(exc.retry_after))))
    if exc.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse({"detail": exc.message}, status_code=exc.status, headers=headers)


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
        try:
            yield
        finally:
            stop.set()
            if pool is not None:
                pool.stop(timeout=30)
            if listener is not None:
                listener.join(timeout=2)

    app = FastAPI(
        # Bodies beyond this get 413 as they arrive, whatever Content-Length claims.
        max_body_size=max(1 << 20, 8 * settings.max_code_bytes),
        title="tensorjudge",
        version="1",
        summary="An online judge for machine-learning implementation problems",
        lifespan=lifespan,
    )
    app.state.ctx = ctx
    app.state.registry = health.make_registry(ctx)
    app.add_exception_handler(ServiceError, _service_error)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")}
                  for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # A body that is not UTF-8 JSON: malformed JSON is a 422 like any bad body.
            return JSONResponse({"detail": "the body is not valid UTF-8 JSON"}, 422)
        if (exc.status_code == 404 and not request.url.path.startswith("/api/")
                and "text/html" in request.headers.get("accept", "")):
            # A browser on a path that does not exist gets the HTML page.
            return await run_in_threadpool(web.not_found_page, request)
        return await http_exception_handler(request, exc)

    for r in (users.router, problems.router, submissions.router, health.router):
        app.include_router(r)

    web.install(app)  # the pages ("/", "/problems/…", …) and /static

    return app
