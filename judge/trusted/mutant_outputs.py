"""Mutants' outputs: every mutant of a package's reference (judge/mutants/) run on tests in the
judge's own trusted process, never in the sandbox, cached on disk by content hash.

    mutant_outputs(package, tests, *, mutants=None, background=False) -> [MutantRun]
    source_outputs(package, source, tests, *, precision=None, background=False) -> [Outcome]

A `MutantRun` holds the `Mutant` and, per test in the order given, an `Outcome`: its flat
float64 output (an `np.ndarray`), or the `Failure` it raised (exception type and message).
`tests` may be the package's own or any others built from its generator (a `TestSpec` with
any name, seed and params: the report's extra inputs and its search for killing inputs).
`source_outputs` runs any trusted source the same way (a mutant, the reference itself, the
reference with its inputs narrowed to `float16` or `bfloat16`: judge/trusted/reference_run.py).

The cache key covers what the numbers depend on, as expected outputs' do
(judge/trusted/expected.py `test_key`): the mutated source, the generator, the entry point,
the test's seed and params, the library versions, and the precision. Outputs another thread
is computing are waited for (`run_trusted`); `background` computes at low CPU priority.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from judge.mutants import Mutant
from judge.mutants import mutants as all_mutants
from judge.package import Package, TestSpec
from judge.trusted.expected import cache_dir, run_trusted, test_key

MESSAGE_MAX = 500  # characters of an error message kept


@dataclass(frozen=True)
class Failure:
    """What a run raised: `type` is the exception's class name ("ValueError")."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


Outcome = np.ndarray | Failure


@dataclass(frozen=True)
class MutantRun:
    mutant: Mutant
    outcomes: list[Outcome]  # per test, in the order asked for


def mutant_outputs(package: Package, tests: list[TestSpec], *,
                   mutants: list[Mutant] | None = None,
                   background: bool = False) -> list[MutantRun]:
    """Every mutant of the reference (or those given) with its outcome on each test; all of
    them computed in one trusted process when any is missing, loaded from disk otherwise."""
    chosen = _reference_mutants(package.reference_source) if mutants is None else mutants
    key = (package.content_hash, tuple(m.id for m in chosen),
           tuple(_spec(t) for t in tests))
    with _LOCK:
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
    outcomes = _outcomes(package, [m.source for m in chosen], tests, None, background)
    runs = [MutantRun(m, o) for m, o in zip(chosen, outcomes, strict=True)]
    with _LOCK:
        _MEMO[key] = runs
        while len(_MEMO) > 16:
            _MEMO.popitem(last=False)
    return runs


def source_outputs(package: Package, source: str, tests: list[TestSpec], *,
                   precision: str | None = None, background: bool = False,
                   off: list[tuple[str, ...]] | None = None) -> list[Outcome]:
    """One trusted source's outcome on each test (`precision`: `float16` or `bfloat16`, its
    float32 inputs, and a Flax model's variables, narrowed to it; `off`: per test, the
    package's sub-layers switched off, judge/package/location.py)."""
    return _outcomes(package, [source], tests, precision, background, off)[0]


def sources_outputs(package: Package, sources: list[str], tests: list[TestSpec], *,
                    off: list[tuple[str, ...]] | None = None,
                    background: bool = False) -> list[list[Outcome]]:
    """Several trusted sources' outcomes on the same tests (`off` as for `source_outputs`),
    in one batch of trusted processes."""
    return _outcomes(package, sources, tests, None, background, off)


_MEMO: OrderedDict[tuple[str, tuple[str, ...], tuple[str, ...]], list[MutantRun]] = \
    OrderedDict()
_LOCK = threading.Lock()


@lru_cache(maxsize=16)
def _reference_mutants(source: str) -> list[Mutant]:
    """Parsing and rewriting a reference takes a good part of a second: once per source."""
    return all_mutants(source)


def _spec(test: TestSpec, off: tuple[str, ...] | None = None) -> str:
    spec: dict = {"seed": test.seed, "params": test.params,
                  "redraw": test.redraw.model_dump() if test.redraw else None}
    if off is not None:
        spec["off"] = list(off)
    return json.dumps(spec, sort_keys=True)


def outcome_key(package: Package, source: str, test: TestSpec, precision: str | None,
         off: tuple[str, ...] | None = None) -> str:
    base = test_key(package, test, source=source)
    if precision is not None:
        base = hashlib.sha256(f"{base}\0{precision}".encode()).hexdigest()
    if off is not None:
        # What is zeroed, not only the sub-layers' names: a package that switches one off
        # otherwise computes other outputs.
        loc = package.manifest.location
        paths = [(s.name, s.off) for s in loc.sublayers if s.name in off] if loc else []
        base = hashlib.sha256(f"{base}\0off:{json.dumps(paths)}".encode()).hexdigest()
    return base


def _outcomes(package: Package, sources: list[str], tests: list[TestSpec],
              precision: str | None, background: bool,
              off: list[tuple[str, ...]] | None = None) -> list[list[Outcome]]:
    d = cache_dir()
    offs: list[tuple[str, ...] | None] = list(off) if off is not None else [None] * len(tests)
    keys = [[outcome_key(package, s, t, precision, o) for t, o in zip(tests, offs, strict=True)]
            for s in sources]
    todo: list[dict[str, str]] = []
    for source, ks in zip(sources, keys, strict=True):
        file: Path | None = None
        for t, o, k in zip(tests, offs, ks, strict=True):
            if (d / f"{k}.npy").is_file() or (d / f"{k}.failed").is_file():
                continue
            file = file or _source_file(d, source)
            item = {"name": t.name, "key": k, "module": str(file), "spec": _spec(t, o)}
            if precision is not None:
                item["precision"] = precision
            todo.append(item)
    if todo:
        _run_spread(package, todo, d, background)
    return [[_load(d, k) for k in ks] for ks in keys]


# Items per trusted process below which a second process costs more (its imports, about 2 s)
# than it saves.
_SPREAD_MIN = 40


def _run_spread(package: Package, todo: list[dict[str, str]], d: Path, background: bool) -> None:
    """A report someone waits for (the CLI, validation) runs hundreds of items: spread them over
    one trusted process per core. Background work keeps to one, leaving the cores to jobs."""
    n = 1 if background else max(1, min(os.cpu_count() or 1, len(todo) // _SPREAD_MIN))
    if n == 1:
        run_trusted(package, todo, False, d, background=background)
        return
    errors: list[BaseException] = []

    def part(items: list[dict[str, str]]) -> None:
        try:
            run_trusted(package, items, False, d, background=background)
        except BaseException as e:  # noqa: BLE001 - raised in the caller's thread below
            errors.append(e)

    threads = [threading.Thread(target=part, args=(todo[i::n],), daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _source_file(d: Path, source: str) -> Path:
    """The source as a file the trusted process imports (named by its hash: written once)."""
    folder = d / "sources"
    folder.mkdir(exist_ok=True)
    path = folder / f"{hashlib.sha256(source.encode()).hexdigest()[:32]}.py"
    if not path.is_file():
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    return path


def _load(d: Path, key: str) -> Outcome:
    npy = d / f"{key}.npy"
    if npy.is_file():
        return np.load(npy, allow_pickle=False)
    failed = d / f"{key}.failed"
    if failed.is_file():
        kind, _, message = failed.read_text(encoding="utf-8", errors="replace").partition(": ")
        return Failure(kind, message[:MESSAGE_MAX])
    # run_trusted returns only once every key is stored or the process failed (raised).
    raise FileNotFoundError(f"no trusted outcome stored for {key}")
