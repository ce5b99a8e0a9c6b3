"""A judged submission, as the sources of its diagnosis (judge/diagnosis/diagnose.py) need it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from judge.package import Package, TestSpec, Tolerance
from judge.verdicts import JudgeResult, Verdict


@dataclass
class Extra:
    """Arguments to run through the submission after its verdict, in the one sandbox job the
    diagnosis's sources share: each set with its output's size and its redraw of the Flax
    parameters (None: Flax's own)."""

    args: list[dict] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    redraws: list[dict | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.args)


@dataclass
class Case:
    """A judged submission, as the finding sources need it."""

    package: Package
    tests: list[TestSpec]  # the tests that were selected, in order
    expected: list[np.ndarray]  # flat float64 reference outputs, per test
    shapes: list[tuple[int, ...]]  # unflattened output shapes, per test
    result: JudgeResult  # its tests carry the submission's outputs (TestResult.output)
    tol: Tolerance
    sandbox: object  # what the engine judged with
    code: str = ""
    # The selected tests' arguments, and a way to run more argument sets through the
    # submission in one sandbox job (judge/diagnosis/probes.py); None where probes cannot run.
    args: list[dict] = field(default_factory=list)
    # Runs argument sets through the submission (each with its test's redraw of the Flax
    # parameters, or None): one flat output, or None, per set (probes.py RunArgs).
    run: Callable[[list[dict], list[int], list[dict | None]], list[np.ndarray | None]] | None = None
    probes: bool = True  # the package's property probes are run (with `run`)

    @property
    def failed(self) -> list[int]:
        return [i for i, t in enumerate(self.result.tests)
                if t.verdict is not None and t.verdict is not Verdict.AC]
