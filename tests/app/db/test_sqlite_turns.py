"""SQLite: the threads of one process take turns on the write lock instead of racing for it."""

from __future__ import annotations

import threading
import time

from sqlalchemy import event, text

from app.db import Database


def test_threads_of_a_process_take_turns_on_the_sqlite_write_lock(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'turns.db'}")

    # After the app's own pragmas: no busy handler, so a transaction that found the write
    # lock taken would fail at once ("database is locked") rather than sleep and retry.
    @event.listens_for(db.engine, "connect")
    def _no_busy_wait(dbapi_conn, _record):  # noqa: ANN001
        dbapi_conn.execute("PRAGMA busy_timeout=0")

    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    seen: list[int] = []

    def holder() -> None:
        with db.transaction() as s:
            s.execute(text("SELECT 1"))
            inside.set()
            release.wait(10)

    def second() -> None:
        try:
            with db.transaction() as s:
                seen.append(int(s.execute(text("SELECT 2")).scalar_one()))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    first = threading.Thread(target=holder)
    first.start()
    assert inside.wait(10)
    other = threading.Thread(target=second)
    other.start()
    time.sleep(0.3)  # the second transaction starts while the first holds the lock
    assert not seen and not errors, "the second transaction ran beside the first"
    release.set()
    first.join(10)
    other.join(10)
    assert not errors, errors
    assert seen == [2]
    db.dispose()
