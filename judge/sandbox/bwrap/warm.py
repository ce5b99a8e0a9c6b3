"""The warm fork's part of the bubblewrap backend: which jobs go to sandboxes forked from a
server that has run the problem's warm-up already, and which run again in a sandbox that
prepares itself.

A sandbox forked warm starts in milliseconds with the warm-up's compiled executables loaded,
but it cannot compile (the fork server's threads are gone): a job that meets a compilation is
handed back (the runner's `handover`) and runs again from its start in a sandbox that prepares
itself. A job that compiles its own code (jax.jit...) starts there at once; so do the jobs of a
kind whose latest jobs were all handed back (eager JAX written its own way, say), but for every
`retry_every`-th, so that a kind whose jobs stop compiling gets the warm fork back.

A handed-back job runs again in a prepared sandbox of its kind that ran the warm-up itself
where the pool has one ready (most of its operations are then loaded already). Where none is
ready it does not wait for one (a whole warm-up takes seconds: about a thousand operations for
eager JAX): the pool starts one without the warm-up (Kind.plain), where the job compiles only
what it uses, reading the judge's compilation cache (read-only: nothing a submission compiles
is kept for another).
"""

from __future__ import annotations

import threading
from collections import deque

from judge.sandbox.io_loop import RawRun
from judge.sandbox.job import Job, Kind


class WarmRouting:
    def __init__(self, window: int = 3, retry_every: int = 8):
        self.window = window
        self.retry_every = retry_every
        self._lock = threading.Lock()
        self._handbacks: dict[str, deque[bool]] = {}  # per kind: its latest jobs handed back?
        self._turns: dict[str, int] = {}  # per kind routed away: its jobs since
        self.routed = 0  # jobs sent straight to sandboxes that prepare themselves

    def route(self, job: Job) -> Kind:
        kind = job.kind
        if kind.self_prepared or job.compiles_itself:
            return kind.preparing_itself()
        with self._lock:
            recent = self._handbacks.get(kind.key)
            if recent is None or len(recent) < self.window or not all(recent):
                return kind
            turn = self._turns[kind.key] = self._turns.get(kind.key, 0) + 1
            if turn % self.retry_every == 0:
                return kind
            self.routed += 1
        return kind.preparing_itself()

    def note(self, kind: Kind, handed_back: bool) -> None:
        """The outcome of a job run in a sandbox forked warm."""
        with self._lock:
            recent = self._handbacks.setdefault(kind.key, deque(maxlen=self.window))
            recent.append(handed_back)


def hand_back(raw: RawRun) -> bool:
    """Whether a run in a sandbox forked from a warmed server must run again in one that
    prepared itself: it met a compilation (the runner's handover), or it ended in a way a
    wait that can never end would look (out of time, or gone without its last word). A
    hang of the fork's making must not become a verdict; a real one is met again there."""
    if raw.first("handover") is not None:
        return True
    return raw.timed_out or not (raw.finished or raw.oom_killed or raw.ole)
