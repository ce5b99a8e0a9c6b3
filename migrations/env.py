"""Alembic environment: the URL comes from the caller's connection or from the settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.db import make_engine
from app.db.models import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from app.settings import get_settings

    return get_settings().effective_database_url


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
    else:
        engine = make_engine(_url())
        try:
            with engine.begin() as conn:
                _run(conn)
        finally:
            engine.dispose()
