"""The reference on each test with sub-layers switched off (judge/package/location.py): what
the diagnosis compares a wrong answer's own switched-off outputs with to locate its mistake
(judge/diagnosis/location.py). Computed in the trusted process and cached by content hash like
the mutants' outcomes (judge/trusted/mutant_outputs.py), at the end of a judge's start-up; a
wrong answer never waits for them: the first that finds them missing starts their computation
in the background and goes without a location.

    variant_bank(package, wait=False, background=False) -> {(test name, variant key): Outcome}
"""

from __future__ import annotations

import logging
import threading

from judge.package import Package
from judge.package.location import variants
from judge.trusted.expected import cache_dir
from judge.trusted.mutant_outputs import Outcome, outcome_key, source_outputs

log = logging.getLogger(__name__)

Bank = dict[tuple[str, str], Outcome]

_LOCK = threading.Lock()
_BANKS: dict[str, Bank] = {}
_STARTED: set[str] = set()


def variant_bank(package: Package, *, wait: bool = False,
                 background: bool = False) -> Bank | None:
    """The reference's outcome on every test under every variant of its sub-layers, or None
    while they are not computed (then their computation starts in the background, once);
    {} for a package without a `[location]`. `wait`: compute them here."""
    location = package.manifest.location
    if location is None:
        return {}
    key = package.content_hash
    with _LOCK:
        if key in _BANKS:
            return _BANKS[key]
        started = key in _STARTED
    if not (wait or _on_disk(package)):
        if not started:
            with _LOCK:
                _STARTED.add(key)
            threading.Thread(target=_compute_quietly, args=(package,), daemon=True,
                             name=f"variant-bank-{package.slug}").start()
        return None
    runs = [(t, v) for t in package.tests for v in variants(location)]
    outcomes = source_outputs(package, package.reference_source, [t for t, _ in runs],
                              off=[v.off for _, v in runs], background=background)
    bank = {(t.name, v.key): o for (t, v), o in zip(runs, outcomes, strict=True)}
    with _LOCK:
        _BANKS[key] = bank
    return bank


def prepare_variant_bank(package: Package) -> None:
    """The reference's switched-off variants of a problem, computed at low priority before any
    wrong answer needs them (the judge's start-up, judge/startup.py)."""
    with _LOCK:
        _STARTED.add(package.content_hash)  # a wrong answer meanwhile does not start another
    _compute_quietly(package)


def _compute_quietly(package: Package) -> None:
    try:
        variant_bank(package, wait=True, background=True)
    except Exception as e:  # noqa: BLE001 - wrong answers then go without a location
        log.warning("sub-layer variants not computed", extra={"problem": package.slug,
                                                               "error": str(e)})


def _on_disk(package: Package) -> bool:
    location = package.manifest.location
    assert location is not None
    d = cache_dir()
    return all((d / f"{k}.npy").is_file() or (d / f"{k}.failed").is_file()
               for t in package.tests for v in variants(location)
               for k in [outcome_key(package, package.reference_source, t, None, v.off)])
