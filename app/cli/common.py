"""What the commands share: failing with a message, a sandbox, the service context."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from app.settings import get_settings

if TYPE_CHECKING:
    from app.context import Context
    from judge import SandboxPool


def fail(msg: str, code: int = 2) -> NoReturn:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code)


def open_sandbox(pooled: bool = False) -> SandboxPool:
    """A fresh sandbox per judgement for one-off commands; a pool of prepared ones for
    workers."""
    import judge

    try:
        return judge.open_sandbox(get_settings().sandbox_config(), pooled=pooled)
    except judge.SandboxUnavailable as e:
        fail(str(e))


def find_package(slug: str) -> Path:
    root = get_settings().problems_dir
    path = root / slug
    if not (path / "problem.toml").is_file():
        from judge import discover

        known = ", ".join(p.name for p in discover(root)) if root.is_dir() else "none"
        fail(f"no problem {slug!r} in {root} (known: {known})")
    return path


def database_configured() -> bool:
    st = get_settings()
    return bool(st.database_url) or (st.data_dir / "tensorjudge.db").is_file()


def admin_context() -> Context:
    """The service context for an admin command. The embedded database is created or
    migrated on the spot; a configured one must already be current (`db upgrade`)."""
    from app.context import Context
    from app.db import migrate
    from app.logs import setup_logging

    st = get_settings()
    setup_logging("WARNING", "text")
    ctx = Context.create(st)
    try:
        if st.is_embedded_database:
            migrate.upgrade(ctx.db)
        else:
            migrate.require_current(ctx.db)
    except migrate.SchemaOutdated as e:
        fail(str(e))
    except Exception as e:  # noqa: BLE001
        fail(f"cannot use the database: {e}")
    return ctx


def service_call(fn, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
    """Call a service function; a refusal becomes an error message and exit status 1."""
    from app.services.archives import PackageRejected
    from app.services.errors import ServiceError

    try:
        return fn(*args, **kwargs)
    except PackageRejected as e:
        fail(str(e), 1)
    except ServiceError as e:
        fail(e.message, 1)
