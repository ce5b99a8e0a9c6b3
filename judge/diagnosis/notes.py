"""Notes on an accepted Flax submission whose parameters lack ones the reference has: no
biases, no LayerNorm scale or offset, fewer LayerNorms (one shared between two inputs).

The tests run a model at its initialisation, where Flax starts every bias at zero and every
LayerNorm at identity (scale one, offset zero): such a model computes the reference's numbers
and is accepted, yet it is not the asked-for structure and would differ once trained. A note
says so; it never changes the verdict. The trees compared are the submission's own report
(parsed with hard bounds, judge/diagnosis/params.py) and the reference's, recorded with its
expected outputs.
"""

from __future__ import annotations

from judge.diagnosis.params import Tree, reference_variables
from judge.package import Package, TestSpec
from judge.verdicts import JudgeResult, Note, Verdict

_WHY = ("The tests cannot see it: they run the model as `init` makes it, and Flax starts "
        "{what}, so at initialisation your model computes the same numbers. Once trained it "
        "would not: {fix}")


def structure_notes(package: Package, tests: list[TestSpec], result: JudgeResult) -> list[Note]:
    """The notes for an accepted result ([] for any other, or where nothing differs)."""
    if result.verdict is not Verdict.AC or "flax" not in package.manifest.frameworks:
        return []
    at = next((i for i, t in enumerate(result.tests) if t.variables), None)
    if at is None:
        return []
    want = reference_variables(package, tests)[at]
    got = result.tests[at].variables
    return [] if not want or not got else compare(got, want)


def _leaves(tree: Tree) -> dict[str, set[str]]:
    """Each module path (without the `params` collection) and the names of its leaves."""
    out: dict[str, set[str]] = {}
    for path, _ in tree:
        parts = path.removeprefix("params/").split("/")
        out.setdefault("/".join(parts[:-1]), set()).add(parts[-1])
    return out


def _layers(leaves: dict[str, set[str]]) -> tuple[list[str], list[str], list[str], list[str]]:
    """Layers with a kernel and no bias; LayerNorms (modules with a scale, or a bias and no
    kernel); those of them without a scale; without an offset."""
    unbiased = [m for m, names in leaves.items() if "kernel" in names and "bias" not in names]
    norms = [m for m, names in leaves.items()
             if "scale" in names or "bias" in names and "kernel" not in names]
    unscaled = [m for m in norms if "scale" not in leaves[m]]
    no_offset = [m for m in norms if "bias" not in leaves[m]]
    return unbiased, norms, unscaled, no_offset


def _listed(paths: list[str]) -> str:
    shown = ", ".join(f"`{p}`" for p in paths[:4])
    return shown + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")


def compare(got: Tree, want: Tree) -> list[Note]:
    """What the submission's tree lacks that the reference's has, one note per kind."""
    g_unbiased, g_norms, g_unscaled, g_no_offset = _layers(_leaves(got))
    w_unbiased, w_norms, w_unscaled, w_no_offset = _layers(_leaves(want))
    notes: list[Note] = []
    if len(g_unbiased) > len(w_unbiased):
        notes.append(Note("structure", "Your layers have no biases where the statement's have", (
            f"These layers of yours have a kernel and no bias: {_listed(g_unbiased)}; every "
            "projection of the statement adds a bias. " + _WHY.format(
                what="every bias at zero",
                fix="build the layers with their biases (leave `use_bias` at its default, "
                    "True)."))))
    if len(g_unscaled) > len(w_unscaled):
        notes.append(Note("structure", "Your LayerNorms have no scale", (
            f"These LayerNorms of yours have no scale (gain): {_listed(g_unscaled)}; the "
            "statement's LayerNorm has a learned scale. " + _WHY.format(
                what="a LayerNorm's scale at one",
                fix="leave `use_scale` at its default, True."))))
    if len(g_no_offset) > len(w_no_offset):
        notes.append(Note("structure", "Your LayerNorms have no offset", (
            f"These LayerNorms of yours have no offset (bias): {_listed(g_no_offset)}; the "
            "statement's LayerNorm has a learned offset. " + _WHY.format(
                what="a LayerNorm's offset at zero",
                fix="leave `use_bias` at its default, True."))))
    if len(g_norms) < len(w_norms):
        notes.append(Note("structure", "Your model has fewer LayerNorms than the statement's", (
            f"The statement's model has {len(w_norms)} LayerNorms, each with a learned scale "
            f"and offset; yours has parameters for {len(g_norms)}: a LayerNorm is used for two "
            "inputs (in a Pre-LN cross-attention, the queries' input and the keys' and "
            "values' input each get their own), or built without scale and offset. "
            + _WHY.format(
                what="a LayerNorm's scale at one and its offset at zero (every LayerNorm is "
                     "then the same function)",
                fix="give each input its own `nn.LayerNorm()`, with its defaults, as the "
                    "statement's formulas do."))))
    return notes
