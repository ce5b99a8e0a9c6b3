"""Which kind of sandbox a submission needs, read from its own imports: the libraries to import
ahead and the problem's warm-up, so that submissions share pools of prepared sandboxes."""

from __future__ import annotations

import ast
import json
from typing import Any

import numpy as np

from judge import pysource
from judge.package import Package
from judge.sandbox.job import EAGER_JAX, Job, Kind, Warmup

# What a sandbox imports before the job, by the frameworks a submission imports. Canonical
# sets, so that submissions share pools of prepared sandboxes.
FAMILIES: dict[str, tuple[str, ...]] = {
    "numpy": (),
    "jax": ("jax",),
    "flax": ("jax", "flax.linen"),
    "torch": ("torch",),
}
# Calls that make JAX (or PyTorch) compile the user's own code. Such a submission gains nothing
# from a second sandbox (each part would compile the same functions again, on the same cores),
# nor from a sandbox forked warm (it would be handed back at its first compilation).
SELF_COMPILING = {"jit", "pjit", "pmap", "scan", "fori_loop", "while_loop", "cond", "switch",
                  "checkpoint", "remat", "shard_map", "compile"}
# Arguments whose values are data, not structure (a seed decides a parameter draw).
_VALUE_ARGS = {"seed"}
_WARMUPS: dict[str, Warmup] = {}


def compiles_itself(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if name in SELF_COMPILING:
            return True
        if isinstance(node, ast.alias) and node.name.rsplit(".", 1)[-1] in SELF_COMPILING:
            return True
    return False


def uses_jax(code: str) -> bool:
    """Whether a submission imports JAX (Flax included): its first calls may compile for
    seconds, where other submissions' run in milliseconds. Code that does not parse: no (it
    fails at once)."""
    try:
        tree = pysource.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return "jax" in imported_frameworks(tree)


def imported_frameworks(tree: ast.AST) -> list[str]:
    """The modules to import ahead for a submission, from its own import statements; with
    EAGER_JAX among them when it uses JAX without compiling its own code."""
    tops: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    preload = preload_for(sorted(tops & set(FAMILIES)))
    if "jax" in tops and "flax" not in tops and not compiles_itself(tree):
        preload = sorted([*preload, EAGER_JAX])
    return preload


def framework_preloads() -> list[tuple[str, ...]]:
    """What a submission importing one framework (NumPy aside) has imported ahead."""
    return [tuple(preload_for([fw])) for fw in sorted(FAMILIES) if FAMILIES[fw]]


def preload_for(frameworks: list[str]) -> list[str]:
    out: list[str] = []
    for fw in sorted(frameworks):
        for mod in FAMILIES.get(fw, ()):
            if mod not in out:
                out.append(mod)
    return sorted(out)


def warmup(package: Package) -> Warmup | None:
    """The problem's warm-up with the distinct shapes of every test's inputs (arrays as dtype
    and shape, numbers as they are): what it compiles for; and, for each redraw of the
    parameters its tests make, the shapes of those tests (a redraw is traced apart)."""
    if not package.warmup_source:
        return None
    cached = _WARMUPS.get(package.content_hash)
    if cached is not None:
        return cached
    seen: dict[str, dict[str, Any]] = {}
    redrawn: dict[str, tuple[dict[str, Any], dict[str, dict[str, Any]]]] = {}
    for t in package.tests:
        case = _shape_only(package.generator.generate(t.seed, **t.params))
        assert isinstance(case, dict)
        name = json.dumps(case, sort_keys=True)
        seen.setdefault(name, case)
        if t.redraw is not None:
            spec = t.redraw.model_dump()
            cases = redrawn.setdefault(json.dumps(spec, sort_keys=True), (spec, {}))[1]
            cases.setdefault(name, case)
    made = _WARMUPS[package.content_hash] = Warmup(
        package.content_hash, package.warmup_source, tuple(seen.values()),
        tuple({"spec": spec, "cases": list(cases.values())}
              for spec, cases in redrawn.values()))
    return made


def _shape_only(value: object) -> object:
    if isinstance(value, np.ndarray):
        return {"dtype": value.dtype.name, "shape": list(value.shape)}
    if isinstance(value, dict):
        return {k: _shape_only(v) for k, v in value.items() if k not in _VALUE_ARGS}
    if isinstance(value, np.generic):
        return value.item()
    return value


def kind_for(package: Package, preload: list[str]) -> Kind:
    """A sandbox that imports `preload` and, where it imports any, runs the problem's
    warm-up."""
    return Kind(tuple(preload), warmup(package) if preload else None)


def kinds_for(package: Package) -> list[Kind]:
    """One kind per framework family the problem allows: what a pool prepares ahead for it,
    cheapest first."""
    order = ["numpy", "torch", "jax", "flax"]
    fws = sorted(set(package.manifest.frameworks), key=order.index)
    kinds = [kind_for(package, preload_for([fw])) for fw in fws]
    if "jax" in fws:
        kinds.append(kind_for(package, sorted([*preload_for(["jax"]), EAGER_JAX])))
    return kinds


def job_for(package: Package, code: str, tree: ast.AST) -> Job:
    return Job(kind_for(package, imported_frameworks(tree)), code, package.entry_point,
               compiles_itself=compiles_itself(tree))
