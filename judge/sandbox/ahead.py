"""Sandboxes that imported a framework's libraries ahead of its first job, where the backend
has no place of its own to import them (a container imports for itself; bubblewrap's fork
servers import for the sandboxes they fork).

One per set of libraries, started when the judge starts (Startup.begin): the sandbox a job
that finds no spare of its kind would otherwise start on its own path (SandboxPool.acquire),
with the imports already done. It prepares at a spare's weight until a job waits for it, and
then at that job's: three of them importing at a job's weight on a fresh start took the cores
from the first jobs, the one a job waited for among them. It is used once and not replaced:
by then the start-up work prepares each kind's spares.
"""

from __future__ import annotations

import threading

from judge.sandbox.base import Started, higher, hurry
from judge.sandbox.job import Kind
from judge.sandbox.priority import CpuPriority


class Ahead:
    """The pool's sandboxes imported ahead, by libraries. Every method is called with the
    pool's lock (`lock`) held."""

    def __init__(self, lock: threading.Condition):
        self._lock = lock
        self._ready: dict[tuple[str, ...], Started] = {}
        # Being started: the sandbox once there is one, and the weight of the first in line
        # of the jobs waiting for it.
        self._starting: dict[tuple[str, ...], Started | None] = {}
        self._awaited: dict[tuple[str, ...], CpuPriority | None] = {}
        self._closed = False

    def begin(self, kind: Kind) -> bool:
        """Whether to start one for `kind`'s libraries (none is there or on its way)."""
        libs = kind.libraries
        if self._closed or libs in self._ready or libs in self._starting:
            return False
        self._starting[libs] = None
        return True

    def spawned(self, kind: Kind, sp: Started) -> None:
        """The one begun for `kind` is started, preparing niced: hurried if a job waits."""
        self._starting[kind.libraries] = sp
        if kind.libraries in self._awaited:
            hurry(sp, self._awaited[kind.libraries])

    def started(self, kind: Kind, sp: Started | None) -> Started | None:
        """The one begun for `kind` is ready (`sp`) or failed (None); returns what the caller
        must destroy instead of keeping (one that came when the pool no longer wants it)."""
        self._starting.pop(kind.libraries, None)
        self._awaited.pop(kind.libraries, None)
        self._lock.notify_all()
        if sp is None or self._closed:
            return sp
        self._ready[kind.libraries] = sp
        return None

    def take(self, kind: Kind, priority: CpuPriority | None = None) -> Started | None:
        """The one of `kind`'s libraries, waiting while it is being started (it began before
        this job, at the same priority: it is ready no later than one started now), at the
        weight of the job's place in line (`priority`; None: its kind's)."""
        libs = kind.libraries
        if libs in self._starting:
            hurried_to = (higher(self._awaited[libs], priority) if libs in self._awaited
                          else priority)
            if libs not in self._awaited or hurried_to != self._awaited[libs]:
                self._awaited[libs] = hurried_to
                sp = self._starting[libs]
                if sp is not None:
                    hurry(sp, hurried_to)
        while libs in self._starting and not self._closed:
            self._lock.wait(timeout=0.5)
        sp = self._ready.pop(libs, None)
        if sp is not None and not sp.alive():
            threading.Thread(target=sp.destroy, daemon=True).start()
            return None
        return sp

    def idle(self) -> list[Started]:
        return list(self._ready.values())

    def close(self) -> list[Started]:
        """Keep none from now on; the caller destroys what this returns."""
        self._closed = True
        self._lock.notify_all()
        out = list(self._ready.values())
        self._ready.clear()
        return out
