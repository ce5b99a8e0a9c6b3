"""Known mistakes: a package's wrong answers as a bank the judge recognises outputs by.

Each packaged `submissions/wrong_answer/*.py` is run, like the reference, by the judge in its
own trusted process (never in the sandbox), and its outputs are cached by content hash the
same way. A submission is said to make a known mistake only when its output matches that
mistake's output on every failed test the mistake is known on, and the mistake fails each of
those tests itself: a wrong name is worse than none.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from judge.compare import Tolerance
from judge.expected import cache_dir, run_trusted, test_key
from judge.findings import Finding
from judge.package import Mistake, Package, TestSpec


@dataclass(frozen=True)
class KnownMistake:
    file: str  # the wrong answer's file name
    mistake: Mistake
    outputs: list[np.ndarray | None]  # per test, flat float64; None: not known there


@dataclass(frozen=True)
class Observed:
    """One judged test, as the matching needs it."""

    name: str
    failed: bool
    output: np.ndarray | None  # the submission's flat output; None when it gave none
    expected: np.ndarray


def bank(package: Package, tests: list[TestSpec], *,
         background: bool = False) -> list[KnownMistake]:
    """The package's known mistakes with their outputs on `tests`, computed once per package
    version (on disk by content hash, in memory per version and test selection; outputs
    another thread is computing are waited for, judge/expected.py `run_trusted`);
    `background`: computed at low CPU priority, ahead of any wrong answer."""
    key = (package.content_hash, tuple(t.name for t in tests))
    with _LOCK:
        if key in _BANKS:
            _BANKS.move_to_end(key)
            return _BANKS[key]
    found = _load(package, tests, background)
    with _LOCK:
        _BANKS[key] = found
        while len(_BANKS) > 16:
            _BANKS.popitem(last=False)
    return found


_BANKS: OrderedDict[tuple[str, tuple[str, ...]], list[KnownMistake]] = OrderedDict()
_LOCK = threading.Lock()


def _load(package: Package, tests: list[TestSpec], background: bool) -> list[KnownMistake]:
    mistakes = package.mistakes
    if not mistakes:
        return []
    d = cache_dir()
    files = {f.name: f for f in package.wrong_answer_files()}
    keys = {name: [test_key(package, t, source=files[name].read_text(encoding="utf-8"))
                   for t in tests] for name in mistakes}
    todo = [{"name": t.name, "key": k, "module": f"submissions/wrong_answer/{name}"}
            for name, ks in keys.items() for t, k in zip(tests, ks, strict=True)
            if not (d / f"{k}.npy").is_file() and not (d / f"{k}.failed").is_file()]
    if todo:
        run_trusted(package, todo, False, d, background=background)
    out: list[KnownMistake] = []
    for name, mistake in sorted(mistakes.items()):
        outputs = [np.load(d / f"{k}.npy", allow_pickle=False) if (d / f"{k}.npy").is_file()
                   else None for k in keys[name]]
        out.append(KnownMistake(name, mistake, outputs))
    return out


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
    return Finding("known-mistake", m.title, f"{m.detail} The statement: {m.statement}", tests)
