"""The starter code of a problem, one per framework when it allows several: the package's
`starters/<framework>.py`, its `starter.py` standing for the first framework."""

from __future__ import annotations

from app.context import Context
from app.services import problems

FRAMEWORK_WORDS = {"numpy": "NumPy", "jax": "JAX", "flax": "Flax", "torch": "PyTorch"}


def starters_of(ctx: Context, slug: str) -> dict[str, str]:
    """Framework → starter source, in the order of the problem's frameworks (those with no
    starter left out)."""
    package = problems.load_version(ctx, problems.current_version_id(ctx, slug))
    frameworks = list(package.manifest.frameworks)
    out: dict[str, str] = {}
    for fw in frameworks:
        source = package.starters.get(fw)
        if source is None and fw == frameworks[0]:
            source = package.starter
        if source is not None:
            out[fw] = source
    return out
