"""What the judge does before its first submission, so that none waits for it: per problem,
the compilation cache filled and a prepared sandbox kept ready for each kind of submission,
and the trusted outputs (expected, and the known mistakes') computed."""

from __future__ import annotations

import logging
import threading

from judge.kinds import kinds_for
from judge.package import Package
from judge.sandbox.job import Kind
from judge.sandbox.pool import SandboxPool
from judge.trusted.expected import expected_outputs
from judge.trusted.known_mistakes import bank, prepare_mutant_banks

# The records keep the logger name they had while this lived in the workers (app.worker).
log = logging.getLogger("tensorjudge.worker")


def prepare_problems(pool: SandboxPool, packages: list[Package],
                     stopping: threading.Event) -> None:
    """Fill the compilation cache for every problem, then keep prepared sandboxes ready for
    them; the most expensive to prepare are declared last, so first. Stops early once
    `stopping` is set; a failure of the pool itself is raised (the pool then prepares on
    demand)."""
    # Eager JAX's warm-up is the longest to fill and the least used: every problem's
    # other kinds first, then the known mistakes (only a wrong answer needs them).
    later: list[tuple[Package, Kind]] = []
    for package in packages:
        for kind in kinds_for(package):
            if kind.eager_jax:
                later.append((package, kind))
            elif not _prepare_kind(pool, package, kind, stopping):
                return
    for package in packages:
        _compute_trusted_outputs(package, stopping)
    for package, kind in later:
        if not _prepare_kind(pool, package, kind, stopping):
            return
    log.info("sandboxes prepared", extra={"problems": len(packages)})
    prepare_mutant_banks(packages, stopping)  # last: only a wrong answer's naming needs them


def _prepare_kind(pool: SandboxPool, package: Package, kind: Kind,
                  stopping: threading.Event) -> bool:
    """Fill the compilation cache for one kind of sandbox and keep one ready; False once
    `stopping` is set."""
    if stopping.is_set():
        return False
    memory = package.manifest.limits.memory_mb << 20
    try:
        pool.fill_compile_cache(kind, memory)
    except Exception as e:  # noqa: BLE001
        log.warning("compilation cache not filled",
                    extra={"problem": package.slug, "error": str(e)})
    pool.prewarm(kind, memory)
    return True


def _compute_trusted_outputs(package: Package, stopping: threading.Event) -> None:
    """The expected outputs and those of the package's known mistakes, computed (trusted,
    at low priority) before a submission needs them rather than on its path to a verdict."""
    if stopping.is_set():
        return
    try:
        expected_outputs(package, package.tests, background=True)
        bank(package, package.tests, background=True)
    except Exception as e:  # noqa: BLE001 - the first submission computes them instead
        log.warning("trusted outputs not computed",
                    extra={"problem": package.slug, "error": str(e)})
