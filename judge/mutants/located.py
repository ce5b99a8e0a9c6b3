"""Each killed mutant located as a wrong answer would be (judge/diagnosis/location.py): the
mutant and the reference run with sub-layers switched off on a test the mutant fails, both in
the trusted process, and the location compared with where the mutant's mistake sits (its site
label). The mutation report carries the result, and validation asks every killed mutant to be
located where it sits: the proof that the diagnosis points a learner at the right sub-layer
for every classic mistake of the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judge.diagnosis.location import agreement, consistent, locate, located_sites
from judge.package import Package, TestSpec
from judge.package.location import variants
from judge.trusted.mutant_outputs import Outcome, sources_outputs
from judge.trusted.variant_outputs import variant_bank


@dataclass(frozen=True)
class Located:
    """Where a mutant was located: the wrong sub-layers' names (or the rest), together or
    apart, on which test; `placed`: whether that is where its site is."""

    wrong: tuple[str, ...]
    together: bool
    test: str
    placed: bool


Killed = tuple[str, str, list[Outcome], list[str]]  # id, source, outcomes, tests it fails


def locate_mutants(package: Package, killed: list[Killed], *,
                   background: bool = False) -> dict[str, Located | None]:
    """Per killed mutant (id, source, its outcome on each package test, the tests it fails),
    where it is located (None: no location found); {} for a package without `[location]`."""
    loc = package.manifest.location
    if loc is None or not killed:
        return {}
    bank = variant_bank(package, wait=True, background=background)
    assert bank is not None
    vs = variants(loc)
    tests = package.tests
    chosen: dict[str, list[tuple[str, str]]] = {}  # test name -> [(id, source)]
    for mid, source, outcomes, failed in killed:
        test = _failed_test(tests, outcomes, failed)
        if test is not None:
            chosen.setdefault(test.name, []).append((mid, source))
    out: dict[str, Located | None] = {mid: None for mid, _, _, _ in killed}
    by_name = {t.name: t for t in tests}
    sites = {m: s for m, s in _sites(package, killed).items()}
    for name, group in chosen.items():
        test = by_name[name]
        runs = sources_outputs(package, [src for _, src in group], [test] * len(vs),
                               off=[v.off for v in vs], background=background)
        want = [bank.get((name, v.key)) for v in vs]
        for (mid, _), outcomes in zip(group, runs, strict=True):
            wrong, together = locate(loc, agreement(vs, outcomes, want,
                                                    package.manifest.tolerance))
            if wrong:
                out[mid] = Located(tuple(wrong), together, name, consistent(
                    sites[mid], located_sites(loc, wrong), loc))
    return out


def _failed_test(tests: list[TestSpec], outcomes: list[Outcome],
                 failed: list[str]) -> TestSpec | None:
    """A test the mutant fails with an output (not an error), as a diagnosis locates on: a
    redrawn one first (its variants run with the test's own parameters)."""
    found = [t for t, o in zip(tests, outcomes, strict=True)
             if t.name in failed and isinstance(o, np.ndarray)]
    redrawn = [t for t in found if t.redraw is not None]
    first = redrawn or found
    return first[0] if first else None


def _sites(package: Package, killed: list[Killed]) -> dict[str, tuple[str, ...]]:
    from judge.trusted.known_mistakes import reference_mutants

    by_id = {m.id: m for m in reference_mutants(package)}
    return {mid: by_id[mid].sites if mid in by_id else () for mid, _, _, _ in killed}
