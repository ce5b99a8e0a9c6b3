"""What a mutation operator is, and what one application of it gives."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

FRAMEWORKS = ("numpy", "jax", "flax", "torch")


@dataclass(frozen=True)
class Operator:
    """One classic mistake, as a change to the code.

    `title` names the site through `{site}` ("the residual around {site} is missing");
    `detail` says what is wrong, how to fix it and where the statement covers it."""

    name: str
    family: str
    title: str
    detail: str
    # Where else the mistake shows, as site labels (judge/diagnosis/location.py): a residual
    # dropped or a LayerNorm moved across the add changes the residual stream around its
    # site, and shows with the sub-layer switched off too; a memory read from the wrong
    # encoder block shows in the encoder's output.
    shows_in: tuple[str, ...] = ()

    def titled(self, site: str) -> str:
        return self.title.format(site=site)


@dataclass(frozen=True)
class Mutant:
    operator: Operator
    site: str  # the site as a title reads it: "the cross-attention", "`_mha`", "line 12"
    line: int  # where in the original source the change starts
    source: str  # the whole mutated source

    @property
    def id(self) -> str:
        """Stable across runs and machines: the operator and the mutated code decide it."""
        h = hashlib.sha256(f"{self.operator.name}\0{self.source}".encode())
        return h.hexdigest()[:16]

    @property
    def title(self) -> str:
        return self.operator.titled(self.site)

    @property
    def sites(self) -> tuple[str, ...]:
        """Where the mistake sits, as the reference's site labels name it."""
        return (self.site, *self.operator.shows_in)


# Site labels of what lies between the sub-layers (judge/package/location.py).
STREAM = "the residual stream"
ENCODER_OUTPUT = "the encoder output"
