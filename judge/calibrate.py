"""Calibrating a package's limits (docs/judging.md, "Limits"): its accepted submissions judged
alone, several times each, and what they spend recorded in `calibration.toml`; and the checks
validation makes of the limits against what the accepted submissions spend on this machine.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass

from judge.engine import environment, judge
from judge.package import Package, Submission
from judge.package.calibration import (
    Calibration,
    Measured,
    file_sha256,
    write_calibration,
)
from judge.sandbox.base import Backend
from judge.sandbox.pool import SandboxPool
from judge.verdicts import JudgeResult, Verdict

# Validation asks a calibrated limit to keep this much room over what an accepted submission
# spends today: a slower hour of the same machine must not turn it into a time-out.
ROOM = 1.5


@dataclass(frozen=True)
class Spent:
    """What one judgement of a submission was charged: the CPU of its slowest test outside
    JAX compilation, and the CPU of its compilation over all tests (judge/interpret.py
    charge_time's arithmetic)."""

    test_ms: float
    compile_ms: float

    @staticmethod
    def of(result: JudgeResult) -> Spent:
        test_ms = compile_ms = 0.0
        for t in result.tests:
            used = t.cpu_ms if t.cpu_ms is not None else (t.time_ms or 0.0)
            compiled = min(max(t.compile_ms or 0.0, 0.0), used)
            test_ms = max(test_ms, used - compiled)
            compile_ms += compiled
        return Spent(test_ms, compile_ms)

    def most(self, other: Spent) -> Spent:
        return Spent(max(self.test_ms, other.test_ms), max(self.compile_ms, other.compile_ms))


class CalibrationFailed(RuntimeError):
    """An accepted submission was not accepted: there is nothing to calibrate from."""


def accepted(package: Package) -> list[Submission]:
    return [s for s in package.submissions() if s.expected is Verdict.AC]


def calibrate(package: Package, sandbox: SandboxPool | Backend, *, runs: int = 3,
              progress: Callable[[str, Spent], None] | None = None) -> Calibration:
    """Judge each accepted submission `runs` times, one at a time, in one sandbox each (no
    other judgement beside it), and keep the most each figure reached; write the result to
    the package's calibration.toml and return it."""
    pool = SandboxPool.around(sandbox)
    measured: dict[str, Measured] = {}
    for sub in accepted(package):
        code = sub.path.read_text(encoding="utf-8")
        most: Spent | None = None
        for _ in range(runs):
            res = judge(package, code, pool, split=False, probes=False)
            if res.verdict is not Verdict.AC:
                raise CalibrationFailed(f"{sub.label} got {res.verdict.value}, not AC: "
                                        f"{(res.message or '')[:300]}")
            spent = Spent.of(res)
            most = spent if most is None else most.most(spent)
        assert most is not None
        if progress:
            progress(sub.label, most)
        measured[sub.label] = Measured(sha256=file_sha256(sub.path),
                                       test_ms=round(most.test_ms, 1),
                                       compile_ms=round(most.compile_ms, 1))
    env = environment(package, pool)
    calibration = Calibration(
        measured_on=datetime.date.today().isoformat(), judge_version=env["judge_version"],
        sandbox=env["sandbox"], runs=runs, libraries=env["libraries"], submissions=measured)
    write_calibration(package.path, calibration)
    return calibration


def stale(package: Package) -> list[str]:
    """Why the package's calibration no longer describes its accepted submissions ([] when
    it does, or when there is none: the limits are then the judge's defaults)."""
    cal = package.calibration
    if cal is None:
        return []
    why: list[str] = []
    files = {s.label: s for s in accepted(package)}
    for label, sub in files.items():
        if label not in cal.submissions:
            why.append(f"{label} is not measured")
        elif cal.submissions[label].sha256 != file_sha256(sub.path):
            why.append(f"{label} changed since it was measured")
    why += [f"{label} is measured but not packaged" for label in cal.submissions
            if label not in files]
    if why:
        why.append(f"run `tensorjudge problems calibrate {package.path}`")
    return why


def limits_room(package: Package, spent: dict[str, Spent]) -> list[str]:
    """Where a limit leaves an accepted submission too little room, by what it spent in this
    validation: a fixed limit must be at least `multiple` times the most spent, a calibrated
    one at least ROOM times."""
    limits = package.limits
    multiple = limits.multiple
    fixed = package.manifest.limits
    out: list[str] = []
    for name, figure, is_fixed in (
            ("time_ms", "test_ms", fixed.time_ms is not None),
            ("compile_budget_ms", "compile_ms", fixed.compile_budget_ms is not None)):
        limit = getattr(limits, name).value
        need = multiple if is_fixed else ROOM
        for label, s in spent.items():
            ms = getattr(s, figure)
            if ms * need > limit:
                how = "fixed" if is_fixed else "calibrated"
                out.append(f"{name} = {limit} ({how}) is under {need:g} × the {ms:.0f} ms "
                           f"{label} spent")
    return out

