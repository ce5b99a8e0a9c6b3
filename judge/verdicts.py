"""The one verdict type, its precedence and the one way per-test verdicts become a result; the
result as plain data (tests, findings): the diagnosis imports and fills it, it imports nothing
of the diagnosis."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal

import numpy as np


class Verdict(StrEnum):
    AC = "AC"
    WA = "WA"
    TLE = "TLE"
    MLE = "MLE"
    RE = "RE"
    CE = "CE"
    OLE = "OLE"
    IE = "IE"

    @property
    def words(self) -> str:
        return VERDICT_WORDS[self]

    @property
    def folder(self) -> str:
        """The package folder whose submissions must get this verdict."""
        return VERDICT_FOLDERS[self]


VERDICT_WORDS: dict[Verdict, str] = {
    Verdict.AC: "Accepted",
    Verdict.WA: "Wrong Answer",
    Verdict.TLE: "Time Limit Exceeded",
    Verdict.MLE: "Memory Limit Exceeded",
    Verdict.RE: "Runtime Error",
    Verdict.CE: "Compile Error",
    Verdict.OLE: "Output Limit Exceeded",
    Verdict.IE: "Internal Error",
}

VERDICT_FOLDERS: dict[Verdict, str] = {
    Verdict.AC: "accepted",
    Verdict.WA: "wrong_answer",
    Verdict.TLE: "time_limit_exceeded",
    Verdict.MLE: "memory_limit_exceeded",
    Verdict.RE: "run_time_error",
    Verdict.CE: "compile_error",
    Verdict.OLE: "output_limit_exceeded",
    Verdict.IE: "internal_error",
}

# Most severe first. A judge fault outranks everything (the run proves nothing), a file that
# does not compile has no tests to speak of, and among test failures the ones that stop the
# sandbox outrank the ones it survives.
PRECEDENCE: tuple[Verdict, ...] = (
    Verdict.IE,
    Verdict.CE,
    Verdict.OLE,
    Verdict.MLE,
    Verdict.TLE,
    Verdict.RE,
    Verdict.WA,
    Verdict.AC,
)
_RANK = {v: i for i, v in enumerate(PRECEDENCE)}


def worst(verdicts: list[Verdict]) -> Verdict:
    """The most severe verdict of a non-empty list."""
    return min(verdicts, key=_RANK.__getitem__)


def clean_text(s: str | None) -> str | None:
    """Text that came from the sandbox, made safe to store and serve: lone surrogates (which
    JSON lets a submission send but UTF-8 cannot encode) and NUL characters (which PostgreSQL
    text cannot hold) become U+FFFD."""
    if s is None:
        return None
    s = str(s)
    if s.isascii() and "\x00" not in s:
        return s
    return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace").replace("\x00", "\ufffd")


# Which limit a test met (TLE: its CPU time, the wall-clock guard, the wall clock where the
# sandbox has no CPU clock, the submission's compile budget; MLE: memory).
LimitHit = Literal["cpu", "wall_guard", "wall", "compile_budget", "memory"]
FindingKind = Literal["location", "known-mistake", "parameters", "property", "numeric",
                      "error"]


@dataclass(frozen=True)
class Part:
    """One sub-layer of a block as a location finding draws it: whether it agrees with the
    reference's (None: not told apart)."""

    name: str
    title: str
    agrees: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "agrees": self.agrees}


@dataclass(frozen=True)
class Finding:
    """What a wrong submission most likely got wrong, in plain words. A finding never changes
    a verdict; `kind` says which mechanism of the diagnosis (judge/diagnosis/) found it."""

    kind: FindingKind
    title: str  # one line naming the mistake in plain words
    detail: str  # what to change, and where the statement warns about it
    tests: list[str] = field(default_factory=list)  # names of the tests it explains
    # A location's sub-layers, in the order the stream meets them (and the rest, last).
    parts: list[Part] = field(default_factory=list)
    # Where the mistake it names sits (the reference's site labels: judge/mutants/), so that
    # a name that contradicts the location is not shown; in memory only.
    sites: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "title": self.title, "detail": self.detail,
                               "tests": list(self.tests)}
        if self.parts:
            out["parts"] = [p.to_dict() for p in self.parts]
        return out


@dataclass(frozen=True)
class Note:
    """A fact about an accepted submission that its verdict does not depend on (its structure
    differs from the asked-for one where the tests cannot see it); judge/diagnosis/notes.py."""

    kind: Literal["structure"]
    title: str
    detail: str  # what differs, and why the tests cannot see it

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "detail": self.detail}


@dataclass
class TestResult:
    """One test's outcome. `verdict` is None when the test was not run (an earlier test ended
    the sandbox)."""

    __test__ = False  # not a pytest class, despite the name

    name: str
    verdict: Verdict | None
    time_ms: float | None = None
    # Of time_ms, JAX compilation the judge's warm-up could not foresee (the user's own jit,
    # other op orders).
    compile_ms: float | None = None
    # The sandbox's CPU time over the test, where the backend has a CPU clock: what the
    # time limit counts, less compile_ms (charged to the compile budget).
    cpu_ms: float | None = None
    limit: LimitHit | None = None  # the limit it met, for TLE and MLE
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatches: int | None = None
    worst_index: list[int] | None = None
    got: float | None = None
    want: float | None = None
    shape: list[int] | None = None
    message: str | None = None
    # The |got - want| grid in the unflattened output shape (rows x features), kept small, for
    # the wrong-answer picture; None when there is nothing to draw.
    error_grid: list[list[float]] | None = None
    # The submission's flat output as it came back, kept in memory only (never serialised):
    # the diagnosis compares it with known mistakes' outputs after the run.
    output: np.ndarray | None = field(default=None, repr=False, compare=False)
    # The Flax variables its `init` created, as (path, shape) in creation order, parsed from
    # the sandbox's report (judge/diagnosis/params.py); in memory only, for the diagnosis.
    variables: list[tuple[str, tuple[int, ...]]] | None = field(default=None, repr=False,
                                                                 compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict.value if self.verdict else None,
            "time_ms": None if self.time_ms is None else round(self.time_ms, 3),
            "compile_ms": None if self.compile_ms is None else round(self.compile_ms, 3),
            "cpu_ms": None if self.cpu_ms is None else round(self.cpu_ms, 3),
            "limit": self.limit,
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "mismatches": self.mismatches,
            "worst_index": self.worst_index,
            "got": self.got,
            "want": self.want,
            "shape": self.shape,
            "message": clean_text(self.message),
            "error_grid": self.error_grid,
        }


@dataclass
class Timing:
    """Where a judgement's time went, in milliseconds, in parts that add up to `total_ms`
    (judge/timing.py measures them; the worker adds the queue)."""

    # From being queued (submitted or rejudged) to the claim of the worker that judged it;
    # None when judged outside the queue (`tensorjudge judge`).
    queue_ms: float | None = None
    # The tests' expected outputs, getting a sandbox, its start-up and warm-up, the
    # submission's module up to its first test (a run a warm fork handed back included).
    preparation_ms: float = 0.0
    tests_ms: float = 0.0  # the tests' own time, compilation apart
    compile_ms: float = 0.0  # JAX compilation inside the submission's function
    diagnosis_ms: float = 0.0
    rerun_ms: float = 0.0  # the run that met a time-out first and was repeated
    other_ms: float = 0.0  # what no part names: frames, comparisons, teardown, the worker
    total_ms: float = 0.0

    def in_queue(self, queue_ms: float, worker_ms: float) -> Timing:
        """This judgement as a worker saw it: queued `queue_ms`, then `worker_ms` from its
        claim to its result (the judgement itself and the worker's own work around it)."""
        extra = max(worker_ms - self.total_ms, 0.0)
        return replace(self, queue_ms=max(queue_ms, 0.0), other_ms=self.other_ms + extra,
                       total_ms=max(queue_ms, 0.0) + self.total_ms + extra)

    def to_dict(self) -> dict[str, float | None]:
        return {k: None if v is None else round(v, 1) for k, v in asdict(self).items()}


@dataclass
class JudgeResult:
    verdict: Verdict
    tests: list[TestResult] = field(default_factory=list)
    message: str | None = None
    stdout: str = ""
    stderr: str = ""
    # Seconds spent before the first test (process start and imports), for the record.
    startup_ms: float | None = None
    wall_ms: float | None = None
    # Sandboxes the tests were cut across (judge/parallel.py): contiguous, near-equal parts.
    parts: int = 1
    # Runs that decided the verdict: 2 when a time-out was met and the submission run again.
    runs: int = 1
    # What the mistake most likely is, most certain first (judge/diagnosis/diagnose.py); never
    # changes the verdict, empty when the judge does not know.
    diagnosis: list[Finding] = field(default_factory=list)
    # Of wall_ms, the time the diagnosis took (after the verdict was known).
    diagnosis_ms: float | None = None
    # What judged it: problem_version, judge_version, libraries, sandbox (judge/engine.py).
    environment: dict[str, Any] = field(default_factory=dict)
    # Where the time went (queue, preparation, tests, compilation, diagnosis, reruns).
    timing: Timing | None = None
    # Facts an accepted result does not depend on (judge/diagnosis/notes.py).
    notes: list[Note] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for t in self.tests if t.verdict is Verdict.AC)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "score": {"passed": self.passed, "total": len(self.tests)},
            "message": clean_text(self.message),
            "tests": [t.to_dict() for t in self.tests],
            "stdout": clean_text(self.stdout),
            "stderr": clean_text(self.stderr),
            "startup_ms": None if self.startup_ms is None else round(self.startup_ms, 1),
            "wall_ms": None if self.wall_ms is None else round(self.wall_ms, 1),
            "parts": self.parts,
            "runs": self.runs,
            "diagnosis": [_clean_finding(f.to_dict()) for f in self.diagnosis],
            "diagnosis_ms": None if self.diagnosis_ms is None else round(self.diagnosis_ms, 1),
            "environment": self.environment,
            "timing": None if self.timing is None else self.timing.to_dict(),
            "notes": [_clean_finding(n.to_dict()) for n in self.notes],
        }


def _clean_finding(d: dict[str, Any]) -> dict[str, Any]:
    return {k: clean_text(v) if isinstance(v, str) else v for k, v in d.items()}


def aggregate(
    tests: list[TestResult],
    *,
    message: str | None = None,
    stdout: str = "",
    stderr: str = "",
    compile_error: str | None = None,
    internal_error: str | None = None,
) -> JudgeResult:
    """The single rule that turns per-test outcomes into the submission's verdict."""
    if internal_error is not None:
        return JudgeResult(Verdict.IE, tests, internal_error, stdout, stderr)
    if compile_error is not None:
        return JudgeResult(Verdict.CE, tests, compile_error, stdout, stderr)
    ran = [t.verdict for t in tests if t.verdict is not None]
    if not ran:
        # Nothing ran and nothing explains why: that is the judge's fault, never the user's.
        return JudgeResult(Verdict.IE, tests, message or "no test was run", stdout, stderr)
    verdict = worst(ran)
    if verdict is Verdict.AC and len(ran) < len(tests):
        return JudgeResult(Verdict.IE, tests, "some tests were not run", stdout, stderr)
    return JudgeResult(verdict, tests, message, stdout, stderr)
