"""Package verification: the package proves its own claims.

Every expected output is finite; the float32 reference stays within the tolerance of a
float64 run (so the tolerance is not tighter than honest float32 arithmetic), and the reference
in float16 (bfloat16 for JAX and Flax) fails it (so it is not looser than that); every mutant of
the reference is killed by a test, equivalent, or accepted with a reason (the mutation report,
judge/mutants/report.py); the reference
passes its own tests in the sandbox; every packaged submission gets its folder's verdict; every
wrong answer (without the comment line that names it) is named first by its own known
mistake, and no accepted one gets a finding, nor would even if all its tests had failed; the
calibration describes the accepted submissions as they are, and each limit leaves them room
(judge/calibrate.py).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from judge.calibrate import Spent, limits_room, stale
from judge.diagnosis.mistakes import Observed, name_mistakes
from judge.engine import fill_compile_cache, judge
from judge.mutants.render import summary, tolerance_lines
from judge.mutants.report import MutationReport, mutation_report
from judge.package import Package, PackageError, load_package
from judge.sandbox.base import Backend
from judge.sandbox.pool import SandboxPool
from judge.trusted.expected import expected_outputs
from judge.trusted.known_mistakes import bank
from judge.verdicts import JudgeResult, Verdict


@dataclass
class Check:
    what: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    path: Path
    slug: str | None = None
    checks: list[Check] = field(default_factory=list)
    mutation: MutationReport | None = None

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def add(self, what: str, ok: bool, detail: str = "") -> Check:
        c = Check(what, ok, detail)
        self.checks.append(c)
        return c


def precision_margin(f32: np.ndarray, f64: np.ndarray, atol: float, rtol: float) -> float:
    """max |f32 - f64| / (atol + rtol |f64|): below 1 means float32 fits the tolerance."""
    bound = atol + rtol * np.abs(f64)
    return float(np.max(np.abs(f32 - f64) / bound)) if f64.size else 0.0


def validate(
    path: Path | str,
    sandbox: SandboxPool | Backend,
    *,
    parallel: int = 2,
    progress: Callable[[Check], None] | None = None,
) -> Report:
    report = Report(Path(path))

    def note(what: str, ok: bool, detail: str = "") -> None:
        c = report.add(what, ok, detail)
        if progress:
            progress(c)

    try:
        package = load_package(path)
    except PackageError as e:
        for d in e.defects:
            note("package", False, str(d))
        return report
    report.slug = package.slug
    note("package", True, f"{len(package.samples)} samples, "
         f"{len(package.tests) - len(package.samples)} hidden tests")
    try:
        f32 = expected_outputs(package, package.tests)
        f64 = expected_outputs(package, package.tests, float64=True)
    except Exception as e:  # noqa: BLE001
        note("reference runs", False, str(e))
        return report
    bad = [t.name for t, e in zip(package.tests, f32, strict=True) if not np.isfinite(e).all()]
    note("expected outputs finite", not bad, ", ".join(bad))
    tol = package.manifest.tolerance
    margins = [precision_margin(a, b, tol.atol, tol.rtol) for a, b in zip(f32, f64, strict=True)]
    worst = int(np.argmax(margins))
    note("float32 reference within tolerance of float64", margins[worst] < 1.0,
         f"worst {package.tests[worst].name}: {margins[worst]:.3g} of the tolerance")

    try:
        known = bank(package, package.tests)
    except Exception as e:  # noqa: BLE001
        note("known mistakes run", False, str(e))
        return report
    unknown = [f"{m.file} on {t.name}" for m in known
               for t, out in zip(package.tests, m.outputs, strict=True) if out is None]
    note("known mistakes run", not unknown, f"{len(known)} mistakes"
         + (f"; failed: {', '.join(unknown[:5])}" if unknown else ""))

    try:
        mutation = report.mutation = mutation_report(package)
    except Exception as e:  # noqa: BLE001
        note("mutants run", False, str(e))
        return report
    _note_mutation(mutation, note)

    try:
        fill_compile_cache(package, sandbox)
    except Exception as e:  # noqa: BLE001 - only slower without it
        note("compilation cache", True, f"not filled: {e}")
    jobs: list[tuple[str, str, Verdict]] = [
        ("reference", package.reference_source, Verdict.AC)
    ] + [(s.label, _unnamed(s.path.read_text(encoding="utf-8"), s.expected), s.expected)
         for s in package.submissions()]
    if not any(v is Verdict.AC for _, _, v in jobs[1:]):
        note("submissions", False, "no accepted submission packaged")

    def run(job: tuple[str, str, Verdict]) -> tuple[str, Verdict, JudgeResult]:
        label, code, want = job
        # Validation proves verdicts and the bank's names; the probes have their own tests.
        return label, want, judge(package, code, sandbox, probes=False)

    stale_why = stale(package)
    note("limits calibrated", not stale_why, "; ".join(stale_why) or _limits_line(package))
    spent: dict[str, Spent] = {}
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for label, want, res in pool.map(run, jobs):
            if want is Verdict.AC and res.verdict is Verdict.AC and label != "reference":
                spent[label] = Spent.of(res)
            detail = f"got {res.verdict.value} ({res.passed}/{len(res.tests)}), " \
                f"{(res.wall_ms or 0) / 1000:.1f} s"
            ok = res.verdict is want
            if not ok:
                failing = next((t for t in res.tests if t.verdict not in (Verdict.AC, None)),
                               None)
                why = (failing.message if failing else None) or res.message or ""
                detail += f"; want {want.value}: {why[:300]}"
            elif want is Verdict.WA:
                # The bank proves itself: each wrong answer is named first by its own title,
                # and located (where the package has sub-layers), or its parameter tree told
                # apart; a name the location contradicts is not shown (diagnose.py).
                own = package.mistakes[label.split("/", 1)[1]].title
                first = res.diagnosis[0].title if res.diagnosis else None
                ok = first == own
                detail += f"; named: {first!r}" if ok else \
                    f"; want it named {own!r} first, got {[f.title for f in res.diagnosis]}"
                kinds = {f.kind for f in res.diagnosis}
                if package.manifest.location is not None and not kinds & {"location",
                                                                            "parameters"}:
                    ok = False
                    detail += "; not located"
                where = next((f.title for f in res.diagnosis if f.kind == "location"), None)
                if where:
                    detail += f"; located: {where!r}"
            elif want is Verdict.AC and res.diagnosis:
                ok = False
                detail += f"; an accepted submission got findings: {res.diagnosis[0].title!r}"
            elif want is Verdict.AC:
                # Harder: had every test failed, would a known mistake be named from these
                # outputs? Then that mistake is too close to a right answer to be told apart.
                observed = [Observed(t.name, True, t.output, e)
                            for t, e in zip(res.tests, f32, strict=True)]
                close = name_mistakes(known, observed, tol)
                if close:
                    ok = False
                    detail += f"; its outputs would be taken for {close[0].title!r}"
            note(label, ok, detail)
    tight = limits_room(package, spent)
    note("limits leave the accepted submissions room", not tight, "; ".join(tight))
    return report


def _limits_line(package: Package) -> str:
    limits = package.limits
    return (f"{limits.time_ms.value} ms per test ({limits.time_ms.basis}); "
            f"{limits.compile_budget_ms.value} ms of compilation "
            f"({limits.compile_budget_ms.basis})")


def _note_mutation(mutation: MutationReport, note: Callable[[str, bool, str], None]) -> None:
    survivors = [r for r in mutation.results if r.status == "survived"]
    detail = summary(mutation)
    if survivors:
        detail += "; survived: " + "; ".join(f"{r.mutant.id} {r.mutant.title}"
                                             for r in survivors[:5])
    if mutation.stale:
        detail += "; declared in problem.toml but no such mutant is left alive (or " \
            "equivalent): " + ", ".join(mutation.stale)
    note("every mutant killed, equivalent or accepted", not survivors and not mutation.stale,
         detail)
    if mutation.locating:
        wrong = mutation.wrong_answers
        misplaced = [r for r in mutation.misplaced if r.located is not None]
        unlocated = [r for r in mutation.misplaced if r.located is None]
        detail = f"{len(wrong) - len(mutation.misplaced)} of {len(wrong)} located where they sit"
        if unlocated:
            detail += "; not located: " + "; ".join(f"{r.mutant.id} {r.mutant.title}"
                                                   for r in unlocated[:5])
        if misplaced:
            detail += "; located elsewhere: " + "; ".join(
                f"{r.mutant.id} {r.mutant.title} (located: {', '.join(r.located.wrong)})"
                for r in misplaced[:5] if r.located is not None)
        note("every killed mutant located where it sits", not misplaced, detail)
    unexplained = ", ".join(mutation.unexplained)
    note("every equivalent mutant says why", not mutation.unexplained,
         f"equivalent, with no [[mutants.equivalent]] reason in problem.toml: {unexplained}"
         if unexplained else "")
    low = mutation.low
    note(f"{low.dtype} reference fails the tolerance", low.verdict == "WA",
         "; ".join(tolerance_lines(mutation)))


def _unnamed(code: str, expected: Verdict) -> str:
    """A wrong answer without the comment line that names its mistake: the name must come
    from what it computes."""
    if expected is Verdict.WA and code.startswith("#"):
        return code.partition("\n")[2]
    return code


def validate_package(package: Package, sandbox: SandboxPool | Backend) -> Report:
    return validate(package.path, sandbox)
