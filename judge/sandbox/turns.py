"""The jobs a pool runs, in the order they came, and the CPU weight each is owed by its place.

A naive judge with as many workers as cores runs its submissions in order, one per core. A
pool runs more at once than that (a quick lane beside the workers, a fresh machine's first
jobs importing their frameworks side by side), and at equal weights each of those took a share
of the cores of the jobs that came first: on a fresh machine, the first PyTorch submission's
import slowed the jitted JAX one posted before it past what a fresh process takes. So the
first jobs, one per core, weigh as jobs do; those behind them yield (`CpuPriority.YIELD`) and
use what the first leave idle, and move up as the first end. A light job (NumPy: milliseconds)
keeps its own weight and takes no place in line. The limits count each sandbox's own CPU time:
a place in line moves when a verdict comes, never which.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

from judge.sandbox.priority import CpuPriority

Weigh = Callable[[CpuPriority], None]


class Turn:
    """One job's place. Its weight is applied, now and at each change, by what follows it
    (its sandbox; a fork server it waits for)."""

    def __init__(self, line: Turns, light: bool):
        self._line = line
        self.light = light
        self.priority = CpuPriority.LIGHT if light else CpuPriority.NORMAL
        self._followers: list[Weigh] = []

    def follow(self, weigh: Weigh) -> Callable[[], None]:
        """`weigh` gets the turn's weight now and at each change, until the returned
        function is called (it is called with the line's lock held: a file write, a call
        queued to an engine)."""
        with self._line.lock:
            self._followers.append(weigh)
            weigh(self.priority)

        def stop() -> None:
            with self._line.lock, contextlib.suppress(ValueError):
                self._followers.remove(weigh)

        return stop

    def _set(self, priority: CpuPriority) -> None:
        """Called with the line's lock held."""
        if priority != self.priority:
            self.priority = priority
            for weigh in self._followers:
                weigh(priority)


class Turns:
    """The line of one pool's running jobs."""

    def __init__(self, cores: int | None = None):
        self.cores = cores or len(os.sched_getaffinity(0)) or 1
        self.lock = threading.Lock()
        self._line: list[Turn] = []

    def enter(self, light: bool) -> Turn:
        turn = Turn(self, light)
        with self.lock:
            if not light:
                self._line.append(turn)
                turn.priority = self._owed(len(self._line) - 1)
        return turn

    def leave(self, turn: Turn) -> None:
        """The job ended: those behind it move up (a turn only ever moves up)."""
        with self.lock:
            if turn in self._line:
                self._line.remove(turn)
                for place, t in enumerate(self._line):
                    t._set(self._owed(place))

    def _owed(self, place: int) -> CpuPriority:
        return CpuPriority.NORMAL if place < self.cores else CpuPriority.YIELD
