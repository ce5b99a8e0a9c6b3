"""Where a wrong answer goes wrong: a package's sub-layers (`[location]` in problem.toml) and how
each is switched off, for the diagnosis that locates a mistake by switching sub-layers off in
the submission and the reference alike (judge/diagnosis/location.py).

A sub-layer is switched off by zeroing what makes its contribution to the residual stream: its
output projection, given as paths into the test's arguments, or, for a Flax model whose
parameters the judge draws (judge/portable/flax_redraw.py), a submodule's kernels and biases:

- `ARG` zeroes a whole array argument, `ARG.KEY` one entry of a dict argument;
- `ARG[:, 3]` zeroes an index of an array argument (integers and slices, NumPy's meaning);
- `module:NAME` draws the kernels and biases of the Flax submodule NAME as zeros.

Host code: the engine applies a switch-off to the arguments it hands the sandbox, the trusted
process to those it hands the reference.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

_PATH = re.compile(r"^(module:[A-Za-z_]\w*|[A-Za-z_]\w*(\.[A-Za-z_]\w*|\[[-0-9:, ]+\])?)$")
# The parameters a redrawn Flax test without its own redraw is switched off under.
DEFAULT_REDRAW = {"gain": 1.0, "bias": 0.5, "scale": 0.5, "gains": {}}


class Sublayer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9-]+$", description="an identifier")
    title: str = Field(min_length=1, description="as text reads it: 'the cross-attention'")
    off: list[str] = Field(min_length=1, description="what zeroing switches it off")
    sites: list[str] = Field(default_factory=list, description=(
        "mutant site labels of the reference inside it, besides its title ('every "
        "attention'): a mistake named at one of them is a mistake of this sub-layer"))
    note: str = Field("", description="said when a mistake is located here")
    through: list[str] = Field(default_factory=list, description=(
        "the sub-layers the output sees it through, kept on when it alone is on (an "
        "encoder's, through the cross-attention)"))

    @field_validator("off")
    @classmethod
    def _paths(cls, v: list[str]) -> list[str]:
        for p in v:
            if not _PATH.match(p):
                raise ValueError(f"{p!r}: ARG, ARG.KEY, ARG[index] or module:NAME")
        return v


class Location(BaseModel):
    """`[location]`: the block's sub-layers, in the order the stream meets them, and what is
    left of it with all of them switched off."""

    model_config = ConfigDict(extra="forbid")
    sublayers: list[Sublayer] = Field(min_length=1)
    rest: str = Field(min_length=1, description=(
        "what still computes with every sub-layer off: 'the LayerNorms and the output head'"))
    rest_sites: list[str] = Field(default_factory=list, description=(
        "mutant site labels that belong to the rest"))


@dataclass(frozen=True)
class Variant:
    """A test's arguments with some sub-layers switched off."""

    key: str  # "on", "off:all", "off:NAME" (only NAME off), "only:NAME" (only NAME on)
    off: tuple[str, ...]  # the names of the sub-layers switched off


def variants(location: Location) -> list[Variant]:
    names = [s.name for s in location.sublayers]
    out = [Variant("on", ()), Variant("off:all", tuple(names))]
    for s in location.sublayers:
        out.append(Variant(f"off:{s.name}", (s.name,)))
        if len(names) > 1:
            on = {s.name, *s.through}
            out.append(Variant(f"only:{s.name}", tuple(m for m in names if m not in on)))
    return out


def switched_off(location: Location, off: tuple[str, ...], args: dict[str, Any],
                 redraw: dict | None, flax: bool) -> tuple[dict[str, Any], dict | None]:
    """The arguments and the redraw of a test with the sub-layers `off` switched off. A Flax
    model is always redrawn here (its own redraw, else the default), so that every variant of
    a test runs with the same parameters but for the switched-off ones."""
    args = copy.deepcopy(args)
    if flax:
        redraw = dict(redraw or DEFAULT_REDRAW)
        redraw["gains"] = dict(redraw.get("gains") or {})
    for sub in location.sublayers:
        if sub.name not in off:
            continue
        for path in sub.off:
            if path.startswith("module:"):
                if redraw is not None:
                    redraw["gains"][path.removeprefix("module:")] = 0.0
                continue
            _zero(args, path)
    return args, redraw


def _zero(args: dict[str, Any], path: str) -> None:
    import numpy as np

    if "[" in path:
        name, index = path[:-1].split("[", 1)
        array = np.array(args[name], copy=True)
        array[_index(index)] = 0
        args[name] = array
    elif "." in path:
        name, key = path.split(".", 1)
        entries = dict(args[name])
        entries[key] = np.zeros_like(entries[key])
        args[name] = entries
    else:
        args[path] = np.zeros_like(args[path])


def _index(text: str) -> tuple:
    out: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            bounds = [int(b) if b.strip() else None for b in part.split(":")]
            out.append(slice(*bounds))
        else:
            out.append(int(part))
    return tuple(out)
