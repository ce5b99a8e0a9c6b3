"""The mutation report of a problem: how strong its tests are, and how tight its tolerance.

    mutation_report(package, *, limit=32, background=False) -> MutationReport

Every mutant of the reference (judge/mutants/) runs on every test in the trusted process
(judge/trusted/mutant_outputs.py, cached by content hash) and gets one status:

- killed: some test's comparison with the expected output fails (judge/compare.py, the
  problem's tolerance), or it raises on some test;
- accepted: not killed, and declared in problem.toml (`[[mutants.accepted]]`, with a reason);
- equivalent: not killed, and the same outputs as the reference on every test and on extra
  inputs (the generator's parameters varied: judge/mutants/search.py), "the same" meaning
  within `SAME` of the tolerance: a reordered computation's rounding stays well below it,
  and a mutant that comes closer than that is a survivor the search did not kill. Each
  needs a reason in problem.toml (`[[mutants.equivalent]]`): why it computes the same for
  every value of the parameters and inputs, not only the ones run;
- survived: not killed, but some extra input kills it: the report names those inputs.

The score is killed / (killed + survived). The tolerance is proven in both directions: the
float32 reference fits it against float64 (judge/validate.py), and the reference with its
inputs narrowed to float16 (bfloat16 for JAX and Flax) fails it (`low`); `margin` is the
smallest ratio by which a killed mutant's worst error exceeds the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from judge.compare import compare
from judge.mutants.code import detect_framework
from judge.mutants.located import Located, locate_mutants
from judge.mutants.model import Mutant
from judge.mutants.search import Candidate, candidates, cover
from judge.package import Package, TestSpec, Tolerance
from judge.pysource import parse
from judge.trusted.expected import expected_outputs
from judge.trusted.mutant_outputs import Failure, Outcome, mutant_outputs, source_outputs
from judge.verdicts import Verdict

Status = Literal["killed", "survived", "equivalent", "accepted"]
SAME = 0.25  # of the tolerance: no further from the reference than rounding goes


@dataclass
class MutantResult:
    mutant: Mutant
    status: Status
    killed_by: list[str] = field(default_factory=list)  # package tests
    reason: str = ""
    worst: float = 0.0  # the largest error over the package's tests, in tolerances
    kills: list[Candidate] = field(default_factory=list)  # survivors: inputs that kill it
    # Killed: where the diagnosis locates it (judge/mutants/located.py); None: nowhere.
    located: Located | None = None
    wrong_answer: bool = False  # killed without raising on any test

    def to_json(self) -> dict[str, Any]:
        m = self.mutant
        out: dict[str, Any] = {"id": m.id, "operator": m.operator.name, "site": m.site,
                               "title": m.title, "status": self.status,
                               "killed_by": self.killed_by, "reason": self.reason}
        if self.located is not None:
            out["located"] = {"sublayers": list(self.located.wrong),
                              "together": self.located.together,
                              "test": self.located.test, "where_it_sits": self.located.placed}
        return out


@dataclass(frozen=True)
class LowPrecision:
    """The reference with its inputs narrowed: `verdict` WA is a tolerance tight enough; RE,
    the reference cannot run in that precision (`error`), which proves nothing."""

    dtype: str
    verdict: Literal["WA", "AC", "RE"]
    worst: float  # the largest error, in tolerances
    test: str  # where
    error: str = ""


@dataclass
class MutationReport:
    problem: str
    results: list[MutantResult]
    low: LowPrecision
    extra: int  # generated inputs the survivors and equivalents were run on
    suggested: list[Candidate]  # few extra inputs that kill every survivor
    stale: list[str]  # declared ids (accepted, equivalent) that name no such mutant
    unexplained: list[str] = field(default_factory=list)  # equivalent ids without a reason
    locating: bool = False  # the package has a `[location]`: killed mutants are located

    @property
    def wrong_answers(self) -> list[MutantResult]:
        """Killed mutants a submission would get a Wrong Answer for (none of their tests
        raises): the ones the diagnosis locates."""
        return [r for r in self.results if r.status == "killed" and r.wrong_answer]

    @property
    def misplaced(self) -> list[MutantResult]:
        """Of those, the ones the diagnosis does not locate where they sit (or at all)."""
        if not self.locating:
            return []
        return [r for r in self.wrong_answers if r.located is None or not r.located.placed]

    def count(self, status: Status) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def score(self) -> float:
        killed, survived = self.count("killed"), self.count("survived")
        return killed / (killed + survived) if killed + survived else 1.0

    @property
    def closest(self) -> MutantResult | None:
        killed = [r for r in self.results if r.status == "killed"]
        return min(killed, key=lambda r: r.worst) if killed else None

    @property
    def margin(self) -> float | None:
        closest = self.closest
        return closest.worst if closest is not None else None

    @property
    def ok(self) -> bool:
        """What validation asks: no survivor, a tolerance the low precision fails."""
        return (self.count("survived") == 0 and self.low.verdict == "WA" and not self.stale
                and not self.unexplained)

    def to_json(self) -> dict[str, Any]:
        margin = self.margin
        return {"problem": self.problem, "score": round(self.score, 4),
                "mutants": [r.to_json() for r in self.results],
                "float16": {"verdict": self.low.verdict},
                "margin": None if margin is None or not np.isfinite(margin)
                else round(margin, 3)}


def ratio(got: Outcome, want: np.ndarray, tol: Tolerance) -> float:
    """max |got - want| / (atol + rtol |want|): above 1 fails; infinite for an error, a
    size mismatch or a non-finite value."""
    if isinstance(got, Failure) or got.size != want.size:
        return float("inf")
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.abs(got - want) / (tol.atol + tol.rtol * np.abs(want))
    r = np.where(np.isfinite(r), r, np.inf)
    return float(r.max()) if r.size else 0.0


def _fails(name: str, got: Outcome, want: np.ndarray, tol: Tolerance) -> bool:
    if isinstance(got, Failure):
        return True
    return compare(name, got, want, (want.size,), tol, None).verdict is not Verdict.AC


def mutation_report(package: Package, *, limit: int = 24,
                    background: bool = False) -> MutationReport:
    tests, tol = package.tests, package.manifest.tolerance
    expected = expected_outputs(package, tests, background=background)
    accepted = {a.id: a.reason for a in package.manifest.mutants.accepted}
    results: list[MutantResult] = []
    runs = mutant_outputs(package, tests, background=background)
    for run in runs:
        worst = max(ratio(o, e, tol) for o, e in zip(run.outcomes, expected, strict=True))
        killed_by = [t.name for t, o, e in zip(tests, run.outcomes, expected, strict=True)
                     if _fails(t.name, o, e, tol)]
        if killed_by:
            results.append(MutantResult(run.mutant, "killed", killed_by,
                                        _killed_reason(run.outcomes, killed_by, tests), worst))
        elif run.mutant.id in accepted:
            results.append(MutantResult(run.mutant, "accepted", [], accepted[run.mutant.id],
                                        worst))
        else:
            results.append(MutantResult(run.mutant, "survived", [], "", worst))
    # Located as a wrong answer is: one that raises somewhere is a runtime error instead.
    located = locate_mutants(package, [
        (r.mutant.id, r.mutant.source, run.outcomes, r.killed_by)
        for r, run in zip(results, runs, strict=True)
        if r.status == "killed" and not any(isinstance(o, Failure) for o in run.outcomes)],
        background=background)
    for r, run in zip(results, runs, strict=True):
        r.located = located.get(r.mutant.id)
        r.wrong_answer = r.status == "killed" and not any(isinstance(o, Failure)
                                                          for o in run.outcomes)
    alive = [r for r in results if r.status == "survived"]
    extra = _search(package, alive, limit, background) if alive else 0
    why = {e.id: e.reason for e in package.manifest.mutants.equivalent}
    equivalent = [r for r in results if r.status == "equivalent"]
    for r in equivalent:
        if r.mutant.id in why:
            r.reason = f"{why[r.mutant.id]} ({r.reason})"
    unexplained = [r.mutant.id for r in equivalent if r.mutant.id not in why]
    stale = sorted(set(accepted) - {r.mutant.id for r in results if r.status == "accepted"}
                   | set(why) - {r.mutant.id for r in equivalent})
    kills = {r.mutant.id: r.kills for r in results if r.status == "survived"}
    return MutationReport(package.slug, results, low_precision(package, expected, background),
                          extra, cover(kills), stale, unexplained,
                          package.manifest.location is not None)


def _killed_reason(outcomes: list[Outcome], killed_by: list[str],
                   tests: list[TestSpec]) -> str:
    errors = {t.name: o for t, o in zip(tests, outcomes, strict=True)
              if isinstance(o, Failure) and t.name in killed_by}
    first = next(iter(errors.values()), None)
    if first is None:
        return f"fails {len(killed_by)} of {len(tests)} tests"
    return f"fails {len(killed_by)} of {len(tests)} tests ({len(errors)} with {first})"


def _search(package: Package, alive: list[MutantResult], limit: int, background: bool) -> int:
    """Runs the survivors on generated inputs: those some input kills stay survivors (with
    the inputs), the others are equivalent. Returns how many inputs were used."""
    tol = package.manifest.tolerance
    found = candidates(package, limit)
    want = source_outputs(package, package.reference_source, [c.spec for c in found],
                          background=background)
    # An input the reference itself fails on, or gives non-finite numbers for, is no test.
    usable = [(c, w) for c, w in zip(found, want, strict=True)
              if isinstance(w, np.ndarray) and np.isfinite(w).all()]
    runs = mutant_outputs(package, [c.spec for c, _ in usable],
                          mutants=[r.mutant for r in alive], background=background)
    for result, run in zip(alive, runs, strict=True):
        result.kills = [c for (c, w), o in zip(usable, run.outcomes, strict=True)
                        if _fails(c.spec.name, o, w, tol)]
        if result.kills:
            ways = "; ".join(f"{c.base} with {c.change}" for c in result.kills[:3])
            more = f" and {len(result.kills) - 3} more" if len(result.kills) > 3 else ""
            result.reason = f"passes every test; killed by generated inputs: {ways}{more}"
            continue
        seen = max([result.worst, *(ratio(o, w, tol) for (_, w), o in zip(
            usable, run.outcomes, strict=True))])
        where = f"every test and {len(usable)} generated inputs"
        if seen <= SAME:
            result.status = "equivalent"
            result.reason = f"the same outputs on {where} (at most {seen:.2g} of the tolerance)"
        else:
            result.reason = (f"passes every test, and no generated input kills it, but it "
                             f"comes within {seen:.2g} of the tolerance on {where}")
    return len(usable)


def low_dtype(package: Package) -> str:
    """bfloat16 where the framework has a fast one (JAX, Flax), float16 otherwise."""
    framework = detect_framework(parse(package.reference_source))
    return "bfloat16" if framework in ("jax", "flax") else "float16"


def low_precision(package: Package, expected: list[np.ndarray],
                  background: bool = False) -> LowPrecision:
    """The reference on narrowed inputs: the samples first (one failure is the verdict), all
    the tests only when every sample passes."""
    dtype, tol = low_dtype(package), package.manifest.tolerance
    tests = list(package.tests)
    order = [i for i, t in enumerate(tests) if t.kind == "sample"] + \
        [i for i, t in enumerate(tests) if t.kind != "sample"]
    firsts = order[:len(package.samples)] or order
    for chosen in (firsts, order):
        outs = source_outputs(package, package.reference_source, [tests[i] for i in chosen],
                              precision=dtype, background=background)
        failed = [(i, o) for i, o in zip(chosen, outs, strict=True) if isinstance(o, Failure)]
        if failed:
            i, o = failed[0]
            return LowPrecision(dtype, "RE", float("inf"), tests[i].name, str(o))
        ratios = [ratio(o, expected[i], tol) for i, o in zip(chosen, outs, strict=True)]
        at = int(np.argmax(ratios))
        if ratios[at] > 1.0 or chosen is order:
            return LowPrecision(dtype, "WA" if ratios[at] > 1.0 else "AC", ratios[at],
                                tests[chosen[at]].name)
    raise AssertionError("unreachable")
