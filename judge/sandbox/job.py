"""What a sandbox is asked to do, as typed values: the kind of sandbox (what it prepares before
its job) and the job itself.

A kind is what a pool keys its prepared sandboxes by; two submissions with the same kind share
them. Everything here is judge-owned but `Job.code`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

# In a kind's preload: the submission calls jax.numpy eagerly (no jax.jit), so a problem's
# warm-up compiles the eager operations too (a jitted submission would not use them).
# Importing it is a no-op after `jax`; fork servers ignore it.
EAGER_JAX = "jax.numpy"


@dataclass(frozen=True)
class Warmup:
    """A problem's judge-owned warm-up: its source and the distinct input shapes of its tests
    (never values, never expected outputs). Identified by the package's content hash."""

    key: str
    source: str = field(compare=False, repr=False)
    cases: tuple[dict[str, Any], ...] = field(compare=False, repr=False, default=())
    # Each redraw of the parameters the tests make ({spec, cases}: judge/portable/
    # flax_redraw.py), run again under it.
    redraws: tuple[dict[str, Any], ...] = field(compare=False, repr=False, default=())

    def message(self) -> dict[str, Any]:
        """As the sandbox reads it."""
        return {"source": self.source, "cases": list(self.cases), "key": self.key,
                "redraws": list(self.redraws)}


@dataclass(frozen=True)
class Kind:
    """What a sandbox imports and runs before its job. `self_prepared`: it prepares itself
    rather than being forked from a server that ran the warm-up already (where a backend has
    such servers: the bubblewrap backend's warm fork)."""

    preload: tuple[str, ...] = ()
    warmup: Warmup | None = None
    self_prepared: bool = False

    @property
    def key(self) -> str:
        """A short stable name of the kind (pools, compilation-cache markers)."""
        basis = {"preload": sorted(self.preload),
                 "warmup": self.warmup.key if self.warmup is not None else None,
                 "cold": self.self_prepared}
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def libraries(self) -> tuple[str, ...]:
        """What its sandboxes import: the eager-JAX marker changes the warm-up, not the
        libraries."""
        return tuple(m for m in self.preload if m != EAGER_JAX)

    @property
    def light(self) -> bool:
        """Imports nothing ahead (NumPy submissions): its jobs take milliseconds."""
        return not self.preload

    @property
    def uses_jax(self) -> bool:
        return "jax" in self.preload

    @property
    def eager_jax(self) -> bool:
        return EAGER_JAX in self.preload

    def preparing_itself(self) -> Kind:
        """The kind prepared in its own sandbox, warm-up included (not forked warm)."""
        return replace(self, self_prepared=True)

    def plain(self) -> Kind:
        """The kind without its warm-up, preparing itself: imports only, and the job compiles
        what it uses, reading the judge's compilation cache where it has it. What a job
        whose kind has no sandbox ready runs in: the pool starts one of these at once rather
        than wait for a preparation, which runs a whole warm-up (about a thousand operations
        for eager JAX; on a fresh machine, compiling them)."""
        return Kind(self.preload, None, self_prepared=True)

    def prepare_message(self) -> dict[str, Any]:
        """The kind's part of the first message a sandbox reads."""
        return {"preload": list(self.preload),
                "warmup": self.warmup.message() if self.warmup is not None else None}


@dataclass(frozen=True)
class Job:
    """One submission's run: the kind of sandbox, the code, its entry point. A job whose code
    compiles itself (jax.jit...) gains nothing from a warm-up's compiled executables."""

    kind: Kind
    code: str
    entry: str
    compiles_itself: bool = False

    def of_kind(self, kind: Kind) -> Job:
        return replace(self, kind=kind)
