"""What a Flax submission's parameters lack that the reference's have, by kind: biases, a
LayerNorm's scale or offset, whole LayerNorms (one shared between two inputs). At Flax's
initialisation each such parameter starts where leaving it out changes nothing (biases and
offsets at zero, scales at one), so only tests that redraw the parameters (judge/portable/
flax_redraw.py) see the difference. Read by the redrawn tests' messages and the parameter
finding (params.py) and by the notes on an accepted result (notes.py).
"""

from __future__ import annotations

from dataclasses import dataclass

Tree = list[tuple[str, tuple[int, ...]]]


@dataclass(frozen=True)
class Gap:
    """One kind of parameter the submission lacks."""

    title: str
    detail: str  # what lacks it, and what the statement has
    initial: str  # where Flax starts the missing parameter, as a phrase
    fix: str


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


def gaps(got: Tree, want: Tree) -> list[Gap]:
    """What `got` lacks that `want` has, one gap per kind ([] when it lacks none of them)."""
    g_unbiased, g_norms, g_unscaled, g_no_offset = _layers(_leaves(got))
    w_unbiased, w_norms, w_unscaled, w_no_offset = _layers(_leaves(want))
    out: list[Gap] = []
    if len(g_unbiased) > len(w_unbiased):
        out.append(Gap(
            "Your layers have no biases where the statement's have",
            f"These layers of yours have a kernel and no bias: {_listed(g_unbiased)}; every "
            "projection of the statement adds a bias.",
            "every bias at zero",
            "build the layers with their biases (leave `use_bias` at its default, True)."))
    if len(g_unscaled) > len(w_unscaled):
        out.append(Gap(
            "Your LayerNorms have no scale",
            f"These LayerNorms of yours have no scale (gain): {_listed(g_unscaled)}; the "
            "statement's LayerNorm has a learned scale.",
            "a LayerNorm's scale at one",
            "leave `use_scale` at its default, True."))
    if len(g_no_offset) > len(w_no_offset):
        out.append(Gap(
            "Your LayerNorms have no offset",
            f"These LayerNorms of yours have no offset (bias): {_listed(g_no_offset)}; the "
            "statement's LayerNorm has a learned offset.",
            "a LayerNorm's offset at zero",
            "leave `use_bias` at its default, True."))
    if len(g_norms) < len(w_norms):
        out.append(Gap(
            "Your model has fewer LayerNorms than the statement's",
            f"The statement's model has {len(w_norms)} LayerNorms, each with a learned scale "
            f"and offset; yours has parameters for {len(g_norms)}: a LayerNorm is used for two "
            "inputs (in a Pre-LN cross-attention, the queries' input and the keys' and "
            "values' input each get their own), or built without scale and offset.",
            "a LayerNorm's scale at one and its offset at zero (every LayerNorm is then the "
            "same function)",
            "give each input its own `nn.LayerNorm()`, with its defaults, as the statement's "
            "formulas do."))
    return out
