"""Notes on an accepted Flax submission whose parameters lack ones the reference has: no
biases, no LayerNorm scale or offset, fewer LayerNorms (one shared between two inputs).

Tests that run a model at its initialisation, where Flax starts every bias at zero and every
LayerNorm at identity (scale one, offset zero), cannot see the difference: such a model
computes the reference's numbers there, yet it is not the asked-for structure and would differ
once trained. Where no test redraws the parameters (a problem without such tests, or a Run of
the samples) it is accepted, and a note says so; it never changes the verdict. The trees
compared are the submission's own report (parsed with hard bounds, judge/diagnosis/params.py)
and the reference's, recorded with its expected outputs.
"""

from __future__ import annotations

from judge.diagnosis.params import reference_variables
from judge.diagnosis.structure import Tree, gaps
from judge.package import Package, TestSpec
from judge.verdicts import JudgeResult, Note, Verdict

_WHY = ("The tests cannot see it: they run the model as `init` makes it, and Flax starts "
        "{what}, so at initialisation your model computes the same numbers. Once trained it "
        "would not: {fix}")
# The same, for a package whose hidden tests redraw the parameters (a Run of the samples).
_WHY_REDRAWN = ("The sample tests cannot see it: they run the model as `init` makes it, and "
                "Flax starts {what}, so at initialisation your model computes the same "
                "numbers. The hidden tests that redraw the parameters, as trained weights "
                "would be, will: {fix}")


def structure_notes(package: Package, tests: list[TestSpec], result: JudgeResult) -> list[Note]:
    """The notes for an accepted result ([] for any other, or where nothing differs)."""
    if result.verdict is not Verdict.AC or "flax" not in package.manifest.frameworks:
        return []
    at = next((i for i, t in enumerate(result.tests) if t.variables), None)
    if at is None:
        return []
    want = reference_variables(package, tests)[at]
    got = result.tests[at].variables
    redrawn = any(t.redraw for t in package.tests)
    return [] if not want or not got else compare(got, want, redrawn)


def compare(got: Tree, want: Tree, redrawn: bool = False) -> list[Note]:
    """What the submission's tree lacks that the reference's has, one note per kind
    (`redrawn`: the package's hidden tests redraw the parameters)."""
    why = _WHY_REDRAWN if redrawn else _WHY
    return [Note("structure", g.title, f"{g.detail} " + why.format(what=g.initial, fix=g.fix))
            for g in gaps(got, want)]
