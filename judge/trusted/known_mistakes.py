"""Known mistakes' outputs: a package's wrong answers as a bank the judge recognises outputs by.

Each packaged `submissions/wrong_answer/*.py` is run, like the reference, by the judge in its
own trusted process (never in the sandbox), and its outputs are cached by content hash the
same way (judge/trusted/expected.py). Matching a submission's outputs against them is the
diagnosis's (judge/diagnosis/mistakes.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from judge.package import Mistake, Package, TestSpec
from judge.trusted.expected import cache_dir, run_trusted, test_key


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
