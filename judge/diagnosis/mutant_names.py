"""Wrong answers named by the reference's mutants: the bank grown from judge/mutants/.

A submission makes a mutant's mistake when, on every test that ran, it does what the mutant
does: it passes where the mutant passes, its output matches the mutant's well inside the
tolerance where both fail, and it raises the same way where the mutant raises. The finding is
the mutant's title. Nothing rather than a guess: the match must be closer than the
tolerance's own bound (`CLOSE`), explain at least one failed test, and be the only title that
matches (two mutants with different titles that fit the same outputs name nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from judge.diagnosis.mistakes import distance, wrong
from judge.package import Tolerance
from judge.trusted.mutant_outputs import Failure, MutantRun
from judge.verdicts import Finding, Verdict

# A match within this fraction of the tolerance: a right answer's drift from the reference
# is a small part of it; a guess that just fits is not a name.
CLOSE = 0.5
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*(?:Error|Exception))\b:?\s*(.*)",
                        re.DOTALL)
_NUMBER = re.compile(r"\d+")
_TUPLE = re.compile(r"\((\d+(?:\s*,\s*\d+)+)\s*,?\s*\)")


@dataclass(frozen=True)
class Seen:
    """One test that ran, as the matching needs it."""

    name: str
    verdict: Verdict
    output: np.ndarray | None  # the submission's flat output, when it gave one
    expected: np.ndarray
    message: str  # the error's line (RE), what is wrong with an output it could not keep (WA)
    sizes: frozenset[int]  # the test's integer parameters' values


def name_by_mutants(runs: list[MutantRun], seen: list[tuple[int, Seen]],
                    tol: Tolerance) -> list[Finding]:
    """The one mutant title that explains the submission, or []. `seen` pairs each test that
    ran with its index among the package's tests (the mutants' outcomes are per package
    test)."""
    failed = [s.name for _, s in seen if s.verdict is not Verdict.AC]
    if not failed or any(s.verdict not in (Verdict.AC, Verdict.WA, Verdict.RE)
                         for _, s in seen):
        return []  # a limit or a broken channel says nothing a mutant can match
    matches: dict[str, tuple[float, MutantRun]] = {}
    for run in runs:
        worst = _fits(run, seen, tol)
        if worst is not None:
            title = run.mutant.title
            if title not in matches or worst < matches[title][0]:
                matches[title] = (worst, run)
    if len(matches) != 1:
        return []
    (title, (_, run)), = matches.items()
    op = run.mutant.operator
    return [Finding("known-mistake", title[:1].upper() + title[1:], op.detail, failed,
                    sites=run.mutant.sites)]


def _fits(run: MutantRun, seen: list[tuple[int, Seen]], tol: Tolerance) -> float | None:
    """How far the submission is from the mutant (in tolerances) where both give outputs,
    or None when the mutant does not explain it."""
    worst = 0.0
    for i, s in seen:
        outcome = run.outcomes[i]
        if isinstance(outcome, Failure):
            if s.verdict is not Verdict.RE or not same_way(s.message, outcome, s.sizes):
                return None
            continue
        mutant_fails = wrong(outcome, s.expected, tol)
        if s.verdict is Verdict.AC:
            if mutant_fails:
                return None
            continue
        if s.verdict is not Verdict.WA or not mutant_fails:
            return None
        if s.output is None:  # an output of another size: the judge keeps only its size
            if outcome.size == s.expected.size or f"has {outcome.size} elements" not in s.message:
                return None
            continue
        d = distance(s.output, outcome, tol)
        if d is None or d > CLOSE:
            return None
        worst = max(worst, d)
    return worst


def same_way(message: str, failure: Failure, sizes: frozenset[int]) -> bool:
    """Whether the submission's error is the mutant's on the same test. Where both messages
    quote array shapes (NumPy's ValueError and JAX's TypeError on a broadcast), the same
    shapes, leading 1s aside (a broadcast adds them); where neither does, the same exception
    with a message of the same shape, numbers aside; where only the mutant's does, an error
    of another library quoting at least two of the test's sizes the mutant's quotes too
    (PyTorch's RuntimeError names the two clashing sizes alone: T_src where T_tgt belongs)."""
    m = _EXCEPTION.match(message.strip())
    if m is None:
        return False
    kind, text = m.group(1), m.group(2)
    ours, theirs = _tuples(text), _tuples(failure.message)
    if ours and theirs:
        return ours == theirs
    if not ours and not theirs:
        return kind == failure.type and _shape(text) == _shape(failure.message)
    common = _numbers(text) & _numbers(failure.message) & sizes - {0, 1}
    return kind != failure.type and len(common) >= 2


def _shape(text: str) -> str:
    return _NUMBER.sub("#", text.strip().splitlines()[0] if text.strip() else "")


def _tuples(text: str) -> set[tuple[int, ...]]:
    """The shapes of two dimensions or more a message quotes ((2,4,16), (2, 4, 16)), with
    their leading 1s dropped."""
    out = set()
    for t in _TUPLE.findall(text[:2000]):
        dims = [int(n) for n in t.split(",") if n.strip()]
        while len(dims) > 1 and dims[0] == 1:
            dims.pop(0)
        out.add(tuple(dims))
    return out


def _numbers(text: str) -> set[int]:
    return {int(n) for n in _NUMBER.findall(text[:2000]) if len(n) < 10}
