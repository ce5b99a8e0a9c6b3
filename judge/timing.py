"""Where a judgement's time went: the engine notes when each attempt starts and when the
sandbox's frames arrive (`ready`: the job is in a started sandbox; `begin`: a test starts),
and the moments become one Timing whose parts add up to the whole.

Preparation runs from the judgement's start to its counted run's first test, less what
belongs to a rerun; the tests and their compilation are the sandbox's own per-test figures;
what is left (frames, comparisons outside the sandbox, teardown) is `other_ms`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from judge import wire
from judge.parallel import cut
from judge.verdicts import JudgeResult, Timing


@dataclass
class _Attempt:
    start: float
    frames: list[tuple[float, str]] = field(default_factory=list)
    # A time-out the backend met and ran again inside this attempt (a warm fork's).
    met_twice: bool = False


class Stopwatch:
    """The moments of one judgement (thread-safe: parts of a Submit run at once)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.attempts: list[_Attempt] = []
        self.judged_at: float | None = None  # the verdict known, before any diagnosis
        self._lock = threading.Lock()

    def attempt(self) -> None:
        """A run of the submission starts; the last one started is the one that counts."""
        with self._lock:
            self.attempts.append(_Attempt(time.monotonic()))

    def met_twice(self) -> None:
        """The current attempt's run is a backend's rerun after a time-out."""
        with self._lock:
            if self.attempts:
                self.attempts[-1].met_twice = True

    def judged(self) -> None:
        self.judged_at = time.monotonic()

    def watching(self, on_frame: Callable[[wire.Frame], None] | None
                 ) -> Callable[[wire.Frame], None]:
        """`on_frame`, noting first when the frames that mark the phases arrive."""
        def note(frame: wire.Frame) -> None:
            if frame.ev in ("ready", "begin"):
                now = time.monotonic()
                with self._lock:
                    if self.attempts:
                        self.attempts[-1].frames.append((now, frame.ev))
            if on_frame is not None:
                on_frame(frame)

        return note

    def timing(self, result: JudgeResult) -> Timing:
        """The parts, as of now (the judgement's end). The frames are the sandbox's word, which
        a submission can forge: they move figures between parts, never a verdict."""
        end = time.monotonic()
        with self._lock:
            attempts = list(self.attempts)
        tests, compiled = _test_times(result)
        diagnosis = result.diagnosis_ms or 0.0
        total = (end - self.t0) * 1000.0
        judged = self.judged_at or end
        if not attempts:
            prep_s, rerun_s = judged - self.t0, 0.0
        else:
            counted = attempts[-1]
            readies = [t for t, ev in counted.frames if ev == "ready"]
            run_start = readies[-1] if readies else counted.start
            first_test = min((t for t, ev in counted.frames if ev == "begin" and t >= run_start),
                             default=judged)
            # Earlier attempts met a time-out; so did the first run inside this one when the
            # backend ran it again: from that run's start in its sandbox to the second's.
            inside = readies[-1] - readies[0] if counted.met_twice and readies else 0.0
            rerun_s = counted.start - attempts[0].start + inside
            prep_s = attempts[0].start - self.t0 + first_test - counted.start - inside
        rerun = rerun_s * 1000.0
        prep = min(prep_s * 1000.0, total - rerun - tests - compiled - diagnosis)
        other = total - prep - rerun - tests - compiled - diagnosis
        return Timing(preparation_ms=max(prep, 0.0), tests_ms=tests, compile_ms=compiled,
                      diagnosis_ms=diagnosis, rerun_ms=rerun, other_ms=max(other, 0.0),
                      total_ms=total)


def _test_times(result: JudgeResult) -> tuple[float, float]:
    """The tests' own time and their compilation, in ms. Tests cut across sandboxes ran at
    once: the part that took longest stands for them all."""
    best = (0.0, 0.0)
    for a, b in cut(len(result.tests), max(result.parts, 1)):
        part = result.tests[a:b]
        total = sum(t.time_ms or 0.0 for t in part)
        compiled = sum(t.compile_ms or 0.0 for t in part)
        if total > sum(best):
            best = (total - min(compiled, total), min(compiled, total))
    return best
