"""Known mistakes: a submission's outputs matched against those of the package's wrong answers
(the bank, computed trusted in judge/trusted/known_mistakes.py).

A submission is said to make a known mistake only when its output matches that mistake's
output on every failed test the mistake is known on, and the mistake fails each of those tests
itself: a wrong name is worse than none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judge.package import Mistake, Tolerance
from judge.trusted.known_mistakes import KnownMistake
from judge.verdicts import Finding


@dataclass(frozen=True)
class Observed:
    """One judged test, as the matching needs it."""

    name: str
    failed: bool
    output: np.ndarray | None  # the submission's flat output; None when it gave none
    expected: np.ndarray


def wrong(output: np.ndarray, expected: np.ndarray, tol: Tolerance) -> bool:
    """Whether `output` fails against `expected` by the judge's own rule (NaN never equal)."""
    if output.size != expected.size:
        return True
    with np.errstate(invalid="ignore", over="ignore"):
        return not bool(np.all(np.abs(output - expected) <= tol.atol + tol.rtol * np.abs(expected)))


def distance(got: np.ndarray, mistake: np.ndarray, tol: Tolerance) -> float | None:
    """How far `got` is from a mistake's output, in tolerances (max over elements); None when
    they do not match. NaN and infinities must sit where the mistake has them: an overflow is
    part of what a mistake does."""
    if got.size != mistake.size:
        return None
    if not np.array_equal(np.isnan(got), np.isnan(mistake)):
        return None
    fin = np.isfinite(mistake)
    if not np.array_equal(got[~fin & ~np.isnan(mistake)], mistake[~fin & ~np.isnan(mistake)]):
        return None
    if not np.isfinite(got[fin]).all():
        return None
    if not fin.any():
        return 0.0
    bound = tol.atol + tol.rtol * np.abs(mistake[fin])
    d = float(np.max(np.abs(got[fin] - mistake[fin]) / bound))
    return d if d <= 1.0 else None


def name_mistakes(known: list[KnownMistake], observed: list[Observed],
                  tol: Tolerance) -> list[Finding]:
    """The known mistakes that explain every failed test they are known on, closest first."""
    named: list[tuple[float, Finding]] = []
    for m in known:
        explained: list[str] = []
        worst = 0.0
        for ob, mo in zip(observed, m.outputs, strict=True):
            if mo is None:
                continue
            m_wrong = wrong(mo, ob.expected, tol)
            if not ob.failed:
                if m_wrong:  # the mistake fails a test this submission passed: not it
                    break
                continue
            d = None if ob.output is None or not m_wrong else distance(ob.output, mo, tol)
            if d is None:
                break
            explained.append(ob.name)
            worst = max(worst, d)
        else:
            if explained:
                named.append((worst, _finding(m.mistake, explained)))
    return [f for _, f in sorted(named, key=lambda p: p[0])]


def _finding(m: Mistake, tests: list[str]) -> Finding:
    return Finding("known-mistake", m.title, f"{m.detail} The statement: {m.statement}", tests,
                   sites=(m.site,) if m.site else ())
