"""Fixtures of the service tests: every database test runs on SQLite and on PostgreSQL.

PostgreSQL: a fresh database is created on the server at TENSORJUDGE_TEST_PG_URL (default
the local server's `test` database, used only to create and drop it) for the test session and
dropped afterwards. Without a server those tests are skipped, unless
CI or TENSORJUDGE_TEST_REQUIRE_PG=1 is set, which makes that a failure.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.context import Context
from app.db import migrate as migrations
from app.main import create_app
from app.services import problems, users
from tests.app.tj_testlib import (
    DOUBLE,
    PASSWORD,
    PG_ADMIN_URL,
    login,
    make_settings,
    register,
    wipe,
)


def _libpq(url: str) -> str:
    from sqlalchemy import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _pg_reachable() -> str | None:
    import psycopg

    try:
        with psycopg.connect(_libpq(PG_ADMIN_URL), connect_timeout=3):
            return None
    except Exception as e:  # noqa: BLE001
        return str(e)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    import psycopg
    from sqlalchemy import make_url

    why = _pg_reachable()
    if why is not None:
        msg = f"no PostgreSQL server at {PG_ADMIN_URL}: {why}"
        if os.environ.get("CI") or os.environ.get("TENSORJUDGE_TEST_REQUIRE_PG") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    name = f"tj_test_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(_libpq(PG_ADMIN_URL), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_libpq(PG_ADMIN_URL), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'tensorjudge.db'}"


@pytest.fixture(scope="session")
def session_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {"data": tmp_path_factory.mktemp("data"), "cache": tmp_path_factory.mktemp("cache")}


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def base_ctx(request: pytest.FixtureRequest, session_dirs: dict[str, Path]) -> Iterator[Context]:
    """A migrated database with the `double` fixture problem (version 1), per backend."""
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    ctx = Context.create(make_settings(url, session_dirs))
    migrations.upgrade(ctx.db)
    problems.store(ctx, DOUBLE, mode="ensure", validator=None)
    yield ctx
    ctx.close()


@pytest.fixture
def ctx(base_ctx: Context) -> Iterator[Context]:
    """A clean database and a fresh wake-up hub for each test."""
    wipe(base_ctx.db)
    c = dataclasses.replace(base_ctx, hub=type(base_ctx.hub)())
    yield c


@pytest.fixture
def configure(ctx: Context) -> Callable[..., Context]:
    """ctx with some settings changed (same database)."""

    def make(**overrides: Any) -> Context:
        ctx.settings = ctx.settings.model_copy(update=overrides)
        return ctx

    return make


@pytest.fixture
def backend(ctx: Context) -> str:
    return ctx.db.engine.dialect.name


@pytest.fixture
def client(ctx: Context) -> Iterator[TestClient]:
    with TestClient(create_app(ctx.settings, ctx=ctx)) as c:
        yield c


@pytest.fixture
def alice(client: TestClient) -> dict[str, str]:
    return register(client, "alice")


@pytest.fixture
def bob(client: TestClient) -> dict[str, str]:
    return register(client, "bob")


@pytest.fixture
def admin(client: TestClient, ctx: Context) -> dict[str, str]:
    users.create_user(ctx, "root", PASSWORD, admin=True)
    return login(client, "root")


@pytest.fixture
def workers(ctx: Context) -> Iterator[Callable[..., Any]]:
    """Start in-process worker pools (real sandbox unless judge_fn is given), of `n` workers
    and `quick` quick-lane workers (none unless asked: most tests count on `n`)."""
    from app.worker import WorkerPool

    pools: list[WorkerPool] = []

    def start(n: int = 1, judge_fn: Any = None, c: Context | None = None,
              quick: int = 0) -> WorkerPool:
        sandbox = object() if judge_fn is not None else None
        pool = WorkerPool(c or ctx, n, kind="embedded", judge_fn=judge_fn, sandbox=sandbox,
                          quick=quick)
        pool.start()
        pools.append(pool)
        return pool

    yield start
    for p in pools:
        p.stop(timeout=30)
