"""Known mistakes' outputs: a package's wrong answers as a bank the judge recognises outputs by.

Each packaged `submissions/wrong_answer/*.py` is run, like the reference, by the judge in its
own trusted process (never in the sandbox), and its outputs are cached by content hash the
same way (judge/trusted/expected.py). Matching a submission's outputs against them is the
diagnosis's (judge/diagnosis/mistakes.py).

The bank grows itself: every mutant of the reference (judge/mutants/) is a mistake too, its
outcomes (outputs or the errors it raises) computed the same way by
judge/trusted/mutant_outputs.py, ahead of any wrong answer (`prepare_mutant_banks` at the
judge's start-up); judge/diagnosis/mutant_names.py matches them.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from judge.mutants import Mutant, mutants
from judge.package import Mistake, Package, TestSpec
from judge.trusted.expected import cache_dir, run_trusted, test_key
from judge.trusted.mutant_outputs import MutantRun, mutant_outputs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KnownMistake:
    file: str  # the wrong answer's file name
    mistake: Mistake
    outputs: list[np.ndarray | None]  # per test, flat float64; None: not known there


def bank(package: Package, tests: list[TestSpec], *,
         background: bool = False) -> list[KnownMistake]:
    """The package's known mistakes with their outputs on `tests`, computed once per package
    version (on disk by content hash, in memory per version and test selection; outputs
    another thread is computing are waited for, judge/trusted/expected.py `run_trusted`);
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


# --- The bank grown from the reference's mutants (judge/mutants/) ------------------------------

def mutant_bank(package: Package, *, wait: bool = False,
                background: bool = False) -> list[MutantRun] | None:
    """Every mutant of the reference with its outcome on each of the package's tests
    (judge/trusted/mutant_outputs.py), or None while they are not computed: a wrong answer
    never waits for them (hundreds of trusted runs); the first that finds them missing starts
    their computation in the background. `wait`: compute them here (the start-up's call)."""
    key = package.content_hash
    with _LOCK:
        ready, started = key in _READY, key in _STARTED
    if ready or wait or not started and _on_disk(package):
        runs = mutant_outputs(package, package.tests, mutants=reference_mutants(package),
                              background=background)
        with _LOCK:
            _READY.add(key)
        return runs
    with _LOCK:
        started = key in _STARTED
        _STARTED.add(key)
    if not started:
        threading.Thread(target=_compute_quietly, args=(package,), daemon=True,
                         name=f"mutant-bank-{package.slug}").start()
    return None


def prepare_mutant_banks(packages: list[Package], stopping: threading.Event) -> None:
    """The mutants' outcomes of every problem computed at low priority, one problem at a time,
    before any wrong answer needs them (the judge's start-up, judge/startup.py)."""
    for package in packages:
        if stopping.is_set():
            return
        _compute_quietly(package)


def reference_mutants(package: Package) -> list[Mutant]:
    """The reference's mutants, made once per package version (a parse and a few hundred
    rewrites: too slow to make again for every wrong answer)."""
    key = package.content_hash
    with _LOCK:
        found = _MUTANTS.get(key)
    if found is None:
        found = mutants(package.reference_source)
        with _LOCK:
            _MUTANTS[key] = found
    return found


_MUTANTS: dict[str, list[Mutant]] = {}
_READY: set[str] = set()
_STARTED: set[str] = set()


def _compute_quietly(package: Package) -> None:
    with _LOCK:
        _STARTED.add(package.content_hash)  # a wrong answer meanwhile does not start another
    try:
        mutant_bank(package, wait=True, background=True)
    except Exception as e:  # noqa: BLE001 - a wrong answer is then named without them
        log.warning("mutant outputs not computed", extra={"problem": package.slug,
                                                           "error": str(e)})


def _on_disk(package: Package) -> bool:
    """Whether every mutant's outcome on every test is stored already (a judge started
    without the start-up's preparation: the command line, a test)."""
    d = cache_dir()
    return all((d / f"{k}.npy").is_file() or (d / f"{k}.failed").is_file()
               for m in reference_mutants(package) for t in package.tests
               for k in [test_key(package, t, source=m.source)])
