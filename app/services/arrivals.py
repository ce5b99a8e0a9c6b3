"""The queue's order is the order submissions arrived in.

A submission is stamped when its request reaches the service (on the event loop, which takes
requests in the order they came), and it joins the queue in stamp order: its insert waits
until every submission that arrived before it in this process has joined, or has failed. A
request's own work before the insert (its token, its code's checks, a query) runs on a
thread of its own and takes longer under load; without this, a submission posted a moment
after another could be queued, and judged, first (on a fresh machine, a framework's first
Submit waited seconds behind the next one).

The wait is bounded (`TURN_WAIT_S`): a request stalled before its insert holds up the ones
behind it that long at most. Across processes (several API servers), the queue keeps the
database's order of their stamps.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

from app.db.models import utcnow

TURN_WAIT_S = 2.0


@dataclass(frozen=True, order=True)
class Arrival:
    seq: int
    at: datetime = field(compare=False)


class Arrivals:
    """The submissions of this process that arrived and have not yet joined the queue."""

    def __init__(self) -> None:
        self._seq = itertools.count()
        self._pending: set[int] = set()
        self._cond = threading.Condition()

    def enter(self) -> Arrival:
        with self._cond:
            a = Arrival(next(self._seq), utcnow())
            self._pending.add(a.seq)
            return a

    def leave(self, arrival: Arrival) -> None:
        """Done with (joined the queue, or failed); leaving twice is harmless."""
        with self._cond:
            self._pending.discard(arrival.seq)
            self._cond.notify_all()

    def wait_turn(self, arrival: Arrival) -> None:
        """Until every earlier arrival has left (at most TURN_WAIT_S)."""
        deadline = time.monotonic() + TURN_WAIT_S
        with self._cond:
            while any(s < arrival.seq for s in self._pending):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._pending)
