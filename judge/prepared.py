"""The selected tests of a problem as the engine needs them: inputs, output shapes and the
reference's outputs, built once per package version and kept in memory.

The expected outputs come from a trusted process (judge/trusted/expected.py) that, on a fresh
machine, may take as long as the submission itself (a Flax reference imports and compiles
too): `Preparing` gives the inputs at once and computes the outputs meanwhile, so that the
submission runs while they are computed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from judge import pysource
from judge.diagnosis.params import Tree, reference_variables
from judge.package import Package, TestSpec
from judge.trusted.expected import expected_outputs


@dataclass
class PreparedTests:
    tests: list[TestSpec]
    args: list[dict]
    shapes: list[tuple[int, ...]]
    expected: list[np.ndarray]
    # The reference's Flax variables (paths and shapes) on each test that redraws the
    # parameters, None on the others: a submission's must be the same there.
    trees: list[Tree | None] = field(default_factory=list)


_PREPARED: OrderedDict[tuple[str, bool], PreparedTests] = OrderedDict()
_PREPARED_LOCK = threading.Lock()


def prepare(package: Package, samples_only: bool, *, background: bool = False) -> PreparedTests:
    """Inputs, output shapes and expected outputs of the selected tests; kept in memory per
    package version, since every submission to a problem needs the same ones (`background`:
    their trusted process at low priority, for work no submission waits for)."""
    key = (package.content_hash, samples_only)
    with _PREPARED_LOCK:
        if key in _PREPARED:
            _PREPARED.move_to_end(key)
            return _PREPARED[key]
    # The reference's libraries parse source too (outside pysource's lock): a parse in
    # another thread at that moment fails this one, not the next.
    prepared = pysource.retried_after_parse_race(
        lambda: _prepare(package, samples_only, background), 3)
    with _PREPARED_LOCK:
        _PREPARED[key] = prepared
        while len(_PREPARED) > 16:
            _PREPARED.popitem(last=False)
    return prepared


_OUTPUTS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tj-expected")


class Preparing:
    """The selected tests' inputs now (`inputs`, without expected outputs), and the whole
    PreparedTests once the trusted outputs are there (`result`; `ready` does not wait)."""

    def __init__(self, package: Package, samples_only: bool):
        key = (package.content_hash, samples_only)
        with _PREPARED_LOCK:
            done = _PREPARED.get(key)
        if done is not None:
            self.inputs = done
            self._outputs: Future[PreparedTests] = Future()
            self._outputs.set_result(done)
            return
        tests, args, shapes = _inputs(package, samples_only)
        self.inputs = PreparedTests(tests, args, shapes, [])
        self._outputs = _OUTPUTS.submit(prepare, package, samples_only)

    @property
    def sizes(self) -> list[int]:
        """Each test's output size, from its shape (the reference's agree: `prepare`)."""
        return [int(np.prod(s)) for s in self.inputs.shapes]

    def ready(self) -> PreparedTests | None:
        return self._outputs.result() if self._outputs.done() else None

    def result(self) -> PreparedTests:
        return self._outputs.result()


def _inputs(package: Package, samples_only: bool
            ) -> tuple[list[TestSpec], list[dict], list[tuple[int, ...]]]:
    tests = package.select(samples_only)
    gen = package.generator
    args = [gen.generate(t.seed, **t.params) for t in tests]
    shapes = [tuple(int(s) for s in gen.output_shape(a)) for a in args]
    return tests, args, shapes


def _prepare(package: Package, samples_only: bool, background: bool = False) -> PreparedTests:
    tests, args, shapes = _inputs(package, samples_only)
    expected = expected_outputs(package, tests, background=background)
    for t, s, e in zip(tests, shapes, expected, strict=True):
        if int(np.prod(s)) != e.size:
            raise RuntimeError(f"{package.slug}/{t.name}: output_shape {s} does not match the "
                               f"reference's {e.size} elements")
    trees: list[Tree | None] = []
    if any(t.redraw for t in tests):
        trees = [tree if t.redraw else None
                 for t, tree in zip(tests, reference_variables(package, tests), strict=True)]
    return PreparedTests(tests, args, shapes, expected, trees)
