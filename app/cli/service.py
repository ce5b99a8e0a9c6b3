"""`tensorjudge serve` and `tensorjudge worker`: running the service."""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import admin_context, fail, open_sandbox
from app.settings import Settings, get_settings

if TYPE_CHECKING:
    from fastapi import FastAPI

    from judge import SandboxPool


def serve_cmd(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    workers: Annotated[int | None, typer.Option(
        help="embedded judge workers (default TENSORJUDGE_WORKERS, else 1)")] = None,
) -> None:
    """Web pages, REST API and N embedded judge workers. Migrates the schema and loads the
    bundled problems that the database does not have yet."""
    from app.logs import setup_logging

    st = get_settings()
    setup_logging(st.log_level, st.log_format)
    n = st.workers if workers is None else workers
    # The sandbox pool opens while the service's modules load, and its first sandboxes start
    # as soon as it is open.
    opening = _open_pool(st) if n > 0 else None
    try:
        app = _app(st, n, opening)
    except BaseException:
        if opening is not None:  # what it started already goes with it
            with contextlib.suppress(BaseException):
                opening.result().close(drain_s=0)
        raise
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_config=None, timeout_graceful_shutdown=10)


def _open_pool(st: Settings) -> Future[SandboxPool]:
    """The pool, opened in a thread of its own; its start-up's first step begun at once."""
    opening: Future[SandboxPool] = Future()

    def run() -> None:
        try:
            pool = open_sandbox(pooled=True)
            import judge

            judge.begin_soon(pool, import_ahead=st.import_ahead)
            opening.set_result(pool)
        except BaseException as e:  # noqa: BLE001 - raised where the result is taken
            opening.set_exception(e)

    threading.Thread(target=run, name="open-sandbox", daemon=True).start()
    return opening


def _app(st: Settings, n: int, opening: Future[SandboxPool] | None) -> FastAPI:
    """The service's application over a migrated database with the bundled problems."""
    from app.context import Context
    from app.db import migrate
    from app.main import create_app
    from app.services import problems

    # A judge whose sandbox cannot open stops here, before it creates or changes anything.
    sandbox = opening.result() if opening is not None else None
    ctx = Context.create(st)
    try:
        migrate.upgrade(ctx.db)
    except Exception as e:  # noqa: BLE001
        fail(f"cannot migrate the database: {e}")
    added = problems.sync_bundled(ctx)
    for v in added:
        typer.echo(f"loaded bundled problem {v.slug} (version {v.number})", err=True)
    app = create_app(st, workers=n, sandbox=sandbox, warm_samples=True, ctx=ctx)
    _settle_heap()
    return app


def worker_cmd(
    concurrency: Annotated[int, typer.Option(help="submissions judged at once")] = 1,
) -> None:
    """A standalone judge worker against the configured database."""
    import signal

    from app.logs import setup_logging
    from app.worker import WorkerPool

    if concurrency < 1:
        fail("--concurrency must be at least 1")
    st = get_settings()
    sandbox = open_sandbox(pooled=True)
    ctx = admin_context()
    setup_logging(st.log_level, st.log_format)
    pool = WorkerPool(ctx, concurrency, kind="standalone", sandbox=sandbox)
    signals = 0

    def on_signal(signum, _frame) -> None:  # noqa: ANN001
        nonlocal signals
        signals += 1
        if signals > 1:  # a second signal: do not wait for the judgements in progress
            pool.abandon()
            sys.exit(128 + signum)
        pool.stopping.set()
        ctx.hub.queue_changed()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    pool.start()
    _settle_heap()
    while not pool.stopping.wait(1.0):
        pass
    # Judging in progress finishes; a second signal cuts it short (the lease covers that).
    pool.stop()


def _settle_heap() -> None:
    """What the process built to start (its imports, the app, the judge's pool) lives as long
    as it does: moved out of the cyclic collector's sight, a full collection no longer walks
    it. Such a collection took about 50 ms, with the GIL held, in whichever thread allocated
    at that moment: on a fresh machine, most of the first NumPy verdict's time, while every
    other thread of the process (the web requests among them) stood still."""
    gc.collect()
    gc.freeze()
