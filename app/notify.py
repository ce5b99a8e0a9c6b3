"""Wake-ups: "the queue changed" for idle workers and "submission N changed" for waiting
clients. In one process through a Hub; across processes through PostgreSQL LISTEN/NOTIFY,
whose listener thread feeds the local Hub. Without PostgreSQL, other processes fall back to
polling; a wake-up is only ever a hint, the database is the truth.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import defaultdict
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.orm import Session

log = logging.getLogger("tensorjudge.notify")

QUEUE_CHANNEL = "tensorjudge_queue"
STATUS_CHANNEL = "tensorjudge_status"


class Hub:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue_seq = 0
        self._lock = threading.Lock()
        self._waiters: dict[int, set[Callable[[], None]]] = defaultdict(set)

    # --- the queue ---------------------------------------------------------------------
    @property
    def queue_seq(self) -> int:
        with self._cond:
            return self._queue_seq

    def queue_changed(self) -> None:
        with self._cond:
            self._queue_seq += 1
            self._cond.notify_all()

    def wait_queue(self, seen: int, timeout: float) -> bool:
        """Block until the queue changed after `seen` (a value of queue_seq) or timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._queue_seq != seen, timeout)

    # --- submissions -------------------------------------------------------------------
    def submission_changed(self, submission_id: int) -> None:
        with self._lock:
            wake = list(self._waiters.get(submission_id, ()))
        for fn in wake:
            fn()

    def subscribe(self, submission_id: int) -> Subscription:
        """Register before reading the state, then wait: no change between the two is lost."""
        return Subscription(self, submission_id)

    def _add(self, submission_id: int, fn: Callable[[], None]) -> None:
        with self._lock:
            self._waiters[submission_id].add(fn)

    def _remove(self, submission_id: int, fn: Callable[[], None]) -> None:
        with self._lock:
            s = self._waiters.get(submission_id)
            if s is not None:
                s.discard(fn)
                if not s:
                    del self._waiters[submission_id]


class Subscription:
    """Waits for changes of one submission, from a thread or from asyncio."""

    def __init__(self, hub: Hub, submission_id: int):
        self.hub, self.id = hub, submission_id
        self._flag = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._aevent: asyncio.Event | None = None
        try:
            self._loop = asyncio.get_running_loop()
            self._aevent = asyncio.Event()
        except RuntimeError:
            pass
        hub._add(submission_id, self._wake)

    def _wake(self) -> None:
        self._flag.set()
        if self._loop is not None and self._aevent is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                self._loop.call_soon_threadsafe(self._aevent.set)

    def wait(self, timeout: float) -> bool:
        got = self._flag.wait(timeout)
        self._flag.clear()
        return got

    async def wait_async(self, timeout: float) -> bool:
        assert self._aevent is not None, "subscribe from inside the event loop"
        try:
            await asyncio.wait_for(self._aevent.wait(), timeout)
            got = True
        except TimeoutError:
            got = False
        self._aevent.clear()
        self._flag.clear()
        return got

    def close(self) -> None:
        self.hub._remove(self.id, self._wake)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pg_notify(session: Session, channel: str, payload: str = "") -> None:
    """Queue a NOTIFY in the session's transaction: PostgreSQL delivers it on commit."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_notify(:c, :p)"), {"c": channel, "p": payload})


class PgListener(threading.Thread):
    """LISTENs on its own connection and forwards to the Hub; reconnects when it drops."""

    def __init__(self, conninfo: str, hub: Hub, stop: threading.Event):
        super().__init__(name="pg-listener", daemon=True)
        self.conninfo, self.hub, self.stop = conninfo, hub, stop
        self.ready = threading.Event()

    def run(self) -> None:
        import psycopg

        backoff = 0.5
        while not self.stop.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {QUEUE_CHANNEL}")
                    conn.execute(f"LISTEN {STATUS_CHANNEL}")
                    self.ready.set()
                    backoff = 0.5
                    self.hub.queue_changed()  # anything missed while not listening
                    while not self.stop.is_set():
                        for n in conn.notifies(timeout=0.5):
                            self._dispatch(n.channel, n.payload)
            except Exception as e:  # noqa: BLE001 - keep listening whatever happened
                if self.stop.is_set():
                    break
                log.warning("listener connection lost", extra={"error": str(e)})
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)

    def _dispatch(self, channel: str, payload: str) -> None:
        if channel == QUEUE_CHANNEL:
            self.hub.queue_changed()
        elif channel == STATUS_CHANNEL:
            with contextlib.suppress(ValueError):
                self.hub.submission_changed(int(payload))
