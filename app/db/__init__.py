"""Engine and sessions. SQLite (embedded, WAL) or PostgreSQL, chosen by the URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str) -> Engine:
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        if u.database and u.database != ":memory:":
            Path(u.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(u, connect_args={"check_same_thread": False, "timeout": 30},
                               pool_size=10, max_overflow=20)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # noqa: ANN001
            # Let SQLAlchemy's "begin" below issue BEGIN, not the driver (the pysqlite recipe).
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn):  # noqa: ANN001
            # Take the write lock up front: a deferred transaction that reads and then writes
            # fails with SQLITE_BUSY when another writer got there in between; this one waits.
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    if u.get_backend_name() == "postgresql":
        if u.drivername == "postgresql":
            u = u.set(drivername="postgresql+psycopg")
        return create_engine(u, pool_size=10, max_overflow=20, pool_pre_ping=True)
    raise ValueError(f"unsupported database URL {u.render_as_string()!r} "
                     "(sqlite:///... or postgresql+psycopg://...)")


def rowcount(result: object) -> int:
    """Rows matched by an UPDATE or DELETE (typed access to CursorResult.rowcount)."""
    return int(getattr(result, "rowcount", 0))


class Database:
    """The engine, a session factory and what differs between the two backends."""

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session inside one transaction: committed on success, rolled back on error."""
        with self.sessions() as session, session.begin():
            yield session

    def libpq_conninfo(self) -> str:
        """The URL as libpq understands it, for psycopg's own LISTEN connection."""
        u = self.engine.url.set(drivername="postgresql")
        return u.render_as_string(hide_password=False)

    def dispose(self) -> None:
        self.engine.dispose()
