"""Engine and sessions. SQLite (embedded, WAL) or PostgreSQL, chosen by the URL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
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


_TURNS: dict[str, threading.RLock] = {}
_TURNS_LOCK = threading.Lock()


def _sqlite_turns(engine: Engine) -> threading.RLock:
    """One lock per SQLite file in this process, shared by every Database opened on it."""
    key = str(Path(engine.url.database).resolve()) if engine.url.database not in (
        None, "", ":memory:") else f"memory:{id(engine)}"
    with _TURNS_LOCK:
        return _TURNS.setdefault(key, threading.RLock())


def rowcount(result: object) -> int:
    """Rows matched by an UPDATE or DELETE (typed access to CursorResult.rowcount)."""
    return int(getattr(result, "rowcount", 0))


class Database:
    """The engine, a session factory and what differs between the two backends."""

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        # SQLite has one writer at a time, and every transaction here takes the write lock
        # (BEGIN IMMEDIATE). Its busy handler makes the threads that find it taken sleep and
        # retry, up to 100 ms a time, so a burst (workers woken at once to claim, requests
        # posting, long polls reading) left some threads losing for hundreds of milliseconds.
        # The threads of this process take turns on a lock instead, handed over at once;
        # other processes on the same file still meet the busy handler.
        self._turns = (_sqlite_turns(self.engine) if self.engine.dialect.name == "sqlite"
                       else None)

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session inside one transaction: committed on success, rolled back on error."""
        with (self._turns or nullcontext()), self.sessions() as session, session.begin():
            yield session

    def libpq_conninfo(self) -> str:
        """The URL as libpq understands it, for psycopg's own LISTEN connection."""
        u = self.engine.url.set(drivername="postgresql")
        return u.render_as_string(hide_password=False)

    def dispose(self) -> None:
        self.engine.dispose()
